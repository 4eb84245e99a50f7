//! Model of `hdl/rtl/roce_mr_check.sv`: the memory region table, its key checks and the MR
//! commands, as the engine model has them ([`MrTable`], [`mr_command`]). Request-level: one
//! result per request in order, one outcome per command; the lockstep test feeds requests and
//! commands in the order the HDL accepted them.

use crate::contract::{CmdErrorCode, CmdOpcode};
use crate::engine::mr_check::{mr_command, MrError, MrTable};

/// Cycles from a request's acceptance to its result being valid (no backpressure).
pub const LATENCY: u64 = 4;

/// Result status: passed.
pub const ST_OK: u8 = 0;
/// No valid region has the key (or the entry's tag differs).
pub const ST_KEY: u8 = 1;
/// The region belongs to another protection domain.
pub const ST_PD: u8 = 2;
/// The region lacks an access right the request needs.
pub const ST_ACCESS: u8 = 3;
/// The range is not inside the region.
pub const ST_BOUNDS: u8 = 4;

/// One request on `s_axis_req`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MrReq {
    /// `false`: check, `true`: invalidate.
    pub invalidate: bool,
    /// L_Key or R_Key.
    pub key: u32,
    /// The QP's protection domain.
    pub pd: u32,
    /// Start of the access.
    pub va: u64,
    /// Length of the access.
    pub len: u32,
    /// Access bits needed (`AccessFlags`, bits 3:0).
    pub need: u8,
    /// Carried to the result.
    pub user: u32,
}

/// One result on `m_axis_res`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MrRes {
    /// `ST_*`.
    pub status: u8,
    /// DMA address of `va` (0 unless a check passed with a non-zero length).
    pub dma: u64,
    /// The request's user bits.
    pub user: u32,
}

fn status(e: MrError) -> u8 {
    match e {
        MrError::InvalidKey(_) => ST_KEY,
        MrError::PdMismatch { .. } => ST_PD,
        MrError::Access { .. } => ST_ACCESS,
        MrError::Bounds { .. } => ST_BOUNDS,
    }
}

/// The block's state: the table.
#[derive(Clone, Debug)]
pub struct RoceMrCheck {
    table: MrTable,
}

impl RoceMrCheck {
    /// A cleared table of `2^log_n` entries (the HDL after reset or soft reset).
    pub fn new(log_n: u32) -> Self {
        RoceMrCheck { table: MrTable::new(1 << log_n) }
    }

    /// The table.
    pub fn table(&self) -> &MrTable {
        &self.table
    }

    /// One request.
    pub fn request(&mut self, r: &MrReq) -> MrRes {
        let out = if r.invalidate {
            self.table.invalidate(r.key, Some(r.pd)).map(|_| 0)
        } else {
            self.table.check(r.key, r.pd, r.va, u64::from(r.len), u32::from(r.need & 0xF))
        };
        match out {
            Ok(dma) => MrRes { status: ST_OK, dma, user: r.user },
            Err(e) => MrRes { status: status(e), dma: 0, user: r.user },
        }
    }

    /// One command: its error code and, for a successful MR_READ, the 64-byte MrCtx image
    /// (`cmd_rdata`). `data` is `CMD_DATA`'s first 64 bytes.
    pub fn command(&mut self, opcode: u8, index: u32, data: &[u8]) -> (CmdErrorCode, Option<Vec<u8>>) {
        let Ok(op) = CmdOpcode::try_from(opcode) else { return (CmdErrorCode::BadOpcode, None) };
        match mr_command(&mut self.table, op, index, data) {
            Ok(img) => (CmdErrorCode::Ok, img),
            Err(e) => (e, None),
        }
    }
}
