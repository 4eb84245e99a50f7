//! Model of `hdl/rtl/roce_resp.sv`: the engine model's responder itself
//! (`engine::resp`, reached through `Engine::rx` and `Engine::rq_doorbell`), observed at the
//! block's outputs. The lockstep test runs an [`Engine`] with `trace_events` and
//! `log_completions` set beside the HDL block and compares, per request packet and doorbell:
//! the DMA writes (host memory behind a recorder), the ACK/NAK requests and QP errors
//! (`Engine::events`), the READ responses / atomic ACKs (`Engine::take_responses`, folded
//! into one [`Response`] per request as the HDL's `rd_rsp_t` describes them) and the
//! receive completions (`Engine::completion_log`). Operation-level, not cycle-level.

use crate::engine::{Dma, DmaError, TxPkt};
use crate::wire::Opcode;

/// A response the responder asked the TX side to send, as `rd_rsp_t` states it: READ
/// responses (`orig` None; `data` = every response payload in order) or an ATOMIC
/// Acknowledge (`orig`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    /// Local QP.
    pub qpn: u32,
    /// PSN of the first packet.
    pub psn: u32,
    /// MSN of the AETHs.
    pub msn: u32,
    /// Response packets.
    pub npkts: u32,
    /// READ: the bytes sent.
    pub data: Vec<u8>,
    /// ATOMIC Acknowledge: the original data.
    pub orig: Option<u64>,
}

/// Fold the responder's queued packets into responses: a READ's FIRST..LAST (or ONLY)
/// become one [`Response`].
pub fn responses(pkts: Vec<TxPkt>) -> Vec<Response> {
    let mut out: Vec<Response> = Vec::new();
    let mut open = false;
    for p in pkts {
        let msn = p.ext.aeth.map_or(0, |a| a.msn);
        match p.bth.opcode {
            Opcode::RcAtomicAcknowledge => {
                let orig = p.ext.atomic_ack_eth.map(|a| a.orig_remote_data);
                out.push(Response { qpn: p.qpn, psn: p.bth.psn, msn, npkts: 1, data: Vec::new(), orig });
                open = false;
            }
            Opcode::RcRdmaReadResponseOnly | Opcode::RcRdmaReadResponseFirst => {
                out.push(Response { qpn: p.qpn, psn: p.bth.psn, msn, npkts: 1, data: p.payload, orig: None });
                open = p.bth.opcode == Opcode::RcRdmaReadResponseFirst;
            }
            _ if open => {
                if let Some(r) = out.last_mut() {
                    r.npkts += 1;
                    r.data.extend_from_slice(&p.payload);
                }
                open = p.bth.opcode != Opcode::RcRdmaReadResponseLast;
            }
            _ => {}
        }
    }
    out
}

/// Host memory that records every DMA write (address, bytes) in order, except those in
/// `[skip.0, skip.1)` (the CQ rings: completions are compared as completions).
#[derive(Debug)]
pub struct Recorder<'a, M: Dma> {
    /// The memory.
    pub mem: &'a mut M,
    /// Writes seen.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// Address range not recorded.
    pub skip: (u64, u64),
}

impl<M: Dma> Dma for Recorder<'_, M> {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.mem.dma_read(addr, buf)
    }
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if !(self.skip.0..self.skip.1).contains(&addr) && !data.is_empty() {
            self.writes.push((addr, data.to_vec()));
        }
        self.mem.dma_write(addr, data)
    }
}
