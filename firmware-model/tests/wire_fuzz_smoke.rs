//! Runs the `parse_frame` fuzz body (`firmware-model/fuzz/src/lib.rs`, included here
//! verbatim) over a few thousand seeded-random inputs in a normal `cargo test`, so the
//! fuzz checks run in CI without nightly or libFuzzer.
//!
//! Inputs: random bytes; random valid RoCEv2 frames from the builder; and those frames
//! (plus the rxe captures, if present) with random mutations: byte flips, truncation,
//! extension, and corrupted length / version / opcode / pad fields.

#[path = "../fuzz/src/lib.rs"]
mod fuzz_body;

use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use fuzz_body::{parse_frame_body, Outcome};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use roce_model::wire::*;

fn random_builder(rng: &mut StdRng) -> (FrameBuilder, Vec<u8>) {
    let op = Opcode::ALL[rng.random_range(0..Opcode::ALL.len())];
    let vlan = rng.random_bool(0.3).then(|| Vlan {
        pcp: rng.random_range(0..8),
        dei: rng.random(),
        vid: rng.random_range(0..4096),
    });
    let ip = if rng.random_bool(0.5) {
        IpFields::V4(Ipv4Fields {
            src: Ipv4Addr::from(rng.random::<[u8; 4]>()),
            dst: Ipv4Addr::from(rng.random::<[u8; 4]>()),
            dscp: rng.random_range(0..64),
            ecn: rng.random_range(0..4),
            ttl: rng.random(),
            identification: rng.random(),
            dont_fragment: rng.random(),
        })
    } else {
        IpFields::V6(Ipv6Fields {
            src: Ipv6Addr::from(rng.random::<[u8; 16]>()),
            dst: Ipv6Addr::from(rng.random::<[u8; 16]>()),
            traffic_class: rng.random(),
            flow_label: rng.random_range(0..=0xF_FFFF),
            hop_limit: rng.random(),
        })
    };
    let mut bth = BthFields::new(op, rng.random_range(0..=MAX_U24), rng.random_range(0..=MAX_U24));
    bth.solicited = rng.random();
    bth.migreq = rng.random();
    bth.pkey = rng.random();
    bth.fecn = rng.random();
    bth.becn = rng.random();
    bth.ack_req = rng.random();
    let has = |k| op.has_ext_header(k);
    let ext = ExtHeaders {
        deth: has(ExtHeaderKind::Deth)
            .then(|| DethFields { qkey: rng.random(), src_qp: rng.random_range(0..=MAX_U24) }),
        reth: has(ExtHeaderKind::Reth).then(|| RethFields {
            va: rng.random(),
            rkey: rng.random(),
            dma_len: rng.random(),
        }),
        atomic_eth: has(ExtHeaderKind::AtomicEth).then(|| AtomicEthFields {
            va: rng.random(),
            rkey: rng.random(),
            swap_add: rng.random(),
            compare: rng.random(),
        }),
        aeth: has(ExtHeaderKind::Aeth)
            .then(|| AethFields { syndrome: rng.random(), msn: rng.random_range(0..=MAX_U24) }),
        atomic_ack_eth: has(ExtHeaderKind::AtomicAckEth).then(|| AtomicAckEthFields { orig_remote_data: rng.random() }),
        immdt: has(ExtHeaderKind::ImmDt).then(|| ImmDtFields { imm: rng.random() }),
        ieth: has(ExtHeaderKind::Ieth).then(|| IethFields { rkey: rng.random() }),
    };
    let mut payload = vec![0u8; if op.has_payload() { rng.random_range(0..300) } else { 0 }];
    rng.fill(&mut payload[..]);
    let eth = EthernetFields { dst: rng.random(), src: rng.random(), vlan };
    let b = FrameBuilder::new(eth, ip, bth).with_ext(ext).with_udp_src_port(rng.random());
    (b, payload)
}

/// A random mutation of a valid frame, biased towards the fields the parser checks.
fn mutate(rng: &mut StdRng, frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    if f.is_empty() {
        return f;
    }
    let ip = if f.get(12..14) == Some(&[0x81, 0x00][..]) { 18 } else { 14 };
    let v6 = f.get(ip).is_some_and(|b| b >> 4 == 6);
    let udp = if v6 { ip + 40 } else { ip + usize::from(f.get(ip).map_or(5, |b| b & 0x0F)) * 4 };
    let bth = udp + 8;
    for _ in 0..rng.random_range(1..=3) {
        let pick = rng.random_range(0..10);
        let len = f.len();
        let idx = |rng: &mut StdRng, base: usize, span: usize| (base + rng.random_range(0..span.max(1))).min(len - 1);
        match pick {
            0 => {
                let i = rng.random_range(0..len);
                f[i] ^= 1 << rng.random_range(0..8);
            }
            1 => f.truncate(rng.random_range(0..len)),
            2 => {
                let extra = rng.random_range(1..8);
                f.extend((0..extra).map(|_| rng.random::<u8>()));
            }
            // IP version / IHL
            3 => {
                let i = idx(rng, ip, 1);
                f[i] = rng.random();
            }
            // IP length fields
            4 => {
                let i = idx(rng, ip + if v6 { 4 } else { 2 }, 2);
                f[i] = f[i].wrapping_add(rng.random_range(1..=8));
            }
            // UDP length / port
            5 => {
                let i = idx(rng, udp + 2, 4);
                f[i] = f[i].wrapping_sub(rng.random_range(1..=4));
            }
            // Opcode
            6 => {
                let i = idx(rng, bth, 1);
                f[i] = if rng.random_bool(0.5) {
                    Opcode::ALL[rng.random_range(0..Opcode::ALL.len())].as_u8()
                } else {
                    rng.random()
                };
            }
            // SE/M/Pad/TVer byte
            7 => {
                let i = idx(rng, bth + 1, 1);
                f[i] ^= rng.random_range(1..=0xFF);
            }
            // Ethertype
            8 => {
                let i = idx(rng, 12, 2);
                f[i] = rng.random();
            }
            // Anywhere in the transport headers
            _ => {
                let i = idx(rng, bth, 48);
                f[i] = rng.random();
            }
        }
        if f.is_empty() {
            break;
        }
    }
    f
}

fn capture_frames() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/rxe");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut frames = Vec::new();
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths.iter().filter(|p| p.extension().is_some_and(|e| e == "pcap")) {
        let Ok(b) = std::fs::read(p) else { continue };
        // Little-endian classic pcap only (what the captures are); skip anything else.
        if b.get(..4) != Some(&[0xD4, 0xC3, 0xB2, 0xA1][..]) {
            continue;
        }
        let mut off = 24;
        while let Some(h) = b.get(off..off + 16) {
            let incl = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
            let Some(frame) = b.get(off + 16..off + 16 + incl) else {
                break;
            };
            frames.push(frame.to_vec());
            off += 16 + incl;
        }
    }
    frames
}

#[derive(Default, Debug)]
struct Stats {
    rejected: usize,
    non_roce: usize,
    roce: usize,
}

impl Stats {
    fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Rejected => self.rejected += 1,
            Outcome::NonRoce => self.non_roce += 1,
            Outcome::Roce => self.roce += 1,
        }
    }
}

#[test]
fn fuzz_body_over_random_bytes() {
    let mut rng = StdRng::seed_from_u64(0x5EED_0001);
    let mut stats = Stats::default();
    for i in 0..3000 {
        let len = if i % 10 == 0 { rng.random_range(0..2000) } else { rng.random_range(0..120) };
        let mut data = vec![0u8; len];
        rng.fill(&mut data[..]);
        // Make some of them look like Ethernet/IP to get past the first checks.
        if len >= 14 && i % 3 == 0 {
            data[12..14].copy_from_slice(if i % 2 == 0 { &[0x08, 0x00] } else { &[0x86, 0xDD] });
            if len > 14 {
                data[14] = if i % 2 == 0 { 0x45 } else { 0x60 };
            }
        }
        stats.add(parse_frame_body(&data));
    }
    eprintln!("random bytes: {stats:?}");
    assert!(stats.rejected > 0 && stats.non_roce > 0);
}

#[test]
fn fuzz_body_over_valid_and_mutated_frames() {
    let mut rng = StdRng::seed_from_u64(0x5EED_0002);
    let mut stats = Stats::default();
    for _ in 0..2000 {
        let (b, payload) = random_builder(&mut rng);
        let frame = b.build(&payload).expect("valid builder");
        assert_eq!(parse_frame_body(&frame), Outcome::Roce);
        stats.add(Outcome::Roce);
        for _ in 0..3 {
            stats.add(parse_frame_body(&mutate(&mut rng, &frame)));
        }
    }
    eprintln!("builder frames + mutations: {stats:?}");
    assert!(stats.roce > 2000 && stats.rejected > 1000);
}

#[test]
fn fuzz_body_over_mutated_captures() {
    let frames = capture_frames();
    assert!(frames.len() > 300, "{} capture frames", frames.len());
    let mut rng = StdRng::seed_from_u64(0x5EED_0003);
    let mut stats = Stats::default();
    for f in &frames {
        let o = parse_frame_body(f);
        assert_ne!(o, Outcome::Rejected, "capture frames all parse");
        stats.add(o);
        for _ in 0..4 {
            stats.add(parse_frame_body(&mutate(&mut rng, f)));
        }
    }
    eprintln!("capture frames + mutations: {stats:?}");
}
