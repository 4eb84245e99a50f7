//! Lockstep: `roce_tx_build` (Verilated) against its model (the wire codec's FrameBuilder):
//! every opcode x encapsulation x payload length around the beat boundaries, random
//! records, refused records (dropped), payload packets of the wrong length, under random
//! input gaps and output backpressure. Also the stated latency and full throughput, and a
//! cross-check of the HDL's frames through the RX parser model.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::rx_parse as rx;
use roce_model::blocks::tx_build::{self as model, LATENCY};
use roce_model::contract::records::{RxFlags, TxFlags, TxHdr};
use roce_model::wire::{Opcode, MAX_U24};
use roce_sim::cosim::tx_build::{tx_build_lockstep, TxBuildReport, TxCase};
use roce_sim::stream::Traffic;

fn rand_hdr(rng: &mut impl RngCore, op: u8, flags: TxFlags, plen: u16) -> TxHdr {
    let mut h = TxHdr {
        flags,
        opcode: op,
        bth_se_m_tver: rng.random::<u8>() & 0xCF,
        bth_fecn_becn: rng.random::<u8>() & 0xC0,
        pkey: rng.random(),
        ack_req: rng.random(),
        ttl: rng.random(),
        dest_qp: rng.random::<u32>() & MAX_U24,
        psn: rng.random::<u32>() & MAX_U24,
        udp_sport: rng.random(),
        vlan_tci: rng.random(),
        payload_len: plen,
        ip_id: rng.random(),
        tclass: rng.random(),
        va: rng.random(),
        rkey: rng.random(),
        dma_len: rng.random(),
        swap_add: rng.random(),
        compare: rng.random(),
        aeth_syndrome: rng.random(),
        aeth_msn: rng.random::<u32>() & MAX_U24,
        imm_or_inv: rng.random(),
        deth_qkey: rng.random(),
        deth_src_qp: rng.random::<u32>() & MAX_U24,
        flow_label: rng.random::<u32>() & 0xF_FFFF,
        atomic_orig: rng.random(),
        ..TxHdr::default()
    };
    rng.fill_bytes(&mut h.src_mac);
    rng.fill_bytes(&mut h.dst_mac);
    rng.fill_bytes(&mut h.src_ip);
    rng.fill_bytes(&mut h.dst_ip);
    h
}

fn case(rng: &mut impl RngCore, hdr: TxHdr) -> TxCase {
    let mut p = vec![0u8; usize::from(hdr.payload_len)];
    rng.fill_bytes(&mut p);
    let filler = rng.random();
    TxCase { hdr, send: model::payload_beats(&p, filler) }
}

const ENCAPS: [TxFlags; 6] = [
    TxFlags::DF,
    TxFlags::VLAN,
    TxFlags::IPV6,
    TxFlags::IPV6.union(TxFlags::VLAN),
    TxFlags::ROCEV1,
    TxFlags::ROCEV1.union(TxFlags::VLAN),
];

/// Every opcode x encapsulation, payload lengths across the beat boundaries.
fn all_shapes(rng: &mut impl RngCore) -> Vec<TxCase> {
    let mut v = Vec::new();
    for op in Opcode::ALL {
        for flags in ENCAPS {
            let lens: &[u16] = if op.has_payload() {
                &[0, 1, 3, 4, 5, 10, 22, 42, 63, 64, 65, 127, 128, 129, 200, 1024, 4096]
            } else {
                &[0]
            };
            for &plen in lens {
                let h = rand_hdr(rng, op as u8, flags, plen);
                v.push(case(rng, h));
            }
        }
    }
    v
}

fn assert_clean(what: &str, r: &TxBuildReport, frames: usize) {
    for d in r.divergences.iter().take(4) {
        eprintln!("{what}: {d}");
    }
    assert!(r.divergences.is_empty(), "{what}: {} divergences", r.divergences.len());
    assert_eq!(r.frames, frames, "{what}: frames");
    assert_eq!(r.drops, r.want_drops, "{what}: drops");
}

#[test]
fn every_opcode_and_encapsulation_back_to_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let cases = all_shapes(&mut rng);
    let r = tx_build_lockstep(&cases, &Traffic::FULL, None).expect("run");
    assert_clean("all shapes", &r, cases.len());
    assert_eq!(r.want_drops, 0);
    // the stated latency for the first frame, and back-to-back frames: one beat per cycle
    assert_eq!(r.latency.first(), Some(&LATENCY), "latencies {:?}", &r.latency[..8]);
    let first = r.latency[0];
    eprintln!("{} frames, {} beats, done at cycle {}", r.frames, r.out_beats, r.done_at);
    assert!(r.done_at <= first + r.out_beats as u64 + 1, "done at {} for {} beats", r.done_at, r.out_beats);
}

#[test]
fn random_records_refused_records_and_wrong_payloads_under_backpressure() {
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let mut cases = Vec::new();
    let mut wrong = 0;
    for _ in 0..1500 {
        let op = if rng.random_bool(0.05) {
            rng.random()
        } else {
            Opcode::ALL[rng.random_range(0..Opcode::ALL.len())] as u8
        };
        let has = Opcode::from_u8(op).is_ok_and(|o| o.has_payload());
        let plen = match rng.random_range(0..20) {
            0 => 65_400,                     // too large a datagram: dropped
            1..=3 => rng.random_range(0..2), // payload on a no-payload opcode: dropped
            _ if has => rng.random_range(0..600),
            _ => 0,
        };
        let flags = TxFlags::from_bits_truncate(rng.random());
        let h = rand_hdr(&mut rng, op, flags, plen);
        let mut c = case(&mut rng, h);
        if plen > 0 && rng.random_bool(0.05) {
            // a payload packet of the wrong length: shorter or longer by whole beats
            wrong += 1;
            let n = c.send.len();
            let mut p = vec![0u8; if rng.random() || n == 1 { (n + 1) * 64 } else { (n - 1) * 64 }];
            rng.fill_bytes(&mut p);
            c.send = model::payload_beats(&p, 0);
        }
        cases.push(c);
    }
    assert!(wrong > 10);
    let frames = cases
        .iter()
        .filter(|c| {
            let (p, _, _) = model::take_payload(&c.send, c.hdr.payload_len);
            model::build(&c.hdr, &p).is_ok()
        })
        .count();
    for (i, t) in [
        Traffic { valid_p: 0.7, ready_p: 0.6, seed: 1 },
        Traffic { valid_p: 1.0, ready_p: 0.3, seed: 2 },
        Traffic { valid_p: 0.3, ready_p: 1.0, seed: 3 },
    ]
    .iter()
    .enumerate()
    {
        let r = tx_build_lockstep(&cases, t, None).expect("run");
        assert_clean(&format!("traffic {i}"), &r, frames);
        assert!(r.want_drops > 50, "{} drops", r.want_drops);
    }
}

/// The HDL's frames, read back by the RX parser (model): the record's fields are where a
/// receiver finds them. Independent of the model's record-to-builder mapping.
#[test]
fn hdl_frames_parse_back_to_the_record() {
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    let mut cases = all_shapes(&mut rng);
    for c in &mut cases {
        c.hdr.bth_se_m_tver &= 0xC0; // a receiver accepts TVer 0 only
    }
    let r = tx_build_lockstep(&cases, &Traffic { valid_p: 0.8, ready_p: 0.8, seed: 4 }, None).expect("run");
    let frames = r.out;
    assert_eq!(frames.len(), cases.len());
    for (c, f) in cases.iter().zip(&frames) {
        let h = &c.hdr;
        let p = rx::parse(f);
        assert!(p.flags.contains(RxFlags::ROCE) && !p.flags.contains(RxFlags::ERROR), "{h:?}: {p:?}");
        assert_eq!(p.flags.contains(RxFlags::VLAN), h.flags.contains(TxFlags::VLAN));
        assert_eq!(p.flags.contains(RxFlags::ROCEV1), h.flags.contains(TxFlags::ROCEV1));
        assert_eq!(
            p.flags.contains(RxFlags::IPV6),
            h.flags.contains(TxFlags::IPV6) && !h.flags.contains(TxFlags::ROCEV1)
        );
        assert_eq!((p.opcode, p.dest_qp, p.psn, p.pkey, p.ack_req), (h.opcode, h.dest_qp, h.psn, h.pkey, h.ack_req));
        assert_eq!((p.src_mac, p.dst_mac, p.payload_len), (h.src_mac, h.dst_mac, h.payload_len));
        assert_eq!(p.dscp << 2 | p.ecn, h.tclass);
        if h.flags.contains(TxFlags::IPV6) || h.flags.contains(TxFlags::ROCEV1) {
            assert_eq!((p.src_ip, p.dst_ip), (h.src_ip, h.dst_ip));
        } else {
            assert_eq!((&p.src_ip[12..], &p.dst_ip[12..]), (&h.src_ip[12..], &h.dst_ip[12..]));
        }
        let off = usize::from(p.payload_off);
        let (want, _, _) = model::take_payload(&c.send, h.payload_len);
        assert_eq!(&f[off..off + usize::from(p.payload_len)], &want[..]);
        let icrc_at = f.len().max(60) - 4;
        if f.len() > 60 {
            assert_eq!(&f[icrc_at..], &[0; 4], "the ICRC slot is zero");
        }
    }
}
