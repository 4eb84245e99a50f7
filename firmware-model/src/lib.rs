//! Cycle-approximate model of the RoCEv2 offload engine.
//!
//! The model is organised block for block like the HDL under `hdl/rtl/`. 18 of the 29 hand-written
//! HDL modules have a model in [`blocks`] named by the block's stem (`roce_<stem>.sv` ->
//! `blocks::<stem>`), which a lockstep test (`tests/tests/<stem>_cosim.rs`) runs beside the
//! Verilated module. Of the others, `roce_engine` is [`engine::Engine`] and `roce_ctrl` its
//! register interface (`Engine::mmio_read` / `mmio_write`), each with its own lockstep test; the
//! stream helpers `roce_axis_fifo`, `roce_axis_async_fifo`, `roce_axis_frame_gate` and the bridge
//! `roce_axi_axil` are checked against the behaviour their headers state, in their harnesses
//! (`roce_sim::cosim::<stem>`); the arbiters `roce_dma_rd_arb`, `roce_dma_wr_arb`, `roce_mr_arb`
//! are tested inside the engine, and `roce_rst_sync`, `roce_sync_level` by lint and synthesis only.
//!
//! - [`wire`]: zero-copy parser and builder for the RoCEv2 wire format.
//! - [`icrc`]: the software invariant CRC (masked CRC-32) for IPv4 and IPv6.
//! - [`crc32`]: GF(2) helpers for CRC-32 (shift/unshift matrices) shared with the HDL generator.
//! - [`blocks`]: the models of the HDL blocks, one module per HDL module, named by its stem.
//! - [`engine`]: the whole engine, cycle-approximate; a block's function in a file named by its
//!   stem where it has one (`engine::mr_check`, `engine::qp_ctx`, ...).
//! - [`contract`]: the register map, descriptor layouts and inter-block records, and the
//!   generators of `docs/register-map.md` and the HDL packages in `hdl/rtl/gen/`.
//! - [`hdlgen`]: the generators of the CRC and opcode HDL (`roce-gen-hdl` writes all of them).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod blocks;
pub mod contract;
pub mod crc32;
pub mod engine;
pub mod hdlgen;
pub mod icrc;
pub mod wire;
