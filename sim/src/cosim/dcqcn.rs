//! Lockstep run of `roce_dcqcn` against `roce_model::blocks::dcqcn`: five input queues
//! (CE events, QP resets, received CNPs, sent-byte reports, pacing queries), each offered in
//! its own order after its own idle gaps, configuration changes at given cycles, CNP requests
//! taken under random backpressure. The HDL's cycle counter (`now_cycle`) stamps every
//! operation it takes; the model then runs cycle by cycle with the same inputs taken and the
//! same `m_cnp_ready` (its input slots issue the operations, the engine functions apply
//! them), and the CNP requests and the pacing answers (with the QP's Rc, Rt and alpha) must
//! be equal, in order and at the same cycles; every input must be taken, or refused, where
//! the model's slot is empty, or full.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::dcqcn::{DcqcnIn, DcqcnInputs, PaceAnswer, RoceDcqcn, CFG_LATENCY, PACE_LATENCY};
use roce_model::engine::dcqcn::Events;

use super::compare_seq;
use crate::vl::{Dut, Model, Port};
use crate::SimError;

/// The block's LOG_N and LINE_MBPS in the Verilated build (`Model::Dcqcn`).
pub const LOG_N: u32 = 10;
/// See [`LOG_N`].
pub const LINE_MBPS: u32 = 100_000;

/// An input of the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DcqcnPort {
    /// `s_ce`: a CE-marked packet.
    Ce,
    /// `s_reset`: a QP (re)created.
    Reset,
    /// `s_cnp`: a CNP received.
    Cnp,
    /// `s_sent`: bytes sent.
    Sent,
    /// `s_query`: may the QP send?
    Query,
}

const PORTS: [DcqcnPort; 5] = [DcqcnPort::Ce, DcqcnPort::Reset, DcqcnPort::Cnp, DcqcnPort::Sent, DcqcnPort::Query];

/// One operation offered to the block.
#[derive(Clone, Copy, Debug)]
pub struct DcqcnOp {
    /// Which input.
    pub port: DcqcnPort,
    /// QPN (24 bits).
    pub qpn: u32,
    /// `s_sent_bytes`.
    pub bytes: u16,
    /// Idle cycles on its input before it is offered (counted from the previous operation
    /// of the same input being taken).
    pub gap: u32,
}

/// What a run produced and how it compared.
#[derive(Clone, Debug, Default)]
pub struct DcqcnReport {
    /// CNP requests (QPNs) in HDL order.
    pub cnps: Vec<u32>,
    /// Pacing answers in HDL order.
    pub answers: Vec<PaceAnswer>,
    /// Operations taken: (cycle, index in the operation list), in order.
    pub taken: Vec<(u64, usize)>,
    /// Cycles simulated after reset.
    pub cycles: u64,
    /// Cycles an offered operation waited (refusals) in all.
    pub refused: u64,
    /// What the model's reaction and notification points did.
    pub events: Events,
    /// Differences from the model.
    pub divergences: Vec<String>,
}

struct CfgPorts {
    cnp_en: Port,
    dcqcn_en: Port,
    us: Port,
    ai: Port,
    hai: Port,
    min: Port,
    g: Port,
    init: Port,
    k: Port,
    t: Port,
    b: Port,
    f: Port,
    i: Port,
}

fn drive_cfg(dut: &mut Dut, p: &CfgPorts, c: &DcqcnInputs) {
    let r = &c.regs;
    for (port, v) in [
        (p.cnp_en, u32::from(c.cnp_enable)),
        (p.dcqcn_en, u32::from(c.dcqcn_enable)),
        (p.us, r.us_cycles),
        (p.ai, r.rate_ai),
        (p.hai, r.rate_hai),
        (p.min, r.rate_min),
        (p.g, r.g),
        (p.init, r.alpha_init),
        (p.k, r.alpha_us),
        (p.t, r.rate_us),
        (p.b, r.byte_counter),
        (p.f, r.stages),
        (p.i, r.cnp_interval_us),
    ] {
        dut.set_u64(port, u64::from(v));
    }
}

/// Run `ops` with the configuration `cfgs[0].1` from reset and `cfgs[i].1` from cycle
/// `cfgs[i].0` on (cycles counted by `now_cycle`), CNP requests taken with probability
/// `cnp_ready` per cycle.
pub fn dcqcn_lockstep(
    ops: &[DcqcnOp],
    cfgs: &[(u64, DcqcnInputs)],
    cnp_ready: f64,
    seed: u64,
    fst: Option<&Path>,
) -> Result<DcqcnReport, SimError> {
    let mut dut = Dut::new(Model::Dcqcn, fst)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_dcqcn has no port {n}")));
    let cp = CfgPorts {
        cnp_en: p("cfg_cnp_enable")?,
        dcqcn_en: p("cfg_dcqcn_enable")?,
        us: p("cfg_us_cycles")?,
        ai: p("cfg_dcqcn_rate_ai")?,
        hai: p("cfg_dcqcn_rate_hai")?,
        min: p("cfg_dcqcn_rate_min")?,
        g: p("cfg_dcqcn_g")?,
        init: p("cfg_dcqcn_alpha_init")?,
        k: p("cfg_dcqcn_alpha_us")?,
        t: p("cfg_dcqcn_rate_us")?,
        b: p("cfg_dcqcn_byte_counter")?,
        f: p("cfg_dcqcn_stages")?,
        i: p("cfg_cnp_interval_us")?,
    };
    let (rst, soft, init_done, now_p) = (p("rst")?, p("soft_reset")?, p("init_done")?, p("now_cycle")?);
    // per input: valid, ready, qpn
    let inp = [
        (p("s_ce_valid")?, p("s_ce_ready")?, p("s_ce_qpn")?),
        (p("s_reset_valid")?, p("s_reset_ready")?, p("s_reset_qpn")?),
        (p("s_cnp_valid")?, p("s_cnp_ready")?, p("s_cnp_qpn")?),
        (p("s_sent_valid")?, p("s_sent_ready")?, p("s_sent_qpn")?),
        (p("s_query_valid")?, p("s_query_ready")?, p("s_query_qpn")?),
    ];
    let sent_bytes = p("s_sent_bytes")?;
    let (c_valid, c_ready, c_qpn) = (p("m_cnp_valid")?, p("m_cnp_ready")?, p("m_cnp_qpn")?);
    let pace = [
        p("m_pace_valid")?,
        p("m_pace_qpn")?,
        p("m_pace_allowed")?,
        p("m_pace_limited")?,
        p("m_pace_rc")?,
        p("m_pace_rt")?,
        p("m_pace_alpha")?,
    ];

    let first = cfgs.first().map_or_else(DcqcnInputs::default, |c| c.1);
    drive_cfg(&mut dut, &cp, &first);
    for (v, _, _) in inp {
        dut.set_u64(v, 0);
    }
    dut.set_u64(soft, 0);
    dut.set_u64(c_ready, 0);
    for _ in 0..4 {
        dut.set_u64(rst, 1);
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);
    dut.eval();

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let queues: Vec<Vec<usize>> =
        PORTS.iter().map(|&k| (0..ops.len()).filter(|&i| ops[i].port == k).collect()).collect();
    let mut pos = [0usize; 5];
    let mut wait = [0u32; 5]; // idle cycles left before the head is offered
    for k in 0..5 {
        if let Some(&i) = queues[k].first() {
            wait[k] = ops[i].gap;
        }
    }
    let mut offered = [false; 5];
    let mut rep = DcqcnReport::default();
    let mut answer_cycles: Vec<u64> = Vec::new();
    let mut cnp_cycles: Vec<u64> = Vec::new();
    // per cycle from `first_cycle`: m_cnp_ready; and the refusals (cycle, operation)
    let mut first_cycle = None;
    let mut cnp_ready_log: Vec<bool> = Vec::new();
    let mut refusals: Vec<(u64, usize)> = Vec::new();
    let mut next_cfg = 1;
    let mut idle = 0u64;
    loop {
        let now = dut.get_u64(now_p);
        if let Some(&(at, c)) = cfgs.get(next_cfg) {
            if now >= at {
                drive_cfg(&mut dut, &cp, &c);
                next_cfg += 1;
            }
        }
        let ready_now = dut.get_bool(init_done);
        for k in 0..5 {
            if offered[k] || pos[k] >= queues[k].len() || !ready_now {
                continue;
            }
            if wait[k] > 0 {
                wait[k] -= 1;
                continue;
            }
            let op = &ops[queues[k][pos[k]]];
            offered[k] = true;
            dut.set_u64(inp[k].0, 1);
            dut.set_u64(inp[k].2, u64::from(op.qpn));
            if op.port == DcqcnPort::Sent {
                dut.set_u64(sent_bytes, u64::from(op.bytes));
            }
        }
        let take_cnp = rng.random_bool(cnp_ready);
        dut.set_u64(c_ready, u64::from(take_cnp));
        first_cycle.get_or_insert(now);
        cnp_ready_log.push(take_cnp);
        dut.eval();
        let mut moved = false;
        for k in 0..5 {
            if !offered[k] {
                continue;
            }
            if dut.get_bool(inp[k].1) {
                rep.taken.push((now, queues[k][pos[k]]));
                offered[k] = false;
                pos[k] += 1;
                if let Some(&i) = queues[k].get(pos[k]) {
                    wait[k] = ops[i].gap;
                }
                moved = true;
            } else {
                rep.refused += 1;
                refusals.push((now, queues[k][pos[k]]));
            }
        }
        if take_cnp && dut.get_bool(c_valid) {
            rep.cnps.push(dut.get_u64(c_qpn) as u32);
            cnp_cycles.push(now);
            moved = true;
        }
        if dut.get_bool(pace[0]) {
            rep.answers.push(PaceAnswer {
                qpn: dut.get_u64(pace[1]) as u32,
                allowed: dut.get_bool(pace[2]),
                limited: dut.get_bool(pace[3]),
                rc: dut.get_u64(pace[4]) as u32,
                rt: dut.get_u64(pace[5]) as u32,
                alpha: dut.get_u64(pace[6]) as u32,
            });
            answer_cycles.push(now);
            moved = true;
        }
        dut.tick();
        for k in 0..5 {
            if !offered[k] {
                dut.set_u64(inp[k].0, 0);
            }
        }
        rep.cycles = now + 1;
        let pending = (0..5).any(|k| pos[k] < queues[k].len()) || dut.get_bool(c_valid);
        idle = if moved || pending { 0 } else { idle + 1 };
        if !pending && idle > 8 {
            break;
        }
        if now > 1 << 31 {
            return Err(SimError::Config(format!("roce_dcqcn: no end after {now} cycles ({} taken)", rep.taken.len())));
        }
    }

    // the model, cycle by cycle, taking the operations at the cycles the HDL took them
    let as_in = |op: &DcqcnOp| match op.port {
        DcqcnPort::Ce => DcqcnIn::Ce(op.qpn),
        DcqcnPort::Reset => DcqcnIn::Reset(op.qpn),
        DcqcnPort::Cnp => DcqcnIn::Cnp(op.qpn),
        DcqcnPort::Sent => DcqcnIn::Sent(op.qpn, op.bytes),
        DcqcnPort::Query => DcqcnIn::Query(op.qpn),
    };
    let mut m = RoceDcqcn::new(LOG_N, LINE_MBPS, first);
    let mut cfg_i = 1;
    let (mut cnps, mut m_cnp_cycles, mut answers, mut m_answer_cycles) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut ti, mut ri) = (0, 0);
    let mut taken_now = Vec::new();
    let c0 = first_cycle.unwrap_or(0);
    for (c, &ready) in (c0..).zip(&cnp_ready_log) {
        while let Some(&(c_at, c_new)) = cfgs.get(cfg_i) {
            if c_at + CFG_LATENCY > c {
                break;
            }
            m.configure(c_at + CFG_LATENCY, c_new);
            cfg_i += 1;
        }
        taken_now.clear();
        while let Some(&(at, i)) = rep.taken.get(ti) {
            if at != c {
                break;
            }
            taken_now.push(as_in(&ops[i]));
            ti += 1;
        }
        while let Some(&(at, i)) = refusals.get(ri) {
            if at != c {
                break;
            }
            if rep.divergences.is_empty() && m.ready(as_in(&ops[i])) {
                rep.divergences.push(format!("cycle {c}: the HDL refused {:?}, the model's slot is empty", ops[i]));
            }
            ri += 1;
        }
        match m.cycle(c, &taken_now, ready) {
            Ok(out) => {
                if let Some(a) = out.answer {
                    answers.push(a);
                    m_answer_cycles.push(c + PACE_LATENCY);
                }
                if let Some(q) = out.cnp {
                    cnps.push(q);
                    m_cnp_cycles.push(c);
                }
            }
            Err(e) => {
                rep.divergences.push(format!("the HDL took an operation the model refuses: {e}"));
                break;
            }
        }
    }
    rep.events = m.events;
    compare_seq(&mut rep.divergences, "CNP request", &rep.cnps, &cnps);
    compare_seq(&mut rep.divergences, "CNP request cycle", &cnp_cycles, &m_cnp_cycles);
    compare_seq(&mut rep.divergences, "pacing answer", &rep.answers, &answers);
    compare_seq(&mut rep.divergences, "pacing answer cycle", &answer_cycles, &m_answer_cycles);
    Ok(rep)
}
