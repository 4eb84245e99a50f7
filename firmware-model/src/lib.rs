//! Cycle-approximate model of the RoCEv2 offload engine.
//!
//! The model is organised block for block like the HDL under `hdl/rtl/`: every HDL module
//! `roce_<name>` has a model counterpart in [`blocks`] with the same name, and a lockstep
//! test in `tests/` runs both on the same stimulus.
//!
//! - [`wire`]: zero-copy parser and builder for the RoCEv2 wire format.
//! - [`icrc`]: the software invariant CRC (masked CRC-32) for IPv4 and IPv6.
//! - [`crc32`]: GF(2) helpers for CRC-32 (shift/unshift matrices) shared with the HDL generator.
//! - [`blocks`]: beat-level models of the HDL blocks.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod blocks;
pub mod contract;
pub mod crc32;
pub mod engine;
pub mod hdlgen;
pub mod icrc;
pub mod wire;
