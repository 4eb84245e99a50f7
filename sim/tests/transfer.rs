//! Two engines, driven by roce-driver, over a simulated link: every op, every byte; the
//! model on both nodes, and over many QPs the model and the Verilated engine on both nodes.

use roce_sim::cmd::transfer::{self, jain, run, Op, TransferConfig, TransferReport};
use roce_sim::net::fabric::LinkConfig;
use roce_sim::SimError;

fn go(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig, seed: u64) -> TransferReport {
    let cfg = TransferConfig {
        op,
        size,
        messages,
        mtu,
        link,
        seed,
        depth: 8,
        max_cycles: 2_000_000_000,
        ..Default::default()
    };
    let r = run(&cfg, |_, _| {}).expect("transfer runs");
    assert!(
        r.clean(messages),
        "{op:?} size {size} mtu {mtu} seed {seed}: completed {} mismatches {} lost {} dup {} errors {} ({:?}) cycles {}\nA {:?}\nB {:?}\nlinks {:?}",
        r.completed, r.mismatches, r.lost, r.duplicated, r.errors, r.first_error, r.cycles, r.counters[0], r.counters[1], r.links
    );
    assert_eq!(r.bytes_verified, size as u64 * messages);
    r
}

#[test]
fn clean_link_every_op() {
    for op in [Op::Send, Op::Write, Op::Read] {
        for (size, mtu) in [(1, 1024), (1024, 1024), (5000, 1024), (65536, 4096), (300, 256)] {
            go(op, size, 20, mtu, LinkConfig::default(), 1);
        }
    }
}

fn lossy(loss: f64) -> LinkConfig {
    LinkConfig { loss, reorder: loss.min(0.1), dup: loss.min(0.05), reorder_delay: 3000, ..LinkConfig::default() }
}

#[test]
fn loss_matrix_every_op() {
    for loss in [0.01, 0.05, 0.20] {
        for op in [Op::Send, Op::Write, Op::Read] {
            for (i, (size, mtu)) in [(3000, 1024), (100, 256), (20000, 4096)].into_iter().enumerate() {
                go(op, size, 40, mtu, lossy(loss), 7 + i as u64);
            }
        }
    }
}

// ---------------------------------------------------------------- many QPs

/// A run over `qps` QPs: every message once, intact, in order on its QP; each QP carried
/// exactly its messages (`i mod qps`), and every QP completed some in the steady state
/// (no QP starved while the others ran).
fn go_qps(op: Op, qps: usize, messages: u64, link: LinkConfig, hdl: [bool; 2], seed: u64) -> TransferReport {
    let (size, depth) = (300, 4);
    let cfg = TransferConfig {
        op,
        size,
        messages,
        mtu: 256,
        depth,
        qps,
        link,
        seed,
        hdl,
        max_cycles: 200_000_000,
        ..Default::default()
    };
    let r = run(&cfg, |_, _| {}).expect("transfer runs");
    let what = format!("{op:?} over {qps} QPs, hdl {hdl:?}, seed {seed}");
    assert!(
        r.clean(messages),
        "{what}: completed {} mismatches {} lost {} dup {} out of order {} errors {} ({:?})",
        r.completed,
        r.mismatches,
        r.lost,
        r.duplicated,
        r.out_of_order,
        r.errors,
        r.first_error
    );
    assert_eq!(r.bytes_verified, size as u64 * messages, "{what}");
    let want: Vec<u64> = (0..qps as u64).map(|q| (messages - 1 - q) / qps as u64 + 1).collect();
    assert_eq!(r.qp_messages, want, "{what}: messages per QP");
    assert_eq!(r.qp_bytes, want.iter().map(|m| m * size as u64).collect::<Vec<_>>(), "{what}: bytes per QP");
    // Fairness is the scheduler's on a clean link; over a lossy one a QP may wait out its
    // local ACK timer (2^8 ticks here, about 262 k cycles) through the whole steady window.
    if link.loss == 0.0 && link.reorder == 0.0 && link.dup == 0.0 {
        let steady = r.qp_steady.clone().expect("completions in the steady state");
        assert!(steady.iter().all(|&m| m > 0), "{what}: a QP starved in the steady state: {steady:?}");
        assert!(r.fairness().is_some_and(|j| j > 0.5), "{what}: Jain {:?} over {steady:?}", r.fairness());
    }
    r
}

#[test]
fn many_qps_every_op() {
    for op in [Op::Send, Op::Write, Op::Read] {
        // 5 QPs, 43 messages: QPs 0-2 carry 9, QPs 3-4 carry 8
        let r = go_qps(op, 5, 43, LinkConfig::default(), [false; 2], 3);
        assert!(r.fairness().is_some_and(|j| j > 0.9), "{op:?}: Jain {:?}", r.fairness());
        // more QPs carry more messages at once: the rate grows over one QP's
        let one = go_qps(op, 1, 43, LinkConfig::default(), [false; 2], 3);
        assert!(r.msg_rate() > one.msg_rate(), "{op:?}: {} vs {} messages/s", r.msg_rate(), one.msg_rate());
    }
}

#[test]
fn many_qps_lossy_every_op() {
    for op in [Op::Send, Op::Write, Op::Read] {
        let r = go_qps(op, 4, 48, lossy(0.05), [false; 2], 21);
        assert!(r.counters[0].retransmits > 0, "{op:?}: the losses cost no retransmission");
    }
}

#[test]
fn many_qps_verilated_engines() {
    // both nodes Verilated: the HDL requester and responder over 4 QPs, clean and lossy
    for op in [Op::Send, Op::Write, Op::Read] {
        go_qps(op, 4, 32, LinkConfig::default(), [true; 2], 5);
    }
    let r = go_qps(Op::Write, 3, 30, lossy(0.05), [true; 2], 9);
    assert!(r.counters[0].retransmits > 0, "the losses cost no retransmission");
}

#[test]
fn too_many_qps_is_an_error() {
    let c = |qps, messages| TransferConfig { qps, messages, size: 64, ..Default::default() };
    // QPNs 0 and 1 are reserved: the engine's 1024 QPs leave 1022 for RC
    match run(&c(1023, 2000), |_, _| {}) {
        Err(SimError::Capacity { asked: 1023, max: 1022, .. }) => {}
        other => panic!("1023 QPs: {other:?}"),
    }
    assert!(matches!(run(&c(1025, 2000), |_, _| {}), Err(SimError::Config(_))));
    assert!(matches!(run(&c(8, 7), |_, _| {}), Err(SimError::Config(_))), "fewer messages than QPs");
}

#[test]
fn jain_index() {
    assert_eq!(jain(&[3, 3, 3, 3]), Some(1.0));
    assert_eq!(jain(&[5, 0, 0, 0]), Some(0.25));
    assert_eq!(jain(&[0, 0]), None);
    assert!((jain(&[1, 2]).unwrap_or(0.0) - 0.9).abs() < 1e-12);
}

#[test]
fn inline_doorbells_verilated_requester_lose_none() {
    // 16 QPs of 64-byte inline WRITEs from the Verilated requester (A) to the model, the send
    // window full most of the time: an inline doorbell offered in the cycle a WQE read's data
    // arrives waits for the sequencer and must not be counted as taken by the harness (a QP
    // whose last doorbell is dropped never completes its last message)
    let cfg = TransferConfig {
        op: Op::Write,
        size: 64,
        messages: 500,
        depth: 16,
        qps: 16,
        inline: true,
        hdl: [true, false],
        max_cycles: 4_000_000,
        ..Default::default()
    };
    let r = run(&cfg, |_, _| {}).expect("transfer runs");
    assert!(r.stalled.is_none() && r.clean(500), "lost {} stalled {:?} errors {}", r.lost, r.stalled, r.errors);
    assert_eq!(r.qp_messages, (0..16u64).map(|q| (499 - q) / 16 + 1).collect::<Vec<_>>());
}

#[test]
fn a_stalled_transfer_stops_as_stalled() {
    // every frame lost and no local ACK timeout (0: wait for ever): nothing can complete; the
    // model nodes run out of events, a Verilated one ticks on until nothing has completed for
    // stall_cycles(0); either way the run stops with the messages counted lost
    for hdl in [[false, false], [true, false]] {
        let cfg = TransferConfig {
            op: Op::Write,
            size: 64,
            messages: 4,
            timeout: 0,
            hdl,
            link: LinkConfig { loss: 1.0, ..LinkConfig::default() },
            ..Default::default()
        };
        let r = run(&cfg, |_, _| {}).expect("transfer runs");
        let s = r.stalled.expect("the run stopped as stalled");
        assert!(s < 2 * transfer::stall_cycles(0), "{hdl:?}: {s}");
        if hdl[0] {
            assert!(s > transfer::stall_cycles(0), "{s}");
        }
        assert_eq!((r.completed, r.lost, r.errors), (0, 4, 0), "{hdl:?}");
        assert!(!r.clean(4));
    }
    // with a timeout the limit leaves room for the retry budget (eight timeouts)
    assert!(transfer::stall_cycles(8) > 8 * (1024 << 8));
}
