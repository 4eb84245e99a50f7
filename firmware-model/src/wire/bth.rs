//! InfiniBand Base Transport Header (BTH).

use super::error::{BuildError, Layer, WireError};
use super::opcode::Opcode;
use super::util::{be24, check_range};

/// Length of the BTH.
pub const BTH_LEN: usize = 12;
/// Largest 24-bit value (QPN, PSN, MSN).
pub const MAX_U24: u32 = 0xFF_FFFF;
/// The default partition key.
pub const DEFAULT_PKEY: u16 = 0xFFFF;

/// Zero-copy view of a BTH.
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |    OpCode     |S|M|Pad|  TVer |         Partition Key         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |F|B|   resv6   |            Destination QP                     |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |A|    resv7    |             Packet Sequence Number            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
///  S = solicited event, M = MigReq, F = FECN, B = BECN, A = AckReq
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bth<'a> {
    b: &'a [u8; BTH_LEN],
    opcode: Opcode,
}

impl<'a> Bth<'a> {
    /// Parses the BTH at the start of `buf` and decodes its opcode. TVer is not checked
    /// here ([`RocePacket::parse`](super::RocePacket::parse) requires 0).
    ///
    /// # Errors
    /// [`WireError::Truncated`] at [`Layer::Bth`], [`WireError::UnknownOpcode`].
    pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
        let b = buf.first_chunk::<BTH_LEN>().ok_or(WireError::Truncated {
            layer: Layer::Bth,
            need: BTH_LEN,
            have: buf.len(),
        })?;
        let opcode = Opcode::from_u8(b[0])?;
        Ok(Bth { b, opcode })
    }

    /// The 12 header bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.b
    }

    /// The opcode.
    pub fn opcode(&self) -> Opcode {
        self.opcode
    }

    /// Solicited event (SE).
    pub fn solicited(&self) -> bool {
        self.b[1] & 0x80 != 0
    }

    /// Migration request (M).
    pub fn migreq(&self) -> bool {
        self.b[1] & 0x40 != 0
    }

    /// Pad count: bytes of padding after the payload (0..=3).
    pub fn pad_count(&self) -> u8 {
        (self.b[1] >> 4) & 0x03
    }

    /// Transport header version (0).
    pub fn tver(&self) -> u8 {
        self.b[1] & 0x0F
    }

    /// Partition key.
    pub fn pkey(&self) -> u16 {
        u16::from_be_bytes([self.b[2], self.b[3]])
    }

    /// Forward explicit congestion notification.
    pub fn fecn(&self) -> bool {
        self.b[4] & 0x80 != 0
    }

    /// Backward explicit congestion notification.
    pub fn becn(&self) -> bool {
        self.b[4] & 0x40 != 0
    }

    /// The 6 reserved bits after FECN/BECN (sent as 0; masked to ones in the ICRC).
    pub fn resv6(&self) -> u8 {
        self.b[4] & 0x3F
    }

    /// Destination QP number, 24 bits.
    pub fn dest_qp(&self) -> u32 {
        be24(self.b[5], self.b[6], self.b[7])
    }

    /// Acknowledge request.
    pub fn ack_req(&self) -> bool {
        self.b[8] & 0x80 != 0
    }

    /// The 7 reserved bits after AckReq (sent as 0).
    pub fn resv7(&self) -> u8 {
        self.b[8] & 0x7F
    }

    /// Packet sequence number, 24 bits.
    pub fn psn(&self) -> u32 {
        be24(self.b[9], self.b[10], self.b[11])
    }

    /// The decoded fields (the reserved bits are dropped).
    pub fn fields(&self) -> BthFields {
        BthFields {
            opcode: self.opcode,
            solicited: self.solicited(),
            migreq: self.migreq(),
            pad_count: self.pad_count(),
            tver: self.tver(),
            pkey: self.pkey(),
            fecn: self.fecn(),
            becn: self.becn(),
            dest_qp: self.dest_qp(),
            ack_req: self.ack_req(),
            psn: self.psn(),
        }
    }
}

/// Owned BTH fields. Reserved bits are written as 0.
///
/// The frame builder overrides [`pad_count`](Self::pad_count) with the value the payload
/// length needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BthFields {
    /// Opcode.
    pub opcode: Opcode,
    /// Solicited event (SE).
    pub solicited: bool,
    /// Migration request (M).
    pub migreq: bool,
    /// Pad count, 2 bits.
    pub pad_count: u8,
    /// Transport header version, 4 bits (must be 0 on the wire).
    pub tver: u8,
    /// Partition key.
    pub pkey: u16,
    /// FECN.
    pub fecn: bool,
    /// BECN.
    pub becn: bool,
    /// Destination QP, 24 bits.
    pub dest_qp: u32,
    /// Acknowledge request.
    pub ack_req: bool,
    /// PSN, 24 bits.
    pub psn: u32,
}

impl BthFields {
    /// Length on the wire.
    pub const LEN: usize = BTH_LEN;

    /// Fields with the given opcode, destination QP and PSN, P_Key 0xFFFF and every
    /// other field 0 / false.
    pub const fn new(opcode: Opcode, dest_qp: u32, psn: u32) -> Self {
        BthFields {
            opcode,
            solicited: false,
            migreq: false,
            pad_count: 0,
            tver: 0,
            pkey: DEFAULT_PKEY,
            fecn: false,
            becn: false,
            dest_qp,
            ack_req: false,
            psn,
        }
    }

    /// Parses a BTH (see [`Bth::parse`]).
    ///
    /// # Errors
    /// As [`Bth::parse`].
    pub fn parse(buf: &[u8]) -> Result<Self, WireError> {
        Bth::parse(buf).map(|b| b.fields())
    }

    /// Writes the 12 bytes to the start of `out`; returns 12.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`]; [`BuildError::FieldOutOfRange`] for pad count,
    /// TVer, destination QP or PSN.
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        check_range("bth.pad_count", self.pad_count.into(), 3)?;
        check_range("bth.tver", self.tver.into(), 0x0F)?;
        check_range("bth.dest_qp", self.dest_qp.into(), MAX_U24.into())?;
        check_range("bth.psn", self.psn.into(), MAX_U24.into())?;
        let have = out.len();
        let h = out.first_chunk_mut::<BTH_LEN>().ok_or(BuildError::BufferTooSmall { need: BTH_LEN, have })?;
        let [p0, p1] = self.pkey.to_be_bytes();
        let [_, q0, q1, q2] = self.dest_qp.to_be_bytes();
        let [_, s0, s1, s2] = self.psn.to_be_bytes();
        *h = [
            self.opcode.as_u8(),
            u8::from(self.solicited) << 7 | u8::from(self.migreq) << 6 | self.pad_count << 4 | self.tver,
            p0,
            p1,
            u8::from(self.fecn) << 7 | u8::from(self.becn) << 6,
            q0,
            q1,
            q2,
            u8::from(self.ack_req) << 7,
            s0,
            s1,
            s2,
        ];
        Ok(BTH_LEN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_positions() {
        let f = BthFields {
            opcode: Opcode::RcSendOnly,
            solicited: true,
            migreq: false,
            pad_count: 2,
            tver: 0,
            pkey: 0x1234,
            fecn: false,
            becn: true,
            dest_qp: 0xABCDEF,
            ack_req: true,
            psn: 0x012345,
        };
        let mut b = [0u8; 12];
        assert_eq!(f.write_to(&mut b), Ok(12));
        assert_eq!(b, [0x04, 0xA0, 0x12, 0x34, 0x40, 0xAB, 0xCD, 0xEF, 0x80, 0x01, 0x23, 0x45]);
        assert_eq!(BthFields::parse(&b), Ok(f));
    }

    #[test]
    fn out_of_range() {
        let mut f = BthFields::new(Opcode::RcSendOnly, 1 << 24, 0);
        let mut b = [0u8; 12];
        assert_eq!(
            f.write_to(&mut b),
            Err(BuildError::FieldOutOfRange { field: "bth.dest_qp", value: 1 << 24, max: 0xFF_FFFF })
        );
        f.dest_qp = 1;
        assert_eq!(f.write_to(&mut b[..11]), Err(BuildError::BufferTooSmall { need: 12, have: 11 }));
    }
}
