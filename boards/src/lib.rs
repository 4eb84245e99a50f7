//! Board top levels and synthesis flows for the RoCEv2 offload engine.
//!
//! Today: the Yosys flow behind `roce-synth`. Every `config`, `synth` and `board` line of
//! `hdl/configs.txt` (crate [`roce_hdl`]) is synthesized with Yosys, generically (`synth`)
//! and for Xilinx families (`synth_xilinx`), the logs are checked for serious warnings
//! ([`yosys::SERIOUS`]) and the resource counts ([`stat`]) are written to
//! `boards/synth/REPORT.md` and `report.json` ([`report`]), with the logic levels of the
//! deepest path of each Xilinx netlist ([`levels`]). Board top levels and their Vivado
//! scripts: `boards/README.md`.

#![deny(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn, clippy::undocumented_unsafe_blocks)]

pub mod error;
pub mod flow;
pub mod levels;
pub mod report;
pub mod stat;
pub mod yosys;

pub use error::{Error, Result};
