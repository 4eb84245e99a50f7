//! Model of `hdl/rtl/roce_dcqcn.sv`: the notification point (CNP requests for CE-marked
//! packets) and the DCQCN reaction point with pacing, per QP, as the engine model has them
//! ([`engine::dcqcn`](crate::engine::dcqcn): [`rp_cnp`], [`rp_sent`], [`rp_advance`],
//! [`rp_allowed`], [`np_ce`]), applied at the cycle the HDL issues them (`now_cycle`), in
//! that order; the scanner's visits are the engine functions' ([`Scan`]), so the state and
//! every answer are the HDL's.
//!
//! Cycle level in front of that ([`RoceDcqcn::cycle`]): each input has a one-operation
//! slot (`s_*_ready` = the slot is empty); the slots issue as the HDL's P0 does (odd
//! cycles i; the RP table takes the first full slot of reset, cnp, sent, query unless its
//! row is the scanner's row of cycle i - 3, i - 1, i + 1 or i + 3 or that of the RP
//! operation issued in i - 2; the NP table a reset, or a CE when no reset waits, its row is
//! not the scanner's of i - 1 or i + 1 and the CNP FIFO holds at most 1 request), and the
//! 2-entry CNP FIFO.

use std::collections::VecDeque;

use crate::engine::dcqcn::{np_ce, rp_advance, rp_allowed, rp_cnp, rp_sent, DcqcnConfig, Events, QpCc, Scan};

/// Cycles from a query's issue to its answer (`m_pace_valid`).
pub const PACE_LATENCY: u64 = 3;
/// Cycles from a CE event's issue to its CNP request entering the output FIFO.
pub const CNP_LATENCY: u64 = 2;
/// Cycles from a change of the `cfg_*` inputs to the first operation issued that uses it.
pub const CFG_LATENCY: u64 = 1;
/// Entries of the CNP request FIFO (`m_cnp_*`).
pub const CNP_FIFO: usize = 2;

/// An operation on one of the block's inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DcqcnIn {
    /// `s_ce`: a CE-marked packet for the QP.
    Ce(u32),
    /// `s_reset`: the QP was created or reset.
    Reset(u32),
    /// `s_cnp`: a CNP arrived for the QP.
    Cnp(u32),
    /// `s_sent`: the QP sent this many bytes.
    Sent(u32, u16),
    /// `s_query`: may the QP send?
    Query(u32),
}

impl DcqcnIn {
    /// The QPN.
    pub fn qpn(self) -> u32 {
        match self {
            DcqcnIn::Ce(q) | DcqcnIn::Reset(q) | DcqcnIn::Cnp(q) | DcqcnIn::Sent(q, _) | DcqcnIn::Query(q) => q,
        }
    }

    /// Its input's slot: 0 ce, 1 reset, 2 cnp, 3 sent, 4 query (1..=4 in RP priority order).
    fn slot(self) -> usize {
        match self {
            DcqcnIn::Ce(_) => 0,
            DcqcnIn::Reset(_) => 1,
            DcqcnIn::Cnp(_) => 2,
            DcqcnIn::Sent(..) => 3,
            DcqcnIn::Query(_) => 4,
        }
    }
}

/// An operation taken on an input whose slot was full (the HDL's ready should have been low).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cycle {cycle}: {op:?} taken while its input slot is full")]
pub struct SlotFull {
    /// The cycle it was taken.
    pub cycle: u64,
    /// The operation.
    pub op: DcqcnIn,
}

/// What one cycle of [`RoceDcqcn::cycle`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CycleOut {
    /// Issued to the RP table this cycle.
    pub rp: Option<DcqcnIn>,
    /// A CE event issued to the NP table this cycle.
    pub ce: Option<u32>,
    /// A query's answer, on `m_pace_*` `PACE_LATENCY` cycles later.
    pub answer: Option<PaceAnswer>,
    /// The CNP request taken from `m_cnp_*` this cycle (`m_cnp_valid && m_cnp_ready`).
    pub cnp: Option<u32>,
}

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
    /// The input slots (index: [`DcqcnIn::slot`]).
    slots: [Option<DcqcnIn>; 5],
    /// Rows of the RP operations issued 1 and 2 cycles ago.
    rp_hist: [Option<u32>; 2],
    /// A CNP request from the CE issued last cycle, entering the FIFO at the end of this one.
    cnp_next: Option<u32>,
    /// The CNP request FIFO, head first.
    fifo: VecDeque<u32>,
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
            slots: [None; 5],
            rp_hist: [None; 2],
            cnp_next: None,
            fifo: VecDeque::new(),
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

    /// `s_*_ready` of `op`'s input this cycle: its slot is empty.
    pub fn ready(&self, op: DcqcnIn) -> bool {
        self.slots[op.slot()].is_none()
    }

    /// One clock cycle `c` (`now_cycle`; cycles come in order, every one after `init_done`):
    /// `taken` are the operations the inputs take this cycle (each input's slot must be
    /// empty), `cnp_ready` is `m_cnp_ready`. The operations the slots issue this cycle are
    /// applied at `c`.
    pub fn cycle(&mut self, c: u64, taken: &[DcqcnIn], cnp_ready: bool) -> Result<CycleOut, SlotFull> {
        let mut out = CycleOut::default();
        if let Some(&op) = taken.iter().find(|op| !self.ready(**op)) {
            return Err(SlotFull { cycle: c, op });
        }
        let mask = (1u32 << self.scan.log_n) - 1;
        let mut rp_row = None;
        let mut cnp = None;
        if c & 1 == 1 {
            let s_row = ((c >> 1) as u32) & mask;
            // the scanner's row of cycle i - 1 + 2 d is s_row + d; the RP table keeps d = -1..=2
            // off (P3 writes: mask + 1 = 0 mod 2^log_n, so d = mask is -1), the NP table d = 0..=1
            let busy = |r: u32, ds: &[u32]| ds.iter().any(|&d| r == (s_row + d) & mask);
            let reset_waits = self.slots[1].is_some();
            if let Some(op) = self.slots[1..].iter().flatten().next().copied() {
                let r = op.qpn() & mask;
                if !busy(r, &[mask, 0, 1, 2]) && self.rp_hist[1] != Some(r) {
                    self.slots[op.slot()] = None;
                    rp_row = Some(r);
                    out.rp = Some(op);
                    match op {
                        DcqcnIn::Reset(q) => self.reset_qp(c, q),
                        DcqcnIn::Cnp(q) => self.cnp(c, q),
                        DcqcnIn::Sent(q, b) => self.sent(c, q, b),
                        DcqcnIn::Query(q) => out.answer = Some(self.query(c, q)),
                        DcqcnIn::Ce(_) => {}
                    }
                }
            }
            if let Some(DcqcnIn::Ce(q)) = self.slots[0] {
                if !reset_waits && !busy(q & mask, &[0, 1]) && self.fifo.len() < CNP_FIFO {
                    self.slots[0] = None;
                    out.ce = Some(q);
                    if self.ce(c, q) {
                        cnp = Some(q);
                    }
                }
            }
        }
        // end of the cycle: the FIFO pops its head and takes the request of the CE issued
        // last cycle; the RP history moves on; the empty slots take their inputs
        if cnp_ready {
            out.cnp = self.fifo.pop_front();
        }
        if let Some(q) = std::mem::replace(&mut self.cnp_next, cnp) {
            self.fifo.push_back(q);
        }
        self.rp_hist = [rp_row, self.rp_hist[0]];
        for &op in taken {
            self.slots[op.slot()] = Some(op);
        }
        Ok(out)
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
            a = PaceAnswer {
                qpn,
                allowed: rp_allowed(rp, at),
                limited: rp.limited,
                rc: rp.rc,
                rt: rp.rt,
                alpha: rp.alpha,
            };
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
