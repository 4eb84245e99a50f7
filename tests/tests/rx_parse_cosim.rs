//! Lockstep: `roce_rx_parse` (Verilated) against its model, record for record and payload
//! beat for payload beat: every opcode and encapsulation, payload sizes across beat
//! boundaries, mutated and non-RoCE frames, real rxe captures, under random input gaps and
//! independent random backpressure on both outputs. Also the stated latency and throughput.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::rx_parse::{self as model, LATENCY};
use roce_model::contract::records::{RxError, RxFlags};
use roce_model::wire::Opcode;
use roce_sim::cosim::rx_parse::{rx_parse_lockstep, RxParseReport};
use roce_sim::stream::Traffic;
use roce_tests::{mutate_frame, roce_frame, rxe_vectors_dir};

fn assert_clean(what: &str, frames: &[Vec<u8>], r: &RxParseReport) {
    for d in r.divergences.iter().take(5) {
        eprintln!("{what}: {d}");
        if let Some(f) = frames.get(d.frame) {
            eprintln!("  frame {} ({} bytes): {:02x?}", d.frame, f.len(), &f[..f.len().min(128)]);
        }
    }
    assert!(r.divergences.is_empty(), "{what}: {} divergences", r.divergences.len());
    assert_eq!(r.records.len(), frames.len(), "{what}: one record per frame");
}

/// Every opcode x IPv4/IPv6/RoCEv1 x VLAN x payload lengths around the beat boundaries.
fn all_shapes(rng: &mut impl RngCore) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for op in Opcode::ALL {
        for ip in 0..3 {
            for vlan in [false, true] {
                for plen in [0usize, 1, 2, 3, 4, 5, 8, 10, 60, 63, 64, 65, 70, 127, 128, 129, 200, 1024, 4096] {
                    if !op.has_payload() && plen > 0 {
                        continue;
                    }
                    v.push(roce_frame(rng, op, ip, vlan, plen, plen < 8));
                }
            }
        }
    }
    v
}

fn mutated(rng: &mut impl RngCore, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let op = Opcode::ALL[rng.random_range(0..Opcode::ALL.len())];
            let (ip, vlan) = (rng.random_range(0..3), rng.random_bool(0.3));
            let (plen, pad) = (rng.random_range(0..300), rng.random_bool(0.2));
            let mut f = roce_frame(rng, op, ip, vlan, plen, pad);
            for _ in 0..rng.random_range(1..4) {
                mutate_frame(rng, &mut f);
            }
            f
        })
        .collect()
}

fn not_roce(rng: &mut impl RngCore) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    // short frames, every length up to a bit past the Ethernet header
    for n in 0..20 {
        let mut f = vec![0u8; n];
        rng.fill_bytes(&mut f);
        if n >= 14 && n % 2 == 0 {
            f[12..14].copy_from_slice(&[0x81, 0x00]);
        }
        v.push(f);
    }
    // ARP, a UDP datagram to another port, TCP, an IPv4 fragment
    let mut arp = vec![0u8; 60];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    v.push(arp);
    let base = roce_frame(rng, Opcode::RcSendOnly, 0, false, 100, false);
    let mut other_port = base.clone();
    other_port[36..38].copy_from_slice(&4792u16.to_be_bytes());
    v.push(other_port);
    let mut tcp = base.clone();
    tcp[23] = 6;
    v.push(tcp);
    let mut frag = base.clone();
    frag[20] |= 0x20;
    v.push(frag);
    let mut opts = base;
    opts[14] = 0x46;
    v.push(opts);
    v
}

/// 1 if the frame's payload needs one more output beat than the frame has beats after the
/// payload's start: the parser's one flush bubble.
fn bubble(f: &[u8]) -> u64 {
    let h = model::parse(f);
    let beats = f.len().div_ceil(64).max(1);
    let nout = usize::from(h.payload_len).div_ceil(64);
    let first = usize::from(h.payload_off) / 64;
    u64::from(h.flags.contains(RxFlags::PAYLOAD) && first + nout > beats - 1)
}

#[test]
fn every_opcode_and_encapsulation_back_to_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let frames = all_shapes(&mut rng);
    let r = rx_parse_lockstep(&frames, &Traffic::FULL, None).expect("run");
    assert_clean("all shapes", &frames, &r);
    assert!(r.records.iter().all(|x| x.is_some_and(|h| h.flags.contains(RxFlags::ROCE))));
    // throughput: one beat per cycle, plus one bubble per frame whose payload needs one
    // more output beat than it has input beats left
    let bubbles: u64 = frames.iter().map(|f| bubble(f)).sum();
    assert!(bubbles > 0 && bubbles < frames.len() as u64);
    let beats = r.in_beats as u64;
    eprintln!("{} frames, {beats} beats, {bubbles} bubbles, done at cycle {}", frames.len(), r.done_at);
    assert!(r.done_at <= beats + bubbles + LATENCY + 2, "done at {} for {beats} beats + {bubbles} bubbles", r.done_at);
    // a bubble stalls the frames behind it in the pipeline by one cycle each, never less
    assert!(r.rec_latency.iter().all(|&l| l >= LATENCY));
    assert_eq!(r.rec_latency.iter().min(), Some(&LATENCY));

    // the stated latency, exactly, for every frame of a stream without bubbles
    let smooth: Vec<Vec<u8>> = frames.into_iter().filter(|f| bubble(f) == 0).collect();
    let r = rx_parse_lockstep(&smooth, &Traffic::FULL, None).expect("run");
    assert_clean("no bubbles", &smooth, &r);
    assert_eq!(r.rec_latency.len(), smooth.len());
    assert!(r.rec_latency.iter().all(|&l| l == LATENCY), "latencies {:?}", &r.rec_latency[..20]);
    assert!(r.done_at <= r.in_beats as u64 + LATENCY + 2, "done at {} for {} beats", r.done_at, r.in_beats);
}

#[test]
fn mutated_and_non_roce_frames_under_backpressure() {
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut frames = mutated(&mut rng, 3000);
    frames.extend(not_roce(&mut rng));
    // shuffle the well-formed ones in
    frames.extend(all_shapes(&mut rng).into_iter().step_by(7));
    for i in (1..frames.len()).rev() {
        frames.swap(i, rng.random_range(0..=i));
    }
    let mut classes = std::collections::BTreeMap::<u8, usize>::new();
    for f in &frames {
        *classes.entry(model::parse(f).error as u8).or_default() += 1;
    }
    assert!(classes.len() >= 9, "error classes covered: {classes:?}");
    for (i, t) in [
        Traffic { valid_p: 0.8, ready_p: 0.6, seed: 3 },
        Traffic { valid_p: 1.0, ready_p: 0.15, seed: 4 },
        Traffic { valid_p: 0.3, ready_p: 1.0, seed: 5 },
    ]
    .iter()
    .enumerate()
    {
        let r = rx_parse_lockstep(&frames, t, None).expect("run");
        assert_clean(&format!("traffic {i}"), &frames, &r);
    }
    let opts = frames.iter().filter(|f| model::parse(f).error == RxError::IpOptions).count();
    assert!(opts > 0);
}

/// Real Linux rxe traffic (tests/vectors/rxe): every frame parses as the model says.
#[test]
fn rxe_captures() {
    let dir = rxe_vectors_dir();
    let mut frames = Vec::new();
    for e in std::fs::read_dir(&dir).expect("vectors/rxe") {
        let p = e.expect("entry").path();
        if p.extension().is_some_and(|x| x == "pcap") {
            frames.extend(roce_sim::pcapio::read(&p).expect("read").into_iter().map(|c| c.data));
        }
    }
    assert!(frames.len() > 100);
    // the captures also hold ARP, ICMPv6 and the TCP side channel: every UDP/4791 frame
    // (as the independent wire codec sees it) must be RoCE without error
    let udp4791 = frames.iter().filter(|f| roce_model::wire::parse_frame(f).is_ok_and(|p| p.roce().is_some())).count();
    let roce = frames
        .iter()
        .filter(|f| {
            let h = model::parse(f);
            h.flags.contains(RxFlags::ROCE) && !h.flags.contains(RxFlags::ERROR)
        })
        .count();
    assert!(roce > 300 && roce == udp4791, "{roce} RoCE frames, {udp4791} by wire::parse_frame");
    let r = rx_parse_lockstep(&frames, &Traffic { valid_p: 0.9, ready_p: 0.7, seed: 6 }, None).expect("run");
    assert_clean("rxe captures", &frames, &r);
}
