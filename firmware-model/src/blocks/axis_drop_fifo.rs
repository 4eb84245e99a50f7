//! Model of `hdl/rtl/roce_axis_drop_fifo.sv`: a store-and-forward frame FIFO that drops
//! errored frames (behind `roce_icrc` in check mode on the RX path).
//!
//! Frame-granular, like the HDL with `DROP_WHEN_FULL=0`: a frame comes out once its last
//! beat is pushed, if it is good. Per frame, in this order of precedence:
//!
//! - **overflow**: longer than `depth` beats (it could never fit): dropped.
//! - **bad**: its last beat has `user` bit `err_bit` set: dropped. The error bit of other
//!   beats is ignored.
//! - **good**: passed on unchanged (data, `keep`, `last`), each beat's `user` with bit
//!   `err_bit` removed (the bits above it move down one), and with the frame's byte count
//!   (`m_axis_tlen`: set `keep` bits over all its beats) on every beat.
//!
//! The HDL with `DROP_WHEN_FULL=0` loses no other frame whatever the backpressure (it stalls
//! its input instead), so this model predicts its output exactly. With `DROP_WHEN_FULL=1` the
//! HDL may also drop frames that meet a full FIFO; which ones depends on timing.

use super::axis::AxisBeat;
use std::collections::VecDeque;

/// Cycles from the cycle in which a frame's last beat is accepted to the cycle in which its
/// first beat is on `m_axis` (valid), when the read side is idle.
pub const LATENCY: u64 = 3;

/// Jumbo frame size the default depth is sized for (two of them).
pub const JUMBO_BYTES: usize = 9216;

/// The HDL's default `DEPTH` for a datapath of `bytes` lanes: two jumbo frames, rounded up
/// to a power of two (8 lanes: 4096, 32: 1024, 64: 512).
pub fn default_depth(bytes: usize) -> usize {
    (2 * JUMBO_BYTES.div_ceil(bytes)).next_power_of_two()
}

/// Frame counts, as the HDL's `*_count` outputs report them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropFifoStats {
    /// Frames committed and passed on (`good_count`).
    pub good: u64,
    /// Frames dropped for the error bit (`drop_bad_count`).
    pub bad: u64,
    /// Frames dropped for being longer than the FIFO (`drop_overflow_count`).
    pub overflow: u64,
    /// Frames dropped because the FIFO ran full (`drop_full_count`; HDL `DROP_WHEN_FULL=1`
    /// only, never counted by this model).
    pub full: u64,
}

/// What happened to one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameFate {
    /// Passed on.
    Good,
    /// Dropped: error bit on the last beat.
    Bad,
    /// Dropped: longer than the FIFO.
    Overflow,
}

/// Beat-level model with the same push/pop API as
/// [`RoceIcrc`](super::icrc::RoceIcrc).
#[derive(Debug)]
pub struct RoceAxisDropFifo {
    bytes: usize,
    depth: usize,
    user_w: u32,
    err_bit: u32,
    cur: Vec<AxisBeat>,
    cur_len: usize,
    out: VecDeque<(AxisBeat, u16)>,
    stats: DropFifoStats,
    fates: Vec<FrameFate>,
}

impl RoceAxisDropFifo {
    /// The default configuration for `bytes` lanes (8, 32 or 64): default depth, `tuser`
    /// `{roce, error}` (USER_W = 2, ERR_BIT = 0).
    pub fn new(bytes: usize) -> Self {
        Self::with_params(bytes, default_depth(bytes), 2, 0)
    }

    /// A FIFO of `depth` beats, `user_w` input `tuser` bits, error bit `err_bit`.
    pub fn with_params(bytes: usize, depth: usize, user_w: u32, err_bit: u32) -> Self {
        assert!(depth >= 2 && depth.is_power_of_two(), "depth must be a power of two >= 2");
        assert!((1..=8).contains(&user_w) && err_bit < user_w, "bad tuser layout");
        RoceAxisDropFifo {
            bytes,
            depth,
            user_w,
            err_bit,
            cur: Vec::new(),
            cur_len: 0,
            out: VecDeque::new(),
            stats: DropFifoStats::default(),
            fates: Vec::new(),
        }
    }

    /// Depth in beats.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Datapath width in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The output `tuser` of a beat with input `tuser` `u`: bit `err_bit` removed.
    pub fn out_user(&self, u: u8) -> u8 {
        let u = u & (((1u16 << self.user_w) - 1) as u8);
        let low = u & ((1u8 << self.err_bit) - 1);
        let high = (u >> (self.err_bit + 1)) << self.err_bit;
        low | high
    }

    /// Accept one input beat.
    pub fn push(&mut self, beat: AxisBeat) {
        let last = beat.last;
        let err = (beat.user >> self.err_bit) & 1 != 0;
        self.cur_len += 1;
        if self.cur_len <= self.depth {
            self.cur.push(beat);
        } else {
            self.cur.clear();
        }
        if !last {
            return;
        }
        let fate = if self.cur_len > self.depth {
            self.stats.overflow += 1;
            FrameFate::Overflow
        } else if err {
            self.stats.bad += 1;
            FrameFate::Bad
        } else {
            self.stats.good += 1;
            FrameFate::Good
        };
        self.fates.push(fate);
        self.cur_len = 0;
        let beats = std::mem::take(&mut self.cur);
        if fate == FrameFate::Good {
            let tlen = beats.iter().map(|b| b.keep.count_ones() as usize).sum::<usize>() as u16;
            for mut b in beats {
                debug_assert_eq!(b.data.len(), self.bytes);
                b.user = self.out_user(b.user);
                self.out.push_back((b, tlen));
            }
        }
    }

    /// Take the next output beat, if any.
    pub fn pop(&mut self) -> Option<AxisBeat> {
        self.out.pop_front().map(|(b, _)| b)
    }

    /// Take the next output beat with its `m_axis_tlen` (the frame's byte count).
    pub fn pop_with_tlen(&mut self) -> Option<(AxisBeat, u16)> {
        self.out.pop_front()
    }

    /// Frame counts so far.
    pub fn stats(&self) -> DropFifoStats {
        self.stats
    }

    /// The fate of every completed input frame, in order.
    pub fn fates(&self) -> &[FrameFate] {
        &self.fates
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blocks::axis::{join_frame, split_frame};

    #[test]
    fn default_depths() {
        assert_eq!(default_depth(8), 4096);
        assert_eq!(default_depth(32), 1024);
        assert_eq!(default_depth(64), 512);
    }

    #[test]
    fn drops_bad_and_oversize() {
        let mut f = RoceAxisDropFifo::with_params(8, 4, 2, 0);
        let good: Vec<u8> = (0..32).collect();
        let big: Vec<u8> = (0..33).collect();
        for (fr, u) in [(&good, 0b10), (&good, 0b11), (&big, 0b10), (&good, 0b00)] {
            for b in split_frame(fr, 8, u) {
                f.push(b);
            }
        }
        let out: Vec<_> = std::iter::from_fn(|| f.pop()).collect();
        assert_eq!(out.len(), 8);
        assert_eq!(join_frame(&out[..4]), (good.clone(), 1));
        assert_eq!(join_frame(&out[4..]), (good.clone(), 0));
        assert_eq!(f.stats(), DropFifoStats { good: 2, bad: 1, overflow: 1, full: 0 });
        assert_eq!(f.fates(), [FrameFate::Good, FrameFate::Bad, FrameFate::Overflow, FrameFate::Good]);
    }

    #[test]
    fn user_compaction() {
        let f = RoceAxisDropFifo::with_params(8, 4, 3, 1);
        assert_eq!(f.out_user(0b111), 0b11);
        assert_eq!(f.out_user(0b101), 0b11);
        assert_eq!(f.out_user(0b010), 0b00);
        assert_eq!(f.out_user(0b100), 0b10);
        let g = RoceAxisDropFifo::with_params(8, 4, 1, 0);
        assert_eq!(g.out_user(1), 0);
    }
}
