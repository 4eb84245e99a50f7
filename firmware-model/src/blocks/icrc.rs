//! Model of `hdl/rtl/roce_icrc.sv`: ICRC insert (TX) or check (RX) on an AXI4-Stream.
//!
//! The block passes every frame through unchanged in shape (same beats, same `tkeep`) and
//! decides per frame, exactly like the HDL:
//!
//! - **RoCE** (`tuser[1]`): Ethernet, at most one 802.1Q tag, IPv4 with version/IHL 0x45 and
//!   protocol 17 or IPv6 with next header 17, UDP destination port 4791, and the frame long
//!   enough to hold that port.
//! - **Malformed** (RoCE only): the IP length gives a datagram shorter than IP + UDP + BTH +
//!   ICRC, or one that runs past the end of the frame. Ethernet padding after the datagram is
//!   allowed and ignored.
//! - **Insert** mode writes the ICRC into the last four bytes of the IP datagram of every
//!   RoCE frame that is not malformed; `tuser[0]` = input error OR malformed.
//! - **Check** mode leaves the data alone; `tuser[0]` = input error OR malformed OR wrong ICRC.
//!
//! `tuser` is meaningful on the last beat only (zero on the others). The input `tuser[0]` of
//! any beat of a frame marks the frame as errored (e.g. the MAC saw a bad FCS).

use super::axis::AxisBeat;
use crate::icrc::{self, IcrcError};
use std::collections::VecDeque;

/// Whether the block fills or checks the ICRC (the HDL parameter `INSERT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IcrcMode {
    /// TX: compute and write the ICRC.
    Insert,
    /// RX: compare the carried ICRC with the computed one.
    Check,
}

/// The per-frame result, as the HDL reports it on `m_axis_tuser` of the last beat.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IcrcVerdict {
    /// `tuser[1]`: the frame is RoCEv2.
    pub roce: bool,
    /// `tuser[0]`: the frame is errored (input error, malformed, or bad ICRC on check).
    pub error: bool,
}

impl IcrcVerdict {
    /// The two `tuser` bits `{roce, error}`.
    pub fn tuser(self) -> u8 {
        (u8::from(self.roce) << 1) | u8::from(self.error)
    }

    /// Decode the two `tuser` bits.
    pub fn from_tuser(u: u8) -> Self {
        IcrcVerdict { roce: u & 2 != 0, error: u & 1 != 0 }
    }
}

/// Fixed latency of the HDL block in cycles: from the edge at which a beat leaves the input
/// register (which it does as soon as its successor is accepted, or at once if it is the
/// last beat of its frame) to the edge at which it is in the output register.
pub const LATENCY: usize = 5;

/// Process one whole frame in place; returns the verdict.
pub fn process_frame(mode: IcrcMode, frame: &mut [u8], input_error: bool) -> IcrcVerdict {
    let (roce, malformed, ok) = match icrc::locate(frame) {
        Ok(l) => {
            let ok = match mode {
                IcrcMode::Insert => {
                    let v = icrc::compute(frame, &l);
                    let o = l.icrc_offset();
                    frame[o..o + 4].copy_from_slice(&v.to_le_bytes());
                    true
                }
                IcrcMode::Check => icrc::compute(frame, &l) == icrc::carried(frame, &l),
            };
            (true, false, ok)
        }
        Err(IcrcError::NotRoce(_)) => (false, false, true),
        Err(IcrcError::TooShort { .. } | IcrcError::Truncated { .. }) => (true, true, false),
    };
    let error = input_error || malformed || (mode == IcrcMode::Check && roce && !ok);
    IcrcVerdict { roce, error }
}

/// Beat-level model: accepts input beats, emits the same beats with data and `tuser` as the
/// HDL produces them. Output for a frame becomes available once its last beat is pushed.
#[derive(Debug)]
pub struct RoceIcrc {
    mode: IcrcMode,
    bytes: usize,
    cur: Vec<AxisBeat>,
    out: VecDeque<AxisBeat>,
}

impl RoceIcrc {
    /// A block for a datapath of `bytes` lanes (8, 32 or 64).
    pub fn new(mode: IcrcMode, bytes: usize) -> Self {
        RoceIcrc { mode, bytes, cur: Vec::new(), out: VecDeque::new() }
    }

    /// Accept one input beat (`user` bit 0 = input error).
    pub fn push(&mut self, beat: AxisBeat) {
        let last = beat.last;
        self.cur.push(beat);
        if !last {
            return;
        }
        let beats = std::mem::take(&mut self.cur);
        let input_error = beats.iter().any(|b| b.user & 1 != 0);
        let mut frame: Vec<u8> = beats.iter().flat_map(|b| b.bytes().iter().copied()).collect();
        let v = process_frame(self.mode, &mut frame, input_error);
        let mut off = 0;
        for mut b in beats {
            let n = b.len();
            b.data[..n].copy_from_slice(&frame[off..off + n]);
            off += n;
            b.user = if b.last { v.tuser() } else { 0 };
            debug_assert_eq!(b.data.len(), self.bytes);
            self.out.push_back(b);
        }
    }

    /// Take the next output beat, if any.
    pub fn pop(&mut self) -> Option<AxisBeat> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::axis::{join_frame, split_frame};

    fn frame() -> Vec<u8> {
        let mut f = vec![0u8; 14];
        f[12] = 0x86;
        f[13] = 0xDD;
        let payload = 13usize;
        let pl = 8 + 12 + payload + 3 + 4;
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&(pl as u16).to_be_bytes());
        f.extend_from_slice(&[17, 64]);
        f.extend((0..32).map(|i| i as u8));
        f.extend_from_slice(&[0xC0, 0x01, 0x12, 0xB7]);
        f.extend_from_slice(&(pl as u16).to_be_bytes());
        f.extend_from_slice(&[0xAB, 0xCD]);
        f.extend_from_slice(&[0x04, 0x30, 0xFF, 0xFF, 0, 0, 0, 7, 0, 0, 0, 1]);
        f.extend((0..payload + 3).map(|i| i as u8));
        f.extend_from_slice(&[0; 4]);
        f
    }

    #[test]
    fn insert_then_check() {
        let mut ins = RoceIcrc::new(IcrcMode::Insert, 8);
        let mut chk = RoceIcrc::new(IcrcMode::Check, 8);
        for b in split_frame(&frame(), 8, 0) {
            ins.push(b);
        }
        let mut out = Vec::new();
        while let Some(b) = ins.pop() {
            out.push(b.clone());
            chk.push(b);
        }
        let (f, u) = join_frame(&out);
        assert_eq!(IcrcVerdict::from_tuser(u), IcrcVerdict { roce: true, error: false });
        assert!(icrc::check(&f).unwrap());
        let mut res = Vec::new();
        while let Some(b) = chk.pop() {
            res.push(b);
        }
        assert_eq!(join_frame(&res).1, 0b10);
        let mut bad = f.clone();
        bad[70] ^= 1; // BTH PSN (byte 60 would be the masked UDP checksum)
        assert_eq!(process_frame(IcrcMode::Check, &mut bad, false), IcrcVerdict { roce: true, error: true });
    }
}
