//! IPv4 and IPv6 headers.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::error::{BuildError, Layer, WireError};
use super::eth::{ETHERTYPE_IPV4, ETHERTYPE_IPV6};
use super::util::check_range;

/// IP protocol number of UDP.
pub const IPPROTO_UDP: u8 = 17;
/// Length of an IPv4 header without options.
pub const IPV4_HEADER_LEN: usize = 20;
/// Length of the fixed IPv6 header.
pub const IPV6_HEADER_LEN: usize = 40;

/// The Internet checksum (RFC 1071) of `data`: the ones' complement of the ones'
/// complement sum of its 16-bit big-endian words (an odd trailing byte is padded with
/// zero).
///
/// Over an IPv4 header with a correct checksum field the result is 0.
pub fn internet_checksum(data: &[u8]) -> u16 {
    let mut chunks = data.chunks_exact(2);
    let mut sum: u32 = 0;
    for w in &mut chunks {
        if let [hi, lo] = *w {
            sum += u32::from(u16::from_be_bytes([hi, lo]));
        }
    }
    if let [last] = *chunks.remainder() {
        sum += u32::from(last) << 8;
    }
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// IPv6 next-header values that are extension headers (which this codec does not walk).
pub const fn is_ipv6_extension_header(next_header: u8) -> bool {
    matches!(next_header, 0 | 43 | 44 | 50 | 51 | 60 | 135 | 139 | 140 | 253 | 254)
}

/// Zero-copy view of an IPv4 header (options included).
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |Version|  IHL  |    DSCP   |ECN|          Total Length         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |         Identification        |R|D|M|     Fragment Offset     |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |  Time to Live |    Protocol   |         Header Checksum       |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                       Source Address                          |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                    Destination Address                        |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                    Options (IHL > 5)                          |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Header<'a> {
    fixed: &'a [u8; IPV4_HEADER_LEN],
    /// The whole header, options included (`4 * IHL` bytes).
    header: &'a [u8],
}

impl<'a> Ipv4Header<'a> {
    /// Parses the header at the start of `buf`, honouring IHL. The total length field is
    /// not checked against `buf` here ([`parse_frame`](super::parse_frame) does that).
    ///
    /// # Errors
    /// [`WireError::Truncated`] (at [`Layer::Ipv4`]), [`WireError::BadIpVersion`],
    /// [`WireError::BadIhl`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        let fixed = buf.first_chunk::<IPV4_HEADER_LEN>().ok_or(WireError::Truncated {
            layer: Layer::Ipv4,
            need: IPV4_HEADER_LEN,
            have: buf.len(),
        })?;
        let version = fixed[0] >> 4;
        if version != 4 {
            return Err(WireError::BadIpVersion { expected: 4, found: version });
        }
        let ihl = fixed[0] & 0x0F;
        if ihl < 5 {
            return Err(WireError::BadIhl { ihl });
        }
        let header_len = usize::from(ihl) * 4;
        let header = buf.get(..header_len).ok_or(WireError::Truncated {
            layer: Layer::Ipv4,
            need: header_len,
            have: buf.len(),
        })?;
        Ok(Ipv4Header { fixed, header })
    }

    /// The header bytes, options included.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.header
    }

    /// Version (always 4).
    pub fn version(&self) -> u8 {
        self.fixed[0] >> 4
    }

    /// IHL: header length in 32-bit words (5..=15).
    pub fn ihl(&self) -> u8 {
        self.fixed[0] & 0x0F
    }

    /// Header length in bytes (`4 * IHL`).
    pub fn header_len(&self) -> usize {
        self.header.len()
    }

    /// The TOS byte (DSCP and ECN).
    pub fn tos(&self) -> u8 {
        self.fixed[1]
    }

    /// Differentiated services code point, 6 bits.
    pub fn dscp(&self) -> u8 {
        self.fixed[1] >> 2
    }

    /// Explicit congestion notification, 2 bits (3 = CE).
    pub fn ecn(&self) -> u8 {
        self.fixed[1] & 0x03
    }

    /// Total length of the datagram (header + payload).
    pub fn total_len(&self) -> u16 {
        u16::from_be_bytes([self.fixed[2], self.fixed[3]])
    }

    /// Identification.
    pub fn identification(&self) -> u16 {
        u16::from_be_bytes([self.fixed[4], self.fixed[5]])
    }

    /// The three flag bits (reserved, DF, MF).
    pub fn flags(&self) -> u8 {
        self.fixed[6] >> 5
    }

    /// Don't Fragment flag.
    pub fn dont_fragment(&self) -> bool {
        self.fixed[6] & 0x40 != 0
    }

    /// More Fragments flag.
    pub fn more_fragments(&self) -> bool {
        self.fixed[6] & 0x20 != 0
    }

    /// Fragment offset in 8-byte units.
    pub fn fragment_offset(&self) -> u16 {
        u16::from_be_bytes([self.fixed[6], self.fixed[7]]) & 0x1FFF
    }

    /// `true` if this is a fragment (MF set or non-zero offset).
    pub fn is_fragment(&self) -> bool {
        self.more_fragments() || self.fragment_offset() != 0
    }

    /// Time to live.
    pub fn ttl(&self) -> u8 {
        self.fixed[8]
    }

    /// Protocol of the payload (17 = UDP).
    pub fn protocol(&self) -> u8 {
        self.fixed[9]
    }

    /// The header checksum field.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.fixed[10], self.fixed[11]])
    }

    /// Whether the header checksum is correct. Parsing does not require it.
    pub fn checksum_ok(&self) -> bool {
        internet_checksum(self.header) == 0
    }

    /// Source address.
    pub fn src(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.fixed[12], self.fixed[13], self.fixed[14], self.fixed[15])
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv4Addr {
        Ipv4Addr::new(self.fixed[16], self.fixed[17], self.fixed[18], self.fixed[19])
    }

    /// Options (empty when IHL is 5).
    pub fn options(&self) -> &'a [u8] {
        self.header.get(IPV4_HEADER_LEN..).unwrap_or_default()
    }

    /// The fields the builder takes.
    pub fn fields(&self) -> Ipv4Fields {
        Ipv4Fields {
            src: self.src(),
            dst: self.dst(),
            dscp: self.dscp(),
            ecn: self.ecn(),
            ttl: self.ttl(),
            identification: self.identification(),
            dont_fragment: self.dont_fragment(),
        }
    }
}

/// Owned IPv4 header fields for the builder. Version, IHL (5: no options), total length,
/// protocol and checksum are derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv4Fields {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// DSCP, 6 bits.
    pub dscp: u8,
    /// ECN, 2 bits.
    pub ecn: u8,
    /// Time to live.
    pub ttl: u8,
    /// Identification.
    pub identification: u16,
    /// Don't Fragment flag (rxe sets it).
    pub dont_fragment: bool,
}

impl Default for Ipv4Fields {
    /// Unspecified addresses, DSCP/ECN 0, TTL 64, identification 0, DF set.
    fn default() -> Self {
        Ipv4Fields {
            src: Ipv4Addr::UNSPECIFIED,
            dst: Ipv4Addr::UNSPECIFIED,
            dscp: 0,
            ecn: 0,
            ttl: 64,
            identification: 0,
            dont_fragment: true,
        }
    }
}

impl Ipv4Fields {
    /// Writes a 20-byte header (no options) with a correct checksum to the start of
    /// `out`, for a payload of `payload_len` bytes of protocol `protocol`; returns 20.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`], [`BuildError::FieldOutOfRange`] for DSCP/ECN,
    /// [`BuildError::DatagramTooLarge`] if the total length exceeds 65535.
    pub fn write_to(&self, protocol: u8, payload_len: usize, out: &mut [u8]) -> Result<usize, BuildError> {
        check_range("ipv4.dscp", self.dscp.into(), 0x3F)?;
        check_range("ipv4.ecn", self.ecn.into(), 0x03)?;
        let total = IPV4_HEADER_LEN + payload_len;
        let total =
            u16::try_from(total).map_err(|_| BuildError::DatagramTooLarge { what: "IPv4 total length", len: total })?;
        let have = out.len();
        let h = out
            .first_chunk_mut::<IPV4_HEADER_LEN>()
            .ok_or(BuildError::BufferTooSmall { need: IPV4_HEADER_LEN, have })?;
        let [t0, t1] = total.to_be_bytes();
        let [i0, i1] = self.identification.to_be_bytes();
        let [s0, s1, s2, s3] = self.src.octets();
        let [d0, d1, d2, d3] = self.dst.octets();
        *h = [
            0x45,
            self.dscp << 2 | self.ecn,
            t0,
            t1,
            i0,
            i1,
            if self.dont_fragment { 0x40 } else { 0 },
            0,
            self.ttl,
            protocol,
            0,
            0,
            s0,
            s1,
            s2,
            s3,
            d0,
            d1,
            d2,
            d3,
        ];
        let [c0, c1] = internet_checksum(h).to_be_bytes();
        h[10] = c0;
        h[11] = c1;
        Ok(IPV4_HEADER_LEN)
    }
}

/// Zero-copy view of the fixed 40-byte IPv6 header.
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |Version| Traffic Class |              Flow Label               |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |         Payload Length        |  Next Header  |   Hop Limit   |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                  Source Address (16 B)                        |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |               Destination Address (16 B)                      |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Header<'a> {
    b: &'a [u8; IPV6_HEADER_LEN],
}

impl<'a> Ipv6Header<'a> {
    /// Parses the fixed header at the start of `buf`. The payload length is not checked
    /// against `buf` here ([`parse_frame`](super::parse_frame) does that).
    ///
    /// # Errors
    /// [`WireError::Truncated`] (at [`Layer::Ipv6`]), [`WireError::BadIpVersion`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        let b = buf.first_chunk::<IPV6_HEADER_LEN>().ok_or(WireError::Truncated {
            layer: Layer::Ipv6,
            need: IPV6_HEADER_LEN,
            have: buf.len(),
        })?;
        let version = b[0] >> 4;
        if version != 6 {
            return Err(WireError::BadIpVersion { expected: 6, found: version });
        }
        Ok(Ipv6Header { b })
    }

    /// The 40 header bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.b
    }

    /// Version (always 6).
    pub fn version(&self) -> u8 {
        self.b[0] >> 4
    }

    /// Traffic class (DSCP and ECN).
    pub fn traffic_class(&self) -> u8 {
        (self.b[0] << 4) | (self.b[1] >> 4)
    }

    /// DSCP, the top 6 bits of the traffic class.
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// ECN, the low 2 bits of the traffic class.
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    /// Flow label, 20 bits.
    pub fn flow_label(&self) -> u32 {
        u32::from_be_bytes([0, self.b[1] & 0x0F, self.b[2], self.b[3]])
    }

    /// Payload length (everything after the 40-byte header).
    pub fn payload_len(&self) -> u16 {
        u16::from_be_bytes([self.b[4], self.b[5]])
    }

    /// Next header (17 = UDP).
    pub fn next_header(&self) -> u8 {
        self.b[6]
    }

    /// Hop limit.
    pub fn hop_limit(&self) -> u8 {
        self.b[7]
    }

    /// Source address.
    pub fn src(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(self.b.get(8..24).unwrap_or(&[0; 16]));
        Ipv6Addr::from(a)
    }

    /// Destination address.
    pub fn dst(&self) -> Ipv6Addr {
        let mut a = [0u8; 16];
        a.copy_from_slice(self.b.get(24..40).unwrap_or(&[0; 16]));
        Ipv6Addr::from(a)
    }

    /// The fields the builder takes.
    pub fn fields(&self) -> Ipv6Fields {
        Ipv6Fields {
            src: self.src(),
            dst: self.dst(),
            traffic_class: self.traffic_class(),
            flow_label: self.flow_label(),
            hop_limit: self.hop_limit(),
        }
    }
}

/// Owned IPv6 header fields for the builder. Payload length and next header (UDP) are
/// derived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ipv6Fields {
    /// Source address.
    pub src: Ipv6Addr,
    /// Destination address.
    pub dst: Ipv6Addr,
    /// Traffic class (DSCP << 2 | ECN).
    pub traffic_class: u8,
    /// Flow label, 20 bits.
    pub flow_label: u32,
    /// Hop limit.
    pub hop_limit: u8,
}

impl Default for Ipv6Fields {
    /// Unspecified addresses, traffic class and flow label 0, hop limit 64.
    fn default() -> Self {
        Ipv6Fields {
            src: Ipv6Addr::UNSPECIFIED,
            dst: Ipv6Addr::UNSPECIFIED,
            traffic_class: 0,
            flow_label: 0,
            hop_limit: 64,
        }
    }
}

impl Ipv6Fields {
    /// Writes the 40-byte header to the start of `out` for a payload of `payload_len`
    /// bytes with the given next header; returns 40.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`], [`BuildError::FieldOutOfRange`] for the flow
    /// label, [`BuildError::DatagramTooLarge`] if the payload exceeds 65535 bytes.
    pub fn write_to(&self, next_header: u8, payload_len: usize, out: &mut [u8]) -> Result<usize, BuildError> {
        check_range("ipv6.flow_label", self.flow_label.into(), 0xF_FFFF)?;
        let plen = u16::try_from(payload_len)
            .map_err(|_| BuildError::DatagramTooLarge { what: "IPv6 payload length", len: payload_len })?;
        let have = out.len();
        let h = out
            .first_chunk_mut::<IPV6_HEADER_LEN>()
            .ok_or(BuildError::BufferTooSmall { need: IPV6_HEADER_LEN, have })?;
        let word0 = 6u32 << 28 | u32::from(self.traffic_class) << 20 | self.flow_label;
        let (w, rest) = h.split_at_mut(4);
        w.copy_from_slice(&word0.to_be_bytes());
        let (l, rest) = rest.split_at_mut(2);
        l.copy_from_slice(&plen.to_be_bytes());
        let (nh, rest) = rest.split_at_mut(2);
        nh.copy_from_slice(&[next_header, self.hop_limit]);
        let (s, d) = rest.split_at_mut(16);
        s.copy_from_slice(&self.src.octets());
        d.copy_from_slice(&self.dst.octets());
        Ok(IPV6_HEADER_LEN)
    }
}

/// IPv4 or IPv6 header fields for the builder, or the GRH of a RoCEv1 frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpFields {
    /// IPv4.
    V4(Ipv4Fields),
    /// IPv6.
    V6(Ipv6Fields),
    /// RoCEv1: the InfiniBand GRH (the IPv6 header layout, SGID/DGID as addresses, next
    /// header 0x1B = BTH) after Ethertype 0x8915; no UDP.
    Grh(Ipv6Fields),
}

/// GRH next header value announcing a BTH (IBTA: 0x1B).
pub const GRH_NEXT_HEADER_BTH: u8 = 0x1B;

impl IpFields {
    /// Header length: 20 or 40.
    pub fn header_len(&self) -> usize {
        match self {
            IpFields::V4(_) => IPV4_HEADER_LEN,
            IpFields::V6(_) | IpFields::Grh(_) => IPV6_HEADER_LEN,
        }
    }

    /// The Ethernet ethertype for this IP version.
    pub fn ethertype(&self) -> u16 {
        match self {
            IpFields::V4(_) => ETHERTYPE_IPV4,
            IpFields::V6(_) => ETHERTYPE_IPV6,
            IpFields::Grh(_) => super::eth::ETHERTYPE_ROCE_V1,
        }
    }

    /// Writes the header (see [`Ipv4Fields::write_to`], [`Ipv6Fields::write_to`]).
    ///
    /// # Errors
    /// As for the version's `write_to`.
    pub fn write_to(&self, protocol: u8, payload_len: usize, out: &mut [u8]) -> Result<usize, BuildError> {
        match self {
            IpFields::V4(v4) => v4.write_to(protocol, payload_len, out),
            IpFields::V6(v6) => v6.write_to(protocol, payload_len, out),
            IpFields::Grh(g) => g.write_to(GRH_NEXT_HEADER_BTH, payload_len, out),
        }
    }
}

impl From<Ipv4Fields> for IpFields {
    fn from(v: Ipv4Fields) -> Self {
        IpFields::V4(v)
    }
}

impl From<Ipv6Fields> for IpFields {
    fn from(v: Ipv6Fields) -> Self {
        IpFields::V6(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_of_known_header() {
        // Example from RFC 1071 style tests: a captured rxe IPv4 header.
        let mut h =
            [0x45, 0x00, 0x00, 0x30, 0x6f, 0xf5, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 192, 0, 2, 1, 192, 0, 2, 2];
        let c = internet_checksum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(internet_checksum(&h), 0);
        assert!(Ipv4Header::parse(&h).unwrap().checksum_ok());
    }

    #[test]
    fn odd_length_checksum() {
        assert_eq!(internet_checksum(&[0x01]), !0x0100);
        assert_eq!(internet_checksum(&[]), 0xFFFF);
    }

    #[test]
    fn ipv6_fields_round_trip() {
        let f = Ipv6Fields {
            src: "fe80::1".parse().unwrap(),
            dst: "2001:db8::2".parse().unwrap(),
            traffic_class: 0xAB,
            flow_label: 0xF_EDCB,
            hop_limit: 7,
        };
        let mut b = [0u8; 40];
        f.write_to(17, 100, &mut b).unwrap();
        let h = Ipv6Header::parse(&b).unwrap();
        assert_eq!(h.fields(), f);
        assert_eq!(h.payload_len(), 100);
        assert_eq!(h.next_header(), 17);
    }
}
