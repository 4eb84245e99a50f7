//! Models of the HDL blocks, one module per HDL module, named by its stem (`roce_<stem>.sv` ->
//! `<stem>`, as the lockstep harness `roce_sim::cosim::<stem>` and the test `<stem>_cosim`).
//!
//! The stream blocks' models consume and produce the same AXI4-Stream beats as their HDL
//! counterparts and state their fixed latency, so a lockstep test compares them beat for
//! beat; the transport blocks' models are the engine model's own functions with what the HDL
//! read taken in, compared transaction by transaction (docs/engine-hdl.md, "Checking the HDL
//! against the model"). [`axis`] holds the beat type they share.

pub mod ack_q;
pub mod axis;
pub mod axis_drop_fifo;
pub mod comp;
pub mod cq;
pub mod dcqcn;
pub mod dma_axi;
pub mod icrc;
pub mod mr_check;
pub mod pay_scatter;
pub mod qp_ctx;
pub mod rd_rsp;
pub mod regs;
pub mod req;
pub mod resp;
pub mod rx_disp;
pub mod rx_parse;
pub mod tx_arb;
pub mod tx_build;
