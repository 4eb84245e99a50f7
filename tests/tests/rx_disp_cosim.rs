//! Lockstep: `roce_rx_disp` (Verilated) against the engine's RX decision: RC requests and
//! responses, CNPs and UD SENDs over IPv4, IPv6 and RoCEv1, with and without VLAN and CE,
//! to the port's MAC and addresses or another unicast MAC, a multicast MAC, another IP or
//! GID; QPs in every state and beyond the table; non-RoCE frames and malformed ones; with
//! the engine enabled and disabled, ECN counting on and off; random gaps and backpressure.

use std::net::{Ipv4Addr, Ipv6Addr};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::wire::{
    AethFields, BthFields, DethFields, EthernetFields, ExtHeaders, FrameBuilder, IpFields, Ipv4Fields, Ipv6Fields,
    Opcode, RethFields, Vlan,
};
use roce_sim::cosim::rx_disp::{rx_disp_lockstep, DispCfg, DispOut};

const OPS: [Opcode; 10] = [
    Opcode::RcSendOnly,
    Opcode::RcSendFirst,
    Opcode::RcRdmaWriteOnly,
    Opcode::RcRdmaReadRequest,
    Opcode::RcAcknowledge,
    Opcode::RcRdmaReadResponseOnly,
    Opcode::RcRdmaReadResponseMiddle,
    Opcode::RcAtomicAcknowledge,
    Opcode::Cnp,
    Opcode::UdSendOnly,
];

fn frames(rng: &mut ChaCha8Rng, cfg: &DispCfg, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|_| {
            let kind = rng.random_range(0..20);
            if kind == 0 {
                // ARP-like: not RoCE
                let mut f = vec![0u8; 60];
                f[..6].copy_from_slice(&cfg.mac);
                f[12] = 0x08;
                f[13] = 0x06;
                return f;
            }
            let op = OPS[rng.random_range(0..OPS.len())];
            let qpn = if rng.random_bool(0.05) { rng.random_range(1024..0xFF_FFFF) } else { rng.random_range(0..1024) };
            let mut bth = BthFields::new(op, qpn, rng.random_range(0..0xFF_FFFF));
            bth.ack_req = rng.random_bool(0.5);
            let ext = ExtHeaders {
                reth: op.has_ext_header(roce_model::wire::ExtHeaderKind::Reth).then(|| RethFields {
                    va: rng.random(),
                    rkey: rng.random(),
                    dma_len: 64,
                }),
                aeth: op
                    .has_ext_header(roce_model::wire::ExtHeaderKind::Aeth)
                    .then_some(AethFields { syndrome: 0x1F, msn: 3 }),
                deth: op
                    .has_ext_header(roce_model::wire::ExtHeaderKind::Deth)
                    .then_some(DethFields { qkey: 1, src_qp: 2 }),
                atomic_ack_eth: op
                    .has_ext_header(roce_model::wire::ExtHeaderKind::AtomicAckEth)
                    .then_some(roce_model::wire::AtomicAckEthFields { orig_remote_data: 9 }),
                ..ExtHeaders::NONE
            };
            let dst_mac = match rng.random_range(0..10) {
                0 => [0x02, 9, 9, 9, 9, 9],
                1 => [0x33, 0x33, 0, 0, 0, 1],
                _ => cfg.mac,
            };
            let vlan = rng.random_bool(0.2).then_some(Vlan { pcp: 3, dei: false, vid: 7 });
            let ecn = if rng.random_bool(0.2) { 3 } else { 2 };
            let wrong_ip = rng.random_bool(0.1);
            let ip = match rng.random_range(0..3) {
                0 => IpFields::V4(Ipv4Fields {
                    src: Ipv4Addr::new(10, 0, 0, 9),
                    dst: if wrong_ip { Ipv4Addr::new(10, 0, 0, 77) } else { cfg.ipv4 },
                    ecn,
                    dont_fragment: true,
                    ..Ipv4Fields::default()
                }),
                k => {
                    let dst = if wrong_ip {
                        "2001:db8::77".parse().unwrap_or(Ipv6Addr::UNSPECIFIED)
                    } else if rng.random_bool(0.3) {
                        cfg.ipv4.to_ipv6_mapped()
                    } else {
                        cfg.gid
                    };
                    let f = Ipv6Fields {
                        src: "2001:db8::9".parse().unwrap_or(Ipv6Addr::UNSPECIFIED),
                        dst,
                        traffic_class: ecn,
                        flow_label: 5,
                        hop_limit: 64,
                    };
                    if k == 1 {
                        IpFields::V6(f)
                    } else {
                        IpFields::Grh(f)
                    }
                }
            };
            let len = if op.has_payload() { rng.random_range(0..300) } else { 0 };
            let payload: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            let mut f = FrameBuilder::new(EthernetFields { dst: dst_mac, src: [2, 0, 0, 0, 0, 9], vlan }, ip, bth)
                .with_ext(ext)
                .build(&payload)
                .expect("frame");
            roce_model::icrc::fill(&mut f).expect("icrc");
            if kind == 1 {
                let cut = rng.random_range(20..f.len());
                f.truncate(cut);
            }
            f
        })
        .collect()
}

#[test]
fn decisions_match_the_engine() {
    for seed in 0..4u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let cfg = DispCfg {
            enable: seed != 3,
            ecn: seed % 2 == 0,
            mac: [0x02, 0x11, 0x22, 0x33, 0x44, rng.random()],
            ipv4: Ipv4Addr::new(192, 0, 2, rng.random()),
            gid: Ipv6Addr::from(rng.random::<u128>()),
        };
        let states: Vec<u8> = (0..1024).map(|_| rng.random_range(0..7)).collect();
        let fr = frames(&mut rng, &cfg, 800);
        let (vp, rp) = [(1.0, 1.0), (0.6, 0.5), (0.9, 0.2), (0.5, 0.9)][seed as usize];
        let r = rx_disp_lockstep(&fr, &states, &cfg, vp, rp, seed).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {}", r.divergences.join("\n"));
        assert_eq!(r.outs.len(), 800);
        if cfg.enable {
            let count = |f: &dyn Fn(&DispOut) -> bool| r.outs.iter().filter(|o| f(o)).count();
            assert!(count(&|o| matches!(o, DispOut::Req(..))) > 50, "seed {seed}");
            assert!(count(&|o| matches!(o, DispOut::Rsp(..))) > 50, "seed {seed}");
            assert!(count(&|o| matches!(o, DispOut::Cnp(_))) > 10, "seed {seed}");
            for k in 0..4 {
                assert!(count(&|o| *o == DispOut::Drop(k)) > 5, "seed {seed}: drop kind {k}");
            }
        }
    }
}
