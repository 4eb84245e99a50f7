//! Work requests, completions and QP attributes as the engine's blocks exchange them.
//!
//! These are the decoded forms of the host descriptors (`contract::SqWqe`, `RqWqe`, `Cqe`,
//! `QpCtx`); the numeric codes follow ibverbs so a driver maps them one to one.

pub use crate::contract::{CqeStatus as WcStatus, Encap, QpState};

/// PSNs are 24 bits and compared modulo 2^24.
pub const PSN_MASK: u32 = 0x00FF_FFFF;

/// `a - b` as a signed 24-bit distance (window 2^23 either way).
pub fn psn_diff(a: u32, b: u32) -> i32 {
    ((a.wrapping_sub(b) << 8) as i32) >> 8
}

/// `psn + n` modulo 2^24.
pub fn psn_add(psn: u32, n: u32) -> u32 {
    psn.wrapping_add(n) & PSN_MASK
}

/// A scatter/gather element: `len` bytes at `addr` in the MR named by `lkey`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Virtual address (in the MR's address space).
    pub addr: u64,
    /// Length in bytes.
    pub len: u32,
    /// Local key of the MR.
    pub lkey: u32,
}

/// What a send work request does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOp {
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendImm(u32),
    /// SEND with invalidate (the remote R_Key to invalidate).
    SendInv(u32),
    /// RDMA WRITE.
    Write,
    /// RDMA WRITE with immediate data.
    WriteImm(u32),
    /// RDMA READ.
    Read,
    /// Atomic compare and swap.
    CmpSwap {
        /// Compare value.
        compare: u64,
        /// Swap value.
        swap: u64,
    },
    /// Atomic fetch and add.
    FetchAdd {
        /// Addend.
        add: u64,
    },
}

impl SendOp {
    /// RDMA READ or atomic: the requester waits for response data.
    pub fn is_read_like(self) -> bool {
        matches!(self, SendOp::Read | SendOp::CmpSwap { .. } | SendOp::FetchAdd { .. })
    }
    /// Atomic.
    pub fn is_atomic(self) -> bool {
        matches!(self, SendOp::CmpSwap { .. } | SendOp::FetchAdd { .. })
    }
    /// Uses a remote address and R_Key.
    pub fn is_rdma(self) -> bool {
        !matches!(self, SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_))
    }
}

/// A send work request (decoded SQ WQE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendWr {
    /// Caller's identifier, returned in the completion.
    pub wr_id: u64,
    /// Operation.
    pub op: SendOp,
    /// Generate a completion.
    pub signaled: bool,
    /// Solicited event on the remote side.
    pub solicited: bool,
    /// Wait for earlier READs/atomics to complete before starting.
    pub fence: bool,
    /// Local buffers (gather for SEND/WRITE, scatter for READ/atomics).
    pub sges: Vec<Sge>,
    /// Inline data instead of SGEs.
    pub inline: Option<Vec<u8>>,
    /// Remote virtual address (RDMA and atomics).
    pub remote_addr: u64,
    /// Remote key (RDMA and atomics).
    pub rkey: u32,
}

impl SendWr {
    /// Message length in bytes (8 for atomics).
    pub fn len(&self) -> u64 {
        if self.op.is_atomic() {
            return 8;
        }
        match &self.inline {
            Some(d) => d.len() as u64,
            None => self.sges.iter().map(|s| u64::from(s.len)).sum(),
        }
    }

    /// Whether the message is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A receive work request (decoded RQ WQE).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecvWr {
    /// Caller's identifier.
    pub wr_id: u64,
    /// Buffers to scatter an incoming SEND into.
    pub sges: Vec<Sge>,
}

/// What a completion completes (send side) or what arrived (receive side).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WcOpcode {
    /// SEND finished.
    Send,
    /// RDMA WRITE finished.
    Write,
    /// RDMA READ finished.
    Read,
    /// Compare and swap finished.
    CmpSwap,
    /// Fetch and add finished.
    FetchAdd,
    /// A SEND arrived.
    Recv,
    /// An RDMA WRITE with immediate arrived.
    RecvWriteImm,
}

/// A work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Completion {
    /// The work request's identifier.
    pub wr_id: u64,
    /// Status.
    pub status: WcStatus,
    /// Opcode.
    pub opcode: WcOpcode,
    /// Bytes received (receive side) or transferred.
    pub byte_len: u32,
    /// Immediate data, if any.
    pub imm: Option<u32>,
    /// Invalidated R_Key, if any.
    pub invalidated: Option<u32>,
    /// Local QP number.
    pub qpn: u32,
    /// Remote QP number (receive side).
    pub src_qp: u32,
    /// The SEND was solicited.
    pub solicited: bool,
}

/// Access flags (`IBV_ACCESS_*`, [`crate::contract::AccessFlags`]) as plain bits.
pub mod access {
    use crate::contract::AccessFlags;
    /// Local write (needed by receive buffers and READ targets).
    pub const LOCAL_WRITE: u32 = AccessFlags::LOCAL_WRITE.bits();
    /// Remote write.
    pub const REMOTE_WRITE: u32 = AccessFlags::REMOTE_WRITE.bits();
    /// Remote read.
    pub const REMOTE_READ: u32 = AccessFlags::REMOTE_READ.bits();
    /// Remote atomic.
    pub const REMOTE_ATOMIC: u32 = AccessFlags::REMOTE_ATOMIC.bits();
}

/// The RNR NAK timer codes in microseconds (IBTA Vol 1 table 45; Linux rxe `rnrnak_usec`).
pub const RNR_TIMER_US: [u32; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10_240,
    15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840, 245_760, 327_680, 491_520,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psn_arithmetic_wraps() {
        assert_eq!(psn_diff(0, PSN_MASK), 1);
        assert_eq!(psn_diff(PSN_MASK, 0), -1);
        assert_eq!(psn_diff(5, 3), 2);
        assert_eq!(psn_add(PSN_MASK, 2), 1);
        assert_eq!(psn_diff(0x80_0000, 0), -0x80_0000);
    }
}
