//! Lockstep run of `roce_regs` against `roce_model::blocks::regs`, port for port and
//! cycle for cycle.
//!
//! A random AXI4-Lite master (independent address/data/read channels with random delays,
//! random bready/rready, partial strobes, every contract register, reserved and unaligned
//! addresses, W1C, commands, doorbells, soft resets), a random command executor, random
//! interrupt causes, status inputs, doorbell backpressure and counter increments (one
//! counter at the maximum increment every cycle so it crosses 2^32) drive the Verilated
//! register file and the model with the same inputs. Every output port of the HDL is
//! compared with the model's port of the same name in every cycle; the two port lists must
//! be the same set. The run stops at the first divergence.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::regs::{self as model, RegsIn, RegsParams, RoceRegs};
use roce_model::contract::regs;

use crate::vl::{Dut, Model, Port};
use crate::SimError;

/// What a run does.
#[derive(Clone, Copy, Debug)]
pub struct RegsRun {
    /// Seed of every random choice.
    pub seed: u64,
    /// Cycles to run after reset.
    pub cycles: u64,
}

/// The first difference between HDL and model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RegsDivergence {
    /// Cycle (after reset) in which the outputs differ.
    pub cycle: u64,
    /// The output port.
    pub port: String,
    /// Its value in the HDL (32-bit words, low first).
    pub hdl: Vec<u32>,
    /// Its value in the model.
    pub model: Vec<u32>,
}

impl std::fmt::Display for RegsDivergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hex = |v: &[u32]| v.iter().rev().map(|w| format!("{w:08x}")).collect::<Vec<_>>().join("_");
        write!(f, "cycle {}: port {}: hdl {} model {}", self.cycle, self.port, hex(&self.hdl), hex(&self.model))
    }
}

/// What a run exercised and found.
#[derive(Clone, Debug, Default)]
pub struct RegsReport {
    /// Cycles run.
    pub cycles: u64,
    /// Write responses (B handshakes), of which SLVERR.
    pub writes: u64,
    /// SLVERR write responses.
    pub slverr: u64,
    /// Read responses (R handshakes).
    pub reads: u64,
    /// Reads of a counter's HI register that returned a non-zero value.
    pub hi_reads_nonzero: u64,
    /// Doorbells taken from `m_axis_db`.
    pub doorbells: u64,
    /// Commands completed (`cmd_done` while busy).
    pub commands: u64,
    /// `soft_reset` pulses.
    pub soft_resets: u64,
    /// Cycles with `irq` high.
    pub irq_cycles: u64,
    /// The first divergence, if any.
    pub divergence: Option<RegsDivergence>,
}

/// Every register word the master addresses: each element of each contract register.
fn register_words() -> Vec<u32> {
    regs::ALL.iter().flat_map(|r| (0..r.count).map(move |i| r.offset + 4 * i)).collect()
}

struct Txn {
    addr: u16,
    data: u32,
    strb: u8,
}

/// Run the lockstep comparison.
pub fn regs_lockstep(run: RegsRun, fst: Option<&Path>) -> Result<RegsReport, SimError> {
    let m = Model::Regs;
    let mut dut = Dut::new(m, fst)?;
    let mut rng = ChaCha8Rng::seed_from_u64(run.seed);
    let mut mdl = RoceRegs::new(RegsParams::default());
    let ncnt = model::num_counters();

    // Port maps: every HDL input is driven from RegsIn::ports, every HDL output compared with
    // RegsOut::ports; the name sets must be equal.
    let rst = dut.port("rst").ok_or_else(|| SimError::Config("roce_regs has no rst".into()))?;
    let probe_in = RegsIn { cnt_add: vec![0; ncnt], ..RegsIn::default() }.ports();
    let probe_out = mdl.outputs().ports();
    let mut ins: Vec<(usize, Port)> = Vec::new();
    let mut outs: Vec<(usize, Port, String)> = Vec::new();
    for (name, p) in dut.ports() {
        if name == "clk" || name == "rst" {
            continue;
        }
        if p.is_output() {
            let k = probe_out
                .iter()
                .position(|(n, _)| *n == name)
                .ok_or_else(|| SimError::Config(format!("model has no output port {name}")))?;
            outs.push((k, p, name.to_string()));
        } else {
            let k = probe_in
                .iter()
                .position(|(n, _)| *n == name)
                .ok_or_else(|| SimError::Config(format!("model has no input port {name}")))?;
            ins.push((k, p));
        }
    }
    if ins.len() != probe_in.len() || outs.len() != probe_out.len() {
        return Err(SimError::Config(format!(
            "port lists differ: HDL {} in / {} out, model {} in / {} out",
            ins.len(),
            outs.len(),
            probe_in.len(),
            probe_out.len()
        )));
    }

    // reset (inputs idle)
    let idle = RegsIn { cnt_add: vec![0; ncnt], ..RegsIn::default() };
    for (k, p) in &ins {
        dut.set(*p, &idle.ports()[*k].1);
    }
    for _ in 0..4 {
        dut.set_u64(rst, 1);
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);

    let words = register_words();
    let mut rep = RegsReport::default();
    let mut i = idle.clone();
    i.status_ready = true;
    i.status_link_up = true;
    // master state
    let (mut aw_wait, mut w_wait, mut ar_wait) = (0u32, 0u32, 0u32);
    let mut wr: Option<Txn> = None;
    let mut aw_done = true;
    let mut w_done = true;
    let mut rd: Option<u16> = None;
    // executor state: cycles until done once accepted
    let mut exec: Option<u32> = None;
    let soft_until = run.cycles / 5;
    let mut hdl_words = [0u32; 40];

    let pick_addr = |rng: &mut ChaCha8Rng| -> u16 {
        match rng.random_range(0..100) {
            0..=54 => words[rng.random_range(0..words.len())] as u16,
            55..=64 => [regs::SQ_DB, regs::RQ_DB, regs::CQ_DB][rng.random_range(0..3)] as u16,
            65..=72 => regs::CMD as u16,
            73..=78 => regs::IRQ_STATUS as u16,
            79..=84 => regs::CTRL as u16,
            85..=89 => (regs::CMD_DATA + 4 * rng.random_range(0..32)) as u16,
            90..=94 => rng.random::<u16>() & !3,
            _ => rng.random::<u16>(),
        }
    };

    for cycle in 0..run.cycles {
        let o = mdl.outputs();

        // ---- master: new transactions and channel valids
        if aw_done && w_done && wr.is_none() && rng.random_bool(0.5) {
            let addr = pick_addr(&mut rng);
            let mut data: u32 = rng.random();
            if u32::from(addr) & !3 == regs::CTRL {
                data &= !regs::ctrl::SOFT_RESET.mask();
                if cycle < soft_until && rng.random_bool(0.05) {
                    data |= regs::ctrl::SOFT_RESET.mask();
                }
                if rng.random_bool(0.7) {
                    data |= regs::ctrl::ENABLE.mask();
                }
            }
            if u32::from(addr) & !3 == regs::CMD {
                data = (data & !0xFF) | rng.random_range(0..12);
            }
            let strb = if rng.random_bool(0.85) { 0xF } else { rng.random::<u8>() & 0xF };
            wr = Some(Txn { addr, data, strb });
            aw_done = false;
            w_done = false;
            aw_wait = rng.random_range(0..4);
            w_wait = rng.random_range(0..4);
        }
        if let Some(t) = &wr {
            i.awaddr = t.addr;
            i.wdata = t.data;
            i.wstrb = t.strb;
        }
        i.awvalid = !aw_done && aw_wait == 0;
        i.wvalid = !w_done && w_wait == 0;
        if rd.is_none() && rng.random_bool(0.5) {
            rd = Some(pick_addr(&mut rng));
            ar_wait = rng.random_range(0..4);
        }
        i.araddr = rd.unwrap_or(0);
        i.arvalid = rd.is_some() && ar_wait == 0;
        i.bready = rng.random_bool(0.7);
        i.rready = rng.random_bool(0.7);

        // ---- executor, interrupt causes, status, doorbell sink, counters
        i.cmd_ready = o.cmd_valid && rng.random_bool(0.5);
        i.cmd_done = false;
        i.cmd_rdata_we = false;
        match exec {
            Some(0) => {
                i.cmd_done = true;
                i.cmd_error = rng.random_range(0..9);
                if rng.random_bool(0.5) {
                    i.cmd_rdata_we = true;
                    for w in i.cmd_rdata.iter_mut() {
                        *w = rng.random();
                    }
                }
                exec = None;
            }
            Some(n) => exec = Some(n - 1),
            None => {
                if rng.random_bool(0.001) {
                    i.cmd_done = true; // spurious: ignored while not busy
                    i.cmd_error = rng.random();
                }
            }
        }
        i.cq_event = rng.random_bool(0.003);
        i.fatal = rng.random_bool(0.0005);
        i.qp_err_valid = rng.random_bool(0.003);
        i.qp_err_qpn = rng.random::<u32>() & 0xFF_FFFF;
        i.qp_err_cause = rng.random();
        i.cq_err_valid = rng.random_bool(0.003);
        i.cq_err_cq = rng.random::<u16>() & 0x3FFF;
        i.cq_err_cause = rng.random();
        if rng.random_bool(0.001) {
            i.status_ready = !i.status_ready;
        }
        if rng.random_bool(0.001) {
            i.status_link_up = !i.status_link_up;
        }
        i.db_tready = rng.random_bool(0.6);
        for (k, a) in i.cnt_add.iter_mut().enumerate() {
            *a = match k {
                1 => 0xFFFF,
                0 => rng.random_range(0..4),
                _ if rng.random_bool(0.1) => rng.random_range(0..0x1_0000),
                _ => 0,
            };
        }

        // ---- drive, settle, compare
        let ip = i.ports();
        for (k, p) in &ins {
            dut.set(*p, &ip[*k].1);
        }
        dut.eval();
        let op = o.ports();
        for (k, p, name) in &outs {
            let n = p.words();
            dut.get(*p, &mut hdl_words[..n]);
            let mut want = op[*k].1.clone();
            want.resize(n, 0);
            let bits = p.bits() % 32;
            if bits != 0 {
                want[n - 1] &= (1u32 << bits) - 1;
            }
            if hdl_words[..n] != want[..] {
                rep.divergence =
                    Some(RegsDivergence { cycle, port: name.clone(), hdl: hdl_words[..n].to_vec(), model: want });
                rep.cycles = cycle;
                return Ok(rep);
            }
        }

        // ---- bookkeeping of this edge's handshakes
        if i.awvalid && o.awready {
            aw_done = true;
        }
        if i.wvalid && o.wready {
            w_done = true;
        }
        if aw_done && w_done {
            wr = None;
        }
        aw_wait = aw_wait.saturating_sub(1);
        w_wait = w_wait.saturating_sub(1);
        if i.arvalid && o.arready {
            rd = None;
        }
        ar_wait = ar_wait.saturating_sub(1);
        if o.bvalid && i.bready {
            rep.writes += 1;
            rep.slverr += u64::from(o.bresp == model::RESP_SLVERR);
        }
        if o.rvalid && i.rready {
            rep.reads += 1;
        }
        if o.db_valid && i.db_tready {
            rep.doorbells += 1;
        }
        if o.cmd_valid && i.cmd_ready {
            exec = Some(rng.random_range(0..20));
        }
        if o.soft_reset {
            rep.soft_resets += 1;
            exec = None; // the executor is reset with the engine
        }
        rep.commands += u64::from(i.cmd_done && mdl.busy());
        rep.irq_cycles += u64::from(o.irq);
        let hi_read = pending_hi_read(&o);
        mdl.tick(&i);
        dut.tick();
        if hi_read && mdl.outputs().rdata != 0 {
            rep.hi_reads_nonzero += 1;
        }
    }
    rep.cycles = run.cycles;
    Ok(rep)
}

/// Whether the read the model answers at this edge is of a counter's HI register.
fn pending_hi_read(o: &model::RegsOut) -> bool {
    o.pending_read.is_some_and(|a| {
        let a = u32::from(a) & !3;
        (regs::RX_FRAMES_LO..regs::RX_FRAMES_LO + 8 * model::num_counters() as u32).contains(&a) && a & 4 != 0
    })
}
