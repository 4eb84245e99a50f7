//! `roce_resp`: the RC responder.
//!
//! In order, for each request packet of a QP that can receive:
//! 1. PSN check against the expected PSN: ahead → one PSN-sequence-error NAK (then silence
//!    until the expected PSN arrives); behind → duplicate: SEND/WRITE re-ACKed, READ
//!    re-executed from the duplicate's PSN, atomic answered with the saved result.
//! 2. Opcode sequence (MIDDLE/LAST only inside a message of the same kind), QP access flags,
//!    packet length (FIRST/MIDDLE exactly one MTU, LAST/ONLY at most one) → NAK invalid
//!    request and QP to ERR.
//! 3. SEND needs a receive WQE → else RNR NAK (the packet is dropped, the PSN not consumed).
//! 4. R_Key check (`roce_mr_check`) for WRITE/READ/atomics → NAK remote access error, QP to
//!    ERR; nothing is written.
//! 5. Execute: scatter SEND payload, DMA-write WRITE payload, generate READ responses,
//!    perform atomics; receive completions; ACK when AckReq is set (coalesced per QP).
//!
//! Latency: [`LATENCY`] cycles after the packet's context lookup, plus DMA time.

use crate::wire::{AethFields, AtomicAckEthFields, BthFields, ExtHeaders, Opcode, Position};

use super::mem::Dma;
use super::mr_check::walk_sges;
use super::qp_ctx::{AckOwed, InMsg, Qp, RdResource};
use super::rx_disp::RxPkt;
use super::types::*;
use super::{Engine, Profile, TxKind, TxPkt};

/// Responder pipeline latency in cycles.
pub const LATENCY: u64 = 4;

/// Receive WQEs `roce_resp` reads ahead (its prefetch ring).
pub const RQ_PREFETCH: usize = 16;

/// `roce_resp`'s receive WQE prefetch, for the timing estimate: one QP at a time has the
/// WQEs after its rq ci read ahead (up to [`RQ_PREFETCH`], while ci + read != pi), started
/// by a doorbell when the prefetcher is idle and after each consumption; a SEND's first
/// packet (a WRITE with immediate's last) whose WQE was read ahead waits only until that
/// read is in, otherwise for a DMA read (the HDL then points the prefetcher at the QP).
#[derive(Clone, Debug, Default)]
pub struct RqPrefetch {
    /// The QP followed.
    qpn: Option<u32>,
    /// WQE index of the first entry of `ready`.
    head: u32,
    /// Cycle each read-ahead WQE is in, from `head` on.
    ready: std::collections::VecDeque<u64>,
    /// The responder's reads go out in order, one per cycle at most.
    rd_free: u64,
    /// The last cycle the responder saw (a doorbell's time, which the model does not have).
    pub(crate) now: u64,
}

impl Engine {
    /// A 64-byte read by the responder requested at `now`: the cycle its data is in.
    fn resp_wqe_read(&mut self, now: u64) -> u64 {
        let issue = now.max(self.rq_pf.rd_free);
        self.rq_pf.rd_free = issue + 1;
        self.dma_read_done(issue, crate::contract::RqWqe::SIZE)
    }

    /// Read ahead the WQEs of the followed QP that are posted and not yet read, at `now`.
    fn rq_prefetch_top_up(&mut self, qpn: u32, pi: u32, now: u64) {
        if self.rq_pf.qpn != Some(qpn) {
            return;
        }
        while self.rq_pf.ready.len() < RQ_PREFETCH && self.rq_pf.head.wrapping_add(self.rq_pf.ready.len() as u32) != pi
        {
            let t = self.resp_wqe_read(now);
            self.rq_pf.ready.push_back(t);
        }
    }

    /// The cycle the receive WQE at `qp`'s rq ci (about to be consumed at `at`) is on chip.
    pub(crate) fn rq_wqe_at(&mut self, qp: &Qp, at: u64) -> u64 {
        self.rq_pf.now = self.rq_pf.now.max(at);
        let hit = self.rq_pf.qpn == Some(qp.qpn) && self.rq_pf.head == qp.rq.ci;
        let read_ahead = if hit { self.rq_pf.ready.pop_front() } else { None };
        let t = if let Some(r) = read_ahead {
            // from the ring: 2 cycles once its read is in
            self.rq_pf.head = self.rq_pf.head.wrapping_add(1);
            at.max(r) + 2
        } else {
            // read now (L + 3); the prefetcher follows this QP from the next WQE on
            let r = self.resp_wqe_read(at) + 3;
            self.rq_pf.qpn = Some(qp.qpn);
            self.rq_pf.head = qp.rq.ci.wrapping_add(1);
            self.rq_pf.ready.clear();
            r
        };
        self.rq_prefetch_top_up(qp.qpn, qp.rq.pi, at);
        t
    }

    /// An RQ doorbell: the followed QP reads on; an idle prefetcher starts on this QP.
    pub(crate) fn rq_prefetch_doorbell(&mut self, qp: &Qp) {
        let now = self.rq_pf.now;
        if self.rq_pf.qpn != Some(qp.qpn) && self.rq_pf.ready.is_empty() && qp.rq.ci != qp.rq.pi {
            self.rq_pf.qpn = Some(qp.qpn);
            self.rq_pf.head = qp.rq.ci;
        }
        self.rq_prefetch_top_up(qp.qpn, qp.rq.pi, now);
    }

    /// RESET, the error state's flush: forget what was read ahead for `qpn`.
    pub(crate) fn rq_prefetch_forget(&mut self, qpn: u32) {
        if self.rq_pf.qpn == Some(qpn) {
            self.rq_pf.qpn = None;
            self.rq_pf.ready.clear();
        }
    }
}

/// AETH syndrome of an ACK with unlimited credit (rxe: AETH_ACK_UNLIMITED).
pub const ACK_SYNDROME: u8 = 0x1F;
/// NAK syndromes.
pub const NAK_SEQ: u8 = 0x60;
/// NAK invalid request.
pub const NAK_INV_REQ: u8 = 0x61;
/// NAK remote access error.
pub const NAK_REM_ACCESS: u8 = 0x62;
/// NAK remote operational error.
pub const NAK_REM_OP: u8 = 0x63;

/// The ACK/NAK a QP owes after it comes to owe `a` while owing `old` (`roce_ack_q`'s rule):
/// the new one replaces the old, except that a NAK or RNR NAK stays owed against an ACK
/// that is not newer. Coalescing keeps the owed ACK's turn on the wire (the generator sends
/// the latest PSN when its turn comes), so a stream of AckReq packets is acknowledged as it
/// goes, not only after it ends.
pub fn ack_merge(old: Option<AckOwed>, a: AckOwed) -> AckOwed {
    match old {
        Some(old) if old.syndrome & 0x60 != 0 && a.syndrome & 0x60 == 0 && psn_diff(a.psn, old.psn) <= 0 => old,
        Some(old) => AckOwed { ready: old.ready.min(a.ready), ..a },
        None => a,
    }
}

/// One packet of a READ's responses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRespPacket {
    /// RDMA READ Response FIRST/MIDDLE/LAST/ONLY.
    pub opcode: Opcode,
    /// PSN.
    pub psn: u32,
    /// Offset of its payload in the READ.
    pub off: u64,
    /// Payload bytes.
    pub len: u32,
    /// It carries an AETH (FIRST, LAST, ONLY).
    pub aeth: bool,
}

/// The response packets of a READ of `len` bytes from PSN `psn` at path MTU `mtu`
/// (`roce_rd_rsp`'s segmentation): max(1, ceil(len / mtu)) packets.
pub fn read_response_packets(psn: u32, len: u32, mtu: u32) -> impl Iterator<Item = ReadRespPacket> {
    let (len, mtu) = (u64::from(len), u64::from(mtu.max(1)));
    let n = len.div_ceil(mtu).max(1);
    (0..n).map(move |i| {
        let off = i * mtu;
        let chunk = (len - off.min(len)).min(mtu);
        let opcode = match (n, i) {
            (1, _) => Opcode::RcRdmaReadResponseOnly,
            (_, 0) => Opcode::RcRdmaReadResponseFirst,
            (_, i) if i + 1 == n => Opcode::RcRdmaReadResponseLast,
            _ => Opcode::RcRdmaReadResponseMiddle,
        };
        ReadRespPacket {
            opcode,
            psn: psn_add(psn, i as u32),
            off,
            len: chunk as u32,
            aeth: opcode != Opcode::RcRdmaReadResponseMiddle,
        }
    })
}

/// What the responder decided, applied after the QP borrow ends.
enum Outcome {
    Done,
    /// Send this ACK/NAK.
    Ack(AckOwed),
    /// NAK and move the QP to ERR.
    Fatal(u8),
}

impl Engine {
    pub(crate) fn take_qp(&mut self, qpn: u32) -> Option<Qp> {
        self.qps.get_mut(qpn as usize)?.take()
    }

    pub(crate) fn put_qp(&mut self, qp: Qp) {
        let i = qp.qpn as usize;
        self.qps[i] = Some(qp);
    }

    /// Owe an ACK/NAK on `qp` (a newer one replaces an older ACK; a NAK is never replaced
    /// by an ACK that is not newer).
    pub(crate) fn owe_ack(&mut self, qp: &mut Qp, a: AckOwed) {
        if self.trace_events {
            self.events.push(super::EngineEvent::Ack { qpn: qp.qpn, psn: a.psn, syndrome: a.syndrome, msn: a.msn });
        }
        match (self.cfg.profile, qp.resp.ack) {
            (Profile::Rxe, Some(_)) => qp.resp.acks_after.push_back(a),
            // not known to the ACK generator before its packet is done (the payload written
            // within host memory's budget): it waits behind the owed one
            (Profile::Engine, Some(old)) if a.ready > old.ready || !qp.resp.acks_after.is_empty() => {
                qp.resp.acks_after.push_back(a)
            }
            _ => qp.resp.ack = Some(ack_merge(qp.resp.ack, a)),
        }
        if !self.ack_qps.contains(&qp.qpn) {
            self.ack_qps.push_back(qp.qpn);
        }
        match a.syndrome {
            NAK_SEQ => self.counters.nak_seq_sent += 1,
            NAK_INV_REQ => self.counters.nak_inv_sent += 1,
            NAK_REM_ACCESS => self.counters.nak_acc_sent += 1,
            NAK_REM_OP => self.counters.nak_op_sent += 1,
            s if s & 0x60 == 0x20 => self.counters.nak_rnr_sent += 1,
            _ => {}
        }
    }

    pub(crate) fn responder(&mut self, p: &RxPkt<'_>, mem: &mut impl Dma) {
        let Some(mut qp) = self.take_qp(p.qpn) else { return };
        let at = p.at + LATENCY;
        self.rq_pf.now = self.rq_pf.now.max(at);
        let diff = psn_diff(p.psn, qp.resp.epsn);
        let out = if diff > 0 {
            if qp.resp.nak_sent {
                Outcome::Done
            } else {
                qp.resp.nak_sent = true;
                Outcome::Ack(AckOwed { psn: qp.resp.epsn, syndrome: NAK_SEQ, msn: qp.resp.msn, ready: at })
            }
        } else if diff < 0 {
            self.counters.duplicates += 1;
            self.duplicate(&mut qp, p, at, mem)
        } else {
            // The packet a sequence NAK asked for: acknowledged even without AckReq (the
            // engine's profile), so a requester that ignores NAKs while it retries (rxe) sees
            // progress and answers the next NAK at once instead of on its timer.
            qp.resp.gap_filled = qp.resp.nak_sent && self.cfg.profile == Profile::Engine;
            qp.resp.nak_sent = false;
            self.execute(&mut qp, p, at, mem)
        };
        match out {
            Outcome::Done => {}
            Outcome::Ack(a) => self.owe_ack(&mut qp, a),
            Outcome::Fatal(syn) => {
                let a = AckOwed { psn: p.psn, syndrome: syn, msn: qp.resp.msn, ready: at };
                self.owe_ack(&mut qp, a);
                // (the QP can receive, so it is not in Reset or Err: this always enters Err)
                qp.transport_error();
                let cause = match syn {
                    NAK_REM_ACCESS => WcStatus::RemAccessErr,
                    NAK_REM_OP => WcStatus::RemOpErr,
                    _ => WcStatus::RemInvReqErr,
                };
                self.qp_failed(qp.qpn, cause);
                let qpn = qp.qpn;
                self.put_qp(qp);
                self.flush_qp(qpn, mem);
                return;
            }
        }
        self.put_qp(qp);
    }

    fn duplicate(&mut self, qp: &mut Qp, p: &RxPkt<'_>, at: u64, mem: &mut impl Dma) -> Outcome {
        let op = p.opcode;
        if op == Opcode::RcRdmaReadRequest {
            // Re-execute from the duplicate's PSN if it falls in a READ we served.
            let served = qp.resp.resources.iter().any(|r| {
                r.atomic_orig.is_none() && psn_diff(p.psn, r.psn) >= 0 && psn_diff(p.psn, psn_add(r.psn, r.npkts)) < 0
            });
            if !served {
                return Outcome::Done;
            }
            let Some(reth) = p.ext.reth else { return Outcome::Done };
            if self.mrs.check(reth.rkey, qp.pd, reth.va, u64::from(reth.dma_len), access::REMOTE_READ).is_err() {
                return Outcome::Done;
            }
            self.read_responses(qp, p.psn, reth.va, reth.rkey, reth.dma_len, at, mem);
            return Outcome::Done;
        }
        if op.is_atomic() {
            let saved = qp.resp.resources.iter().find(|r| r.psn == p.psn).and_then(|r| r.atomic_orig);
            if let Some(orig) = saved {
                self.atomic_ack(qp, p.psn, orig, at);
            }
            return Outcome::Done;
        }
        // SEND/WRITE: acknowledge everything up to the expected PSN.
        Outcome::Ack(AckOwed {
            psn: psn_add(qp.resp.epsn, PSN_MASK),
            syndrome: ACK_SYNDROME,
            msn: qp.resp.msn,
            ready: at,
        })
    }

    fn execute(&mut self, qp: &mut Qp, p: &RxPkt<'_>, at: u64, mem: &mut impl Dma) -> Outcome {
        let op = p.opcode;
        let pos = op.position();
        let mtu = qp.mtu as usize;
        // Opcode sequence: inside a message only its MIDDLE/LAST may come.
        let in_send = matches!(qp.resp.cur, Some(InMsg::Send { .. }));
        let in_write = matches!(qp.resp.cur, Some(InMsg::Write { .. }));
        let cont = matches!(pos, Position::Middle | Position::Last);
        let seq_ok =
            if cont { (op.is_send() && in_send) || (op.is_rdma_write() && in_write) } else { !in_send && !in_write };
        if !seq_ok {
            return Outcome::Fatal(NAK_INV_REQ);
        }
        // QP access flags.
        let need = if op.is_rdma_write() {
            access::REMOTE_WRITE
        } else if op == Opcode::RcRdmaReadRequest {
            access::REMOTE_READ
        } else if op.is_atomic() {
            access::REMOTE_ATOMIC
        } else {
            0
        };
        if qp.access & need != need {
            return Outcome::Fatal(NAK_INV_REQ);
        }
        // Packet length.
        let len = p.payload.len();
        let len_ok = match pos {
            Position::First | Position::Middle => len == mtu,
            _ => len <= mtu,
        };
        if (op.is_send() || op.is_rdma_write()) && !len_ok {
            return Outcome::Fatal(NAK_INV_REQ);
        }

        if op.is_send() {
            return self.exec_send(qp, p, at, mem);
        }
        if op.is_rdma_write() {
            return self.exec_write(qp, p, at, mem);
        }
        if op == Opcode::RcRdmaReadRequest {
            let Some(reth) = p.ext.reth else { return Outcome::Fatal(NAK_INV_REQ) };
            if self.mrs.check(reth.rkey, qp.pd, reth.va, u64::from(reth.dma_len), access::REMOTE_READ).is_err() {
                return Outcome::Fatal(NAK_REM_ACCESS);
            }
            let n = u32::try_from(u64::from(reth.dma_len).div_ceil(mtu as u64).max(1)).unwrap_or(1);
            self.remember(qp, RdResource { psn: p.psn, npkts: n, atomic_orig: None });
            qp.resp.epsn = psn_add(qp.resp.epsn, n);
            qp.resp.msn = psn_add(qp.resp.msn, 1);
            self.read_responses(qp, p.psn, reth.va, reth.rkey, reth.dma_len, at, mem);
            return Outcome::Done;
        }
        if op.is_atomic() {
            let Some(a) = p.ext.atomic_eth else { return Outcome::Fatal(NAK_INV_REQ) };
            if a.va % 8 != 0 {
                return Outcome::Fatal(NAK_INV_REQ);
            }
            let Ok(dma) = self.mrs.check(a.rkey, qp.pd, a.va, 8, access::REMOTE_ATOMIC) else {
                return Outcome::Fatal(NAK_REM_ACCESS);
            };
            let mut b = [0u8; 8];
            if mem.dma_read(dma, &mut b).is_err() {
                self.counters.dma_errors += 1;
                return Outcome::Fatal(NAK_REM_OP);
            }
            let orig = u64::from_le_bytes(b);
            let new = if op == Opcode::RcCompareSwap {
                if orig == a.compare {
                    a.swap_add
                } else {
                    orig
                }
            } else {
                orig.wrapping_add(a.swap_add)
            };
            if mem.dma_write(dma, &new.to_le_bytes()).is_err() {
                self.counters.dma_errors += 1;
                return Outcome::Fatal(NAK_REM_OP);
            }
            self.remember(qp, RdResource { psn: p.psn, npkts: 1, atomic_orig: Some(orig) });
            qp.resp.epsn = psn_add(qp.resp.epsn, 1);
            qp.resp.msn = psn_add(qp.resp.msn, 1);
            let read = self.dma_read_done(at, 8);
            self.dma_write_done(read, 8);
            self.atomic_ack(qp, p.psn, orig, read);
            return Outcome::Done;
        }
        Outcome::Fatal(NAK_INV_REQ)
    }

    fn remember(&mut self, qp: &mut Qp, r: RdResource) {
        qp.resp.resources.push_back(r);
        while qp.resp.resources.len() > usize::from(qp.max_dest_rd_atomic.max(1)) {
            qp.resp.resources.pop_front();
        }
    }

    fn ack_after(&self, qp: &Qp, p: &RxPkt<'_>, at: u64) -> Outcome {
        if p.ack_req || qp.resp.gap_filled {
            Outcome::Ack(AckOwed { psn: p.psn, syndrome: ACK_SYNDROME, msn: qp.resp.msn, ready: at })
        } else {
            Outcome::Done
        }
    }

    fn exec_send(&mut self, qp: &mut Qp, p: &RxPkt<'_>, mut at: u64, mem: &mut impl Dma) -> Outcome {
        let pos = p.opcode.position();
        if pos.is_start() {
            if qp.rq.ci == qp.rq.pi {
                let syn = 0x20 | (qp.min_rnr_timer & 0x1F);
                return Outcome::Ack(AckOwed { psn: p.psn, syndrome: syn, msn: qp.resp.msn, ready: at });
            }
            // the WQE is on chip if it was read ahead, else read now
            at = self.rq_wqe_at(qp, at);
            let wr = match self.fetch_recv_wqe(qp, mem) {
                Ok(w) => w,
                Err(st) => return self.recv_error(qp, st, NAK_REM_OP, mem),
            };
            qp.resp.cur = Some(InMsg::Send { wr, off: 0 });
        }
        let Some(InMsg::Send { wr, off }) = qp.resp.cur.as_mut() else { return Outcome::Fatal(NAK_INV_REQ) };
        let data = p.payload;
        let r = walk_sges(&self.mrs, qp.pd, &wr.sges, *off, data.len() as u64, access::LOCAL_WRITE, |dma, range| {
            mem.dma_write(dma, &data[range]).map_err(|_| WcStatus::LocAccessErr)
        });
        if let Err(st) = r {
            let syn = if st == WcStatus::LocLenErr { NAK_INV_REQ } else { NAK_REM_OP };
            return self.recv_error(qp, st, syn, mem);
        }
        *off += data.len() as u64;
        qp.resp.epsn = psn_add(qp.resp.epsn, 1);
        let ready = self.place_payload(at, data.len() as u64);
        if pos.is_end() {
            let mut invalidated = None;
            if let Some(ieth) = p.ext.ieth {
                if self.mrs.invalidate(ieth.rkey, Some(qp.pd)).is_err() {
                    return self.recv_error(qp, WcStatus::RemInvReqErr, NAK_INV_REQ, mem);
                }
                invalidated = Some(ieth.rkey);
            }
            let Some(InMsg::Send { wr, off }) = qp.resp.cur.take() else { return Outcome::Done };
            qp.resp.msn = psn_add(qp.resp.msn, 1);
            let c = Completion {
                wr_id: wr.wr_id,
                status: WcStatus::Success,
                opcode: WcOpcode::Recv,
                byte_len: off as u32,
                imm: p.ext.immdt.map(|i| i.imm),
                invalidated,
                qpn: qp.qpn,
                src_qp: qp.dest_qpn,
                solicited: p.solicited,
            };
            self.complete(qp.recv_cq, ready, c, mem);
        }
        self.ack_after(qp, p, ready)
    }

    fn exec_write(&mut self, qp: &mut Qp, p: &RxPkt<'_>, at: u64, mem: &mut impl Dma) -> Outcome {
        let pos = p.opcode.position();
        // WRITE with immediate consumes a receive WQE at its last packet: without one, RNR
        // NAK before anything is written.
        if p.ext.immdt.is_some() && qp.rq.ci == qp.rq.pi {
            let syn = 0x20 | (qp.min_rnr_timer & 0x1F);
            return Outcome::Ack(AckOwed { psn: p.psn, syndrome: syn, msn: qp.resp.msn, ready: at });
        }
        if pos.is_start() {
            let Some(reth) = p.ext.reth else { return Outcome::Fatal(NAK_INV_REQ) };
            if self.mrs.check(reth.rkey, qp.pd, reth.va, u64::from(reth.dma_len), access::REMOTE_WRITE).is_err() {
                return Outcome::Fatal(NAK_REM_ACCESS);
            }
            qp.resp.cur = Some(InMsg::Write { va: reth.va, rkey: reth.rkey, dma_len: u64::from(reth.dma_len), off: 0 });
        }
        let Some(InMsg::Write { va, rkey, dma_len, off }) = qp.resp.cur.as_mut() else {
            return Outcome::Fatal(NAK_INV_REQ);
        };
        let data = p.payload;
        let n = data.len() as u64;
        // The packets must not run past the RETH length, and must fill it exactly at the end.
        if *off + n > *dma_len || (pos.is_end() && *off + n != *dma_len) {
            return Outcome::Fatal(NAK_INV_REQ);
        }
        if n > 0 {
            let Ok(dma) = self.mrs.check(*rkey, qp.pd, *va + *off, n, access::REMOTE_WRITE) else {
                return Outcome::Fatal(NAK_REM_ACCESS);
            };
            if mem.dma_write(dma, data).is_err() {
                self.counters.dma_errors += 1;
                return Outcome::Fatal(NAK_REM_OP);
            }
        }
        *off += n;
        let total = *dma_len;
        qp.resp.epsn = psn_add(qp.resp.epsn, 1);
        let mut ready = at;
        if n > 0 {
            ready = self.place_payload(at, n);
        }
        if pos.is_end() {
            qp.resp.cur = None;
            if let Some(imm) = p.ext.immdt {
                ready = self.rq_wqe_at(qp, ready);
                let wr = match self.fetch_recv_wqe(qp, mem) {
                    Ok(w) => w,
                    Err(st) => return self.recv_error(qp, st, NAK_REM_OP, mem),
                };
                let c = Completion {
                    wr_id: wr.wr_id,
                    status: WcStatus::Success,
                    opcode: WcOpcode::RecvWriteImm,
                    byte_len: total as u32,
                    imm: Some(imm.imm),
                    invalidated: None,
                    qpn: qp.qpn,
                    src_qp: qp.dest_qpn,
                    solicited: p.solicited,
                };
                self.complete(qp.recv_cq, ready, c, mem);
            }
            qp.resp.msn = psn_add(qp.resp.msn, 1);
        }
        self.ack_after(qp, p, ready)
    }

    /// A receive-side error: complete the receive WQE in progress with `st`, NAK, QP to ERR.
    fn recv_error(&mut self, qp: &mut Qp, st: WcStatus, syn: u8, mem: &mut impl Dma) -> Outcome {
        if let Some(InMsg::Send { wr, off }) = qp.resp.cur.take() {
            let c = Completion {
                wr_id: wr.wr_id,
                status: st,
                opcode: WcOpcode::Recv,
                byte_len: off as u32,
                imm: None,
                invalidated: None,
                qpn: qp.qpn,
                src_qp: qp.dest_qpn,
                solicited: false,
            };
            self.complete(qp.recv_cq, 0, c, mem);
        }
        Outcome::Fatal(syn)
    }

    /// Queue READ responses for `[va, va+len)` starting at PSN `psn`.
    #[allow(clippy::too_many_arguments)]
    fn read_responses(&mut self, qp: &mut Qp, psn: u32, va: u64, rkey: u32, len: u32, at: u64, mem: &mut impl Dma) {
        for r in read_response_packets(psn, len, qp.mtu) {
            let mut payload = vec![0u8; r.len as usize];
            if r.len > 0 {
                match self.mrs.check(rkey, qp.pd, va + r.off, u64::from(r.len), access::REMOTE_READ) {
                    Ok(dma) => {
                        if mem.dma_read(dma, &mut payload).is_err() {
                            self.counters.dma_errors += 1;
                        }
                    }
                    Err(_) => return,
                }
            }
            let ext = if r.aeth {
                ExtHeaders { aeth: Some(AethFields { syndrome: ACK_SYNDROME, msn: qp.resp.msn }), ..ExtHeaders::NONE }
            } else {
                ExtHeaders::NONE
            };
            let ready = self.dma_read_done(at, r.len as usize);
            let bth = BthFields::new(r.opcode, qp.dest_qpn, r.psn);
            self.resp_q.push_back(TxPkt { qpn: qp.qpn, bth, ext, payload, ready, gen: 0, kind: TxKind::Response });
        }
    }

    fn atomic_ack(&mut self, qp: &mut Qp, psn: u32, orig: u64, at: u64) {
        let bth = BthFields::new(Opcode::RcAtomicAcknowledge, qp.dest_qpn, psn);
        let ext = ExtHeaders {
            aeth: Some(AethFields { syndrome: ACK_SYNDROME, msn: qp.resp.msn }),
            atomic_ack_eth: Some(AtomicAckEthFields { orig_remote_data: orig }),
            ..ExtHeaders::NONE
        };
        self.resp_q.push_back(TxPkt {
            qpn: qp.qpn,
            bth,
            ext,
            payload: Vec::new(),
            ready: at,
            gen: 0,
            kind: TxKind::Response,
        });
    }
}
