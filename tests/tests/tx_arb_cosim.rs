//! Lockstep: `roce_tx_arb` (Verilated) against its model (the engine's frame builder): the
//! frames of CNPs, ACK/NAKs, READ responses, ATOMIC Acknowledges and every request opcode,
//! for QPs of every encapsulation with and without their own VLAN, under a port with and
//! without a VLAN and ECN, with PFC pauses, random offer gaps and backpressure.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::contract::records::{QpAttr, TxDesc, TxDescFlags};
use roce_model::contract::{Encap, PathMtu, VlanTag};
use roce_model::engine::tx_arb::TxPort;
use roce_sim::cosim::tx_arb::{tx_arb_lockstep, ArbIn};

fn attrs(rng: &mut ChaCha8Rng) -> Vec<QpAttr> {
    (0..1024)
        .map(|q| {
            let encap = [Encap::RoceV2Ipv4, Encap::RoceV2Ipv6, Encap::RoceV1][rng.random_range(0..3)];
            let mut dest_ip: [u8; 16] = rng.random();
            if encap == Encap::RoceV2Ipv4 {
                dest_ip[..10].fill(0);
                dest_ip[10] = 0xFF;
                dest_ip[11] = 0xFF;
            }
            QpAttr {
                path_mtu: PathMtu::Mtu1024,
                encap,
                dest_qpn: rng.random_range(0..0xFF_FFFF),
                dscp: rng.random_range(0..64),
                hop_limit: rng.random(),
                udp_sport: 0xC000 | q as u16,
                vlan: VlanTag {
                    vid: rng.random_range(0..4096),
                    pcp: rng.random_range(0..8),
                    valid: rng.random_bool(0.3),
                },
                dest_mac: rng.random(),
                flow_label: rng.random_range(0..1 << 20),
                dest_ip,
                ..QpAttr::default()
            }
        })
        .collect()
}

fn desc(rng: &mut ChaCha8Rng, op: u8, len: u16) -> TxDesc {
    let mut flags = TxDescFlags::EMPTY;
    if rng.random_bool(0.3) {
        flags = flags.union(TxDescFlags::SE);
    }
    if rng.random_bool(0.5) {
        flags = flags.union(TxDescFlags::ACK_REQ);
    }
    TxDesc {
        qpn: rng.random_range(0..1024),
        opcode: op,
        flags,
        payload_len: len,
        psn: rng.random_range(0..0xFF_FFFF),
        aeth_msn: rng.random_range(0..0xFF_FFFF),
        imm_or_inv: rng.random(),
        rkey: rng.random(),
        va: rng.random(),
        dma_len: rng.random(),
        aeth_syndrome: rng.random(),
        swap_add: rng.random(),
        compare: rng.random(),
        atomic_orig: rng.random(),
    }
}

fn inputs(rng: &mut ChaCha8Rng, n: usize) -> Vec<ArbIn> {
    let pl = |rng: &mut ChaCha8Rng, len: usize| -> Vec<u8> { (0..len).map(|_| rng.random()).collect() };
    (0..n)
        .map(|_| match rng.random_range(0..10) {
            0 => ArbIn::Cnp(rng.random_range(0..1024)),
            1 | 2 => {
                let d = desc(rng, 0x11, 0);
                ArbIn::Ack(TxDesc { flags: TxDescFlags::EMPTY, ..d })
            }
            3 | 4 => {
                let op = [0x0D, 0x0E, 0x0F, 0x10, 0x12][rng.random_range(0..5)];
                let len = if op == 0x12 { 0 } else { rng.random_range(0..1025) };
                let d = desc(rng, op, len);
                let p = pl(rng, usize::from(len));
                ArbIn::Rsp(d, p)
            }
            _ => {
                // every request opcode: SEND*, WRITE*, READ request, atomics
                let op = [
                    0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x13, 0x14, 0x16,
                    0x17,
                ][rng.random_range(0..17)];
                let carries = !matches!(op, 0x0C | 0x13 | 0x14);
                let len = if carries { rng.random_range(0..4097) } else { 0 };
                let d = desc(rng, op, len);
                let p = pl(rng, usize::from(len));
                ArbIn::Req(d, p)
            }
        })
        .collect()
}

#[test]
fn frames_match_the_model() {
    for seed in 0..4u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let a = attrs(&mut rng);
        let port = TxPort {
            mac: rng.random(),
            ipv4: rng.random::<u32>().into(),
            gid: rng.random::<u128>().into(),
            ecn: seed % 2 == 0,
            vlan: (seed >= 2).then(|| (rng.random_range(0..4096), rng.random_range(0..8))),
        };
        let ins = inputs(&mut rng, 600);
        let (vp, rp, pp) = [(1.0, 1.0, 0.0), (0.5, 0.7, 0.3), (0.9, 0.4, 0.5), (0.3, 0.9, 0.2)][seed as usize];
        let r = tx_arb_lockstep(&ins, &a, &port, vp, rp, pp, seed).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {}", r.divergences.join("\n"));
        assert_eq!(r.frames, 600, "seed {seed}");
        assert!(r.taken.iter().all(|&n| n > 0), "seed {seed}: {:?}", r.taken);
        assert_eq!(r.acks as usize, r.taken[1], "seed {seed}: ACKs counted");
    }
}

/// Requests of 1 KiB back to back, every input and output always ready: a frame's payload
/// passes while the next one's attributes and record are taken, so the frames follow at the
/// payload's 16 beats each (the arbiter's own steps no longer add to them).
#[test]
fn payloads_back_to_back() {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let a = attrs(&mut rng);
    let port = TxPort {
        mac: rng.random(),
        ipv4: rng.random::<u32>().into(),
        gid: rng.random::<u128>().into(),
        ecn: false,
        vlan: None,
    };
    let n = 200usize;
    let ins: Vec<ArbIn> = (0..n)
        .map(|_| {
            let d = desc(&mut rng, 0x07, 1024);
            let p: Vec<u8> = (0..1024).map(|_| rng.random()).collect();
            ArbIn::Req(d, p)
        })
        .collect();
    let r = tx_arb_lockstep(&ins, &a, &port, 1.0, 1.0, 0.0, 7).expect("runs");
    assert!(r.divergences.is_empty(), "{}", r.divergences.join("\n"));
    assert_eq!(r.frames, n);
    // the run ends 51 idle cycles after the last beat; the first frame's record takes 3
    let busy = r.cycles - 51 - 3;
    println!("1 KiB request frames: {:.2} cycles each", busy as f64 / n as f64);
    assert!(busy <= 16 * n as u64 + 8, "{busy} cycles for {n} frames of 16 beats");
}
