//! `roce_dcqcn`: congestion notification (CNP generation on CE-marked packets) and the DCQCN
//! rate limiter of the requester (Zhu et al., "Congestion Control for Large-Scale RDMA
//! Deployments", SIGCOMM 2015), in the integer arithmetic `hdl/rtl/roce_dcqcn.sv` computes.
//! The engine model and the block model (`blocks::dcqcn`) both run these functions.
//!
//! # Fixed point
//! - Rates (Rc, Rt): Mb/s with 8 fractional bits (Q20.8, 28 bits). R_AI, R_HAI, RATE_MIN and
//!   the line rate are whole Mb/s (the registers' unit) shifted left by 8.
//! - alpha: Q0.16 (65536 = 1.0). DCQCN_ALPHA's g and INIT are in 1/1024; INIT enters as
//!   `INIT << 6`, g multiplies as `(x * g) >> 10`.
//! - Time: the engine clock cycle. K, T and CNP_INTERVAL are in us and become cycles by
//!   multiplying with US_CYCLES; no divider anywhere.
//!
//! # Reaction point (per QP)
//! A QP is *unlimited* (sends at line rate, no state) until its first CNP.
//! - CNP (if CTRL.DCQCN_ENABLE): an unlimited QP starts with Rc = Rt = line, alpha = INIT.
//!   Then `Rt = Rc; Rc = max(min, Rc - (Rc * alpha >> 17))` (Rc(1 - alpha/2)),
//!   `alpha += (1 - alpha) * g` (`alpha + ((65536 - alpha) * g >> 10)`); both stage counters
//!   and the byte counter restart; the alpha deadline becomes now + K, the rate deadline now + T.
//!   `min` is `max(1, min(RATE_MIN, line))` Mb/s.
//! - alpha timer (K): `alpha -= alpha * g >> 10`.
//! - rate timer (T): the timer stage count goes up by one (saturating at 63), then a rate
//!   increase. Byte counter: a sent-bytes report adds its bytes; when the count reaches B it
//!   restarts from 0, the byte stage count goes up by one and a rate increase follows.
//! - Rate increase, with `hi`/`lo` the larger/smaller stage count and F = DCQCN_STAGES:
//!   fast recovery while `hi <= F` (Rt unchanged), additive increase while `lo <= F`
//!   (`Rt += R_AI`), hyper increase once both exceed F (`Rt += R_HAI`); Rt is clamped to the
//!   line rate, then `Rc = (Rt + Rc + 1) >> 1` (rounded up, so Rc reaches Rt). When Rc
//!   reaches the line rate the QP is unlimited again (its state is cleared).
//!
//! # Timers: the scanner
//! The HDL visits QP `q` (its row `q mod 2^log_n`) every `2 << log_n` cycles, at the cycles
//! `v` with `v mod (2 << log_n) = 2 (q mod 2^log_n)` ([`Scan`]). At a visit of a limited QP
//! whose alpha (rate) deadline `d` has come (`v >= d`) the alpha decay (rate timer event)
//! happens and the deadline moves to `d + K` (`d + T`), or to `v + K` if that is not after
//! `v` (a period shorter than the scan period fires once per visit). So a timer event happens
//! at the first visit at or after its deadline; periods are exact on average, with up to one
//! scan period of jitter. The model applies the visits that fire lazily ([`rp_advance`]),
//! which gives the same state as visiting every cycle: a visit that fires nothing only
//! settles the pacing debt, which changes no answer.
//!
//! # Pacing
//! A limited QP owes `debt` (in bits x US_CYCLES, i.e. 1/US_CYCLES bit) since `t_pace`; a
//! sent report of `b` bytes adds `b * 8 * US_CYCLES` (saturating at 2^32 - 1), and time pays
//! `floor(Rc) * dt` per `dt` cycles (Mb/s x cycles = bits x US_CYCLES). The QP may send at
//! cycle `t` when `floor(Rc) * (t - t_pace) >= debt`: the next packet leaves once the last one
//! has been paid for at rate Rc. Multiply and compare only; [`rp_wake`] (the earliest cycle,
//! for the model's event scheduler) is the one division, and the HDL needs none: its requester
//! asks again.
//!
//! # Notification point
//! A CE-marked packet for QP `q` (if CTRL.CNP_ENABLE) makes a CNP unless the last CNP for `q`
//! was sent less than CNP_INTERVAL us ago (the interval in force when that CNP was sent).

use super::{Engine, TxKind, TxPkt};
use crate::contract::regs;
use crate::wire::{BthFields, ExtHeaders, Opcode};

/// Fractional bits of a rate.
pub const RATE_FRAC: u32 = 8;
/// alpha = 1.0.
pub const ALPHA_ONE: u32 = 1 << 16;
/// Saturation value of the stage counters.
pub const STAGE_MAX: u32 = 63;

/// The DCQCN configuration in register units (the `cfg_*` inputs of `roce_dcqcn`), and the
/// line rate (a build parameter of the HDL).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DcqcnConfig {
    /// US_CYCLES: cycles per microsecond (12 bits).
    pub us_cycles: u32,
    /// DCQCN_RATE_AI in Mb/s (20 bits).
    pub rate_ai: u32,
    /// DCQCN_RATE_HAI in Mb/s (20 bits).
    pub rate_hai: u32,
    /// DCQCN_RATE_MIN in Mb/s (20 bits).
    pub rate_min: u32,
    /// DCQCN_ALPHA.G: g in 1/1024 (10 bits).
    pub g: u32,
    /// DCQCN_ALPHA.INIT: initial alpha in 1/1024 (10 bits).
    pub alpha_init: u32,
    /// DCQCN_ALPHA_TIMER: K in us (16 bits).
    pub alpha_us: u32,
    /// DCQCN_RATE_TIMER: T in us (16 bits).
    pub rate_us: u32,
    /// DCQCN_BYTE_COUNTER: B in bytes.
    pub byte_counter: u32,
    /// DCQCN_STAGES: F (5 bits).
    pub stages: u32,
    /// CNP_INTERVAL in us (16 bits).
    pub cnp_interval_us: u32,
    /// Line rate in Mb/s (20 bits; the HDL's LINE_MBPS).
    pub line_mbps: u32,
}

impl Default for DcqcnConfig {
    /// The registers' reset values, 250 cycles per us, 100 Gb/s.
    fn default() -> Self {
        use regs::*;
        DcqcnConfig {
            us_cycles: us_cycles::CYCLES.get(us_cycles::RESET),
            rate_ai: dcqcn_rate_ai::MBPS.get(dcqcn_rate_ai::RESET),
            rate_hai: dcqcn_rate_hai::MBPS.get(dcqcn_rate_hai::RESET),
            rate_min: dcqcn_rate_min::MBPS.get(dcqcn_rate_min::RESET),
            g: dcqcn_alpha::G.get(dcqcn_alpha::RESET),
            alpha_init: dcqcn_alpha::INIT.get(dcqcn_alpha::RESET),
            alpha_us: dcqcn_alpha_timer::US.get(dcqcn_alpha_timer::RESET),
            rate_us: dcqcn_rate_timer::US.get(dcqcn_rate_timer::RESET),
            byte_counter: dcqcn_byte_counter::BYTES.get(dcqcn_byte_counter::RESET),
            stages: dcqcn_stages::STAGES.get(dcqcn_stages::RESET),
            cnp_interval_us: cnp_interval::US.get(cnp_interval::RESET),
            line_mbps: 100_000,
        }
    }
}

impl DcqcnConfig {
    /// Apply a write of `v` to register `off` (the DCQCN_*, CNP_INTERVAL and US_CYCLES
    /// registers; others are ignored). Returns whether it was one of them.
    pub fn write_register(&mut self, off: u32, v: u32) -> bool {
        use regs::*;
        match off {
            US_CYCLES => self.us_cycles = us_cycles::CYCLES.get(v),
            DCQCN_RATE_AI => self.rate_ai = dcqcn_rate_ai::MBPS.get(v),
            DCQCN_RATE_HAI => self.rate_hai = dcqcn_rate_hai::MBPS.get(v),
            DCQCN_RATE_MIN => self.rate_min = dcqcn_rate_min::MBPS.get(v),
            DCQCN_ALPHA => {
                self.g = dcqcn_alpha::G.get(v);
                self.alpha_init = dcqcn_alpha::INIT.get(v);
            }
            DCQCN_ALPHA_TIMER => self.alpha_us = dcqcn_alpha_timer::US.get(v),
            DCQCN_RATE_TIMER => self.rate_us = dcqcn_rate_timer::US.get(v),
            DCQCN_BYTE_COUNTER => self.byte_counter = dcqcn_byte_counter::BYTES.get(v),
            DCQCN_STAGES => self.stages = dcqcn_stages::STAGES.get(v),
            CNP_INTERVAL => self.cnp_interval_us = cnp_interval::US.get(v),
            _ => return false,
        }
        true
    }

    /// The line rate, Q20.8.
    pub fn line_q(&self) -> u32 {
        (self.line_mbps & 0xF_FFFF) << RATE_FRAC
    }

    /// The floor of Rc after a cut, Q20.8: `max(1, min(RATE_MIN, line))` Mb/s.
    pub fn min_q(&self) -> u32 {
        (self.rate_min.min(self.line_mbps & 0xF_FFFF)).max(1) << RATE_FRAC
    }

    /// K in cycles.
    pub fn alpha_cycles(&self) -> u64 {
        u64::from(self.alpha_us) * u64::from(self.us_cycles)
    }

    /// T in cycles.
    pub fn rate_cycles(&self) -> u64 {
        u64::from(self.rate_us) * u64::from(self.us_cycles)
    }

    /// CNP_INTERVAL in cycles.
    pub fn cnp_interval_cycles(&self) -> u64 {
        u64::from(self.cnp_interval_us) * u64::from(self.us_cycles)
    }

    /// The pacing debt of `bytes` sent: `bytes * 8 * US_CYCLES`.
    pub fn byte_cost(&self, bytes: u32) -> u64 {
        u64::from(bytes) * 8 * u64::from(self.us_cycles)
    }
}

/// When the HDL's scanner visits a QP: row `q mod 2^log_n` at the cycles `v` with
/// `v mod (2 << log_n) = 2 (q mod 2^log_n)` (even cycles; odd cycles serve the inputs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Scan {
    /// log2 of the number of rows (the HDL's LOG_N).
    pub log_n: u32,
}

impl Scan {
    /// A scanner over at least `n` rows.
    pub fn for_rows(n: usize) -> Scan {
        Scan { log_n: n.max(2).next_power_of_two().trailing_zeros() }
    }

    /// Cycles between two visits of a row.
    pub fn period(self) -> u64 {
        2u64 << self.log_n
    }

    /// The first visit of QP `q` at or after cycle `from`.
    pub fn next_visit(self, q: u32, from: u64) -> u64 {
        let p = self.period();
        let off = 2 * u64::from(q & ((1u32 << self.log_n) - 1));
        let v = from - from % p + off;
        if v >= from {
            v
        } else {
            v + p
        }
    }
}

/// Reaction point state of a QP (a row of the HDL's RP table; all zero = unlimited).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rp {
    /// Rate limited (else line rate and the other fields are 0).
    pub limited: bool,
    /// Current rate Rc, Q20.8 Mb/s.
    pub rc: u32,
    /// Target rate Rt, Q20.8 Mb/s.
    pub rt: u32,
    /// alpha, Q0.16.
    pub alpha: u32,
    /// Rate timer events since the last cut (saturating at [`STAGE_MAX`]).
    pub t_stage: u32,
    /// Byte counter events since the last cut (saturating at [`STAGE_MAX`]).
    pub b_stage: u32,
    /// Bytes counted toward the next byte counter event.
    pub bytes: u32,
    /// Cycle of the next alpha decay.
    pub d_alpha: u64,
    /// Cycle of the next rate timer event.
    pub d_rate: u64,
    /// Pacing debt in 1/US_CYCLES bits, as of `t_pace`.
    pub debt: u32,
    /// Cycle the debt was last settled.
    pub t_pace: u64,
}

impl Rp {
    /// Rc in Mb/s (None = unlimited).
    pub fn rate_mbps(&self) -> Option<f64> {
        self.limited.then(|| f64::from(self.rc) / f64::from(1u32 << RATE_FRAC))
    }
}

/// Notification point state of a QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Np {
    /// No CNP for this QP before this cycle (0: none sent).
    pub cnp_until: u64,
}

/// The congestion state of a QP.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QpCc {
    /// Reaction point (this QP as a sender).
    pub rp: Rp,
    /// Notification point (this QP as a receiver).
    pub np: Np,
}

/// The phase of a rate increase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Rt unchanged.
    FastRecovery,
    /// Rt += R_AI.
    Additive,
    /// Rt += R_HAI.
    Hyper,
}

/// Counts of what the reaction and notification points did (coverage for tests).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// CNPs that cut a rate.
    pub cuts: u64,
    /// ... of which the first of an unlimited QP.
    pub first_cuts: u64,
    /// Cuts clamped at the minimum rate.
    pub min_clamps: u64,
    /// alpha decays.
    pub alpha_decays: u64,
    /// Rate timer events.
    pub timer_events: u64,
    /// Byte counter events.
    pub byte_events: u64,
    /// Fast recovery steps.
    pub fast_recovery: u64,
    /// Additive increase steps.
    pub additive: u64,
    /// Hyper increase steps.
    pub hyper: u64,
    /// Returns to line rate.
    pub releases: u64,
    /// CNPs requested.
    pub cnps: u64,
    /// CE marks that did not make a CNP (interval).
    pub cnps_suppressed: u64,
}

fn settle(rp: &mut Rp, now: u64) {
    let paid = u64::from(rp.rc >> RATE_FRAC) * now.saturating_sub(rp.t_pace);
    rp.debt = u64::from(rp.debt).saturating_sub(paid) as u32;
    rp.t_pace = rp.t_pace.max(now);
}

fn next_deadline(d: u64, period: u64, v: u64) -> u64 {
    if d + period > v {
        d + period
    } else {
        v + period
    }
}

/// A rate increase event (the stage counts already counted it).
fn increase(rp: &mut Rp, cfg: &DcqcnConfig, ev: &mut Events) {
    let (hi, lo) = (rp.t_stage.max(rp.b_stage), rp.t_stage.min(rp.b_stage));
    let line = cfg.line_q();
    let step = if hi <= cfg.stages {
        ev.fast_recovery += 1;
        None
    } else if lo <= cfg.stages {
        ev.additive += 1;
        Some(cfg.rate_ai)
    } else {
        ev.hyper += 1;
        Some(cfg.rate_hai)
    };
    if let Some(s) = step {
        rp.rt = (rp.rt + ((s & 0xF_FFFF) << RATE_FRAC)).min(line);
    }
    rp.rc = (rp.rt + rp.rc + 1) >> 1;
    if rp.rc >= line {
        *rp = Rp::default();
        ev.releases += 1;
    }
}

/// A scanner visit at cycle `v` of a limited QP.
fn visit(rp: &mut Rp, cfg: &DcqcnConfig, v: u64, ev: &mut Events) {
    settle(rp, v);
    if v >= rp.d_alpha {
        rp.alpha -= (rp.alpha * cfg.g) >> 10;
        rp.d_alpha = next_deadline(rp.d_alpha, cfg.alpha_cycles(), v);
        ev.alpha_decays += 1;
    }
    if v >= rp.d_rate {
        rp.t_stage = (rp.t_stage + 1).min(STAGE_MAX);
        rp.d_rate = next_deadline(rp.d_rate, cfg.rate_cycles(), v);
        ev.timer_events += 1;
        increase(rp, cfg, ev);
    }
}

/// Apply the scanner visits of QP `q` before cycle `until` that fire a timer.
pub fn rp_advance(rp: &mut Rp, cfg: &DcqcnConfig, scan: Scan, q: u32, until: u64, ev: &mut Events) {
    while rp.limited {
        let v = scan.next_visit(q, rp.d_alpha.min(rp.d_rate));
        if v >= until {
            break;
        }
        visit(rp, cfg, v, ev);
    }
}

/// A CNP for QP `q` at cycle `at` (the caller checks CTRL.DCQCN_ENABLE).
pub fn rp_cnp(rp: &mut Rp, cfg: &DcqcnConfig, scan: Scan, q: u32, at: u64, ev: &mut Events) {
    rp_advance(rp, cfg, scan, q, at, ev);
    let (rc, alpha) = if rp.limited {
        settle(rp, at);
        (rp.rc, rp.alpha)
    } else {
        ev.first_cuts += 1;
        rp.debt = 0;
        rp.t_pace = at;
        (cfg.line_q(), (cfg.alpha_init & 0x3FF) << 6)
    };
    let cut = ((u64::from(rc) * u64::from(alpha)) >> 17) as u32;
    rp.limited = true;
    rp.rt = rc;
    rp.rc = rc - cut;
    if rp.rc < cfg.min_q() {
        rp.rc = cfg.min_q();
        ev.min_clamps += 1;
    }
    rp.alpha = alpha + (((ALPHA_ONE - alpha) * (cfg.g & 0x3FF)) >> 10);
    rp.t_stage = 0;
    rp.b_stage = 0;
    rp.bytes = 0;
    rp.d_alpha = at + cfg.alpha_cycles();
    rp.d_rate = at + cfg.rate_cycles();
    ev.cuts += 1;
}

/// QP `q` sent `bytes` at cycle `at`: pacing debt and the byte counter.
pub fn rp_sent(rp: &mut Rp, cfg: &DcqcnConfig, scan: Scan, q: u32, at: u64, bytes: u32, ev: &mut Events) {
    rp_advance(rp, cfg, scan, q, at, ev);
    if !rp.limited {
        return;
    }
    settle(rp, at);
    rp.debt = (u64::from(rp.debt) + cfg.byte_cost(bytes)).min(u64::from(u32::MAX)) as u32;
    let sum = u64::from(rp.bytes) + u64::from(bytes);
    if sum >= u64::from(cfg.byte_counter) {
        rp.bytes = 0;
        rp.b_stage = (rp.b_stage + 1).min(STAGE_MAX);
        ev.byte_events += 1;
        increase(rp, cfg, ev);
    } else {
        rp.bytes = sum as u32;
    }
}

/// Whether a QP whose state is current (advanced to `at`) may send at cycle `at`.
pub fn rp_allowed(rp: &Rp, at: u64) -> bool {
    !rp.limited || u64::from(rp.rc >> RATE_FRAC) * at.saturating_sub(rp.t_pace) >= u64::from(rp.debt)
}

/// For a limited QP that may not send: the cycle at which it should ask again, the earlier of
/// the cycle the debt is paid at the current rate and the cycle after the next rate timer
/// event (which may raise the rate).
pub fn rp_wake(rp: &Rp, scan: Scan, q: u32) -> u64 {
    let r = u64::from((rp.rc >> RATE_FRAC).max(1));
    let paid = rp.t_pace + u64::from(rp.debt).div_ceil(r);
    paid.min(scan.next_visit(q, rp.d_rate) + 1)
}

/// A CE-marked packet for QP `q` at cycle `at` (the caller checks CTRL.CNP_ENABLE): whether
/// to send a CNP.
pub fn np_ce(np: &mut Np, cfg: &DcqcnConfig, at: u64, ev: &mut Events) -> bool {
    if at < np.cnp_until {
        ev.cnps_suppressed += 1;
        return false;
    }
    np.cnp_until = at + cfg.cnp_interval_cycles();
    ev.cnps += 1;
    true
}

impl Engine {
    /// The HDL's scanner geometry for this engine's QP count.
    pub fn dcqcn_scan(&self) -> Scan {
        Scan::for_rows(self.cfg.max_qps)
    }

    /// The responder saw CE on a packet of `qpn`: send a CNP unless one went recently.
    pub(crate) fn maybe_cnp(&mut self, qpn: u32, at: u64) {
        if !self.cfg.cnp_enable {
            return;
        }
        let cfg = self.dcqcn;
        let mut ev = self.dcqcn_events;
        let Some(qp) = self.qp_mut(qpn) else { return };
        let send = np_ce(&mut qp.cc.np, &cfg, at, &mut ev);
        let dest = qp.dest_qpn;
        self.dcqcn_events = ev;
        if !send {
            return;
        }
        let mut bth = BthFields::new(Opcode::Cnp, dest, 0);
        bth.becn = true;
        self.cnp_q.push_back(TxPkt {
            qpn,
            bth,
            ext: ExtHeaders::NONE,
            payload: Vec::new(),
            ready: at,
            gen: 0,
            kind: TxKind::Cnp,
        });
        self.counters.cnp_sent += 1;
    }

    /// A CNP arrived for `qpn`: cut its rate.
    pub(crate) fn on_cnp(&mut self, qpn: u32, at: u64) {
        if !self.cfg.dcqcn_enable {
            return;
        }
        let (cfg, scan) = (self.dcqcn, self.dcqcn_scan());
        let mut ev = self.dcqcn_events;
        if let Some(qp) = self.qp_mut(qpn) {
            rp_cnp(&mut qp.cc.rp, &cfg, scan, qpn, at, &mut ev);
        }
        self.dcqcn_events = ev;
    }

    /// Bring every QP's timers up to `now` (before the DCQCN configuration changes).
    pub(crate) fn dcqcn_advance_all(&mut self, now: u64) {
        let (cfg, scan) = (self.dcqcn, self.dcqcn_scan());
        let mut ev = self.dcqcn_events;
        for qp in self.qps.iter_mut().flatten() {
            rp_advance(&mut qp.cc.rp, &cfg, scan, qp.qpn, now, &mut ev);
        }
        self.dcqcn_events = ev;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg() -> DcqcnConfig {
        DcqcnConfig {
            us_cycles: 10,
            alpha_us: 5,
            rate_us: 7,
            byte_counter: 3000,
            stages: 2,
            rate_hai: 2000,
            ..DcqcnConfig::default()
        }
    }

    #[test]
    fn visits_follow_the_scan_order() {
        let s = Scan { log_n: 3 };
        assert_eq!(s.period(), 16);
        assert_eq!(s.next_visit(0, 0), 0);
        assert_eq!(s.next_visit(0, 1), 16);
        assert_eq!(s.next_visit(5, 0), 10);
        assert_eq!(s.next_visit(5, 10), 10);
        assert_eq!(s.next_visit(5, 11), 26);
        assert_eq!(s.next_visit(13, 11), 26, "rows wrap");
        assert_eq!(Scan::for_rows(1024).log_n, 10);
        assert_eq!(Scan::for_rows(1000).log_n, 10);
    }

    #[test]
    fn first_cnp_halves_the_line_rate_with_alpha_init() {
        let c = DcqcnConfig::default();
        let mut rp = Rp::default();
        let mut ev = Events::default();
        rp_cnp(&mut rp, &c, Scan { log_n: 10 }, 7, 1001, &mut ev);
        let line = 100_000u64 << 8;
        assert!(rp.limited);
        assert_eq!(rp.rt, line as u32);
        assert_eq!(u64::from(rp.rc), line - ((line * (1023 << 6)) >> 17));
        let a0 = c.alpha_init << 6;
        assert_eq!(rp.alpha, a0 + (((ALPHA_ONE - a0) * c.g) >> 10));
        assert_eq!((rp.d_alpha, rp.d_rate), (1001 + 55 * 250, 1001 + 55 * 250));
        assert_eq!((ev.cuts, ev.first_cuts), (1, 1));
    }

    /// The lazy model equals a visit on every scan slot.
    #[test]
    fn lazy_advance_equals_visiting_every_slot() {
        let c = cfg();
        let scan = Scan { log_n: 2 };
        let q = 3;
        let mut lazy = Rp::default();
        let mut eager = Rp::default();
        let (mut e1, mut e2) = (Events::default(), Events::default());
        rp_cnp(&mut lazy, &c, scan, q, 1, &mut e1);
        rp_cnp(&mut eager, &c, scan, q, 1, &mut e2);
        let mut t = 2;
        for round in 0..400u64 {
            let until = t + 37 + round % 11;
            while t < until {
                if t % scan.period() == 2 * u64::from(q) && eager.limited {
                    visit(&mut eager, &c, t, &mut e2);
                }
                t += 1;
            }
            rp_advance(&mut lazy, &c, scan, q, t, &mut e1);
            assert_eq!(rp_allowed(&lazy, t), rp_allowed(&eager, t), "cycle {t}");
            if round % 3 == 0 {
                rp_sent(&mut lazy, &c, scan, q, t, 1500, &mut e1);
                rp_sent(&mut eager, &c, scan, q, t, 1500, &mut e2);
            }
            if round % 97 == 50 {
                rp_cnp(&mut lazy, &c, scan, q, t, &mut e1);
                rp_cnp(&mut eager, &c, scan, q, t, &mut e2);
            }
            let (mut a, mut b) = (lazy, eager);
            settle(&mut a, t);
            settle(&mut b, t);
            assert_eq!(a, b, "cycle {t}");
        }
        assert_eq!((e1.timer_events, e1.byte_events, e1.releases), (e2.timer_events, e2.byte_events, e2.releases));
        assert!(e1.fast_recovery > 0 && e1.additive > 0 && e1.hyper > 0 && e1.releases > 0, "{e1:?}");
    }

    #[test]
    fn pacing_gives_the_rate() {
        // 50 Gb/s at 250 cycles/us: 25 bytes per cycle; 1000-byte packets every 40 cycles
        let c = DcqcnConfig { alpha_us: 60_000, rate_us: 60_000, byte_counter: u32::MAX, ..DcqcnConfig::default() };
        let scan = Scan { log_n: 10 };
        let mut rp = Rp {
            limited: true,
            rc: 50_000 << 8,
            rt: 60_000 << 8,
            d_alpha: u64::MAX / 2,
            d_rate: u64::MAX / 2,
            ..Rp::default()
        };
        let mut ev = Events::default();
        let mut t = 0;
        let mut sent = Vec::new();
        while sent.len() < 100 {
            if rp_allowed(&rp, t) {
                rp_sent(&mut rp, &c, scan, 1, t, 1000, &mut ev);
                sent.push(t);
                let w = rp_wake(&rp, scan, 1);
                assert!(!rp_allowed(&rp, w - 1) && rp_allowed(&rp, w), "wake {w} at {t}");
            }
            t += 1;
        }
        assert!(sent.windows(2).all(|w| w[1] - w[0] == 40), "{sent:?}");
    }

    #[test]
    fn cnp_interval() {
        let c = cfg();
        let mut np = Np::default();
        let mut ev = Events::default();
        assert!(np_ce(&mut np, &c, 5, &mut ev));
        assert!(!np_ce(&mut np, &c, 5 + 499, &mut ev));
        assert!(np_ce(&mut np, &c, 5 + 500, &mut ev));
        assert_eq!((ev.cnps, ev.cnps_suppressed), (2, 1));
    }
}
