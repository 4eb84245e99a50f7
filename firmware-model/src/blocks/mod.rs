//! Models of the HDL blocks, one module per HDL module of the same name (`roce_<stem>`).
//!
//! The stream blocks' models consume and produce the same AXI4-Stream beats as their HDL
//! counterparts and state their fixed latency, so a lockstep test compares them beat for
//! beat; the transport blocks' models are the engine model's own functions with what the HDL
//! read taken in, compared transaction by transaction (docs/engine-hdl.md, "Checking the HDL
//! against the model"). [`axis`] holds the beat type they share.

pub mod axis;
pub mod roce_ack_q;
pub mod roce_axis_drop_fifo;
pub mod roce_comp;
pub mod roce_cq;
pub mod roce_dcqcn;
pub mod roce_dma_axi;
pub mod roce_icrc;
pub mod roce_mr_check;
pub mod roce_pay_scatter;
pub mod roce_qp_ctx;
pub mod roce_rd_rsp;
pub mod roce_regs;
pub mod roce_req;
pub mod roce_resp;
pub mod roce_rx_disp;
pub mod roce_rx_parse;
pub mod roce_tx_arb;
pub mod roce_tx_build;
