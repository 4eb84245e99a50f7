//! `roce_comp`: the RC completer — ACK/NAK handling, READ response and atomic ACK placement,
//! go-back-N triggers, local ACK timeout, completions.
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
//! Retries reset on progress. Completions are written in request order.
//! Latency: [`LATENCY`] cycles after the context lookup.

use crate::wire::{AethSyndrome, NakCode, Opcode};

use super::mem::Dma;
use super::mr::walk_sges;
use super::qp::Qp;
use super::rx::RxPkt;
use super::types::*;
use super::Engine;

/// Completer pipeline latency in cycles.
pub const LATENCY: u64 = 3;

impl Engine {
    pub(crate) fn completer(&mut self, p: &RxPkt<'_>, mem: &mut impl Dma) {
        let Some(mut qp) = self.take_qp(p.qpn) else { return };
        if !matches!(qp.state, QpState::Rts | QpState::Sqd) {
            self.put_qp(qp);
            return;
        }
        let at = p.at + LATENCY;
        // Responses for PSNs never sent are bogus.
        let sent = psn_diff(p.psn, qp.req.max_sent) < 0 && psn_diff(p.psn, psn_add(qp.req.una_psn, PSN_MASK)) >= 0;
        let mut fatal = None;
        if sent {
            fatal = match p.opcode {
                Opcode::RcAcknowledge => self.on_aeth(&mut qp, p, at),
                Opcode::RcAtomicAcknowledge => self.on_atomic_ack(&mut qp, p, at, mem),
                _ if p.opcode.is_read_response() => self.on_read_response(&mut qp, p, at, mem),
                _ => None,
            };
        }
        if let Some(st) = fatal {
            if let Some(e) = qp.req.wqes.iter_mut().find(|e| !e.done) {
                e.error = Some(st);
                e.done = true;
            }
        }
        // completes in order, the errored request with its status; an error moves to ERR
        self.retire(&mut qp, at, mem);
        let qpn = qp.qpn;
        let err = qp.state == QpState::Err;
        self.put_qp(qp);
        if err {
            self.flush_qp(qpn, mem);
        }
    }

    /// Everything up to and including `psn` is acknowledged (READs/atomics only by their
    /// responses). Returns whether there was progress.
    fn ack_upto(&mut self, qp: &mut Qp, psn: u32, now: u64) -> bool {
        let mut una = qp.req.una_psn;
        let mut lost_rd = None;
        for e in qp.req.wqes.iter_mut() {
            if !e.started || psn_diff(e.first_psn, psn) > 0 {
                break;
            }
            if e.done {
                una = psn_add(e.last_psn(), 1);
                continue;
            }
            if e.wr.op.is_read_like() {
                let missing = psn_add(e.first_psn, e.resp_pkts);
                if psn_diff(missing, psn) <= 0 {
                    // A later PSN is acknowledged but this response never came.
                    lost_rd = Some(missing);
                }
                una = missing;
                break;
            }
            if psn_diff(e.last_psn(), psn) <= 0 {
                e.done = true;
                una = psn_add(e.last_psn(), 1);
            } else {
                una = psn_add(psn, 1);
                break;
            }
        }
        let progress = psn_diff(una, qp.req.una_psn) > 0;
        if progress {
            qp.req.una_psn = una;
            self.on_progress(qp, now);
            if psn_diff(una, qp.req.next_psn) > 0 {
                // acknowledged beyond a rewind point: skip what is already there
                self.rewind(qp, una);
            }
        }
        if let Some(m) = lost_rd {
            self.retry(qp, m);
        }
        progress
    }

    fn on_progress(&mut self, qp: &mut Qp, now: u64) {
        qp.req.retries_left = qp.retry_cnt;
        qp.req.rnr_left = qp.rnr_retry;
        qp.req.rewound_to = None;
        qp.req.timer = self.ack_timeout(qp).map(|t| now + t);
    }

    /// Go back to `psn` once (repeated triggers for the same PSN are ignored until progress).
    fn retry(&mut self, qp: &mut Qp, psn: u32) {
        if qp.req.rewound_to == Some(psn) {
            return;
        }
        self.rewind(qp, psn);
    }

    fn on_aeth(&mut self, qp: &mut Qp, p: &RxPkt<'_>, at: u64) -> Option<WcStatus> {
        let aeth = p.ext.aeth?;
        match AethSyndrome::from_u8(aeth.syndrome) {
            AethSyndrome::Ack { .. } => {
                self.ack_upto(qp, p.psn, at);
                None
            }
            AethSyndrome::RnrNak { timer } => {
                self.counters.naks_rcvd += 1;
                self.counters.rnr_rcvd += 1;
                self.ack_upto(qp, psn_add(p.psn, PSN_MASK), at);
                if qp.req.rewound_to == Some(p.psn) && qp.req.rnr_until > at {
                    return None;
                }
                if qp.req.rnr_left == 0 {
                    return Some(WcStatus::RnrRetryExcErr);
                }
                if qp.req.rnr_left != 7 {
                    qp.req.rnr_left -= 1;
                }
                let us = u64::from(RNR_TIMER_US[usize::from(timer & 0x1F)]);
                qp.req.rnr_until = at + (us as f64 * self.cfg.clock_mhz) as u64;
                qp.req.rewound_to = None;
                self.rewind(qp, p.psn);
                None
            }
            AethSyndrome::Nak(code) => {
                self.counters.naks_rcvd += 1;
                self.ack_upto(qp, psn_add(p.psn, PSN_MASK), at);
                match code {
                    NakCode::PsnSequenceError => {
                        if qp.req.rewound_to != Some(p.psn) {
                            if qp.req.retries_left == 0 {
                                return Some(WcStatus::RetryExcErr);
                            }
                            qp.req.retries_left -= 1;
                            self.rewind(qp, p.psn);
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

    /// The oldest READ/atomic still waiting for its response; requests before it are done
    /// (a response implies the responder processed them).
    fn oldest_read(&mut self, qp: &mut Qp) -> Option<usize> {
        let i = qp.req.wqes.iter().position(|e| e.started && !e.done && e.wr.op.is_read_like())?;
        for e in qp.req.wqes.iter_mut().take(i) {
            e.done = true;
        }
        Some(i)
    }

    fn on_read_response(&mut self, qp: &mut Qp, p: &RxPkt<'_>, at: u64, mem: &mut impl Dma) -> Option<WcStatus> {
        let i = self.oldest_read(qp)?;
        let e = &qp.req.wqes[i];
        if e.wr.op != SendOp::Read {
            return None;
        }
        let expected = psn_add(e.first_psn, e.resp_pkts);
        let d = psn_diff(p.psn, expected);
        if d < 0 {
            return None; // duplicate
        }
        if d > 0 {
            self.retry(qp, expected);
            return None;
        }
        // A re-issued READ (after a lost response) is answered FIRST..LAST from where it
        // resumed, while responses of the earlier request may still arrive: any packet but
        // the final one is FIRST or MIDDLE, the final one LAST or ONLY.
        let last = e.resp_pkts + 1 == e.npkts;
        let op_ok = if last {
            matches!(p.opcode, Opcode::RcRdmaReadResponseLast | Opcode::RcRdmaReadResponseOnly)
        } else {
            matches!(p.opcode, Opcode::RcRdmaReadResponseFirst | Opcode::RcRdmaReadResponseMiddle)
        };
        let mtu = u64::from(qp.mtu);
        let len = e.wr.len();
        let off = u64::from(e.resp_pkts) * mtu;
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
        let e = &mut qp.req.wqes[i];
        e.resp_pkts += 1;
        if e.resp_pkts == e.npkts {
            e.done = true;
            qp.req.outstanding_rd = qp.req.outstanding_rd.saturating_sub(1);
        }
        let una = psn_add(p.psn, 1);
        if psn_diff(una, qp.req.una_psn) > 0 {
            qp.req.una_psn = una;
        }
        self.on_progress(qp, at);
        None
    }

    fn on_atomic_ack(&mut self, qp: &mut Qp, p: &RxPkt<'_>, at: u64, mem: &mut impl Dma) -> Option<WcStatus> {
        let i = self.oldest_read(qp)?;
        let e = &qp.req.wqes[i];
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
        let e = &mut qp.req.wqes[i];
        e.resp_pkts = 1;
        e.done = true;
        qp.req.outstanding_rd = qp.req.outstanding_rd.saturating_sub(1);
        qp.req.una_psn = psn_add(p.psn, 1);
        self.on_progress(qp, at);
        None
    }

    /// Complete finished requests from the head of the queue, in order.
    pub(crate) fn retire(&mut self, qp: &mut Qp, at: u64, mem: &mut impl Dma) {
        while qp.req.wqes.front().is_some_and(|e| e.done) {
            let Some(e) = qp.req.wqes.pop_front() else { break };
            qp.req.cur = qp.req.cur.saturating_sub(1);
            qp.sq.ci = qp.sq.ci.wrapping_add(1);
            let status = e.error.unwrap_or(WcStatus::Success);
            if e.wr.signaled || status != WcStatus::Success {
                let c = Completion {
                    wr_id: e.wr.wr_id,
                    status,
                    opcode: match e.wr.op {
                        SendOp::Send | SendOp::SendImm(_) | SendOp::SendInv(_) => WcOpcode::Send,
                        SendOp::Write | SendOp::WriteImm(_) => WcOpcode::Write,
                        SendOp::Read => WcOpcode::Read,
                        SendOp::CmpSwap { .. } => WcOpcode::CmpSwap,
                        SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
                    },
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
        let outstanding = qp.req.wqes.iter().any(|e| e.started && !e.done);
        if !outstanding {
            qp.req.timer = None;
        }
    }

    /// Local ACK timeouts due at `now`.
    pub(crate) fn check_timers(&mut self, now: u64, mem: &mut impl Dma) {
        let due: Vec<u32> = self
            .req_rr
            .iter()
            .copied()
            .filter(|&q| self.qp(q).and_then(|qp| qp.req.timer).is_some_and(|t| t <= now))
            .collect();
        for qpn in due {
            let Some(mut qp) = self.take_qp(qpn) else { continue };
            self.counters.timeouts += 1;
            if qp.req.retries_left == 0 {
                if let Some(e) = qp.req.wqes.iter_mut().find(|e| !e.done) {
                    e.error = Some(WcStatus::RetryExcErr);
                    e.done = true;
                }
                self.retire(&mut qp, now, mem);
                qp.state = QpState::Err;
                self.put_qp(qp);
                self.flush_qp(qpn, mem);
                continue;
            }
            qp.req.retries_left -= 1;
            let una = qp.req.una_psn;
            qp.req.rewound_to = None;
            self.rewind(&mut qp, una);
            qp.req.timer = self.ack_timeout(&qp).map(|t| now + t);
            self.put_qp(qp);
        }
    }
}
