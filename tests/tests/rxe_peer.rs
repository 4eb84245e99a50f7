//! The rxe-like peer (`Profile::Rxe`, `roce-sim transfer --peer rxe`): the engine model with
//! Linux Soft-RoCE's choices where the specification leaves room, as the other end of
//! lockstep runs.
//!
//! - Its behaviour, on the model alone: AckReq on a message's last packet and after 65
//!   packets without one, counted across messages; at most 129 packets outstanding; every
//!   AckReq packet and every duplicate answered by its own ACK (no coalescing).
//! - The Verilated engine against it in lockstep (cosim: the model runs beside the HDL node
//!   and every frame, DMA write and CQE must agree), as the responder of rxe's requests and
//!   as the requester to rxe's responder, for SEND, WRITE and READ at MTU 256 and 1024 with
//!   multi-window messages, over links that lose, reorder and duplicate, with a short local
//!   ACK timeout.
//!
//! `rxe_captures.rs` checks the profile against captures of the real rxe.

use roce_model::engine::{Profile, RXE_MAX_PKT_PER_ACK, RXE_MAX_UNACKED_PSNS};
use roce_model::wire::{parse_frame, Opcode};
use roce_sim::fabric::LinkConfig;
use roce_sim::hdl::HdlConfig;
use roce_sim::transfer::{run, Op, TransferConfig, TransferReport};

/// One captured RoCE packet: (direction 0 = A->B, opcode, PSN, AckReq).
fn packets(r: &TransferReport) -> Vec<(u8, Opcode, u32, bool)> {
    r.capture
        .iter()
        .filter_map(|(_, dir, f)| {
            let p = parse_frame(f).ok()?.roce()?;
            let b = p.bth();
            Some((*dir, b.opcode(), b.psn(), b.ack_req()))
        })
        .collect()
}

fn model_config(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig) -> TransferConfig {
    TransferConfig {
        op,
        size,
        messages,
        mtu,
        link,
        depth: 8,
        capture: true,
        peer: Profile::Rxe,
        max_cycles: 400_000_000,
        ..TransferConfig::default()
    }
}

fn model_run(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig) -> TransferReport {
    let r = run(&model_config(op, size, messages, mtu, link), |_, _| {}).expect("transfer runs");
    assert!(r.clean(messages), "{op:?} {size} B at MTU {mtu}: {r:?}");
    r
}

#[test]
fn requester_asks_for_an_ack_every_65_packets_and_on_a_last() {
    // 3 x 257 packets: rxe's counter runs across messages and restarts at each AckReq.
    let r = model_run(Op::Write, 64 * 1024 + 1, 3, 256, LinkConfig::default());
    let reqs: Vec<_> = packets(&r).into_iter().filter(|p| p.0 == 0).collect();
    assert_eq!(reqs.len(), 3 * 257);
    let mut since = 0u32;
    let mut asked = 0;
    for (i, &(_, op, _, ack_req)) in reqs.iter().enumerate() {
        let last = matches!(op, Opcode::RcRdmaWriteLast | Opcode::RcRdmaWriteOnly);
        let want = last || since > RXE_MAX_PKT_PER_ACK;
        assert_eq!(ack_req, want, "packet {i} ({op:?}) after {since} without AckReq");
        since = if ack_req { 0 } else { since + 1 };
        asked += u32::from(ack_req);
    }
    // 257 = 65 + 1 | 65 + 1 | 65 + 1 | 59 (last): AckReq at 66, 132, 198 and 257
    assert_eq!(asked, 3 * 4);
}

#[test]
fn responder_answers_every_ackreq_packet_with_its_own_ack() {
    for (op, size, mtu) in [(Op::Write, 64 * 1024 + 1, 256), (Op::Send, 16 * 1024, 1024)] {
        let r = model_run(op, size, 6, mtu, LinkConfig::default());
        let p = packets(&r);
        let asked: Vec<u32> = p.iter().filter(|p| p.0 == 0 && p.3).map(|p| p.2).collect();
        let acked: Vec<u32> = p.iter().filter(|p| p.0 == 1 && p.1 == Opcode::RcAcknowledge).map(|p| p.2).collect();
        assert_eq!(acked, asked, "{op:?}: one ACK per AckReq packet, at its PSN, in order");
        assert_eq!(r.counters[1].acks_sent, asked.len() as u64);
    }
}

#[test]
fn requester_keeps_at_most_129_packets_outstanding() {
    // A 20 µs link: the window, not the wire, bounds the requester.
    let link = LinkConfig { latency: 5000, ..LinkConfig::default() };
    let r = model_run(Op::Write, 64 * 1024, 4, 256, link);
    let mut acked: Option<u32> = None;
    let mut widest = 0;
    for (dir, op, psn, _) in packets(&r) {
        match (dir, acked) {
            (1, _) if op == Opcode::RcAcknowledge => acked = Some(psn),
            (0, Some(a)) => widest = widest.max(psn.wrapping_sub(a) & 0xFF_FFFF),
            (0, None) => {}
            _ => {}
        }
    }
    // rxe sends while its PSN is at most 128 past the oldest unacknowledged one (one past
    // the last ACK): 129 past the last ACK at most, and the window gets there
    assert_eq!(widest, RXE_MAX_UNACKED_PSNS + 1, "outstanding beyond the last ACK");
}

#[test]
fn duplicates_are_answered_one_ack_each() {
    // Every frame duplicated: each duplicate SEND/WRITE packet gets its own ACK of the PSN
    // before the expected one (the last duplicate may arrive as the run ends); the engine's
    // profile coalesces them (37 ACKs for 59 duplicates and 20 AckReq packets).
    let link = LinkConfig { dup: 1.0, ..LinkConfig::default() };
    let rxe = model_run(Op::Write, 4096, 20, 1024, link);
    let dups = rxe.counters[1].duplicates;
    assert!(dups >= 40, "duplicates seen {dups}");
    let asked = packets(&rxe).iter().filter(|p| p.0 == 0 && p.3).count() as u64;
    let acks = rxe.counters[1].acks_sent;
    assert!(
        (asked + dups - 1..=asked + dups).contains(&acks),
        "ACKs {acks}: AckReq packets {asked}, duplicates {dups}"
    );
    let engine =
        run(&TransferConfig { peer: Profile::Engine, ..model_config(Op::Write, 4096, 20, 1024, link) }, |_, _| {})
            .expect("transfer runs");
    assert!(engine.counters[1].acks_sent < asked + engine.counters[1].duplicates - 1, "the engine coalesces");
}

// ------------------------------------------------------- the Verilated engine against it

fn lossy(loss: f64) -> LinkConfig {
    LinkConfig { loss, reorder: loss.min(0.1), dup: loss.min(0.05), reorder_delay: 3000, ..LinkConfig::default() }
}

/// `hdl`: which node runs the Verilated engine (with the model beside it); the other is the
/// rxe-like model.
fn lockstep(hdl: usize, op: Op, size: usize, messages: u64, mtu: u32, loss: f64, seed: u64) -> TransferReport {
    let mut on = [false; 2];
    on[hdl] = true;
    let c = TransferConfig {
        op,
        size,
        messages,
        mtu,
        link: lossy(loss),
        seed,
        depth: 8,
        timeout: 4,
        hdl: on,
        cosim: Some(HdlConfig::default()),
        peer: Profile::Rxe,
        max_cycles: 400_000_000,
        ..TransferConfig::default()
    };
    let what = format!("HDL node {} {op:?} {size} B at MTU {mtu}, loss {loss}, seed {seed}", ["A", "B"][hdl]);
    let r = run(&c, |_, _| {}).expect("transfer runs");
    if let Some((n, d)) = &r.divergence {
        panic!("{what}: the HDL and the model diverged at node {n}: {d}");
    }
    let s = r.cosim[hdl].clone().expect("a cosim node");
    assert!(s.frames + s.dma_bytes > 0, "{what}: nothing was compared: {s:?}");
    assert!(r.clean(messages), "{what}: {r:?}");
    assert_eq!(r.bytes_verified, size as u64 * messages, "{what}");
    r
}

#[test]
fn hdl_responder_against_rxe_requests() {
    let (mut naks, mut dups) = (0, 0);
    for (i, (op, size, mtu)) in
        [(Op::Write, 64 * 1024 + 1, 256), (Op::Send, 16 * 1024, 1024), (Op::Read, 4 * 1024 + 1, 256)]
            .into_iter()
            .enumerate()
    {
        let r = lockstep(1, op, size, 6, mtu, 0.03, 40 + i as u64);
        naks += r.counters[1].nak_seq_sent;
        dups += r.counters[1].duplicates;
    }
    assert!(naks > 0 && dups > 0, "the HDL saw losses (NAKs {naks}) and duplicates ({dups})");
}

#[test]
fn hdl_requester_against_rxe_responses() {
    let mut retx = 0;
    for (i, (op, size, mtu)) in
        [(Op::Write, 4 * 1024 - 1, 256), (Op::Send, 16 * 1024, 1024), (Op::Read, 16 * 1024 + 1, 1024)]
            .into_iter()
            .enumerate()
    {
        let r = lockstep(0, op, size, 12, mtu, 0.05, 50 + i as u64);
        retx += r.counters[0].retransmits;
    }
    assert!(retx > 0, "the HDL requester went back");
}
