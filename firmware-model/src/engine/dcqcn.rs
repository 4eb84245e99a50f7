//! `roce_dcqcn`: congestion notification (CNP generation on CE-marked requests) and the
//! DCQCN rate limiter of the requester (Zhu et al., "Congestion Control for Large-Scale RDMA
//! Deployments", SIGCOMM 2015).
//!
//! Notification point: a request arriving with ECN CE makes the responder send a CNP
//! (opcode 0x81) to the requesting QP, at most one per QP per `cnp_interval` cycles.
//! Reaction point: on a CNP the QP's rate is cut, `Rt = Rc; Rc = Rc·(1-α/2); α = (1-g)α+g`.
//! Without CNPs, α decays every `alpha_period` and the rate recovers every
//! `increase_period`: five fast-recovery steps `Rc = (Rt+Rc)/2`, then additive increase
//! `Rt += R_AI`. Rates are in bytes per cycle; line rate means "unlimited".

use super::qp::Qp;
use super::{Engine, TxKind, TxPkt};
use crate::wire::{BthFields, ExtHeaders, Opcode};

/// DCQCN parameters.
#[derive(Clone, Copy, Debug)]
pub struct DcqcnParams {
    /// α gain g.
    pub g: f64,
    /// α update period in cycles (55 µs at 250 MHz).
    pub alpha_period: u64,
    /// Rate increase period in cycles.
    pub increase_period: u64,
    /// Additive increase in bytes per cycle.
    pub rate_ai: f64,
    /// Minimum rate in bytes per cycle.
    pub rate_min: f64,
    /// Fast recovery steps before additive increase.
    pub fast_recovery: u32,
}

impl Default for DcqcnParams {
    fn default() -> Self {
        DcqcnParams {
            g: 1.0 / 256.0,
            alpha_period: 13_750,
            increase_period: 13_750,
            rate_ai: 0.2,
            rate_min: 0.05,
            fast_recovery: 5,
        }
    }
}

/// Per-QP reaction point state.
#[derive(Clone, Copy, Debug, Default)]
pub struct DcqcnState {
    /// Target rate.
    pub rt: f64,
    /// α.
    pub alpha: f64,
    /// Last α update.
    pub t_alpha: u64,
    /// Last rate increase (or cut).
    pub t_inc: u64,
    /// Increase steps since the last cut.
    pub stage: u32,
}

impl Engine {
    /// The responder saw CE on a request of `qpn`: send a CNP unless one went recently.
    pub(crate) fn maybe_cnp(&mut self, qpn: u32, at: u64) {
        if !self.cfg.cnp_enable {
            return;
        }
        let interval = self.cfg.cnp_interval;
        let Some(qp) = self.qp_mut(qpn) else { return };
        if qp.resp.last_cnp.is_some_and(|t| at < t + interval) {
            return;
        }
        qp.resp.last_cnp = Some(at);
        let mut bth = BthFields::new(Opcode::Cnp, qp.dest_qpn, 0);
        bth.becn = true;
        self.cnp_q.push_back(TxPkt { qpn, bth, ext: ExtHeaders::NONE, payload: Vec::new(), ready: at, gen: 0, kind: TxKind::Cnp });
        self.counters.cnp_sent += 1;
    }

    /// A CNP arrived for `qpn`: cut its rate.
    pub(crate) fn on_cnp(&mut self, qpn: u32, at: u64) {
        if !self.cfg.dcqcn_enable {
            return;
        }
        let line = self.cfg.line_bytes_per_cycle();
        let p = self.dcqcn;
        let Some(qp) = self.qp_mut(qpn) else { return };
        dcqcn_decay(qp, &p, at, line);
        let rc = qp.req.rate.unwrap_or(line);
        let d = &mut qp.req.dcqcn;
        if qp.req.rate.is_none() {
            d.alpha = 1.0;
        }
        d.rt = rc;
        let new = (rc * (1.0 - d.alpha / 2.0)).max(p.rate_min);
        d.alpha = (1.0 - p.g) * d.alpha + p.g;
        d.t_alpha = at;
        d.t_inc = at;
        d.stage = 0;
        qp.req.rate = Some(new);
    }

    /// Bring a QP's rate up to date at `now` (called before pacing a packet).
    pub(crate) fn dcqcn_tick(&mut self, qpn: u32, now: u64) {
        let line = self.cfg.line_bytes_per_cycle();
        let p = self.dcqcn;
        if let Some(qp) = self.qp_mut(qpn) {
            dcqcn_decay(qp, &p, now, line);
        }
    }
}

fn dcqcn_decay(qp: &mut Qp, p: &DcqcnParams, now: u64, line: f64) {
    let Some(mut rc) = qp.req.rate else { return };
    let d = &mut qp.req.dcqcn;
    while now >= d.t_alpha + p.alpha_period {
        d.alpha *= 1.0 - p.g;
        d.t_alpha += p.alpha_period;
    }
    while now >= d.t_inc + p.increase_period {
        d.t_inc += p.increase_period;
        d.stage += 1;
        if d.stage > p.fast_recovery {
            d.rt = (d.rt + p.rate_ai).min(line);
        }
        rc = (rc + d.rt) / 2.0;
        if rc >= line * 0.999 {
            qp.req.rate = None;
            return;
        }
    }
    qp.req.rate = Some(rc);
}
