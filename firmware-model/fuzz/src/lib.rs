//! The body of the `parse_frame` fuzz target, shared with
//! `firmware-model/tests/wire_fuzz_smoke.rs` (which includes this file with `#[path]`, so
//! it may only depend on `roce_model` and std).
//!
//! For arbitrary bytes it:
//! 1. runs the transport parser [`RocePacket::parse`] and the header views directly on
//!    the input (so deep paths are reached without a valid Ethernet/IP/UDP prefix);
//! 2. runs [`parse_frame`]; on success it calls every getter, checks the offsets and
//!    length invariants, and for RoCEv2 frames rebuilds the frame with
//!    [`FrameBuilder::from_frame`] and checks that the rebuilt frame parses back to the
//!    same fields (and to the same bytes, up to the ICRC, when the input had no
//!    non-canonical bits the builder cannot reproduce).
//!
//! Any inconsistency panics, which is what the fuzzer reports.

// Not in the wire smoke test (which includes this file); engine_fuzz_smoke.rs includes it.
#[cfg(not(test))]
#[path = "engine_rx.rs"]
pub mod engine_rx;

use std::hint::black_box;

use roce_model::wire::*;

/// What the body saw (for statistics in the smoke test and the replay tool).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// `parse_frame` returned an error.
    Rejected,
    /// Parsed; not a RoCEv2 frame.
    NonRoce,
    /// Parsed as a RoCEv2 frame, rebuilt and compared.
    Roce,
}

/// Runs the fuzz body on one input. Panics on any inconsistency.
pub fn parse_frame_body(data: &[u8]) -> Outcome {
    if let Ok(r) = RocePacket::parse(data) {
        check_roce(&r);
        rebuild_transport(&r);
    }
    exercise_headers(data);

    let frame = match parse_frame(data) {
        Ok(f) => f,
        Err(e) => {
            black_box(e.to_string());
            return Outcome::Rejected;
        }
    };
    check_frame(&frame, data);
    match frame.roce() {
        Some(r) => {
            check_roce(&r);
            rebuild_frame(&frame, &r);
            Outcome::Roce
        }
        None => {
            let e = frame.require_roce().expect_err("require_roce without roce");
            black_box(e.to_string());
            Outcome::NonRoce
        }
    }
}

/// Every fixed-size header view and owned-field parser on the raw input.
fn exercise_headers(data: &[u8]) {
    if let Ok(e) = EthernetHeader::parse(data) {
        black_box((e.dst(), e.src(), e.vlan(), e.ethertype(), e.header_len(), e.fields()));
    }
    if let Ok(h) = Ipv4Header::parse(data) {
        black_box(ipv4_getters(&h));
    }
    if let Ok(h) = Ipv6Header::parse(data) {
        black_box(ipv6_getters(&h));
    }
    if let Ok(u) = UdpHeader::parse(data) {
        black_box((u.src_port(), u.dst_port(), u.length(), u.checksum(), u.as_bytes()));
    }
    if let Ok(b) = Bth::parse(data) {
        assert_eq!(BthFields::parse(data), Ok(b.fields()));
        black_box(bth_getters(&b));
    }
    let _ = black_box(DethFields::parse(data));
    let _ = black_box(RethFields::parse(data));
    let _ = black_box(AtomicEthFields::parse(data));
    let _ = black_box(AethFields::parse(data));
    let _ = black_box(AtomicAckEthFields::parse(data));
    let _ = black_box(ImmDtFields::parse(data));
    let _ = black_box(IethFields::parse(data));
    black_box(internet_checksum(data));
    if let Some(&b) = data.first() {
        if let Ok(op) = Opcode::from_u8(b) {
            black_box(opcode_getters(op));
        }
        black_box(AethSyndrome::from_u8(b));
    }
}

fn ipv4_getters(h: &Ipv4Header<'_>) -> impl Sized {
    assert_eq!(h.header_len(), usize::from(h.ihl()) * 4);
    assert_eq!(h.options().len(), h.header_len() - IPV4_HEADER_LEN);
    assert_eq!(h.as_bytes().len(), h.header_len());
    assert_eq!(h.version(), 4);
    assert_eq!(h.tos(), h.dscp() << 2 | h.ecn());
    (
        (h.total_len(), h.identification(), h.flags(), h.dont_fragment()),
        (h.more_fragments(), h.fragment_offset(), h.is_fragment(), h.ttl()),
        (h.protocol(), h.checksum(), h.checksum_ok(), h.src(), h.dst()),
        h.fields(),
    )
}

fn ipv6_getters(h: &Ipv6Header<'_>) -> impl Sized {
    assert_eq!(h.version(), 6);
    assert_eq!(h.traffic_class(), h.dscp() << 2 | h.ecn());
    assert!(h.flow_label() <= 0xF_FFFF);
    ((h.payload_len(), h.next_header(), h.hop_limit(), h.src(), h.dst()), h.fields(), h.as_bytes().len())
}

fn bth_getters(b: &Bth<'_>) -> impl Sized {
    assert!(b.pad_count() <= 3 && b.tver() <= 15 && b.resv6() <= 0x3F && b.resv7() <= 0x7F);
    assert!(b.dest_qp() <= MAX_U24 && b.psn() <= MAX_U24);
    let f = b.fields();
    let mut buf = [0u8; BTH_LEN];
    assert_eq!(f.write_to(&mut buf), Ok(BTH_LEN));
    assert_eq!(BthFields::parse(&buf), Ok(f));
    (
        (b.opcode(), b.solicited(), b.migreq(), b.pad_count(), b.tver()),
        (b.pkey(), b.fecn(), b.becn(), b.resv6(), b.dest_qp()),
        (b.ack_req(), b.resv7(), b.psn(), b.as_bytes().len()),
    )
}

fn opcode_getters(op: Opcode) -> impl Sized {
    assert_eq!(Opcode::from_u8(op.as_u8()), Ok(op));
    assert_eq!(Opcode::try_from(u8::from(op)), Ok(op));
    let classes = [op.is_request(), op.is_response(), op.is_cnp()];
    assert_eq!(classes.iter().filter(|&&c| c).count(), 1);
    for kind in ExtHeaderKind::ALL {
        assert_eq!(op.has_ext_header(kind), op.ext_header_offset(kind).is_some());
        black_box((kind.len(), kind.name(), kind.to_string(), Layer::from(kind)));
    }
    (
        (op.name(), op.to_string(), op.service(), op.ext_headers_len()),
        (op.has_payload(), op.is_read_response(), op.is_ack(), op.is_send()),
        (op.is_rdma_write(), op.is_atomic(), op.has_immediate()),
        (op.has_invalidate(), op.position().is_start(), op.position().is_end()),
    )
}

/// Getters and invariants of a parsed transport packet.
fn check_roce(r: &RocePacket<'_>) {
    let bth = r.bth();
    let op = r.opcode();
    black_box((bth_getters(&bth), opcode_getters(op)));
    assert_eq!(bth.opcode(), op);
    assert_eq!(bth.tver(), 0);
    let total = r.as_bytes().len();
    assert_eq!(r.headers_len(), BTH_LEN + op.ext_headers_len());
    assert_eq!(r.headers_len() + r.payload().len() + r.pad().len() + ICRC_LEN, total);
    assert_eq!(r.pad().len(), usize::from(bth.pad_count()));
    assert_eq!((r.payload().len() + r.pad().len()) % 4, 0);
    assert!(op.has_payload() || r.payload().is_empty());
    assert_eq!(r.icrc_offset(), total - ICRC_LEN);
    assert_eq!(r.icrc_covered().len(), r.icrc_offset());
    assert_eq!(r.icrc().to_le_bytes(), r.icrc_bytes());
    assert_eq!(&r.as_bytes()[r.icrc_offset()..], &r.icrc_bytes()[..]);

    for kind in ExtHeaderKind::ALL {
        let bytes = r.ext_header_bytes(kind);
        assert_eq!(bytes.is_some(), op.has_ext_header(kind), "{kind}");
        if let (Some(b), Some(off)) = (bytes, op.ext_header_offset(kind)) {
            assert_eq!(b.len(), kind.len());
            assert_eq!(&r.as_bytes()[off..off + kind.len()], b);
        }
    }
    let ext = r.ext_headers();
    for kind in ExtHeaderKind::ALL {
        if kind != ExtHeaderKind::CnpPadding {
            assert_eq!(ext.has(kind), op.has_ext_header(kind), "{kind}");
        }
    }
    assert_eq!(ext.check(op), Ok(()));
    if let Some(h) = r.deth() {
        black_box((h.qkey(), h.reserved(), h.src_qp(), h.as_bytes(), h.fields()));
    }
    if let Some(h) = r.reth() {
        black_box((h.va(), h.rkey(), h.dma_len(), h.as_bytes(), h.fields()));
    }
    if let Some(h) = r.atomic_eth() {
        let t = (h.va(), h.rkey(), h.swap_add(), h.compare(), h.as_bytes());
        black_box((t, h.fields()));
    }
    if let Some(h) = r.aeth() {
        assert_eq!(h.syndrome_kind().as_u8(), h.syndrome());
        black_box((h.msn(), h.as_bytes(), h.fields()));
    }
    if let Some(h) = r.atomic_ack_eth() {
        black_box((h.orig_remote_data(), h.as_bytes(), h.fields()));
    }
    if let Some(h) = r.immdt() {
        black_box((h.imm(), h.as_bytes(), h.fields()));
    }
    if let Some(h) = r.ieth() {
        black_box((h.rkey(), h.as_bytes(), h.fields()));
    }
    assert_eq!(r.cnp_padding().is_some(), op == Opcode::Cnp);
    black_box((r.payload(), r.pad(), r.icrc()));
}

/// Bits of a transport packet that the builder writes as zero.
fn transport_is_canonical(r: &RocePacket<'_>) -> bool {
    r.bth().resv6() == 0
        && r.bth().resv7() == 0
        && r.pad().iter().all(|&b| b == 0)
        && r.deth().is_none_or(|d| d.reserved() == 0)
        && r.cnp_padding().is_none_or(|p| p.iter().all(|&b| b == 0))
}

/// Rebuilds BTH through ICRC from the parsed fields and compares.
fn rebuild_transport(r: &RocePacket<'_>) {
    let op = r.opcode();
    let bth = r.bth().fields();
    let ext = r.ext_headers();
    let len = transport_len(op, r.payload().len());
    assert_eq!(len, r.as_bytes().len());
    let mut buf = vec![0xA5; len];
    assert_eq!(write_transport(&bth, &ext, r.payload(), &mut buf), Ok(len));
    let again = RocePacket::parse(&buf).expect("rebuilt transport parses");
    assert_eq!(again.bth().fields(), bth);
    assert_eq!(again.ext_headers(), ext);
    assert_eq!(again.payload(), r.payload());
    assert_eq!(again.icrc(), 0);
    if transport_is_canonical(r) {
        let n = r.icrc_offset();
        assert_eq!(&buf[..n], &r.as_bytes()[..n]);
    }
}

/// Getters, offsets and invariants of a parsed frame.
fn check_frame(f: &Frame<'_>, data: &[u8]) {
    assert_eq!(f.as_bytes(), data);
    let eth = f.eth();
    let tagged = data.get(12..14) == Some(&[0x81, 0x00][..]);
    assert_eq!(eth.vlan().is_some(), tagged);
    assert_eq!(eth.header_len(), if tagged { 18 } else { 14 });
    black_box((eth.dst(), eth.src(), eth.ethertype(), eth.fields()));

    match f.l3() {
        L3::Other(et) => {
            assert_eq!(et, eth.ethertype());
            assert!(f.ipv4().is_none() && f.ipv6().is_none());
            assert_eq!(f.ip_offset(), None);
            assert_eq!(f.l4(), None);
            assert_eq!(f.roce(), None);
            assert!(f.eth_padding().is_empty());
            assert_eq!(f.require_roce(), Err(WireError::NotIp { ethertype: et }));
            return;
        }
        L3::Ipv4(h) => {
            assert_eq!(eth.ethertype(), ETHERTYPE_IPV4);
            black_box(ipv4_getters(&h));
            assert_eq!(f.ip_header_len(), Some(h.header_len()));
            let dgram = f.ip_datagram().expect("datagram");
            assert_eq!(dgram.len(), usize::from(h.total_len()));
        }
        L3::Ipv6(h) => {
            assert_eq!(eth.ethertype(), ETHERTYPE_IPV6);
            black_box(ipv6_getters(&h));
            assert_eq!(f.ip_header_len(), Some(IPV6_HEADER_LEN));
            let dgram = f.ip_datagram().expect("datagram");
            assert_eq!(dgram.len(), IPV6_HEADER_LEN + usize::from(h.payload_len()));
        }
        L3::Grh(h) => {
            // RoCEv1: GRH then (with next header 0x1B) the BTH; no UDP
            assert_eq!(eth.ethertype(), ETHERTYPE_ROCE_V1);
            black_box(ipv6_getters(&h));
            assert_eq!(f.grh(), Some(h));
            assert_eq!(f.l4(), None);
            let ip_end = f.ip_end().expect("ip end");
            assert_eq!(ip_end, eth.header_len() + IPV6_HEADER_LEN + usize::from(h.payload_len()));
            assert_eq!(f.roce().is_some(), h.next_header() == GRH_NEXT_HEADER_BTH);
            if let Some(r) = f.roce() {
                let bth_off = f.bth_offset().expect("bth offset");
                assert_eq!(bth_off, eth.header_len() + IPV6_HEADER_LEN);
                assert_eq!(&data[bth_off..ip_end], r.as_bytes());
                assert_eq!(f.icrc_offset(), Some(ip_end - ICRC_LEN));
            }
            return;
        }
    }
    let ip_off = f.ip_offset().expect("ip offset");
    assert_eq!(ip_off, eth.header_len());
    let ip_end = f.ip_end().expect("ip end");
    assert_eq!(f.eth_padding(), &data[ip_end..]);
    let l4_off = f.l4_offset().expect("l4 offset");
    assert_eq!(l4_off, ip_off + f.ip_header_len().unwrap_or(0));

    match f.l4().expect("l4") {
        L4::Udp(u) => {
            assert_eq!(usize::from(u.length()), ip_end - l4_off);
            assert_eq!(f.udp(), Some(u));
            assert_eq!(f.roce().is_some(), u.dst_port() == ROCEV2_UDP_PORT);
            black_box((u.src_port(), u.checksum(), u.as_bytes()));
        }
        L4::Fragment { protocol } => {
            let h = f.ipv4().expect("fragments are IPv4");
            assert!(h.is_fragment());
            assert_eq!(protocol, h.protocol());
            assert_eq!(f.roce(), None);
        }
        L4::Other { protocol } => {
            assert_ne!(protocol, IPPROTO_UDP);
            assert_eq!(f.roce(), None);
        }
    }

    if let Some(r) = f.roce() {
        let bth_off = f.bth_offset().expect("bth offset");
        assert_eq!(bth_off, l4_off + UDP_HEADER_LEN);
        assert_eq!(&data[bth_off..ip_end], r.as_bytes());
        assert_eq!(f.payload_offset(), Some(bth_off + r.headers_len()));
        assert_eq!(f.icrc_offset(), Some(ip_end - ICRC_LEN));
        assert_eq!(f.require_roce(), Ok(r));
    } else {
        assert_eq!(f.bth_offset(), None);
        assert_eq!(f.icrc_offset(), None);
    }
}

/// Rebuilds a RoCEv2 frame from its parsed fields and compares.
fn rebuild_frame(f: &Frame<'_>, r: &RocePacket<'_>) {
    let b = FrameBuilder::from_frame(f).expect("from_frame on a RoCE frame");
    let bytes = b.build(r.payload()).expect("rebuild");
    assert_eq!(bytes.len(), b.frame_len(r.payload().len()));
    let g = parse_frame(&bytes).expect("rebuilt frame parses");
    let gr = g.roce().expect("rebuilt frame is RoCE");
    assert_eq!(g.eth().fields(), f.eth().fields());
    match (f.l3(), g.l3()) {
        (L3::Ipv4(a), L3::Ipv4(b)) => {
            assert_eq!(a.fields(), b.fields());
            assert!(b.checksum_ok());
        }
        (L3::Ipv6(a), L3::Ipv6(b)) | (L3::Grh(a), L3::Grh(b)) => assert_eq!(a.fields(), b.fields()),
        (a, b) => panic!("L3 changed: {a:?} -> {b:?}"),
    }
    if f.grh().is_some() {
        assert_eq!(gr.bth().fields(), r.bth().fields());
        assert_eq!(gr.payload(), r.payload());
        return;
    }
    let (u0, u1) = (f.udp().expect("udp"), g.udp().expect("udp"));
    assert_eq!(u0.src_port(), u1.src_port());
    assert_eq!(u0.dst_port(), u1.dst_port());
    assert_eq!(u0.length(), u1.length());
    assert_eq!(gr.bth().fields(), r.bth().fields());
    assert_eq!(gr.ext_headers(), r.ext_headers());
    assert_eq!(gr.payload(), r.payload());
    assert_eq!(gr.icrc(), 0);
    assert_eq!(FrameBuilder::from_frame(&g), Some(b));

    let ip_canonical = match f.l3() {
        L3::Ipv4(h) => h.ihl() == 5 && h.flags() & 0b100 == 0 && h.checksum_ok(),
        _ => true,
    };
    if ip_canonical && u0.checksum() == 0 && transport_is_canonical(r) {
        let n = f.icrc_offset().expect("icrc offset");
        assert_eq!(&bytes[..n], &f.as_bytes()[..n], "rebuilt bytes differ");
    }
}
