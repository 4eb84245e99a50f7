//! Lockstep run of `roce_mr_check` against `roce_model::blocks::mr_check`: requests
//! (checks and invalidates) and MR commands go to the Verilated block from two independent
//! queues with random gaps, results are taken under random backpressure, and afterwards the
//! model replays requests and commands in the order the HDL accepted them; every result and
//! every command outcome (error code, MR_READ image) must be equal. Latencies of results
//! are measured from acceptance.

use std::collections::VecDeque;
use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::mr_check::{MrReq, MrRes, RoceMrCheck};
use roce_model::contract::records as rec;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model, Port};
use crate::SimError;

/// One MR command.
#[derive(Clone, Debug)]
pub struct MrCmd {
    /// `CmdOpcode` code (any value).
    pub opcode: u8,
    /// CMD.INDEX (24 bits).
    pub index: u32,
    /// CMD_DATA bytes 0..63.
    pub data: [u8; 64],
}

/// A command's outcome as the block reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CmdOutcome {
    /// `cmd_error`.
    pub error: u8,
    /// `cmd_rdata` when `cmd_rdata_we`.
    pub rdata: Option<Vec<u8>>,
}

/// Input pacing.
#[derive(Clone, Copy, Debug)]
pub struct MrPacing {
    /// Probability that a pending request is offered in a cycle.
    pub req_rate: f64,
    /// Probability that a pending command is offered in a cycle.
    pub cmd_rate: f64,
    /// Probability of `m_axis_res_tready` in a cycle.
    pub ready_rate: f64,
    /// Seed of the pacing.
    pub seed: u64,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct MrReport {
    /// Cycles until `init_done` after reset.
    pub init_cycles: u64,
    /// Results in HDL order.
    pub results: Vec<MrRes>,
    /// Command outcomes in HDL order.
    pub outcomes: Vec<CmdOutcome>,
    /// Per result: cycles from its request's acceptance to the result being valid.
    pub latency: Vec<u64>,
    /// The cycle in which the last result was taken.
    pub done_at: u64,
    /// The cycle the first request was accepted.
    pub first_accept: u64,
    /// Differences from the model, in order.
    pub divergences: Vec<String>,
}

struct Ports {
    rst: Port,
    soft: Port,
    init_done: Port,
    req: Port,
    user: Port,
    s_valid: Port,
    s_ready: Port,
    res: Port,
    r_user: Port,
    m_valid: Port,
    m_ready: Port,
    c_valid: Port,
    c_ready: Port,
    c_op: Port,
    c_index: Port,
    c_data: Port,
    c_done: Port,
    c_err: Port,
    c_we: Port,
    c_rdata: Port,
}

fn ports(dut: &Dut) -> Result<Ports, SimError> {
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_mr_check has no port {n}")));
    Ok(Ports {
        rst: p("rst")?,
        soft: p("soft_reset")?,
        init_done: p("init_done")?,
        req: p("s_axis_req")?,
        user: p("s_axis_req_user")?,
        s_valid: p("s_axis_req_tvalid")?,
        s_ready: p("s_axis_req_tready")?,
        res: p("m_axis_res")?,
        r_user: p("m_axis_res_user")?,
        m_valid: p("m_axis_res_tvalid")?,
        m_ready: p("m_axis_res_tready")?,
        c_valid: p("cmd_valid")?,
        c_ready: p("cmd_ready")?,
        c_op: p("cmd_opcode")?,
        c_index: p("cmd_index")?,
        c_data: p("cmd_data")?,
        c_done: p("cmd_done")?,
        c_err: p("cmd_error")?,
        c_we: p("cmd_rdata_we")?,
        c_rdata: p("cmd_rdata")?,
    })
}

enum Accepted {
    Req(usize),
    Cmd(usize),
}

/// Run `phases` through the HDL block; between phases the block gets a soft reset (and the
/// model a fresh table). Each phase is (commands, requests), offered concurrently.
pub fn mr_check_lockstep(
    phases: &[(Vec<MrCmd>, Vec<MrReq>)],
    pace: MrPacing,
    fst: Option<&Path>,
) -> Result<MrReport, SimError> {
    let mut dut = Dut::new(Model::MrCheck, fst)?;
    let p = ports(&dut)?;
    let mut rng = ChaCha8Rng::seed_from_u64(pace.seed);
    let mut rep = MrReport::default();
    let mut cycle = 0u64;
    let mut first_accept = None;

    let wait_init = |dut: &mut Dut, cycle: &mut u64| -> Result<u64, SimError> {
        let t0 = *cycle;
        dut.set_u64(p.soft, 0);
        loop {
            dut.eval();
            if dut.get_bool(p.init_done) {
                return Ok(*cycle - t0);
            }
            if *cycle - t0 > 1 << 20 {
                return Err(SimError::Config("roce_mr_check: init_done never rose".into()));
            }
            dut.tick();
            *cycle += 1;
        }
    };

    for k in [p.s_valid, p.m_ready, p.c_valid, p.soft] {
        dut.set_u64(k, 0);
    }
    for _ in 0..4 {
        dut.set_u64(p.rst, 1);
        dut.eval();
        dut.tick();
    }
    dut.set_u64(p.rst, 0);
    rep.init_cycles = wait_init(&mut dut, &mut cycle)?;

    let mut data_w = [0u32; 16];
    for (ph, (cmds, reqs)) in phases.iter().enumerate() {
        if ph > 0 {
            dut.set_u64(p.soft, 1);
            dut.eval();
            dut.tick();
            cycle += 1;
            wait_init(&mut dut, &mut cycle)?;
        }
        let mut order: Vec<Accepted> = Vec::new();
        let mut accepted_at: VecDeque<u64> = VecDeque::new();
        let (mut ri, mut ci) = (0usize, 0usize);
        let (mut r_off, mut c_off) = (false, false);
        let mut results: Vec<MrRes> = Vec::new();
        let mut outcomes: Vec<CmdOutcome> = Vec::new();
        let mut idle = 0u64;
        let mut first_valid: Option<u64> = None;
        while results.len() < reqs.len() || outcomes.len() < cmds.len() {
            if ri < reqs.len() && !r_off {
                r_off = rng.random_bool(pace.req_rate);
            }
            if ci < cmds.len() && !c_off {
                c_off = rng.random_bool(pace.cmd_rate);
            }
            dut.set_u64(p.s_valid, u64::from(r_off));
            if let Some(r) = reqs.get(ri) {
                let b = rec::MrReq { op: r.invalidate, key: r.key, pd: r.pd, va: r.va, len: r.len, need: r.need };
                dut.set_bundle(p.req, &b);
                dut.set_u64(p.user, r.user.into());
            }
            dut.set_u64(p.c_valid, u64::from(c_off));
            if let Some(c) = cmds.get(ci) {
                dut.set_u64(p.c_op, c.opcode.into());
                dut.set_u64(p.c_index, c.index.into());
                pack_bytes(&c.data, &mut data_w);
                dut.set(p.c_data, &data_w);
            }
            let ready = rng.random_bool(pace.ready_rate);
            dut.set_u64(p.m_ready, u64::from(ready));
            dut.eval();
            let mut moved = false;
            if r_off && dut.get_bool(p.s_ready) {
                order.push(Accepted::Req(ri));
                accepted_at.push_back(cycle);
                first_accept.get_or_insert(cycle);
                ri += 1;
                r_off = false;
                moved = true;
            }
            if c_off && dut.get_bool(p.c_ready) {
                order.push(Accepted::Cmd(ci));
                ci += 1;
                c_off = false;
                moved = true;
            }
            if dut.get_bool(p.m_valid) {
                let seen = *first_valid.get_or_insert(cycle);
                if ready {
                    let at = accepted_at.pop_front().unwrap_or(seen);
                    rep.latency.push(seen.saturating_sub(at));
                    first_valid = None;
                    let b: rec::MrRes = dut.get_bundle(p.res);
                    results.push(MrRes { status: b.status, dma: b.dma, user: dut.get_u64(p.r_user) as u32 });
                    rep.done_at = cycle;
                    moved = true;
                }
            }
            if dut.get_bool(p.c_done) {
                let rdata = dut.get_bool(p.c_we).then(|| {
                    dut.get(p.c_rdata, &mut data_w);
                    let mut b = vec![0u8; 64];
                    unpack_bytes(&data_w, &mut b);
                    b
                });
                outcomes.push(CmdOutcome { error: dut.get_u64(p.c_err) as u8, rdata });
                moved = true;
            }
            dut.tick();
            cycle += 1;
            idle = if moved { 0 } else { idle + 1 };
            if idle > 10_000 {
                return Err(SimError::Config(format!(
                    "roce_mr_check stalled: phase {ph}, {} of {} results, {} of {} commands",
                    results.len(),
                    reqs.len(),
                    outcomes.len(),
                    cmds.len()
                )));
            }
        }

        // the model, in the HDL's acceptance order
        let mut m = RoceMrCheck::new(10);
        let (mut rk, mut ck) = (0usize, 0usize);
        for a in &order {
            match a {
                Accepted::Req(i) => {
                    let want = m.request(&reqs[*i]);
                    if results[rk] != want {
                        rep.divergences.push(format!(
                            "phase {ph} request {i} {:?}: hdl {:?} model {want:?}",
                            reqs[*i], results[rk]
                        ));
                    }
                    rk += 1;
                }
                Accepted::Cmd(i) => {
                    let c = &cmds[*i];
                    let (e, img) = m.command(c.opcode, c.index, &c.data);
                    let want = CmdOutcome { error: e.code(), rdata: img };
                    if outcomes[ck] != want {
                        rep.divergences.push(format!(
                            "phase {ph} command {i} (op {} index {:#x}): hdl {:?} model {want:?}",
                            c.opcode, c.index, outcomes[ck]
                        ));
                    }
                    ck += 1;
                }
            }
        }
        rep.results.extend(results);
        rep.outcomes.extend(outcomes);
    }
    rep.first_accept = first_accept.unwrap_or(0);
    Ok(rep)
}
