//! Round-trip and error tests for `roce_model::wire`.
//!
//! - build → parse round trips for every opcode, IPv4/IPv6, with/without VLAN, over a grid
//!   of payload lengths and (proptest) random fields and payload lengths 0..=4096;
//! - byte-exact known answers: hand-assembled frames and frames built independently with
//!   scapy (VLAN, IPv6, UD/DETH, atomics, IETH, CNP), parsed and re-built;
//! - one test per [`WireError`] / [`BuildError`] variant, checking the exact error.

use std::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use roce_model::wire::*;

// ---------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------

const MAC_A: MacAddr = [0x52, 0x54, 0x00, 0xC0, 0x02, 0x01];
const MAC_B: MacAddr = [0x52, 0x54, 0x00, 0xC0, 0x02, 0x02];

fn eth(vlan: Option<Vlan>) -> EthernetFields {
    EthernetFields { dst: MAC_A, src: MAC_B, vlan }
}

fn v4() -> IpFields {
    IpFields::V4(Ipv4Fields {
        src: Ipv4Addr::new(192, 0, 2, 2),
        dst: Ipv4Addr::new(192, 0, 2, 1),
        dscp: 26,
        ecn: 1,
        ttl: 64,
        identification: 0x6FF5,
        dont_fragment: true,
    })
}

fn v6() -> IpFields {
    IpFields::V6(Ipv6Fields {
        src: "2001:db8::2".parse().unwrap(),
        dst: "2001:db8::1".parse().unwrap(),
        traffic_class: 0x68,
        flow_label: 0xABCDE,
        hop_limit: 63,
    })
}

/// Deterministic extension headers for `op`.
fn ext_for(op: Opcode, seed: u64) -> ExtHeaders {
    let s = seed;
    let h = |k| op.has_ext_header(k);
    ExtHeaders {
        deth: h(ExtHeaderKind::Deth)
            .then_some(DethFields { qkey: 0x8001_0000 ^ s as u32, src_qp: (s as u32).wrapping_mul(7) & MAX_U24 }),
        reth: h(ExtHeaderKind::Reth).then_some(RethFields {
            va: 0x0000_5634_6205_4000 ^ s,
            rkey: 0x2F6 ^ s as u32,
            dma_len: 2500 + s as u32,
        }),
        atomic_eth: h(ExtHeaderKind::AtomicEth).then_some(AtomicEthFields {
            va: 0x1000 + s * 8,
            rkey: 0x1234_5678,
            swap_add: !s,
            compare: s.rotate_left(17),
        }),
        aeth: h(ExtHeaderKind::Aeth).then_some(AethFields { syndrome: 0x1F, msn: (s as u32) & MAX_U24 }),
        atomic_ack_eth: h(ExtHeaderKind::AtomicAckEth)
            .then_some(AtomicAckEthFields { orig_remote_data: s.wrapping_mul(0x9E37_79B9_7F4A_7C15) }),
        immdt: h(ExtHeaderKind::ImmDt).then_some(ImmDtFields { imm: 0xDEAD_BEEF ^ s as u32 }),
        ieth: h(ExtHeaderKind::Ieth).then_some(IethFields { rkey: 0xCAFE ^ s as u32 }),
    }
}

fn builder(op: Opcode, ip: IpFields, vlan: Option<Vlan>, seed: u64) -> FrameBuilder {
    let mut bth = BthFields::new(op, 0x11, 0x19EDF);
    bth.ack_req = true;
    FrameBuilder::new(eth(vlan), ip, bth).with_ext(ext_for(op, seed))
}

/// Builds, parses and checks every field against the builder. Returns the frame bytes.
fn check_round_trip(b: &FrameBuilder, payload: &[u8]) -> Vec<u8> {
    let bytes = b.build(payload).expect("build");
    assert_eq!(bytes.len(), b.frame_len(payload.len()));
    let f = parse_frame(&bytes).unwrap_or_else(|e| panic!("{e}: {b:?}"));

    // L2
    assert_eq!(f.eth().fields(), b.eth);
    assert_eq!(f.eth().ethertype(), b.ip.ethertype());
    let ip_off = b.eth.header_len();
    assert_eq!(f.ip_offset(), Some(ip_off));

    // L3
    let udp_len = UDP_HEADER_LEN + transport_len(b.bth.opcode, payload.len());
    match (b.ip, f.l3()) {
        (IpFields::V4(want), L3::Ipv4(h)) => {
            assert_eq!(h.fields(), want);
            assert_eq!(h.ihl(), 5);
            assert!(h.checksum_ok());
            assert_eq!(h.protocol(), IPPROTO_UDP);
            assert_eq!(usize::from(h.total_len()), IPV4_HEADER_LEN + udp_len);
            assert!(!h.is_fragment());
        }
        (IpFields::V6(want), L3::Ipv6(h)) => {
            assert_eq!(h.fields(), want);
            assert_eq!(h.next_header(), IPPROTO_UDP);
            assert_eq!(usize::from(h.payload_len()), udp_len);
        }
        (want, got) => panic!("IP mismatch: {want:?} vs {got:?}"),
    }

    // L4
    let udp = f.udp().expect("udp");
    assert_eq!(udp.src_port(), b.udp_src_port);
    assert_eq!(udp.dst_port(), ROCEV2_UDP_PORT);
    assert_eq!(usize::from(udp.length()), udp_len);
    assert_eq!(udp.checksum(), 0);

    // Transport
    let r = f.roce().expect("roce");
    assert_eq!(f.require_roce(), Ok(r));
    let pad = pad_for(payload.len());
    assert_eq!(r.bth().fields(), BthFields { pad_count: pad as u8, ..b.bth });
    assert_eq!(r.bth().resv6(), 0);
    assert_eq!(r.bth().resv7(), 0);
    assert_eq!(r.ext_headers(), b.ext);
    assert_eq!(r.payload(), payload);
    assert_eq!(r.pad().len(), pad);
    assert!(r.pad().iter().all(|&x| x == 0));
    assert_eq!(r.icrc(), 0);
    assert_eq!(r.icrc_bytes(), [0; 4]);
    assert_eq!(r.headers_len(), BTH_LEN + b.bth.opcode.ext_headers_len());
    assert_eq!(r.cnp_padding().is_some(), b.bth.opcode == Opcode::Cnp, "CNP padding");
    if let Some(p) = r.cnp_padding() {
        assert_eq!(p, &[0u8; 16]);
    }

    // Offsets
    let bth_off = ip_off + b.ip.header_len() + UDP_HEADER_LEN;
    assert_eq!(f.bth_offset(), Some(bth_off));
    assert_eq!(f.payload_offset(), Some(bth_off + r.headers_len()));
    assert_eq!(f.icrc_offset(), Some(bth_off + r.headers_len() + payload.len() + pad));
    let ip_end = bth_off + transport_len(b.bth.opcode, payload.len());
    assert_eq!(f.ip_end(), Some(ip_end));
    assert_eq!(f.ip_datagram().map(<[u8]>::len), Some(ip_end - ip_off));
    assert_eq!(f.eth_padding().len(), bytes.len() - ip_end);
    assert!(f.eth_padding().iter().all(|&x| x == 0));
    assert_eq!(bytes.get(bth_off..ip_end), Some(r.as_bytes()));

    // The builder can re-create itself from the parsed frame.
    let mut again = FrameBuilder::from_frame(&f).expect("from_frame");
    assert_eq!(again.bth.pad_count, pad as u8);
    again.bth.pad_count = b.bth.pad_count;
    again.min_frame_len = b.min_frame_len;
    assert_eq!(again, *b);
    bytes
}

const PAYLOAD_LENS: [usize; 12] = [0, 1, 2, 3, 4, 5, 7, 8, 63, 1024, 4093, 4096];

// ---------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------

#[test]
fn round_trip_every_opcode_ip_version_and_vlan() {
    let vlans = [None, Some(Vlan { pcp: 5, dei: true, vid: 4094 })];
    let mut n = 0;
    for (seed, op) in Opcode::ALL.into_iter().enumerate() {
        for ip in [v4(), v6()] {
            for vlan in vlans {
                let b = builder(op, ip, vlan, seed as u64);
                let lens: &[usize] = if op.has_payload() { &PAYLOAD_LENS } else { &[0] };
                for &len in lens {
                    let payload: Vec<u8> = (0..len).map(|i| (i * 31 + seed) as u8).collect();
                    check_round_trip(&b, &payload);
                    n += 1;
                }
            }
        }
    }
    assert!(n > 26 * 4);
}

#[test]
fn known_layout_send_only_ipv4() {
    // Byte-exact check of a small frame against a hand-assembled reference.
    let mut b = builder(Opcode::RcSendOnly, v4(), None, 0);
    b.udp_src_port = 0xC121;
    b.bth.psn = 0x019EDF;
    let bytes = b.build(&[0xAA, 0xBB, 0xCC, 0xDD, 0xEE]).unwrap();
    #[rustfmt::skip]
    let want: Vec<u8> = [
        // Ethernet
        &MAC_A[..], &MAC_B[..], &[0x08, 0x00],
        // IPv4: 0x45, tos = 26 << 2 | 1, total 20+8+12+8+4 = 52, id, DF, ttl, UDP, csum
        &[0x45, 0x69, 0x00, 0x34, 0x6F, 0xF5, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00],
        &[192, 0, 2, 2, 192, 0, 2, 1],
        // UDP: sport, 4791, len 32, csum 0
        &[0xC1, 0x21, 0x12, 0xB7, 0x00, 0x20, 0x00, 0x00],
        // BTH: SEND Only, pad 3, pkey ffff, dqp 0x11, AckReq, psn
        &[0x04, 0x30, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x80, 0x01, 0x9E, 0xDF],
        // payload + pad + ICRC slot
        &[0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0, 0, 0, 0, 0, 0, 0],
    ]
    .concat();
    // Fill in the IPv4 checksum of the reference.
    let mut want = want;
    let csum = internet_checksum(&want[14..34]);
    want[24..26].copy_from_slice(&csum.to_be_bytes());
    assert_eq!(bytes, want);
}

#[test]
fn known_layout_cnp_ipv6_vlan() {
    let mut b = builder(Opcode::Cnp, v6(), Some(Vlan { pcp: 6, dei: false, vid: 0x123 }), 0);
    b.bth.becn = true;
    b.bth.ack_req = false;
    b.bth.psn = 0;
    let bytes = b.build(&[]).unwrap();
    assert_eq!(bytes.len(), 18 + 40 + 8 + 12 + 16 + 4);
    assert_eq!(&bytes[12..18], &[0x81, 0x00, 0xC1, 0x23, 0x86, 0xDD]);
    // IPv6: version 6, TC 0x68, flow 0xABCDE, payload 40, UDP, hop 63
    assert_eq!(&bytes[18..26], &[0x66, 0x8A, 0xBC, 0xDE, 0x00, 0x28, 0x11, 0x3F]);
    assert_eq!(&bytes[66..78], &[0x81, 0x00, 0xFF, 0xFF, 0x40, 0x00, 0x00, 0x11, 0x00, 0x00, 0x00, 0x00]);
    assert_eq!(&bytes[78..], &[0u8; 20]);
    check_round_trip(&b, &[]);
}

#[test]
fn build_into_slice_matches_build() {
    let b = builder(Opcode::RcRdmaWriteOnlyWithImmediate, v4(), None, 9);
    let payload = [7u8; 33];
    let v = b.build(&payload).unwrap();
    let mut buf = [0xEEu8; 200];
    assert_eq!(b.build_into(&payload, &mut buf), Ok(v.len()));
    assert_eq!(&buf[..v.len()], &v[..]);
    assert!(buf[v.len()..].iter().all(|&x| x == 0xEE));
}

#[test]
fn min_frame_len_zero_disables_padding() {
    let mut b = builder(Opcode::RcSendOnly, v4(), None, 0);
    b.min_frame_len = 0;
    let bytes = b.build(&[]).unwrap();
    assert_eq!(bytes.len(), 14 + 20 + 8 + 12 + 4);
    check_round_trip(&b, &[]);
}

fn arb_vlan() -> impl Strategy<Value = Option<Vlan>> {
    prop::option::of((0u8..=7, any::<bool>(), 0u16..=0xFFF).prop_map(|(pcp, dei, vid)| Vlan { pcp, dei, vid }))
}

fn arb_ip() -> impl Strategy<Value = IpFields> {
    prop_oneof![
        (any::<[u8; 4]>(), any::<[u8; 4]>(), 0u8..=63, 0u8..=3, any::<u8>(), any::<u16>(), any::<bool>()).prop_map(
            |(s, d, dscp, ecn, ttl, identification, df)| {
                IpFields::V4(Ipv4Fields {
                    src: Ipv4Addr::from(s),
                    dst: Ipv4Addr::from(d),
                    dscp,
                    ecn,
                    ttl,
                    identification,
                    dont_fragment: df,
                })
            }
        ),
        (any::<[u8; 16]>(), any::<[u8; 16]>(), any::<u8>(), 0u32..=0xF_FFFF, any::<u8>()).prop_map(
            |(s, d, traffic_class, flow_label, hop_limit)| {
                IpFields::V6(Ipv6Fields {
                    src: Ipv6Addr::from(s),
                    dst: Ipv6Addr::from(d),
                    traffic_class,
                    flow_label,
                    hop_limit,
                })
            }
        ),
    ]
}

fn arb_bth(op: Opcode) -> impl Strategy<Value = BthFields> {
    (
        (any::<bool>(), any::<bool>(), 0u8..=3, any::<u16>()),
        (any::<bool>(), any::<bool>(), 0..=MAX_U24, any::<bool>(), 0..=MAX_U24),
    )
        .prop_map(move |((solicited, migreq, pad_count, pkey), (fecn, becn, dest_qp, ack_req, psn))| BthFields {
            opcode: op,
            solicited,
            migreq,
            pad_count,
            tver: 0,
            pkey,
            fecn,
            becn,
            dest_qp,
            ack_req,
            psn,
        })
}

fn arb_ext(op: Opcode) -> impl Strategy<Value = ExtHeaders> {
    (
        (any::<u32>(), 0..=MAX_U24),
        (any::<u64>(), any::<u32>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (any::<u8>(), 0..=MAX_U24),
        any::<u64>(),
        any::<u32>(),
        any::<u32>(),
    )
        .prop_map(move |(deth, reth, atomic, aeth, ack, imm, ieth)| {
            let h = |k| op.has_ext_header(k);
            ExtHeaders {
                deth: h(ExtHeaderKind::Deth).then_some(DethFields { qkey: deth.0, src_qp: deth.1 }),
                reth: h(ExtHeaderKind::Reth).then_some(RethFields { va: reth.0, rkey: reth.1, dma_len: reth.2 }),
                atomic_eth: h(ExtHeaderKind::AtomicEth).then_some(AtomicEthFields {
                    va: atomic.0,
                    rkey: atomic.1,
                    swap_add: atomic.2,
                    compare: atomic.3,
                }),
                aeth: h(ExtHeaderKind::Aeth).then_some(AethFields { syndrome: aeth.0, msn: aeth.1 }),
                atomic_ack_eth: h(ExtHeaderKind::AtomicAckEth).then_some(AtomicAckEthFields { orig_remote_data: ack }),
                immdt: h(ExtHeaderKind::ImmDt).then_some(ImmDtFields { imm }),
                ieth: h(ExtHeaderKind::Ieth).then_some(IethFields { rkey: ieth }),
            }
        })
}

fn arb_case() -> impl Strategy<Value = (FrameBuilder, Vec<u8>)> {
    (
        prop::sample::select(Opcode::ALL.to_vec()),
        arb_vlan(),
        any::<(MacAddr, MacAddr)>(),
        arb_ip(),
        any::<u16>(),
        prop::bool::ANY,
    )
        .prop_flat_map(|(op, vlan, (dst, src), ip, sport, pad60)| {
            let max = if op.has_payload() { 4096 } else { 0 };
            (arb_bth(op), arb_ext(op), prop::collection::vec(any::<u8>(), 0..=max)).prop_map(
                move |(bth, ext, payload)| {
                    let mut b = FrameBuilder::new(EthernetFields { dst, src, vlan }, ip, bth)
                        .with_ext(ext)
                        .with_udp_src_port(sport);
                    if !pad60 {
                        b.min_frame_len = 0;
                    }
                    (b, payload)
                },
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn prop_round_trip((b, payload) in arb_case()) {
        let bytes = check_round_trip(&b, &payload);
        let f = parse_frame(&bytes).unwrap();
        if b.min_frame_len == 0 {
            prop_assert!(f.eth_padding().is_empty());
        }
        prop_assert_eq!(bytes.len(), f.ip_end().unwrap().max(b.min_frame_len));
    }

    #[test]
    fn prop_header_structs_round_trip(bth in arb_bth(Opcode::RcSendOnly), ext in arb_ext(Opcode::RcAtomicAcknowledge)) {
        let mut buf = [0u8; 12];
        prop_assert_eq!(bth.write_to(&mut buf), Ok(12));
        prop_assert_eq!(BthFields::parse(&buf), Ok(bth));
        let mut buf = [0u8; 12];
        prop_assert_eq!(ext.write_to(Opcode::RcAtomicAcknowledge, &mut buf), Ok(12));
        prop_assert_eq!(AethFields::parse(&buf), Ok(ext.aeth.unwrap()));
        prop_assert_eq!(AtomicAckEthFields::parse(&buf[4..]), Ok(ext.atomic_ack_eth.unwrap()));
    }
}

#[test]
fn value_structs_round_trip_individually() {
    let mut buf = [0u8; 32];
    let d = DethFields { qkey: 0x1111_2222, src_qp: 0xABCDEF };
    assert_eq!(d.write_to(&mut buf), Ok(DethFields::LEN));
    assert_eq!(DethFields::parse(&buf), Ok(d));
    let r = RethFields { va: 0x0123_4567_89AB_CDEF, rkey: 0xFEED_F00D, dma_len: 0x8000_0001 };
    assert_eq!(r.write_to(&mut buf), Ok(RethFields::LEN));
    assert_eq!(RethFields::parse(&buf), Ok(r));
    assert_eq!(Reth::parse(&buf).unwrap().va(), r.va);
    let a = AtomicEthFields { va: 1, rkey: 2, swap_add: 3, compare: 4 };
    assert_eq!(a.write_to(&mut buf), Ok(AtomicEthFields::LEN));
    assert_eq!(AtomicEthFields::parse(&buf), Ok(a));
    let i = ImmDtFields { imm: 0x0102_0304 };
    assert_eq!(i.write_to(&mut buf), Ok(4));
    assert_eq!(&buf[..4], &[1, 2, 3, 4]);
    assert_eq!(ImmDtFields::parse(&buf), Ok(i));
    let ie = IethFields { rkey: 0x0506_0708 };
    assert_eq!(ie.write_to(&mut buf), Ok(4));
    assert_eq!(IethFields::parse(&buf), Ok(ie));
    let ack = AtomicAckEthFields { orig_remote_data: u64::MAX - 1 };
    assert_eq!(ack.write_to(&mut buf), Ok(8));
    assert_eq!(AtomicAckEthFields::parse(&buf), Ok(ack));
}

// ---------------------------------------------------------------------------------------
// Independent vectors from scapy
// ---------------------------------------------------------------------------------------

/// Frames built with scapy 2.8.0 (`Ether / Dot1Q / IP or IPv6 / UDP / scapy.contrib.roce
/// BTH / ...`; the extension headers other than AETH and CNPPadding packed with
/// `struct.pack` as scapy 2.8 has no layers for them; ICRC computed by scapy).
const SCAPY_VECTORS: &[(&str, &str)] = &[
    ("send_only_imm_v4", "525400c00201525400c002020800456900386ff5400040114653c0000202c0000201c12112b70024000005b0ffff0000001180019edfdeadbeef010203040500000001468ea0"),
    ("write_only_imm_v4_vlan", "525400c00201525400c002028100b0640800456900486ff5400040114643c0000202c0000201c12112b7003400000b50800100abcdef80ffffff0000563462054000000002f6000009c4deadbeef01020304050607006ccc3c1f"),
    ("cmp_swap_v6", "525400c00201525400c0020286dd668abcde0034113f20010db800000000000000000000000220010db8000000000000000000000001c12112b7003400001300ffff800000118000000100000000000010001234567811112222333344445555666677778888a1f06ccb"),
    ("atomic_ack_v6_vlan", "525400c00201525400c0020281006ffe86dd668abcde0024113f20010db800000000000000000000000220010db8000000000000000000000001c12112b7002400001200ffff40000012000000011f0000050123456789abcdef6e0e43f6"),
    ("ud_send_imm_v4", "525400c00201525400c0020208004569003c6ff540004011464fc0000202c0000201c12112b7002800006510ffff00000001000000108001000000000011deadbeefaabbcc00c5360070"),
    ("send_last_inv_v6", "525400c00201525400c0020286dd668abcde0028113f20010db800000000000000000000000220010db8000000000000000000000001c12112b7002800001630ffff00000011800001000000cafe0001020304050607080000006e4c68d2"),
    ("fetch_add_v4", "525400c00201525400c002020800456900486ff5400040114643c0000202c0000201c12112b7003400001400ffff00000011000000070000000000001000123456781111222233334444555566667777888894ea72e2"),
    ("ack_v4_scapy_aeth", "525400c00201525400c002020800456900306ff540004011465bc0000202c0000201c12112b7001c00001100ffff0000001100019edf1f000001bc059106"),
    ("cnp_v4_scapy", "525400c00201525400c0020208004569003c6ff540004011464fc0000202c0000201c12112b7002800008100ffff400000110000000000000000000000000000000000000000626ca898"),
];

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
}

/// The builder and payload the scapy script used for each vector.
fn scapy_case(name: &str) -> (FrameBuilder, Vec<u8>) {
    let reth = RethFields { va: 0x0000_5634_6205_4000, rkey: 0x2F6, dma_len: 2500 };
    let imm = ImmDtFields { imm: 0xDEAD_BEEF };
    let atomic = AtomicEthFields {
        va: 0x1000,
        rkey: 0x1234_5678,
        swap_add: 0x1111_2222_3333_4444,
        compare: 0x5555_6666_7777_8888,
    };
    let bth = |op, dest_qp, psn| BthFields::new(op, dest_qp, psn);
    let (vlan, ip, mut bth, ext, payload): (_, _, _, _, Vec<u8>) = match name {
        "send_only_imm_v4" => (
            None,
            v4(),
            BthFields { solicited: true, ack_req: true, ..bth(Opcode::RcSendOnlyWithImmediate, 0x11, 0x019EDF) },
            ExtHeaders { immdt: Some(imm), ..ExtHeaders::NONE },
            (1..6).collect(),
        ),
        "write_only_imm_v4_vlan" => (
            Some(Vlan { pcp: 5, dei: true, vid: 100 }),
            v4(),
            BthFields {
                migreq: true,
                ack_req: true,
                pkey: 0x8001,
                ..bth(Opcode::RcRdmaWriteOnlyWithImmediate, 0xABCDEF, 0xFF_FFFF)
            },
            ExtHeaders { reth: Some(reth), immdt: Some(imm), ..ExtHeaders::NONE },
            (1..8).collect(),
        ),
        "cmp_swap_v6" => (
            None,
            v6(),
            BthFields { ack_req: true, fecn: true, ..bth(Opcode::RcCompareSwap, 0x11, 1) },
            ExtHeaders { atomic_eth: Some(atomic), ..ExtHeaders::NONE },
            vec![],
        ),
        "atomic_ack_v6_vlan" => (
            Some(Vlan { pcp: 3, dei: false, vid: 4094 }),
            v6(),
            BthFields { becn: true, ..bth(Opcode::RcAtomicAcknowledge, 0x12, 1) },
            ExtHeaders {
                aeth: Some(AethFields { syndrome: 0x1F, msn: 5 }),
                atomic_ack_eth: Some(AtomicAckEthFields { orig_remote_data: 0x0123_4567_89AB_CDEF }),
                ..ExtHeaders::NONE
            },
            vec![],
        ),
        "ud_send_imm_v4" => (
            None,
            v4(),
            bth(Opcode::UdSendOnlyWithImmediate, 1, 0x10),
            ExtHeaders {
                deth: Some(DethFields { qkey: 0x8001_0000, src_qp: 0x11 }),
                immdt: Some(imm),
                ..ExtHeaders::NONE
            },
            vec![0xAA, 0xBB, 0xCC],
        ),
        "send_last_inv_v6" => (
            None,
            v6(),
            BthFields { ack_req: true, ..bth(Opcode::RcSendLastWithInvalidate, 0x11, 0x100) },
            ExtHeaders { ieth: Some(IethFields { rkey: 0xCAFE }), ..ExtHeaders::NONE },
            (0..9).collect(),
        ),
        "fetch_add_v4" => (
            None,
            v4(),
            bth(Opcode::RcFetchAdd, 0x11, 7),
            ExtHeaders { atomic_eth: Some(atomic), ..ExtHeaders::NONE },
            vec![],
        ),
        "ack_v4_scapy_aeth" => (
            None,
            v4(),
            bth(Opcode::RcAcknowledge, 0x11, 0x019EDF),
            ExtHeaders { aeth: Some(AethFields { syndrome: 0x1F, msn: 1 }), ..ExtHeaders::NONE },
            vec![],
        ),
        "cnp_v4_scapy" => (None, v4(), BthFields { becn: true, ..bth(Opcode::Cnp, 0x11, 0) }, ExtHeaders::NONE, vec![]),
        other => panic!("unknown vector {other}"),
    };
    bth.pad_count = pad_for(payload.len()) as u8;
    let b = FrameBuilder::new(eth(vlan), ip, bth).with_ext(ext).with_udp_src_port(0xC121);
    (b, payload)
}

#[test]
fn scapy_vectors_parse_and_rebuild() {
    for &(name, hex) in SCAPY_VECTORS {
        let frame = unhex(hex);
        let (want, payload) = scapy_case(name);
        let f = parse_frame(&frame).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(FrameBuilder::from_frame(&f), Some(want), "{name}");
        let r = f.roce().unwrap();
        assert_eq!(r.payload(), &payload[..], "{name}");
        assert_eq!(f.icrc_offset(), Some(frame.len() - 4), "{name}");
        assert_ne!(r.icrc(), 0, "{name}: scapy fills the ICRC");
        assert_eq!(r.icrc().to_le_bytes(), frame[frame.len() - 4..], "{name}");
        if let Some(ip) = f.ipv4() {
            assert!(ip.checksum_ok(), "{name}");
        }
        let built = want.build(&payload).unwrap();
        let n = frame.len() - 4;
        assert_eq!(built.len(), frame.len(), "{name}");
        assert_eq!(&built[..n], &frame[..n], "{name}: builder differs from scapy");
    }
}

// ---------------------------------------------------------------------------------------
// Non-RoCE frames
// ---------------------------------------------------------------------------------------

/// An IPv4 frame carrying `l4` with the given protocol, no padding.
fn ipv4_frame(protocol: u8, l4: &[u8]) -> Vec<u8> {
    let e = eth(None);
    let ip = Ipv4Fields::default();
    let mut out = vec![0u8; 14 + 20 + l4.len()];
    e.write_to(ETHERTYPE_IPV4, &mut out).unwrap();
    ip.write_to(protocol, l4.len(), &mut out[14..]).unwrap();
    out[34..].copy_from_slice(l4);
    out
}

fn ipv6_frame(next_header: u8, l4: &[u8]) -> Vec<u8> {
    let e = eth(None);
    let ip = Ipv6Fields::default();
    let mut out = vec![0u8; 14 + 40 + l4.len()];
    e.write_to(ETHERTYPE_IPV6, &mut out).unwrap();
    ip.write_to(next_header, l4.len(), &mut out[14..]).unwrap();
    out[54..].copy_from_slice(l4);
    out
}

fn udp_datagram(dst_port: u16, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0u8; 8 + payload.len()];
    write_udp_header(0xC000, dst_port, payload.len(), &mut out).unwrap();
    out[8..].copy_from_slice(payload);
    out
}

/// IPv4 frame with a UDP/4791 datagram around an arbitrary transport packet.
fn roce_v4(transport: &[u8]) -> Vec<u8> {
    ipv4_frame(IPPROTO_UDP, &udp_datagram(ROCEV2_UDP_PORT, transport))
}

/// A transport packet: BTH bytes (opcode, byte1) + `rest` (ext headers, payload, ICRC).
fn transport(opcode: u8, byte1: u8, rest: &[u8]) -> Vec<u8> {
    let mut t = vec![opcode, byte1, 0xFF, 0xFF, 0, 0, 0, 0x11, 0, 0, 0, 1];
    t.extend_from_slice(rest);
    t
}

#[test]
fn arp_frame_is_l3_other() {
    let mut arp = vec![0u8; 42];
    eth(None).write_to(ETHERTYPE_ARP, &mut arp).unwrap();
    let f = parse_frame(&arp).unwrap();
    assert_eq!(f.l3(), L3::Other(ETHERTYPE_ARP));
    assert_eq!(f.l4(), None);
    assert_eq!(f.roce(), None);
    assert_eq!(f.ip_offset(), None);
    assert_eq!(f.ip_end(), None);
    assert_eq!(f.ip_datagram(), None);
    assert!(f.eth_padding().is_empty());
    assert_eq!(f.require_roce(), Err(WireError::NotIp { ethertype: ETHERTYPE_ARP }));
}

#[test]
fn double_vlan_tag_is_l3_other() {
    let mut b = vec![0u8; 30];
    EthernetFields { vlan: Some(Vlan { pcp: 0, dei: false, vid: 1 }), ..eth(None) }
        .write_to(ETHERTYPE_VLAN, &mut b)
        .unwrap();
    let f = parse_frame(&b).unwrap();
    assert_eq!(f.eth().vlan().map(|v| v.vid), Some(1));
    assert_eq!(f.l3(), L3::Other(ETHERTYPE_VLAN));
}

#[test]
fn tcp_and_icmpv6_are_l4_other() {
    let f = ipv4_frame(6, &[0u8; 20]);
    let p = parse_frame(&f).unwrap();
    assert_eq!(p.l4(), Some(L4::Other { protocol: 6 }));
    assert_eq!(p.require_roce(), Err(WireError::UnsupportedIpv4Protocol(6)));

    let f = ipv6_frame(58, &[0u8; 24]);
    let p = parse_frame(&f).unwrap();
    assert_eq!(p.l4(), Some(L4::Other { protocol: 58 }));
    assert_eq!(p.require_roce(), Err(WireError::UnsupportedIpv6NextHeader(58)));

    // A hop-by-hop options header (MLD reports) is not walked.
    let f = ipv6_frame(0, &[0u8; 32]);
    let p = parse_frame(&f).unwrap();
    assert_eq!(p.l4(), Some(L4::Other { protocol: 0 }));
    assert!(is_ipv6_extension_header(0));
    assert_eq!(p.require_roce(), Err(WireError::UnsupportedIpv6NextHeader(0)));
}

#[test]
fn ipv4_fragment_is_not_parsed() {
    // The tail of a fragmented UDP datagram: no UDP header to check.
    let mut f = ipv4_frame(IPPROTO_UDP, &[0xAB; 16]);
    f[20] = 0x00;
    f[21] = 0xB9; // offset 185 * 8
    f[24..26].fill(0);
    let c = internet_checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
    let p = parse_frame(&f).unwrap();
    assert_eq!(p.l4(), Some(L4::Fragment { protocol: 17 }));
    assert!(p.ipv4().unwrap().checksum_ok());
    assert_eq!(p.require_roce(), Err(WireError::Ipv4Fragment { offset: 185, more: false }));
}

#[test]
fn udp_to_other_port_has_no_roce() {
    let f = ipv4_frame(IPPROTO_UDP, &udp_datagram(53, b"\x12\x34"));
    let p = parse_frame(&f).unwrap();
    assert_eq!(p.udp().map(|u| u.dst_port()), Some(53));
    assert_eq!(p.roce(), None);
    assert_eq!(p.bth_offset(), None);
    assert_eq!(p.require_roce(), Err(WireError::NotRoceV2Port(53)));
}

#[test]
fn ipv4_options_are_honoured() {
    // IHL 6 with a 4-byte NOP option block before a RoCE UDP datagram.
    let b = builder(Opcode::RcSendOnly, v4(), None, 1);
    let plain = b.build(&[1, 2, 3, 4]).unwrap();
    let mut f = plain[..14].to_vec();
    let mut ip = plain[14..34].to_vec();
    ip[0] = 0x46;
    let total = u16::from_be_bytes([ip[2], ip[3]]) + 4;
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&[1, 1, 1, 0]);
    ip[10..12].fill(0);
    let c = internet_checksum(&ip);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(&plain[34..]);
    let p = parse_frame(&f).unwrap();
    let h = p.ipv4().unwrap();
    assert_eq!(h.header_len(), 24);
    assert_eq!(h.options(), &[1, 1, 1, 0]);
    assert!(h.checksum_ok());
    assert_eq!(p.l4_offset(), Some(38));
    assert_eq!(p.bth_offset(), Some(46));
    assert_eq!(p.roce().unwrap().payload(), &[1, 2, 3, 4]);
}

// ---------------------------------------------------------------------------------------
// One test per WireError variant
// ---------------------------------------------------------------------------------------

#[test]
fn err_truncated_ethernet_and_vlan() {
    assert_eq!(
        parse_frame(&[0u8; 13]).unwrap_err(),
        WireError::Truncated { layer: Layer::Ethernet, need: 14, have: 13 }
    );
    assert_eq!(parse_frame(&[]).unwrap_err(), WireError::Truncated { layer: Layer::Ethernet, need: 14, have: 0 });
    let mut f = vec![0u8; 16];
    f[12] = 0x81;
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Truncated { layer: Layer::Vlan, need: 18, have: 16 });
}

#[test]
fn err_truncated_ip() {
    let f = ipv4_frame(IPPROTO_UDP, &[]);
    assert_eq!(parse_frame(&f[..33]).unwrap_err(), WireError::Truncated { layer: Layer::Ipv4, need: 20, have: 19 });
    // IHL 15 needs 60 header bytes.
    let mut f = ipv4_frame(IPPROTO_UDP, &[0u8; 8]);
    f[14] = 0x4F;
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Truncated { layer: Layer::Ipv4, need: 60, have: 28 });
    let f = ipv6_frame(IPPROTO_UDP, &[]);
    assert_eq!(parse_frame(&f[..53]).unwrap_err(), WireError::Truncated { layer: Layer::Ipv6, need: 40, have: 39 });
}

#[test]
fn err_truncated_udp_and_bth() {
    let f = ipv4_frame(IPPROTO_UDP, &[0u8; 4]);
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Truncated { layer: Layer::Udp, need: 8, have: 4 });
    let f = ipv6_frame(IPPROTO_UDP, &[0u8; 7]);
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Truncated { layer: Layer::Udp, need: 8, have: 7 });
    let f = roce_v4(&[0x04; 11]);
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Truncated { layer: Layer::Bth, need: 12, have: 11 });
}

#[test]
fn err_bad_ip_version() {
    let mut f = ipv4_frame(IPPROTO_UDP, &[0u8; 8]);
    f[14] = 0x65;
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::BadIpVersion { expected: 4, found: 6 });
    let mut f = ipv6_frame(IPPROTO_UDP, &udp_datagram(1, &[]));
    f[14] = 0x45;
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::BadIpVersion { expected: 6, found: 4 });
}

#[test]
fn err_bad_ihl() {
    for ihl in 0..5u8 {
        let mut f = ipv4_frame(IPPROTO_UDP, &[0u8; 8]);
        f[14] = 0x40 | ihl;
        assert_eq!(parse_frame(&f).unwrap_err(), WireError::BadIhl { ihl });
    }
}

#[test]
fn err_ipv4_total_len() {
    let mut f = ipv4_frame(IPPROTO_UDP, &udp_datagram(1, &[]));
    f[16..18].copy_from_slice(&29u16.to_be_bytes());
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Ipv4TotalLenExceedsFrame { total_len: 29, available: 28 });
    f[16..18].copy_from_slice(&19u16.to_be_bytes());
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Ipv4TotalLenTooSmall { total_len: 19, header_len: 20 });
}

#[test]
fn err_ipv6_payload_len() {
    let mut f = ipv6_frame(IPPROTO_UDP, &udp_datagram(1, &[0; 4]));
    f[18..20].copy_from_slice(&13u16.to_be_bytes());
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::Ipv6PayloadLenExceedsFrame { payload_len: 13, available: 12 });
}

#[test]
fn err_udp_len_mismatch() {
    let mut f = ipv4_frame(IPPROTO_UDP, &udp_datagram(1, &[0; 4]));
    f[38..40].copy_from_slice(&13u16.to_be_bytes());
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::UdpLenMismatch { udp_len: 13, ip_payload_len: 12 });
    // Below the 8-byte minimum.
    f[38..40].copy_from_slice(&7u16.to_be_bytes());
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::UdpLenMismatch { udp_len: 7, ip_payload_len: 12 });
    // The same over IPv6.
    let mut f = ipv6_frame(IPPROTO_UDP, &udp_datagram(1, &[0; 4]));
    f[58..60].copy_from_slice(&11u16.to_be_bytes());
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::UdpLenMismatch { udp_len: 11, ip_payload_len: 12 });
}

#[test]
fn err_unknown_opcode() {
    let mut unknown = 0;
    for op in 0..=u8::MAX {
        let f = roce_v4(&transport(op, 0, &[0u8; 32]));
        match Opcode::from_u8(op) {
            Ok(_) => {}
            Err(_) => {
                assert_eq!(parse_frame(&f).unwrap_err(), WireError::UnknownOpcode(op));
                unknown += 1;
            }
        }
    }
    assert_eq!(unknown, 256 - Opcode::ALL.len());
    for op in [0x15, 0x18, 0x1C, 0x1D, 0x1F, 0x20, 0x80] {
        assert_eq!(Opcode::from_u8(op), Err(WireError::UnknownOpcode(op)));
    }
}

#[test]
fn err_unsupported_tver() {
    for tver in 1..16u8 {
        let f = roce_v4(&transport(0x04, tver, &[0u8; 4]));
        assert_eq!(parse_frame(&f).unwrap_err(), WireError::UnsupportedTver(tver));
    }
}

#[test]
fn err_too_short_for_opcode() {
    // SEND Only without room for the ICRC.
    let f = roce_v4(&transport(0x04, 0, &[]));
    assert_eq!(
        parse_frame(&f).unwrap_err(),
        WireError::TooShortForOpcode { opcode: Opcode::RcSendOnly, need: 16, have: 12 }
    );
    // RDMA WRITE First with only 12 bytes after the BTH (RETH 16 + ICRC 4 needed).
    let f = roce_v4(&transport(0x06, 0, &[0u8; 12]));
    assert_eq!(
        parse_frame(&f).unwrap_err(),
        WireError::TooShortForOpcode { opcode: Opcode::RcRdmaWriteFirst, need: 32, have: 24 }
    );
    // CmpSwap needs 12 + 28 + 4.
    let f = roce_v4(&transport(0x13, 0, &[0u8; 31]));
    assert_eq!(
        parse_frame(&f).unwrap_err(),
        WireError::TooShortForOpcode { opcode: Opcode::RcCompareSwap, need: 44, have: 43 }
    );
}

#[test]
fn err_unexpected_payload() {
    // ACK: AETH + 4 payload bytes + ICRC.
    let f = roce_v4(&transport(0x11, 0, &[0u8; 12]));
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::UnexpectedPayload { opcode: Opcode::RcAcknowledge, len: 4 });
    // READ Request: RETH + 8 payload bytes + ICRC.
    let f = roce_v4(&transport(0x0C, 0, &[0u8; 28]));
    assert_eq!(
        parse_frame(&f).unwrap_err(),
        WireError::UnexpectedPayload { opcode: Opcode::RcRdmaReadRequest, len: 8 }
    );
    // CNP with more than its 16 reserved bytes.
    let f = roce_v4(&transport(0x81, 0, &[0u8; 24]));
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::UnexpectedPayload { opcode: Opcode::Cnp, len: 4 });
}

#[test]
fn err_pad_exceeds_payload() {
    // ACK (no payload) with PadCnt 1.
    let f = roce_v4(&transport(0x11, 0x10, &[0u8; 8]));
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::PadExceedsPayload { pad: 1, len: 0 });
    // SEND Only with 2 bytes of payload+pad and PadCnt 3.
    let f = roce_v4(&transport(0x04, 0x30, &[0u8; 6]));
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::PadExceedsPayload { pad: 3, len: 2 });
}

#[test]
fn err_payload_not_aligned() {
    // SEND Only with 5 bytes of payload+pad.
    let f = roce_v4(&transport(0x04, 0x30, &[0u8; 9]));
    assert_eq!(parse_frame(&f).unwrap_err(), WireError::PayloadNotAligned { len: 5 });
    // 4 bytes with PadCnt 0 is fine; 4 bytes with PadCnt 3 means 1 payload byte.
    let f = roce_v4(&transport(0x04, 0x30, &[9, 0, 0, 0, 0, 0, 0, 0]));
    let p = parse_frame(&f).unwrap();
    assert_eq!(p.roce().unwrap().payload(), &[9]);
    assert_eq!(p.roce().unwrap().pad(), &[0, 0, 0]);
}

#[test]
fn icrc_is_read_little_endian() {
    let f = roce_v4(&transport(0x04, 0, &[0x78, 0x56, 0x34, 0x12]));
    let p = parse_frame(&f).unwrap();
    let r = p.roce().unwrap();
    assert_eq!(r.icrc(), 0x1234_5678);
    assert_eq!(r.icrc_bytes(), [0x78, 0x56, 0x34, 0x12]);
    assert_eq!(p.icrc_offset(), Some(f.len() - 4));
    assert_eq!(r.icrc_covered().len(), 12);
}

#[test]
fn error_messages_carry_the_numbers() {
    let e = WireError::Truncated { layer: Layer::Vlan, need: 18, have: 16 };
    assert_eq!(e.to_string(), "truncated 802.1Q-tagged Ethernet header: need 18 bytes, have 16");
    assert_eq!(WireError::UnknownOpcode(0x15).to_string(), "unknown BTH opcode 0x15");
    assert_eq!(
        WireError::UnexpectedPayload { opcode: Opcode::RcAcknowledge, len: 4 }.to_string(),
        "RC_ACKNOWLEDGE (0x11) carries no payload, but 4 bytes follow its headers"
    );
}

// ---------------------------------------------------------------------------------------
// One test per BuildError variant
// ---------------------------------------------------------------------------------------

#[test]
fn build_err_buffer_too_small() {
    let b = builder(Opcode::RcSendOnly, v4(), None, 0);
    let need = b.frame_len(100);
    let mut buf = vec![0u8; need - 1];
    assert_eq!(b.build_into(&[0; 100], &mut buf), Err(BuildError::BufferTooSmall { need, have: need - 1 }));
    assert_eq!(RethFields::default().write_to(&mut [0u8; 15]), Err(BuildError::BufferTooSmall { need: 16, have: 15 }));
}

#[test]
fn build_err_field_out_of_range() {
    let mut b = builder(Opcode::RcSendOnly, v4(), None, 0);
    b.bth.psn = 1 << 24;
    assert_eq!(b.build(&[]), Err(BuildError::FieldOutOfRange { field: "bth.psn", value: 1 << 24, max: 0xFF_FFFF }));
    let mut b = builder(Opcode::RcSendOnly, v4(), None, 0);
    b.eth.vlan = Some(Vlan { pcp: 0, dei: false, vid: 4096 });
    assert_eq!(b.build(&[]), Err(BuildError::FieldOutOfRange { field: "vlan.vid", value: 4096, max: 4095 }));
    let mut b = builder(Opcode::RcSendOnly, v4(), None, 0);
    if let IpFields::V4(ip) = &mut b.ip {
        ip.dscp = 64;
    }
    assert_eq!(b.build(&[]), Err(BuildError::FieldOutOfRange { field: "ipv4.dscp", value: 64, max: 63 }));
    let mut b = builder(Opcode::RcSendOnly, v6(), None, 0);
    if let IpFields::V6(ip) = &mut b.ip {
        ip.flow_label = 1 << 20;
    }
    assert_eq!(
        b.build(&[]),
        Err(BuildError::FieldOutOfRange { field: "ipv6.flow_label", value: 1 << 20, max: 0xF_FFFF })
    );
    let mut b = builder(Opcode::RcAcknowledge, v4(), None, 0);
    b.ext.aeth = Some(AethFields { syndrome: 0, msn: 1 << 24 });
    assert_eq!(b.build(&[]), Err(BuildError::FieldOutOfRange { field: "aeth.msn", value: 1 << 24, max: 0xFF_FFFF }));
}

#[test]
fn build_err_ext_header_mismatch() {
    let b = builder(Opcode::RcRdmaWriteFirst, v4(), None, 0).with_ext(ExtHeaders::NONE);
    assert_eq!(
        b.build(&[0; 4]),
        Err(BuildError::MissingExtHeader { opcode: Opcode::RcRdmaWriteFirst, header: ExtHeaderKind::Reth })
    );
    let b = builder(Opcode::RcSendOnly, v4(), None, 0).with_ext(ext_for(Opcode::RcSendOnlyWithImmediate, 0));
    assert_eq!(
        b.build(&[0; 4]),
        Err(BuildError::UnexpectedExtHeader { opcode: Opcode::RcSendOnly, header: ExtHeaderKind::ImmDt })
    );
}

#[test]
fn build_err_unexpected_payload() {
    let b = builder(Opcode::RcRdmaReadRequest, v4(), None, 0);
    assert_eq!(b.build(&[1]), Err(BuildError::UnexpectedPayload { opcode: Opcode::RcRdmaReadRequest, len: 1 }));
}

#[test]
fn build_err_datagram_too_large() {
    let b = builder(Opcode::RcSendOnly, v4(), None, 0);
    // 20 + 8 + 12 + payload + 4 > 65535
    let payload = vec![0u8; 65535 - 44 + 1];
    assert_eq!(b.build(&payload), Err(BuildError::DatagramTooLarge { what: "IPv4 total length", len: 65536 }));
    // 65492 is a multiple of 4: no pad. 65488 + 44 fits.
    assert!(b.build(&payload[4..]).is_ok());
    let b = builder(Opcode::RcSendOnly, v6(), None, 0);
    let payload = vec![0u8; 65535 - 24 + 1];
    assert_eq!(b.build(&payload), Err(BuildError::DatagramTooLarge { what: "IPv6 payload length", len: 65536 }));
    let f = b.build(&payload[4..]).unwrap();
    check_round_trip(&b, &payload[4..]);
    assert_eq!(parse_frame(&f).unwrap().ipv6().unwrap().payload_len(), 65532);
    // Pad counts too: 65509 payload bytes + 3 pad = 65512 + 24 > 65535.
    assert_eq!(b.build(&payload[3..]), Err(BuildError::DatagramTooLarge { what: "IPv6 payload length", len: 65536 }));
}
