//! The verbs-shaped types: handles, work requests, completions and QP attributes.

use std::net::IpAddr;

pub use roce_model::contract::{AccessFlags, CqeOpcode, CqeStatus, Encap, PathMtu, QpAttrMask, QpState};

use crate::backend::DmaBuf;

/// A protection domain. Handles are made by [`crate::Device`] only (their number cannot be
/// turned into a handle), so a call can only name an object that device made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ProtectionDomain(pub(crate) u32);

impl ProtectionDomain {
    /// The PD number.
    pub fn number(self) -> u32 {
        self.0
    }
}

/// A registered memory region. Its virtual addresses are the DMA addresses of the buffer
/// (`va = iova`), so local SGEs and remote RDMA addresses are both `buf.iova + offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MemoryRegion {
    /// The DMA buffer.
    pub buf: DmaBuf,
    /// First address of the region.
    pub va: u64,
    /// Length.
    pub len: u64,
    /// Local key.
    pub lkey: u32,
    /// Remote key (the same value).
    pub rkey: u32,
    /// Access flags.
    pub access: AccessFlags,
    /// Protection domain.
    pub pd: ProtectionDomain,
}

impl MemoryRegion {
    /// An SGE for `[off, off+len)` of the region.
    pub fn sge(&self, off: u64, len: u32) -> Sge {
        Sge { addr: self.va + off, len, lkey: self.lkey }
    }
}

/// A completion queue handle (made by [`crate::Device::create_cq`] only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CompletionQueue(pub(crate) u32);

impl CompletionQueue {
    /// The CQ number (its index in the engine).
    pub fn number(self) -> u32 {
        self.0
    }
}

/// A queue pair handle (made by [`crate::Device::create_qp`] only).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QueuePair(pub(crate) u32);

impl QueuePair {
    /// The QP number.
    pub fn qpn(self) -> u32 {
        self.0
    }
}

/// A scatter/gather element.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sge {
    /// Address (in the MR's address space).
    pub addr: u64,
    /// Length.
    pub len: u32,
    /// L_Key.
    pub lkey: u32,
}

/// The operation of a send work request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WrOp {
    /// SEND.
    Send,
    /// SEND with immediate data.
    SendImm(u32),
    /// SEND with invalidate of a remote R_Key.
    SendInv(u32),
    /// RDMA WRITE.
    Write {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// RDMA WRITE with immediate data.
    WriteImm {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Immediate data.
        imm: u32,
    },
    /// RDMA READ.
    Read {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
    },
    /// Atomic compare and swap (8 bytes, aligned).
    CmpSwap {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Compare value.
        compare: u64,
        /// Swap value.
        swap: u64,
    },
    /// Atomic fetch and add (8 bytes, aligned).
    FetchAdd {
        /// Remote address.
        remote_addr: u64,
        /// Remote key.
        rkey: u32,
        /// Addend.
        add: u64,
    },
}

/// A send work request.
#[derive(Clone, Copy, Debug)]
pub struct SendWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Operation.
    pub op: WrOp,
    /// Local buffers (at most 4).
    pub sges: &'a [Sge],
    /// Inline payload instead of SGEs (at most 64 bytes; SEND/WRITE only).
    pub inline: Option<&'a [u8]>,
    /// Generate a completion.
    pub signaled: bool,
    /// Solicited event.
    pub solicited: bool,
    /// Wait for earlier READs/atomics.
    pub fence: bool,
}

impl<'a> SendWr<'a> {
    /// A signaled request with SGEs.
    pub fn new(wr_id: u64, op: WrOp, sges: &'a [Sge]) -> Self {
        SendWr { wr_id, op, sges, inline: None, signaled: true, solicited: false, fence: false }
    }
}

/// A receive work request.
#[derive(Clone, Copy, Debug)]
pub struct RecvWr<'a> {
    /// Returned in the completion.
    pub wr_id: u64,
    /// Buffers (at most 3).
    pub sges: &'a [Sge],
}

/// A work completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkCompletion {
    /// The request's identifier.
    pub wr_id: u64,
    /// Status.
    pub status: CqeStatus,
    /// What completed.
    pub opcode: CqeOpcode,
    /// Bytes transferred or received.
    pub byte_len: u32,
    /// Immediate data.
    pub imm: Option<u32>,
    /// Invalidated R_Key.
    pub invalidated: Option<u32>,
    /// Local QP.
    pub qpn: u32,
    /// Remote QP.
    pub src_qp: u32,
}

impl WorkCompletion {
    /// A blank completion, to fill a `poll_cq` array with.
    pub const EMPTY: WorkCompletion = WorkCompletion {
        wr_id: 0,
        status: CqeStatus::Success,
        opcode: CqeOpcode::Send,
        byte_len: 0,
        imm: None,
        invalidated: None,
        qpn: 0,
        src_qp: 0,
    };
}

/// Attributes for [`crate::Device::modify_qp`]; the mask says which apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QpAttr {
    /// New state.
    pub state: QpState,
    /// Remote access the QP allows.
    pub access: AccessFlags,
    /// Path MTU.
    pub path_mtu: PathMtu,
    /// Remote QPN.
    pub dest_qpn: u32,
    /// Expected receive PSN.
    pub rq_psn: u32,
    /// First send PSN.
    pub sq_psn: u32,
    /// Encapsulation.
    pub encap: Encap,
    /// Remote MAC.
    pub dest_mac: [u8; 6],
    /// Remote IP (IPv4 or IPv6).
    pub dest_ip: IpAddr,
    /// 802.1Q tag (VID, PCP).
    pub vlan: Option<(u16, u8)>,
    /// DSCP.
    pub dscp: u8,
    /// TTL / hop limit.
    pub hop_limit: u8,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// RNR NAK timer code this QP advertises.
    pub min_rnr_timer: u8,
    /// Outstanding READ/atomic as requester.
    pub max_rd_atomic: u8,
    /// Responder resources.
    pub max_dest_rd_atomic: u8,
}

impl Default for QpAttr {
    fn default() -> Self {
        QpAttr {
            state: QpState::Reset,
            access: AccessFlags::EMPTY,
            path_mtu: PathMtu::Mtu1024,
            dest_qpn: 0,
            rq_psn: 0,
            sq_psn: 0,
            encap: Encap::RoceV2Ipv4,
            dest_mac: [0; 6],
            dest_ip: IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED),
            vlan: None,
            dscp: 0,
            hop_limit: 64,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            max_rd_atomic: 16,
            max_dest_rd_atomic: 16,
        }
    }
}

/// The usual masks of the RC connection sequence (what `ibv_rc_pingpong` passes).
pub mod masks {
    use super::QpAttrMask as M;
    /// RESET -> INIT.
    pub const INIT: M = M::STATE.union(M::ACCESS_FLAGS);
    /// INIT -> RTR.
    pub const RTR: M = M::STATE
        .union(M::AV)
        .union(M::PATH_MTU)
        .union(M::DEST_QPN)
        .union(M::RQ_PSN)
        .union(M::MAX_DEST_RD_ATOMIC)
        .union(M::MIN_RNR_TIMER);
    /// RTR -> RTS.
    pub const RTS: M =
        M::STATE.union(M::TIMEOUT).union(M::RETRY_CNT).union(M::RNR_RETRY).union(M::SQ_PSN).union(M::MAX_QP_RD_ATOMIC);
}
