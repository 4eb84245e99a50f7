//! The rules of the context commands that are data rather than layout: which QP state
//! transitions QP_WRITE and QP_MODIFY accept, with which attribute masks. The engine model
//! checks commands with [`qp_write_check`] and [`qp_modify_check`]; the documentation table
//! is generated from [`QP_TRANSITIONS`].

use super::{CmdErrorCode, QpAttrMask, QpState};

/// One allowed QP_MODIFY transition (reliable connected QPs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QpTransition {
    /// Current state; `None` = any state.
    pub from: Option<QpState>,
    /// New state.
    pub to: QpState,
    /// Attributes the mask must include besides `STATE`.
    pub required: QpAttrMask,
    /// Attributes the mask may include.
    pub optional: QpAttrMask,
}

const fn t(from: Option<QpState>, to: QpState, required: QpAttrMask, optional: QpAttrMask) -> QpTransition {
    QpTransition { from, to, required, optional }
}

const NONE: QpAttrMask = QpAttrMask::EMPTY;
const ACC: QpAttrMask = QpAttrMask::ACCESS_FLAGS;

/// The QP_MODIFY transitions, after the IB specification's RC table as libibverbs applies
/// it, without the attributes the engine has no state for (PKEY_INDEX, PORT, ALT_PATH,
/// PATH_MIG_STATE, CUR_STATE, EN_SQD_ASYNC_NOTIFY). Checked in order; the first entry
/// whose `from`/`to` match applies.
pub const QP_TRANSITIONS: &[QpTransition] = &[
    t(Some(QpState::Reset), QpState::Init, ACC, NONE),
    t(Some(QpState::Init), QpState::Init, NONE, ACC),
    t(
        Some(QpState::Init),
        QpState::Rtr,
        QpAttrMask::AV
            .union(QpAttrMask::PATH_MTU)
            .union(QpAttrMask::DEST_QPN)
            .union(QpAttrMask::RQ_PSN)
            .union(QpAttrMask::MAX_DEST_RD_ATOMIC)
            .union(QpAttrMask::MIN_RNR_TIMER),
        ACC,
    ),
    t(
        Some(QpState::Rtr),
        QpState::Rts,
        QpAttrMask::SQ_PSN
            .union(QpAttrMask::TIMEOUT)
            .union(QpAttrMask::RETRY_CNT)
            .union(QpAttrMask::RNR_RETRY)
            .union(QpAttrMask::MAX_QP_RD_ATOMIC),
        ACC.union(QpAttrMask::MIN_RNR_TIMER),
    ),
    t(Some(QpState::Rts), QpState::Rts, NONE, ACC.union(QpAttrMask::MIN_RNR_TIMER)),
    t(Some(QpState::Rts), QpState::Sqd, NONE, NONE),
    t(
        Some(QpState::Sqd),
        QpState::Sqd,
        NONE,
        ACC.union(QpAttrMask::AV)
            .union(QpAttrMask::PATH_MTU)
            .union(QpAttrMask::TIMEOUT)
            .union(QpAttrMask::RETRY_CNT)
            .union(QpAttrMask::RNR_RETRY)
            .union(QpAttrMask::MAX_QP_RD_ATOMIC)
            .union(QpAttrMask::MAX_DEST_RD_ATOMIC)
            .union(QpAttrMask::MIN_RNR_TIMER),
    ),
    t(Some(QpState::Sqd), QpState::Rts, NONE, ACC.union(QpAttrMask::MIN_RNR_TIMER)),
    t(Some(QpState::Sqe), QpState::Rts, NONE, ACC),
    t(None, QpState::Reset, NONE, NONE),
    t(None, QpState::Err, NONE, NONE),
];

/// The entry of [`QP_TRANSITIONS`] for `from -> to`, if the transition is allowed.
pub fn qp_transition(from: QpState, to: QpState) -> Option<&'static QpTransition> {
    QP_TRANSITIONS.iter().find(|t| t.from.is_none_or(|f| f == from) && t.to == to)
}

/// Check a QP_MODIFY: `BadState` if `from -> new` is not allowed, `BadAttr` if `mask`
/// lacks `STATE` or a required attribute, or has one the transition does not accept.
pub fn qp_modify_check(from: QpState, new: QpState, mask: QpAttrMask) -> Result<(), CmdErrorCode> {
    if !mask.contains(QpAttrMask::STATE) {
        return Err(CmdErrorCode::BadAttr);
    }
    let t = qp_transition(from, new).ok_or(CmdErrorCode::BadState)?;
    let attrs = mask.difference(QpAttrMask::STATE);
    if !attrs.contains(t.required) || !attrs.difference(t.required).difference(t.optional).is_empty() {
        return Err(CmdErrorCode::BadAttr);
    }
    Ok(())
}

/// Check a QP_WRITE: the QP must be in Reset and the written state Reset or Init.
pub fn qp_write_check(from: QpState, new: QpState) -> Result<(), CmdErrorCode> {
    match (from, new) {
        (QpState::Reset, QpState::Reset | QpState::Init) => Ok(()),
        _ => Err(CmdErrorCode::BadState),
    }
}

/// Whether a transport error (a fatal NAK, a completion in error) moves a QP in `state` to
/// Err. A QP in Reset has no transport activity of its own (an error still in flight from
/// before a reset is dropped); one in Err already is.
pub fn qp_error_enters_err(state: QpState) -> bool {
    !matches!(state, QpState::Reset | QpState::Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modify_rules() {
        let rtr = QpAttrMask::STATE
            | QpAttrMask::AV
            | QpAttrMask::PATH_MTU
            | QpAttrMask::DEST_QPN
            | QpAttrMask::RQ_PSN
            | QpAttrMask::MAX_DEST_RD_ATOMIC
            | QpAttrMask::MIN_RNR_TIMER;
        assert_eq!(qp_modify_check(QpState::Init, QpState::Rtr, rtr), Ok(()));
        assert_eq!(qp_modify_check(QpState::Init, QpState::Rtr, rtr | QpAttrMask::ACCESS_FLAGS), Ok(()));
        assert_eq!(qp_modify_check(QpState::Init, QpState::Rtr, rtr | QpAttrMask::SQ_PSN), Err(CmdErrorCode::BadAttr));
        assert_eq!(
            qp_modify_check(QpState::Init, QpState::Rtr, rtr.difference(QpAttrMask::AV)),
            Err(CmdErrorCode::BadAttr)
        );
        assert_eq!(qp_modify_check(QpState::Init, QpState::Rts, QpAttrMask::STATE), Err(CmdErrorCode::BadState));
        assert_eq!(qp_modify_check(QpState::Rts, QpState::Err, QpAttrMask::STATE), Ok(()));
        assert_eq!(qp_modify_check(QpState::Err, QpState::Reset, QpAttrMask::STATE), Ok(()));
        assert_eq!(qp_modify_check(QpState::Rts, QpState::Err, QpAttrMask::EMPTY), Err(CmdErrorCode::BadAttr));
        assert_eq!(qp_write_check(QpState::Reset, QpState::Init), Ok(()));
        assert_eq!(qp_write_check(QpState::Init, QpState::Init), Err(CmdErrorCode::BadState));
        assert_eq!(qp_write_check(QpState::Reset, QpState::Rts), Err(CmdErrorCode::BadState));
    }
}
