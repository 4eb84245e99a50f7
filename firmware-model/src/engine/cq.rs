//! `roce_cq`: completion writing (CQE by DMA into the CQ ring, phase bit, arming) and the
//! flush of a QP that entered the error state.
//!
//! A CQE goes to `base + (pi mod size) * 32` with owner bit = the ring's current phase
//! (1 on the first pass, flipping on every wrap), so the host sees new entries without the
//! engine reading a valid bit back. A full ring (`pi - ci == size`) overflows: the CQE is
//! dropped and the CQ is marked (the host must recreate it). Latency: [`LATENCY`] cycles.

use crate::contract::{Cqe, CqeFlags, CqeOpcode, CqeOwner};

use super::mem::Dma;
use super::types::*;
use super::Engine;

/// CQE write latency in cycles (format + DMA write issue).
pub const LATENCY: u64 = 2;

fn cqe_opcode(op: WcOpcode, c: &Completion) -> CqeOpcode {
    match op {
        WcOpcode::Send => CqeOpcode::Send,
        WcOpcode::Write => CqeOpcode::Write,
        WcOpcode::Read => CqeOpcode::Read,
        WcOpcode::CmpSwap => CqeOpcode::AtomicCas,
        WcOpcode::FetchAdd => CqeOpcode::AtomicFaa,
        WcOpcode::RecvWriteImm => CqeOpcode::RecvWriteImm,
        WcOpcode::Recv if c.invalidated.is_some() => CqeOpcode::RecvInv,
        WcOpcode::Recv if c.imm.is_some() => CqeOpcode::RecvImm,
        WcOpcode::Recv => CqeOpcode::Recv,
    }
}

/// The CQE image of a completion written at ring index `pi` of a ring of `2^log_size`.
pub fn encode_cqe(c: &Completion, pi: u32, log_size: u8) -> [u8; Cqe::SIZE] {
    let phase = ((pi >> log_size) & 1) ^ 1;
    let mut flags = CqeFlags::EMPTY;
    if c.imm.is_some() {
        flags = flags.union(CqeFlags::IMM_VALID);
    }
    if c.invalidated.is_some() {
        flags = flags.union(CqeFlags::INV_VALID);
    }
    if c.solicited {
        flags = flags.union(CqeFlags::SOLICITED);
    }
    Cqe {
        wr_id: c.wr_id,
        byte_len: c.byte_len,
        imm_or_inv: c.imm.or(c.invalidated).unwrap_or(0),
        qpn: c.qpn,
        opcode: cqe_opcode(c.opcode, c),
        status: c.status,
        flags,
        owner: if phase == 1 { CqeOwner::PHASE } else { CqeOwner::EMPTY },
        src_qp: c.src_qp,
    }
    .encode()
}

impl Engine {
    /// Write a completion to CQ `cqn`.
    pub(crate) fn complete(&mut self, cqn: u32, at: u64, c: Completion, mem: &mut impl Dma) {
        if self.log_completions {
            self.completion_log.push((at + LATENCY, c));
        }
        let Some(cq) = self.cqs.get_mut(cqn as usize).and_then(Option::as_mut) else { return };
        let r = cq.ring;
        if r.pi.wrapping_sub(r.ci) >= r.size() {
            cq.overflow = true;
            if self.regs.irq_status & super::regs::irq::CQ_ERROR == 0 {
                use crate::contract::regs;
                let info = regs::cq_err_info::CQ.val(cqn & 0x3FFF).unwrap_or(0)
                    | regs::cq_err_info::CAUSE.val(regs::CQ_ERR_OVERRUN).unwrap_or(0);
                self.regs.set_info(regs::CQ_ERR_INFO, info);
                self.regs.irq_status |= super::regs::irq::CQ_ERROR;
            }
            return;
        }
        let img = encode_cqe(&c, r.pi, r.log_size);
        if mem.dma_write(r.slot(r.pi, Cqe::SIZE as u64), &img).is_err() {
            self.counters.dma_errors += 1;
            return;
        }
        cq.ring.pi = r.pi.wrapping_add(1);
        if cq.armed && (!cq.armed_solicited || c.solicited || c.status != WcStatus::Success) {
            self.fire_cq(cqn);
        }
        self.counters.cqes += 1;
    }

    fn fire_cq(&mut self, cqn: u32) {
        if let Some(cq) = self.cqs.get_mut(cqn as usize).and_then(Option::as_mut) {
            cq.armed = false;
            cq.event = true;
            if cq.irq {
                self.regs.irq_status |= super::regs::irq::CQ_EVENT;
            }
        }
    }

    /// CQ_DB: the host consumed CQEs up to `ci`; `arm` requests an event on the next
    /// completion (`solicited`: only a solicited or error one). An arm while CQEs beyond
    /// `ci` already exist fires at once, so "poll until empty, arm, sleep" cannot miss one.
    pub fn cq_doorbell(&mut self, cqn: u32, ci: u32, arm: bool, solicited: bool) {
        let Some(cq) = self.cqs.get_mut(cqn as usize).and_then(Option::as_mut) else { return };
        // 16-bit consumer index from the doorbell, extended against the producer.
        let full = cq.ring.pi.wrapping_sub(cq.ring.pi.wrapping_sub(ci) & 0xFFFF);
        cq.ring.ci = full;
        if arm {
            cq.armed = true;
            cq.armed_solicited = solicited;
            if cq.ring.pi != full {
                self.fire_cq(cqn);
            }
        }
    }

    /// The engine moved QP `qpn` to ERR: report it in QP_ERR_INFO / IRQ_STATUS.QP_ERROR
    /// (the first one since software last cleared the bit).
    pub(crate) fn qp_failed(&mut self, qpn: u32, cause: WcStatus) {
        use crate::contract::regs;
        if self.regs.irq_status & super::regs::irq::QP_ERROR == 0 {
            let info = regs::qp_err_info::QPN.val(qpn & 0xFF_FFFF).unwrap_or(0)
                | regs::qp_err_info::CAUSE.val(u32::from(cause.code())).unwrap_or(0);
            self.regs.set_info(regs::QP_ERR_INFO, info);
            self.regs.irq_status |= super::regs::irq::QP_ERROR;
        }
    }

    /// Take a pending CQ event.
    pub fn take_cq_event(&mut self, cqn: u32) -> bool {
        self.cqs.get_mut(cqn as usize).and_then(Option::as_mut).is_some_and(|cq| std::mem::take(&mut cq.event))
    }

    /// A QP entered ERR: complete everything outstanding with `WrFlushErr` (send side: the
    /// fetched requests and those still in the ring; receive side: every posted WQE).
    pub(crate) fn flush_qp(&mut self, qpn: u32, mem: &mut impl Dma) {
        let Some(mut qp) = self.take_qp(qpn) else { return };
        let now = 0;
        // Requests already fetched.
        while let Some(e) = qp.req.wqes.pop_front() {
            let c = Completion {
                wr_id: e.wr.wr_id,
                status: e.error.unwrap_or(WcStatus::WrFlushErr),
                opcode: match e.wr.op {
                    SendOp::Write | SendOp::WriteImm(_) => WcOpcode::Write,
                    SendOp::Read => WcOpcode::Read,
                    SendOp::CmpSwap { .. } => WcOpcode::CmpSwap,
                    SendOp::FetchAdd { .. } => WcOpcode::FetchAdd,
                    _ => WcOpcode::Send,
                },
                byte_len: 0,
                imm: None,
                invalidated: None,
                qpn,
                src_qp: qp.dest_qpn,
                solicited: false,
            };
            self.complete(qp.send_cq, now, c, mem);
            qp.sq.ci = qp.sq.ci.wrapping_add(1);
        }
        qp.req.cur = 0;
        qp.req.cur_pkt = 0;
        qp.req.timer = None;
        qp.req.outstanding_rd = 0;
        // Requests posted but not fetched.
        self.flush_unfetched_sq(&mut qp, mem);
        // Receive WQEs.
        while qp.rq.ci != qp.rq.pi {
            match self.fetch_recv_wqe(&mut qp, mem) {
                Ok(wr) => {
                    let c = Completion {
                        wr_id: wr.wr_id,
                        status: WcStatus::WrFlushErr,
                        opcode: WcOpcode::Recv,
                        byte_len: 0,
                        imm: None,
                        invalidated: None,
                        qpn,
                        src_qp: qp.dest_qpn,
                        solicited: false,
                    };
                    self.complete(qp.recv_cq, now, c, mem);
                }
                Err(_) => break,
            }
        }
        qp.resp.cur = None;
        self.put_qp(qp);
    }
}
