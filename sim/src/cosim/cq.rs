//! Lockstep run of `roce_cq` against `roce_model::blocks::cq`: completions, CQ
//! doorbells and CQ commands are offered to the Verilated block from three independent
//! queues with random gaps, DMA writes are taken under random backpressure; afterwards the
//! model applies the operations in the order the HDL accepted them, and the DMA writes,
//! the events (`cq_event`, `cq_err`) and the command outcomes must be equal, in order.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::cq::{CqOut, RoceCq};

use super::{compare_seq, reset_until_init};
use crate::cosim::mr_check::CmdOutcome;
use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// One operation offered to the block.
#[derive(Clone, Debug)]
pub enum CqOp {
    /// A CQE image (32 bytes) for a CQ index.
    Completion {
        /// `s_axis_cpl_tuser`.
        cq: u16,
        /// `s_axis_cpl_tdata`.
        cqe: [u8; 32],
    },
    /// A CQ_DB register value.
    Doorbell(u32),
    /// A command.
    Command {
        /// `cmd_opcode`.
        opcode: u8,
        /// `cmd_index`.
        index: u32,
        /// `cmd_data` (CqCtx bytes).
        data: [u8; 32],
    },
}

/// What a run produced and how it compared.
#[derive(Clone, Debug, Default)]
pub struct CqReport {
    /// DMA writes (address, bytes) in HDL order.
    pub dma: Vec<(u64, Vec<u8>)>,
    /// Events in HDL order.
    pub events: Vec<CqOut>,
    /// Command outcomes in HDL order.
    pub outcomes: Vec<CmdOutcome>,
    /// Operations accepted.
    pub accepted: usize,
    /// Cycle of the first and the last acceptance.
    pub span: (u64, u64),
    /// Differences from the model.
    pub divergences: Vec<String>,
}

/// Run `ops` with offer probability `rate` per input and cycle and DMA `m_axis_dma_tready`
/// probability `ready`. With `in_order` the operations are offered one at a time in their
/// order; otherwise they form three queues (completions, doorbells, commands) that keep
/// their own order and are offered concurrently, so the HDL's priorities interleave them.
pub fn cq_lockstep(
    ops: &[CqOp],
    in_order: bool,
    rate: f64,
    ready: f64,
    seed: u64,
    fst: Option<&Path>,
) -> Result<CqReport, SimError> {
    let mut dut = Dut::new(Model::Cq, fst)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_cq has no port {n}")));
    let (rst, init_done) = (p("rst")?, p("init_done")?);
    let (c_data, c_user, c_valid, c_ready) =
        (p("s_axis_cpl_tdata")?, p("s_axis_cpl_tuser")?, p("s_axis_cpl_tvalid")?, p("s_axis_cpl_tready")?);
    let (d_data, d_valid, d_ready) = (p("s_axis_db_tdata")?, p("s_axis_db_tvalid")?, p("s_axis_db_tready")?);
    let (m_addr, m_data, m_valid, m_ready) =
        (p("m_axis_dma_addr")?, p("m_axis_dma_tdata")?, p("m_axis_dma_tvalid")?, p("m_axis_dma_tready")?);
    let (ev, err_v, err_cq, err_cause) = (p("cq_event")?, p("cq_err_valid")?, p("cq_err_cq")?, p("cq_err_cause")?);
    let (k_valid, k_ready, k_op, k_index, k_data) =
        (p("cmd_valid")?, p("cmd_ready")?, p("cmd_opcode")?, p("cmd_index")?, p("cmd_data")?);
    let (k_done, k_err, k_we, k_rdata) = (p("cmd_done")?, p("cmd_error")?, p("cmd_rdata_we")?, p("cmd_rdata")?);
    let vp = p("cq_valid")?;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for q in [c_valid, d_valid, k_valid, m_ready, p("soft_reset")?] {
        dut.set_u64(q, 0);
    }
    reset_until_init(&mut dut, rst, init_done, 4, |_, _| {})?;

    // the three queues, as indices into ops
    let queue = |f: fn(&CqOp) -> bool| -> Vec<usize> { (0..ops.len()).filter(|&i| f(&ops[i])).collect() };
    let qs = [
        queue(|o| matches!(o, CqOp::Completion { .. })),
        queue(|o| matches!(o, CqOp::Doorbell(_))),
        queue(|o| matches!(o, CqOp::Command { .. })),
    ];
    let mut pos = [0usize; 3];
    let mut offered = [false; 3];
    let mut order: Vec<usize> = Vec::new();
    let mut rep = CqReport::default();
    let mut w = [0u32; 8];
    let mut cycle = 0u64;
    let mut idle = 0u32;
    let n_cmds = qs[2].len();
    while order.len() < ops.len() || dut.get_bool(m_valid) || rep.outcomes.len() < n_cmds || idle < 4 {
        for k in 0..3 {
            let turn = !in_order || qs[k].get(pos[k]) == Some(&order.len());
            if pos[k] < qs[k].len() && !offered[k] && turn {
                offered[k] = rng.random_bool(rate);
            }
        }
        dut.set_u64(c_valid, u64::from(offered[0]));
        dut.set_u64(d_valid, u64::from(offered[1]));
        dut.set_u64(k_valid, u64::from(offered[2]));
        if let Some(CqOp::Completion { cq, cqe }) = qs[0].get(pos[0]).map(|&i| &ops[i]) {
            pack_bytes(cqe, &mut w);
            dut.set(c_data, &w);
            dut.set_u64(c_user, u64::from(*cq));
        }
        if let Some(CqOp::Doorbell(v)) = qs[1].get(pos[1]).map(|&i| &ops[i]) {
            dut.set_u64(d_data, u64::from(*v));
        }
        if let Some(CqOp::Command { opcode, index, data }) = qs[2].get(pos[2]).map(|&i| &ops[i]) {
            dut.set_u64(k_op, u64::from(*opcode));
            dut.set_u64(k_index, u64::from(*index));
            pack_bytes(data, &mut w);
            dut.set(k_data, &w);
        }
        let rd = rng.random_bool(ready);
        dut.set_u64(m_ready, u64::from(rd));
        dut.eval();
        let mut moved = false;
        for (k, rdy) in [c_ready, d_ready, k_ready].into_iter().enumerate() {
            if offered[k] && dut.get_bool(rdy) {
                order.push(qs[k][pos[k]]);
                if rep.accepted == 0 {
                    rep.span.0 = cycle;
                }
                rep.accepted += 1;
                rep.span.1 = cycle;
                pos[k] += 1;
                offered[k] = false;
                moved = true;
            }
        }
        if dut.get_bool(m_valid) && rd {
            dut.get(m_data, &mut w);
            let mut b = vec![0u8; 32];
            unpack_bytes(&w, &mut b);
            rep.dma.push((dut.get_u64(m_addr), b));
            moved = true;
        }
        if dut.get_bool(ev) {
            rep.events.push(CqOut::Event);
        }
        if dut.get_bool(err_v) {
            rep.events.push(CqOut::Error { cq: dut.get_u64(err_cq) as u32, cause: dut.get_u64(err_cause) as u32 });
        }
        if dut.get_bool(k_done) {
            let rdata = dut.get_bool(k_we).then(|| {
                dut.get(k_rdata, &mut w);
                let mut b = vec![0u8; 32];
                unpack_bytes(&w, &mut b);
                b
            });
            rep.outcomes.push(CmdOutcome { error: dut.get_u64(k_err) as u8, rdata });
            moved = true;
        }
        dut.tick();
        cycle += 1;
        idle = if moved || order.len() < ops.len() { 0 } else { idle + 1 };
        if cycle > 100 * ops.len() as u64 + 10_000 {
            return Err(SimError::Config(format!("roce_cq stalled: {} of {} accepted", order.len(), ops.len())));
        }
    }

    // the model in acceptance order
    let mut m = RoceCq::new(8);
    let (mut dma, mut events, mut outcomes) = (Vec::new(), Vec::new(), Vec::new());
    for &i in &order {
        match &ops[i] {
            CqOp::Completion { cq, cqe } => {
                let (wr, e) = m.completion(u32::from(*cq), cqe);
                dma.extend(wr);
                events.extend(e);
            }
            CqOp::Doorbell(v) => events.extend(m.doorbell(*v)),
            CqOp::Command { opcode, index, data } => {
                let (e, img) = m.command(*opcode, *index, data);
                outcomes.push(CmdOutcome { error: e.code(), rdata: img });
            }
        }
    }
    // the CQ validity vector (roce_qp_ctx's QP_WRITE check) at the end
    let mut vw = vec![0u32; vp.words()];
    dut.get(vp, &mut vw);
    let hv: Vec<bool> = (0..vp.bits()).map(|i| vw[(i / 32) as usize] >> (i % 32) & 1 != 0).collect();
    let mv: Vec<bool> = (0..vp.bits()).map(|i| m.valid(i)).collect();
    compare_seq(&mut rep.divergences, "cq_valid bit", &hv, &mv);
    compare_seq(&mut rep.divergences, "DMA write", &rep.dma, &dma);
    compare_seq(&mut rep.divergences, "event", &rep.events, &events);
    compare_seq(&mut rep.divergences, "command outcome", &rep.outcomes, &outcomes);
    Ok(rep)
}
