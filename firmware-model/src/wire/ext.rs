//! InfiniBand extension transport headers: zero-copy views and owned field structs.
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

use super::bth::MAX_U24;
use super::error::{BuildError, Layer, WireError};
use super::opcode::{ExtHeaderKind, Opcode};
use super::util::{be24, check_range, out_chunk, Cursor};

macro_rules! ext_view {
    ($(#[$meta:meta])* $name:ident, $len:literal, $layer:expr) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<'a> {
            b: &'a [u8; $len],
        }

        impl<'a> $name<'a> {
            /// Length on the wire.
            pub const LEN: usize = $len;

            /// Views the header at the start of `buf` (extra bytes are ignored).
            ///
            /// # Errors
            /// [`WireError::Truncated`] if `buf` is shorter than the header.
            pub fn parse(buf: &'a [u8]) -> Result<Self, WireError> {
                let b = buf.first_chunk::<$len>().ok_or(WireError::Truncated {
                    layer: $layer,
                    need: $len,
                    have: buf.len(),
                })?;
                Ok($name { b })
            }

            /// The header bytes.
            pub fn as_bytes(&self) -> &'a [u8] {
                self.b
            }
        }
    };
}

fn u32_at(b0: u8, b1: u8, b2: u8, b3: u8) -> u32 {
    u32::from_be_bytes([b0, b1, b2, b3])
}

/// The first 8 bytes of `src` (via `first_chunk`, so it cannot panic; a too-short source,
/// which the views rule out, yields zeros).
fn take8(src: &[u8]) -> [u8; 8] {
    src.first_chunk::<8>().copied().unwrap_or([0; 8])
}

ext_view!(
    /// Datagram Extended Transport Header (UD).
    Deth, 8, Layer::Deth
);

impl Deth<'_> {
    /// Queue key.
    pub fn qkey(&self) -> u32 {
        u32_at(self.b[0], self.b[1], self.b[2], self.b[3])
    }

    /// The reserved byte.
    pub fn reserved(&self) -> u8 {
        self.b[4]
    }

    /// Source QP, 24 bits.
    pub fn src_qp(&self) -> u32 {
        be24(self.b[5], self.b[6], self.b[7])
    }

    /// Owned fields.
    pub fn fields(&self) -> DethFields {
        DethFields { qkey: self.qkey(), src_qp: self.src_qp() }
    }
}

ext_view!(
    /// RDMA Extended Transport Header.
    Reth, 16, Layer::Reth
);

impl Reth<'_> {
    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        u64::from_be_bytes(take8(self.b))
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        u32_at(self.b[8], self.b[9], self.b[10], self.b[11])
    }

    /// DMA length in bytes (the whole message for WRITE First/Only and READ Request).
    pub fn dma_len(&self) -> u32 {
        u32_at(self.b[12], self.b[13], self.b[14], self.b[15])
    }

    /// Owned fields.
    pub fn fields(&self) -> RethFields {
        RethFields { va: self.va(), rkey: self.rkey(), dma_len: self.dma_len() }
    }
}

ext_view!(
    /// Atomic Extended Transport Header (CmpSwap, FetchAdd).
    AtomicEth, 28, Layer::AtomicEth
);

impl AtomicEth<'_> {
    /// Remote virtual address.
    pub fn va(&self) -> u64 {
        u64::from_be_bytes(take8(self.b))
    }

    /// Remote key.
    pub fn rkey(&self) -> u32 {
        u32_at(self.b[8], self.b[9], self.b[10], self.b[11])
    }

    /// Swap data (CmpSwap) or add data (FetchAdd).
    pub fn swap_add(&self) -> u64 {
        u64::from_be_bytes(take8(self.b.get(12..).unwrap_or_default()))
    }

    /// Compare data (CmpSwap; unused by FetchAdd).
    pub fn compare(&self) -> u64 {
        u64::from_be_bytes(take8(self.b.get(20..).unwrap_or_default()))
    }

    /// Owned fields.
    pub fn fields(&self) -> AtomicEthFields {
        AtomicEthFields { va: self.va(), rkey: self.rkey(), swap_add: self.swap_add(), compare: self.compare() }
    }
}

ext_view!(
    /// ACK Extended Transport Header.
    Aeth, 4, Layer::Aeth
);

impl Aeth<'_> {
    /// The raw syndrome byte.
    pub fn syndrome(&self) -> u8 {
        self.b[0]
    }

    /// The decoded syndrome.
    pub fn syndrome_kind(&self) -> AethSyndrome {
        AethSyndrome::from_u8(self.b[0])
    }

    /// Message sequence number, 24 bits.
    pub fn msn(&self) -> u32 {
        be24(self.b[1], self.b[2], self.b[3])
    }

    /// Owned fields.
    pub fn fields(&self) -> AethFields {
        AethFields { syndrome: self.syndrome(), msn: self.msn() }
    }
}

ext_view!(
    /// Atomic ACK Extended Transport Header.
    AtomicAckEth, 8, Layer::AtomicAckEth
);

impl AtomicAckEth<'_> {
    /// The remote data before the atomic operation.
    pub fn orig_remote_data(&self) -> u64 {
        u64::from_be_bytes(*self.b)
    }

    /// Owned fields.
    pub fn fields(&self) -> AtomicAckEthFields {
        AtomicAckEthFields { orig_remote_data: self.orig_remote_data() }
    }
}

ext_view!(
    /// Immediate data.
    ImmDt, 4, Layer::ImmDt
);

impl ImmDt<'_> {
    /// The immediate data, read big-endian (the 4 wire bytes are `imm().to_be_bytes()`).
    pub fn imm(&self) -> u32 {
        u32::from_be_bytes(*self.b)
    }

    /// Owned fields.
    pub fn fields(&self) -> ImmDtFields {
        ImmDtFields { imm: self.imm() }
    }
}

ext_view!(
    /// Invalidate Extended Transport Header.
    Ieth, 4, Layer::Ieth
);

impl Ieth<'_> {
    /// The R_Key to invalidate.
    pub fn rkey(&self) -> u32 {
        u32::from_be_bytes(*self.b)
    }

    /// Owned fields.
    pub fn fields(&self) -> IethFields {
        IethFields { rkey: self.rkey() }
    }
}

/// Owned DETH fields (the reserved byte is written as 0).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DethFields {
    /// Queue key.
    pub qkey: u32,
    /// Source QP, 24 bits.
    pub src_qp: u32,
}

/// Owned RETH fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RethFields {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// DMA length.
    pub dma_len: u32,
}

/// Owned AtomicETH fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicEthFields {
    /// Remote virtual address.
    pub va: u64,
    /// Remote key.
    pub rkey: u32,
    /// Swap or add data.
    pub swap_add: u64,
    /// Compare data.
    pub compare: u64,
}

/// Owned AETH fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AethFields {
    /// Raw syndrome byte (see [`AethSyndrome`]).
    pub syndrome: u8,
    /// Message sequence number, 24 bits.
    pub msn: u32,
}

/// Owned AtomicAckETH fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct AtomicAckEthFields {
    /// Original remote data.
    pub orig_remote_data: u64,
}

/// Owned immediate data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ImmDtFields {
    /// Immediate data (written big-endian).
    pub imm: u32,
}

/// Owned IETH fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct IethFields {
    /// R_Key to invalidate.
    pub rkey: u32,
}

macro_rules! fields_codec {
    ($fields:ident, $view:ident) => {
        impl $fields {
            /// Length on the wire.
            pub const LEN: usize = $view::LEN;

            /// Parses the header at the start of `buf`.
            ///
            /// # Errors
            /// [`WireError::Truncated`] if `buf` is too short.
            pub fn parse(buf: &[u8]) -> Result<Self, WireError> {
                $view::parse(buf).map(|v| v.fields())
            }
        }

        impl From<$view<'_>> for $fields {
            fn from(v: $view<'_>) -> Self {
                v.fields()
            }
        }
    };
}

fields_codec!(DethFields, Deth);
fields_codec!(RethFields, Reth);
fields_codec!(AtomicEthFields, AtomicEth);
fields_codec!(AethFields, Aeth);
fields_codec!(AtomicAckEthFields, AtomicAckEth);
fields_codec!(ImmDtFields, ImmDt);
fields_codec!(IethFields, Ieth);

impl DethFields {
    /// Writes the 8 bytes to the start of `out`; returns 8.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`]; [`BuildError::FieldOutOfRange`] if `src_qp` does
    /// not fit 24 bits.
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        check_range("deth.src_qp", self.src_qp.into(), MAX_U24.into())?;
        let h = out_chunk::<8>(out)?;
        let [q0, q1, q2, q3] = self.qkey.to_be_bytes();
        let [_, s0, s1, s2] = self.src_qp.to_be_bytes();
        *h = [q0, q1, q2, q3, 0, s0, s1, s2];
        Ok(8)
    }
}

impl RethFields {
    /// Writes the 16 bytes to the start of `out`; returns 16.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`].
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        let h = out_chunk::<16>(out)?;
        let (va, rest) = h.split_at_mut(8);
        va.copy_from_slice(&self.va.to_be_bytes());
        let (rkey, len) = rest.split_at_mut(4);
        rkey.copy_from_slice(&self.rkey.to_be_bytes());
        len.copy_from_slice(&self.dma_len.to_be_bytes());
        Ok(16)
    }
}

impl AtomicEthFields {
    /// Writes the 28 bytes to the start of `out`; returns 28.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`].
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        let h = out_chunk::<28>(out)?;
        let (va, rest) = h.split_at_mut(8);
        va.copy_from_slice(&self.va.to_be_bytes());
        let (rkey, rest) = rest.split_at_mut(4);
        rkey.copy_from_slice(&self.rkey.to_be_bytes());
        let (swap, cmp) = rest.split_at_mut(8);
        swap.copy_from_slice(&self.swap_add.to_be_bytes());
        cmp.copy_from_slice(&self.compare.to_be_bytes());
        Ok(28)
    }
}

impl AethFields {
    /// Writes the 4 bytes to the start of `out`; returns 4.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`]; [`BuildError::FieldOutOfRange`] if `msn` does not
    /// fit 24 bits.
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        check_range("aeth.msn", self.msn.into(), MAX_U24.into())?;
        let h = out_chunk::<4>(out)?;
        let [_, m0, m1, m2] = self.msn.to_be_bytes();
        *h = [self.syndrome, m0, m1, m2];
        Ok(4)
    }
}

impl AtomicAckEthFields {
    /// Writes the 8 bytes to the start of `out`; returns 8.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`].
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        *out_chunk::<8>(out)? = self.orig_remote_data.to_be_bytes();
        Ok(8)
    }
}

impl ImmDtFields {
    /// Writes the 4 bytes to the start of `out`; returns 4.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`].
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        *out_chunk::<4>(out)? = self.imm.to_be_bytes();
        Ok(4)
    }
}

impl IethFields {
    /// Writes the 4 bytes to the start of `out`; returns 4.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`].
    pub fn write_to(&self, out: &mut [u8]) -> Result<usize, BuildError> {
        *out_chunk::<4>(out)? = self.rkey.to_be_bytes();
        Ok(4)
    }
}

/// NAK codes of an AETH NAK syndrome (low five bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NakCode {
    /// 0: PSN sequence error.
    PsnSequenceError,
    /// 1: invalid request.
    InvalidRequest,
    /// 2: remote access error.
    RemoteAccessError,
    /// 3: remote operational error.
    RemoteOperationalError,
    /// 4: invalid RD request.
    InvalidRdRequest,
    /// 5-31: reserved.
    Reserved(u8),
}

impl NakCode {
    /// Decodes the low five bits.
    pub const fn from_u5(v: u8) -> Self {
        match v & 0x1F {
            0 => NakCode::PsnSequenceError,
            1 => NakCode::InvalidRequest,
            2 => NakCode::RemoteAccessError,
            3 => NakCode::RemoteOperationalError,
            4 => NakCode::InvalidRdRequest,
            other => NakCode::Reserved(other),
        }
    }

    /// The five-bit code.
    pub const fn as_u5(self) -> u8 {
        match self {
            NakCode::PsnSequenceError => 0,
            NakCode::InvalidRequest => 1,
            NakCode::RemoteAccessError => 2,
            NakCode::RemoteOperationalError => 3,
            NakCode::InvalidRdRequest => 4,
            NakCode::Reserved(v) => v & 0x1F,
        }
    }
}

/// Decoded AETH syndrome: the top three bits select the type, the low five its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AethSyndrome {
    /// `000`: ACK with a credit count (31 = invalid / no flow control).
    Ack {
        /// Credit count, 5 bits.
        credit: u8,
    },
    /// `001`: RNR NAK with the minimum RNR NAK timer code.
    RnrNak {
        /// Timer code, 5 bits.
        timer: u8,
    },
    /// `011`: NAK.
    Nak(NakCode),
    /// `010` or `1xx`: reserved; the raw byte.
    Reserved(u8),
}

impl AethSyndrome {
    /// Decodes a syndrome byte.
    pub const fn from_u8(v: u8) -> Self {
        let low = v & 0x1F;
        match v >> 5 {
            0b000 => AethSyndrome::Ack { credit: low },
            0b001 => AethSyndrome::RnrNak { timer: low },
            0b011 => AethSyndrome::Nak(NakCode::from_u5(low)),
            _ => AethSyndrome::Reserved(v),
        }
    }

    /// Encodes the syndrome byte (values are truncated to five bits).
    pub const fn as_u8(self) -> u8 {
        match self {
            AethSyndrome::Ack { credit } => credit & 0x1F,
            AethSyndrome::RnrNak { timer } => 0x20 | (timer & 0x1F),
            AethSyndrome::Nak(code) => 0x60 | code.as_u5(),
            AethSyndrome::Reserved(v) => v,
        }
    }
}

/// Owned extension headers for the builder. Exactly the headers the opcode carries must
/// be `Some` (see [`Opcode::ext_headers`]); the CNP padding needs no field and is always
/// written as 16 zero bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct ExtHeaders {
    /// DETH (UD SENDs).
    pub deth: Option<DethFields>,
    /// RETH (WRITE First/Only, READ Request).
    pub reth: Option<RethFields>,
    /// AtomicETH (CmpSwap, FetchAdd).
    pub atomic_eth: Option<AtomicEthFields>,
    /// AETH (READ Response First/Last/Only, ACK, ATOMIC ACK).
    pub aeth: Option<AethFields>,
    /// AtomicAckETH (ATOMIC ACK).
    pub atomic_ack_eth: Option<AtomicAckEthFields>,
    /// ImmDt (…WITH_IMMEDIATE).
    pub immdt: Option<ImmDtFields>,
    /// IETH (…WITH_INVALIDATE).
    pub ieth: Option<IethFields>,
}

impl ExtHeaders {
    /// No extension headers.
    pub const NONE: ExtHeaders = ExtHeaders {
        deth: None,
        reth: None,
        atomic_eth: None,
        aeth: None,
        atomic_ack_eth: None,
        immdt: None,
        ieth: None,
    };

    /// Whether the header of that kind is present. [`ExtHeaderKind::CnpPadding`] has no
    /// fields and is never "present" here.
    pub fn has(&self, kind: ExtHeaderKind) -> bool {
        match kind {
            ExtHeaderKind::Deth => self.deth.is_some(),
            ExtHeaderKind::Reth => self.reth.is_some(),
            ExtHeaderKind::AtomicEth => self.atomic_eth.is_some(),
            ExtHeaderKind::Aeth => self.aeth.is_some(),
            ExtHeaderKind::AtomicAckEth => self.atomic_ack_eth.is_some(),
            ExtHeaderKind::ImmDt => self.immdt.is_some(),
            ExtHeaderKind::Ieth => self.ieth.is_some(),
            ExtHeaderKind::CnpPadding => false,
        }
    }

    /// Checks that exactly the headers `opcode` carries are present.
    ///
    /// # Errors
    /// [`BuildError::MissingExtHeader`] / [`BuildError::UnexpectedExtHeader`] for the first
    /// mismatch in wire order.
    pub fn check(&self, opcode: Opcode) -> Result<(), BuildError> {
        for kind in ExtHeaderKind::ALL {
            if kind == ExtHeaderKind::CnpPadding {
                continue;
            }
            match (opcode.has_ext_header(kind), self.has(kind)) {
                (true, false) => return Err(BuildError::MissingExtHeader { opcode, header: kind }),
                (false, true) => return Err(BuildError::UnexpectedExtHeader { opcode, header: kind }),
                _ => {}
            }
        }
        Ok(())
    }

    /// Writes the headers `opcode` carries, in wire order, to the start of `out`; returns
    /// the bytes written ([`Opcode::ext_headers_len`]).
    ///
    /// # Errors
    /// As [`check`](Self::check), plus [`BuildError::BufferTooSmall`] and the range
    /// errors of the individual headers.
    pub fn write_to(&self, opcode: Opcode, out: &mut [u8]) -> Result<usize, BuildError> {
        self.check(opcode)?;
        let mut cur = Cursor::new(out);
        for &kind in opcode.ext_headers() {
            let buf = cur.take(kind.len())?;
            // Cannot happen after `check`, but stays an error rather than a panic.
            let missing = BuildError::MissingExtHeader { opcode, header: kind };
            match kind {
                ExtHeaderKind::Deth => self.deth.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::Reth => self.reth.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::AtomicEth => self.atomic_eth.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::Aeth => self.aeth.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::AtomicAckEth => self.atomic_ack_eth.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::ImmDt => self.immdt.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::Ieth => self.ieth.ok_or(missing)?.write_to(buf)?,
                ExtHeaderKind::CnpPadding => {
                    buf.fill(0);
                    buf.len()
                }
            };
        }
        Ok(cur.pos())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syndrome_round_trip() {
        for v in 0..=u8::MAX {
            assert_eq!(AethSyndrome::from_u8(v).as_u8(), v);
        }
        assert_eq!(AethSyndrome::from_u8(0x1F), AethSyndrome::Ack { credit: 31 });
        assert_eq!(AethSyndrome::from_u8(0x62), AethSyndrome::Nak(NakCode::RemoteAccessError));
        assert_eq!(AethSyndrome::from_u8(0x2E), AethSyndrome::RnrNak { timer: 14 });
    }

    #[test]
    fn atomic_eth_layout() {
        let f = AtomicEthFields {
            va: 0x0102030405060708,
            rkey: 0x090A0B0C,
            swap_add: 0x1112131415161718,
            compare: 0x2122232425262728,
        };
        let mut b = [0u8; 28];
        assert_eq!(f.write_to(&mut b), Ok(28));
        assert_eq!(&b[..4], &[1, 2, 3, 4]);
        assert_eq!(&b[8..12], &[9, 10, 11, 12]);
        assert_eq!(&b[12..14], &[0x11, 0x12]);
        assert_eq!(&b[20..22], &[0x21, 0x22]);
        assert_eq!(AtomicEthFields::parse(&b), Ok(f));
        assert_eq!(
            AtomicEthFields::parse(&b[..27]),
            Err(WireError::Truncated { layer: Layer::AtomicEth, need: 28, have: 27 })
        );
    }

    #[test]
    fn deth_layout() {
        let f = DethFields { qkey: 0x80010000, src_qp: 0x000011 };
        let mut b = [0xFFu8; 8];
        f.write_to(&mut b).unwrap();
        assert_eq!(b, [0x80, 0x01, 0, 0, 0, 0, 0, 0x11]);
        assert_eq!(DethFields::parse(&b), Ok(f));
    }

    #[test]
    fn ext_headers_check() {
        let ext = ExtHeaders { reth: Some(RethFields::default()), ..ExtHeaders::NONE };
        assert_eq!(ext.check(Opcode::RcRdmaWriteFirst), Ok(()));
        assert_eq!(
            ext.check(Opcode::RcRdmaWriteOnlyWithImmediate),
            Err(BuildError::MissingExtHeader {
                opcode: Opcode::RcRdmaWriteOnlyWithImmediate,
                header: ExtHeaderKind::ImmDt
            })
        );
        assert_eq!(
            ext.check(Opcode::RcSendOnly),
            Err(BuildError::UnexpectedExtHeader { opcode: Opcode::RcSendOnly, header: ExtHeaderKind::Reth })
        );
        let mut b = [0xAAu8; 16];
        assert_eq!(ExtHeaders::NONE.write_to(Opcode::Cnp, &mut b), Ok(16));
        assert_eq!(b, [0; 16]);
    }
}
