//! Lockstep run of `roce_qp_ctx` against `roce_model::blocks::qp_ctx`.
//!
//! The harness offers a program of QP commands and, from an independent queue, transport
//! errors (errors race the commands); both attribute read ports take a random request in
//! most cycles. It plays the blocks around `roce_qp_ctx`:
//! - the owners of the engine state ([`Owners`]): a table of the six QP_READ fields per QP,
//!   changed by the context ops (acknowledged after random delays) and by ring-index events
//!   of the program (doorbells and completions, applied while the block is idle), answering
//!   state reads after random delays;
//! - `roce_cq`'s `cq_valid` vector, changed by CQ events of the program (while idle).
//!
//! Afterwards the model replays the run: each command or error at the cycle its effect
//! became visible (`cmd_done`, `qp_err_valid`), the program's events at their cycles, and
//! each attribute read at the cycle it was requested (after the commits of that cycle, as
//! the block's header states). Command outcomes, context ops, QP errors and attribute reads
//! must all be equal, in order.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::qp_ctx::{QpErr, RoceQpCtx};
use roce_model::contract::records::{CtxOpCode, CtxOpReq, QpAttr};

use super::{compare_seq, reset_until_init};
use crate::cosim::mr_check::CmdOutcome;
use crate::vl::{pack_bytes, unpack_bytes, Dut, Model, Port};
use crate::SimError;

/// `roce_qp_ctx`'s LOG_N as built (`qp_ctx_mtu4` in `hdl/configs.txt`: the default).
pub const LOG_N: u32 = 10;
/// Its LOG_CQ (the default).
pub const LOG_CQ: u32 = 8;
/// Its MAX_MTU, in bytes (built with code 4, so that the limit is exercised; a unit test
/// checks the line).
pub const MAX_MTU: u32 = 2048;

/// One entry of the command program.
#[derive(Clone, Debug)]
pub enum QpCtxOp {
    /// A command.
    Command {
        /// `cmd_opcode`.
        opcode: u8,
        /// `cmd_index`.
        index: u32,
        /// `cmd_arg`.
        arg: u32,
        /// `cmd_data` (128 bytes).
        data: Vec<u8>,
    },
    /// `roce_cq` validates or invalidates a CQ (between commands).
    Cq {
        /// CQ index.
        cq: u16,
        /// Valid.
        valid: bool,
    },
    /// The doorbell and completion owners move a QP's ring indices (between commands).
    Rings {
        /// QP.
        qpn: u32,
        /// SQ producer, SQ consumer, RQ producer, RQ consumer index.
        idx: [u16; 4],
    },
}

/// A transport error offered on the error port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TransportError {
    /// `err_qpn`.
    pub qpn: u32,
    /// `err_cause`.
    pub cause: u8,
}

/// The six engine-state fields of QP_READ, as their owners hold them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OwnerState {
    /// Requester's next PSN.
    pub sq_psn: u32,
    /// Responder's expected PSN.
    pub rq_psn: u32,
    /// SQ producer index.
    pub sq_pi: u16,
    /// SQ consumer index.
    pub sq_ci: u16,
    /// RQ producer index.
    pub rq_pi: u16,
    /// RQ consumer index.
    pub rq_ci: u16,
}

/// The owners of the engine state, reduced to what QP_READ shows: RESET zeroes a QP,
/// SET_RQ_PSN / SET_SQ_PSN set a PSN, ENTER_RTS and ENTER_ERR change nothing visible
/// (retry counters; no work is posted to flush).
#[derive(Clone, Debug)]
pub struct Owners {
    /// Per QP.
    pub t: Vec<OwnerState>,
}

impl Owners {
    /// `n` QPs, all zero.
    pub fn new(n: usize) -> Self {
        Owners { t: vec![OwnerState::default(); n] }
    }

    /// Apply a context op.
    pub fn apply(&mut self, code: u8, qpn: u32, arg: u32) {
        let Some(s) = self.t.get_mut(qpn as usize) else { return };
        match CtxOpCode::try_from(code) {
            Ok(CtxOpCode::Reset) => *s = OwnerState::default(),
            Ok(CtxOpCode::SetRqPsn) => s.rq_psn = arg,
            Ok(CtxOpCode::SetSqPsn) => s.sq_psn = arg,
            _ => {}
        }
    }

    /// The state of QP `qpn` (zero beyond the table).
    pub fn get(&self, qpn: u32) -> OwnerState {
        self.t.get(qpn as usize).copied().unwrap_or_default()
    }
}

/// The owner side of `roce_qp_ctx`'s context-op and state-read ports on a `Dut` (the block,
/// or `roce_ctrl`, which has the same port names).
pub struct OwnerPorts {
    op: [Port; 3],
    rd: [Port; 9],
}

impl OwnerPorts {
    /// The ports of `dut`.
    pub fn new(dut: &Dut) -> Result<Self, SimError> {
        let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("{:?} has no port {n}", dut.model())));
        Ok(OwnerPorts {
            op: [p("ctx_op_valid")?, p("ctx_op")?, p("ctx_op_done")?],
            rd: [
                p("st_rd_valid")?,
                p("st_rd_qpn")?,
                p("st_rd_done")?,
                p("st_rd_sq_psn")?,
                p("st_rd_rq_psn")?,
                p("st_rd_sq_pi")?,
                p("st_rd_sq_ci")?,
                p("st_rd_rq_pi")?,
                p("st_rd_rq_ci")?,
            ],
        })
    }

    /// Drive this cycle's answers (call with the registered outputs settled, before the
    /// cycle's final `eval`): each port acknowledges with probability `p_done`.
    pub fn drive(&self, dut: &mut Dut, owners: &Owners, rng: &mut impl Rng, p_done: f64) {
        dut.set_u64(self.op[2], u64::from(rng.random_bool(p_done)));
        dut.set_u64(self.rd[2], u64::from(rng.random_bool(p_done)));
        let s = owners.get(dut.get_u64(self.rd[1]) as u32);
        for (k, v) in [
            (3, s.sq_psn),
            (4, s.rq_psn),
            (5, s.sq_pi.into()),
            (6, s.sq_ci.into()),
            (7, s.rq_pi.into()),
            (8, s.rq_ci.into()),
        ] {
            dut.set_u64(self.rd[k], u64::from(v));
        }
    }

    /// After the cycle's `eval`: the context op acknowledged in this cycle, if any, applied
    /// to `owners`.
    pub fn sample(&self, dut: &Dut, owners: &mut Owners) -> Option<CtxOpReq> {
        if !(dut.get_bool(self.op[0]) && dut.get_bool(self.op[2])) {
            return None;
        }
        let op: CtxOpReq = dut.get_bundle(self.op[1]);
        owners.apply(op.code, op.qpn, op.arg);
        Some(op)
    }
}

/// Pacing of a run.
#[derive(Clone, Copy, Debug)]
pub struct Pace {
    /// Probability per cycle of offering the next command when none is offered.
    pub cmd_rate: f64,
    /// Probability per cycle of offering the next transport error.
    pub err_rate: f64,
    /// Probability per cycle of an attribute read request on each port.
    pub read_rate: f64,
    /// Probability per cycle of the owners acknowledging an op / answering a state read.
    pub p_done: f64,
}

/// One attribute read: its request and answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AttrRead {
    /// Requested QPN.
    pub qpn: u32,
    /// The 80-byte qp_attr_t.
    pub attr: Vec<u8>,
    /// QpState code.
    pub state: u8,
}

/// What a run produced and how it compared.
#[derive(Clone, Debug, Default)]
pub struct QpCtxReport {
    /// Command outcomes, in order.
    pub outcomes: Vec<CmdOutcome>,
    /// Context ops, in order.
    pub ops: Vec<CtxOpReq>,
    /// QP errors toward roce_regs, in order.
    pub errors: Vec<QpErr>,
    /// Attribute reads per port (RX, TX), in order.
    pub reads: [Vec<AttrRead>; 2],
    /// Per command, cycles from acceptance to `cmd_done`.
    pub latency: Vec<u64>,
    /// Per QP error, cycles from the transport error's acceptance to `qp_err_valid`.
    pub err_latency: Vec<u64>,
    /// Transport errors accepted.
    pub errors_offered: usize,
    /// HDL cycles.
    pub cycles: u64,
    /// Differences from the model.
    pub divergences: Vec<String>,
}

/// What the model replays, at a cycle.
enum Ev {
    /// A command (index into the program) or an error (index into `errs`) takes effect.
    Cmd(usize),
    Err(usize),
    /// A program event (index into the program).
    Side(usize),
    /// Port `p` reads QP `qpn`.
    Read(usize, u32),
}

/// Run `prog` (commands and events, in order) and `errs` (racing) on the Verilated block and
/// on the model.
pub fn qp_ctx_lockstep(
    prog: &[QpCtxOp],
    errs: &[TransportError],
    pace: Pace,
    seed: u64,
    fst: Option<&Path>,
) -> Result<QpCtxReport, SimError> {
    let mut dut = Dut::new(Model::QpCtxMtu4, fst)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_qp_ctx has no port {n}")));
    let (rst, init_done) = (p("rst")?, p("init_done")?);
    let (k_valid, k_ready, k_op, k_index, k_arg, k_data) =
        (p("cmd_valid")?, p("cmd_ready")?, p("cmd_opcode")?, p("cmd_index")?, p("cmd_arg")?, p("cmd_data")?);
    let (k_done, k_err, k_we, k_rdata) = (p("cmd_done")?, p("cmd_error")?, p("cmd_rdata_we")?, p("cmd_rdata")?);
    let (e_valid, e_ready, e_qpn, e_cause) = (p("err_valid")?, p("err_ready")?, p("err_qpn")?, p("err_cause")?);
    let (q_valid, q_qpn, q_cause) = (p("qp_err_valid")?, p("qp_err_qpn")?, p("qp_err_cause")?);
    let cqv = p("cq_valid")?;
    let rp = [
        [p("rx_attr_req_valid")?, p("rx_attr_req_qpn")?, p("rx_attr_valid")?, p("rx_attr")?, p("rx_attr_state")?],
        [p("tx_attr_req_valid")?, p("tx_attr_req_qpn")?, p("tx_attr_valid")?, p("tx_attr")?, p("tx_attr_state")?],
    ];
    let own = OwnerPorts::new(&dut)?;
    let n = 1usize << LOG_N;

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for q in [k_valid, e_valid, p("soft_reset")?, rp[0][0], rp[1][0]] {
        dut.set_u64(q, 0);
    }
    let mut cq_bits = vec![false; 1 << LOG_CQ];
    let set_cq = |dut: &mut Dut, bits: &[bool]| {
        let mut w = vec![0u32; bits.len().div_ceil(32)];
        for (i, &b) in bits.iter().enumerate() {
            w[i / 32] |= u32::from(b) << (i % 32);
        }
        dut.set(cqv, &w);
    };
    set_cq(&mut dut, &cq_bits);
    reset_until_init(&mut dut, rst, init_done, 4, |_, _| {})?;

    // interesting QPNs for reads: the ones the program names, and some beyond the table
    let mut names: Vec<u32> = prog
        .iter()
        .filter_map(|o| match o {
            QpCtxOp::Command { index, .. } => Some(*index),
            _ => None,
        })
        .chain(errs.iter().map(|e| e.qpn))
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        names.push(2);
    }

    let mut owners = Owners::new(n);
    let mut rep = QpCtxReport::default();
    let mut evs: Vec<(u64, Ev)> = Vec::new();
    let (mut pc, mut pe) = (0usize, 0usize);
    let (mut c_off, mut e_off) = (false, false);
    let mut inflight: Option<(bool, usize, u64)> = None; // (is error, index, accepted at)
    let mut pending_reads: Vec<(u64, usize, u32)> = Vec::new();
    let mut w = [0u32; 32];
    let mut cycle = 0u64;
    let n_cmds = prog.iter().filter(|o| matches!(o, QpCtxOp::Command { .. })).count();
    loop {
        let done_all = pc >= prog.len() && pe >= errs.len() && inflight.is_none() && rep.outcomes.len() == n_cmds;
        if done_all && pending_reads.is_empty() {
            break;
        }
        // registered outputs of this cycle
        dut.eval();
        let idle = dut.get_bool(e_ready);
        // program events between commands: applied while the block is idle (and no command
        // is being offered)
        if idle && !c_off {
            loop {
                match prog.get(pc) {
                    Some(QpCtxOp::Cq { cq, valid }) => {
                        if let Some(b) = cq_bits.get_mut(usize::from(*cq)) {
                            *b = *valid;
                        }
                        set_cq(&mut dut, &cq_bits);
                    }
                    Some(QpCtxOp::Rings { qpn, idx }) => {
                        if let Some(s) = owners.t.get_mut(*qpn as usize) {
                            (s.sq_pi, s.sq_ci, s.rq_pi, s.rq_ci) = (idx[0], idx[1], idx[2], idx[3]);
                        }
                    }
                    _ => break,
                }
                evs.push((cycle, Ev::Side(pc)));
                pc += 1;
            }
        }
        if !c_off && !done_all {
            if let Some(QpCtxOp::Command { opcode, index, arg, data }) = prog.get(pc) {
                c_off = rng.random_bool(pace.cmd_rate);
                dut.set_u64(k_op, u64::from(*opcode));
                dut.set_u64(k_index, u64::from(*index));
                dut.set_u64(k_arg, u64::from(*arg));
                pack_bytes(data, &mut w);
                dut.set(k_data, &w);
            }
        }
        if !e_off {
            if let Some(e) = errs.get(pe) {
                e_off = rng.random_bool(pace.err_rate);
                dut.set_u64(e_qpn, u64::from(e.qpn));
                dut.set_u64(e_cause, u64::from(e.cause));
            }
        }
        dut.set_u64(k_valid, u64::from(c_off));
        dut.set_u64(e_valid, u64::from(e_off));
        let mut req = [None, None];
        for (k, port) in rp.iter().enumerate() {
            let v = !done_all && rng.random_bool(pace.read_rate);
            let qpn = if rng.random_bool(0.9) {
                names[rng.random_range(0..names.len())]
            } else {
                rng.random_range(0..1 << 24)
            };
            dut.set_u64(port[0], u64::from(v));
            dut.set_u64(port[1], u64::from(qpn));
            req[k] = v.then_some(qpn);
        }
        own.drive(&mut dut, &owners, &mut rng, pace.p_done);
        dut.eval();

        // outputs of this cycle
        if dut.get_bool(k_done) {
            let rdata = dut.get_bool(k_we).then(|| {
                dut.get(k_rdata, &mut w);
                let mut b = vec![0u8; 128];
                unpack_bytes(&w, &mut b);
                b
            });
            rep.outcomes.push(CmdOutcome { error: dut.get_u64(k_err) as u8, rdata });
            match inflight.take() {
                Some((false, i, at)) => {
                    evs.push((cycle, Ev::Cmd(i)));
                    rep.latency.push(cycle - at);
                }
                other => {
                    return Err(SimError::Config(format!("cycle {cycle}: cmd_done without a command ({other:?})")))
                }
            }
        }
        if dut.get_bool(q_valid) {
            rep.errors.push(QpErr { qpn: dut.get_u64(q_qpn) as u32, cause: dut.get_u64(q_cause) as u8 });
            match inflight.take() {
                Some((true, i, at)) => {
                    evs.push((cycle, Ev::Err(i)));
                    rep.err_latency.push(cycle - at);
                }
                other => {
                    return Err(SimError::Config(format!("cycle {cycle}: qp_err_valid without an error ({other:?})")))
                }
            }
        }
        if let Some(op) = own.sample(&dut, &mut owners) {
            rep.ops.push(op);
        }
        for (k, port) in rp.iter().enumerate() {
            if dut.get_bool(port[2]) {
                let Some(pos) = pending_reads.iter().position(|r| r.1 == k && r.0 + 2 == cycle) else {
                    return Err(SimError::Config(format!("cycle {cycle}: port {k} answered no request")));
                };
                let (_, _, qpn) = pending_reads.remove(pos);
                dut.get(port[3], &mut w);
                let mut attr = vec![0u8; QpAttr::SIZE];
                unpack_bytes(&w, &mut attr);
                rep.reads[k].push(AttrRead { qpn, attr, state: dut.get_u64(port[4]) as u8 });
            }
        }
        if let Some(r) = pending_reads.iter().find(|r| r.0 + 2 < cycle) {
            return Err(SimError::Config(format!(
                "cycle {cycle}: port {} did not answer the read of cycle {}",
                r.1, r.0
            )));
        }
        for (k, q) in req.iter().enumerate() {
            if let Some(qpn) = q {
                pending_reads.push((cycle, k, *qpn));
                evs.push((cycle, Ev::Read(k, *qpn)));
            }
        }
        // handshakes
        if e_off && dut.get_bool(e_ready) {
            if let Some((true, i, at)) = inflight {
                // the previous error ended without effect
                evs.push((at, Ev::Err(i)));
            }
            inflight = Some((true, pe, cycle));
            pe += 1;
            e_off = false;
            rep.errors_offered += 1;
        } else if c_off && dut.get_bool(k_ready) {
            if let Some((true, i, at)) = inflight {
                evs.push((at, Ev::Err(i)));
            }
            inflight = Some((false, pc, cycle));
            pc += 1;
            c_off = false;
        } else if idle {
            if let Some((true, i, at)) = inflight.take() {
                // an error that ended without effect (the block is idle again)
                evs.push((at, Ev::Err(i)));
            }
        }
        dut.tick();
        cycle += 1;
        if cycle > 200 * (prog.len() + errs.len()) as u64 + 10_000 {
            return Err(SimError::Config(format!(
                "roce_qp_ctx stalled: {pc} of {} program entries, {pe} of {} errors",
                prog.len(),
                errs.len()
            )));
        }
    }
    rep.cycles = cycle;

    // the model replays the run in cycle order: effects first, then events, then reads
    let rank = |e: &Ev| match e {
        Ev::Cmd(_) | Ev::Err(_) => 0,
        Ev::Side(_) => 1,
        Ev::Read(..) => 2,
    };
    evs.sort_by_key(|(c, e)| (*c, rank(e)));
    let mut m = RoceQpCtx::new(LOG_N, MAX_MTU);
    let mut cqs = vec![false; 1 << LOG_CQ];
    let (mut outcomes, mut ops, mut qerrs) = (Vec::new(), Vec::new(), Vec::new());
    let mut reads: [Vec<AttrRead>; 2] = [Vec::new(), Vec::new()];
    for (_, e) in &evs {
        match *e {
            Ev::Cmd(i) => {
                if let Some(QpCtxOp::Command { opcode, index, arg, data }) = prog.get(i) {
                    let r =
                        m.command(*opcode, *index, *arg, data, |cq| cqs.get(usize::from(cq)).copied().unwrap_or(false));
                    outcomes.push(CmdOutcome { error: r.error.code(), rdata: r.rdata });
                    ops.extend(r.ops);
                }
            }
            Ev::Err(i) => {
                if let Some((qe, op)) = m.transport_error(errs[i].qpn, errs[i].cause) {
                    qerrs.push(qe);
                    ops.push(op);
                }
            }
            Ev::Side(i) => match prog.get(i) {
                Some(QpCtxOp::Cq { cq, valid }) => {
                    if let Some(b) = cqs.get_mut(usize::from(*cq)) {
                        *b = *valid;
                    }
                }
                Some(QpCtxOp::Rings { qpn, idx }) => m.set_rings(*qpn, idx[0], idx[1], idx[2], idx[3]),
                _ => {}
            },
            Ev::Read(k, qpn) => {
                let (a, st) = m.attr(qpn);
                reads[k].push(AttrRead { qpn, attr: a.encode().to_vec(), state: st.code() });
            }
        }
    }
    compare_seq(&mut rep.divergences, "command outcome", &rep.outcomes, &outcomes);
    compare_seq(&mut rep.divergences, "context op", &rep.ops, &ops);
    compare_seq(&mut rep.divergences, "QP error", &rep.errors, &qerrs);
    compare_seq(&mut rep.divergences, "RX attribute read", &rep.reads[0], &reads[0]);
    compare_seq(&mut rep.divergences, "TX attribute read", &rep.reads[1], &reads[1]);
    Ok(rep)
}
