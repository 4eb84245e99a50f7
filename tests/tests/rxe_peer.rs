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
use roce_sim::cmd::transfer::{run, Op, TransferConfig, TransferReport};
use roce_sim::net::fabric::LinkConfig;
use roce_sim::net::hdl::HdlConfig;

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
    // before the expected one (those of the last duplicates may still be owed when the run
    // stops: they are counted); the engine's profile coalesces them (37 ACKs for 59
    // duplicates and 20 AckReq packets).
    let link = LinkConfig { dup: 1.0, ..LinkConfig::default() };
    let rxe = model_run(Op::Write, 4096, 20, 1024, link);
    let dups = rxe.counters[1].duplicates;
    assert!(dups >= 40, "duplicates seen {dups}");
    let asked = packets(&rxe).iter().filter(|p| p.0 == 0 && p.3).count() as u64;
    let acks = rxe.counters[1].acks_sent;
    let owed = rxe.owed_acks[1] as u64;
    assert!(owed <= 4, "{owed} ACKs owed at the end");
    assert_eq!(acks + owed, asked + dups, "ACKs {acks} and {owed} owed: AckReq packets {asked}, duplicates {dups}");
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

// ------------------------------------------------------------ against captures of the real rxe

/// The VM's (rxe's) address in the captures of `vectors/rxe-vm` (README there).
const RXE_IP: [u8; 4] = [192, 0, 2, 1];

/// A RoCEv2/IPv4 packet of a capture, from its headers (the requester capture keeps the
/// first 64 bytes of each frame).
#[derive(Clone, Debug)]
struct Hdr {
    /// rxe sent it (else the engine).
    rxe: bool,
    op: u8,
    psn: u32,
    ack_req: bool,
    /// AETH: (syndrome, MSN).
    aeth: Option<(u8, u32)>,
    /// The whole frame, when the capture kept it.
    frame: Vec<u8>,
}

fn capture(file: &str) -> Vec<Hdr> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("vectors/rxe-vm").join(file);
    let frames = roce_sim::pcapio::read(&path).expect("the capture is in the repository");
    frames
        .into_iter()
        .filter_map(|c| {
            let f = &c.data;
            // Ethernet, IPv4 without options, UDP to 4791, BTH
            if f.len() < 54 || f[12..14] != [0x08, 0x00] || f[14] != 0x45 || f[23] != 17 || f[36..38] != [0x12, 0xB7] {
                return None;
            }
            let b = &f[42..54];
            let op = b[0];
            let aeth = (matches!(op, 13 | 15 | 16 | 17 | 18) && f.len() >= 58)
                .then(|| (f[54], u32::from_be_bytes([0, f[55], f[56], f[57]])));
            let whole = c.orig_len as usize == f.len();
            Some(Hdr {
                rxe: f[26..30] == RXE_IP,
                op,
                psn: u32::from_be_bytes([0, b[9], b[10], b[11]]),
                ack_req: b[8] & 0x80 != 0,
                aeth,
                frame: if whole { f.clone() } else { Vec::new() },
            })
        })
        .collect()
}

/// rxe's AckReq rule over a requester's packets in order (opcodes as on the wire): on the
/// last packet of a SEND/WRITE, on READ and atomic requests, and after 65 without.
/// The number of packets that asked.
fn check_ackreq_rule(pkts: &[(u8, bool)], what: &str) -> usize {
    let mut since = 0u32;
    let mut asked = 0;
    for (i, &(op, ack_req)) in pkts.iter().enumerate() {
        let ends = matches!(op, 2..=5 | 8..=12 | 19 | 20);
        let want = ends || since > RXE_MAX_PKT_PER_ACK;
        assert_eq!(ack_req, want, "{what}: packet {i} (opcode {op}) after {since} without AckReq");
        since = if ack_req { 0 } else { since + 1 };
        asked += usize::from(ack_req);
    }
    asked
}

#[test]
fn the_real_rxe_requester_follows_the_profile() {
    let h = capture("rxe_requester_write_65537B_mtu256_lost_request.pcap");
    let rxe: Vec<&Hdr> = h.iter().filter(|p| p.rxe).collect();
    // 5 x 257 packets and what rxe sent again
    assert!(rxe.len() > 5 * 257, "{} requests", rxe.len());
    let reqs: Vec<(u8, bool)> = rxe.iter().map(|p| (p.op, p.ack_req)).collect();
    let asked = check_ackreq_rule(&reqs, "rxe's capture");
    assert!(asked >= 5 * 4, "AckReq packets {asked}");

    // The lost frame: the engine NAKs PSN P; rxe goes back to P, and had sent no more than
    // 128 past P (the NAK acknowledged everything before it: P is the oldest unacknowledged).
    let nak = h.iter().find(|p| !p.rxe && p.aeth.is_some_and(|a| a.0 == 0x60)).expect("a sequence NAK");
    let p = nak.psn;
    let back = (1..rxe.len()).find(|&i| rxe[i].psn != (rxe[i - 1].psn + 1) & 0xFF_FFFF).expect("rxe went back");
    assert_eq!(rxe[back].psn, p, "rxe went back to the NAK's PSN");
    let highest = rxe[back - 1].psn;
    assert!(highest - p <= RXE_MAX_UNACKED_PSNS, "rxe sent up to {highest}, {} past the NAK", highest - p);

    // The profile's requester on the same workload, clean: the same packets (opcode, PSN
    // from the first, AckReq) as rxe's until rxe went back.
    let r = model_run(Op::Write, 65537, 5, 256, LinkConfig::default());
    let model: Vec<(u8, u32, bool)> =
        packets(&r).into_iter().filter(|p| p.0 == 0).map(|p| (p.1 as u8, p.2, p.3)).collect();
    let rel = |v: &[(u8, u32, bool)]| -> Vec<(u8, u32, bool)> {
        v.iter().map(|&(op, psn, a)| (op, psn.wrapping_sub(v[0].1) & 0xFF_FFFF, a)).collect()
    };
    let theirs: Vec<(u8, u32, bool)> = rxe[..back].iter().map(|p| (p.op, p.psn, p.ack_req)).collect();
    assert_eq!(rel(&model)[..back], rel(&theirs)[..], "the profile's requests, left, against rxe's");
    assert_eq!(check_ackreq_rule(&model.iter().map(|p| (p.0, p.2)).collect::<Vec<_>>(), "the profile"), 5 * 4);
}

#[test]
fn the_profile_responder_answers_as_the_real_rxe_did() {
    use roce_driver::RecvWr;
    use roce_sim::net::pair::{connect, endpoint, PairConfig};
    use std::net::{IpAddr, Ipv4Addr};

    let h = capture("rxe_responder_send_1025B_mtu256_lost_frames.pcap");
    // what the engine sent rxe's responder (SENDs), and rxe's ACK/NAKs
    let reqs: Vec<&Hdr> = h.iter().filter(|p| !p.rxe && p.op <= 5).collect();
    let want: Vec<(u32, u8, u32)> = h
        .iter()
        .filter(|p| p.rxe && p.op == 17)
        .map(|p| (p.psn, p.aeth.map_or(0, |a| a.0), p.aeth.map_or(0, |a| a.1)))
        .collect();
    assert!(want.iter().any(|a| a.1 == 0x60), "the capture has sequence NAKs");
    let f0 = &reqs[0].frame;
    let mac = |o: usize| -> [u8; 6] { f0[o..o + 6].try_into().expect("6 bytes") };
    let (rxe_mac, engine_mac) = (mac(0), mac(6));
    let engine_ip = Ipv4Addr::new(f0[26], f0[27], f0[28], f0[29]);
    let rxe_ip = Ipv4Addr::from(RXE_IP);
    let ack0 = h.iter().find(|p| p.rxe && p.op == 17).expect("an ACK");
    let engine_qpn = u32::from_be_bytes([0, ack0.frame[47], ack0.frame[48], ack0.frame[49]]);

    // the profile's responder in rxe's place: its address, the engine's QP as the peer
    let cfg = PairConfig { mtu: 256, depth: 32, buf_len: 1 << 16, peer: Profile::Rxe, ..PairConfig::default() };
    let mut ep = endpoint(&cfg, rxe_mac, rxe_ip, rxe_ip.to_ipv6_mapped(), 0x1234).expect("endpoint");
    connect(&cfg, &mut ep, engine_qpn, engine_mac, IpAddr::V4(engine_ip), reqs[0].psn).expect("connect");
    for i in 0..16u64 {
        let sge = [ep.mr.sge(i * 2048, 2048)];
        ep.dev.post_recv(ep.qp, &[RecvWr { wr_id: i, sges: &sge }]).expect("post_recv");
    }
    // The engine's frames in the capture's order, those between two of rxe's together (at
    // one cycle: what rxe had not answered yet when the next came), then time to answer.
    let qpn = ep.qp.qpn().to_be_bytes();
    let mut bursts: Vec<Vec<Vec<u8>>> = vec![Vec::new()];
    for p in &h {
        if p.rxe {
            if bursts.last().is_some_and(|b| !b.is_empty()) {
                bursts.push(Vec::new());
            }
        } else if p.op <= 5 {
            let mut f = p.frame.clone();
            f[47..50].copy_from_slice(&qpn[1..]);
            roce_model::icrc::fill(&mut f).expect("a RoCE frame");
            bursts.last_mut().expect("a burst").push(f);
        }
    }
    assert!(bursts.iter().any(|b| b.len() > 1));
    let mut got = Vec::new();
    let mut t = ep.node.borrow().now;
    for b in &bursts {
        let mut n = ep.node.borrow_mut();
        for f in b {
            n.rx(f);
        }
        t += 5000;
        n.advance(t);
        while let Some(o) = n.tx() {
            let p = parse_frame(&o).ok().and_then(|f| f.roce()).expect("a RoCE frame");
            if p.opcode() == Opcode::RcAcknowledge {
                let a = p.aeth().expect("AETH");
                got.push((p.bth().psn(), a.syndrome(), a.msn()));
            }
        }
    }
    assert_eq!(got, want, "the profile's ACK/NAKs (PSN, syndrome, MSN), left, against rxe's");
}
