//! `roce_req`: the RC requester — segmentation to the path MTU, PSN assignment, AckReq,
//! outstanding-READ limit, unacknowledged window, go-back-N rewind, local ACK timeout and
//! RNR back-off, and the DCQCN rate limiter's pacing.
//!
//! A packet's payload is gathered by DMA (`roce_mr_check` on each SGE's L_Key); the packet
//! is ready when its DMA read completes. Latency: [`LATENCY`] cycles plus the DMA read.

use crate::wire::{AtomicEthFields, BthFields, ExtHeaders, IethFields, ImmDtFields, Opcode, RethFields};

use super::dcqcn;
use super::mem::Dma;
use super::mr::walk_sges;
use super::qp::Qp;
use super::types::*;
use super::{Engine, TxKind, TxPkt};

/// Requester pipeline latency in cycles (WQE decode, header fields).
pub const LATENCY: u64 = 3;

/// Why a QP cannot send now.
pub(crate) enum Blocked {
    /// Nothing to do until something external happens (doorbell, ACK).
    Idle,
    /// Try again at this cycle.
    Until(u64),
    /// A local error (bad L_Key, short buffers): the QP must go to ERR.
    Failed,
}

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

impl Engine {
    /// Local ACK timeout in cycles (None = infinite).
    pub(crate) fn ack_timeout(&self, qp: &Qp) -> Option<u64> {
        (qp.timeout != 0).then(|| self.cfg.tick_cycles << qp.timeout.min(31))
    }

    /// Whether `qp` can generate a request packet at `now` (the conditions `req_next` checks).
    pub(crate) fn req_ready(&self, qp: &Qp, now: u64) -> Result<(), Blocked> {
        if qp.state != QpState::Rts {
            return Err(Blocked::Idle);
        }
        let r = &qp.req;
        let Some(e) = r.wqes.get(r.cur) else { return Err(Blocked::Idle) };
        if e.done {
            // a malformed WQE waiting for its turn to complete with an error
            return Err(Blocked::Idle);
        }
        if psn_diff(r.next_psn, r.una_psn) >= self.cfg.max_unacked as i32 {
            return Err(Blocked::Idle);
        }
        if !e.started {
            let earlier_rd = r.wqes.iter().take(r.cur).any(|w| w.wr.op.is_read_like() && !w.done);
            if e.wr.fence && earlier_rd {
                return Err(Blocked::Idle);
            }
            if e.wr.op.is_read_like() && r.outstanding_rd >= u32::from(qp.max_rd_atomic.max(1)) {
                return Err(Blocked::Idle);
            }
        }
        let wait = r.rnr_until.max(e.ready_at);
        if wait > now {
            return Err(Blocked::Until(wait));
        }
        // roce_dcqcn pacing: the last packet is paid for at the current rate
        if !dcqcn::rp_allowed(&qp.cc.rp, now) {
            return Err(Blocked::Until(dcqcn::rp_wake(&qp.cc.rp, self.dcqcn_scan(), qp.qpn).max(now + 1)));
        }
        Ok(())
    }

    /// Generate the next request packet of `qp`, or say why it cannot.
    pub(crate) fn req_next(&mut self, qp: &mut Qp, now: u64, mem: &mut impl Dma) -> Result<TxPkt, Blocked> {
        self.req_ready(qp, now)?;
        let mtu = qp.mtu;
        let next_psn = qp.req.next_psn;
        let cur = qp.req.cur;
        let e = &mut qp.req.wqes[cur];
        if !e.started {
            e.started = true;
            e.first_psn = next_psn;
            e.npkts = npkts(&e.wr, mtu);
            if e.wr.op.is_read_like() {
                qp.req.outstanding_rd += 1;
            }
        }
        let e = &qp.req.wqes[cur];
        let wr = e.wr.clone();
        let (first_psn, n) = (e.first_psn, e.npkts);
        let i = qp.req.cur_pkt;
        let psn = psn_add(first_psn, i);
        let len = wr.len();
        let mut bth = BthFields::new(seg_opcode(wr.op, i, n), qp.dest_qpn, psn);
        let mut ext = ExtHeaders::NONE;
        let mut payload = Vec::new();
        let mut ready = now + LATENCY;
        match wr.op {
            SendOp::Read => {
                let off = u64::from(i) * u64::from(mtu);
                ext.reth = Some(RethFields {
                    va: wr.remote_addr + off,
                    rkey: wr.rkey,
                    dma_len: (len - off.min(len)) as u32,
                });
                bth.ack_req = true;
                qp.req.next_psn = psn_add(first_psn, n);
                qp.req.cur += 1;
                qp.req.cur_pkt = 0;
            }
            SendOp::CmpSwap { compare, swap } => {
                ext.atomic_eth = Some(AtomicEthFields { va: wr.remote_addr, rkey: wr.rkey, swap_add: swap, compare });
                bth.ack_req = true;
                qp.req.next_psn = psn_add(psn, 1);
                qp.req.cur += 1;
            }
            SendOp::FetchAdd { add } => {
                ext.atomic_eth = Some(AtomicEthFields { va: wr.remote_addr, rkey: wr.rkey, swap_add: add, compare: 0 });
                bth.ack_req = true;
                qp.req.next_psn = psn_add(psn, 1);
                qp.req.cur += 1;
            }
            _ => {
                let off = u64::from(i) * u64::from(mtu);
                let plen = (len - off).min(u64::from(mtu)) as usize;
                payload = vec![0u8; plen];
                if let Some(d) = &wr.inline {
                    payload.copy_from_slice(&d[off as usize..off as usize + plen]);
                } else {
                    let buf = &mut payload;
                    let r = walk_sges(&self.mrs, qp.pd, &wr.sges, off, plen as u64, 0, |dma, range| {
                        mem.dma_read(dma, &mut buf[range]).map_err(|_| WcStatus::LocAccessErr)
                    });
                    if let Err(st) = r {
                        qp.req.wqes[cur].error = Some(if st == WcStatus::LocLenErr { WcStatus::LocLenErr } else { WcStatus::LocProtErr });
                        qp.req.wqes[cur].done = true;
                        return Err(Blocked::Failed);
                    }
                    ready = self.dma_read_done(now, plen) + LATENCY;
                }
                let last = i + 1 == n;
                if i == 0 && wr.op.is_rdma() {
                    ext.reth = Some(RethFields { va: wr.remote_addr, rkey: wr.rkey, dma_len: len as u32 });
                }
                if last {
                    match wr.op {
                        SendOp::SendImm(v) | SendOp::WriteImm(v) => ext.immdt = Some(ImmDtFields { imm: v }),
                        SendOp::SendInv(k) => ext.ieth = Some(IethFields { rkey: k }),
                        _ => {}
                    }
                    // SE is defined on the last packet of SENDs and of WRITEs with immediate.
                    bth.solicited = wr.solicited && (!wr.op.is_rdma() || matches!(wr.op, SendOp::WriteImm(_)));
                }
                bth.ack_req = last || (i + 1) % self.cfg.ack_every.max(1) == 0;
                qp.req.next_psn = psn_add(psn, 1);
                if last {
                    qp.req.cur += 1;
                    qp.req.cur_pkt = 0;
                } else {
                    qp.req.cur_pkt += 1;
                }
            }
        }
        if psn_diff(psn, qp.req.max_sent) < 0 {
            self.counters.retransmits += 1;
        } else {
            qp.req.max_sent = qp.req.next_psn;
        }
        if qp.req.timer.is_none() {
            qp.req.timer = self.ack_timeout(qp).map(|t| now + t);
        }
        // roce_dcqcn: the packet's bytes (payload + 80 for headers, ICRC, FCS, preamble and
        // gap) toward the pacing debt and the byte counter
        let bytes = u32::try_from(payload.len() + 80).unwrap_or(u32::MAX).min(0xFFFF);
        let (cfg, scan) = (self.dcqcn, self.dcqcn_scan());
        dcqcn::rp_sent(&mut qp.cc.rp, &cfg, scan, qp.qpn, now, bytes, &mut self.dcqcn_events);
        Ok(TxPkt { qpn: qp.qpn, bth, ext, payload, ready, gen: qp.req.gen, kind: TxKind::Request })
    }

    /// Go back to PSN `psn`: the next packet generated is the one that carries it.
    pub(crate) fn rewind(&mut self, qp: &mut Qp, psn: u32) {
        let r = &mut qp.req;
        let Some(i) = r.wqes.iter().position(|e| e.started && psn_diff(psn, e.first_psn) >= 0 && psn_diff(psn, psn_add(e.first_psn, e.npkts)) < 0) else {
            return;
        };
        r.cur = i;
        r.cur_pkt = psn_diff(psn, r.wqes[i].first_psn) as u32;
        r.next_psn = psn;
        r.gen = r.gen.wrapping_add(1);
        r.rewound_to = Some(psn);
    }
}
