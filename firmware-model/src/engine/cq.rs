//! `roce_cq`: completion writing (CQE by DMA into the CQ ring, phase bit, arming) and the
//! flush of a QP that entered the error state.
//!
//! A CQE goes to `base + (pi mod size) * 32` with owner bit = the ring's current phase
//! (1 on the first pass, flipping on every wrap), so the host sees new entries without the
//! engine reading a valid bit back. A full ring (`pi - ci == size`) overflows: the CQE is
//! dropped and the CQ is marked (the host must recreate it). Latency: [`LATENCY`] cycles.

use crate::contract::{CmdErrorCode, CmdOpcode, CqCtx, CqFlags, CqState, Cqe, CqeFlags, CqeOpcode, CqeOwner};

use super::qp_ctx::Ring;
use super::Cq;

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

/// What posting a CQE to a CQ did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqPost {
    /// Written; `fired`: an arm fired (`irq`: and the CQ raises CQ_EVENT).
    Written {
        /// An arm fired.
        fired: bool,
        /// The CQ has CqFlags.IRQ_ENABLE.
        irq: bool,
    },
    /// Dropped; `cause` is the CQ_ERR_INFO cause (`CQ_ERR_OVERRUN`, `CQ_ERR_INVALID`).
    Dropped {
        /// CQ_ERR_INFO.CAUSE.
        cause: u32,
    },
    /// The DMA write failed; nothing changed.
    DmaFailed,
}

/// Post the CQE image `img` (its owner byte is set here) to CQ `cqn` of `cqs`, writing it
/// with `write(addr, bytes)` (false = the write failed). An invalid or out-of-range CQ drops
/// it (cause INVALID); so does an overrun CQ, which stays overrun until CQ_WRITE; a full
/// ring overruns the CQ (cause OVERRUN).
pub fn cq_post(
    cqs: &mut [Option<Cq>],
    cqn: u32,
    img: &[u8; Cqe::SIZE],
    write: impl FnOnce(u64, &[u8]) -> bool,
) -> CqPost {
    use crate::contract::regs::{CQ_ERR_INVALID, CQ_ERR_OVERRUN};
    let Some(cq) = cqs.get_mut(cqn as usize).and_then(Option::as_mut) else {
        return CqPost::Dropped { cause: CQ_ERR_INVALID };
    };
    let r = cq.ring;
    if cq.overflow || r.pi.wrapping_sub(r.ci) >= r.size() {
        cq.overflow = true;
        return CqPost::Dropped { cause: CQ_ERR_OVERRUN };
    }
    let mut img = *img;
    let phase = ((r.pi >> r.log_size) & 1) ^ 1;
    img[OWNER_OFF] = if phase == 1 { CqeOwner::PHASE.bits() } else { 0 };
    if !write(r.slot(r.pi, Cqe::SIZE as u64), &img) {
        return CqPost::DmaFailed;
    }
    cq.ring.pi = r.pi.wrapping_add(1);
    let solicited = img[FLAGS_OFF] & CqeFlags::SOLICITED.bits() != 0;
    let error = img[STATUS_OFF] != 0;
    let fired = cq.armed && (!cq.armed_solicited || solicited || error);
    if fired {
        cq.armed = false;
        cq.event = true;
    }
    CqPost::Written { fired, irq: cq.irq }
}

/// Byte offsets in a CQE image.
const OWNER_OFF: usize = 23;
const FLAGS_OFF: usize = 22;
const STATUS_OFF: usize = 21;

/// CQ_DB on `cqs`: the host consumed up to the 16-bit `ci`; `arm` requests one event.
/// Returns `Some(irq)` when the arm fired at once (entries beyond `ci` exist and the arm is
/// not solicited-only). Invalid CQs ignore doorbells.
pub fn cq_db(cqs: &mut [Option<Cq>], cqn: u32, ci: u32, arm: bool, solicited: bool) -> Option<bool> {
    let cq = cqs.get_mut(cqn as usize).and_then(Option::as_mut)?;
    // 16-bit consumer index from the doorbell, extended against the producer.
    let full = cq.ring.pi.wrapping_sub(cq.ring.pi.wrapping_sub(ci) & 0xFFFF);
    cq.ring.ci = full;
    if arm {
        cq.armed = true;
        cq.armed_solicited = solicited;
        if cq.ring.pi != full && !solicited {
            cq.armed = false;
            cq.event = true;
            return Some(cq.irq);
        }
    }
    None
}

/// CQ_WRITE / CQ_READ on `cqs` with the command's staging data: `BadAttr` if `data` is not
/// a valid [`CqCtx`] (CQ_WRITE), `BadIndex` outside the table, `BadOpcode` for any other
/// command. CQ_READ returns the context image with the engine state (indices as 16 bits,
/// CqState); all zero for an invalid CQ.
pub fn cq_command(
    cqs: &mut [Option<Cq>],
    op: CmdOpcode,
    index: u32,
    data: &[u8],
) -> Result<Option<Vec<u8>>, CmdErrorCode> {
    match op {
        CmdOpcode::CqWrite => {
            let c = CqCtx::decode(data).map_err(|_| CmdErrorCode::BadAttr)?;
            let slot = cqs.get_mut(index as usize).ok_or(CmdErrorCode::BadIndex)?;
            *slot = c.valid.then(|| Cq {
                ring: Ring { base: c.base, log_size: c.log_size, pi: 0, ci: 0 },
                irq: c.flags.contains(CqFlags::IRQ_ENABLE),
                armed: false,
                armed_solicited: false,
                event: false,
                overflow: false,
            });
            Ok(None)
        }
        CmdOpcode::CqRead => {
            let slot = cqs.get(index as usize).ok_or(CmdErrorCode::BadIndex)?;
            let c = match slot {
                Some(cq) => {
                    let mut state = CqState::EMPTY;
                    if cq.armed {
                        state = state.union(CqState::ARMED);
                    }
                    if cq.armed && cq.armed_solicited {
                        state = state.union(CqState::ARMED_SOLICITED);
                    }
                    if cq.overflow {
                        state = state.union(CqState::OVERRUN);
                    }
                    CqCtx {
                        base: cq.ring.base,
                        log_size: cq.ring.log_size,
                        flags: if cq.irq { CqFlags::IRQ_ENABLE } else { CqFlags::EMPTY },
                        valid: true,
                        pi: cq.ring.pi as u16,
                        ci: cq.ring.ci as u16,
                        state,
                    }
                }
                None => CqCtx::default(),
            };
            Ok(Some(c.encode().to_vec()))
        }
        _ => Err(CmdErrorCode::BadOpcode),
    }
}

impl Engine {
    /// Write a completion to CQ `cqn`.
    pub(crate) fn complete(&mut self, cqn: u32, at: u64, c: Completion, mem: &mut impl Dma) {
        if self.log_completions {
            self.completion_log.push((at + LATENCY, c));
        }
        let img = encode_cqe(&c, 0, 0);
        self.dma_write_done(at + LATENCY, img.len());
        match cq_post(&mut self.cqs, cqn, &img, |a, d| mem.dma_write(a, d).is_ok()) {
            CqPost::Written { fired, irq } => {
                if fired && irq {
                    self.regs.irq_status |= super::regs::irq::CQ_EVENT;
                }
                self.counters.cqes += 1;
            }
            CqPost::Dropped { cause } => {
                if self.regs.irq_status & super::regs::irq::CQ_ERROR == 0 {
                    use crate::contract::regs;
                    let info = regs::cq_err_info::CQ.val(cqn & 0x3FFF).unwrap_or(0)
                        | regs::cq_err_info::CAUSE.val(cause).unwrap_or(0);
                    self.regs.set_info(regs::CQ_ERR_INFO, info);
                }
                self.regs.irq_status |= super::regs::irq::CQ_ERROR;
            }
            CqPost::DmaFailed => self.counters.dma_errors += 1,
        }
    }

    /// CQ_DB: the host consumed CQEs up to `ci`; `arm` requests an event on the next
    /// completion (`solicited`: only a solicited or error one). A non-solicited arm while
    /// CQEs beyond `ci` already exist fires at once, so "poll until empty, arm, sleep"
    /// cannot miss one.
    pub fn cq_doorbell(&mut self, cqn: u32, ci: u32, arm: bool, solicited: bool) {
        if cq_db(&mut self.cqs, cqn, ci, arm, solicited) == Some(true) {
            self.regs.irq_status |= super::regs::irq::CQ_EVENT;
        }
    }

    /// The engine moved QP `qpn` to ERR: report it in QP_ERR_INFO / IRQ_STATUS.QP_ERROR
    /// (the first one since software last cleared the bit).
    pub(crate) fn qp_failed(&mut self, qpn: u32, cause: WcStatus) {
        if self.trace_events {
            self.events.push(super::EngineEvent::QpError { qpn, cause: cause.code() });
        }
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
        self.rq_prefetch_forget(qpn);
        // The send queue (roce_comp's flush).
        let rv = super::comp::ReqView::of(&qp);
        self.comp_flush(&mut qp, &rv, mem);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::regs::{CQ_ERR_INVALID, CQ_ERR_OVERRUN};

    fn table() -> Vec<Option<Cq>> {
        let mut cqs = vec![None; 4];
        let c = CqCtx { base: 0x10_000, log_size: 1, flags: CqFlags::IRQ_ENABLE, valid: true, ..CqCtx::default() };
        assert_eq!(cq_command(&mut cqs, CmdOpcode::CqWrite, 2, &c.encode()), Ok(None));
        cqs
    }

    fn read(cqs: &mut [Option<Cq>], i: u32) -> CqCtx {
        let img = cq_command(cqs, CmdOpcode::CqRead, i, &[]).unwrap().unwrap();
        CqCtx::decode(&img).unwrap()
    }

    #[test]
    fn phase_overrun_is_sticky_and_invalid_cq_reported() {
        let mut cqs = table();
        let mut at = Vec::new();
        let img = [0u8; Cqe::SIZE];
        for _ in 0..2 {
            assert!(matches!(
                cq_post(&mut cqs, 2, &img, |a, d| {
                    at.push((a, d[23]));
                    true
                }),
                CqPost::Written { .. }
            ));
        }
        assert_eq!(at, vec![(0x10_000, 1), (0x10_020, 1)]);
        assert_eq!(cq_post(&mut cqs, 2, &img, |_, _| true), CqPost::Dropped { cause: CQ_ERR_OVERRUN });
        // the host consumes everything: still overrun until rewritten
        assert_eq!(cq_db(&mut cqs, 2, 2, false, false), None);
        assert_eq!(cq_post(&mut cqs, 2, &img, |_, _| true), CqPost::Dropped { cause: CQ_ERR_OVERRUN });
        assert!(read(&mut cqs, 2).state.contains(CqState::OVERRUN));
        assert_eq!(cq_post(&mut cqs, 1, &img, |_, _| true), CqPost::Dropped { cause: CQ_ERR_INVALID });
        assert_eq!(cq_post(&mut cqs, 99, &img, |_, _| true), CqPost::Dropped { cause: CQ_ERR_INVALID });
        assert_eq!(cq_command(&mut cqs, CmdOpcode::CqRead, 4, &[]), Err(CmdErrorCode::BadIndex));
    }

    #[test]
    fn arming() {
        let mut cqs = table();
        let img = [0u8; Cqe::SIZE];
        cq_post(&mut cqs, 2, &img, |_, _| true);
        // solicited-only arm with an entry pending does not fire at once, a plain one does
        assert_eq!(cq_db(&mut cqs, 2, 0, true, true), None);
        assert!(read(&mut cqs, 2).state.contains(CqState::ARMED_SOLICITED));
        assert_eq!(cq_db(&mut cqs, 2, 0, true, false), Some(true));
        assert_eq!(read(&mut cqs, 2).state, CqState::EMPTY);
        // armed solicited: an unsolicited success does not fire, an error does
        assert_eq!(cq_db(&mut cqs, 2, 1, true, true), None);
        assert_eq!(cq_post(&mut cqs, 2, &img, |_, _| true), CqPost::Written { fired: false, irq: true });
        let mut err = img;
        err[21] = 5;
        assert_eq!(cq_db(&mut cqs, 2, 2, false, false), None);
        assert_eq!(cq_post(&mut cqs, 2, &err, |_, _| true), CqPost::Written { fired: true, irq: true });
        let c = read(&mut cqs, 2);
        assert_eq!((c.pi, c.ci, c.valid, c.flags), (3, 2, true, CqFlags::IRQ_ENABLE));
    }
}
