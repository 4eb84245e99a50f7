//! The commands of the `roce-sim` CLI (`src/main.rs` parses the arguments), also used by the
//! tests: each runs a workload and returns what it measured.

pub mod demo;
pub mod latency;
pub mod sweep;
pub mod transfer;
