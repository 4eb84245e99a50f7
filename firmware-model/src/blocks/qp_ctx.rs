//! Model of `hdl/rtl/roce_qp_ctx.sv`: the QP table, the QP commands, the attribute read
//! ports and the transport error port, as the engine model has them (`engine::qp_ctx`:
//! [`qp_command`], [`Qp::transport_error`], [`Qp::to_attr`], [`Qp::ctx_op`]).
//! Operation-level: each command or error gives its outcome and the context ops it sends to
//! the owners of the engine state; the lockstep test applies them in the order the HDL
//! finished them and reads the attributes in between.
//!
//! The engine state a QP_READ reports (PSNs, ring indices) lives in the model's [`Qp`]s,
//! changed only by the context ops (as the owners change theirs) and, in block tests, by
//! [`RoceQpCtx::set_rings`], which stands in for the doorbell and completion owners.

use crate::contract::records::{CtxOpReq, QpAttr};
use crate::contract::{CmdErrorCode, CmdOpcode, QpState};
use crate::engine::qp_ctx::{qp_command, CtxOp, Qp};

/// The `ctx_op` port's value for `op` on QP `qpn`.
pub fn ctx_op_req(qpn: u32, op: CtxOp) -> CtxOpReq {
    CtxOpReq { code: op.code().code(), qpn, arg: op.arg() }
}

/// A QP error reported toward `roce_regs` (`qp_err_valid` with `qp_err_qpn`, `qp_err_cause`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpErr {
    /// QP number (24 bits).
    pub qpn: u32,
    /// Cause (a `CqeStatus` code, QP_ERR_INFO.CAUSE).
    pub cause: u8,
}

/// The outcome of one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmdResult {
    /// `cmd_error`.
    pub error: CmdErrorCode,
    /// `cmd_rdata` when `cmd_rdata_we` (QP_READ): the 128-byte QpCtx image.
    pub rdata: Option<Vec<u8>>,
    /// The context ops sent, in order.
    pub ops: Vec<CtxOpReq>,
}

/// The block's state.
#[derive(Clone, Debug)]
pub struct RoceQpCtx {
    qps: Vec<Option<Qp>>,
    max_mtu: u32,
}

impl RoceQpCtx {
    /// A cleared table of `2^log_n` QPs accepting path MTUs up to `max_mtu` bytes.
    pub fn new(log_n: u32, max_mtu: u32) -> Self {
        RoceQpCtx { qps: vec![None; 1 << log_n], max_mtu }
    }

    /// A command with CMD_ARG `arg` and CMD_DATA `data`; `cq_valid` says which CQs exist.
    pub fn command(
        &mut self,
        opcode: u8,
        index: u32,
        arg: u32,
        data: &[u8],
        cq_valid: impl Fn(u16) -> bool,
    ) -> CmdResult {
        let Ok(op) = CmdOpcode::try_from(opcode) else {
            return CmdResult { error: CmdErrorCode::BadOpcode, rdata: None, ops: Vec::new() };
        };
        match qp_command(&mut self.qps, op, index, arg, data, cq_valid, self.max_mtu) {
            Ok(out) => CmdResult {
                error: CmdErrorCode::Ok,
                rdata: out.rdata.map(|d| d.to_vec()),
                ops: out.ops.into_iter().map(|o| ctx_op_req(index, o)).collect(),
            },
            Err(e) => CmdResult { error: e, rdata: None, ops: Vec::new() },
        }
    }

    /// A transport error on QP `qpn` (24 bits): when the QP enters Err, the error reported to
    /// `roce_regs` and the op sent (EnterErr); nothing for a QP that does not exist or is in
    /// Reset or Err.
    pub fn transport_error(&mut self, qpn: u32, cause: u8) -> Option<(QpErr, CtxOpReq)> {
        let qp = self.qps.get_mut(qpn as usize)?.as_mut()?;
        let op = qp.transport_error()?;
        Some((QpErr { qpn, cause }, ctx_op_req(qpn, op)))
    }

    /// An attribute read port: the QP's attributes and state (a QP never written, or beyond
    /// the table, reads as the default attributes in Reset).
    pub fn attr(&self, qpn: u32) -> (QpAttr, QpState) {
        match self.qps.get(qpn as usize) {
            Some(Some(q)) => (q.to_attr(), q.state),
            _ => (QpAttr::default(), QpState::Reset),
        }
    }

    /// Block tests: the SQ/RQ producer and consumer indices the doorbell and completion
    /// owners hold for a written QP (ignored for others).
    pub fn set_rings(&mut self, qpn: u32, sq_pi: u16, sq_ci: u16, rq_pi: u16, rq_ci: u16) {
        if let Some(Some(q)) = self.qps.get_mut(qpn as usize) {
            q.sq.pi = u32::from(sq_pi);
            q.sq.ci = u32::from(sq_ci);
            q.rq.pi = u32::from(rq_pi);
            q.rq.ci = u32::from(rq_ci);
        }
    }

    /// The QP, if written.
    pub fn qp(&self, qpn: u32) -> Option<&Qp> {
        self.qps.get(qpn as usize)?.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::records::CtxOpCode;
    use crate::contract::{PathMtu, QpAttrMask, QpCtx, QpType};

    #[test]
    fn write_modify_read_and_errors() {
        let mut b = RoceQpCtx::new(4, 2048);
        let c = QpCtx {
            state: QpState::Init,
            qp_type: QpType::Rc,
            sq_psn: 5,
            rq_psn: 9,
            send_cq: 1,
            recv_cq: 2,
            ..QpCtx::default()
        };
        let cqs = |cq: u16| cq < 4;
        let r = b.command(CmdOpcode::QpWrite.code(), 3, 0, &c.encode(), cqs);
        assert_eq!(r.error, CmdErrorCode::Ok);
        let codes: Vec<u8> = r.ops.iter().map(|o| o.code).collect();
        assert_eq!(codes, [CtxOpCode::Reset.code(), CtxOpCode::SetRqPsn.code(), CtxOpCode::SetSqPsn.code()]);
        assert_eq!((r.ops[1].arg, r.ops[2].arg), (9, 5));
        // bad CQ, reserved QP, beyond the table
        let bad = QpCtx { send_cq: 4, ..c };
        assert_eq!(b.command(1, 4, 0, &bad.encode(), cqs).error, CmdErrorCode::BadAttr);
        assert_eq!(b.command(1, 1, 0, &c.encode(), cqs).error, CmdErrorCode::BadIndex);
        assert_eq!(b.command(1, 16, 0, &c.encode(), cqs).error, CmdErrorCode::BadIndex);
        // the MTU limit
        let rtr = QpCtx { state: QpState::Rtr, path_mtu: PathMtu::Mtu4096, ..c };
        let m = (QpAttrMask::STATE
            | QpAttrMask::AV
            | QpAttrMask::PATH_MTU
            | QpAttrMask::DEST_QPN
            | QpAttrMask::RQ_PSN
            | QpAttrMask::MAX_DEST_RD_ATOMIC
            | QpAttrMask::MIN_RNR_TIMER)
            .bits();
        assert_eq!(b.command(8, 3, m, &rtr.encode(), cqs).error, CmdErrorCode::BadAttr);
        let rtr = QpCtx { path_mtu: PathMtu::Mtu2048, rq_psn: 77, ..rtr };
        let r = b.command(8, 3, m, &rtr.encode(), cqs);
        assert_eq!(
            (r.error, r.ops),
            (CmdErrorCode::Ok, vec![CtxOpReq { code: CtxOpCode::SetRqPsn.code(), qpn: 3, arg: 77 }])
        );
        let (attr, st) = b.attr(3);
        assert_eq!((attr.path_mtu, st), (PathMtu::Mtu2048, QpState::Rtr));
        assert_ne!(attr.udp_sport, 0, "udp_sport 0 becomes the QPN hash");
        // a transport error: Err once, with EnterErr
        let e = b.transport_error(3, 10);
        assert_eq!(e.map(|x| x.0), Some(QpErr { qpn: 3, cause: 10 }));
        assert_eq!(b.transport_error(3, 10), None);
        assert_eq!(b.transport_error(5, 10), None, "never written");
        let r = b.command(CmdOpcode::QpRead.code(), 3, 0, &[], cqs);
        let img = QpCtx::decode(r.rdata.as_deref().unwrap_or(&[])).expect("image");
        assert_eq!((img.state, img.rq_psn, img.sq_psn), (QpState::Err, 77, 5));
        assert_eq!(b.command(0, 3, 0, &[], cqs).error, CmdErrorCode::BadOpcode);
    }
}
