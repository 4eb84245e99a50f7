//! Ethernet II with an optional single 802.1Q tag.

use super::error::{BuildError, Layer, WireError};
use super::util::check_range;

/// A 48-bit MAC address, in wire order.
pub type MacAddr = [u8; 6];

/// Ethertype of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethertype of ARP.
pub const ETHERTYPE_ARP: u16 = 0x0806;
/// Ethertype (TPID) of an 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// Ethertype of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// Ethertype of RoCE v1 (IB GRH directly over Ethernet; not parsed by this module).
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;

/// Length of an untagged Ethernet II header.
pub const ETH_HEADER_LEN: usize = 14;
/// Length of an 802.1Q tag.
pub const VLAN_TAG_LEN: usize = 4;
/// Minimum Ethernet frame length without FCS; shorter frames are padded to it.
pub const ETH_MIN_FRAME_LEN: usize = 60;

/// Decoded 802.1Q tag control information (the 16 bits after TPID 0x8100).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Vlan {
    /// Priority code point, 3 bits.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN identifier, 12 bits.
    pub vid: u16,
}

impl Vlan {
    /// Decodes a TCI.
    pub const fn from_tci(tci: u16) -> Self {
        Vlan { pcp: (tci >> 13) as u8, dei: tci & 0x1000 != 0, vid: tci & 0x0FFF }
    }

    /// Encodes the TCI.
    ///
    /// # Errors
    /// [`BuildError::FieldOutOfRange`] if `pcp > 7` or `vid > 4095`.
    pub fn tci(&self) -> Result<u16, BuildError> {
        check_range("vlan.pcp", self.pcp.into(), 7)?;
        check_range("vlan.vid", self.vid.into(), 0x0FFF)?;
        Ok(u16::from(self.pcp) << 13 | u16::from(self.dei) << 12 | self.vid)
    }
}

/// Zero-copy view of an Ethernet II header, with or without one 802.1Q tag.
///
/// ```text
///  0                   1                   2                   3
///  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                    destination MAC (6 B)                      |
/// +                               +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |                               |                               |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+                               +
/// |                      source MAC (6 B)                         |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |   TPID 0x8100 (optional)      | PCP |D|        VID            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// |          ethertype            |
/// +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthernetHeader<'a> {
    base: &'a [u8; ETH_HEADER_LEN],
    /// TCI and inner ethertype, present when the outer ethertype is 0x8100.
    tag: Option<&'a [u8; VLAN_TAG_LEN]>,
}

impl<'a> EthernetHeader<'a> {
    /// Parses the header at the start of `frame`. A single 802.1Q tag (TPID 0x8100) is
    /// decoded; anything else (including a second tag) is left to the ethertype.
    ///
    /// # Errors
    /// [`WireError::Truncated`] at [`Layer::Ethernet`] or [`Layer::Vlan`].
    pub fn parse(frame: &'a [u8]) -> Result<Self, WireError> {
        let (base, rest) = frame.split_first_chunk::<ETH_HEADER_LEN>().ok_or(WireError::Truncated {
            layer: Layer::Ethernet,
            need: ETH_HEADER_LEN,
            have: frame.len(),
        })?;
        let tag = if u16::from_be_bytes([base[12], base[13]]) == ETHERTYPE_VLAN {
            Some(rest.first_chunk::<VLAN_TAG_LEN>().ok_or(WireError::Truncated {
                layer: Layer::Vlan,
                need: ETH_HEADER_LEN + VLAN_TAG_LEN,
                have: frame.len(),
            })?)
        } else {
            None
        };
        Ok(EthernetHeader { base, tag })
    }

    /// Destination MAC address.
    pub fn dst(&self) -> MacAddr {
        let [d0, d1, d2, d3, d4, d5, ..] = *self.base;
        [d0, d1, d2, d3, d4, d5]
    }

    /// Source MAC address.
    pub fn src(&self) -> MacAddr {
        let [_, _, _, _, _, _, s0, s1, s2, s3, s4, s5, ..] = *self.base;
        [s0, s1, s2, s3, s4, s5]
    }

    /// The 802.1Q tag, if the frame has one.
    pub fn vlan(&self) -> Option<Vlan> {
        self.tag.map(|t| Vlan::from_tci(u16::from_be_bytes([t[0], t[1]])))
    }

    /// The ethertype of the payload (after the VLAN tag, if any).
    pub fn ethertype(&self) -> u16 {
        match self.tag {
            Some(t) => u16::from_be_bytes([t[2], t[3]]),
            None => u16::from_be_bytes([self.base[12], self.base[13]]),
        }
    }

    /// Header length: 14, or 18 with a VLAN tag.
    pub fn header_len(&self) -> usize {
        if self.tag.is_some() {
            ETH_HEADER_LEN + VLAN_TAG_LEN
        } else {
            ETH_HEADER_LEN
        }
    }

    /// The decoded fields (the ethertype is not part of them: the builder derives it).
    pub fn fields(&self) -> EthernetFields {
        EthernetFields { dst: self.dst(), src: self.src(), vlan: self.vlan() }
    }
}

/// Owned Ethernet header fields for the builder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EthernetFields {
    /// Destination MAC.
    pub dst: MacAddr,
    /// Source MAC.
    pub src: MacAddr,
    /// Optional 802.1Q tag.
    pub vlan: Option<Vlan>,
}

impl EthernetFields {
    /// Header length: 14, or 18 with a VLAN tag.
    pub fn header_len(&self) -> usize {
        if self.vlan.is_some() {
            ETH_HEADER_LEN + VLAN_TAG_LEN
        } else {
            ETH_HEADER_LEN
        }
    }

    /// Writes the header with the given payload ethertype to the start of `out`;
    /// returns the bytes written.
    ///
    /// # Errors
    /// [`BuildError::BufferTooSmall`], or [`BuildError::FieldOutOfRange`] for a bad VLAN
    /// tag.
    pub fn write_to(&self, ethertype: u16, out: &mut [u8]) -> Result<usize, BuildError> {
        let len = self.header_len();
        let have = out.len();
        let out = out.get_mut(..len).ok_or(BuildError::BufferTooSmall { need: len, have })?;
        let (macs, rest) = out.split_first_chunk_mut::<12>().ok_or(BuildError::BufferTooSmall { need: len, have })?;
        macs[..6].copy_from_slice(&self.dst);
        macs[6..].copy_from_slice(&self.src);
        match self.vlan {
            Some(vlan) => {
                let tci = vlan.tci()?;
                let mut tag = [0u8; 6];
                tag[..2].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
                tag[2..4].copy_from_slice(&tci.to_be_bytes());
                tag[4..].copy_from_slice(&ethertype.to_be_bytes());
                rest.copy_from_slice(&tag);
            }
            None => rest.copy_from_slice(&ethertype.to_be_bytes()),
        }
        Ok(len)
    }
}
