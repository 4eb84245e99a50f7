//! Model of `hdl/rtl/roce_cq.sv`: the CQ table, CQE writes, CQ doorbells and the CQ
//! commands, as the engine model has them ([`cq_post`], [`cq_db`], [`cq_command`]).
//! Operation-level: each completion, doorbell or command gives its DMA write, its event
//! (`cq_event` or `cq_err`) and its command outcome; the lockstep test applies them in the
//! order the HDL accepted them.

use crate::contract::{CmdErrorCode, CmdOpcode, Cqe};
use crate::engine::cq::{cq_command, cq_db, cq_post, CqPost};
use crate::engine::Cq;

/// Cycles from an operation's acceptance to its outputs being visible.
pub const LATENCY: u64 = 2;

/// An event output of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CqOut {
    /// `cq_event` pulsed.
    Event,
    /// `cq_err_valid` pulsed with (`cq_err_cq`, `cq_err_cause`).
    Error {
        /// CQ index (14 bits).
        cq: u32,
        /// CQ_ERR_INFO cause.
        cause: u32,
    },
}

/// The block's state.
#[derive(Clone, Debug)]
pub struct RoceCq {
    cqs: Vec<Option<Cq>>,
}

impl RoceCq {
    /// A cleared table of `2^log_n` CQs.
    pub fn new(log_n: u32) -> Self {
        RoceCq { cqs: vec![None; 1 << log_n] }
    }

    /// A completion for CQ `cqn`: the DMA write (address, 32-byte CQE with the owner byte)
    /// and the event, if any.
    pub fn completion(&mut self, cqn: u32, img: &[u8; Cqe::SIZE]) -> (Option<(u64, Vec<u8>)>, Option<CqOut>) {
        let mut w = None;
        match cq_post(&mut self.cqs, cqn, img, |a, d| {
            w = Some((a, d.to_vec()));
            true
        }) {
            CqPost::Written { fired, irq } => (w, (fired && irq).then_some(CqOut::Event)),
            CqPost::Dropped { cause } => (None, Some(CqOut::Error { cq: cqn & 0x3FFF, cause })),
            CqPost::DmaFailed => (None, None),
        }
    }

    /// A CQ_DB value.
    pub fn doorbell(&mut self, v: u32) -> Option<CqOut> {
        use crate::contract::regs::cq_db::*;
        (cq_db(&mut self.cqs, CQ.get(v), CI.get(v), ARM.is_set(v), SOLICITED.is_set(v)) == Some(true))
            .then_some(CqOut::Event)
    }

    /// Whether CQ `cqn` is valid (the `cq_valid` output).
    pub fn valid(&self, cqn: u32) -> bool {
        self.cqs.get(cqn as usize).is_some_and(Option::is_some)
    }

    /// A command: its error code and, for a successful CQ_READ, the 32-byte CqCtx image.
    pub fn command(&mut self, opcode: u8, index: u32, data: &[u8]) -> (CmdErrorCode, Option<Vec<u8>>) {
        let Ok(op) = CmdOpcode::try_from(opcode) else { return (CmdErrorCode::BadOpcode, None) };
        match cq_command(&mut self.cqs, op, index, data) {
            Ok(img) => (CmdErrorCode::Ok, img),
            Err(e) => (e, None),
        }
    }
}
