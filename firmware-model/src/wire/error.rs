//! Error types of the wire codec: [`WireError`] for parsing, [`BuildError`] for building.

use core::fmt;

use super::opcode::{ExtHeaderKind, Opcode};

/// A protocol layer or header, as named in [`WireError::Truncated`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// Ethernet II header (14 bytes).
    Ethernet,
    /// Ethernet II header with one 802.1Q tag (18 bytes).
    Vlan,
    /// IPv4 header (20 bytes, or `4 * IHL` with options).
    Ipv4,
    /// IPv6 fixed header (40 bytes).
    Ipv6,
    /// UDP header (8 bytes).
    Udp,
    /// InfiniBand Base Transport Header (12 bytes).
    Bth,
    /// Datagram Extended Transport Header (8 bytes).
    Deth,
    /// RDMA Extended Transport Header (16 bytes).
    Reth,
    /// Atomic Extended Transport Header (28 bytes).
    AtomicEth,
    /// ACK Extended Transport Header (4 bytes).
    Aeth,
    /// Atomic ACK Extended Transport Header (8 bytes).
    AtomicAckEth,
    /// Immediate data (4 bytes).
    ImmDt,
    /// Invalidate Extended Transport Header (4 bytes).
    Ieth,
    /// The 16 reserved bytes of a CNP.
    CnpPadding,
}

impl Layer {
    /// Human-readable name of the layer.
    pub const fn name(self) -> &'static str {
        match self {
            Layer::Ethernet => "Ethernet",
            Layer::Vlan => "802.1Q-tagged Ethernet",
            Layer::Ipv4 => "IPv4",
            Layer::Ipv6 => "IPv6",
            Layer::Udp => "UDP",
            Layer::Bth => "BTH",
            Layer::Deth => "DETH",
            Layer::Reth => "RETH",
            Layer::AtomicEth => "AtomicETH",
            Layer::Aeth => "AETH",
            Layer::AtomicAckEth => "AtomicAckETH",
            Layer::ImmDt => "ImmDt",
            Layer::Ieth => "IETH",
            Layer::CnpPadding => "CNP padding",
        }
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<ExtHeaderKind> for Layer {
    fn from(kind: ExtHeaderKind) -> Self {
        match kind {
            ExtHeaderKind::Deth => Layer::Deth,
            ExtHeaderKind::Reth => Layer::Reth,
            ExtHeaderKind::AtomicEth => Layer::AtomicEth,
            ExtHeaderKind::Aeth => Layer::Aeth,
            ExtHeaderKind::AtomicAckEth => Layer::AtomicAckEth,
            ExtHeaderKind::ImmDt => Layer::ImmDt,
            ExtHeaderKind::Ieth => Layer::Ieth,
            ExtHeaderKind::CnpPadding => Layer::CnpPadding,
        }
    }
}

/// Why a byte slice is not a well-formed frame (or, for [`Frame::require_roce`], not a
/// RoCEv2 frame).
///
/// Every variant carries the numbers needed to see what was wrong.
///
/// [`Frame::require_roce`]: super::Frame::require_roce
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Fewer bytes are left than the named header needs.
    #[error("truncated {layer} header: need {need} bytes, have {have}")]
    Truncated {
        /// The header that does not fit.
        layer: Layer,
        /// Bytes the header needs.
        need: usize,
        /// Bytes that are left.
        have: usize,
    },
    /// The IP version nibble does not match the ethertype.
    #[error("bad IP version {found}: the ethertype says IPv{expected}")]
    BadIpVersion {
        /// Version implied by the ethertype (4 or 6).
        expected: u8,
        /// Version found in the header.
        found: u8,
    },
    /// IPv4 IHL below the minimum of 5 (20 bytes).
    #[error("bad IPv4 IHL {ihl}: the minimum is 5")]
    BadIhl {
        /// The IHL field (header length in 32-bit words).
        ihl: u8,
    },
    /// IPv4 total length larger than the bytes left in the frame.
    #[error("IPv4 total length {total_len} exceeds the {available} bytes left in the frame")]
    Ipv4TotalLenExceedsFrame {
        /// The total length field.
        total_len: u16,
        /// Bytes from the start of the IPv4 header to the end of the frame.
        available: usize,
    },
    /// IPv4 total length smaller than the IPv4 header itself.
    #[error("IPv4 total length {total_len} is smaller than the {header_len}-byte header")]
    Ipv4TotalLenTooSmall {
        /// The total length field.
        total_len: u16,
        /// Header length from IHL.
        header_len: usize,
    },
    /// IPv6 payload length larger than the bytes left in the frame.
    #[error("IPv6 payload length {payload_len} exceeds the {available} bytes after the header")]
    Ipv6PayloadLenExceedsFrame {
        /// The payload length field.
        payload_len: u16,
        /// Bytes after the 40-byte IPv6 header to the end of the frame.
        available: usize,
    },
    /// UDP length field differs from the IP payload length (this includes a UDP length
    /// below 8).
    #[error("UDP length {udp_len} does not match the IP payload length {ip_payload_len}")]
    UdpLenMismatch {
        /// The UDP length field.
        udp_len: u16,
        /// Length of the IP payload (the UDP datagram as delimited by IP).
        ip_payload_len: usize,
    },
    /// BTH opcode not in the supported set (see [`Opcode`]).
    #[error("unknown BTH opcode {0:#04x}")]
    UnknownOpcode(u8),
    /// BTH transport header version other than 0.
    #[error("unsupported BTH TVer {0}: only 0 is defined")]
    UnsupportedTver(u8),
    /// The UDP payload is too short for the BTH, the opcode's extension headers and the
    /// 4-byte ICRC.
    #[error("{opcode} needs {need} bytes (BTH + extension headers + ICRC), have {have}")]
    TooShortForOpcode {
        /// The opcode from the BTH.
        opcode: Opcode,
        /// Bytes needed: 12 + extension headers + 4.
        need: usize,
        /// Bytes in the UDP payload.
        have: usize,
    },
    /// An opcode that carries no payload (e.g. RDMA READ request, ACK) has bytes between
    /// its headers and the ICRC.
    #[error("{opcode} carries no payload, but {len} bytes follow its headers")]
    UnexpectedPayload {
        /// The opcode from the BTH.
        opcode: Opcode,
        /// Bytes between the extension headers and the ICRC.
        len: usize,
    },
    /// The BTH pad count is larger than the payload (payload + pad bytes).
    #[error("BTH pad count {pad} exceeds the {len} bytes of payload and pad")]
    PadExceedsPayload {
        /// The PadCnt field.
        pad: u8,
        /// Bytes between the extension headers and the ICRC (payload + pad).
        len: usize,
    },
    /// Payload + pad is not a multiple of 4 bytes.
    #[error("payload and pad are {len} bytes, not a multiple of 4")]
    PayloadNotAligned {
        /// Bytes between the extension headers and the ICRC (payload + pad).
        len: usize,
    },
    /// Strict RoCE check: the ethertype is neither IPv4 nor IPv6.
    #[error("not an IP frame: ethertype {ethertype:#06x}")]
    NotIp {
        /// The (inner, after any VLAN tag) ethertype.
        ethertype: u16,
    },
    /// Strict RoCE check: IPv4 protocol other than UDP.
    #[error("unsupported IPv4 protocol {0}: RoCEv2 needs UDP (17)")]
    UnsupportedIpv4Protocol(u8),
    /// Strict RoCE check: IPv6 next header other than UDP (extension headers are not
    /// supported).
    #[error("unsupported IPv6 next header {0}: RoCEv2 needs UDP (17)")]
    UnsupportedIpv6NextHeader(u8),
    /// Strict RoCE check: the IPv4 packet is a fragment.
    #[error("IPv4 fragment (offset {offset}, more fragments {more})")]
    Ipv4Fragment {
        /// Fragment offset in 8-byte units.
        offset: u16,
        /// The MF flag.
        more: bool,
    },
    /// Strict RoCE check: UDP destination port is not 4791.
    #[error("UDP destination port {0} is not the RoCEv2 port 4791")]
    NotRoceV2Port(u16),
}

/// Why a header or frame could not be written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BuildError {
    /// The output buffer is too small.
    #[error("output buffer too small: need {need} bytes, have {have}")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A field value does not fit its bit width.
    #[error("{field} = {value:#x} does not fit (maximum {max:#x})")]
    FieldOutOfRange {
        /// Name of the field, e.g. `"bth.dest_qp"`.
        field: &'static str,
        /// The value given.
        value: u64,
        /// The largest value the field can hold.
        max: u64,
    },
    /// The opcode needs an extension header that was not supplied.
    #[error("{opcode} needs a {header} header")]
    MissingExtHeader {
        /// The BTH opcode.
        opcode: Opcode,
        /// The missing header.
        header: ExtHeaderKind,
    },
    /// An extension header was supplied that the opcode does not carry.
    #[error("{opcode} does not carry a {header} header")]
    UnexpectedExtHeader {
        /// The BTH opcode.
        opcode: Opcode,
        /// The superfluous header.
        header: ExtHeaderKind,
    },
    /// A payload was supplied for an opcode that carries none.
    #[error("{opcode} carries no payload, but {len} payload bytes were given")]
    UnexpectedPayload {
        /// The BTH opcode.
        opcode: Opcode,
        /// Payload bytes given.
        len: usize,
    },
    /// The IP datagram would exceed the 16-bit length field.
    #[error("{len}-byte {what} exceeds the maximum of 65535")]
    DatagramTooLarge {
        /// Which length field overflows (`"IPv4 total length"`, `"IPv6 payload length"`).
        what: &'static str,
        /// The length that does not fit.
        len: usize,
    },
}
