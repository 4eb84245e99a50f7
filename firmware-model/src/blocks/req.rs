//! Model of `hdl/rtl/roce_req.sv`: the engine model's requester itself
//! ([`Engine::req_visit`]), driven by what the HDL block read. The lockstep test runs an
//! [`Engine`] beside the block and plays its neighbours from it: at the start of each of the
//! block's visits (its read of the completer's state on `m_comp`) it runs one model visit
//! to the same QP with the same completer state ([`visit`]) and the pacing answer it will
//! give, and expects the visit's actions from the block, in order: the WQE reads, the
//! packet (descriptor [`desc_of`] and payload), the bytes reported to `roce_dcqcn`, a local
//! error. A WQE body counts as held only once the block took its data ([`arrived`]). The
//! completer is the engine's own (responses from a peer engine), its state goes to the block
//! through `m_comp` and `s_wake`. Operation-level, not cycle-level.

use crate::contract::records::{CompRd, ReqRd, SqWin, TxDesc, TxDescFlags};
use crate::contract::{CqeStatus, SqFlags, SqOpcode};
use crate::engine::comp::ReqView;
use crate::engine::fetch::{bf_doorbell, BfOutcome};
use crate::engine::qp_ctx::{wqe_store_slot, Qp, RewindReq, SqEntry};
use crate::engine::req::{CompView, ReqVisit};
use crate::engine::{Dma, Engine, SendOp, TxPkt, WcStatus};
use crate::wire::{AtomicEthFields, BthFields, ExtHeaderKind, ExtHeaders, IethFields, ImmDtFields, Opcode, RethFields};

/// The `tx_desc_t` of a request packet.
pub fn desc_of(p: &TxPkt) -> TxDesc {
    let mut flags = TxDescFlags::EMPTY;
    if p.bth.solicited {
        flags = flags.union(TxDescFlags::SE);
    }
    if p.bth.ack_req {
        flags = flags.union(TxDescFlags::ACK_REQ);
    }
    let mut d = TxDesc {
        qpn: p.qpn,
        opcode: p.bth.opcode as u8,
        flags,
        payload_len: p.payload.len() as u16,
        psn: p.bth.psn,
        ..TxDesc::default()
    };
    if let Some(r) = p.ext.reth {
        d.va = r.va;
        d.rkey = r.rkey;
        d.dma_len = r.dma_len;
    }
    if let Some(a) = p.ext.atomic_eth {
        d.va = a.va;
        d.rkey = a.rkey;
        d.swap_add = a.swap_add;
        d.compare = a.compare;
    }
    if let Some(i) = p.ext.immdt {
        d.imm_or_inv = i.imm;
    }
    if let Some(i) = p.ext.ieth {
        d.imm_or_inv = i.rkey;
    }
    d
}

/// The BTH and extension headers a request descriptor stands for (the TX arbiter's part,
/// without the addressing): `dest_qpn` is the remote QP.
pub fn headers_of(d: &TxDesc, dest_qpn: u32) -> Option<(BthFields, ExtHeaders)> {
    let op = Opcode::from_u8(d.opcode).ok()?;
    let mut bth = BthFields::new(op, dest_qpn, d.psn);
    bth.solicited = d.flags.contains(TxDescFlags::SE);
    bth.ack_req = d.flags.contains(TxDescFlags::ACK_REQ);
    let mut ext = ExtHeaders::NONE;
    if op.has_ext_header(ExtHeaderKind::Reth) {
        ext.reth = Some(RethFields { va: d.va, rkey: d.rkey, dma_len: d.dma_len });
    }
    if op.has_ext_header(ExtHeaderKind::AtomicEth) {
        ext.atomic_eth = Some(AtomicEthFields { va: d.va, rkey: d.rkey, swap_add: d.swap_add, compare: d.compare });
    }
    if op.has_ext_header(ExtHeaderKind::ImmDt) {
        ext.immdt = Some(ImmDtFields { imm: d.imm_or_inv });
    }
    if op.has_ext_header(ExtHeaderKind::Ieth) {
        ext.ieth = Some(IethFields { rkey: d.imm_or_inv });
    }
    Some((bth, ext))
}

/// The completer's state as `comp_rd_t` carries it.
pub fn comp_rd(v: &CompView) -> CompRd {
    CompRd {
        una: v.una,
        rw_psn: v.rewind.psn,
        sq_ci: v.sq_ci,
        rw_idx: v.rewind.idx,
        rw_pkt: v.rewind.pkt,
        rnr_until: v.rnr_until as u32,
        rd_done: v.rd_done as u8,
        rw_gen: v.rewind.gen as u8,
    }
}

/// The completer's state a `comp_rd_t` carries (times below 2^32 cycles, generations and the
/// READ count modulo 256: the values the HDL compares).
pub fn comp_view(r: &CompRd) -> CompView {
    CompView {
        una: r.una,
        sq_ci: r.sq_ci,
        rd_done: u32::from(r.rd_done),
        rnr_until: u64::from(r.rnr_until),
        rewind: RewindReq { psn: r.rw_psn, idx: r.rw_idx, pkt: r.rw_pkt, gen: u32::from(r.rw_gen) },
    }
}

/// The requester's state as `req_rd_t` carries it.
pub fn req_rd(v: &ReqView) -> ReqRd {
    ReqRd {
        max_sent: v.max_sent,
        next_psn: v.next_psn,
        started: v.started,
        fetched: v.fetched,
        sq_pi: v.sq_pi,
        busy_deadline: v.busy_deadline.unwrap_or(0) as u32,
        gen: v.gen as u8,
        busy: v.busy_deadline.is_some(),
    }
}

/// The requester's state a `req_rd_t` carries.
pub fn req_view(r: &ReqRd) -> ReqView {
    ReqView {
        max_sent: r.max_sent,
        next_psn: r.next_psn,
        gen: u32::from(r.gen),
        started: r.started,
        fetched: r.fetched,
        sq_pi: r.sq_pi,
        busy_deadline: r.busy.then_some(u64::from(r.busy_deadline)),
    }
}

/// The `sq_win_t` of a send window entry (`started`: its PSNs are assigned).
pub fn sq_win(e: &SqEntry, started: bool) -> SqWin {
    let w = &e.wr;
    let opcode = match w.op {
        SendOp::Send => SqOpcode::Send,
        SendOp::SendImm(_) => SqOpcode::SendImm,
        SendOp::SendInv(_) => SqOpcode::SendInv,
        SendOp::Write => SqOpcode::Write,
        SendOp::WriteImm(_) => SqOpcode::WriteImm,
        SendOp::Read => SqOpcode::Read,
        SendOp::CmpSwap { .. } => SqOpcode::AtomicCas,
        SendOp::FetchAdd { .. } => SqOpcode::AtomicFaa,
    };
    let mut flags = SqFlags::EMPTY;
    for (on, f) in [
        (w.signaled, SqFlags::SIGNALED),
        (w.solicited, SqFlags::SOLICITED),
        (w.inline.is_some(), SqFlags::INLINE),
        (w.fence, SqFlags::FENCE),
    ] {
        if on {
            flags = flags.union(f);
        }
    }
    SqWin {
        wr_id: w.wr_id,
        first_psn: if started { e.first_psn } else { 0 },
        npkts: if started { e.npkts } else { 0 },
        len: w.len() as u32,
        opcode,
        flags,
        status: e.error.unwrap_or(WcStatus::Success) as CqeStatus,
    }
}

/// One visit of the requester to QP `qpn` at cycle `now` with the completer's state `c`,
/// `pace` answering each pacing question, as the HDL block makes it. The WQE bodies it
/// reads are not held until [`arrived`]. None for a QP the engine does not have.
pub fn visit(
    eng: &mut Engine,
    qpn: u32,
    now: u64,
    c: &CompView,
    mut pace: impl FnMut() -> bool,
    mem: &mut impl Dma,
) -> Option<ReqVisit> {
    let Some(mut qp) = eng.take_qp(qpn) else {
        // the block asks the first packet's pacing question as any visit starts
        pace();
        return None;
    };
    let v = eng.req_visit(&mut qp, now, c, |_| pace(), |_, _| {}, mem);
    if let Some(rd) = v.read {
        for (idx, fetch) in rd.wqes() {
            set_ready(eng, &mut qp, idx, u64::MAX);
            if fetch {
                qp.req.fetch_ready_at = u64::MAX;
            }
        }
    }
    eng.put_qp(qp);
    Some(v)
}

/// Mark the body of WQE `idx` of `qp` (own slot, else prefetch store entry) ready at `at`,
/// if it is held.
fn set_ready(eng: &mut Engine, qp: &mut Qp, idx: u32, at: u64) {
    if let Some(b) = qp.req.own.as_mut().filter(|b| b.idx == idx) {
        b.ready_at = at;
    } else if let Some(e) =
        eng.wqe_store[wqe_store_slot(qp.qpn, idx)].as_mut().filter(|e| e.qpn == qp.qpn && e.body.idx == idx)
    {
        e.body.ready_at = at;
    }
}

/// The block took the data of WQE `idx` of QP `qpn` (`fetch`: fetched into the window, not
/// read again): its body is held (if its own slot or its prefetch store entry still names
/// it), and when it is the last fetched the fetched WQEs have all arrived.
pub fn arrived(eng: &mut Engine, qpn: u32, idx: u32, fetch: bool) {
    if let Some(mut qp) = eng.take_qp(qpn) {
        set_ready(eng, &mut qp, idx, 0);
        if fetch && idx.wrapping_add(1) == qp.req.fetched {
            qp.req.fetch_ready_at = 0;
        }
        eng.put_qp(qp);
    }
}

/// An inline doorbell the block took ([`Engine::sq_bf`]); a WQE taken is held at once (the
/// block decides and writes it before its next visit).
pub fn bf(eng: &mut Engine, wqe: &[u8; crate::contract::SqWqe::SIZE], now: u64, mem: &mut impl Dma) -> BfOutcome {
    let out = eng.sq_bf(now, wqe, mem);
    if let BfOutcome::Taken { .. } = out {
        if let Some(mut qp) = eng.take_qp(bf_doorbell(wqe).0) {
            let idx = qp.req.fetched.wrapping_sub(1);
            set_ready(eng, &mut qp, idx, 0);
            qp.req.fetch_ready_at = 0;
            eng.put_qp(qp);
        }
    }
    out
}

/// A local error the block reported (`m_err`): the QP goes to ERR, as `roce_qp_ctx` does it,
/// and is flushed (the completer's ENTER_ERR).
pub fn local_error(eng: &mut Engine, qpn: u32, cause: WcStatus, mem: &mut impl Dma) {
    if let Some(mut qp) = eng.take_qp(qpn) {
        if qp.transport_error().is_some() {
            eng.qp_failed(qpn, cause);
        }
        eng.put_qp(qp);
        eng.flush_qp(qpn, mem);
    }
}

/// The block's kick: complete a malformed WQE at the head (`flush` false), or flush the SQ of
/// a QP in ERR (`flush`: the model did it at the doorbell already). Moves the QP to ERR on
/// an error completion (and flushes).
pub fn kick(eng: &mut Engine, qpn: u32, flush: bool, now: u64, mem: &mut impl Dma) {
    if flush {
        return;
    }
    if let Some(mut qp) = eng.take_qp(qpn) {
        let rv = ReqView::of(&qp);
        eng.comp_kick_with(&mut qp, &rv, now, mem);
        let err = qp.state == crate::engine::QpState::Err;
        eng.put_qp(qp);
        if err {
            eng.flush_qp(qpn, mem);
        }
    }
}

/// The engine's local ACK timeouts due at `now` (the completer's scanner).
pub fn timers(eng: &mut Engine, now: u64, mem: &mut impl Dma) {
    eng.check_timers(now, mem);
}

/// A QP's send window entries, SQ consumer index first, with whether each started.
pub fn window(qp: &Qp) -> Vec<(u32, SqWin)> {
    qp.req
        .win
        .iter()
        .enumerate()
        .map(|(k, e)| {
            let idx = qp.sq.ci.wrapping_add(k as u32);
            let started = ((idx.wrapping_sub(qp.req.started)) as i32) < 0;
            (idx, sq_win(e, started))
        })
        .collect()
}
