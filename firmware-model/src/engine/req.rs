//! `roce_req`: the RC requester — WQE fetch into the send window, segmentation to the path
//! MTU, PSN assignment, AckReq, outstanding-READ limit, fence, unacknowledged window, the
//! rewinds the completer asks for (go-back-N), RNR back-off, and the DCQCN rate limiter's
//! pacing.
//!
//! The requester owns `ReqState` (with the send window `sq_win`) and reads the completer's
//! state (`CompView`) at the start of each visit; the completer asks for rewinds through its
//! own table (`CompState::rewind`, applied at the requester's next visit). A packet's payload
//! is gathered by DMA (`roce_mr_check` on each SGE's L_Key, all checked before any read); the
//! packet is ready when its DMA read completes. WQEs are read ahead in batches into a
//! prefetch store with a stretch per QP (`fill`). Latency: [`LATENCY`] cycles plus the DMA
//! read.

use crate::wire::{AtomicEthFields, BthFields, ExtHeaders, IethFields, ImmDtFields, Opcode, RethFields};

use crate::contract::SqWqe;

use super::dcqcn;
use super::fetch;
use super::mem::Dma;
use super::mr_check::walk_sges;
use super::qp_ctx::{wqe_store_slot, Body, Qp, ReqState, RewindReq, SqEntry, StoreEntry, LOG_SQ_WIN, LOG_WQE_BATCH};
use super::types::*;
use super::{Engine, Profile, TxKind, TxPkt, RXE_MAX_PKT_PER_ACK};

/// Requester pipeline latency in cycles (WQE decode, header fields).
pub const LATENCY: u64 = 3;

/// An unsignaled WQE's last packet asks for an ACK at least every `2^LOG_ACK_WQES` WQEs
/// (`roce_req`'s `LOG_ACK_WQES`).
pub const LOG_ACK_WQES: u32 = 2;

/// Packets one visit makes at most (`roce_req`'s `BURST`): after a packet the visit goes on
/// with the QP's next one, then reads ahead.
pub const BURST: u32 = 4;

/// The opcode of packet `i` of `n` of a SEND or WRITE message.
fn seg_opcode(op: SendOp, i: u32, n: u32) -> Opcode {
    let (first, last) = (i == 0, i + 1 == n);
    match op {
        SendOp::Send => match (first, last) {
            (true, true) => Opcode::RcSendOnly,
            (true, false) => Opcode::RcSendFirst,
            (false, false) => Opcode::RcSendMiddle,
            (false, true) => Opcode::RcSendLast,
        },
        SendOp::SendImm(_) => match (first, last) {
            (true, true) => Opcode::RcSendOnlyWithImmediate,
            (true, false) => Opcode::RcSendFirst,
            (false, false) => Opcode::RcSendMiddle,
            (false, true) => Opcode::RcSendLastWithImmediate,
        },
        SendOp::SendInv(_) => match (first, last) {
            (true, true) => Opcode::RcSendOnlyWithInvalidate,
            (true, false) => Opcode::RcSendFirst,
            (false, false) => Opcode::RcSendMiddle,
            (false, true) => Opcode::RcSendLastWithInvalidate,
        },
        SendOp::Write => match (first, last) {
            (true, true) => Opcode::RcRdmaWriteOnly,
            (true, false) => Opcode::RcRdmaWriteFirst,
            (false, false) => Opcode::RcRdmaWriteMiddle,
            (false, true) => Opcode::RcRdmaWriteLast,
        },
        SendOp::WriteImm(_) => match (first, last) {
            (true, true) => Opcode::RcRdmaWriteOnlyWithImmediate,
            (true, false) => Opcode::RcRdmaWriteFirst,
            (false, false) => Opcode::RcRdmaWriteMiddle,
            (false, true) => Opcode::RcRdmaWriteLastWithImmediate,
        },
        SendOp::Read => Opcode::RcRdmaReadRequest,
        SendOp::CmpSwap { .. } => Opcode::RcCompareSwap,
        SendOp::FetchAdd { .. } => Opcode::RcFetchAdd,
    }
}

/// PSNs a request spans at path MTU `mtu`.
pub fn npkts(wr: &SendWr, mtu: u32) -> u32 {
    if wr.op.is_atomic() {
        1
    } else {
        u32::try_from(wr.len().div_ceil(u64::from(mtu)).max(1)).unwrap_or(u32::MAX)
    }
}

/// What the requester sees of the completer's table (`roce_comp`'s `comp` row, read at the
/// start of a visit): the engine passes the live state, the block lockstep the values the HDL
/// read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompView {
    /// Oldest unacknowledged PSN.
    pub una: u32,
    /// SQ consumer index.
    pub sq_ci: u32,
    /// READ/atomic WQEs completed.
    pub rd_done: u32,
    /// RNR back-off: no transmission before this cycle.
    pub rnr_until: u64,
    /// The last rewind requested.
    pub rewind: RewindReq,
}

impl CompView {
    /// The live view of a QP.
    pub fn of(qp: &Qp) -> Self {
        CompView {
            una: qp.comp.una,
            sq_ci: qp.sq.ci,
            rd_done: qp.comp.rd_done,
            rnr_until: qp.comp.rnr_until,
            rewind: qp.comp.rewind,
        }
    }
}

/// What one visit of the requester to a QP did (`roce_req`'s observable actions).
#[derive(Clone, Debug, Default)]
pub struct ReqVisit {
    /// The packets made, in order (at most [`BURST`]).
    pub pkts: Vec<TxPkt>,
    /// The WQE read (at most one per visit: consecutive WQEs in one DMA read).
    pub read: Option<WqeRead>,
    /// A fetched WQE is malformed: its status (the completer completes it in order).
    pub malformed: Option<WcStatus>,
    /// A local error while making the packet (L_Key check, gather list): the WQE's status; the
    /// QP goes to ERR.
    pub failed: Option<WcStatus>,
    /// The visit ended on a pacing answer that refused a packet (`roce_dcqcn`).
    pub pace_refused: bool,
    /// Nothing sent: why.
    pub blocked: Option<Blocked>,
    /// Payload DMA reads that failed (the packet carries zeros).
    pub dma_errors: u32,
}

/// One DMA read of `n` consecutive SQ WQEs from SQ index `idx` (at `addr`, `n` x 128 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WqeRead {
    /// SQ index of the first.
    pub idx: u32,
    /// Its DMA address.
    pub addr: u64,
    /// WQEs read.
    pub n: u32,
    /// The fetch index when it was issued: the WQEs from it on are fetched into the send
    /// window, those before it read again.
    pub fetch_from: u32,
}

impl WqeRead {
    /// The WQEs read: (SQ index, fetched into the window (else read again)).
    pub fn wqes(&self) -> impl Iterator<Item = (u32, bool)> + '_ {
        (0..self.n).map(|k| {
            let idx = self.idx.wrapping_add(k);
            (idx, !idx_before(idx, self.fetch_from))
        })
    }
}

/// Why a QP cannot send now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Blocked {
    /// Nothing to do until something external happens (doorbell, ACK, completer progress).
    Idle,
    /// Try again at this cycle (RNR back-off, pacing, a WQE read in flight).
    Until(u64),
    /// A local error: the QP must go to ERR.
    Failed,
}

/// `a` is before `b` (free-running SQ indices).
fn idx_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Whether the send window is full ([`ReqState::win_size`] WQEs fetched and not completed).
fn window_full(r: &ReqState, sq_ci: u32) -> bool {
    r.fetched.wrapping_sub(sq_ci) >= r.win_size()
}

impl Engine {
    /// Local ACK timeout in IB timer ticks (None = infinite): 2^timeout whole ticks after
    /// the current one, which is partly over (a deadline of the current tick + 2^timeout + 1
    /// never expires before 4.096 us x 2^timeout).
    pub(crate) fn ack_timeout_ticks(qp: &Qp) -> Option<u64> {
        (qp.timeout != 0).then(|| (1u64 << qp.timeout.min(30)) + 1)
    }

    /// The IB timer tick of cycle `now` (TICK_CYCLES).
    pub fn tick_of(&self, now: u64) -> u64 {
        now / self.cfg.tick_cycles.max(1)
    }

    /// The body of SQ index `idx` of `qp`, if the requester holds it or is reading it: in the
    /// QP's own slot or in its stretch of the prefetch store.
    pub fn body_of(&self, qp: &Qp, idx: u32) -> Option<Body> {
        if let Some(b) = qp.req.own.filter(|b| b.idx == idx) {
            return Some(b);
        }
        self.wqe_store[wqe_store_slot(qp.qpn, idx)].filter(|e| e.qpn == qp.qpn && e.body.idx == idx).map(|e| e.body)
    }

    /// Read WQEs from the SQ ring, one DMA read of up to `2^LOG_WQE_BATCH`: from the send
    /// index if its body is not held (it goes into the QP's own slot), else from the fetch
    /// index (read ahead into the prefetch store). The run stops at the producer index, at
    /// the fetch index when the send window is full or `2^LOG_SQ_WIN` ahead of the send index
    /// (the QP's stretch of the store), at the ring's end, and (ahead of the send index) at a
    /// store entry still being read or already holding the WQE. A run from the fetch index
    /// starts only with room for a whole read in the stretch (at most `2^LOG_SQ_WIN -
    /// 2^LOG_WQE_BATCH` ahead of the send index), so reads ahead are not one WQE each. WQEs from
    /// the fetch index on are fetched into the send window (decoded now: the model keeps the
    /// request), the others read again.
    fn fill(&mut self, qp: &mut Qp, now: u64, c: &CompView, mem: &mut impl Dma, v: &mut ReqVisit) {
        let cur = qp.req.cur;
        let start = if self.body_of(qp, cur).is_some() { qp.req.fetched } else { cur };
        let from = qp.req.fetched;
        if start != cur && start.wrapping_sub(cur) > (1 << LOG_SQ_WIN) - (1 << LOG_WQE_BATCH) {
            return;
        }
        let ring_mask = qp.sq.size() - 1;
        let mut n = 0u32;
        while n < 1 << LOG_WQE_BATCH {
            let idx = start.wrapping_add(n);
            if !idx_before(idx, qp.sq.pi) || (n > 0 && idx & ring_mask == 0) {
                break;
            }
            if idx == qp.req.fetched {
                if window_full(&qp.req, c.sq_ci) || idx.wrapping_sub(cur) >= 1 << LOG_SQ_WIN {
                    break;
                }
            } else if !idx_before(idx, qp.req.fetched) {
                break;
            }
            if idx != cur {
                let e = self.wqe_store[wqe_store_slot(qp.qpn, idx)];
                if e.is_some_and(|e| e.body.ready_at > now || (e.qpn == qp.qpn && e.body.idx == idx)) {
                    break;
                }
            }
            if idx == qp.req.fetched {
                qp.req.fetched = idx.wrapping_add(1);
            }
            n += 1;
        }
        if n == 0 {
            return;
        }
        let addr = qp.sq.slot(start, SqWqe::SIZE as u64);
        let done = self.dma_read_done(now, n as usize * SqWqe::SIZE);
        let rd = WqeRead { idx: start, addr, n, fetch_from: from };
        for (k, (idx, fetch)) in rd.wqes().enumerate() {
            // the WQEs stream in two beats each, at the read bandwidth
            let behind = u64::from(n - 1 - k as u32) * SqWqe::SIZE as u64 / self.cfg.host_mem.rd_bytes_per_cycle.max(1);
            let ready_at = done - behind + fetch::LATENCY;
            if fetch {
                let mut b = [0u8; SqWqe::SIZE];
                let ok = mem.dma_read(qp.sq.slot(idx, SqWqe::SIZE as u64), &mut b).is_ok();
                if !ok {
                    self.counters.dma_errors += 1;
                }
                let (wr, error) = fetch::fetched_wr(&b, ok);
                qp.req.win.push_back(SqEntry { wr, first_psn: 0, npkts: 0, error });
                qp.req.fetch_ready_at = ready_at;
                if error.is_some() {
                    v.malformed = error;
                }
            }
            let body = Body { idx, ready_at };
            if idx == cur {
                qp.req.own = Some(body);
            } else {
                self.wqe_store[wqe_store_slot(qp.qpn, idx)] = Some(StoreEntry { qpn: qp.qpn, body });
            }
        }
        v.read = Some(rd);
    }

    /// The window entry of SQ index `idx`.
    pub(crate) fn win_entry(qp: &Qp, idx: u32) -> Option<&SqEntry> {
        qp.req.win.get(idx.wrapping_sub(qp.sq.ci) as usize)
    }

    fn win_entry_mut(qp: &mut Qp, idx: u32) -> Option<&mut SqEntry> {
        let i = idx.wrapping_sub(qp.sq.ci) as usize;
        qp.req.win.get_mut(i)
    }

    /// Whether `qp` could generate a request packet at `now` with the completer's state `c`
    /// (the checks of [`Engine::req_visit`] up to the pacing question; `Ok` also when the
    /// visit would read a WQE).
    pub(crate) fn req_ready(&self, qp: &Qp, now: u64, c: &CompView) -> Result<(), Blocked> {
        if qp.state != QpState::Rts {
            return Err(Blocked::Idle);
        }
        let (cur, next_psn) =
            if c.rewind.gen != qp.req.gen { (c.rewind.idx, c.rewind.psn) } else { (qp.req.cur, qp.req.next_psn) };
        let Some(b) = self.body_of(qp, cur) else {
            if cur == qp.req.fetched && (qp.sq.pi == qp.req.fetched || window_full(&qp.req, c.sq_ci)) {
                return Err(Blocked::Idle);
            }
            return Ok(());
        };
        if b.ready_at > now {
            return Err(Blocked::Until(b.ready_at));
        }
        let Some(e) = Self::win_entry(qp, cur) else { return Err(Blocked::Idle) };
        if e.error.is_some() {
            return Err(Blocked::Idle);
        }
        self.req_limits(qp, e, cur, next_psn, now, c)?;
        // roce_dcqcn pacing: the last packet is paid for at the current rate
        if !dcqcn::rp_allowed(&qp.cc.rp, now) {
            return Err(Blocked::Until(dcqcn::rp_wake(&qp.cc.rp, self.dcqcn_scan(), qp.qpn).max(now + 1)));
        }
        Ok(())
    }

    /// The window, READ/atomic, fence and RNR limits for the WQE at `cur`.
    fn req_limits(&self, qp: &Qp, e: &SqEntry, cur: u32, next_psn: u32, now: u64, c: &CompView) -> Result<(), Blocked> {
        let r = &qp.req;
        if psn_diff(next_psn, c.una) >= self.cfg.max_unacked as i32 {
            return Err(Blocked::Idle);
        }
        if cur == r.started {
            let rd_out = r.rd_started.wrapping_sub(c.rd_done);
            if e.wr.fence && rd_out != 0 {
                return Err(Blocked::Idle);
            }
            if e.wr.op.is_read_like() && rd_out >= u32::from(qp.max_rd_atomic.max(1)) {
                return Err(Blocked::Idle);
            }
        }
        if c.rnr_until > now {
            return Err(Blocked::Until(c.rnr_until));
        }
        Ok(())
    }

    /// One visit of the requester to `qp` at cycle `now`, seeing the completer's state `c`;
    /// `pace` answers each pacing question (`roce_dcqcn`), `sent` is told each packet made.
    /// In order: the first packet's pacing question (asked whatever the visit finds); a
    /// pending rewind is applied; then up to [`BURST`] times (each further time asks its
    /// pacing question first): without the body of
    /// the WQE at the send index, it and the WQEs after it are read (`fill`: fetched into the
    /// window up to the producer index and the bound, or read again) unless nothing is
    /// posted or the window is full, and the visit ends; the limits (a body still being read,
    /// a malformed WQE, the unacknowledged window, fence and READ/atomic count for a WQE not
    /// started, RNR back-off, pacing); the packet. Every visit that found the body of the
    /// send index held (or being read) and not malformed ends with a read ahead from the
    /// fetch index (`fill`), whether it sent or not.
    pub fn req_visit(
        &mut self,
        qp: &mut Qp,
        now: u64,
        c: &CompView,
        mut pace: impl FnMut(&Qp) -> bool,
        mut sent: impl FnMut(&mut Qp, &TxPkt),
        mem: &mut impl Dma,
    ) -> ReqVisit {
        let mut v = ReqVisit::default();
        // the pacing question for the visit's first packet goes out as the visit starts
        // (roce_req asks it with its reads of the QP's state), whatever the visit then finds
        let mut first_pace = Some(pace(qp));
        qp.req.ci_seen = c.sq_ci & 0xFFFF;
        if qp.state != QpState::Rts {
            v.blocked = Some(Blocked::Idle);
            return v;
        }
        if c.rewind.gen != qp.req.gen {
            let r = &mut qp.req;
            r.cur = c.rewind.idx;
            r.cur_pkt = c.rewind.pkt;
            r.next_psn = c.rewind.psn;
            r.gen = c.rewind.gen;
        }
        while v.pkts.len() < BURST as usize {
            // each further packet's pacing question is asked as the burst goes on (roce_req's
            // S_V_NEXT), before the body and the limits are looked at; a limit that holds the
            // packet drops the answer
            let allowed = match first_pace.take() {
                Some(a) => a,
                None => pace(qp),
            };
            let cur = qp.req.cur;
            let Some(b) = self.body_of(qp, cur) else {
                if cur == qp.req.fetched && (qp.sq.pi == qp.req.fetched || window_full(&qp.req, c.sq_ci)) {
                    v.blocked = Some(Blocked::Idle);
                    return v;
                }
                self.fill(qp, now, c, mem, &mut v);
                let at = self.body_of(qp, cur).map_or(now, |b| b.ready_at);
                v.blocked = Some(Blocked::Until(at));
                return v;
            };
            if b.ready_at > now {
                self.fill(qp, now, c, mem, &mut v);
                v.blocked = Some(Blocked::Until(b.ready_at));
                return v;
            }
            let Some(e) = Self::win_entry(qp, cur) else {
                v.blocked = Some(Blocked::Idle);
                return v;
            };
            if e.error.is_some() {
                v.blocked = Some(Blocked::Idle);
                return v;
            }
            if let Err(b) = self.req_limits(qp, e, cur, qp.req.next_psn, now, c) {
                self.fill(qp, now, c, mem, &mut v);
                v.blocked = Some(b);
                return v;
            }
            if !allowed {
                v.pace_refused = true;
                self.fill(qp, now, c, mem, &mut v);
                v.blocked = Some(Blocked::Until(now + 1));
                return v;
            }
            match self.req_packet(qp, now, c, mem, &mut v) {
                Ok(p) => {
                    sent(qp, &p);
                    v.pkts.push(p);
                }
                Err(st) => {
                    if let Some(e) = Self::win_entry_mut(qp, cur) {
                        e.error = Some(st);
                    }
                    v.failed = Some(st);
                    v.blocked = Some(Blocked::Failed);
                    return v;
                }
            }
        }
        // read ahead
        self.fill(qp, now, c, mem, &mut v);
        v
    }

    /// The packet at the send index (the caller checked the limits), or the local error.
    fn req_packet(
        &mut self,
        qp: &mut Qp,
        now: u64,
        c: &CompView,
        mem: &mut impl Dma,
        v: &mut ReqVisit,
    ) -> Result<TxPkt, WcStatus> {
        let mtu = qp.mtu;
        let psn = qp.req.next_psn;
        let cur = qp.req.cur;
        let i = qp.req.cur_pkt;
        let start = cur == qp.req.started;
        let Some(e) = Self::win_entry(qp, cur) else { return Err(WcStatus::LocQpOpErr) };
        let wr = e.wr.clone();
        let n = npkts(&wr, mtu);
        let len = wr.len();
        let mut bth = BthFields::new(seg_opcode(wr.op, i, n), qp.dest_qpn, psn);
        let mut ext = ExtHeaders::NONE;
        let mut payload = Vec::new();
        let mut ready = now + LATENCY;
        let next;
        let mut last = true;
        match wr.op {
            SendOp::Read => {
                let off = u64::from(i) * u64::from(mtu);
                ext.reth =
                    Some(RethFields { va: wr.remote_addr + off, rkey: wr.rkey, dma_len: (len - off.min(len)) as u32 });
                bth.ack_req = true;
                next = psn_add(psn, n - i.min(n));
            }
            SendOp::CmpSwap { compare, swap } => {
                ext.atomic_eth = Some(AtomicEthFields { va: wr.remote_addr, rkey: wr.rkey, swap_add: swap, compare });
                bth.ack_req = true;
                next = psn_add(psn, 1);
            }
            SendOp::FetchAdd { add } => {
                ext.atomic_eth = Some(AtomicEthFields { va: wr.remote_addr, rkey: wr.rkey, swap_add: add, compare: 0 });
                bth.ack_req = true;
                next = psn_add(psn, 1);
            }
            _ => {
                let off = u64::from(i) * u64::from(mtu);
                let plen = (len - off.min(len)).min(u64::from(mtu)) as usize;
                payload = vec![0u8; plen];
                if let Some(d) = &wr.inline {
                    payload.copy_from_slice(&d[off as usize..off as usize + plen]);
                } else {
                    // L_Key checks first (roce_mr_check), then the reads
                    let mut pieces = Vec::new();
                    walk_sges(&self.mrs, qp.pd, &wr.sges, off, plen as u64, 0, |dma, range| {
                        pieces.push((dma, range));
                        Ok(())
                    })
                    .map_err(|st| {
                        if st == WcStatus::LocLenErr {
                            WcStatus::LocLenErr
                        } else {
                            WcStatus::LocProtErr
                        }
                    })?;
                    for (dma, range) in pieces {
                        if mem.dma_read(dma, &mut payload[range.clone()]).is_err() {
                            payload[range].fill(0);
                            v.dma_errors += 1;
                            self.counters.dma_errors += 1;
                        }
                    }
                    ready = self.dma_read_done(now, plen) + LATENCY;
                }
                last = i + 1 >= n;
                if i == 0 && wr.op.is_rdma() {
                    ext.reth = Some(RethFields { va: wr.remote_addr, rkey: wr.rkey, dma_len: len as u32 });
                }
                if last {
                    match wr.op {
                        SendOp::SendImm(x) | SendOp::WriteImm(x) => ext.immdt = Some(ImmDtFields { imm: x }),
                        SendOp::SendInv(k) => ext.ieth = Some(IethFields { rkey: k }),
                        _ => {}
                    }
                    // SE is defined on the last packet of SENDs and of WRITEs with immediate.
                    bth.solicited = wr.solicited && (!wr.op.is_rdma() || matches!(wr.op, SendOp::WriteImm(_)));
                }
                // an unsignaled message's last packet asks for an ACK only when nothing
                // fetched follows it (a later AckReq covers it), every 2^LOG_ACK_WQES WQEs
                // (the send window slides), or when it is resent
                let tail = wr.signaled
                    || cur.wrapping_add(1) == qp.req.fetched
                    || cur.wrapping_add(1) % (1 << LOG_ACK_WQES) == 0
                    || psn_diff(psn, qp.req.max_sent) < 0;
                bth.ack_req = match self.cfg.profile {
                    Profile::Engine => (last && tail) || (i + 1) % self.cfg.ack_every.max(1) == 0,
                    Profile::Rxe => {
                        let n = qp.req.noack;
                        qp.req.noack += 1;
                        last || n > RXE_MAX_PKT_PER_ACK
                    }
                };
                next = psn_add(psn, 1);
            }
        }
        if bth.ack_req {
            qp.req.noack = 0;
        }
        // the WQE starts: its PSNs go into the send window
        if start {
            if let Some(e) = Self::win_entry_mut(qp, cur) {
                e.first_psn = psn;
                e.npkts = n;
            }
            qp.req.started = cur.wrapping_add(1);
            if wr.op.is_read_like() {
                qp.req.rd_started = qp.req.rd_started.wrapping_add(1);
            }
        }
        let r = &mut qp.req;
        r.next_psn = next;
        if last {
            r.cur = cur.wrapping_add(1);
            r.cur_pkt = 0;
        } else {
            r.cur_pkt = i + 1;
        }
        // nothing was outstanding: the local ACK timer starts now
        if c.una == r.max_sent {
            let t = Self::ack_timeout_ticks(qp);
            let tick = self.tick_of(now);
            qp.req.busy_deadline = t.map(|t| tick + t);
        }
        let r = &mut qp.req;
        if psn_diff(psn, r.max_sent) < 0 {
            self.counters.retransmits += 1;
        } else {
            r.max_sent = next;
        }
        Ok(TxPkt { qpn: qp.qpn, bth, ext, payload, ready, gen: qp.req.gen, kind: TxKind::Request })
    }

    /// The bytes a request packet costs toward DCQCN pacing (payload + 80 for headers, ICRC,
    /// FCS, preamble and gap): `roce_req`'s report on `roce_dcqcn`'s `s_sent`.
    pub fn sent_bytes(p: &TxPkt) -> u32 {
        u32::try_from(p.payload.len() + 80).unwrap_or(u32::MAX).min(0xFFFF)
    }

    /// The engine's requester turn for `qp`: DCQCN timers, a visit with the live completer
    /// state and the rate limiter's answer, and the consequences (the pacing debt of the
    /// packet, the completer's turn on a malformed WQE, the QP error of a local error).
    pub(crate) fn req_turn(&mut self, qp: &mut Qp, now: u64, mem: &mut impl Dma) -> ReqVisit {
        let (cfg, scan) = (self.dcqcn, self.dcqcn_scan());
        dcqcn::rp_advance(&mut qp.cc.rp, &cfg, scan, qp.qpn, now, &mut self.dcqcn_events);
        let c = CompView::of(qp);
        // each packet's bytes are paid for before the next pacing question
        let mut ev = std::mem::take(&mut self.dcqcn_events);
        let v = self.req_visit(
            qp,
            now,
            &c,
            |q| dcqcn::rp_allowed(&q.cc.rp, now),
            |q, p| dcqcn::rp_sent(&mut q.cc.rp, &cfg, scan, q.qpn, now, Self::sent_bytes(p), &mut ev),
            mem,
        );
        self.dcqcn_events = ev;
        if v.pace_refused && v.pkts.is_empty() && v.failed.is_none() {
            // paced: ask again when the debt is paid
            let w = dcqcn::rp_wake(&qp.cc.rp, scan, qp.qpn).max(now + 1);
            return ReqVisit { blocked: Some(Blocked::Until(w)), ..v };
        }
        if v.malformed.is_some() {
            self.comp_kick(qp, now, mem);
        }
        if let Some(st) = v.failed {
            self.qp_failed(qp.qpn, st);
            qp.state = QpState::Err;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::{AccessFlags, CqCtx, MrCtx, PathMtu, QpAttrMask, QpCtx, QpType, SqData, SqFlags, SqOpcode};
    use crate::engine::{EngineConfig, HostMem, HostMemBudget};

    const SQ: u64 = 0x10_0000;

    /// An engine with QP 2 in RTS (SQ of 64 at `SQ`), a CQ and one MR; `n` one-packet WRITEs
    /// posted.
    fn rig(n: u32) -> (Engine, HostMem) {
        rig_with(EngineConfig::default(), n, 64)
    }

    /// [`rig`] with engine configuration `cfg` and WRITEs of `len` bytes (MTU 1024).
    fn rig_with(cfg: EngineConfig, n: u32, len: u32) -> (Engine, HostMem) {
        rig_win(cfg, n, len, (0, 0))
    }

    /// [`rig_with`] with the send window `(sq_win_shift, sq_win_base)`.
    fn rig_win(cfg: EngineConfig, n: u32, len: u32, win: (u8, u16)) -> (Engine, HostMem) {
        let mut e = Engine::new(cfg);
        e.regs.enabled = true;
        let mut m = HostMem::new();
        e.create_cq(1, &CqCtx { base: 0x40_0000, log_size: 8, valid: true, ..CqCtx::default() }).unwrap();
        let all = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
        e.write_mr(
            1,
            &MrCtx { va: 0x1000, len: 1 << 20, iova: 0x20_0000, pd: 1, key: 0x105, access: all, valid: true },
        )
        .unwrap();
        let mut c = QpCtx {
            state: QpState::Init,
            qp_type: QpType::Rc,
            pd: 1,
            sq_base: SQ,
            sq_log_size: 6,
            rq_log_size: 4,
            send_cq: 1,
            recv_cq: 1,
            sq_win_shift: win.0,
            sq_win_base: win.1,
            ..QpCtx::default()
        };
        e.create_qp(2, &c).unwrap();
        c.state = QpState::Rtr;
        c.path_mtu = PathMtu::Mtu1024;
        let rtr = QpAttrMask::STATE
            | QpAttrMask::AV
            | QpAttrMask::PATH_MTU
            | QpAttrMask::DEST_QPN
            | QpAttrMask::RQ_PSN
            | QpAttrMask::MAX_DEST_RD_ATOMIC
            | QpAttrMask::MIN_RNR_TIMER;
        e.modify_qp(2, &c, rtr, &mut m).unwrap();
        c.state = QpState::Rts;
        c.timeout = 0;
        let rts = QpAttrMask::STATE
            | QpAttrMask::SQ_PSN
            | QpAttrMask::TIMEOUT
            | QpAttrMask::RETRY_CNT
            | QpAttrMask::RNR_RETRY
            | QpAttrMask::MAX_QP_RD_ATOMIC;
        e.modify_qp(2, &c, rts, &mut m).unwrap();
        for i in 0..n {
            let mut sge = [crate::contract::Sge::default(); 4];
            sge[0] = crate::contract::Sge { addr: 0x1000 + 64 * u64::from(i), len, lkey: 0x105 };
            let w = SqWqe {
                wr_id: u64::from(i),
                opcode: SqOpcode::Write,
                flags: SqFlags::SIGNALED,
                num_sge: 1,
                remote_addr: 0x9000,
                rkey: 7,
                total_len: len,
                data: SqData::Sge(sge),
                ..SqWqe::default()
            };
            m.write(SQ + 128 * u64::from(i), &w.encode());
        }
        e.sq_doorbell(0, 2, n, &mut m);
        (e, m)
    }

    /// The cycles the requester puts its frames on the wire, polled every cycle up to `end`.
    fn wire_times(e: &mut Engine, m: &mut HostMem, end: u64) -> Vec<u64> {
        let mut t = Vec::new();
        for now in 0..end {
            while e.tx(now, m).is_some() {
                t.push(now);
            }
        }
        t
    }

    /// A 64 KiB WRITE's payload reads (64 of 1 KiB) share the read bandwidth: at 16 bytes
    /// per cycle the last packet cannot leave before 65536 / 16 cycles of data after the
    /// WQE's and the first payload read's latency, and leaves soon after.
    #[test]
    fn payload_reads_are_bound_by_the_read_bandwidth() {
        let host_mem = HostMemBudget { rd_bytes_per_cycle: 16, ..HostMemBudget::default() };
        let (mut e, mut m) = rig_with(EngineConfig { host_mem, ..EngineConfig::default() }, 1, 65536);
        let t = wire_times(&mut e, &mut m, 20_000);
        assert_eq!(t.len(), 64);
        let floor = 2 * 250 + 65536 / 16;
        let last = t.last().copied().unwrap_or(0);
        assert!(last >= floor, "last packet at {last}, before {floor}");
        assert!(last <= floor + 200, "last packet at {last}, far after {floor}");
        // the ports' 64 B per cycle: the line (22 cycles per 1 KiB packet) is the bound
        let (mut e, mut m) = rig_with(EngineConfig::default(), 1, 65536);
        let off = wire_times(&mut e, &mut m, 20_000);
        assert!(off.last().copied().unwrap_or(0) < floor / 2, "{off:?}");
    }

    /// With 2 read tags the requester has at most 2 reads outstanding (a WQE read, then
    /// payload reads of 64 bytes, 252 cycles each): 16 WRITEs take about 8 read latencies.
    #[test]
    fn reads_wait_for_a_read_tag() {
        let two = HostMemBudget { read_tags: 2, ..HostMemBudget::default() };
        let (mut e, mut m) = rig_with(EngineConfig { host_mem: two, ..EngineConfig::default() }, 16, 64);
        let t = wire_times(&mut e, &mut m, 10_000);
        assert_eq!(t.len(), 16);
        assert_eq!(e.host.peak_reads, 2);
        assert!(e.host.tag_waits > 0);
        let last = t.last().copied().unwrap_or(0);
        // the WQE read, then 16 payload reads two at a time
        assert!(last >= 252 + 8 * 252, "16 packets by {last}");
        let (mut e, mut m) = rig_with(EngineConfig::default(), 16, 64);
        let many = wire_times(&mut e, &mut m, 10_000);
        assert!(e.host.peak_reads > 2);
        assert!(many.last().copied().unwrap_or(0) < 252 + 3 * 252, "{many:?}");
    }

    #[test]
    fn the_send_window_bounds_what_is_fetched() {
        let (mut e, mut m) = rig(40);
        let mut sent = 0;
        for now in (0..200_000).step_by(100) {
            while e.tx(now, &mut m).is_some() {
                sent += 1;
            }
        }
        // no ACK comes: the requester stops at 2^LOG_SQ_WIN WQEs fetched and not completed
        let q = e.qp(2).unwrap();
        assert_eq!(sent, 1 << LOG_SQ_WIN);
        assert_eq!(q.req.win.len(), 1 << LOG_SQ_WIN);
        assert_eq!(q.req.fetched.wrapping_sub(q.sq.ci), 1 << LOG_SQ_WIN);
        assert_eq!((q.req.started, q.req.cur, q.req.next_psn), (16, 16, 16));
    }

    #[test]
    fn a_deeper_send_window_lets_more_out() {
        // sq_win_shift 2: 64 WQEs fetched and not completed (the SQ holds 64; 60 posted)
        for (shift, want) in [(1u8, 32u32), (2, 60)] {
            let (mut e, mut m) = rig_win(EngineConfig::default(), 60, 64, (shift, 4));
            let mut sent = 0;
            for now in (0..400_000).step_by(100) {
                while e.tx(now, &mut m).is_some() {
                    sent += 1;
                }
            }
            let q = e.qp(2).unwrap();
            assert_eq!((q.req.win_shift, q.req.win_size()), (shift, 16 << shift));
            assert_eq!(sent, want);
            assert_eq!(q.req.fetched.wrapping_sub(q.sq.ci), want);
        }
    }

    #[test]
    fn a_rewind_is_applied_at_the_next_visit() {
        let (mut e, mut m) = rig(4);
        let mut sent = Vec::new();
        for now in (0..100_000).step_by(100) {
            while let Some(f) = e.tx(now, &mut m) {
                sent.push(crate::wire::parse_frame(&f).unwrap().roce().unwrap().bth().psn());
            }
        }
        assert_eq!(sent, [0, 1, 2, 3]);
        // the completer asks for PSN 1 (the WQE at SQ index 1)
        let mut q = e.take_qp(2).unwrap();
        q.comp.rewind = RewindReq { psn: 1, idx: 1, pkt: 0, gen: 1 };
        let c = CompView::of(&q);
        let v = e.req_visit(&mut q, 200_000, &c, |_| true, |_, _| {}, &mut m);
        // its body is still in the prefetch store (the first read fetched all four): no
        // read, the packets of PSN 1, 2 and 3 at once (one visit's burst)
        assert_eq!(v.read, None);
        assert_eq!((q.req.cur, q.req.gen), (4, 1));
        let psns: Vec<_> = v.pkts.iter().map(|p| (p.bth.psn, p.gen)).collect();
        assert_eq!(psns, [(1, 1), (2, 1), (3, 1)]);
        assert_eq!(e.counters.retransmits, 3);
        e.put_qp(q);
    }

    #[test]
    fn wqes_are_read_in_batches_within_the_window() {
        let (mut e, mut m) = rig(40);
        let mut q = e.take_qp(2).unwrap();
        let c = CompView::of(&q);
        // the first visit: the send index is not held: one read from it, 2^LOG_WQE_BATCH WQEs
        let v = e.req_visit(&mut q, 0, &c, |_| true, |_, _| {}, &mut m);
        let rd = v.read.expect("a read");
        assert_eq!((rd.idx, rd.n, rd.fetch_from, rd.addr), (0, 8, 0, SQ));
        assert_eq!(q.req.own.map(|b| b.idx), Some(0));
        assert_eq!(q.req.fetched, 8);
        // the next: a packet, then the read ahead from the fetch index
        let v = e.req_visit(&mut q, 10_000, &c, |_| true, |_, _| {}, &mut m);
        assert!(!v.pkts.is_empty());
        assert_eq!(v.read.map(|r| (r.idx, r.n)), Some((8, 8)));
        // the window (16) bounds the fetches
        let v = e.req_visit(&mut q, 20_000, &c, |_| true, |_, _| {}, &mut m);
        assert!(!v.pkts.is_empty());
        assert_eq!(v.read, None);
        assert_eq!(q.req.fetched, 16);
        e.put_qp(q);
    }

    #[test]
    fn a_store_entry_taken_by_a_later_wqe_is_read_again_into_the_own_slot() {
        let (mut e, mut m) = rig(4);
        let mut q = e.take_qp(2).unwrap();
        let c = CompView::of(&q);
        let v = e.req_visit(&mut q, 0, &c, |_| true, |_, _| {}, &mut m);
        assert_eq!(v.read.map(|r| (r.idx, r.n)), Some((0, 4)));
        // a later WQE of the QP (a read ahead after a rewind) takes the entry of WQE 1
        let s = wqe_store_slot(2, 1);
        assert_eq!(s, wqe_store_slot(2, 1 + (1 << LOG_SQ_WIN)));
        e.wqe_store[s] = Some(StoreEntry { qpn: 2, body: Body { idx: 1 + (1 << LOG_SQ_WIN), ready_at: 0 } });
        let v = e.req_visit(&mut q, 10_000, &c, |_| true, |_, _| {}, &mut m);
        assert!(!v.pkts.is_empty());
        assert_eq!(v.read.map(|r| (r.idx, r.n, r.fetch_from)), Some((1, 1, 4)));
        assert_eq!(q.req.own.map(|b| b.idx), Some(1));
        e.put_qp(q);
    }
}
