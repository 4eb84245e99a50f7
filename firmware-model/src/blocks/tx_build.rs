//! Model of `hdl/rtl/roce_tx_build.sv`: the TX frame builder. From a packet record
//! ([`TxHdr`]) and, when `payload_len` > 0, a payload packet (lane-0 aligned beats, tlast on
//! the last), it writes one Ethernet frame: Ethernet (+802.1Q) / IPv4 (no options, header
//! checksum) or IPv6 / UDP 4791 (checksum 0), or the RoCEv1 GRH / BTH (pad count derived) /
//! the extension headers the opcode carries / payload / pad / a zero ICRC slot (filled by
//! `roce_icrc` with INSERT=1 behind it) / zero Ethernet padding to 60 bytes.
//!
//! The reference is the wire codec: [`build`] maps the record onto a `wire::FrameBuilder`
//! and builds with it, so the HDL is proven against the same builder the scapy/tshark
//! oracle tests hold to the standard. A record the builder refuses ([`TxBuildError`]: an
//! unknown opcode, payload on an opcode without payload, a datagram over 65535 bytes) makes
//! no frame: the HDL consumes its payload packet and pulses `drop`.

use super::axis::{keep_mask, split_frame, AxisBeat};
use crate::contract::records::{TxFlags, TxHdr};
use crate::wire::{
    AethFields, AtomicAckEthFields, AtomicEthFields, BthFields, BuildError, DethFields, EthernetFields, ExtHeaderKind,
    ExtHeaders, FrameBuilder, IethFields, ImmDtFields, IpFields, Ipv4Fields, Ipv6Fields, Opcode, RethFields, Vlan,
};
use std::net::{Ipv4Addr, Ipv6Addr};

/// Datapath bytes (512 bits).
pub const BYTES: usize = 64;

/// Cycles from the cycle in which a record is accepted on `s_axis_hdr` to the cycle in which
/// the frame's first beat is valid on `m_axis`, with the builder idle, no backpressure and
/// the payload's first beat (when the first output beat needs it) already waiting.
pub const LATENCY: u64 = 4;

/// Why [`build`] makes no frame (the HDL drops the record).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TxBuildError {
    /// The opcode is not one `wire::Opcode` knows.
    #[error("unknown BTH opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// The builder refused the record (payload on an opcode without one, datagram too large).
    #[error(transparent)]
    Build(#[from] BuildError),
}

fn v4(ip: &[u8; 16]) -> Ipv4Addr {
    Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15])
}

/// The `wire::FrameBuilder` the record describes.
///
/// # Errors
/// [`TxBuildError::UnknownOpcode`].
pub fn to_builder(h: &TxHdr) -> Result<FrameBuilder, TxBuildError> {
    let opcode = Opcode::from_u8(h.opcode).map_err(|_| TxBuildError::UnknownOpcode(h.opcode))?;
    let eth = EthernetFields {
        dst: h.dst_mac,
        src: h.src_mac,
        vlan: h.flags.contains(TxFlags::VLAN).then(|| Vlan::from_tci(h.vlan_tci)),
    };
    let v6 = Ipv6Fields {
        src: Ipv6Addr::from(h.src_ip),
        dst: Ipv6Addr::from(h.dst_ip),
        traffic_class: h.tclass,
        flow_label: h.flow_label,
        hop_limit: h.ttl,
    };
    let ip = if h.flags.contains(TxFlags::ROCEV1) {
        IpFields::Grh(v6)
    } else if h.flags.contains(TxFlags::IPV6) {
        IpFields::V6(v6)
    } else {
        IpFields::V4(Ipv4Fields {
            src: v4(&h.src_ip),
            dst: v4(&h.dst_ip),
            dscp: h.tclass >> 2,
            ecn: h.tclass & 3,
            ttl: h.ttl,
            identification: h.ip_id,
            dont_fragment: h.flags.contains(TxFlags::DF),
        })
    };
    let mut bth = BthFields::new(opcode, h.dest_qp, h.psn);
    bth.solicited = h.bth_se_m_tver & 0x80 != 0;
    bth.migreq = h.bth_se_m_tver & 0x40 != 0;
    bth.tver = h.bth_se_m_tver & 0x0F;
    bth.pkey = h.pkey;
    bth.fecn = h.bth_fecn_becn & 0x80 != 0;
    bth.becn = h.bth_fecn_becn & 0x40 != 0;
    bth.ack_req = h.ack_req;
    let has = |k| opcode.has_ext_header(k);
    let ext = ExtHeaders {
        deth: has(ExtHeaderKind::Deth).then_some(DethFields { qkey: h.deth_qkey, src_qp: h.deth_src_qp }),
        reth: has(ExtHeaderKind::Reth).then_some(RethFields { va: h.va, rkey: h.rkey, dma_len: h.dma_len }),
        atomic_eth: has(ExtHeaderKind::AtomicEth).then_some(AtomicEthFields {
            va: h.va,
            rkey: h.rkey,
            swap_add: h.swap_add,
            compare: h.compare,
        }),
        aeth: has(ExtHeaderKind::Aeth).then_some(AethFields { syndrome: h.aeth_syndrome, msn: h.aeth_msn }),
        atomic_ack_eth: has(ExtHeaderKind::AtomicAckEth)
            .then_some(AtomicAckEthFields { orig_remote_data: h.atomic_orig }),
        immdt: has(ExtHeaderKind::ImmDt).then_some(ImmDtFields { imm: h.imm_or_inv }),
        ieth: has(ExtHeaderKind::Ieth).then_some(IethFields { rkey: h.imm_or_inv }),
    };
    Ok(FrameBuilder::new(eth, ip, bth).with_ext(ext).with_udp_src_port(h.udp_sport))
}

/// The record that makes `b` build the same frame for a payload of `payload_len` bytes
/// (the inverse of [`to_builder`], for the engine model's transmit path). Fields the
/// builder does not carry (the other encapsulation's, unused extension headers) are zero.
pub fn from_builder(b: &FrameBuilder, payload_len: u16) -> TxHdr {
    let mut h = TxHdr {
        opcode: b.bth.opcode as u8,
        bth_se_m_tver: u8::from(b.bth.solicited) << 7 | u8::from(b.bth.migreq) << 6 | (b.bth.tver & 0x0F),
        bth_fecn_becn: u8::from(b.bth.fecn) << 7 | u8::from(b.bth.becn) << 6,
        pkey: b.bth.pkey,
        ack_req: b.bth.ack_req,
        dest_qp: b.bth.dest_qp,
        psn: b.bth.psn,
        payload_len,
        src_mac: b.eth.src,
        dst_mac: b.eth.dst,
        ..TxHdr::default()
    };
    if let Some(v) = b.eth.vlan {
        h.flags = h.flags.union(TxFlags::VLAN);
        h.vlan_tci = u16::from(v.pcp & 7) << 13 | u16::from(v.dei) << 12 | (v.vid & 0x0FFF);
    }
    match b.ip {
        IpFields::V4(f) => {
            h.flags = h.flags.with(TxFlags::DF, f.dont_fragment);
            h.src_ip = f.src.to_ipv6_mapped().octets();
            h.dst_ip = f.dst.to_ipv6_mapped().octets();
            h.tclass = (f.dscp << 2) | (f.ecn & 3);
            h.ttl = f.ttl;
            h.ip_id = f.identification;
            h.udp_sport = b.udp_src_port;
        }
        IpFields::V6(f) | IpFields::Grh(f) => {
            let v1 = matches!(b.ip, IpFields::Grh(_));
            h.flags = h.flags.union(if v1 { TxFlags::ROCEV1 } else { TxFlags::IPV6 });
            h.src_ip = f.src.octets();
            h.dst_ip = f.dst.octets();
            h.tclass = f.traffic_class;
            h.flow_label = f.flow_label;
            h.ttl = f.hop_limit;
            h.udp_sport = if v1 { 0 } else { b.udp_src_port };
        }
    }
    if let Some(e) = b.ext.deth {
        h.deth_qkey = e.qkey;
        h.deth_src_qp = e.src_qp;
    }
    if let Some(e) = b.ext.reth {
        h.va = e.va;
        h.rkey = e.rkey;
        h.dma_len = e.dma_len;
    }
    if let Some(e) = b.ext.atomic_eth {
        h.va = e.va;
        h.rkey = e.rkey;
        h.swap_add = e.swap_add;
        h.compare = e.compare;
    }
    if let Some(e) = b.ext.aeth {
        h.aeth_syndrome = e.syndrome;
        h.aeth_msn = e.msn;
    }
    if let Some(e) = b.ext.atomic_ack_eth {
        h.atomic_orig = e.orig_remote_data;
    }
    if let Some(e) = b.ext.immdt {
        h.imm_or_inv = e.imm;
    }
    if let Some(e) = b.ext.ieth {
        h.imm_or_inv = e.rkey;
    }
    h
}

/// The frame `roce_tx_build` writes for `h` and its payload (`payload.len()` must be
/// `h.payload_len`; the HDL takes the length from the record).
///
/// # Errors
/// [`TxBuildError`]: the HDL drops such a record.
pub fn build(h: &TxHdr, payload: &[u8]) -> Result<Vec<u8>, TxBuildError> {
    Ok(to_builder(h)?.build(payload)?)
}

/// The frame as output beats (lanes past the frame zero, `tuser` 0).
///
/// # Errors
/// As [`build`].
pub fn frame_beats(h: &TxHdr, payload: &[u8]) -> Result<Vec<AxisBeat>, TxBuildError> {
    Ok(split_frame(&build(h, payload)?, BYTES, 0))
}

/// A payload packet as the builder's input: 64-byte beats from lane 0, `tkeep` set for the
/// bytes, tlast on the last beat; lanes past the payload hold `filler` (the HDL must ignore
/// them). Empty for an empty payload (no packet).
pub fn payload_beats(payload: &[u8], filler: u8) -> Vec<AxisBeat> {
    let n = payload.len().div_ceil(BYTES);
    (0..n)
        .map(|i| {
            let chunk = &payload[i * BYTES..payload.len().min((i + 1) * BYTES)];
            let mut data = chunk.to_vec();
            data.resize(BYTES, filler);
            AxisBeat { data, keep: keep_mask(chunk.len()), last: i + 1 == n, user: 0 }
        })
        .collect()
}

/// What the builder takes from a payload stream for a record of `payload_len` bytes: the
/// beats up to and including the first tlast, or the first ceil(payload_len/64) beats if
/// that comes first (the rest of a packet that runs long is discarded up to its tlast).
/// Returns the payload bytes the frame gets (whole beats, cut or zero-filled to
/// `payload_len`), the number of beats this record consumes including discarded ones, and
/// whether the packet did not match (`m_axis_tuser` on the frame's last beat).
pub fn take_payload(beats: &[AxisBeat], payload_len: u16) -> (Vec<u8>, usize, bool) {
    let want = usize::from(payload_len).div_ceil(BYTES);
    if want == 0 {
        return (Vec::new(), 0, false);
    }
    let mut bytes = Vec::new();
    let mut used = 0;
    for b in beats.iter().take(want) {
        bytes.extend_from_slice(&b.data);
        used += 1;
        if b.last {
            break;
        }
    }
    let ended = beats.get(used - 1).is_some_and(|b| b.last);
    let bad = used != want || !ended;
    let mut consumed = used;
    if !ended {
        consumed += beats[used..].iter().position(|b| b.last).map_or(beats.len() - used, |i| i + 1);
    }
    bytes.resize(usize::from(payload_len), 0);
    (bytes, consumed, bad)
}

/// Output beats of the frame for `h` (what the HDL's beat counter runs to), also for a
/// record [`build`] refuses (0: dropped).
pub fn out_beats(h: &TxHdr, payload: &[u8]) -> usize {
    to_builder(h).map_or(0, |b| b.build(payload).map_or(0, |f| f.len().div_ceil(BYTES)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::parse_frame;

    fn sample(op: Opcode, flags: TxFlags, plen: u16) -> TxHdr {
        TxHdr {
            flags,
            opcode: op as u8,
            bth_se_m_tver: 0x80,
            bth_fecn_becn: 0x40,
            pkey: 0xFFFF,
            ack_req: true,
            ttl: 64,
            dest_qp: 0x12_3456,
            psn: 0xAB_CDEF,
            udp_sport: 0xC123,
            vlan_tci: 0x6005,
            payload_len: plen,
            ip_id: 0x1234,
            src_mac: [2, 0, 0, 0, 0, 1],
            dst_mac: [2, 0, 0, 0, 0, 2],
            tclass: 0x6A,
            src_ip: Ipv4Addr::new(192, 0, 2, 1).to_ipv6_mapped().octets(),
            dst_ip: Ipv4Addr::new(192, 0, 2, 2).to_ipv6_mapped().octets(),
            va: 0x1122_3344_5566_7788,
            rkey: 0xDEAD_BEEF,
            dma_len: 4096,
            swap_add: 7,
            compare: 9,
            aeth_syndrome: 0x1F,
            aeth_msn: 0x42,
            imm_or_inv: 0xCAFE_F00D,
            deth_qkey: 0x8001_0000,
            deth_src_qp: 0x11,
            flow_label: if flags.contains(TxFlags::IPV6) || flags.contains(TxFlags::ROCEV1) { 0xABCDE } else { 0 },
            atomic_orig: 0x99,
        }
    }

    /// Every opcode and encapsulation: the frame parses back to the record's fields, and
    /// the record survives a round trip through the builder.
    #[test]
    fn every_opcode_round_trips() {
        for op in Opcode::ALL {
            for flags in [TxFlags::DF, TxFlags::VLAN, TxFlags::IPV6, TxFlags::ROCEV1.union(TxFlags::VLAN)] {
                let plen = if op.has_payload() { 37 } else { 0 };
                let h = sample(op, flags, plen);
                let payload: Vec<u8> = (0..plen).map(|i| i as u8).collect();
                let f = build(&h, &payload).expect("build");
                let p = parse_frame(&f).expect("parse");
                let r = p.roce().expect("roce");
                assert_eq!(r.payload(), &payload[..]);
                assert_eq!(r.bth().dest_qp(), h.dest_qp);
                assert_eq!(r.bth().psn(), h.psn);
                let b = FrameBuilder::from_frame(&p).expect("builder");
                let back = from_builder(&b, plen);
                assert_eq!(build(&back, &payload).expect("rebuild"), f, "{op:?} {flags:?}");
                assert_eq!(back.flags, h.flags);
            }
        }
    }

    #[test]
    fn refused_records() {
        let mut h = sample(Opcode::RcAcknowledge, TxFlags::default(), 4);
        assert!(matches!(build(&h, &[0; 4]), Err(TxBuildError::Build(BuildError::UnexpectedPayload { .. }))));
        h.opcode = 0x1F;
        assert_eq!(build(&h, &[0; 4]), Err(TxBuildError::UnknownOpcode(0x1F)));
        let h = sample(Opcode::RcSendOnly, TxFlags::default(), 65500);
        assert!(matches!(build(&h, &vec![0; 65500]), Err(TxBuildError::Build(BuildError::DatagramTooLarge { .. }))));
        assert_eq!(out_beats(&h, &vec![0; 65500]), 0);
    }

    #[test]
    fn take_payload_early_late_exact() {
        let p: Vec<u8> = (0..200).map(|i| i as u8).collect();
        let exact = payload_beats(&p, 0xEE);
        let (b, n, bad) = take_payload(&exact, 200);
        assert_eq!((&b[..], n, bad), (&p[..], 4, false));
        // early: two beats for a 200-byte record
        let (b, n, bad) = take_payload(&payload_beats(&p[..128], 0), 200);
        assert_eq!((b.len(), n, bad), (200, 2, true));
        assert!(b[128..].iter().all(|&x| x == 0));
        // late: the 200-byte packet for a 100-byte record
        let (b, n, bad) = take_payload(&exact, 100);
        assert_eq!((&b[..], n, bad), (&p[..100], 4, true));
    }

    #[test]
    fn payload_beats_shape() {
        let p: Vec<u8> = (0..130).map(|i| i as u8).collect();
        let b = payload_beats(&p, 0xEE);
        assert_eq!(b.len(), 3);
        assert_eq!(b[2].keep, 3);
        assert!(b[2].last && !b[1].last);
        assert_eq!(b[2].data[2], 0xEE);
        assert!(payload_beats(&[], 0).is_empty());
    }
}
