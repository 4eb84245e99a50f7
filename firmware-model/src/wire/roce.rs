//! The RoCEv2 transport packet: BTH, extension headers, payload, pad and ICRC.

use super::bth::{Bth, BTH_LEN};
use super::error::{BuildError, Layer, WireError};
use super::ext::{Aeth, AtomicAckEth, AtomicEth, Deth, ExtHeaders, Ieth, ImmDt, Reth};
use super::opcode::{ExtHeaderKind, Opcode};
use super::util::Cursor;
use super::BthFields;

/// Length of the invariant CRC trailer.
pub const ICRC_LEN: usize = 4;

/// Zero-copy view of a RoCEv2 transport packet (the UDP payload of a datagram to port
/// 4791).
///
/// ```text
/// +-----+----------------------+-------------------+---------+------+
/// | BTH | extension headers    | payload           | pad     | ICRC |
/// | 12B | per opcode, in order | (not if opcode    | 0..3 B  | 4 B  |
/// |     | DETH RETH AtomicETH  |  has none)        | PadCnt  |      |
/// |     | AETH AtomicAckETH    |                   |         |      |
/// |     | ImmDt IETH | CNP 16B |                   |         |      |
/// +-----+----------------------+-------------------+---------+------+
///       payload + pad is a multiple of 4 bytes
/// ```
///
/// A successfully parsed packet has TVer 0, a supported opcode, room for every extension
/// header of that opcode and the ICRC, no payload where the opcode allows none, and a pad
/// count consistent with the payload length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RocePacket<'a> {
    /// BTH through ICRC.
    bytes: &'a [u8],
    bth: Bth<'a>,
    /// Payload bytes (without pad).
    payload: &'a [u8],
    /// Pad bytes.
    pad: &'a [u8],
    icrc: &'a [u8; ICRC_LEN],
}

impl<'a> RocePacket<'a> {
    /// Parses a UDP payload as a RoCEv2 packet.
    ///
    /// Checks, in order: BTH length, TVer, opcode, length for BTH + extension headers +
    /// ICRC, payload allowed, pad count.
    ///
    /// # Errors
    /// [`WireError::Truncated`] (BTH), [`WireError::UnsupportedTver`],
    /// [`WireError::UnknownOpcode`], [`WireError::TooShortForOpcode`],
    /// [`WireError::UnexpectedPayload`], [`WireError::PadExceedsPayload`],
    /// [`WireError::PayloadNotAligned`].
    pub fn parse(udp_payload: &'a [u8]) -> Result<Self, WireError> {
        let have = udp_payload.len();
        let raw = udp_payload.first_chunk::<BTH_LEN>().ok_or(WireError::Truncated {
            layer: Layer::Bth,
            need: BTH_LEN,
            have,
        })?;
        let tver = raw[1] & 0x0F;
        if tver != 0 {
            return Err(WireError::UnsupportedTver(tver));
        }
        let bth = Bth::parse(udp_payload)?;
        let opcode = bth.opcode();
        let headers_len = BTH_LEN + opcode.ext_headers_len();
        let need = headers_len + ICRC_LEN;
        let too_short = WireError::TooShortForOpcode { opcode, need, have };
        let (body, icrc) = udp_payload.split_last_chunk::<ICRC_LEN>().ok_or(too_short)?;
        let payload_and_pad = body.get(headers_len..).ok_or(too_short)?;
        let len = payload_and_pad.len();
        if !opcode.has_payload() && len != 0 {
            return Err(WireError::UnexpectedPayload { opcode, len });
        }
        let pad = bth.pad_count();
        if usize::from(pad) > len {
            return Err(WireError::PadExceedsPayload { pad, len });
        }
        if len % 4 != 0 {
            return Err(WireError::PayloadNotAligned { len });
        }
        let (payload, pad) = payload_and_pad.split_at(len - usize::from(pad));
        Ok(RocePacket { bytes: udp_payload, bth, payload, pad, icrc })
    }

    /// The whole packet, BTH through ICRC.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The BTH.
    pub fn bth(&self) -> Bth<'a> {
        self.bth
    }

    /// The opcode (shortcut for `bth().opcode()`).
    pub fn opcode(&self) -> Opcode {
        self.bth.opcode()
    }

    /// Bytes of one extension header, if the opcode carries it.
    pub fn ext_header_bytes(&self, kind: ExtHeaderKind) -> Option<&'a [u8]> {
        let start = self.opcode().ext_header_offset(kind)?;
        self.bytes.get(start..start + kind.len())
    }

    /// The DETH (UD SENDs).
    pub fn deth(&self) -> Option<Deth<'a>> {
        Deth::parse(self.ext_header_bytes(ExtHeaderKind::Deth)?).ok()
    }

    /// The RETH (RDMA WRITE First/Only, RDMA READ Request).
    pub fn reth(&self) -> Option<Reth<'a>> {
        Reth::parse(self.ext_header_bytes(ExtHeaderKind::Reth)?).ok()
    }

    /// The AtomicETH (CmpSwap, FetchAdd).
    pub fn atomic_eth(&self) -> Option<AtomicEth<'a>> {
        AtomicEth::parse(self.ext_header_bytes(ExtHeaderKind::AtomicEth)?).ok()
    }

    /// The AETH (READ Response First/Last/Only, ACK, ATOMIC ACK).
    pub fn aeth(&self) -> Option<Aeth<'a>> {
        Aeth::parse(self.ext_header_bytes(ExtHeaderKind::Aeth)?).ok()
    }

    /// The AtomicAckETH (ATOMIC ACK).
    pub fn atomic_ack_eth(&self) -> Option<AtomicAckEth<'a>> {
        AtomicAckEth::parse(self.ext_header_bytes(ExtHeaderKind::AtomicAckEth)?).ok()
    }

    /// The immediate data (…WITH_IMMEDIATE).
    pub fn immdt(&self) -> Option<ImmDt<'a>> {
        ImmDt::parse(self.ext_header_bytes(ExtHeaderKind::ImmDt)?).ok()
    }

    /// The IETH (…WITH_INVALIDATE).
    pub fn ieth(&self) -> Option<Ieth<'a>> {
        Ieth::parse(self.ext_header_bytes(ExtHeaderKind::Ieth)?).ok()
    }

    /// The 16 reserved bytes of a CNP.
    pub fn cnp_padding(&self) -> Option<&'a [u8]> {
        self.ext_header_bytes(ExtHeaderKind::CnpPadding)
    }

    /// All extension headers as owned fields.
    pub fn ext_headers(&self) -> ExtHeaders {
        ExtHeaders {
            deth: self.deth().map(|h| h.fields()),
            reth: self.reth().map(|h| h.fields()),
            atomic_eth: self.atomic_eth().map(|h| h.fields()),
            aeth: self.aeth().map(|h| h.fields()),
            atomic_ack_eth: self.atomic_ack_eth().map(|h| h.fields()),
            immdt: self.immdt().map(|h| h.fields()),
            ieth: self.ieth().map(|h| h.fields()),
        }
    }

    /// Length of BTH + extension headers, i.e. the payload offset from the BTH.
    pub fn headers_len(&self) -> usize {
        BTH_LEN + self.opcode().ext_headers_len()
    }

    /// The payload: after the extension headers, without pad and ICRC.
    pub fn payload(&self) -> &'a [u8] {
        self.payload
    }

    /// The pad bytes (BTH PadCnt of them) between payload and ICRC.
    pub fn pad(&self) -> &'a [u8] {
        self.pad
    }

    /// Offset of the ICRC from the start of the BTH.
    pub fn icrc_offset(&self) -> usize {
        self.bytes.len().saturating_sub(ICRC_LEN)
    }

    /// Everything the ICRC covers after the IP and UDP headers: BTH through pad.
    pub fn icrc_covered(&self) -> &'a [u8] {
        self.bytes.get(..self.icrc_offset()).unwrap_or_default()
    }

    /// The ICRC trailer read little-endian: the wire bytes are `icrc().to_le_bytes()`,
    /// which is how the (zlib-style) CRC-32 value is stored.
    pub fn icrc(&self) -> u32 {
        u32::from_le_bytes(*self.icrc)
    }

    /// The four ICRC bytes as on the wire.
    pub fn icrc_bytes(&self) -> [u8; ICRC_LEN] {
        *self.icrc
    }
}

/// Length of a transport packet (BTH through ICRC) with the given opcode and payload.
pub fn transport_len(opcode: Opcode, payload_len: usize) -> usize {
    BTH_LEN + opcode.ext_headers_len() + payload_len + pad_for(payload_len) + ICRC_LEN
}

/// Pad bytes needed after a payload of `payload_len` bytes (0..=3).
pub const fn pad_for(payload_len: usize) -> usize {
    (4 - payload_len % 4) % 4
}

/// Writes a transport packet to the start of `out`: the BTH (with
/// [`pad_count`](BthFields::pad_count) replaced by the value the payload needs), the
/// extension headers the opcode carries, the payload, zero pad bytes and a zeroed 4-byte
/// ICRC slot. Returns the bytes written, [`transport_len`].
///
/// # Errors
/// [`BuildError::UnexpectedPayload`] for a non-empty payload on an opcode without one,
/// the extension-header errors of [`ExtHeaders::write_to`], the range errors of
/// [`BthFields::write_to`], [`BuildError::BufferTooSmall`].
pub fn write_transport(bth: &BthFields, ext: &ExtHeaders, payload: &[u8], out: &mut [u8]) -> Result<usize, BuildError> {
    let opcode = bth.opcode;
    if !opcode.has_payload() && !payload.is_empty() {
        return Err(BuildError::UnexpectedPayload { opcode, len: payload.len() });
    }
    ext.check(opcode)?;
    let pad = pad_for(payload.len());
    let total = transport_len(opcode, payload.len());
    if out.len() < total {
        return Err(BuildError::BufferTooSmall { need: total, have: out.len() });
    }
    let bth = BthFields {
        // `pad` is at most 3.
        pad_count: pad as u8,
        ..*bth
    };
    let mut cur = Cursor::new(out);
    bth.write_to(cur.take(BTH_LEN)?)?;
    ext.write_to(opcode, cur.take(opcode.ext_headers_len())?)?;
    cur.put(payload)?;
    cur.zero(pad)?;
    cur.zero(ICRC_LEN)?;
    Ok(cur.pos())
}
