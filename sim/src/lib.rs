//! Cosimulation of the RoCEv2 engine: the Verilated HDL and the Rust model side by side.
//!
//! - [`vl`]: the Verilated models (built by `build.rs` from `hdl/rtl/`), cycle-stepped.
//! - [`stream`]: AXI4-Stream drivers with random `tvalid` gaps and `tready` backpressure.
//! - [`cosim`]: HDL-vs-model runs that compare every output beat.
//! - [`pcapio`]: reading and writing captures.
//! - [`demo`]: a short RC exchange through the HDL ICRC TX and RX blocks.
//! - [`fabric`]: simulated links with loss, reordering, duplication, corruption, ECN.
//! - [`shadow`]: `--engine cosim`, the model beside the HDL engine and the comparison.
//! - [`node`]: an engine model with host memory, and the driver backend over it.
//! - [`pair`]: two engines connected by the driver over two links.
//! - [`transfer`]: two engines moving a verified workload over a simulated link.
#![warn(missing_docs)]

pub mod cosim;
pub mod cosim_ack_q;
pub mod cosim_async_fifo;
pub mod cosim_axi_axil;
pub mod cosim_axis_fifo;
pub mod cosim_comp;
pub mod cosim_cq;
pub mod cosim_ctrl;
pub mod cosim_dcqcn;
pub mod cosim_dma_axi;
pub mod cosim_frame_gate;
pub mod cosim_mr_check;
pub mod cosim_pay_scatter;
pub mod cosim_qp_ctx;
pub mod cosim_rd_rsp;
pub mod cosim_regs;
pub mod cosim_req;
pub mod cosim_resp;
pub mod cosim_rx_disp;
pub mod cosim_rx_parse;
pub mod cosim_tx_arb;
pub mod cosim_tx_build;
pub mod demo;
pub mod fabric;
pub mod hdl;
pub mod latency;
pub mod netdev;
pub mod node;
pub mod pair;
pub mod pcapio;
pub mod shadow;
pub mod stream;
pub mod sweep;
pub mod transfer;
pub mod vl;

/// Errors of the simulator and its command line.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A waveform file could not be set up.
    #[error("cannot trace to {0:?}: {1}")]
    Trace(String, &'static str),
    /// The DUT stopped producing output.
    #[error("{model}: no progress for {idle} cycles after cycle {cycle} ({got} of {want} beats out)")]
    Stalled {
        /// Model name.
        model: &'static str,
        /// Idle cycles waited.
        idle: u64,
        /// Cycle of the last progress.
        cycle: u64,
        /// Beats received.
        got: usize,
        /// Beats expected.
        want: usize,
    },
    /// An unsupported configuration was asked for.
    #[error("unsupported configuration: {0}")]
    Config(String),
    /// A capture file could not be read or written.
    #[error("{path}: {msg}")]
    Pcap {
        /// File path.
        path: String,
        /// What went wrong.
        msg: String,
    },
    /// Other I/O.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
}
