//! Model of `hdl/rtl/roce_dcqcn.sv`: the notification point (CNP requests for CE-marked
//! packets) and the DCQCN reaction point with pacing, per QP, as the engine model has them
//! ([`engine::dcqcn`](crate::engine::dcqcn): [`rp_cnp`], [`rp_sent`], [`rp_advance`],
//! [`rp_allowed`], [`np_ce`]). Operation-level: the lockstep test applies each operation at
//! the cycle the HDL took it (`now_cycle`), in that order; the scanner's visits are the
//! engine functions' (`Scan`), so the state and every answer are the HDL's.

use crate::engine::dcqcn::{np_ce, rp_advance, rp_allowed, rp_cnp, rp_sent, DcqcnConfig, Events, QpCc, Scan};

/// Cycles from a query's acceptance to its answer (`m_pace_valid`).
pub const PACE_LATENCY: u64 = 3;
/// Cycles from a CE event's acceptance to its CNP request entering the output FIFO.
pub const CNP_LATENCY: u64 = 2;
/// Cycles from a change of the `cfg_*` inputs to the first operation that uses it.
pub const CFG_LATENCY: u64 = 1;

/// The block's `cfg_*` inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcqcnInputs {
    /// `cfg_cnp_enable`.
    pub cnp_enable: bool,
    /// `cfg_dcqcn_enable`.
    pub dcqcn_enable: bool,
    /// The register values (its `line_mbps` is replaced by the block's LINE_MBPS).
    pub regs: DcqcnConfig,
}

impl Default for DcqcnInputs {
    fn default() -> Self {
        DcqcnInputs { cnp_enable: true, dcqcn_enable: true, regs: DcqcnConfig::default() }
    }
}

/// A pacing answer (`m_pace_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PaceAnswer {
    /// `m_pace_qpn`.
    pub qpn: u32,
    /// `m_pace_allowed`: the QP may send now.
    pub allowed: bool,
    /// `m_pace_limited`.
    pub limited: bool,
    /// `m_pace_rc`: Rc, Q20.8 Mb/s (0 when unlimited).
    pub rc: u32,
    /// `m_pace_rt`: Rt, Q20.8 Mb/s.
    pub rt: u32,
    /// `m_pace_alpha`: alpha, Q0.16.
    pub alpha: u32,
}

/// The block's state.
#[derive(Clone, Debug)]
pub struct RoceDcqcn {
    scan: Scan,
    line_mbps: u32,
    rows: Vec<QpCc>,
    cfg: DcqcnInputs,
    /// What happened, for coverage.
    pub events: Events,
}

impl RoceDcqcn {
    /// Cleared tables of `2^log_n` QPs (the HDL's LOG_N), line rate `line_mbps` (LINE_MBPS).
    pub fn new(log_n: u32, line_mbps: u32, cfg: DcqcnInputs) -> Self {
        let mut m = RoceDcqcn {
            scan: Scan { log_n },
            line_mbps,
            rows: vec![QpCc::default(); 1 << log_n],
            cfg,
            events: Events::default(),
        };
        m.cfg.regs.line_mbps = line_mbps;
        m
    }

    /// The `cfg_*` inputs are `cfg` for operations taken at cycle `from` and later (inputs
    /// changed in cycle `from - CFG_LATENCY`). Operations must come in cycle order.
    pub fn configure(&mut self, from: u64, cfg: DcqcnInputs) {
        let (old, scan) = (self.cfg.regs, self.scan);
        for (q, row) in self.rows.iter_mut().enumerate() {
            rp_advance(&mut row.rp, &old, scan, q as u32, from, &mut self.events);
        }
        self.cfg = cfg;
        self.cfg.regs.line_mbps = self.line_mbps;
    }

    fn row(&mut self, qpn: u32) -> Option<&mut QpCc> {
        self.rows.get_mut(qpn as usize)
    }

    /// `s_reset`: the QP's state is cleared.
    pub fn reset_qp(&mut self, _at: u64, qpn: u32) {
        if let Some(r) = self.row(qpn) {
            *r = QpCc::default();
        }
    }

    /// `s_cnp`: a CNP arrived for `qpn` at cycle `at`.
    pub fn cnp(&mut self, at: u64, qpn: u32) {
        let (cfg, scan, en) = (self.cfg.regs, self.scan, self.cfg.dcqcn_enable);
        let mut ev = self.events;
        if let Some(r) = self.row(qpn) {
            if en {
                rp_cnp(&mut r.rp, &cfg, scan, qpn, at, &mut ev);
            }
        }
        self.events = ev;
    }

    /// `s_sent`: `qpn` sent `bytes` at cycle `at`.
    pub fn sent(&mut self, at: u64, qpn: u32, bytes: u16) {
        let (cfg, scan) = (self.cfg.regs, self.scan);
        let mut ev = self.events;
        if let Some(r) = self.row(qpn) {
            rp_sent(&mut r.rp, &cfg, scan, qpn, at, u32::from(bytes), &mut ev);
        }
        self.events = ev;
    }

    /// `s_query`: may `qpn` send at cycle `at`? The answer and the QP's rate state.
    pub fn query(&mut self, at: u64, qpn: u32) -> PaceAnswer {
        let (cfg, scan) = (self.cfg.regs, self.scan);
        let mut ev = self.events;
        let mut a = PaceAnswer { qpn, allowed: true, limited: false, rc: 0, rt: 0, alpha: 0 };
        if let Some(r) = self.row(qpn) {
            rp_advance(&mut r.rp, &cfg, scan, qpn, at, &mut ev);
            let rp = &r.rp;
            a = PaceAnswer { qpn, allowed: rp_allowed(rp, at), limited: rp.limited, rc: rp.rc, rt: rp.rt, alpha: rp.alpha };
        }
        self.events = ev;
        a
    }

    /// `s_ce`: a CE-marked packet for `qpn` at cycle `at`; whether a CNP request follows.
    pub fn ce(&mut self, at: u64, qpn: u32) -> bool {
        let (cfg, en) = (self.cfg.regs, self.cfg.cnp_enable);
        let mut ev = self.events;
        let send = match self.row(qpn) {
            Some(r) if en => np_ce(&mut r.np, &cfg, at, &mut ev),
            _ => false,
        };
        self.events = ev;
        send
    }
}
