//! Doorbells and work-queue-entry fetch by DMA (in the HDL, steps of `roce_req`'s visits and
//! of `roce_resp`'s RQ WQE reads).
//!
//! An SQ doorbell carries the 16-bit producer index; the engine extends it against the last
//! one and puts the QP on the requester's ring. The requester reads the 128-byte SQ WQEs
//! ahead of the send index, up to `2^LOG_WQE_BATCH` consecutive ones in one DMA read, into
//! a prefetch store with a stretch per QP (`req::Engine::req_visit`, `qp::LOG_WQE_STORE`), at
//! most the QP's send window (`ReqState::win_size`) fetched and not completed.
//! RQ WQEs (64 bytes) are fetched when a SEND or WRITE with immediate needs one. A malformed
//! WQE (undefined opcode, `num_sge` out of range, inline data over 64 bytes, a gather list
//! that does not add up to the length) completes in order with `LocQpOpErr` (`LocLenErr`)
//! and moves the QP to ERR. Latency: the DMA read plus [`LATENCY`] cycles of decode.

use crate::contract::{RqWqe, SqFlags, SqOpcode, SqWqe, RQ_MAX_SGE, SQ_MAX_SGE};

use super::mem::Dma;
use super::qp_ctx::{wqe_store_slot, Body, Qp, SqEntry, StoreEntry, LOG_SQ_WIN};
use super::types::*;
use super::Engine;

/// WQE decode latency in cycles.
pub const LATENCY: u64 = 2;

/// Extend a 16-bit index from a doorbell against the free-running one it advances.
pub fn extend16(old: u32, new16: u32) -> u32 {
    old.wrapping_add(new16.wrapping_sub(old) & 0xFFFF)
}

/// Extend an SQ doorbell's 16-bit producer index against the last one: a PI behind it (by
/// less than 2^15) is a stale doorbell (an `SQ_DB` overtaken by an inline doorbell) and
/// leaves it.
pub fn advance_sq16(old: u32, new16: u32) -> u32 {
    let d = new16.wrapping_sub(old) & 0xFFFF;
    if d > 0x8000 {
        old
    } else {
        old.wrapping_add(d)
    }
}

/// What an inline doorbell (a write to the BlueFlame window) did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BfOutcome {
    /// No such QP: dropped.
    NoQp,
    /// A doorbell only: the WQE will be read from the ring.
    Doorbell,
    /// The WQE was taken from the write (fetched into the send window); `malformed`: its
    /// status when it cannot be sent (the completer completes it in order).
    Taken {
        /// Why the WQE is malformed.
        malformed: Option<WcStatus>,
    },
}

/// Byte offset of `SqWqe.bf_db`.
fn bf_db_at() -> usize {
    SqWqe::LAYOUT.field("bf_db").map_or(48, |f| f.offset)
}

/// The (QPN, 16-bit PI) of an inline doorbell's WQE image (its `bf_db`, an SQ_DB value).
pub fn bf_doorbell(wqe: &[u8; SqWqe::SIZE]) -> (u32, u32) {
    let at = bf_db_at();
    let db = u32::from_le_bytes([wqe[at], wqe[at + 1], wqe[at + 2], wqe[at + 3]]);
    (db >> 16, db & 0xFFFF)
}

/// Set the `bf_db` of a WQE image: the inline doorbell of QP `qpn` to producer index `pi`.
pub fn set_bf_doorbell(wqe: &mut [u8; SqWqe::SIZE], qpn: u32, pi: u32) {
    let at = bf_db_at();
    wqe[at..at + 4].copy_from_slice(&((pi & 0xFFFF) | (qpn << 16)).to_le_bytes());
}

/// Decode an SQ WQE into a send work request.
pub fn decode_send_wqe(b: &[u8]) -> Result<SendWr, WcStatus> {
    let w = SqWqe::decode(b).map_err(|_| WcStatus::LocQpOpErr)?;
    let op = match w.opcode {
        SqOpcode::Send => SendOp::Send,
        SqOpcode::SendImm => SendOp::SendImm(w.imm_or_inv),
        SqOpcode::SendInv => SendOp::SendInv(w.imm_or_inv),
        SqOpcode::Write => SendOp::Write,
        SqOpcode::WriteImm => SendOp::WriteImm(w.imm_or_inv),
        SqOpcode::Read => SendOp::Read,
        SqOpcode::AtomicCas => SendOp::CmpSwap { compare: w.compare_add, swap: w.swap },
        SqOpcode::AtomicFaa => SendOp::FetchAdd { add: w.compare_add },
    };
    let inline = w.flags.contains(SqFlags::INLINE);
    if (inline && (w.total_len as usize > crate::contract::MAX_INLINE || op.is_read_like()))
        || (!inline && usize::from(w.num_sge) > SQ_MAX_SGE)
    {
        return Err(WcStatus::LocQpOpErr);
    }
    let sges: Vec<Sge> =
        w.sges().unwrap_or(&[]).iter().map(|s| Sge { addr: s.addr, len: s.len, lkey: s.lkey }).collect();
    let wr = SendWr {
        wr_id: w.wr_id,
        op,
        signaled: w.flags.contains(SqFlags::SIGNALED),
        solicited: w.flags.contains(SqFlags::SOLICITED),
        fence: w.flags.contains(SqFlags::FENCE),
        inline: w.inline_payload().map(<[u8]>::to_vec),
        sges,
        remote_addr: w.remote_addr,
        rkey: w.rkey,
    };
    // The gather list must cover the stated length; atomics need 8 bytes of buffer.
    let have: u64 = wr.sges.iter().map(|s| u64::from(s.len)).sum();
    if !inline && !op.is_atomic() && have != u64::from(w.total_len) {
        return Err(WcStatus::LocLenErr);
    }
    if op.is_atomic() && (have < 8 || w.remote_addr % 8 != 0) {
        return Err(WcStatus::LocQpOpErr);
    }
    Ok(wr)
}

/// A WQE as the requester fetched it: the request, or why it is malformed (the completion
/// then carries `wr_id` and this status).
pub fn fetch_decode(b: &[u8], read_ok: bool) -> Result<SendWr, (u64, WcStatus)> {
    let wr_id = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
    if !read_ok {
        return Err((wr_id, WcStatus::LocQpOpErr));
    }
    decode_send_wqe(b).map_err(|st| (wr_id, st))
}

/// The send window entry's request of a fetched WQE and its error: a malformed one stands as
/// a signaled SEND of length 0 carrying its `wr_id`.
pub fn fetched_wr(b: &[u8], read_ok: bool) -> (SendWr, Option<WcStatus>) {
    match fetch_decode(b, read_ok) {
        Ok(wr) => (wr, None),
        Err((wr_id, st)) => {
            let wr = SendWr {
                wr_id,
                op: SendOp::Send,
                signaled: true,
                solicited: false,
                fence: false,
                sges: Vec::new(),
                inline: None,
                remote_addr: 0,
                rkey: 0,
            };
            (wr, Some(st))
        }
    }
}

impl Engine {
    /// SQ_DB: the host posted send WQEs up to producer index `pi` (16 bits). The requester
    /// fetches them as it gets to them (`req::fetch`); a doorbell for a QP in ERR flushes
    /// what it posted (the completer's flush of the unfetched WQEs).
    pub fn sq_doorbell(&mut self, _now: u64, qpn: u32, pi: u32, mem: &mut impl Dma) {
        let Some(qp) = self.qp_mut(qpn) else { return };
        qp.sq.pi = advance_sq16(qp.sq.pi, pi);
        let state = qp.state;
        if state == QpState::Err {
            let Some(mut qp) = self.take_qp(qpn) else { return };
            let pi = qp.sq.pi;
            self.flush_unfetched_sq(&mut qp, pi, mem);
            self.put_qp(qp);
        } else if state == QpState::Rts {
            self.activate(qpn);
        }
    }

    /// An inline doorbell: `wqe` is the 128-byte image written to the BlueFlame window, its
    /// `bf_db` the SQ_DB value. The WQE is taken from it (fetched into the send window and the
    /// prefetch store, ready [`LATENCY`] cycles later) when it is exactly the next one to
    /// fetch: the QP is in RTS (or SQD), the doorbell advances PI by one, every WQE posted
    /// before it was fetched and has arrived, the window has room against the consumer index
    /// the last visit saw, it is less than `2^LOG_SQ_WIN` ahead of the send index (the QP's
    /// stretch of the store), and its store entry is not being read. Then the doorbell
    /// ([`Engine::sq_doorbell`]). The caller runs the completer on a malformed WQE taken
    /// ([`Engine::bf_write`] does).
    pub fn sq_bf(&mut self, now: u64, wqe: &[u8; SqWqe::SIZE], mem: &mut impl Dma) -> BfOutcome {
        let (qpn, pi) = bf_doorbell(wqe);
        let Some(mut qp) = self.take_qp(qpn) else { return BfOutcome::NoQp };
        let idx = qp.sq.pi;
        let slot = wqe_store_slot(qpn, idx);
        let r = &qp.req;
        let take = matches!(qp.state, QpState::Rts | QpState::Sqd)
            && pi.wrapping_sub(idx) & 0xFFFF == 1
            && r.fetched == idx
            && r.fetch_ready_at <= now
            && r.fetched.wrapping_sub(r.ci_seen) & 0xFFFF < r.win_size()
            && r.fetched.wrapping_sub(r.cur) & 0xFFFF < 1 << LOG_SQ_WIN
            && self.wqe_store[slot].is_none_or(|e| e.body.ready_at <= now);
        let mut out = BfOutcome::Doorbell;
        if take {
            let (wr, error) = fetched_wr(wqe, true);
            qp.req.win.push_back(SqEntry { wr, first_psn: 0, npkts: 0, error });
            let ready_at = now + LATENCY;
            self.wqe_store[slot] = Some(StoreEntry { qpn, body: Body { idx, ready_at } });
            qp.req.fetched = idx.wrapping_add(1);
            qp.req.fetch_ready_at = ready_at;
            out = BfOutcome::Taken { malformed: error };
        }
        self.put_qp(qp);
        self.sq_doorbell(now, qpn, pi, mem);
        out
    }

    /// A write of `wqe` to the BlueFlame window ([`Engine::sq_bf`]), with the completer's
    /// turn on a malformed WQE taken. Ignored while CTRL.ENABLE is clear.
    pub fn bf_write(&mut self, now: u64, wqe: &[u8; SqWqe::SIZE], mem: &mut impl Dma) -> BfOutcome {
        if !self.regs.enabled {
            return BfOutcome::NoQp;
        }
        let out = self.sq_bf(now, wqe, mem);
        if let BfOutcome::Taken { malformed: Some(_) } = out {
            if let Some(mut qp) = self.take_qp(bf_doorbell(wqe).0) {
                self.comp_kick(&mut qp, now, mem);
                self.put_qp(qp);
            }
        }
        out
    }

    /// RQ_DB: the host posted receive WQEs up to producer index `pi` (16 bits).
    pub fn rq_doorbell(&mut self, qpn: u32, pi: u32, mem: &mut impl Dma) {
        let Some(qp) = self.qp_mut(qpn) else { return };
        qp.rq.pi = extend16(qp.rq.pi, pi);
        if qp.state == QpState::Err {
            self.flush_qp(qpn, mem);
        } else if let Some(qp) = self.take_qp(qpn) {
            self.rq_prefetch_doorbell(&qp);
            self.put_qp(qp);
        }
    }

    /// Take the next receive WQE of `qp` (the caller checked the RQ is not empty).
    pub(crate) fn fetch_recv_wqe(&mut self, qp: &mut Qp, mem: &mut impl Dma) -> Result<RecvWr, WcStatus> {
        let mut b = [0u8; RqWqe::SIZE];
        let slot = qp.rq.slot(qp.rq.ci, RqWqe::SIZE as u64);
        qp.rq.ci = qp.rq.ci.wrapping_add(1);
        if mem.dma_read(slot, &mut b).is_err() {
            self.counters.dma_errors += 1;
            return Err(WcStatus::LocQpOpErr);
        }
        let w = RqWqe::decode(&b).map_err(|_| WcStatus::LocQpOpErr)?;
        if usize::from(w.num_sge) > RQ_MAX_SGE {
            return Err(WcStatus::LocQpOpErr);
        }
        let sges =
            w.sge[..usize::from(w.num_sge)].iter().map(|s| Sge { addr: s.addr, len: s.len, lkey: s.lkey }).collect();
        Ok(RecvWr { wr_id: w.wr_id, sges })
    }
}
