//! Userspace driver for the RoCEv2 offload engine, with a verbs-shaped API.
//!
//! The driver programs the engine only through its BAR0 registers (`contract::regs`) and
//! the descriptor rings in DMA memory (`contract::SqWqe`, `RqWqe`, `Cqe`), so the same code
//! runs against any [`Backend`]: real hardware through VFIO, or the simulator (the Rust
//! model or the Verilated HDL) with host memory shared with the simulated DMA.
//!
//! ```text
//!   Device::open(backend) -> configure_port -> enable
//!   alloc_pd -> reg_mr -> create_cq -> create_qp -> modify_qp(INIT/RTR/RTS)
//!   post_recv / post_send (ring + doorbell) -> poll_cq
//! ```
#![warn(missing_docs)]

pub mod backend;
pub mod context;
pub mod device;
pub mod error;
pub mod verbs;
#[cfg(target_os = "linux")]
pub mod vfio;
mod wqe;

pub use backend::{Backend, DmaBuf};
pub use context::{Context, Cq, Mr, Pd, Qp};
pub use device::Device;
pub use error::DriverError;
pub use verbs::*;
