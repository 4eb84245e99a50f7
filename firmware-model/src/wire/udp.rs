//! UDP header.

use super::error::{BuildError, Layer, WireError};

/// UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Length of the UDP header.
pub const UDP_HEADER_LEN: usize = 8;

/// Zero-copy view of a UDP header.
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |          Source Port          |       Destination Port        |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |            Length             |           Checksum            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpHeader<'a> {
    b: &'a [u8; UDP_HEADER_LEN],
}

impl<'a> UdpHeader<'a> {
    /// Parses the header at the start of `buf`. The length field is not checked here
    /// ([`parse_frame`](super::parse_frame) checks it against the IP payload length).
    ///
    /// # Errors
    /// [`WireError::Truncated`] at [`Layer::Udp`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        let b = buf.first_chunk::<UDP_HEADER_LEN>().ok_or(WireError::Truncated {
            layer: Layer::Udp,
            need: UDP_HEADER_LEN,
            have: buf.len(),
        })?;
        Ok(UdpHeader { b })
    }

    /// The 8 header bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.b
    }

    /// Source port (flow entropy for RoCEv2).
    pub fn src_port(&self) -> u16 {
        u16::from_be_bytes([self.b[0], self.b[1]])
    }

    /// Destination port (4791 for RoCEv2).
    pub fn dst_port(&self) -> u16 {
        u16::from_be_bytes([self.b[2], self.b[3]])
    }

    /// Length of header + payload.
    pub fn length(&self) -> u16 {
        u16::from_be_bytes([self.b[4], self.b[5]])
    }

    /// Checksum (RoCEv2 sends 0 over IPv4). Not verified by the parser.
    pub fn checksum(&self) -> u16 {
        u16::from_be_bytes([self.b[6], self.b[7]])
    }
}

/// Writes a UDP header with checksum 0 to the start of `out`; returns 8.
///
/// # Errors
/// [`BuildError::BufferTooSmall`]; [`BuildError::DatagramTooLarge`] if header + payload
/// exceed 65535 bytes.
pub fn write_udp_header(src_port: u16, dst_port: u16, payload_len: usize, out: &mut [u8]) -> Result<usize, BuildError> {
    let len = UDP_HEADER_LEN + payload_len;
    let len = u16::try_from(len).map_err(|_| BuildError::DatagramTooLarge { what: "UDP length", len })?;
    let have = out.len();
    let h = out.first_chunk_mut::<UDP_HEADER_LEN>().ok_or(BuildError::BufferTooSmall { need: UDP_HEADER_LEN, have })?;
    let [s0, s1] = src_port.to_be_bytes();
    let [d0, d1] = dst_port.to_be_bytes();
    let [l0, l1] = len.to_be_bytes();
    *h = [s0, s1, d0, d1, l0, l1, 0, 0];
    Ok(UDP_HEADER_LEN)
}
