//! `roce_comp`: the RC completer — ACK/NAK handling, READ response and atomic ACK placement,
//! go-back-N triggers, local ACK timeout, completions, the flush of the send queue.
//!
//! - ACK at PSN P: every request up to P is done, except a READ/atomic whose response has
//!   not arrived — that response was lost, so go back to it.
//! - NAK PSN sequence error at P: everything before P is done; go back to P.
//! - RNR NAK at P: everything before P is done; wait the NAK's RNR timer, go back to P;
//!   `rnr_retry` bounds this (7 = forever).
//! - NAK invalid request / remote access / remote operational error at P: the request at P
//!   completes with the matching error and the QP goes to ERR (the rest is flushed).
//! - READ response at the expected PSN: its data is placed (`roce_mr_check` on the local
//!   SGEs) and it acknowledges everything before; at a later PSN: a response was lost, go
//!   back to the expected one; at an earlier PSN: a duplicate, dropped.
//! - Local ACK timeout: go back to the oldest unacknowledged PSN; `retry_cnt` bounds this.
//!   Exhausted counters complete the request with `RetryExcErr`/`RnrRetryExcErr`, QP to ERR.
//!
//! The completer owns `CompState` and the SQ consumer index; it reads the requester's state
//! (`ReqView`) and the send window at the start of each operation, and walks the window from
//! the consumer index one entry at a time, completing (retiring) WQEs as it goes. "Go back"
//! is a request (`CompState::rewind`: PSN, the WQE that carries it, a new generation) the
//! requester applies at its next visit. The local ACK timer runs while requests are
//! outstanding (`una != max_sent`) from the later of the completer's deadline (set on
//! progress and on a timeout) and the requester's (set when it sent with nothing
//! outstanding); a scanner checks it.
//!
//! Retries reset on progress. Completions are written in request order.
//! Latency: [`LATENCY`] cycles after the context lookup.

use crate::contract::SqWqe;
use crate::wire::{AethSyndrome, NakCode, Opcode};

use super::mem::Dma;
use super::mr_check::walk_sges;
use super::qp_ctx::{Qp, RewindReq};
use super::rx_disp::RxPkt;
use super::types::*;
use super::Engine;

/// Completer pipeline latency in cycles.
pub const LATENCY: u64 = 3;

/// What the completer sees of the requester's table (`roce_req`'s, read at the start of an
/// operation): the engine passes the live state, the block lockstep the values the HDL read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReqView {
    /// One past the highest PSN sent.
    pub max_sent: u32,
    /// The next PSN the requester sends.
    pub next_psn: u32,
    /// The rewind generation it last applied.
    pub gen: u32,
    /// SQ index one past the last started WQE.
    pub started: u32,
    /// SQ index one past the last fetched WQE.
    pub fetched: u32,
    /// SQ producer index.
    pub sq_pi: u32,
    /// The requester's local ACK timer deadline (ticks).
    pub busy_deadline: Option<u64>,
}

impl ReqView {
    /// The live view of a QP.
    pub fn of(qp: &Qp) -> Self {
        let r = &qp.req;
        ReqView {
            max_sent: r.max_sent,
            next_psn: r.next_psn,
            gen: r.gen,
            started: r.started,
            fetched: r.fetched,
            sq_pi: qp.sq.pi,
            busy_deadline: r.busy_deadline,
        }
    }
}

/// `a` is before `b` (free-running SQ indices).
fn idx_before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The completion opcode of a send operation.
pub fn wc_opcode(op: SendOp) -> WcOpcode {
    match op {
        SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => WcOpcode::Send,
        SendOp::Write | SendOp::WriteImm(_) => WcOpcode::Write,
        SendOp::Read => WcOpcode::Read,
        SendOp::CmpSwap { .. } => WcOpcode::CmpSwap,
        SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
    }
}

impl Engine {
    /// A response packet for a QP (the RX dispatch's hand-off to `roce_comp`).
    pub(crate) fn completer(&mut self, p: &RxPkt<'_>, mem: &mut impl Dma) {
        let Some(mut qp) = self.take_qp(p.qpn) else { return };
        let rv = ReqView::of(&qp);
        self.comp_response(&mut qp, p, &rv, mem);
        let qpn = qp.qpn;
        let err = qp.state == QpState::Err;
        self.put_qp(qp);
        if err {
            self.flush_qp(qpn, mem);
        }
    }

    /// The completer's operation for response `p` on `qp`, seeing the requester's state `rv`.
    /// A QP that is not in RTS or SQD ignores it. Moves the QP to ERR on a fatal error (the
    /// caller flushes).
    pub fn comp_response(&mut self, qp: &mut Qp, p: &RxPkt<'_>, rv: &ReqView, mem: &mut impl Dma) {
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return;
        }
        let at = p.at + LATENCY;
        // Responses for PSNs never sent are bogus.
        let sent = psn_diff(p.psn, rv.max_sent) < 0 && psn_diff(p.psn, psn_add(qp.comp.una, PSN_MASK)) >= 0;
        let mut fatal = None;
        if sent {
            fatal = match p.opcode {
                Opcode::RcAcknowledge => self.on_aeth(qp, rv, p, at, mem),
                Opcode::RcAtomicAcknowledge => self.on_atomic_ack(qp, rv, p, at, mem),
                _ if p.opcode.is_read_response() => self.on_read_response(qp, rv, p, at, mem),
                _ => None,
            };
        }
        // acknowledged beyond the point the requester goes back to (or will, when it applies
        // the last request): skip what is there
        let next = if qp.comp.rewind.gen != rv.gen { qp.comp.rewind.psn } else { rv.next_psn };
        if fatal.is_none() && psn_diff(qp.comp.una, next) > 0 {
            let una = qp.comp.una;
            self.request_rewind(qp, rv, una);
        }
        // the request at the head completes with the error; an error moves the QP to ERR
        if let Some(st) = fatal {
            if idx_before(qp.sq.ci, rv.fetched) {
                self.complete_front(qp, Some(st), at, mem);
            }
        }
        self.retire_failed(qp, rv, at, mem);
    }

    /// Complete the WQE at the SQ consumer index (the head of the send window) with `error`
    /// (None: success): its CQE if signaled or in error, the consumer index on; an error
    /// moves the QP to ERR.
    pub(crate) fn complete_front(&mut self, qp: &mut Qp, error: Option<WcStatus>, at: u64, mem: &mut impl Dma) {
        let Some(e) = qp.req.win.pop_front() else { return };
        qp.sq.ci = qp.sq.ci.wrapping_add(1);
        qp.comp.rd_pkts = 0;
        let status = error.or(e.error).unwrap_or(WcStatus::Success);
        if status == WcStatus::Success && e.wr.op.is_read_like() {
            qp.comp.rd_done = qp.comp.rd_done.wrapping_add(1);
        }
        if e.wr.signaled || status != WcStatus::Success {
            let c = Completion {
                wr_id: e.wr.wr_id,
                status,
                opcode: wc_opcode(e.wr.op),
                byte_len: e.wr.len() as u32,
                imm: None,
                invalidated: None,
                qpn: qp.qpn,
                src_qp: qp.dest_qpn,
                solicited: false,
            };
            self.complete(qp.send_cq, at, c, mem);
        }
        if status != WcStatus::Success && qp.state != QpState::Err {
            qp.state = QpState::Err;
            self.qp_failed(qp.qpn, status);
        }
    }

    /// A WQE at the head that failed before it started (malformed) completes now.
    fn retire_failed(&mut self, qp: &mut Qp, rv: &ReqView, at: u64, mem: &mut impl Dma) {
        if qp.state == QpState::Err || !idx_before(qp.sq.ci, rv.fetched) {
            return;
        }
        if qp.req.win.front().is_some_and(|e| e.error.is_some()) && !idx_before(qp.sq.ci, rv.started) {
            self.complete_front(qp, None, at, mem);
        }
    }

    /// The requester found a malformed WQE (`roce_req`'s kick): complete it if it is at the
    /// head. Moves the QP to ERR then (the caller flushes).
    pub(crate) fn comp_kick(&mut self, qp: &mut Qp, now: u64, mem: &mut impl Dma) {
        let rv = ReqView::of(qp);
        self.comp_kick_with(qp, &rv, now, mem);
    }

    /// [`Engine::comp_kick`] seeing the requester's state `rv`.
    pub fn comp_kick_with(&mut self, qp: &mut Qp, rv: &ReqView, now: u64, mem: &mut impl Dma) {
        self.retire_failed(qp, rv, now, mem);
    }

    /// Everything up to and including `psn` is acknowledged (READs/atomics only by their
    /// responses): completes the WQEs it covers. Returns whether there was progress.
    fn ack_upto(&mut self, qp: &mut Qp, rv: &ReqView, psn: u32, now: u64, mem: &mut impl Dma) -> bool {
        let mut una = qp.comp.una;
        let mut lost_rd = None;
        while idx_before(qp.sq.ci, rv.started) {
            let Some(e) = qp.req.win.front() else { break };
            if psn_diff(e.first_psn, psn) > 0 {
                break;
            }
            if e.wr.op.is_read_like() {
                let missing = psn_add(e.first_psn, qp.comp.rd_pkts);
                if psn_diff(missing, psn) <= 0 {
                    // A later PSN is acknowledged but this response never came.
                    lost_rd = Some(missing);
                }
                una = missing;
                break;
            }
            let last = e.last_psn();
            if psn_diff(last, psn) <= 0 {
                una = psn_add(last, 1);
                self.complete_front(qp, None, now, mem);
            } else {
                una = psn_add(psn, 1);
                break;
            }
        }
        let progress = psn_diff(una, qp.comp.una) > 0;
        if progress {
            qp.comp.una = una;
            Self::on_progress(qp, self.tick_of(now));
        }
        if let Some(m) = lost_rd {
            self.retry(qp, rv, m);
        }
        progress
    }

    fn on_progress(qp: &mut Qp, tick: u64) {
        qp.comp.retries_left = qp.retry_cnt;
        qp.comp.rnr_left = qp.rnr_retry;
        qp.comp.rewound_to = None;
        qp.comp.deadline = Self::ack_timeout_ticks(qp).map(|t| tick + t);
    }

    /// Ask the requester to go back to `psn`: the WQE that carries it is found by walking the
    /// started part of the window from the head (`psn` one past everything sent: the first WQE
    /// not started). Another PSN changes nothing.
    fn request_rewind(&mut self, qp: &mut Qp, rv: &ReqView, psn: u32) {
        let mut idx = qp.sq.ci;
        let mut at = None;
        for e in qp.req.win.iter() {
            if !idx_before(idx, rv.started) {
                break;
            }
            if psn_diff(psn, e.first_psn) >= 0 && psn_diff(psn, psn_add(e.first_psn, e.npkts)) < 0 {
                at = Some((idx, psn_diff(psn, e.first_psn) as u32));
                break;
            }
            idx = idx.wrapping_add(1);
        }
        let (idx, pkt) = match at {
            Some(x) => x,
            None if psn == rv.max_sent => (rv.started, 0),
            None => return,
        };
        let c = &mut qp.comp;
        c.rewind = RewindReq { psn, idx, pkt, gen: c.rewind.gen.wrapping_add(1) };
        c.rewound_to = Some(psn);
    }

    /// Go back to `psn` once (repeated triggers for the same PSN are ignored until progress).
    fn retry(&mut self, qp: &mut Qp, rv: &ReqView, psn: u32) {
        if qp.comp.rewound_to == Some(psn) {
            return;
        }
        self.request_rewind(qp, rv, psn);
    }

    fn on_aeth(&mut self, qp: &mut Qp, rv: &ReqView, p: &RxPkt<'_>, at: u64, mem: &mut impl Dma) -> Option<WcStatus> {
        let aeth = p.ext.aeth?;
        match AethSyndrome::from_u8(aeth.syndrome) {
            AethSyndrome::Ack { .. } => {
                self.ack_upto(qp, rv, p.psn, at, mem);
                None
            }
            AethSyndrome::RnrNak { timer } => {
                self.counters.naks_rcvd += 1;
                self.counters.rnr_rcvd += 1;
                self.ack_upto(qp, rv, psn_add(p.psn, PSN_MASK), at, mem);
                if qp.comp.rewound_to == Some(p.psn) && qp.comp.rnr_until > at {
                    return None;
                }
                if qp.comp.rnr_left == 0 {
                    return Some(WcStatus::RnrRetryExcErr);
                }
                if qp.comp.rnr_left != 7 {
                    qp.comp.rnr_left -= 1;
                }
                let us = u64::from(RNR_TIMER_US[usize::from(timer & 0x1F)]);
                qp.comp.rnr_until = at + us * u64::from(self.dcqcn.us_cycles);
                qp.comp.rewound_to = None;
                self.request_rewind(qp, rv, p.psn);
                None
            }
            AethSyndrome::Nak(code) => {
                self.counters.naks_rcvd += 1;
                self.ack_upto(qp, rv, psn_add(p.psn, PSN_MASK), at, mem);
                match code {
                    NakCode::PsnSequenceError => {
                        if qp.comp.rewound_to != Some(p.psn) {
                            if qp.comp.retries_left == 0 {
                                return Some(WcStatus::RetryExcErr);
                            }
                            qp.comp.retries_left -= 1;
                            self.request_rewind(qp, rv, p.psn);
                        }
                        None
                    }
                    NakCode::InvalidRequest => Some(WcStatus::RemInvReqErr),
                    NakCode::RemoteAccessError => Some(WcStatus::RemAccessErr),
                    NakCode::RemoteOperationalError => Some(WcStatus::RemOpErr),
                    _ => Some(WcStatus::BadRespErr),
                }
            }
            AethSyndrome::Reserved(_) => None,
        }
    }

    /// The oldest READ/atomic still waiting for its response: the requests before it are
    /// done (a response implies the responder processed them) and complete now, so it is at
    /// the head. None (and nothing completed) without one.
    fn oldest_read(&mut self, qp: &mut Qp, rv: &ReqView, at: u64, mem: &mut impl Dma) -> Option<()> {
        let n = rv.started.wrapping_sub(qp.sq.ci) as usize;
        let k = qp.req.win.iter().take(n.min(qp.req.win.len())).position(|e| e.wr.op.is_read_like())?;
        for _ in 0..k {
            self.complete_front(qp, None, at, mem);
        }
        // everything before it is acknowledged
        let first = qp.req.win.front()?.first_psn;
        if psn_diff(first, qp.comp.una) > 0 {
            qp.comp.una = first;
        }
        Some(())
    }

    fn on_read_response(
        &mut self,
        qp: &mut Qp,
        rv: &ReqView,
        p: &RxPkt<'_>,
        at: u64,
        mem: &mut impl Dma,
    ) -> Option<WcStatus> {
        self.oldest_read(qp, rv, at, mem)?;
        let e = qp.req.win.front()?;
        if e.wr.op != SendOp::Read {
            return None;
        }
        let rd_pkts = qp.comp.rd_pkts;
        let expected = psn_add(e.first_psn, rd_pkts);
        let d = psn_diff(p.psn, expected);
        if d < 0 {
            return None; // duplicate
        }
        if d > 0 {
            self.retry(qp, rv, expected);
            return None;
        }
        // A re-issued READ (after a lost response) is answered FIRST..LAST from where it
        // resumed, while responses of the earlier request may still arrive: any packet but
        // the final one is FIRST or MIDDLE, the final one LAST or ONLY.
        let last = rd_pkts + 1 == e.npkts;
        let op_ok = if last {
            matches!(p.opcode, Opcode::RcRdmaReadResponseLast | Opcode::RcRdmaReadResponseOnly)
        } else {
            matches!(p.opcode, Opcode::RcRdmaReadResponseFirst | Opcode::RcRdmaReadResponseMiddle)
        };
        let mtu = u64::from(qp.mtu);
        let len = e.wr.len();
        let off = u64::from(rd_pkts) * mtu;
        let plen = (len - off.min(len)).min(mtu);
        if !op_ok || p.payload.len() as u64 != plen {
            return Some(WcStatus::BadRespErr);
        }
        let data = p.payload;
        let sges = e.wr.sges.clone();
        let r = walk_sges(&self.mrs, qp.pd, &sges, off, plen, access::LOCAL_WRITE, |dma, range| {
            mem.dma_write(dma, &data[range]).map_err(|_| WcStatus::LocAccessErr)
        });
        if let Err(st) = r {
            return Some(if st == WcStatus::LocLenErr { WcStatus::LocLenErr } else { WcStatus::LocProtErr });
        }
        self.place_payload(at, plen);
        qp.comp.rd_pkts = rd_pkts + 1;
        if last {
            self.complete_front(qp, None, at, mem);
        }
        let una = psn_add(p.psn, 1);
        if psn_diff(una, qp.comp.una) > 0 {
            qp.comp.una = una;
        }
        Self::on_progress(qp, self.tick_of(at));
        None
    }

    fn on_atomic_ack(
        &mut self,
        qp: &mut Qp,
        rv: &ReqView,
        p: &RxPkt<'_>,
        at: u64,
        mem: &mut impl Dma,
    ) -> Option<WcStatus> {
        self.oldest_read(qp, rv, at, mem)?;
        let e = qp.req.win.front()?;
        if !e.wr.op.is_atomic() || e.first_psn != p.psn {
            return None;
        }
        let orig = p.ext.atomic_ack_eth?.orig_remote_data;
        let sges = e.wr.sges.clone();
        let data = orig.to_le_bytes();
        let r = walk_sges(&self.mrs, qp.pd, &sges, 0, 8, access::LOCAL_WRITE, |dma, range| {
            mem.dma_write(dma, &data[range]).map_err(|_| WcStatus::LocAccessErr)
        });
        if let Err(st) = r {
            return Some(if st == WcStatus::LocLenErr { WcStatus::LocLenErr } else { WcStatus::LocProtErr });
        }
        self.dma_write_done(at, data.len());
        self.complete_front(qp, None, at, mem);
        qp.comp.una = psn_add(p.psn, 1);
        Self::on_progress(qp, self.tick_of(at));
        None
    }

    /// Whether the local ACK timer of `qp` has expired at tick `tick`: requests outstanding
    /// and the later of the two deadlines passed.
    pub fn timer_expired(qp: &Qp, rv: &ReqView, tick: u64) -> bool {
        if qp.comp.una == rv.max_sent {
            return false;
        }
        let d = match (qp.comp.deadline, rv.busy_deadline) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return false,
        };
        tick >= d
    }

    /// The local ACK timeout of `qp` at cycle `now` (the scanner found it expired; checked
    /// again here): go back to the oldest unacknowledged PSN, or with no retries left
    /// complete the head in error (QP to ERR; the caller flushes). Returns whether it fired.
    pub fn comp_timeout(&mut self, qp: &mut Qp, rv: &ReqView, now: u64, mem: &mut impl Dma) -> bool {
        let tick = self.tick_of(now);
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) || !Self::timer_expired(qp, rv, tick) {
            return false;
        }
        self.counters.timeouts += 1;
        if qp.comp.retries_left == 0 {
            if idx_before(qp.sq.ci, rv.fetched) {
                self.complete_front(qp, Some(WcStatus::RetryExcErr), now, mem);
            }
            return true;
        }
        qp.comp.retries_left -= 1;
        qp.comp.rewound_to = None;
        let una = qp.comp.una;
        self.request_rewind(qp, rv, una);
        qp.comp.deadline = Self::ack_timeout_ticks(qp).map(|t| tick + t);
        true
    }

    /// Local ACK timeouts due at `now`.
    pub(crate) fn check_timers(&mut self, now: u64, mem: &mut impl Dma) {
        let tick = self.tick_of(now);
        let due: Vec<u32> = self
            .req_rr
            .iter()
            .copied()
            .filter(|&q| self.qp(q).is_some_and(|qp| Self::timer_expired(qp, &ReqView::of(qp), tick)))
            .collect();
        for qpn in due {
            let Some(mut qp) = self.take_qp(qpn) else { continue };
            let rv = ReqView::of(&qp);
            self.comp_timeout(&mut qp, &rv, now, mem);
            let err = qp.state == QpState::Err;
            self.put_qp(qp);
            if err {
                self.flush_qp(qpn, mem);
            }
        }
    }

    /// The earliest cycle the local ACK timer of `qp` can expire (None: not running).
    pub(crate) fn timer_due(&self, qp: &Qp) -> Option<u64> {
        let rv = ReqView::of(qp);
        if qp.comp.una == rv.max_sent || !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            return None;
        }
        let d = match (qp.comp.deadline, rv.busy_deadline) {
            (Some(a), Some(b)) => a.max(b),
            (Some(a), None) | (None, Some(a)) => a,
            (None, None) => return None,
        };
        Some(d * self.cfg.tick_cycles.max(1))
    }

    /// ENTER_ERR (and a doorbell while in ERR): complete the send queue with `WrFlushErr`:
    /// the fetched WQEs from the window (a failed one with its status), then those posted and
    /// not fetched, whose `wr_id` is read from the ring (8 bytes each).
    pub fn comp_flush(&mut self, qp: &mut Qp, rv: &ReqView, mem: &mut impl Dma) {
        let now = 0;
        while idx_before(qp.sq.ci, rv.fetched) {
            let Some(e) = qp.req.win.pop_front() else { break };
            let c = Completion {
                wr_id: e.wr.wr_id,
                status: e.error.unwrap_or(WcStatus::WrFlushErr),
                opcode: wc_opcode(e.wr.op),
                byte_len: 0,
                imm: None,
                invalidated: None,
                qpn: qp.qpn,
                src_qp: qp.dest_qpn,
                solicited: false,
            };
            self.complete(qp.send_cq, now, c, mem);
            qp.sq.ci = qp.sq.ci.wrapping_add(1);
        }
        qp.req.win.clear();
        qp.comp.rd_pkts = 0;
        // nothing is outstanding any more: the local ACK timer stops
        qp.comp.deadline = None;
        qp.comp.una = rv.max_sent;
        self.flush_unfetched_sq(qp, rv.sq_pi, mem);
    }

    /// Complete the posted but not yet fetched send WQEs of a QP in ERR (up to producer index
    /// `pi`) with `WrFlushErr`.
    pub(crate) fn flush_unfetched_sq(&mut self, qp: &mut Qp, pi: u32, mem: &mut impl Dma) {
        while idx_before(qp.sq.ci, pi) {
            let mut b = [0u8; 8];
            if mem.dma_read(qp.sq.slot(qp.sq.ci, SqWqe::SIZE as u64), &mut b).is_err() {
                self.counters.dma_errors += 1;
            }
            let c = Completion {
                wr_id: u64::from_le_bytes(b),
                status: WcStatus::WrFlushErr,
                opcode: WcOpcode::Send,
                byte_len: 0,
                imm: None,
                invalidated: None,
                qpn: qp.qpn,
                src_qp: qp.dest_qpn,
                solicited: false,
            };
            self.complete(qp.send_cq, 0, c, mem);
            qp.sq.ci = qp.sq.ci.wrapping_add(1);
        }
    }
}
