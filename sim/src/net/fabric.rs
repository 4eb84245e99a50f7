//! A simulated Ethernet link: latency, bandwidth, loss, reordering, duplication, bit
//! corruption and ECN CE marking, all driven by one seeded RNG so a run is reproducible.
//!
//! A frame sent at cycle `t` leaves the sender's side of the link when the link is free
//! (serialisation at the link rate, with 24 bytes of FCS, preamble and gap per frame) and
//! arrives `latency` cycles later, plus a random extra delay if it is chosen for reordering.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Link impairments and speed.
#[derive(Clone, Copy, Debug)]
pub struct LinkConfig {
    /// Propagation + switch latency in cycles.
    pub latency: u64,
    /// Link bytes per cycle (100 Gb/s at 250 MHz = 50).
    pub bytes_per_cycle: f64,
    /// Probability a frame is lost.
    pub loss: f64,
    /// Probability a frame is delayed by up to `reorder_delay` extra cycles.
    pub reorder: f64,
    /// Maximum extra delay of a reordered frame.
    pub reorder_delay: u64,
    /// Probability a frame is delivered twice.
    pub dup: f64,
    /// Probability one bit of a frame is flipped.
    pub corrupt: f64,
    /// Probability an ECN-capable frame is marked CE.
    pub ecn: f64,
}

impl Default for LinkConfig {
    /// A clean 100 Gb/s link with 1 µs latency at 250 MHz.
    fn default() -> Self {
        LinkConfig {
            latency: 250,
            bytes_per_cycle: 50.0,
            loss: 0.0,
            reorder: 0.0,
            reorder_delay: 2000,
            dup: 0.0,
            corrupt: 0.0,
            ecn: 0.0,
        }
    }
}

/// What happened on a link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Frames offered.
    pub sent: u64,
    /// Frames delivered (duplicates counted).
    pub delivered: u64,
    /// Frames lost.
    pub lost: u64,
    /// Frames reordered.
    pub reordered: u64,
    /// Frames duplicated.
    pub duplicated: u64,
    /// Frames corrupted.
    pub corrupted: u64,
    /// Frames CE-marked.
    pub ecn_marked: u64,
}

/// One direction of a link.
#[derive(Debug)]
pub struct Link {
    cfg: LinkConfig,
    rng: ChaCha8Rng,
    heap: BinaryHeap<Reverse<(u64, u64, Vec<u8>)>>,
    seq: u64,
    free_at: u64,
    /// Counters.
    pub stats: LinkStats,
}

/// Set CE on an ECN-capable IPv4/IPv6 frame (IPv4 header checksum updated). Returns whether
/// it was marked.
pub fn mark_ce(f: &mut [u8]) -> bool {
    let (et, ip) = match f.get(12..14) {
        Some([0x81, 0x00]) => (f.get(16..18).map(|b| u16::from_be_bytes([b[0], b[1]])), 18),
        Some(b) => (Some(u16::from_be_bytes([b[0], b[1]])), 14),
        None => return false,
    };
    match et {
        Some(0x0800) if f.len() >= ip + 20 => {
            if f[ip + 1] & 3 == 0 {
                return false;
            }
            f[ip + 1] |= 3;
            f[ip + 10] = 0;
            f[ip + 11] = 0;
            let mut sum = 0u32;
            for i in (0..20).step_by(2) {
                sum += u32::from(u16::from_be_bytes([f[ip + i], f[ip + i + 1]]));
            }
            while sum > 0xFFFF {
                sum = (sum & 0xFFFF) + (sum >> 16);
            }
            f[ip + 10..ip + 12].copy_from_slice(&(!(sum as u16)).to_be_bytes());
            true
        }
        Some(0x86DD) if f.len() >= ip + 40 => {
            // traffic class straddles bytes 0 and 1: its ECN bits are bits 4..5 of byte 1
            if (f[ip + 1] >> 4) & 3 == 0 {
                return false;
            }
            f[ip + 1] |= 3 << 4;
            true
        }
        _ => false,
    }
}

impl Link {
    /// A link with its own RNG stream.
    pub fn new(cfg: LinkConfig, seed: u64) -> Self {
        Link {
            cfg,
            rng: ChaCha8Rng::seed_from_u64(seed),
            heap: BinaryHeap::new(),
            seq: 0,
            free_at: 0,
            stats: LinkStats::default(),
        }
    }

    /// Offer a frame at cycle `now`.
    pub fn send(&mut self, now: u64, mut frame: Vec<u8>) {
        self.stats.sent += 1;
        let start = now.max(self.free_at);
        self.free_at = start + ((frame.len() + 24) as f64 / self.cfg.bytes_per_cycle).ceil() as u64;
        if self.cfg.loss > 0.0 && self.rng.random_bool(self.cfg.loss) {
            self.stats.lost += 1;
            return;
        }
        if self.cfg.ecn > 0.0 && self.rng.random_bool(self.cfg.ecn) && mark_ce(&mut frame) {
            self.stats.ecn_marked += 1;
        }
        if self.cfg.corrupt > 0.0 && self.rng.random_bool(self.cfg.corrupt) && !frame.is_empty() {
            let i = self.rng.random_range(0..frame.len());
            frame[i] ^= 1 << self.rng.random_range(0..8);
            self.stats.corrupted += 1;
        }
        let mut at = self.free_at + self.cfg.latency;
        if self.cfg.reorder > 0.0 && self.rng.random_bool(self.cfg.reorder) {
            at += self.rng.random_range(1..=self.cfg.reorder_delay.max(1));
            self.stats.reordered += 1;
        }
        if self.cfg.dup > 0.0 && self.rng.random_bool(self.cfg.dup) {
            self.stats.duplicated += 1;
            let extra = self.rng.random_range(0..=self.cfg.reorder_delay.max(1));
            self.seq += 1;
            self.heap.push(Reverse((at + extra, self.seq, frame.clone())));
        }
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, frame)));
    }

    /// The next frame that has arrived by cycle `now`.
    pub fn recv(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.heap.peek().is_some_and(|Reverse((t, _, _))| *t <= now) {
            self.stats.delivered += 1;
            return self.heap.pop().map(|Reverse((_, _, f))| f);
        }
        None
    }

    /// Arrival cycle of the next frame.
    pub fn next_arrival(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Frames in flight.
    pub fn in_flight(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn impairments_are_seeded_and_counted() {
        let cfg = LinkConfig { loss: 0.1, reorder: 0.2, dup: 0.05, corrupt: 0.05, ..Default::default() };
        let run = |seed| {
            let mut l = Link::new(cfg, seed);
            let mut got = Vec::new();
            for i in 0..2000u64 {
                l.send(i * 30, vec![(i % 251) as u8; 100]);
                while let Some(f) = l.recv(i * 30) {
                    got.push(f[0]);
                }
            }
            while let Some(t) = l.next_arrival() {
                got.push(l.recv(t).unwrap()[0]);
            }
            (got, l.stats)
        };
        let (a, sa) = run(1);
        let (b, sb) = run(1);
        assert_eq!(a, b);
        assert_eq!(sa, sb);
        assert!(sa.lost > 100 && sa.reordered > 200 && sa.duplicated > 50 && sa.corrupted > 50);
        assert_eq!(sa.delivered, sa.sent - sa.lost + sa.duplicated);
    }

    #[test]
    fn ce_marking_keeps_ipv4_checksum_valid() {
        let mut f = vec![0u8; 14 + 20];
        f[12] = 0x08;
        f[14] = 0x45;
        f[15] = 0x02; // ECT(0)
        f[22] = 64;
        f[23] = 17;
        assert!(mark_ce(&mut f));
        assert_eq!(f[15] & 3, 3);
        let mut sum = 0u32;
        for i in (14..34).step_by(2) {
            sum += u32::from(u16::from_be_bytes([f[i], f[i + 1]]));
        }
        while sum > 0xFFFF {
            sum = (sum & 0xFFFF) + (sum >> 16);
        }
        assert_eq!(sum, 0xFFFF);
        let mut g = f.clone();
        g[15] = 0; // not ECN-capable
        assert!(!mark_ce(&mut g));
    }
}
