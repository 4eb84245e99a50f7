//! Lockstep: `roce_dcqcn` (Verilated, 1024 QPs) against its model (the engine's DCQCN
//! functions): random streams of CE events, received CNPs, sent-byte reports, pacing queries
//! and QP resets on a few dozen busy QPs among all 1024 (and out-of-range QPNs), over millions
//! of cycles with random register values (changed during the run) chosen so that the timers
//! fire often; every CNP request and every pacing answer (allowed, limited, Rc, Rt, alpha)
//! must be equal, in order, at the stated latency, and a readback of every QP at the end too.
//! The runs must reach every phase: first and repeated cuts, the minimum rate, alpha decay,
//! timer and byte counter events, fast recovery, additive and hyper increase, the return to
//! line rate, CNPs sent and suppressed, paced queries answered both ways.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::dcqcn::DcqcnInputs;
use roce_model::engine::dcqcn::{DcqcnConfig, Events};
use roce_sim::cosim::dcqcn::{dcqcn_lockstep, DcqcnOp, DcqcnPort, LINE_MBPS, LOG_N};

fn log_uniform(rng: &mut ChaCha8Rng, lo: u32, hi: u32) -> u32 {
    let (a, b) = (f64::from(lo).ln(), f64::from(hi).ln());
    (rng.random_range(a..=b).exp() as u32).clamp(lo, hi)
}

fn random_cfg(rng: &mut ChaCha8Rng) -> DcqcnInputs {
    DcqcnInputs {
        cnp_enable: rng.random_bool(0.9),
        dcqcn_enable: rng.random_bool(0.9),
        regs: DcqcnConfig {
            us_cycles: rng.random_range(1..=12),
            rate_ai: log_uniform(rng, 1, 8000),
            rate_hai: log_uniform(rng, 100, 60_000),
            rate_min: match rng.random_range(0..10) {
                0 => rng.random_range(0..=1),
                1 => rng.random_range(40_000..=120_000), // above the first cut, or the line
                _ => log_uniform(rng, 1, 30_000),
            },
            g: if rng.random_bool(0.2) { rng.random_range(0..=1023) } else { log_uniform(rng, 1, 128) },
            alpha_init: rng.random_range(0..=1023),
            alpha_us: rng.random_range(0..=500),
            rate_us: rng.random_range(0..=500),
            byte_counter: if rng.random_bool(0.05) { 0 } else { log_uniform(rng, 1000, 400_000) },
            stages: if rng.random_bool(0.1) { rng.random_range(0..=31) } else { rng.random_range(0..=6) },
            cnp_interval_us: rng.random_range(0..=400),
            line_mbps: LINE_MBPS,
        },
    }
}

/// Streams over about `cycles` cycles on `hot` busy QPs.
fn random_ops(rng: &mut ChaCha8Rng, cycles: u64, hot: usize) -> Vec<DcqcnOp> {
    let n = 1u32 << LOG_N;
    let hot: Vec<u32> = (0..hot).map(|_| rng.random_range(0..n)).collect();
    // a few congested QPs get CNPs (and CE marks) often: repeated cuts before recovery
    let congested = &hot[..3];
    let mut ops = Vec::new();
    // (port, mean gap)
    for (port, mean) in [
        (DcqcnPort::Ce, 40u32),
        (DcqcnPort::Reset, 40_000),
        (DcqcnPort::Cnp, 2_500),
        (DcqcnPort::Sent, 6),
        (DcqcnPort::Query, 8),
    ] {
        let mut t = 0u64;
        while t < cycles {
            let gap = if rng.random_bool(0.3) { 0 } else { rng.random_range(0..=2 * mean) };
            t += u64::from(gap) + 2;
            let qpn = match rng.random_range(0..100) {
                0 => rng.random_range(n..1 << 24),
                _ if matches!(port, DcqcnPort::Cnp | DcqcnPort::Ce) && rng.random_bool(0.3) => {
                    congested[rng.random_range(0..congested.len())]
                }
                1..=10 => rng.random_range(0..n),
                _ => hot[rng.random_range(0..hot.len())],
            };
            let bytes = if rng.random_bool(0.2) { rng.random_range(0..=u16::MAX) } else { rng.random_range(64..=4200) };
            ops.push(DcqcnOp { port, qpn, bytes, gap });
        }
    }
    ops
}

fn add(a: &mut Events, b: &Events) {
    a.cuts += b.cuts;
    a.first_cuts += b.first_cuts;
    a.min_clamps += b.min_clamps;
    a.alpha_decays += b.alpha_decays;
    a.timer_events += b.timer_events;
    a.byte_events += b.byte_events;
    a.fast_recovery += b.fast_recovery;
    a.additive += b.additive;
    a.hyper += b.hyper;
    a.releases += b.releases;
    a.cnps += b.cnps;
    a.cnps_suppressed += b.cnps_suppressed;
}

#[test]
fn dcqcn_lockstep_random() {
    let mut rng = ChaCha8Rng::seed_from_u64(0xDC);
    let mut all = Events::default();
    let (mut paced_yes, mut paced_no) = (0usize, 0usize);
    for run in 0..6u64 {
        let cycles = 2_000_000;
        let mut ops = random_ops(&mut rng, cycles, 40 + 8 * run as usize);
        // readback of every QP at the end
        ops.extend((0..1u32 << LOG_N).map(|q| DcqcnOp { port: DcqcnPort::Query, qpn: q, bytes: 0, gap: 0 }));
        let mut cfgs = vec![(0, random_cfg(&mut rng))];
        for i in 1..4 {
            let mut c = random_cfg(&mut rng);
            if i == 1 {
                // keep the enables on for a while in every run
                c.cnp_enable = true;
                c.dcqcn_enable = true;
            }
            cfgs.push((i * cycles / 4 + rng.random_range(0..1000), c));
        }
        let rep = dcqcn_lockstep(&ops, &cfgs, 0.7, run, None).expect("run");
        assert!(rep.divergences.is_empty(), "run {run}: {:?}", rep.divergences);
        assert_eq!(rep.taken.len(), ops.len());
        let limited: Vec<_> = rep.answers.iter().filter(|a| a.limited).collect();
        paced_yes += limited.iter().filter(|a| a.allowed).count();
        paced_no += limited.iter().filter(|a| !a.allowed).count();
        eprintln!(
            "run {run}: {} cycles, {} ops ({} refusals), {} CNP requests, {} answers ({} limited), {:?}",
            rep.cycles,
            ops.len(),
            rep.refused,
            rep.cnps.len(),
            rep.answers.len(),
            limited.len(),
            rep.events
        );
        add(&mut all, &rep.events);
    }
    let e = all;
    for (what, n) in [
        ("cut", e.cuts - e.first_cuts),
        ("first cut", e.first_cuts),
        ("cut to the minimum", e.min_clamps),
        ("alpha decay", e.alpha_decays),
        ("rate timer event", e.timer_events),
        ("byte counter event", e.byte_events),
        ("fast recovery", e.fast_recovery),
        ("additive increase", e.additive),
        ("hyper increase", e.hyper),
        ("return to line rate", e.releases),
        ("CNP", e.cnps),
        ("suppressed CNP", e.cnps_suppressed),
        ("allowed while limited", paced_yes as u64),
        ("refused while limited", paced_no as u64),
    ] {
        assert!(n >= 20, "{what}: {n} ({e:?})");
    }
}

/// One query per 2 cycles when nothing conflicts, answers 3 cycles later (the harness checks
/// each answer's cycle); the first CNP of a QP cuts it from line rate with alpha = INIT.
#[test]
fn dcqcn_throughput_and_first_cut() {
    let cfg = DcqcnInputs::default();
    let mut ops = vec![DcqcnOp { port: DcqcnPort::Cnp, qpn: 700, bytes: 0, gap: 0 }];
    ops.extend((0..200u32).map(|i| DcqcnOp { port: DcqcnPort::Query, qpn: 700 + (i % 3) * 100, bytes: 0, gap: 0 }));
    let rep = dcqcn_lockstep(&ops, &[(0, cfg)], 1.0, 1, None).expect("run");
    assert!(rep.divergences.is_empty(), "{:?}", rep.divergences);
    let q: Vec<u64> = rep.taken.iter().skip(1).map(|t| t.0).collect();
    let span = q[q.len() - 1] - q[0];
    // a few slots are lost to the scanner-row rule (rows 700, 800, 900 pass the scanner once)
    assert!(span <= 2 * 199 + 12, "200 queries took {span} cycles");
    let a = rep.answers.iter().find(|a| a.qpn == 700).expect("answer");
    let line = u64::from(LINE_MBPS) << 8;
    assert!(a.limited);
    assert_eq!(u64::from(a.rc), line - ((line * (1023 << 6)) >> 17));
    assert_eq!(u64::from(a.rt), line);
}
