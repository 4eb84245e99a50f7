//! Userspace driver for the RoCEv2 offload engine (VFIO and simulator backends).
//!
//! This crate is the home of the VFIO driver (issue 5). Today it holds only the error type
//! every backend will share, so the workspace has its final shape.
#![warn(missing_docs)]

/// Errors reported by the driver.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The requested backend is not available on this machine.
    #[error("backend {0} is not available: {1}")]
    Unavailable(&'static str, String),
}
