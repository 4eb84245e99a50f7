//! The Verilated control plane (`roce_ctrl`: registers, command router, QP, CQ and MR
//! tables) behind a blocking 32-bit MMIO interface, so the same register programs run on it
//! and on the engine model's `mmio_read` / `mmio_write` (tests/tests/ctrl_cosim.rs).
//!
//! Inputs not driven by a program are tied off: no completions, no key checks, no attribute
//! reads, no transport errors, link up. The owners of the QP engine state are played by
//! [`Owners`] (context ops acknowledged and state reads answered after random delays); SQ/RQ
//! doorbells are taken with random backpressure and recorded.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::cosim::qp_ctx::{OwnerPorts, Owners};
use crate::vl::{Dut, Model, Port};
use crate::SimError;

/// The control plane with an AXI4-Lite master.
pub struct CtrlDut {
    dut: Dut,
    p: [Port; 13],
    rng: ChaCha8Rng,
    /// SQ/RQ doorbells taken from `m_axis_db`: (kind, value).
    pub doorbells: Vec<(u32, u32)>,
    db: (Port, Port, Port, Port),
    own: OwnerPorts,
    /// The engine-state owners (roce_qp_ctx's context ops applied).
    pub owners: Owners,
    /// Context ops acknowledged.
    pub ctx_ops: usize,
}

/// `roce_ctrl`'s LOG_MAX_QP as built (the default).
pub const LOG_MAX_QP: u32 = 10;

const NAMES: [&str; 13] = [
    "s_axil_awaddr",
    "s_axil_awvalid",
    "s_axil_awready",
    "s_axil_wdata",
    "s_axil_wstrb",
    "s_axil_wvalid",
    "s_axil_wready",
    "s_axil_bvalid",
    "s_axil_araddr",
    "s_axil_arvalid",
    "s_axil_arready",
    "s_axil_rvalid",
    "s_axil_rdata",
];

impl CtrlDut {
    /// Reset the block; `seed` drives the random channel delays and backpressure.
    pub fn new(seed: u64, fst: Option<&Path>) -> Result<Self, SimError> {
        let mut dut = Dut::new(Model::Ctrl, fst)?;
        let port = |d: &Dut, n: &str| d.port(n).ok_or_else(|| SimError::Config(format!("roce_ctrl has no port {n}")));
        let mut p = Vec::new();
        for n in NAMES {
            p.push(port(&dut, n)?);
        }
        let p: [Port; 13] = p.try_into().map_err(|_| SimError::Config("ports".into()))?;
        let db = (
            port(&dut, "m_axis_db_tdata")?,
            port(&dut, "m_axis_db_tuser")?,
            port(&dut, "m_axis_db_tvalid")?,
            port(&dut, "m_axis_db_tready")?,
        );
        for (n, v) in [
            ("status_link_up", 1),
            ("dp_init", 1),
            ("rx_attr_req_valid", 0),
            ("tx_attr_req_valid", 0),
            ("s_qp_err_valid", 0),
            ("m_axis_dma_tready", 1),
            ("m_axis_mr_tready", 1),
            ("s_axil_bready", 1),
            ("s_axil_rready", 1),
            ("s_axil_wstrb", 0xF),
        ] {
            let q = port(&dut, n)?;
            dut.set_u64(q, v);
        }
        let rst = port(&dut, "rst")?;
        for _ in 0..4 {
            dut.set_u64(rst, 1);
            dut.eval();
            dut.tick();
        }
        dut.set_u64(rst, 0);
        let own = OwnerPorts::new(&dut)?;
        Ok(CtrlDut {
            dut,
            p,
            rng: ChaCha8Rng::seed_from_u64(seed),
            doorbells: Vec::new(),
            db,
            own,
            owners: Owners::new(1 << LOG_MAX_QP),
            ctx_ops: 0,
        })
    }

    /// Cycles run so far.
    pub fn cycles(&self) -> u64 {
        self.dut.cycles()
    }

    fn step(&mut self) {
        let ready = self.rng.random_bool(0.5);
        self.dut.set_u64(self.db.3, u64::from(ready));
        self.dut.eval();
        self.own.drive(&mut self.dut, &self.owners, &mut self.rng, 0.5);
        self.dut.eval();
        if ready && self.dut.get_bool(self.db.2) {
            self.doorbells.push((self.dut.get_u64(self.db.1) as u32, self.dut.get_u64(self.db.0) as u32));
        }
        if self.own.sample(&self.dut, &mut self.owners).is_some() {
            self.ctx_ops += 1;
        }
        self.dut.tick();
    }

    /// A 32-bit register write; returns BRESP.
    pub fn write(&mut self, off: u32, v: u32) -> Result<u32, SimError> {
        let [awaddr, awvalid, awready, wdata, _, wvalid, wready, bvalid, ..] = self.p;
        let bresp = self.dut.port("s_axil_bresp").ok_or_else(|| SimError::Config("no bresp".into()))?;
        self.dut.set_u64(awaddr, u64::from(off));
        self.dut.set_u64(wdata, u64::from(v));
        let (mut aw, mut w) = (self.rng.random_range(0..3u32), self.rng.random_range(0..3u32));
        let (mut aw_done, mut w_done) = (false, false);
        for _ in 0..1000 {
            self.dut.set_u64(awvalid, u64::from(!aw_done && aw == 0));
            self.dut.set_u64(wvalid, u64::from(!w_done && w == 0));
            self.dut.eval();
            let done = self.dut.get_bool(bvalid);
            let r = self.dut.get_u64(bresp) as u32;
            aw_done |= aw == 0 && self.dut.get_bool(awready);
            w_done |= w == 0 && self.dut.get_bool(wready);
            aw = aw.saturating_sub(1);
            w = w.saturating_sub(1);
            self.step();
            if done {
                self.dut.set_u64(awvalid, 0);
                self.dut.set_u64(wvalid, 0);
                return Ok(r);
            }
        }
        Err(SimError::Config(format!("roce_ctrl: no write response for {off:#x}")))
    }

    /// A 32-bit register read.
    pub fn read(&mut self, off: u32) -> Result<u32, SimError> {
        let [.., araddr, arvalid, arready, rvalid, rdata] = self.p;
        self.dut.set_u64(araddr, u64::from(off));
        let mut wait = self.rng.random_range(0..3u32);
        let mut sent = false;
        for _ in 0..1000 {
            self.dut.set_u64(arvalid, u64::from(!sent && wait == 0));
            self.dut.eval();
            let done = self.dut.get_bool(rvalid);
            let v = self.dut.get_u64(rdata) as u32;
            sent |= wait == 0 && self.dut.get_bool(arready);
            wait = wait.saturating_sub(1);
            self.step();
            if done {
                self.dut.set_u64(arvalid, 0);
                return Ok(v);
            }
        }
        Err(SimError::Config(format!("roce_ctrl: no read response for {off:#x}")))
    }

    /// Idle cycles.
    pub fn idle(&mut self, n: u64) {
        for _ in 0..n {
            self.step();
        }
    }
}
