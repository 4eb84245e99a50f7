//! Zero-copy parser and builder for the RoCEv2 wire format.
//!
//! # Encapsulation
//!
//! ```text
//! +----------+-------+-----------+-----+-----+---------+---------+-----+------+---------+
//! | Ethernet | 802.1Q| IPv4 (20+)| UDP | BTH | ext hdrs| payload | pad | ICRC | Eth pad |
//! | 14 B     | 4 B   | or IPv6 40| 8 B | 12 B| 0..28 B |         | 0-3 | 4 B  | to 60 B |
//! +----------+-------+-----------+-----+-----+---------+---------+-----+------+---------+
//!             optional            dst port 4791                          \__ ignored: after
//!                                 checksum 0                                 the IP datagram
//! ```
//!
//! All fields are big-endian, except the ICRC, which holds a CRC-32 value stored least
//! significant byte first ([`RocePacket::icrc`] reads it little-endian). Header layouts:
//! [`EthernetHeader`], [`Ipv4Header`], [`Ipv6Header`], [`UdpHeader`], [`Bth`], and
//! [Extension headers](self#extension-headers) below.
//!
//! # Parsing
//!
//! [`parse_frame`] walks Ethernet (+ one optional VLAN tag) → IPv4/IPv6 → UDP and, for
//! UDP destination port 4791, the InfiniBand transport headers. It never allocates and
//! never copies: every view ([`Frame`], [`RocePacket`], [`Bth`], [`Reth`], …) borrows the
//! input and decodes fields on demand.
//!
//! Non-RoCE frames with well-formed layers parse fine: another ethertype (ARP, …) gives
//! [`L3::Other`], another IP protocol (TCP, ICMPv6, IPv6 extension headers, …) gives
//! [`L4::Other`], an IPv4 fragment gives [`L4::Fragment`], and a UDP datagram to another
//! port has no [`Frame::roce`]. [`Frame::require_roce`] turns any of those into a typed
//! error. Malformed frames fail with a [`WireError`] that carries the numbers.
//!
//! The end of the IP datagram is given by the IPv4 total length or IPv6 payload length;
//! any bytes after it (Ethernet minimum-size padding) are ignored and available as
//! [`Frame::eth_padding`]. The frame must not include the Ethernet FCS.
//!
//! ```
//! use roce_model::wire::*;
//!
//! # let frame = FrameBuilder::new(
//! #     EthernetFields::default(), Ipv4Fields::default(),
//! #     BthFields::new(Opcode::RcRdmaWriteFirst, 0x11, 7),
//! # ).with_ext(ExtHeaders { reth: Some(RethFields { va: 0x1000, rkey: 0x253, dma_len: 2500 }),
//! #     ..ExtHeaders::NONE }).build(&[0u8; 1024]).unwrap();
//! let parsed = parse_frame(&frame)?;
//! let roce = parsed.require_roce()?;
//! assert_eq!(roce.opcode(), Opcode::RcRdmaWriteFirst);
//! assert_eq!(roce.bth().dest_qp(), 0x11);
//! assert_eq!(roce.reth().map(|r| r.dma_len()), Some(2500));
//! assert_eq!(roce.payload().len(), 1024);
//! assert_eq!(parsed.ip_offset(), Some(14));
//! # Ok::<(), WireError>(())
//! ```
//!
//! # Building
//!
//! [`FrameBuilder`] writes a complete frame from owned field structs ([`EthernetFields`],
//! [`Ipv4Fields`] / [`Ipv6Fields`], [`BthFields`], [`ExtHeaders`]) and a payload, with the
//! ICRC slot zeroed. Each owned header struct also has `parse` and `write_to(&mut [u8])`
//! on its own; [`write_transport`] writes just BTH through ICRC.
//!
//! # Extension headers
//!
//! Which extension headers follow the BTH, and in which order, depends only on the opcode
//! ([`Opcode::ext_headers`], after Linux rxe's `rxe_opcode.c`):
//!
//! | opcode | headers | payload |
//! |---|---|---|
//! | RC SEND First/Middle/Last/Only (0x00, 0x01, 0x02, 0x04) | — | yes |
//! | RC SEND Last/Only with Immediate (0x03, 0x05) | ImmDt | yes |
//! | RC RDMA WRITE First / Only (0x06, 0x0A) | RETH | yes |
//! | RC RDMA WRITE Middle / Last (0x07, 0x08) | — | yes |
//! | RC RDMA WRITE Last with Immediate (0x09) | ImmDt | yes |
//! | RC RDMA WRITE Only with Immediate (0x0B) | RETH, ImmDt | yes |
//! | RC RDMA READ Request (0x0C) | RETH | no |
//! | RC RDMA READ Response First / Last / Only (0x0D, 0x0F, 0x10) | AETH | yes |
//! | RC RDMA READ Response Middle (0x0E) | — | yes |
//! | RC Acknowledge (0x11) | AETH | no |
//! | RC ATOMIC Acknowledge (0x12) | AETH, AtomicAckETH | no |
//! | RC CmpSwap / FetchAdd (0x13, 0x14) | AtomicETH | no |
//! | RC SEND Last / Only with Invalidate (0x16, 0x17) | IETH | yes |
//! | UD SEND Only (0x64) | DETH | yes |
//! | UD SEND Only with Immediate (0x65) | DETH, ImmDt | yes |
//! | CNP (0x81) | 16 reserved bytes | no |
//!
//! Views: [`Deth`], [`Reth`], [`AtomicEth`], [`Aeth`], [`AtomicAckEth`], [`ImmDt`],
//! [`Ieth`]; owned fields: [`ExtHeaders`] and the `…Fields` structs. Layouts:
//!
//! ```text
//! DETH (8 B, UD)                        RETH (16 B)
//! +-------------------------------+     +-------------------------------+
//! |          Q_Key (32)           |     |     Virtual Address (64)      |
//! +-------+-----------------------+     |                               |
//! | resv8 |   Source QP (24)      |     +-------------------------------+
//! +-------+-----------------------+     |          R_Key (32)           |
//!                                       +-------------------------------+
//! AETH (4 B)                            |        DMA Length (32)        |
//! +-------+-----------------------+     +-------------------------------+
//! |Syndr. |        MSN (24)       |
//! +-------+-----------------------+     AtomicETH (28 B)
//!                                       +-------------------------------+
//! AtomicAckETH (8 B)                    |     Virtual Address (64)      |
//! +-------------------------------+     |                               |
//! |  Original Remote Data (64)    |     +-------------------------------+
//! |                               |     |          R_Key (32)           |
//! +-------------------------------+     +-------------------------------+
//!                                       |    Swap (or Add) Data (64)    |
//! ImmDt (4 B)      IETH (4 B)           |                               |
//! +------------+   +------------+       +-------------------------------+
//! | Immediate  |   |   R_Key    |       |       Compare Data (64)       |
//! |  Data (32) |   |    (32)    |       |                               |
//! +------------+   +------------+       +-------------------------------+
//! ```
//!
//! CNP follows the RoCEv2 annex as ConnectX NICs send it (and as Wireshark and
//! `scapy.contrib.roce`'s `CNPPadding` decode it): BTH with opcode 0x81 (usually BECN
//! set, the congested QP in DestQP) + 16 reserved bytes + ICRC. Linux rxe never sends
//! CNPs.

mod bth;
mod builder;
mod error;
mod eth;
mod ext;
mod ip;
mod opcode;
mod roce;
mod udp;
mod util;

pub use bth::{Bth, BthFields, BTH_LEN, DEFAULT_PKEY, MAX_U24};
pub use builder::FrameBuilder;
pub use error::{BuildError, Layer, WireError};
pub use eth::{
    EthernetFields, EthernetHeader, MacAddr, Vlan, ETHERTYPE_ARP, ETHERTYPE_IPV4, ETHERTYPE_IPV6, ETHERTYPE_ROCE_V1,
    ETHERTYPE_VLAN, ETH_HEADER_LEN, ETH_MIN_FRAME_LEN, VLAN_TAG_LEN,
};
pub use ext::{
    Aeth, AethFields, AethSyndrome, AtomicAckEth, AtomicAckEthFields, AtomicEth, AtomicEthFields, Deth, DethFields,
    ExtHeaders, Ieth, IethFields, ImmDt, ImmDtFields, NakCode, Reth, RethFields,
};
pub use ip::{
    internet_checksum, is_ipv6_extension_header, IpFields, Ipv4Fields, Ipv4Header, Ipv6Fields, Ipv6Header,
    GRH_NEXT_HEADER_BTH, IPPROTO_UDP, IPV4_HEADER_LEN, IPV6_HEADER_LEN,
};
pub use opcode::{ExtHeaderKind, Opcode, Position, Service};
pub use roce::{pad_for, transport_len, write_transport, RocePacket, ICRC_LEN};
pub use udp::{write_udp_header, UdpHeader, ROCEV2_UDP_PORT, UDP_HEADER_LEN};

/// The network layer of a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L3<'a> {
    /// IPv4.
    Ipv4(Ipv4Header<'a>),
    /// IPv6.
    Ipv6(Ipv6Header<'a>),
    /// RoCEv1: Ethertype 0x8915 and a GRH (the IPv6 header layout) followed by the BTH.
    Grh(Ipv6Header<'a>),
    /// Any other ethertype (ARP, RoCE v1, a second VLAN tag, …), not parsed further.
    Other(u16),
}

/// The transport layer of an IP packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum L4<'a> {
    /// UDP, with its length checked against the IP payload length.
    Udp(UdpHeader<'a>),
    /// Another IPv4 protocol or IPv6 next header (TCP, ICMP, IPv6 extension headers, …),
    /// not parsed.
    Other {
        /// The IPv4 protocol / IPv6 next header.
        protocol: u8,
    },
    /// An IPv4 fragment (MF set or non-zero offset), not parsed.
    Fragment {
        /// The IPv4 protocol.
        protocol: u8,
    },
}

/// A parsed Ethernet frame: zero-copy views of each layer and their byte offsets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    bytes: &'a [u8],
    eth: EthernetHeader<'a>,
    l3: L3<'a>,
    l4: Option<L4<'a>>,
    roce: Option<RocePacket<'a>>,
    /// End of the IP datagram (or of the frame, for non-IP).
    ip_end: usize,
}

/// Parses an Ethernet frame (without FCS).
///
/// # Errors
/// A [`WireError`] for the first malformed layer: truncation at any layer, a bad IP
/// version or IHL, IP lengths inconsistent with the frame, a UDP length that does not
/// match the IP payload, or (for UDP port 4791) any of the transport errors of
/// [`RocePacket::parse`].
pub fn parse_frame(frame: &[u8]) -> Result<Frame<'_>, WireError> {
    let eth = EthernetHeader::parse(frame)?;
    let ip_off = eth.header_len();
    let l3_bytes = frame.get(ip_off..).unwrap_or_default();
    let (l3, datagram_len, ip_payload, protocol, fragment) = match eth.ethertype() {
        ETHERTYPE_IPV4 => {
            let h = Ipv4Header::parse(l3_bytes)?;
            let total_len = h.total_len();
            let total = usize::from(total_len);
            if total < h.header_len() {
                return Err(WireError::Ipv4TotalLenTooSmall { total_len, header_len: h.header_len() });
            }
            let datagram = l3_bytes
                .get(..total)
                .ok_or(WireError::Ipv4TotalLenExceedsFrame { total_len, available: l3_bytes.len() })?;
            let payload = datagram.get(h.header_len()..).unwrap_or_default();
            (L3::Ipv4(h), total, payload, h.protocol(), h.is_fragment())
        }
        ETHERTYPE_IPV6 => {
            let h = Ipv6Header::parse(l3_bytes)?;
            let after = l3_bytes.get(IPV6_HEADER_LEN..).unwrap_or_default();
            let payload_len = h.payload_len();
            let payload = after
                .get(..usize::from(payload_len))
                .ok_or(WireError::Ipv6PayloadLenExceedsFrame { payload_len, available: after.len() })?;
            let total = IPV6_HEADER_LEN + payload.len();
            (L3::Ipv6(h), total, payload, h.next_header(), false)
        }
        ETHERTYPE_ROCE_V1 => {
            let h = Ipv6Header::parse(l3_bytes)?;
            let after = l3_bytes.get(IPV6_HEADER_LEN..).unwrap_or_default();
            let payload_len = h.payload_len();
            let payload = after
                .get(..usize::from(payload_len))
                .ok_or(WireError::Ipv6PayloadLenExceedsFrame { payload_len, available: after.len() })?;
            let roce = if h.next_header() == GRH_NEXT_HEADER_BTH { Some(RocePacket::parse(payload)?) } else { None };
            return Ok(Frame {
                bytes: frame,
                eth,
                l3: L3::Grh(h),
                l4: None,
                roce,
                ip_end: ip_off + IPV6_HEADER_LEN + payload.len(),
            });
        }
        other => {
            return Ok(Frame { bytes: frame, eth, l3: L3::Other(other), l4: None, roce: None, ip_end: frame.len() })
        }
    };

    let mut roce = None;
    let l4 = if fragment {
        L4::Fragment { protocol }
    } else if protocol == IPPROTO_UDP {
        let udp = UdpHeader::parse(ip_payload)?;
        if usize::from(udp.length()) != ip_payload.len() {
            return Err(WireError::UdpLenMismatch { udp_len: udp.length(), ip_payload_len: ip_payload.len() });
        }
        if udp.dst_port() == ROCEV2_UDP_PORT {
            let udp_payload = ip_payload.get(UDP_HEADER_LEN..).unwrap_or_default();
            roce = Some(RocePacket::parse(udp_payload)?);
        }
        L4::Udp(udp)
    } else {
        L4::Other { protocol }
    };

    Ok(Frame { bytes: frame, eth, l3, l4: Some(l4), roce, ip_end: ip_off + datagram_len })
}

impl<'a> Frame<'a> {
    /// The whole frame as given to [`parse_frame`].
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The Ethernet header.
    pub fn eth(&self) -> EthernetHeader<'a> {
        self.eth
    }

    /// The network layer.
    pub fn l3(&self) -> L3<'a> {
        self.l3
    }

    /// The IPv4 header, if this is IPv4.
    pub fn ipv4(&self) -> Option<Ipv4Header<'a>> {
        match self.l3 {
            L3::Ipv4(h) => Some(h),
            _ => None,
        }
    }

    /// The IPv6 header, if this is IPv6.
    pub fn ipv6(&self) -> Option<Ipv6Header<'a>> {
        match self.l3 {
            L3::Ipv6(h) => Some(h),
            _ => None,
        }
    }

    /// The transport layer (`None` for non-IP frames).
    pub fn l4(&self) -> Option<L4<'a>> {
        self.l4
    }

    /// The UDP header, if this is a (non-fragmented) UDP datagram.
    pub fn udp(&self) -> Option<UdpHeader<'a>> {
        match self.l4 {
            Some(L4::Udp(u)) => Some(u),
            _ => None,
        }
    }

    /// The RoCE packet: RoCEv2 (a UDP datagram to port 4791) or RoCEv1 (a GRH with next
    /// header BTH).
    pub fn roce(&self) -> Option<RocePacket<'a>> {
        self.roce
    }

    /// The RoCEv2 packet, or the reason this frame is not RoCEv2.
    ///
    /// # Errors
    /// [`WireError::NotIp`], [`WireError::UnsupportedIpv4Protocol`],
    /// [`WireError::UnsupportedIpv6NextHeader`], [`WireError::Ipv4Fragment`],
    /// [`WireError::NotRoceV2Port`].
    pub fn require_roce(&self) -> Result<RocePacket<'a>, WireError> {
        if let Some(r) = self.roce {
            return Ok(r);
        }
        Err(match (self.l3, self.l4) {
            (L3::Ipv4(h), Some(L4::Fragment { .. })) => {
                WireError::Ipv4Fragment { offset: h.fragment_offset(), more: h.more_fragments() }
            }
            (L3::Ipv4(_), Some(L4::Other { protocol })) => WireError::UnsupportedIpv4Protocol(protocol),
            (L3::Ipv6(_), Some(L4::Other { protocol } | L4::Fragment { protocol })) => {
                WireError::UnsupportedIpv6NextHeader(protocol)
            }
            (_, Some(L4::Udp(u))) => WireError::NotRoceV2Port(u.dst_port()),
            _ => WireError::NotIp { ethertype: self.eth.ethertype() },
        })
    }

    /// Offset of the IP header in the frame (14, or 18 with a VLAN tag); `None` for
    /// non-IP frames.
    pub fn ip_offset(&self) -> Option<usize> {
        match self.l3 {
            L3::Ipv4(_) | L3::Ipv6(_) | L3::Grh(_) => Some(self.eth.header_len()),
            L3::Other(_) => None,
        }
    }

    /// Length of the IP header (IPv4 with options, or 40).
    pub fn ip_header_len(&self) -> Option<usize> {
        match self.l3 {
            L3::Ipv4(h) => Some(h.header_len()),
            L3::Ipv6(_) | L3::Grh(_) => Some(IPV6_HEADER_LEN),
            L3::Other(_) => None,
        }
    }

    /// Offset of the transport (UDP, …) header in the frame.
    pub fn l4_offset(&self) -> Option<usize> {
        Some(self.ip_offset()? + self.ip_header_len()?)
    }

    /// The GRH, if this is a RoCEv1 frame.
    pub fn grh(&self) -> Option<Ipv6Header<'a>> {
        match self.l3 {
            L3::Grh(h) => Some(h),
            _ => None,
        }
    }

    /// Offset of the BTH in the frame, for RoCE (v2 and v1) frames.
    pub fn bth_offset(&self) -> Option<usize> {
        self.roce?;
        match self.l3 {
            L3::Grh(_) => self.l4_offset(),
            _ => Some(self.l4_offset()? + UDP_HEADER_LEN),
        }
    }

    /// Offset of the RoCE payload in the frame.
    pub fn payload_offset(&self) -> Option<usize> {
        Some(self.bth_offset()? + self.roce?.headers_len())
    }

    /// Offset of the 4 ICRC bytes in the frame.
    pub fn icrc_offset(&self) -> Option<usize> {
        Some(self.bth_offset()? + self.roce?.icrc_offset())
    }

    /// Offset of the end of the IP datagram (where Ethernet padding starts).
    pub fn ip_end(&self) -> Option<usize> {
        self.ip_offset()?;
        Some(self.ip_end)
    }

    /// The IP datagram: IP header through the end given by the IP length field.
    pub fn ip_datagram(&self) -> Option<&'a [u8]> {
        self.bytes.get(self.ip_offset()?..self.ip_end)
    }

    /// Bytes after the IP datagram (Ethernet padding); empty for non-IP frames.
    pub fn eth_padding(&self) -> &'a [u8] {
        self.bytes.get(self.ip_end..).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> FrameBuilder {
        FrameBuilder::new(
            EthernetFields {
                dst: [0x52, 0x54, 0, 0xC0, 2, 1],
                src: [0x52, 0x54, 0, 0xC0, 2, 2],
                vlan: Some(Vlan { pcp: 3, dei: false, vid: 100 }),
            },
            Ipv4Fields {
                src: "192.0.2.2".parse().unwrap(),
                dst: "192.0.2.1".parse().unwrap(),
                ..Ipv4Fields::default()
            },
            BthFields::new(Opcode::RcSendOnly, 0x11, 0x19EDF),
        )
    }

    #[test]
    fn offsets() {
        let b = sample().build(&[1, 2, 3]).unwrap();
        let f = parse_frame(&b).unwrap();
        assert_eq!(f.ip_offset(), Some(18));
        assert_eq!(f.l4_offset(), Some(38));
        assert_eq!(f.bth_offset(), Some(46));
        assert_eq!(f.payload_offset(), Some(58));
        assert_eq!(f.icrc_offset(), Some(62));
        assert_eq!(f.ip_end(), Some(66));
        assert_eq!(b.len(), 66);
        assert!(f.eth_padding().is_empty());
        assert_eq!(f.roce().unwrap().pad(), &[0]);
    }

    #[test]
    fn min_frame_padding_is_ignored() {
        let mut bld = sample();
        bld.eth.vlan = None;
        let b = bld.build(&[]).unwrap();
        assert_eq!(b.len(), 60);
        let f = parse_frame(&b).unwrap();
        assert_eq!(f.ip_end(), Some(58));
        assert_eq!(f.eth_padding(), &[0, 0]);
        assert_eq!(f.roce().unwrap().payload(), &[] as &[u8]);
    }
}
