//! Building complete RoCEv2 frames.

use super::bth::BthFields;
use super::error::BuildError;
use super::eth::{EthernetFields, ETH_MIN_FRAME_LEN};
use super::ext::ExtHeaders;
use super::ip::{IpFields, IPPROTO_UDP};
use super::roce::{transport_len, write_transport};
use super::udp::{write_udp_header, ROCEV2_UDP_PORT, UDP_HEADER_LEN};
use super::util::Cursor;
use super::{Frame, L3};

/// Everything needed to write one RoCEv2 frame except the payload.
///
/// The frame is Ethernet (+ optional 802.1Q tag) / IPv4 (no options, correct header
/// checksum) or IPv6 / UDP (destination port 4791, checksum 0) / BTH / extension headers
/// / payload / pad / 4-byte ICRC slot (zeros; filling it is the ICRC module's job) /
/// Ethernet padding (zeros) up to [`min_frame_len`](Self::min_frame_len).
///
/// Derived fields: ethertype, IP version/IHL/lengths/protocol/checksum, UDP length, BTH
/// pad count (so that payload + pad is a multiple of 4; [`BthFields::pad_count`] is
/// ignored).
///
/// ```
/// use roce_model::wire::*;
///
/// let builder = FrameBuilder::new(
///     EthernetFields { dst: [2, 0, 0, 0, 0, 2], src: [2, 0, 0, 0, 0, 1], vlan: None },
///     Ipv4Fields {
///         src: "192.0.2.1".parse().unwrap(),
///         dst: "192.0.2.2".parse().unwrap(),
///         ..Ipv4Fields::default()
///     },
///     BthFields::new(Opcode::RcSendOnly, 0x11, 0x123456),
/// );
/// let frame = builder.build(b"hello").unwrap();
/// let parsed = parse_frame(&frame).unwrap();
/// let roce = parsed.roce().unwrap();
/// assert_eq!(roce.payload(), b"hello");
/// assert_eq!(roce.bth().pad_count(), 3);
/// assert_eq!(roce.icrc(), 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FrameBuilder {
    /// Ethernet addresses and optional VLAN tag.
    pub eth: EthernetFields,
    /// IPv4 or IPv6 fields.
    pub ip: IpFields,
    /// UDP source port (flow entropy; rxe uses 0xC000-0xFFFF).
    pub udp_src_port: u16,
    /// BTH fields (`pad_count` is replaced).
    pub bth: BthFields,
    /// Extension headers: exactly those the opcode carries.
    pub ext: ExtHeaders,
    /// The frame is zero-padded to at least this many bytes (default 60, the Ethernet
    /// minimum without FCS; 0 disables padding).
    pub min_frame_len: usize,
}

impl FrameBuilder {
    /// Default UDP source port.
    pub const DEFAULT_UDP_SRC_PORT: u16 = 0xC000;

    /// A builder with no extension headers, UDP source port
    /// [`DEFAULT_UDP_SRC_PORT`](Self::DEFAULT_UDP_SRC_PORT) and padding to 60 bytes.
    pub fn new(eth: EthernetFields, ip: impl Into<IpFields>, bth: BthFields) -> Self {
        FrameBuilder {
            eth,
            ip: ip.into(),
            udp_src_port: Self::DEFAULT_UDP_SRC_PORT,
            bth,
            ext: ExtHeaders::NONE,
            min_frame_len: ETH_MIN_FRAME_LEN,
        }
    }

    /// Sets the extension headers.
    pub fn with_ext(mut self, ext: ExtHeaders) -> Self {
        self.ext = ext;
        self
    }

    /// Sets the UDP source port.
    pub fn with_udp_src_port(mut self, port: u16) -> Self {
        self.udp_src_port = port;
        self
    }

    /// The builder that re-creates a parsed RoCEv2 frame (with its payload, from
    /// [`RocePacket::payload`](super::RocePacket::payload)). `None` if the frame is not
    /// RoCEv2.
    ///
    /// What is not carried over: IPv4 options, the IPv4 reserved flag, reserved BTH/DETH
    /// bits, pad byte contents, the UDP checksum, the ICRC and Ethernet padding.
    pub fn from_frame(frame: &Frame<'_>) -> Option<Self> {
        let roce = frame.roce()?;
        let ip = match frame.l3() {
            L3::Ipv4(h) => IpFields::V4(h.fields()),
            L3::Ipv6(h) => IpFields::V6(h.fields()),
            L3::Grh(h) => IpFields::Grh(h.fields()),
            L3::Other(_) => return None,
        };
        let udp_src_port = match ip {
            IpFields::Grh(_) => 0,
            _ => frame.udp()?.src_port(),
        };
        Some(FrameBuilder {
            eth: frame.eth().fields(),
            ip,
            udp_src_port,
            bth: roce.bth().fields(),
            ext: roce.ext_headers(),
            min_frame_len: ETH_MIN_FRAME_LEN,
        })
    }

    /// Length of the UDP header: 8 for RoCEv2, 0 for RoCEv1.
    fn udp_len(&self) -> usize {
        match self.ip {
            IpFields::Grh(_) => 0,
            _ => UDP_HEADER_LEN,
        }
    }

    /// Length of the frame [`build`](Self::build) writes for a payload of `payload_len`
    /// bytes.
    pub fn frame_len(&self, payload_len: usize) -> usize {
        let len =
            self.eth.header_len() + self.ip.header_len() + self.udp_len() + transport_len(self.bth.opcode, payload_len);
        len.max(self.min_frame_len)
    }

    /// Builds the frame into a new vector.
    ///
    /// # Errors
    /// See [`build_into`](Self::build_into).
    pub fn build(&self, payload: &[u8]) -> Result<Vec<u8>, BuildError> {
        let mut out = vec![0; self.frame_len(payload.len())];
        self.build_into(payload, &mut out)?;
        Ok(out)
    }

    /// Writes the frame to the start of `out`; returns its length,
    /// [`frame_len`](Self::frame_len). On error the contents of `out` are unspecified.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`]; [`BuildError::FieldOutOfRange`] for any field that
    /// does not fit; [`BuildError::MissingExtHeader`] / [`BuildError::UnexpectedExtHeader`]
    /// if [`ext`](Self::ext) does not match the opcode; [`BuildError::UnexpectedPayload`];
    /// [`BuildError::DatagramTooLarge`].
    pub fn build_into(&self, payload: &[u8], out: &mut [u8]) -> Result<usize, BuildError> {
        let total = self.frame_len(payload.len());
        if out.len() < total {
            return Err(BuildError::BufferTooSmall { need: total, have: out.len() });
        }
        let tlen = transport_len(self.bth.opcode, payload.len());
        let udp_len = self.udp_len() + tlen;
        let mut cur = Cursor::new(out);
        self.eth.write_to(self.ip.ethertype(), cur.take(self.eth.header_len())?)?;
        self.ip.write_to(IPPROTO_UDP, udp_len, cur.take(self.ip.header_len())?)?;
        if self.udp_len() > 0 {
            write_udp_header(self.udp_src_port, ROCEV2_UDP_PORT, tlen, cur.take(UDP_HEADER_LEN)?)?;
        }
        write_transport(&self.bth, &self.ext, payload, cur.take(tlen)?)?;
        let written = cur.pos();
        cur.zero(total.saturating_sub(written))?;
        Ok(cur.pos())
    }
}
