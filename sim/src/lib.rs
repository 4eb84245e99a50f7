//! The RoCEv2 engine's simulator: the Verilated HDL beside the Rust model, block by block and
//! as whole engines on a simulated network, and the commands of the `roce-sim` CLI.
//!
//! - [`vl`]: the Verilated models (`sim/build.rs` builds one per `config` and `model` line of
//!   `hdl/configs.txt`), cycle-stepped, every port reachable by name.
//! - [`stream`]: AXI4-Stream drivers with random `tvalid` gaps and `tready` backpressure.
//! - [`pcapio`]: reading and writing captures.
//! - [`cosim`]: one lockstep harness per HDL block (`cosim::<block>`, named after the RTL
//!   file), with their shared helpers.
//! - [`net`]: the simulated network: links ([`net::fabric`]), nodes with host memory and the
//!   driver backend ([`net::node`]), the Verilated engine as a node ([`net::hdl`]) and the
//!   engine model beside it ([`net::shadow`], `--engine cosim`), two connected engines
//!   ([`net::pair`]), an engine on a datagram socket for QEMU and the examples
//!   ([`net::netdev`]).
//! - [`cmd`]: the `roce-sim` commands: [`cmd::transfer`] (a verified workload between two
//!   engines), [`cmd::sweep`] (goodput against message size, message rate against QP count), [`cmd::latency`] (idle
//!   latency in cycles), [`cmd::demo`] (an RC exchange through the HDL ICRC blocks).
#![warn(missing_docs)]

pub mod cmd;
pub mod cosim;
pub mod net;
pub mod pcapio;
pub mod stream;
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
    /// A workload asks for more than an engine has.
    #[error("{engine}: {asked} {what} asked for, at most {max} ({why})")]
    Capacity {
        /// Which engine.
        engine: &'static str,
        /// What is short.
        what: &'static str,
        /// How many were asked for.
        asked: u64,
        /// How many the engine has.
        max: u64,
        /// Where the limit comes from.
        why: String,
    },
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
    /// A host memory budget that cannot be built (e.g. a bandwidth below a byte per cycle).
    #[error(transparent)]
    Budget(#[from] roce_model::engine::BudgetError),
}
