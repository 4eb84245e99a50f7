//! `roce_sq_fetch`: doorbells and work-queue-entry fetch by DMA.
//!
//! An SQ doorbell carries the 16-bit producer index; the engine extends it against the last
//! one and fetches every new 128-byte SQ WQE from the ring (one DMA read each; the requester
//! may start a WQE once its read completes). RQ WQEs (64 bytes) are fetched when a SEND or
//! WRITE with immediate needs one. A malformed WQE (undefined opcode, `num_sge` out of
//! range, inline data over 64 bytes) completes with `LocQpOpErr` and moves the QP to ERR.
//! Latency: the DMA read plus [`LATENCY`] cycles of decode.

use crate::contract::{RqWqe, SqFlags, SqOpcode, SqWqe, RQ_MAX_SGE, SQ_MAX_SGE};

use super::mem::Dma;
use super::qp::{Qp, SqEntry};
use super::types::*;
use super::Engine;

/// WQE decode latency in cycles.
pub const LATENCY: u64 = 2;

/// Extend a 16-bit index from a doorbell against the free-running one it advances.
pub fn extend16(old: u32, new16: u32) -> u32 {
    old.wrapping_add(new16.wrapping_sub(old) & 0xFFFF)
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
    let sges: Vec<Sge> = w
        .sges()
        .unwrap_or(&[])
        .iter()
        .map(|s| Sge { addr: s.addr, len: s.len, lkey: s.lkey })
        .collect();
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

impl Engine {
    /// SQ_DB: the host posted send WQEs up to producer index `pi` (16 bits).
    pub fn sq_doorbell(&mut self, now: u64, qpn: u32, pi: u32, mem: &mut impl Dma) {
        let Some(mut qp) = self.take_qp(qpn) else { return };
        qp.sq.pi = extend16(qp.sq.pi, pi);
        let mut bad = false;
        if qp.state == QpState::Err {
            self.flush_unfetched_sq(&mut qp, mem);
        } else {
            let fetched = qp.sq.ci.wrapping_add(qp.req.wqes.len() as u32);
            let n = qp.sq.pi.wrapping_sub(fetched).min(qp.sq.size());
            for k in 0..n {
                let idx = fetched.wrapping_add(k);
                let mut b = [0u8; SqWqe::SIZE];
                let read = mem.dma_read(qp.sq.slot(idx, SqWqe::SIZE as u64), &mut b);
                let ready_at = self.dma_read_done(now, SqWqe::SIZE) + LATENCY;
                let (wr, err) = match read.map_err(|_| WcStatus::LocQpOpErr).and_then(|()| decode_send_wqe(&b)) {
                    Ok(wr) => (wr, None),
                    Err(st) => {
                        let wr_id = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
                        let wr = SendWr { wr_id, op: SendOp::Send, signaled: true, solicited: false, fence: false, sges: Vec::new(), inline: None, remote_addr: 0, rkey: 0 };
                        (wr, Some(st))
                    }
                };
                let done = err.is_some();
                qp.req.wqes.push_back(SqEntry { wr, ready_at, first_psn: 0, npkts: 0, started: false, resp_pkts: 0, done, error: err });
                if done {
                    bad = true;
                    break;
                }
            }
        }
        // A malformed WQE completes (in order) with its error, which moves the QP to ERR.
        if bad {
            self.retire(&mut qp, now, mem);
        }
        let state = qp.state;
        self.put_qp(qp);
        if state == QpState::Err {
            self.flush_qp(qpn, mem);
        } else if state == QpState::Rts {
            self.activate(qpn);
        }
    }

    /// RQ_DB: the host posted receive WQEs up to producer index `pi` (16 bits).
    pub fn rq_doorbell(&mut self, qpn: u32, pi: u32, mem: &mut impl Dma) {
        let Some(qp) = self.qp_mut(qpn) else { return };
        qp.rq.pi = extend16(qp.rq.pi, pi);
        if qp.state == QpState::Err {
            self.flush_qp(qpn, mem);
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
        let sges = w.sge[..usize::from(w.num_sge)].iter().map(|s| Sge { addr: s.addr, len: s.len, lkey: s.lkey }).collect();
        Ok(RecvWr { wr_id: w.wr_id, sges })
    }

    /// Complete the posted but not yet fetched send WQEs of a QP in ERR with `WrFlushErr`.
    pub(crate) fn flush_unfetched_sq(&mut self, qp: &mut Qp, mem: &mut impl Dma) {
        while qp.sq.ci != qp.sq.pi {
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
