//! `roce_qp_ctx`: QP contexts, the verbs state machine and the attribute checks.
//!
//! The context is split the way the HDL stores it: addressing and static attributes (written
//! by `modify_qp`), requester state (`ReqState` with the send window, owned by `roce_req`),
//! completer state (`CompState`, owned by `roce_comp`) and responder state (`RespState`, owned
//! by `roce_resp`). Lookup by QPN costs [`LATENCY`] cycles.

use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::contract::records::{CtxOpCode, QpAttr};
use crate::contract::{
    qp_error_enters_err, qp_modify_check, qp_write_check, AccessFlags, CmdErrorCode, CmdOpcode, PathMtu, QpAttrMask,
    QpCtx, QpType, VlanTag, MAX_SQ_WIN_SHIFT,
};

use super::types::*;

/// Pipeline latency of a context lookup in cycles.
pub const LATENCY: u64 = 3;

/// A host ring (SQ, RQ or CQ): `2^log_size` entries at `base`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ring {
    /// DMA address of entry 0.
    pub base: u64,
    /// log2 of the number of entries.
    pub log_size: u8,
    /// Producer index (free-running, 16 bits used for SQ/RQ doorbells).
    pub pi: u32,
    /// Consumer index (free-running).
    pub ci: u32,
}

impl Ring {
    /// Number of entries.
    pub fn size(&self) -> u32 {
        1u32 << self.log_size
    }
    /// Address of the entry at free-running index `i`.
    pub fn slot(&self, i: u32, entry_size: u64) -> u64 {
        self.base + u64::from(i & (self.size() - 1)) * entry_size
    }
}

/// log2 of the smallest send window and of its block: at most `2^(LOG_SQ_WIN +
/// sq_win_shift)` WQEs per QP are fetched and not yet completed (`roce_req` stops fetching
/// at the bound). `sq_win` holds the QP's own block of `2^LOG_SQ_WIN` entries, and a pool of
/// as many blocks again from which a QP with `sq_win_shift` above 0 takes `2^sq_win_shift`
/// (`QpCtx.sq_win_base`).
pub const LOG_SQ_WIN: u32 = 4;

/// A send WQE the requester has fetched and not yet completed: one `sq_win` entry (written by
/// `roce_req` when it fetches and when it starts the WQE, retired by `roce_comp` advancing the
/// SQ consumer index past it). The model keeps the decoded request; the HDL keeps the fields
/// the completer needs (op, flags, length, wr_id, PSNs, status) and reads the WQE again from
/// the SQ ring when it needs the rest.
#[derive(Clone, Debug)]
pub struct SqEntry {
    /// The request.
    pub wr: SendWr,
    /// First PSN (assigned when the first packet is generated).
    pub first_psn: u32,
    /// PSNs the request spans (packets of SEND/WRITE, response packets of READ, 1 for atomics),
    /// set when it starts.
    pub npkts: u32,
    /// Completion status if it ended in error (a malformed WQE, a local error while sending).
    pub error: Option<WcStatus>,
}

impl SqEntry {
    /// Last PSN of the request.
    pub fn last_psn(&self) -> u32 {
        psn_add(self.first_psn, self.npkts.max(1) - 1)
    }
}

/// log2 of the entries of `roce_req`'s WQE prefetch store: the bodies of the WQEs read ahead
/// of the send index (one DMA read fetches up to `2^LOG_WQE_BATCH` consecutive WQEs), entry
/// [`wqe_store_slot`] of (QP, SQ index): a stretch of `2^LOG_SQ_WIN` for each of the
/// engine's 2^10 QPs. An entry is taken over by a later WQE of its QP (a read ahead after a
/// rewind) unless it is still being read; the body of the send index itself, when it was not
/// found there, goes into the QP's own slot (`ReqState::own`).
pub const LOG_WQE_STORE: u32 = 10 + LOG_SQ_WIN;

/// log2 of the most WQEs one WQE read fetches (consecutive SQ indices, bounded by the ring's
/// end, the producer index and the send window).
pub const LOG_WQE_BATCH: u32 = 3;

/// The prefetch store entry of SQ index `idx` of QP `qpn`: each QP has a stretch of
/// `2^LOG_SQ_WIN` entries (SQ index modulo that), the most it reads ahead of its send index
/// (QPNs beyond the engine's 2^10 alias, as in `roce_req`).
pub fn wqe_store_slot(qpn: u32, idx: u32) -> usize {
    ((idx & ((1 << LOG_SQ_WIN) - 1)) | (qpn << LOG_SQ_WIN) & ((1 << LOG_WQE_STORE) - 1)) as usize
}

/// A WQE body the requester holds (or is reading).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Body {
    /// SQ index of the WQE.
    pub idx: u32,
    /// Cycle its read completes (the block lockstep: `u64::MAX` until the HDL took the data).
    pub ready_at: u64,
}

/// A prefetch store entry: the body of a WQE of QP `qpn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StoreEntry {
    /// The QP.
    pub qpn: u32,
    /// The body.
    pub body: Body,
}

/// Requester state (`roce_req`'s table, and `sq_win`). SQ indices are free-running 32-bit
/// (the ring slot is the index modulo the ring size); the completer owns the consumer index
/// (`Qp::sq.ci`), the requester the producer index (`Qp::sq.pi`).
#[derive(Clone, Debug, Default)]
pub struct ReqState {
    /// PSN of the next packet to generate.
    pub next_psn: u32,
    /// SQ index of the WQE being sent.
    pub cur: u32,
    /// Packet index within it.
    pub cur_pkt: u32,
    /// One past the highest PSN ever sent (packets below it are retransmissions).
    pub max_sent: u32,
    /// The rewind generation last applied (`CompState::rewind.gen`).
    pub gen: u32,
    /// SQ index one past the last fetched WQE.
    pub fetched: u32,
    /// SQ index one past the last started WQE (PSNs assigned).
    pub started: u32,
    /// The QP's own body slot: the WQE at the send index when the prefetch store did not
    /// hold it (bodies ahead of it are in the shared store; any WQE held in neither is read
    /// again from the ring before it is sent).
    pub own: Option<Body>,
    /// READ/atomic WQEs started (wrapping; outstanding = this - `CompState::rd_done`).
    pub rd_started: u32,
    /// Local ACK timer deadline (IB timer ticks) set when a packet went out while nothing was
    /// outstanding; the completer's timer runs from the later of this and its own deadline.
    pub busy_deadline: Option<u64>,
    /// `sq_win`: the fetched, uncompleted WQEs, oldest (SQ index `Qp::sq.ci`) first; at most
    /// [`ReqState::win_size`].
    pub win: VecDeque<SqEntry>,
    /// [`super::Profile::Rxe`]: packets sent since the last one with AckReq.
    pub noack: u32,
    /// The SQ consumer index the last visit saw (16 bits; an inline doorbell's window test).
    pub ci_seen: u32,
    /// The send window, `2^(LOG_SQ_WIN + win_shift)` WQEs (taken at Rtr -> Rts).
    pub win_shift: u8,
    /// Cycle the last fetched WQE (SQ index `fetched - 1`) arrives (the block lockstep:
    /// `u64::MAX` until the HDL took its data).
    pub fetch_ready_at: u64,
}

impl ReqState {
    /// The send window: the most WQEs fetched and not completed.
    pub fn win_size(&self) -> u32 {
        1 << (LOG_SQ_WIN + u32::from(self.win_shift))
    }
}

/// A rewind the completer asks of the requester: go back to PSN `psn`, the packet `pkt` of
/// the WQE at SQ index `idx`. The requester applies it at its next visit to the QP when
/// `gen` differs from `ReqState::gen`; packets made before that are stale.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RewindReq {
    /// PSN to resend from.
    pub psn: u32,
    /// SQ index of the WQE that carries it.
    pub idx: u32,
    /// Its packet index within that WQE.
    pub pkt: u32,
    /// Generation (bumped by every request).
    pub gen: u32,
}

/// Completer state (`roce_comp`'s table).
#[derive(Clone, Debug, Default)]
pub struct CompState {
    /// Oldest unacknowledged PSN.
    pub una: u32,
    /// Response packets received for the READ at the SQ consumer index.
    pub rd_pkts: u32,
    /// READ/atomic WQEs completed (wrapping).
    pub rd_done: u32,
    /// Transport retries left.
    pub retries_left: u8,
    /// RNR retries left (7 = infinite).
    pub rnr_left: u8,
    /// Local ACK timer deadline (ticks), set on progress and on a timeout.
    pub deadline: Option<u64>,
    /// No transmission before this cycle (RNR NAK back-off).
    pub rnr_until: u64,
    /// The last rewind requested.
    pub rewind: RewindReq,
    /// The PSN of the last rewind, until progress: repeated triggers for it are ignored.
    pub rewound_to: Option<u32>,
}

/// A completed READ or atomic request, kept to answer duplicates (responder resources).
#[derive(Clone, Copy, Debug)]
pub struct RdResource {
    /// First PSN.
    pub psn: u32,
    /// PSNs used.
    pub npkts: u32,
    /// Original data, for atomics.
    pub atomic_orig: Option<u64>,
}

/// A SEND or WRITE message the responder is in the middle of.
#[derive(Clone, Debug)]
pub enum InMsg {
    /// SEND: the receive WQE and bytes placed so far.
    Send {
        /// Receive WQE.
        wr: RecvWr,
        /// Bytes placed.
        off: u64,
    },
    /// WRITE: target and bytes written so far.
    Write {
        /// Remote VA of the next byte.
        va: u64,
        /// R_Key.
        rkey: u32,
        /// DMA length from the RETH.
        dma_len: u64,
        /// Bytes written.
        off: u64,
    },
}

/// An ACK or NAK the responder owes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AckOwed {
    /// PSN the ACK carries.
    pub psn: u32,
    /// AETH syndrome.
    pub syndrome: u8,
    /// MSN.
    pub msn: u32,
    /// Cycle from which it may be sent.
    pub ready: u64,
}

/// Responder state (`roce_resp`).
#[derive(Clone, Debug, Default)]
pub struct RespState {
    /// Expected PSN.
    pub epsn: u32,
    /// Message sequence number (completed messages, 24 bits).
    pub msn: u32,
    /// A PSN sequence error NAK was sent and the expected PSN has not arrived since.
    pub nak_sent: bool,
    /// The packet being executed is the one a sequence NAK asked for (it is acknowledged
    /// even without AckReq).
    pub gap_filled: bool,
    /// Message in progress.
    pub cur: Option<InMsg>,
    /// Recent READ/atomic requests.
    pub resources: VecDeque<RdResource>,
    /// ACK/NAK to send (coalesced: a newer one replaces an older ACK).
    pub ack: Option<AckOwed>,
    /// The ACK/NAKs owed after `ack`, in order. [`super::Profile::Rxe`]: each is sent
    /// (nothing coalesces). [`super::Profile::Engine`]: those whose payload is not all
    /// written by the time `ack` may go (their `ready` is later); when `ack`'s turn comes,
    /// those written by then are merged into it (the generator sends the latest PSN it has).
    pub acks_after: VecDeque<AckOwed>,
}

/// A change QP_WRITE, QP_MODIFY or a transport error makes to a QP's engine state (the
/// requester, responder and ring state other blocks own). [`Qp::ctx_op`] applies one; in the
/// HDL `roce_qp_ctx` sends them to the owners on its context-op port. A command gives its
/// ops in the order of the variants here, each at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtxOp {
    /// Zero the engine state: requester, responder, ring indices.
    Reset,
    /// The responder's expected PSN.
    SetRqPsn(u32),
    /// The requester's next (and oldest unacknowledged, and highest sent) PSN.
    SetSqPsn(u32),
    /// Rtr -> Rts: load the retry counters and the send window.
    EnterRts {
        /// Transport retries.
        retry_cnt: u8,
        /// RNR retries (7 = infinite).
        rnr_retry: u8,
        /// The send window: `2^(LOG_SQ_WIN + win_shift)` WQEs.
        win_shift: u8,
        /// Its first block in the deep-window pool (`win_shift` above 0).
        win_base: u16,
    },
    /// The QP entered Err: flush its outstanding work (the engine's `flush_qp`).
    EnterErr,
}

impl CtxOp {
    /// `ctx_op.code` (`CtxOpReq.code`).
    pub fn code(self) -> CtxOpCode {
        match self {
            CtxOp::Reset => CtxOpCode::Reset,
            CtxOp::SetRqPsn(_) => CtxOpCode::SetRqPsn,
            CtxOp::SetSqPsn(_) => CtxOpCode::SetSqPsn,
            CtxOp::EnterRts { .. } => CtxOpCode::EnterRts,
            CtxOp::EnterErr => CtxOpCode::EnterErr,
        }
    }

    /// `ctx_op.arg` (`CtxOpReq.arg`).
    pub fn arg(self) -> u32 {
        use crate::contract::records::CTX_RTS_ARG;
        match self {
            CtxOp::Reset | CtxOp::EnterErr => 0,
            CtxOp::SetRqPsn(p) | CtxOp::SetSqPsn(p) => p,
            CtxOp::EnterRts { retry_cnt, rnr_retry, win_shift, win_base } => {
                let [r, n, s, b] =
                    [&CTX_RTS_ARG.bits[0], &CTX_RTS_ARG.bits[1], &CTX_RTS_ARG.bits[2], &CTX_RTS_ARG.bits[3]];
                let f = |v: u32, d: &crate::contract::BitDesc| (v & ((1 << d.width) - 1)) << d.lsb;
                f(u32::from(retry_cnt), r)
                    | f(u32::from(rnr_retry), n)
                    | f(u32::from(win_shift), s)
                    | f(u32::from(win_base), b)
            }
        }
    }
}

/// A queue pair.
#[derive(Clone, Debug)]
pub struct Qp {
    /// QP number.
    pub qpn: u32,
    /// State.
    pub state: QpState,
    /// Protection domain.
    pub pd: u32,
    /// Responder access flags.
    pub access: u32,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// Remote QPN.
    pub dest_qpn: u32,
    /// Remote MAC.
    pub dest_mac: [u8; 6],
    /// Remote IP.
    pub dest_ip: Option<IpAddr>,
    /// Encapsulation.
    pub encap: Encap,
    /// 802.1Q (VID, PCP).
    pub vlan: Option<(u16, u8)>,
    /// DSCP of sent packets.
    pub dscp: u8,
    /// IPv4 TTL / IPv6 hop limit.
    pub hop_limit: u8,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// UDP source port.
    pub udp_sport: u16,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// Transport retry count.
    pub retry_cnt: u8,
    /// RNR retry count.
    pub rnr_retry: u8,
    /// Minimum RNR timer code sent in RNR NAKs.
    pub min_rnr_timer: u8,
    /// The send window: `2^(LOG_SQ_WIN + sq_win_shift)` WQEs (QpCtx.sq_win_shift).
    pub sq_win_shift: u8,
    /// Its first block in the deep-window pool (QpCtx.sq_win_base).
    pub sq_win_base: u16,
    /// Outstanding READ/atomic as requester.
    pub max_rd_atomic: u8,
    /// Responder resources.
    pub max_dest_rd_atomic: u8,
    /// Send queue ring.
    pub sq: Ring,
    /// Receive queue ring.
    pub rq: Ring,
    /// Send CQ.
    pub send_cq: u32,
    /// Receive CQ.
    pub recv_cq: u32,
    /// Requester.
    pub req: ReqState,
    /// Completer.
    pub comp: CompState,
    /// Responder.
    pub resp: RespState,
    /// Congestion control (`roce_dcqcn`): rate limiter and CNP interval.
    pub cc: super::dcqcn::QpCc,
}

impl Qp {
    /// QP_WRITE: a QP from a context (state Reset or Init).
    pub fn from_ctx(qpn: u32, c: &QpCtx) -> Result<Self, CmdErrorCode> {
        Self::write(qpn, c).map(|(q, _)| q)
    }

    /// QP_WRITE: a QP from a context (state Reset or Init), and the context ops that set up
    /// its engine state (already applied to it): Reset, SetRqPsn, SetSqPsn.
    pub fn write(qpn: u32, c: &QpCtx) -> Result<(Self, Vec<CtxOp>), CmdErrorCode> {
        qp_write_check(QpState::Reset, c.state)?;
        if c.qp_type != QpType::Rc {
            return Err(CmdErrorCode::BadAttr);
        }
        let ring = |base: u64, log: u8| Ring { base, log_size: log, pi: 0, ci: 0 };
        let mut q = Qp {
            qpn,
            state: c.state,
            pd: c.pd,
            access: 0,
            mtu: 1024,
            dest_qpn: 0,
            dest_mac: [0; 6],
            dest_ip: None,
            encap: Encap::RoceV2Ipv4,
            vlan: None,
            dscp: 0,
            hop_limit: 64,
            flow_label: 0,
            udp_sport: udp_sport_for(qpn),
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            min_rnr_timer: 12,
            sq_win_shift: c.sq_win_shift,
            sq_win_base: c.sq_win_base,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
            sq: ring(c.sq_base, c.sq_log_size),
            rq: ring(c.rq_base, c.rq_log_size),
            send_cq: u32::from(c.send_cq),
            recv_cq: u32::from(c.recv_cq),
            req: ReqState::default(),
            comp: CompState::default(),
            resp: RespState::default(),
            cc: super::dcqcn::QpCc::default(),
        };
        q.apply(c, QpAttrMask::from_bits_truncate(u32::MAX).difference(QpAttrMask::STATE));
        let ops = vec![CtxOp::Reset, CtxOp::SetRqPsn(c.rq_psn), CtxOp::SetSqPsn(c.sq_psn)];
        for &op in &ops {
            q.ctx_op(op);
        }
        Ok((q, ops))
    }

    /// Apply a context op to the engine state (what the owners of that state do).
    /// `EnterErr` changes nothing here: the flush is the engine's (`Engine::flush_qp`).
    pub fn ctx_op(&mut self, op: CtxOp) {
        match op {
            CtxOp::Reset => {
                self.req = ReqState::default();
                self.comp = CompState::default();
                self.resp = RespState::default();
                self.sq.pi = 0;
                self.sq.ci = 0;
                self.rq.pi = 0;
                self.rq.ci = 0;
            }
            CtxOp::SetRqPsn(p) => self.resp.epsn = p,
            CtxOp::SetSqPsn(p) => {
                self.req.next_psn = p;
                self.req.max_sent = p;
                self.comp.una = p;
            }
            CtxOp::EnterRts { retry_cnt, rnr_retry, win_shift, .. } => {
                self.comp.retries_left = retry_cnt;
                self.comp.rnr_left = rnr_retry;
                self.req.win_shift = win_shift;
            }
            CtxOp::EnterErr => {}
        }
    }

    /// A transport error: the QP enters Err unless [`qp_error_enters_err`] says it stays
    /// (Reset, Err). Returns the op to send (`EnterErr`) when it did; the caller reports the
    /// error (QP_ERR_INFO) and flushes.
    pub fn transport_error(&mut self) -> Option<CtxOp> {
        if !qp_error_enters_err(self.state) {
            return None;
        }
        self.state = QpState::Err;
        Some(CtxOp::EnterErr)
    }

    /// Copy the attributes `mask` selects from `c` (the PSNs are context ops, not attributes).
    fn apply(&mut self, c: &QpCtx, mask: QpAttrMask) {
        if mask.contains(QpAttrMask::ACCESS_FLAGS) {
            self.access = c.access.bits();
        }
        if mask.contains(QpAttrMask::PATH_MTU) {
            self.mtu = c.path_mtu.bytes();
        }
        if mask.contains(QpAttrMask::DEST_QPN) {
            self.dest_qpn = c.dest_qpn;
        }
        if mask.contains(QpAttrMask::AV) {
            self.encap = c.encap;
            self.dest_mac = c.dest_mac;
            self.vlan = c.vlan.valid.then_some((c.vlan.vid, c.vlan.pcp));
            self.dscp = c.dscp;
            self.hop_limit = c.hop_limit;
            self.flow_label = c.flow_label;
            self.udp_sport = if c.udp_sport == 0 { udp_sport_for(self.qpn) } else { c.udp_sport };
            let ip = Ipv6Addr::from(c.dest_ip);
            self.dest_ip = Some(match (c.encap, ip.to_ipv4_mapped()) {
                (Encap::RoceV2Ipv4, Some(v4)) => IpAddr::V4(v4),
                (Encap::RoceV2Ipv4, None) => {
                    IpAddr::V4(Ipv4Addr::new(c.dest_ip[12], c.dest_ip[13], c.dest_ip[14], c.dest_ip[15]))
                }
                _ => IpAddr::V6(ip),
            });
        }
        if mask.contains(QpAttrMask::TIMEOUT) {
            self.timeout = c.timeout;
        }
        if mask.contains(QpAttrMask::RETRY_CNT) {
            self.retry_cnt = c.retry_cnt;
        }
        if mask.contains(QpAttrMask::RNR_RETRY) {
            self.rnr_retry = c.rnr_retry;
        }
        if mask.contains(QpAttrMask::MIN_RNR_TIMER) {
            self.min_rnr_timer = c.min_rnr_timer;
        }
        if mask.contains(QpAttrMask::MAX_QP_RD_ATOMIC) {
            self.max_rd_atomic = c.max_rd_atomic;
        }
        if mask.contains(QpAttrMask::MAX_DEST_RD_ATOMIC) {
            self.max_dest_rd_atomic = c.max_dest_rd_atomic;
        }
    }

    /// QP_MODIFY: the verbs state machine (`contract::qp_modify_check`), then the
    /// attributes `mask` selects, then the context ops (applied, and returned for the
    /// owners): Reset (to Reset), SetRqPsn / SetSqPsn (mask RQ_PSN / SQ_PSN), EnterRts
    /// (Rtr -> Rts, with the retry counts as now set), EnterErr (to Err from another state).
    /// The transition table never combines Reset with the others. A refused modify changes
    /// nothing.
    pub fn modify(&mut self, c: &QpCtx, mask: QpAttrMask, max_mtu: u32) -> Result<Vec<CtxOp>, CmdErrorCode> {
        let (from, to) = (self.state, c.state);
        qp_modify_check(from, to, mask)?;
        if mask.contains(QpAttrMask::PATH_MTU) && c.path_mtu.bytes() > max_mtu {
            return Err(CmdErrorCode::BadAttr);
        }
        self.apply(c, mask);
        let mut ops = Vec::new();
        if to == QpState::Reset {
            ops.push(CtxOp::Reset);
        }
        if mask.contains(QpAttrMask::RQ_PSN) {
            ops.push(CtxOp::SetRqPsn(c.rq_psn));
        }
        if mask.contains(QpAttrMask::SQ_PSN) {
            ops.push(CtxOp::SetSqPsn(c.sq_psn));
        }
        if from == QpState::Rtr && to == QpState::Rts {
            ops.push(self.enter_rts());
        }
        if to == QpState::Err && from != QpState::Err {
            ops.push(CtxOp::EnterErr);
        }
        for &op in &ops {
            self.ctx_op(op);
        }
        self.state = to;
        Ok(ops)
    }

    /// The Rtr -> Rts op with the QP's retry counts and send window.
    pub fn enter_rts(&self) -> CtxOp {
        CtxOp::EnterRts {
            retry_cnt: self.retry_cnt,
            rnr_retry: self.rnr_retry,
            win_shift: self.sq_win_shift,
            win_base: self.sq_win_base,
        }
    }

    /// The attributes as `roce_qp_ctx` stores them and its attribute ports give them.
    pub fn to_attr(&self) -> QpAttr {
        let c = self.to_ctx();
        QpAttr {
            path_mtu: c.path_mtu,
            encap: c.encap,
            timeout: c.timeout,
            retry_cnt: c.retry_cnt,
            rnr_retry: c.rnr_retry,
            min_rnr_timer: c.min_rnr_timer,
            max_rd_atomic: c.max_rd_atomic,
            max_dest_rd_atomic: c.max_dest_rd_atomic,
            pd: c.pd,
            access: c.access,
            dest_qpn: c.dest_qpn,
            send_cq: c.send_cq,
            recv_cq: c.recv_cq,
            sq_base: c.sq_base,
            rq_base: c.rq_base,
            sq_log_size: c.sq_log_size,
            rq_log_size: c.rq_log_size,
            dscp: c.dscp,
            hop_limit: c.hop_limit,
            udp_sport: c.udp_sport,
            vlan: c.vlan,
            dest_mac: c.dest_mac,
            flow_label: c.flow_label,
            sq_win_shift: c.sq_win_shift,
            sq_win_base: c.sq_win_base,
            dest_ip: c.dest_ip,
        }
    }

    /// QP_READ: the context, engine state included.
    pub fn to_ctx(&self) -> QpCtx {
        let dest_ip = match self.dest_ip {
            Some(IpAddr::V4(a)) => a.to_ipv6_mapped().octets(),
            Some(IpAddr::V6(a)) => a.octets(),
            None => [0; 16],
        };
        QpCtx {
            state: self.state,
            qp_type: QpType::Rc,
            path_mtu: PathMtu::try_from((self.mtu.trailing_zeros() as u8).saturating_sub(7))
                .unwrap_or(PathMtu::Mtu1024),
            encap: self.encap,
            pd: self.pd,
            access: AccessFlags::from_bits_truncate(self.access),
            dest_qpn: self.dest_qpn,
            sq_psn: self.req.next_psn,
            rq_psn: self.resp.epsn,
            sq_base: self.sq.base,
            rq_base: self.rq.base,
            sq_log_size: self.sq.log_size,
            rq_log_size: self.rq.log_size,
            send_cq: self.send_cq as u16,
            recv_cq: self.recv_cq as u16,
            timeout: self.timeout,
            retry_cnt: self.retry_cnt,
            rnr_retry: self.rnr_retry,
            min_rnr_timer: self.min_rnr_timer,
            max_rd_atomic: self.max_rd_atomic,
            max_dest_rd_atomic: self.max_dest_rd_atomic,
            dest_mac: self.dest_mac,
            vlan: self.vlan.map_or(VlanTag::default(), |(vid, pcp)| VlanTag { vid, pcp, valid: true }),
            dscp: self.dscp,
            hop_limit: self.hop_limit,
            udp_sport: self.udp_sport,
            dest_ip,
            sq_pi: self.sq.pi as u16,
            sq_ci: self.sq.ci as u16,
            rq_pi: self.rq.pi as u16,
            rq_ci: self.rq.ci as u16,
            flow_label: self.flow_label,
            sq_win_shift: self.sq_win_shift,
            sq_win_base: self.sq_win_base,
        }
    }

    /// Whether the responder accepts packets.
    pub fn can_receive(&self) -> bool {
        matches!(self.state, QpState::Rtr | QpState::Rts | QpState::Sqd)
    }
}

/// The outcome of a QP command on the QP table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct QpCmdOut {
    /// QP_READ: the 128-byte QpCtx image.
    pub rdata: Option<[u8; QpCtx::SIZE]>,
    /// The context ops, in order.
    pub ops: Vec<CtxOp>,
}

/// QP_WRITE on the QP table: BAD_INDEX for QPs 0 and 1 and beyond the table, BAD_STATE
/// unless the QP is in Reset, BAD_ATTR unless both CQs are valid (`cq_valid`) and the send
/// window fits ([`sq_win_ok`]), then [`Qp::write`]'s checks.
pub fn qp_write(
    qps: &mut [Option<Qp>],
    qpn: u32,
    c: &QpCtx,
    cq_valid: impl Fn(u16) -> bool,
) -> Result<Vec<CtxOp>, CmdErrorCode> {
    let n_qps = qps.len();
    let slot = match qps.get_mut(qpn as usize) {
        Some(s) if qpn >= 2 => s,
        _ => return Err(CmdErrorCode::BadIndex),
    };
    if slot.as_ref().is_some_and(|q| q.state != QpState::Reset) {
        return Err(CmdErrorCode::BadState);
    }
    if !cq_valid(c.send_cq) || !cq_valid(c.recv_cq) || !sq_win_ok(c, n_qps) {
        return Err(CmdErrorCode::BadAttr);
    }
    let (q, ops) = Qp::write(qpn, c)?;
    *slot = Some(q);
    Ok(ops)
}

/// Whether a QP_WRITE's send window is one the engine has: `sq_win_shift` at most
/// [`MAX_SQ_WIN_SHIFT`], `sq_win_base` a multiple of `2^sq_win_shift` below the pool's
/// `n_qps` blocks (one per QP).
pub fn sq_win_ok(c: &QpCtx, n_qps: usize) -> bool {
    c.sq_win_shift <= MAX_SQ_WIN_SHIFT
        && (c.sq_win_base as usize) < n_qps
        && c.sq_win_base & ((1u16 << c.sq_win_shift) - 1) == 0
}

/// QP_MODIFY on the QP table: BAD_INDEX unless the QP was written, then [`Qp::modify`].
pub fn qp_modify(
    qps: &mut [Option<Qp>],
    qpn: u32,
    c: &QpCtx,
    mask: QpAttrMask,
    max_mtu: u32,
) -> Result<Vec<CtxOp>, CmdErrorCode> {
    let q = qps.get_mut(qpn as usize).and_then(Option::as_mut).ok_or(CmdErrorCode::BadIndex)?;
    q.modify(c, mask, max_mtu)
}

/// QP_READ on the QP table: the context (a QP never written reads as the default context in
/// Reset), BAD_INDEX beyond the table.
pub fn qp_read(qps: &[Option<Qp>], qpn: u32) -> Result<QpCtx, CmdErrorCode> {
    match qps.get(qpn as usize) {
        Some(Some(q)) => Ok(q.to_ctx()),
        Some(None) => Ok(QpCtx { state: QpState::Reset, ..QpCtx::default() }),
        None => Err(CmdErrorCode::BadIndex),
    }
}

/// A QP command (QP_WRITE, QP_READ, QP_MODIFY) as CMD delivers it: `data` is CMD_DATA (a
/// QpCtx; BAD_ATTR if it does not decode), `arg` is CMD_ARG (QP_MODIFY's QpAttrMask;
/// BAD_ATTR with an undefined bit). Other opcodes: BAD_OPCODE.
pub fn qp_command(
    qps: &mut [Option<Qp>],
    op: CmdOpcode,
    index: u32,
    arg: u32,
    data: &[u8],
    cq_valid: impl Fn(u16) -> bool,
    max_mtu: u32,
) -> Result<QpCmdOut, CmdErrorCode> {
    match op {
        CmdOpcode::QpWrite => {
            let c = QpCtx::decode(data).map_err(|_| CmdErrorCode::BadAttr)?;
            Ok(QpCmdOut { rdata: None, ops: qp_write(qps, index, &c, cq_valid)? })
        }
        CmdOpcode::QpModify => {
            let c = QpCtx::decode(data).map_err(|_| CmdErrorCode::BadAttr)?;
            let mask = QpAttrMask::from_bits_truncate(arg);
            if mask.bits() != arg {
                return Err(CmdErrorCode::BadAttr);
            }
            Ok(QpCmdOut { rdata: None, ops: qp_modify(qps, index, &c, mask, max_mtu)? })
        }
        CmdOpcode::QpRead => Ok(QpCmdOut { rdata: Some(qp_read(qps, index)?.encode()), ops: Vec::new() }),
        _ => Err(CmdErrorCode::BadOpcode),
    }
}

/// The UDP source port Linux rxe derives from a QPN: 0xC000 + hash_32(qpn, 14).
pub fn udp_sport_for(qpn: u32) -> u16 {
    0xC000 | (qpn.wrapping_mul(0x61C8_8647) >> 18) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_transitions() {
        let mut c = QpCtx {
            state: QpState::Init,
            qp_type: QpType::Rc,
            pd: 1,
            sq_log_size: 4,
            rq_log_size: 4,
            ..QpCtx::default()
        };
        let mut q = Qp::from_ctx(5, &c).unwrap();
        c.state = QpState::Rts;
        assert_eq!(q.modify(&c, QpAttrMask::STATE, 4096), Err(CmdErrorCode::BadState));
        c.state = QpState::Rtr;
        c.dest_qpn = 9;
        c.rq_psn = 100;
        c.path_mtu = PathMtu::Mtu1024;
        c.dest_ip = "::ffff:192.0.2.2".parse::<Ipv6Addr>().unwrap().octets();
        let rtr = QpAttrMask::STATE
            | QpAttrMask::AV
            | QpAttrMask::PATH_MTU
            | QpAttrMask::DEST_QPN
            | QpAttrMask::RQ_PSN
            | QpAttrMask::MAX_DEST_RD_ATOMIC
            | QpAttrMask::MIN_RNR_TIMER;
        assert_eq!(q.modify(&c, rtr.difference(QpAttrMask::RQ_PSN), 4096), Err(CmdErrorCode::BadAttr));
        assert_eq!(q.state, QpState::Init, "a refused modify changes nothing");
        c.path_mtu = PathMtu::Mtu4096;
        assert_eq!(q.modify(&c, rtr, 2048), Err(CmdErrorCode::BadAttr));
        c.path_mtu = PathMtu::Mtu1024;
        q.modify(&c, rtr, 4096).unwrap();
        assert_eq!((q.resp.epsn, q.mtu, q.dest_ip), (100, 1024, Some("192.0.2.2".parse().unwrap())));
        c.state = QpState::Rts;
        c.sq_psn = 7;
        let rts = QpAttrMask::STATE
            | QpAttrMask::SQ_PSN
            | QpAttrMask::TIMEOUT
            | QpAttrMask::RETRY_CNT
            | QpAttrMask::RNR_RETRY
            | QpAttrMask::MAX_QP_RD_ATOMIC;
        q.modify(&c, rts, 4096).unwrap();
        assert_eq!((q.req.next_psn, q.state), (7, QpState::Rts));
        let back = q.to_ctx();
        assert_eq!((back.sq_psn, back.rq_psn, back.dest_qpn, back.path_mtu), (7, 100, 9, PathMtu::Mtu1024));
        c.state = QpState::Err;
        q.modify(&c, QpAttrMask::STATE, 4096).unwrap();
        c.state = QpState::Rts;
        assert!(q.modify(&c, QpAttrMask::STATE, 4096).is_err());
        c.state = QpState::Reset;
        q.modify(&c, QpAttrMask::STATE, 4096).unwrap();
    }

    #[test]
    fn qp_write_takes_only_windows_the_pool_has() {
        let mut qps: Vec<Option<Qp>> = vec![None; 64];
        let c = |shift: u8, base: u16| QpCtx {
            state: QpState::Init,
            qp_type: QpType::Rc,
            sq_win_shift: shift,
            sq_win_base: base,
            ..QpCtx::default()
        };
        for (shift, base) in [(5, 0), (7, 0), (2, 2), (1, 63), (4, 64), (0, 64)] {
            assert_eq!(qp_write(&mut qps, 2, &c(shift, base), |_| true), Err(CmdErrorCode::BadAttr), "{shift} {base}");
        }
        assert!(qp_write(&mut qps, 2, &c(4, 48), |_| true).is_ok());
        let q = qps[2].as_mut().unwrap();
        assert_eq!(q.req.win_size(), 16, "the window is taken at Rtr -> Rts");
        let op = q.enter_rts();
        assert_eq!(op.arg() >> 12, 4 | 48 << 4);
        q.ctx_op(op);
        assert_eq!(q.req.win_size(), 256);
        q.ctx_op(CtxOp::Reset);
        assert_eq!(q.req.win_size(), 16);
    }

    #[test]
    fn udp_sport_matches_rxe() {
        // rxe: 0xc000 + (hash_32_generic(qpn, 14) & 0x3fff)
        assert_eq!(udp_sport_for(0x11), 0xC000 | ((0x11u32.wrapping_mul(0x61C88647) >> 18) as u16));
        assert!(udp_sport_for(12345) >= 0xC000);
    }
}
