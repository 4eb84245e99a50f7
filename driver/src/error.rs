//! The driver's error type.

use roce_model::contract::{CmdErrorCode, ContractError};

/// Errors reported by the driver.
#[derive(Debug, thiserror::Error)]
pub enum DriverError {
    /// The requested backend is not available on this machine.
    #[error("backend {0} is not available: {1}")]
    Unavailable(&'static str, String),
    /// BAR0 does not identify as this engine.
    #[error("not a RoCE engine: ID register reads {0:#010x}")]
    NotEngine(u32),
    /// The engine's contract version is not one this driver speaks.
    #[error("engine contract version {major}.{minor} is not supported")]
    Version {
        /// Major version.
        major: u32,
        /// Minor version.
        minor: u32,
    },
    /// The engine did not become ready.
    #[error("engine not ready after {0} polls")]
    NotReady(u32),
    /// A context command failed.
    #[error("command {cmd} on index {index} failed: {code:?}")]
    Command {
        /// Command name.
        cmd: &'static str,
        /// Context index.
        index: u32,
        /// Engine error code.
        code: CmdErrorCode,
    },
    /// The engine returned an undefined command error code.
    #[error("command failed with undefined code {0}")]
    BadCommandCode(u32),
    /// A table (QPs, CQs, MRs) is full.
    #[error("no free {0}")]
    Exhausted(&'static str),
    /// A work queue is full.
    #[error("{0} is full")]
    QueueFull(&'static str),
    /// An argument is out of range.
    #[error("invalid argument: {0}")]
    Invalid(String),
    /// A range of bytes outside the memory it must lie in (an SGE or an access beyond its
    /// region, a region beyond its buffer or wrapping the address space).
    #[error("{what} [{off:#x}, +{len}) outside {size} bytes")]
    OutOfBounds {
        /// What the range is.
        what: &'static str,
        /// First byte.
        off: u64,
        /// Length.
        len: u64,
        /// Size of the memory it must lie in.
        size: u64,
    },
    /// A QP number this device has no QP for.
    #[error("QP {0} does not exist")]
    UnknownQp(u32),
    /// A CQ number this device has no CQ for.
    #[error("CQ {0} does not exist")]
    UnknownCq(u32),
    /// An MR key this device has no region for.
    #[error("MR key {0:#x} does not exist")]
    UnknownMr(u32),
    /// An object still in use by others cannot be destroyed (a CQ a QP completes into, a
    /// PD with regions or QPs).
    #[error("{0} is in use")]
    Busy(&'static str),
    /// A handle of another device (context) was passed.
    #[error("the {0} belongs to another device")]
    ForeignHandle(&'static str),
    /// The backend cannot do this (e.g. map application memory for DMA).
    #[error("not supported by this backend: {0}")]
    Unsupported(&'static str),
    /// A descriptor from the device did not decode.
    #[error("bad descriptor from the device: {0}")]
    Descriptor(#[from] ContractError),
    /// DMA memory could not be allocated or mapped.
    #[error("DMA allocation of {len} bytes failed: {why}")]
    Dma {
        /// Bytes requested.
        len: usize,
        /// Why.
        why: String,
    },
    /// An operating system call failed.
    #[error("{0}: {1}")]
    Io(String, #[source] std::io::Error),
    /// A VFIO operation failed (the [`crate::vfio`] backend, Linux only).
    #[cfg(target_os = "linux")]
    #[error(transparent)]
    Vfio(#[from] crate::vfio::VfioError),
}

/// Result alias.
pub type Result<T> = std::result::Result<T, DriverError>;
