//! Model of `hdl/rtl/roce_comp.sv`: the engine model's completer itself
//! ([`Engine::comp_response`], [`Engine::comp_timeout`], [`Engine::comp_kick_with`],
//! [`Engine::comp_flush`]), run at the start of each of the block's operations
//! (`dbg_op_*`) with the requester's state the block reads there (`req_rd_t` on `m_rd`, the
//! send window on `m_win`). The lockstep test plays the requester with the engine's own
//! (`blocks::req::visit`) and a peer engine answering; it compares the block's
//! completions, DMA writes, QP errors, wakes, counters and its state as `comp_rd_t` (at each
//! wake and at the end).
//! Operation-level, not cycle-level.

use crate::engine::comp::{ReqView, LATENCY};
use crate::engine::fetch::advance_sq16;
use crate::engine::rx_disp::rx_pkt;
use crate::engine::{Dma, Engine, QpState};
use crate::wire::parse_frame;

/// A response frame for QP `qpn` taken at cycle `now`: the completer's operation. False if
/// the frame is not a RoCE packet.
pub fn response(eng: &mut Engine, qpn: u32, frame: &[u8], now: u64, rv: &ReqView, mem: &mut impl Dma) -> bool {
    let Ok(f) = parse_frame(frame) else { return false };
    let Some(p) = rx_pkt(&f, now.saturating_sub(LATENCY)) else { return false };
    let Some(mut qp) = eng.take_qp(qpn) else { return false };
    eng.comp_response(&mut qp, &p, rv, mem);
    eng.put_qp(qp);
    true
}

/// The timer scanner's timeout operation for QP `qpn` at cycle `now` (checked again).
pub fn timeout(eng: &mut Engine, qpn: u32, now: u64, rv: &ReqView, mem: &mut impl Dma) -> bool {
    let Some(mut qp) = eng.take_qp(qpn) else { return false };
    let fired = eng.comp_timeout(&mut qp, rv, now, mem);
    eng.put_qp(qp);
    fired
}

/// `roce_req`'s kick: complete a malformed WQE at the head (`flush` false), or complete the
/// WQEs posted to a QP in ERR up to the producer index with WR_FLUSH_ERR (`flush`).
pub fn kick(eng: &mut Engine, qpn: u32, flush: bool, now: u64, rv: &ReqView, mem: &mut impl Dma) {
    let Some(mut qp) = eng.take_qp(qpn) else { return };
    if flush {
        if qp.state == QpState::Err {
            eng.flush_unfetched_sq(&mut qp, rv.sq_pi, mem);
        }
    } else {
        eng.comp_kick_with(&mut qp, rv, now, mem);
    }
    eng.put_qp(qp);
}

/// ENTER_ERR: the flush of the send queue.
pub fn enter_err(eng: &mut Engine, qpn: u32, rv: &ReqView, mem: &mut impl Dma) {
    let Some(mut qp) = eng.take_qp(qpn) else { return };
    eng.comp_flush(&mut qp, rv, mem);
    eng.put_qp(qp);
}

/// An SQ doorbell on the requester's side without the flush a QP in ERR gets (the block's
/// kick does it): returns whether the QP is in ERR (the requester kicks then).
pub fn post(eng: &mut Engine, qpn: u32, pi: u32, now: u64, mem: &mut impl Dma) -> bool {
    let err = eng.qp(qpn).is_some_and(|q| q.state == QpState::Err);
    if err {
        if let Some(mut qp) = eng.take_qp(qpn) {
            qp.sq.pi = advance_sq16(qp.sq.pi, pi);
            eng.put_qp(qp);
        }
    } else {
        eng.sq_doorbell(now, qpn, pi, mem);
    }
    err
}

/// A local error of the requester (its `m_err`): the QP goes to ERR as `roce_qp_ctx` does it
/// (the flush comes with ENTER_ERR).
pub fn local_error(eng: &mut Engine, qpn: u32, cause: crate::engine::WcStatus) {
    if let Some(mut qp) = eng.take_qp(qpn) {
        if qp.transport_error().is_some() {
            eng.qp_failed(qpn, cause);
        }
        eng.put_qp(qp);
    }
}
