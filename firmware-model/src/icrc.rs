//! The RoCEv2 invariant CRC (ICRC) in software.
//!
//! The ICRC is the zlib CRC-32 over: eight 0xFF bytes (standing in for the InfiniBand LRH),
//! then the IP header, UDP header, BTH, extension headers and payload (with pad), where the
//! fields that routers may change are replaced by ones:
//!
//! | header | field                            | replaced by |
//! |--------|----------------------------------|-------------|
//! | IPv4   | TOS (DSCP+ECN), TTL, checksum    | 0xFF..      |
//! | IPv6   | traffic class, flow label, hop limit | 0xFF..  |
//! | UDP    | checksum                         | 0xFFFF      |
//! | BTH    | byte 4 (FECN, BECN, 6 reserved)  | 0xFF        |
//!
//! The 32-bit value is carried in the four bytes after the payload, least-significant byte
//! first (Linux rxe stores the `u32` natively on little-endian; scapy packs it reversed).
//!
//! RoCEv1 (Ethertype 0x8915) carries the InfiniBand GRH instead of IP/UDP; its ICRC is the
//! same CRC over the 0xFF LRH stand-in, the GRH with traffic class, flow label and hop limit
//! masked (the IPv6 positions), and the BTH and what follows (IBTA Vol 1 §7.8.1, Annex A16).
//!
//! Speed: the masked headers (at most 60 bytes) are copied to the stack and masked there; the
//! payload is hashed in place with `crc32fast` (SIMD carry-less multiply where available), so
//! the cost over a plain `crc32fast::hash` of the same bytes is one small copy.

use crate::crc32::{ICRC_SEED, RESIDUE};

/// UDP destination port of RoCEv2.
pub const ROCEV2_UDP_PORT: u16 = 4791;
/// Ethertype of IPv4.
pub const ETHERTYPE_IPV4: u16 = 0x0800;
/// Ethertype of IPv6.
pub const ETHERTYPE_IPV6: u16 = 0x86DD;
/// Ethertype (TPID) of an 802.1Q VLAN tag.
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// BTH length in bytes.
pub const BTH_LEN: usize = 12;
/// ICRC length in bytes.
pub const ICRC_LEN: usize = 4;
/// UDP header length in bytes.
pub const UDP_LEN: usize = 8;

/// Network header of a RoCE frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpVersion {
    /// RoCEv2 over IPv4 (20-byte header, no options).
    V4,
    /// RoCEv2 over IPv6 (40-byte header, next header UDP).
    V6,
    /// RoCEv1: the 40-byte GRH (next header 0x1B), no UDP.
    Grh,
}

impl IpVersion {
    /// Length of the IP header (or GRH) the ICRC covers.
    pub const fn header_len(self) -> usize {
        match self {
            IpVersion::V4 => 20,
            IpVersion::V6 | IpVersion::Grh => 40,
        }
    }

    /// Length of the UDP header after it (0 for RoCEv1).
    pub const fn udp_len(self) -> usize {
        match self {
            IpVersion::Grh => 0,
            _ => UDP_LEN,
        }
    }
}

/// Ethertype of RoCEv1.
pub const ETHERTYPE_ROCE_V1: u16 = 0x8915;

/// Where the ICRC-covered bytes of a frame are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcrcLayout {
    /// Whether the frame carries an 802.1Q tag.
    pub vlan: bool,
    /// IP version.
    pub ip: IpVersion,
    /// Offset of the IP header in the frame (14, or 18 with a VLAN tag).
    pub ip_offset: usize,
    /// End of the IP datagram (from the IP length field); the ICRC is its last four bytes.
    /// Bytes after it are Ethernet padding.
    pub ip_end: usize,
}

impl IcrcLayout {
    /// Offset of the UDP header.
    pub const fn udp_offset(&self) -> usize {
        self.ip_offset + self.ip.header_len()
    }
    /// Offset of the BTH.
    pub const fn bth_offset(&self) -> usize {
        self.udp_offset() + self.ip.udp_len()
    }
    /// Offset of the ICRC.
    pub const fn icrc_offset(&self) -> usize {
        self.ip_end - ICRC_LEN
    }
}

/// Why a frame has no ICRC to compute or check.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IcrcError {
    /// The frame is neither Ethernet(/802.1Q)/IPv4-or-IPv6/UDP to port 4791 nor RoCEv1.
    #[error("not a RoCEv2 frame: {0}")]
    NotRoce(&'static str),
    /// The IP length says the datagram is too short to hold UDP, BTH and ICRC.
    #[error("IP datagram of {len} bytes is too short for UDP + BTH + ICRC (need {need})")]
    TooShort {
        /// IP datagram length (header included).
        len: usize,
        /// Minimum length.
        need: usize,
    },
    /// The IP length runs past the end of the frame.
    #[error("IP datagram ends at byte {ip_end} but the frame has only {frame_len} bytes")]
    Truncated {
        /// End of the IP datagram according to its length field.
        ip_end: usize,
        /// Frame length.
        frame_len: usize,
    },
}

fn be16(f: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*f.get(at)?, *f.get(at + 1)?]))
}

/// Find the ICRC-covered region of an Ethernet frame (without FCS).
///
/// Accepts Ethernet II with at most one 802.1Q tag, IPv4 with IHL 5 and protocol UDP, or
/// IPv6 with next header UDP, and UDP destination port 4791 — the same classification the
/// HDL block `roce_icrc` makes.
pub fn locate(frame: &[u8]) -> Result<IcrcLayout, IcrcError> {
    let mut et = be16(frame, 12).ok_or(IcrcError::NotRoce("shorter than an Ethernet header"))?;
    let mut ip_offset = 14;
    let vlan = et == ETHERTYPE_VLAN;
    if vlan {
        et = be16(frame, 16).ok_or(IcrcError::NotRoce("truncated 802.1Q tag"))?;
        ip_offset = 18;
    }
    let ip = match et {
        ETHERTYPE_IPV4 => IpVersion::V4,
        ETHERTYPE_IPV6 => IpVersion::V6,
        ETHERTYPE_ROCE_V1 => IpVersion::Grh,
        _ => return Err(IcrcError::NotRoce("ethertype is neither IPv4, IPv6 nor RoCEv1")),
    };
    if ip == IpVersion::Grh {
        // the fields the classification reads end with the next header byte
        if frame.len() < ip_offset + 7 {
            return Err(IcrcError::NotRoce("frame ends inside the GRH"));
        }
        if frame[ip_offset] >> 4 != 6 {
            return Err(IcrcError::NotRoce("GRH IP version is not 6"));
        }
        if frame[ip_offset + 6] != 0x1B {
            return Err(IcrcError::NotRoce("GRH next header is not a BTH"));
        }
        let len = 40 + usize::from(be16(frame, ip_offset + 4).unwrap_or(0));
        return finish(frame, vlan, ip, ip_offset, len);
    }
    let udp = ip_offset + ip.header_len();
    let dport = be16(frame, udp + 2).ok_or(IcrcError::NotRoce("frame ends before the UDP port"))?;
    let (ver_ok, proto, len) = match ip {
        IpVersion::V4 => {
            (frame[ip_offset] == 0x45, frame[ip_offset + 9], usize::from(be16(frame, ip_offset + 2).unwrap_or(0)))
        }
        IpVersion::V6 | IpVersion::Grh => (
            frame[ip_offset] >> 4 == 6,
            frame[ip_offset + 6],
            40 + usize::from(be16(frame, ip_offset + 4).unwrap_or(0)),
        ),
    };
    if !ver_ok {
        return Err(IcrcError::NotRoce("IP version/IHL not 4/5 or 6"));
    }
    if proto != 17 {
        return Err(IcrcError::NotRoce("IP payload is not UDP"));
    }
    if dport != ROCEV2_UDP_PORT {
        return Err(IcrcError::NotRoce("UDP destination port is not 4791"));
    }
    finish(frame, vlan, ip, ip_offset, len)
}

/// The length checks common to every encapsulation.
fn finish(frame: &[u8], vlan: bool, ip: IpVersion, ip_offset: usize, len: usize) -> Result<IcrcLayout, IcrcError> {
    let need = ip.header_len() + ip.udp_len() + BTH_LEN + ICRC_LEN;
    if len < need {
        return Err(IcrcError::TooShort { len, need });
    }
    let ip_end = ip_offset + len;
    if ip_end > frame.len() {
        return Err(IcrcError::Truncated { ip_end, frame_len: frame.len() });
    }
    Ok(IcrcLayout { vlan, ip, ip_offset, ip_end })
}

/// The variant fields of an IPv4 RoCEv2 packet: (offset from the IP header, bits forced to
/// one). TOS, TTL, header checksum, UDP checksum, BTH byte 4 (FECN, BECN, reserved).
/// The HDL's masking constants are generated from this table (`hdlgen`).
pub const IPV4_MASKS: [(usize, u8); 7] =
    [(1, 0xFF), (8, 0xFF), (10, 0xFF), (11, 0xFF), (26, 0xFF), (27, 0xFF), (32, 0xFF)];

/// The variant fields of an IPv6 RoCEv2 packet: traffic class (low nibble of byte 0, high
/// nibble of byte 1), flow label (rest of byte 1, bytes 2-3), hop limit, UDP checksum, BTH
/// byte 4.
pub const IPV6_MASKS: [(usize, u8); 8] =
    [(0, 0x0F), (1, 0xFF), (2, 0xFF), (3, 0xFF), (7, 0xFF), (46, 0xFF), (47, 0xFF), (52, 0xFF)];

/// The variant fields of a RoCEv1 packet: the GRH's traffic class, flow label and hop
/// limit (the IPv6 positions) and BTH byte 4 right after the GRH.
pub const GRH_MASKS: [(usize, u8); 6] = [(0, 0x0F), (1, 0xFF), (2, 0xFF), (3, 0xFF), (7, 0xFF), (44, 0xFF)];

/// The variant-field table of an encapsulation.
pub const fn masks(ip: IpVersion) -> &'static [(usize, u8)] {
    match ip {
        IpVersion::V4 => &IPV4_MASKS,
        IpVersion::V6 => &IPV6_MASKS,
        IpVersion::Grh => &GRH_MASKS,
    }
}

/// Copy the IP, UDP and BTH headers into `buf` with the variant fields set to ones;
/// returns the number of bytes written.
fn masked_headers(frame: &[u8], l: &IcrcLayout, buf: &mut [u8; 60]) -> usize {
    let n = l.ip.header_len() + l.ip.udp_len() + BTH_LEN;
    buf[..n].copy_from_slice(&frame[l.ip_offset..l.ip_offset + n]);
    for &(at, ones) in masks(l.ip) {
        buf[at] |= ones;
    }
    n
}

/// The ICRC of a located frame: CRC over the covered bytes, excluding the ICRC field itself.
pub fn compute(frame: &[u8], l: &IcrcLayout) -> u32 {
    let mut buf = [0u8; 60];
    let n = masked_headers(frame, l, &mut buf);
    // crc32fast keeps the finalised (inverted) value as its state.
    let mut h = crc32fast::Hasher::new_with_initial(!ICRC_SEED);
    h.update(&buf[..n]);
    h.update(&frame[l.ip_offset + n..l.icrc_offset()]);
    h.finalize()
}

/// Locate and compute the ICRC a frame should carry.
pub fn icrc(frame: &[u8]) -> Result<u32, IcrcError> {
    let l = locate(frame)?;
    Ok(compute(frame, &l))
}

/// The ICRC the frame carries (read least-significant byte first).
pub fn carried(frame: &[u8], l: &IcrcLayout) -> u32 {
    let o = l.icrc_offset();
    u32::from_le_bytes([frame[o], frame[o + 1], frame[o + 2], frame[o + 3]])
}

/// Whether the frame's ICRC is correct.
pub fn check(frame: &[u8]) -> Result<bool, IcrcError> {
    let l = locate(frame)?;
    Ok(compute(frame, &l) == carried(frame, &l))
}

/// Check by the residue method (CRC over the covered bytes *including* the ICRC), the way
/// the HDL checks; equivalent to [`check`], kept for cross-checking.
pub fn check_residue(frame: &[u8]) -> Result<bool, IcrcError> {
    let l = locate(frame)?;
    let mut buf = [0u8; 60];
    let n = masked_headers(frame, &l, &mut buf);
    let raw = crate::crc32::raw_update(ICRC_SEED, &buf[..n]);
    let raw = crate::crc32::raw_update(raw, &frame[l.ip_offset + n..l.ip_end]);
    Ok(raw == RESIDUE)
}

/// Compute the ICRC and write it into the frame's ICRC field; returns the value.
pub fn fill(frame: &mut [u8]) -> Result<u32, IcrcError> {
    let l = locate(frame)?;
    let v = compute(frame, &l);
    let o = l.icrc_offset();
    frame[o..o + 4].copy_from_slice(&v.to_le_bytes());
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A SEND ONLY over IPv4 (hand-assembled, ICRC slot zero).
    fn v4_frame(payload: usize) -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 0x08;
        let ip_len = 20 + 8 + 12 + payload + 4;
        f.extend_from_slice(&[0x45, 0x02]);
        f.extend_from_slice(&(ip_len as u16).to_be_bytes());
        f.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0x12, 0x34, 10, 0, 0, 1, 10, 0, 0, 2]);
        f.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7]);
        f.extend_from_slice(&((8 + 12 + payload + 4) as u16).to_be_bytes());
        f.extend_from_slice(&[0, 0]);
        f.extend_from_slice(&[0x04, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x11, 0x80, 0, 0, 5]);
        f.extend((0..payload).map(|i| i as u8));
        f.extend_from_slice(&[0; 4]);
        f
    }

    fn slow_icrc(frame: &[u8]) -> u32 {
        let l = locate(frame).unwrap();
        let mut buf = [0u8; 60];
        let n = masked_headers(frame, &l, &mut buf);
        let mut v = vec![0xFFu8; 8];
        v.extend_from_slice(&buf[..n]);
        v.extend_from_slice(&frame[l.ip_offset + n..l.icrc_offset()]);
        crc32fast::hash(&v)
    }

    #[test]
    fn fast_equals_reference_and_residue() {
        for p in [0usize, 1, 4, 100, 1024] {
            let mut f = v4_frame(p);
            let v = fill(&mut f).unwrap();
            assert_eq!(v, slow_icrc(&f));
            assert!(check(&f).unwrap());
            assert!(check_residue(&f).unwrap());
            // Masked fields do not matter; covered ones do.
            f[15] ^= 0xFC; // TOS
            f[22] = 1; // TTL
            assert!(check(&f).unwrap());
            f[14 + 28 + 4] ^= 0xC0; // FECN/BECN
            assert!(check(&f).unwrap());
            f[14 + 28 + 5] ^= 1; // dest QP
            assert!(!check(&f).unwrap());
            assert!(!check_residue(&f).unwrap());
        }
    }

    #[test]
    fn padding_after_ip_end_is_ignored() {
        let mut f = v4_frame(0); // 58 bytes; a MAC pads it to 60
        fill(&mut f).unwrap();
        f.extend_from_slice(&[0xAA, 0xBB]);
        assert!(check(&f).unwrap());
    }

    #[test]
    fn classification_errors() {
        let f = v4_frame(8);
        assert!(matches!(locate(&f[..20]), Err(IcrcError::NotRoce(_))));
        let mut g = f.clone();
        g[14 + 23] = 0x35; // UDP port 4789... well, not 4791
        assert!(matches!(locate(&g), Err(IcrcError::NotRoce(_))));
        let mut g = f.clone();
        g[17] = 30; // IP total length 30
        assert!(matches!(locate(&g), Err(IcrcError::TooShort { .. })));
        let g = &f[..f.len() - 1];
        assert!(matches!(locate(g), Err(IcrcError::Truncated { .. })));
    }
}
