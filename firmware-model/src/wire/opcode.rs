//! BTH opcodes and the extension headers each one carries.
//!
//! The table follows Linux rxe's `rxe_opcode.c` (which follows IBTA Vol 1 §9.2 / Table 38)
//! for which extension headers each opcode carries, in which order, and whether it
//! carries payload. CNP (0x81) follows the RoCEv2 annex as ConnectX sends it and as
//! `scapy.contrib.roce` (`CNPPadding`) and Wireshark decode it: BTH + 16 reserved bytes +
//! ICRC. rxe itself never sends CNPs.

use core::fmt;

use super::error::WireError;

/// An InfiniBand extension transport header that may follow the BTH.
///
/// The variants are declared in wire order: when an opcode carries more than one
/// extension header they appear in this order (e.g. RETH before ImmDt, AETH before
/// AtomicAckETH, DETH before ImmDt).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ExtHeaderKind {
    /// Datagram ETH (UD): Q_Key, source QP. 8 bytes.
    Deth,
    /// RDMA ETH: virtual address, R_Key, DMA length. 16 bytes.
    Reth,
    /// Atomic ETH: virtual address, R_Key, swap/add data, compare data. 28 bytes.
    AtomicEth,
    /// ACK ETH: syndrome, MSN. 4 bytes.
    Aeth,
    /// Atomic ACK ETH: original remote data. 8 bytes.
    AtomicAckEth,
    /// Immediate data. 4 bytes.
    ImmDt,
    /// Invalidate ETH: R_Key to invalidate. 4 bytes.
    Ieth,
    /// The 16 reserved bytes after the BTH of a CNP.
    CnpPadding,
}

impl ExtHeaderKind {
    /// All kinds, in wire order.
    pub const ALL: [ExtHeaderKind; 8] = [
        ExtHeaderKind::Deth,
        ExtHeaderKind::Reth,
        ExtHeaderKind::AtomicEth,
        ExtHeaderKind::Aeth,
        ExtHeaderKind::AtomicAckEth,
        ExtHeaderKind::ImmDt,
        ExtHeaderKind::Ieth,
        ExtHeaderKind::CnpPadding,
    ];

    /// Length of the header on the wire, in bytes.
    #[allow(clippy::len_without_is_empty)]
    pub const fn len(self) -> usize {
        match self {
            ExtHeaderKind::Deth => 8,
            ExtHeaderKind::Reth => 16,
            ExtHeaderKind::AtomicEth => 28,
            ExtHeaderKind::Aeth => 4,
            ExtHeaderKind::AtomicAckEth => 8,
            ExtHeaderKind::ImmDt => 4,
            ExtHeaderKind::Ieth => 4,
            ExtHeaderKind::CnpPadding => 16,
        }
    }

    /// Name of the header as in the IBTA spec.
    pub const fn name(self) -> &'static str {
        match self {
            ExtHeaderKind::Deth => "DETH",
            ExtHeaderKind::Reth => "RETH",
            ExtHeaderKind::AtomicEth => "AtomicETH",
            ExtHeaderKind::Aeth => "AETH",
            ExtHeaderKind::AtomicAckEth => "AtomicAckETH",
            ExtHeaderKind::ImmDt => "ImmDt",
            ExtHeaderKind::Ieth => "IETH",
            ExtHeaderKind::CnpPadding => "CNP padding",
        }
    }
}

impl fmt::Display for ExtHeaderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Transport service of an opcode (the top three opcode bits, plus CNP).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Service {
    /// Reliable Connected (opcodes 0x00-0x1F).
    Rc,
    /// Unreliable Datagram (opcodes 0x60-0x7F; only SEND Only is defined).
    Ud,
    /// RoCEv2 Congestion Notification Packet (0x81).
    Cnp,
}

/// Position of a packet within its message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Position {
    /// First packet of a multi-packet message.
    First,
    /// Middle packet of a multi-packet message.
    Middle,
    /// Last packet of a multi-packet message.
    Last,
    /// The only packet of the message (also ACKs, READ requests, atomics and CNPs).
    Only,
}

impl Position {
    /// `true` for [`First`](Position::First) and [`Only`](Position::Only): the packet
    /// starts a message.
    pub const fn is_start(self) -> bool {
        matches!(self, Position::First | Position::Only)
    }

    /// `true` for [`Last`](Position::Last) and [`Only`](Position::Only): the packet ends a
    /// message.
    pub const fn is_end(self) -> bool {
        matches!(self, Position::Last | Position::Only)
    }
}

/// A supported BTH opcode.
///
/// RC opcodes 0x00-0x14, 0x16 and 0x17, UD SEND Only (0x64, 0x65) and CNP (0x81).
/// 0x15 (RESYNC, RD only) and 0x18-0x1F (reserved in the RC range; newer IBTA revisions
/// put FLUSH and ATOMIC WRITE at 0x1C/0x1D) are rejected as unknown, as is everything
/// else. The discriminant is the wire value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Opcode {
    /// RC SEND First (0x00).
    RcSendFirst = 0x00,
    /// RC SEND Middle (0x01).
    RcSendMiddle = 0x01,
    /// RC SEND Last (0x02).
    RcSendLast = 0x02,
    /// RC SEND Last with Immediate (0x03): ImmDt.
    RcSendLastWithImmediate = 0x03,
    /// RC SEND Only (0x04).
    RcSendOnly = 0x04,
    /// RC SEND Only with Immediate (0x05): ImmDt.
    RcSendOnlyWithImmediate = 0x05,
    /// RC RDMA WRITE First (0x06): RETH.
    RcRdmaWriteFirst = 0x06,
    /// RC RDMA WRITE Middle (0x07).
    RcRdmaWriteMiddle = 0x07,
    /// RC RDMA WRITE Last (0x08).
    RcRdmaWriteLast = 0x08,
    /// RC RDMA WRITE Last with Immediate (0x09): ImmDt.
    RcRdmaWriteLastWithImmediate = 0x09,
    /// RC RDMA WRITE Only (0x0A): RETH.
    RcRdmaWriteOnly = 0x0A,
    /// RC RDMA WRITE Only with Immediate (0x0B): RETH, ImmDt.
    RcRdmaWriteOnlyWithImmediate = 0x0B,
    /// RC RDMA READ Request (0x0C): RETH, no payload.
    RcRdmaReadRequest = 0x0C,
    /// RC RDMA READ Response First (0x0D): AETH.
    RcRdmaReadResponseFirst = 0x0D,
    /// RC RDMA READ Response Middle (0x0E).
    RcRdmaReadResponseMiddle = 0x0E,
    /// RC RDMA READ Response Last (0x0F): AETH.
    RcRdmaReadResponseLast = 0x0F,
    /// RC RDMA READ Response Only (0x10): AETH.
    RcRdmaReadResponseOnly = 0x10,
    /// RC Acknowledge (0x11): AETH, no payload.
    RcAcknowledge = 0x11,
    /// RC ATOMIC Acknowledge (0x12): AETH, AtomicAckETH, no payload.
    RcAtomicAcknowledge = 0x12,
    /// RC CmpSwap (0x13): AtomicETH, no payload.
    RcCompareSwap = 0x13,
    /// RC FetchAdd (0x14): AtomicETH, no payload.
    RcFetchAdd = 0x14,
    /// RC SEND Last with Invalidate (0x16): IETH.
    RcSendLastWithInvalidate = 0x16,
    /// RC SEND Only with Invalidate (0x17): IETH.
    RcSendOnlyWithInvalidate = 0x17,
    /// UD SEND Only (0x64): DETH.
    UdSendOnly = 0x64,
    /// UD SEND Only with Immediate (0x65): DETH, ImmDt.
    UdSendOnlyWithImmediate = 0x65,
    /// RoCEv2 Congestion Notification Packet (0x81): 16 reserved bytes, no payload.
    Cnp = 0x81,
}

use ExtHeaderKind as K;

impl Opcode {
    /// Every supported opcode, in numeric order.
    pub const ALL: [Opcode; 26] = [
        Opcode::RcSendFirst,
        Opcode::RcSendMiddle,
        Opcode::RcSendLast,
        Opcode::RcSendLastWithImmediate,
        Opcode::RcSendOnly,
        Opcode::RcSendOnlyWithImmediate,
        Opcode::RcRdmaWriteFirst,
        Opcode::RcRdmaWriteMiddle,
        Opcode::RcRdmaWriteLast,
        Opcode::RcRdmaWriteLastWithImmediate,
        Opcode::RcRdmaWriteOnly,
        Opcode::RcRdmaWriteOnlyWithImmediate,
        Opcode::RcRdmaReadRequest,
        Opcode::RcRdmaReadResponseFirst,
        Opcode::RcRdmaReadResponseMiddle,
        Opcode::RcRdmaReadResponseLast,
        Opcode::RcRdmaReadResponseOnly,
        Opcode::RcAcknowledge,
        Opcode::RcAtomicAcknowledge,
        Opcode::RcCompareSwap,
        Opcode::RcFetchAdd,
        Opcode::RcSendLastWithInvalidate,
        Opcode::RcSendOnlyWithInvalidate,
        Opcode::UdSendOnly,
        Opcode::UdSendOnlyWithImmediate,
        Opcode::Cnp,
    ];

    /// Decodes a wire opcode.
    ///
    /// # Errors
    /// [`WireError::UnknownOpcode`] for reserved or unsupported values.
    pub const fn from_u8(value: u8) -> Result<Self, WireError> {
        Ok(match value {
            0x00 => Opcode::RcSendFirst,
            0x01 => Opcode::RcSendMiddle,
            0x02 => Opcode::RcSendLast,
            0x03 => Opcode::RcSendLastWithImmediate,
            0x04 => Opcode::RcSendOnly,
            0x05 => Opcode::RcSendOnlyWithImmediate,
            0x06 => Opcode::RcRdmaWriteFirst,
            0x07 => Opcode::RcRdmaWriteMiddle,
            0x08 => Opcode::RcRdmaWriteLast,
            0x09 => Opcode::RcRdmaWriteLastWithImmediate,
            0x0A => Opcode::RcRdmaWriteOnly,
            0x0B => Opcode::RcRdmaWriteOnlyWithImmediate,
            0x0C => Opcode::RcRdmaReadRequest,
            0x0D => Opcode::RcRdmaReadResponseFirst,
            0x0E => Opcode::RcRdmaReadResponseMiddle,
            0x0F => Opcode::RcRdmaReadResponseLast,
            0x10 => Opcode::RcRdmaReadResponseOnly,
            0x11 => Opcode::RcAcknowledge,
            0x12 => Opcode::RcAtomicAcknowledge,
            0x13 => Opcode::RcCompareSwap,
            0x14 => Opcode::RcFetchAdd,
            0x16 => Opcode::RcSendLastWithInvalidate,
            0x17 => Opcode::RcSendOnlyWithInvalidate,
            0x64 => Opcode::UdSendOnly,
            0x65 => Opcode::UdSendOnlyWithImmediate,
            0x81 => Opcode::Cnp,
            other => return Err(WireError::UnknownOpcode(other)),
        })
    }

    /// The wire value.
    pub const fn as_u8(self) -> u8 {
        self as u8
    }

    /// The IBTA / rxe name without the `IB_OPCODE_` prefix, e.g. `"RC_SEND_ONLY"`.
    pub const fn name(self) -> &'static str {
        match self {
            Opcode::RcSendFirst => "RC_SEND_FIRST",
            Opcode::RcSendMiddle => "RC_SEND_MIDDLE",
            Opcode::RcSendLast => "RC_SEND_LAST",
            Opcode::RcSendLastWithImmediate => "RC_SEND_LAST_WITH_IMMEDIATE",
            Opcode::RcSendOnly => "RC_SEND_ONLY",
            Opcode::RcSendOnlyWithImmediate => "RC_SEND_ONLY_WITH_IMMEDIATE",
            Opcode::RcRdmaWriteFirst => "RC_RDMA_WRITE_FIRST",
            Opcode::RcRdmaWriteMiddle => "RC_RDMA_WRITE_MIDDLE",
            Opcode::RcRdmaWriteLast => "RC_RDMA_WRITE_LAST",
            Opcode::RcRdmaWriteLastWithImmediate => "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE",
            Opcode::RcRdmaWriteOnly => "RC_RDMA_WRITE_ONLY",
            Opcode::RcRdmaWriteOnlyWithImmediate => "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE",
            Opcode::RcRdmaReadRequest => "RC_RDMA_READ_REQUEST",
            Opcode::RcRdmaReadResponseFirst => "RC_RDMA_READ_RESPONSE_FIRST",
            Opcode::RcRdmaReadResponseMiddle => "RC_RDMA_READ_RESPONSE_MIDDLE",
            Opcode::RcRdmaReadResponseLast => "RC_RDMA_READ_RESPONSE_LAST",
            Opcode::RcRdmaReadResponseOnly => "RC_RDMA_READ_RESPONSE_ONLY",
            Opcode::RcAcknowledge => "RC_ACKNOWLEDGE",
            Opcode::RcAtomicAcknowledge => "RC_ATOMIC_ACKNOWLEDGE",
            Opcode::RcCompareSwap => "RC_COMPARE_SWAP",
            Opcode::RcFetchAdd => "RC_FETCH_ADD",
            Opcode::RcSendLastWithInvalidate => "RC_SEND_LAST_WITH_INVALIDATE",
            Opcode::RcSendOnlyWithInvalidate => "RC_SEND_ONLY_WITH_INVALIDATE",
            Opcode::UdSendOnly => "UD_SEND_ONLY",
            Opcode::UdSendOnlyWithImmediate => "UD_SEND_ONLY_WITH_IMMEDIATE",
            Opcode::Cnp => "CNP",
        }
    }

    /// Transport service of the opcode.
    pub const fn service(self) -> Service {
        match self {
            Opcode::UdSendOnly | Opcode::UdSendOnlyWithImmediate => Service::Ud,
            Opcode::Cnp => Service::Cnp,
            _ => Service::Rc,
        }
    }

    /// The extension headers between the BTH and the payload, in wire order.
    pub const fn ext_headers(self) -> &'static [ExtHeaderKind] {
        match self {
            Opcode::RcSendFirst
            | Opcode::RcSendMiddle
            | Opcode::RcSendLast
            | Opcode::RcSendOnly
            | Opcode::RcRdmaWriteMiddle
            | Opcode::RcRdmaWriteLast
            | Opcode::RcRdmaReadResponseMiddle => &[],
            Opcode::RcSendLastWithImmediate
            | Opcode::RcSendOnlyWithImmediate
            | Opcode::RcRdmaWriteLastWithImmediate => &[K::ImmDt],
            Opcode::RcRdmaWriteFirst | Opcode::RcRdmaWriteOnly | Opcode::RcRdmaReadRequest => &[K::Reth],
            Opcode::RcRdmaWriteOnlyWithImmediate => &[K::Reth, K::ImmDt],
            Opcode::RcRdmaReadResponseFirst
            | Opcode::RcRdmaReadResponseLast
            | Opcode::RcRdmaReadResponseOnly
            | Opcode::RcAcknowledge => &[K::Aeth],
            Opcode::RcAtomicAcknowledge => &[K::Aeth, K::AtomicAckEth],
            Opcode::RcCompareSwap | Opcode::RcFetchAdd => &[K::AtomicEth],
            Opcode::RcSendLastWithInvalidate | Opcode::RcSendOnlyWithInvalidate => &[K::Ieth],
            Opcode::UdSendOnly => &[K::Deth],
            Opcode::UdSendOnlyWithImmediate => &[K::Deth, K::ImmDt],
            Opcode::Cnp => &[K::CnpPadding],
        }
    }

    /// Whether the opcode carries the given extension header.
    pub fn has_ext_header(self, kind: ExtHeaderKind) -> bool {
        self.ext_headers().contains(&kind)
    }

    /// Total length of the opcode's extension headers, in bytes.
    pub const fn ext_headers_len(self) -> usize {
        let mut rest = self.ext_headers();
        let mut total = 0;
        while let [first, tail @ ..] = rest {
            total += first.len();
            rest = tail;
        }
        total
    }

    /// Byte offset of an extension header from the start of the BTH, if the opcode
    /// carries it.
    pub fn ext_header_offset(self, kind: ExtHeaderKind) -> Option<usize> {
        let mut offset = super::bth::BTH_LEN;
        for &k in self.ext_headers() {
            if k == kind {
                return Some(offset);
            }
            offset += k.len();
        }
        None
    }

    /// Whether the opcode may carry payload (rxe's `RXE_PAYLOAD_MASK`).
    ///
    /// `false` for RDMA READ Request, Acknowledge, ATOMIC Acknowledge, CmpSwap, FetchAdd
    /// and CNP: for those, nothing may sit between the headers and the ICRC.
    pub const fn has_payload(self) -> bool {
        !matches!(
            self,
            Opcode::RcRdmaReadRequest
                | Opcode::RcAcknowledge
                | Opcode::RcAtomicAcknowledge
                | Opcode::RcCompareSwap
                | Opcode::RcFetchAdd
                | Opcode::Cnp
        )
    }

    /// A request, sent by the requester and handled by the responder (rxe's
    /// `RXE_REQ_MASK`): SENDs, RDMA WRITEs, RDMA READ Request, atomics, UD SENDs.
    pub const fn is_request(self) -> bool {
        !self.is_response() && !self.is_cnp()
    }

    /// A response, sent by the responder back to the requester (rxe's `RXE_ACK_MASK`):
    /// RDMA READ Responses, Acknowledge and ATOMIC Acknowledge.
    pub const fn is_response(self) -> bool {
        self.is_read_response() || self.is_ack()
    }

    /// One of the four RDMA READ Response opcodes.
    pub const fn is_read_response(self) -> bool {
        matches!(
            self,
            Opcode::RcRdmaReadResponseFirst
                | Opcode::RcRdmaReadResponseMiddle
                | Opcode::RcRdmaReadResponseLast
                | Opcode::RcRdmaReadResponseOnly
        )
    }

    /// Acknowledge or ATOMIC Acknowledge.
    pub const fn is_ack(self) -> bool {
        matches!(self, Opcode::RcAcknowledge | Opcode::RcAtomicAcknowledge)
    }

    /// The RoCEv2 Congestion Notification Packet.
    pub const fn is_cnp(self) -> bool {
        matches!(self, Opcode::Cnp)
    }

    /// A SEND (RC or UD, any position, with or without immediate/invalidate).
    pub const fn is_send(self) -> bool {
        matches!(
            self,
            Opcode::RcSendFirst
                | Opcode::RcSendMiddle
                | Opcode::RcSendLast
                | Opcode::RcSendLastWithImmediate
                | Opcode::RcSendOnly
                | Opcode::RcSendOnlyWithImmediate
                | Opcode::RcSendLastWithInvalidate
                | Opcode::RcSendOnlyWithInvalidate
                | Opcode::UdSendOnly
                | Opcode::UdSendOnlyWithImmediate
        )
    }

    /// An RDMA WRITE (any position, with or without immediate).
    pub const fn is_rdma_write(self) -> bool {
        matches!(
            self,
            Opcode::RcRdmaWriteFirst
                | Opcode::RcRdmaWriteMiddle
                | Opcode::RcRdmaWriteLast
                | Opcode::RcRdmaWriteLastWithImmediate
                | Opcode::RcRdmaWriteOnly
                | Opcode::RcRdmaWriteOnlyWithImmediate
        )
    }

    /// CmpSwap or FetchAdd.
    pub const fn is_atomic(self) -> bool {
        matches!(self, Opcode::RcCompareSwap | Opcode::RcFetchAdd)
    }

    /// Carries immediate data (ImmDt).
    pub const fn has_immediate(self) -> bool {
        matches!(
            self,
            Opcode::RcSendLastWithImmediate
                | Opcode::RcSendOnlyWithImmediate
                | Opcode::RcRdmaWriteLastWithImmediate
                | Opcode::RcRdmaWriteOnlyWithImmediate
                | Opcode::UdSendOnlyWithImmediate
        )
    }

    /// Carries an R_Key to invalidate (IETH).
    pub const fn has_invalidate(self) -> bool {
        matches!(self, Opcode::RcSendLastWithInvalidate | Opcode::RcSendOnlyWithInvalidate)
    }

    /// Position of the packet within its message (rxe's `RXE_START_MASK` /
    /// `RXE_MIDDLE_MASK` / `RXE_END_MASK`). Single-packet operations (ACKs, READ
    /// requests, atomics, UD SENDs, CNP) are [`Position::Only`].
    pub const fn position(self) -> Position {
        match self {
            Opcode::RcSendFirst | Opcode::RcRdmaWriteFirst | Opcode::RcRdmaReadResponseFirst => Position::First,
            Opcode::RcSendMiddle | Opcode::RcRdmaWriteMiddle | Opcode::RcRdmaReadResponseMiddle => Position::Middle,
            Opcode::RcSendLast
            | Opcode::RcSendLastWithImmediate
            | Opcode::RcSendLastWithInvalidate
            | Opcode::RcRdmaWriteLast
            | Opcode::RcRdmaWriteLastWithImmediate
            | Opcode::RcRdmaReadResponseLast => Position::Last,
            _ => Position::Only,
        }
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({:#04x})", self.name(), self.as_u8())
    }
}

impl TryFrom<u8> for Opcode {
    type Error = WireError;

    fn try_from(value: u8) -> Result<Self, Self::Error> {
        Opcode::from_u8(value)
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op.as_u8()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_u8_round_trips_and_rejects_reserved() {
        for v in 0..=u8::MAX {
            match Opcode::from_u8(v) {
                Ok(op) => assert_eq!(op.as_u8(), v),
                Err(e) => assert_eq!(e, WireError::UnknownOpcode(v)),
            }
        }
        assert!(Opcode::from_u8(0x15).is_err());
        for v in 0x18..=0x1F {
            assert!(Opcode::from_u8(v).is_err());
        }
        let count = (0..=u8::MAX).filter(|&v| Opcode::from_u8(v).is_ok()).count();
        assert_eq!(count, Opcode::ALL.len());
    }

    #[test]
    fn ext_headers_are_in_wire_order() {
        for op in Opcode::ALL {
            let hs = op.ext_headers();
            assert!(hs.windows(2).all(|w| w[0] < w[1]), "{op}");
            let len: usize = hs.iter().map(|k| k.len()).sum();
            assert_eq!(len, op.ext_headers_len());
        }
        assert_eq!(Opcode::RcRdmaWriteOnlyWithImmediate.ext_header_offset(K::ImmDt), Some(28));
        assert_eq!(Opcode::RcAtomicAcknowledge.ext_header_offset(K::AtomicAckEth), Some(16));
        assert_eq!(Opcode::UdSendOnlyWithImmediate.ext_header_offset(K::ImmDt), Some(20));
        assert_eq!(Opcode::RcSendOnly.ext_header_offset(K::Reth), None);
    }

    #[test]
    fn classes_partition_opcodes() {
        for op in Opcode::ALL {
            let n = [op.is_request(), op.is_response(), op.is_cnp()].iter().filter(|&&b| b).count();
            assert_eq!(n, 1, "{op}");
        }
        assert!(Opcode::RcRdmaReadRequest.is_request());
        assert!(!Opcode::RcRdmaReadRequest.has_payload());
        assert!(Opcode::RcRdmaReadResponseMiddle.is_response());
        assert_eq!(Opcode::RcSendLastWithInvalidate.position(), Position::Last);
        assert_eq!(Opcode::RcAcknowledge.position(), Position::Only);
    }
}
