//! `roce_axis_frame_gate` (Verilated) cycle by cycle against the rule of its header, under
//! random frames, gaps, backpressure and an enable flipping at any cycle: frames reach the
//! sink whole, cut short or not at all (never a beat after a discarded one), and a closed
//! gate never stalls the source.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_sim::cosim::axis_frame_gate::axis_frame_gate_lockstep;

#[test]
fn frames_pass_whole_cut_or_not_at_all() {
    for (seed, vp, rp, flip) in [(0u64, 1.0, 1.0, 0.02), (1, 0.6, 0.7, 0.05), (2, 0.9, 0.3, 0.1), (3, 0.4, 0.9, 0.01)] {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let frames: Vec<usize> =
            (0..2000).map(|_| if rng.random_bool(0.3) { 1 } else { rng.random_range(2..=20) }).collect();
        let r = axis_frame_gate_lockstep(&frames, vp, rp, flip, seed).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {:#?}", &r.divergences[..r.divergences.len().min(5)]);
        assert_eq!(r.whole + r.cut + r.dropped, frames.len() as u64);
        // every outcome happens (the enable flips often enough)
        assert!(r.whole > 100 && r.cut > 10 && r.dropped > 10, "seed {seed}: {r:?}");
    }
}

#[test]
fn always_open_passes_everything() {
    let frames: Vec<usize> = (1..=300).map(|i| 1 + i % 17).collect();
    let r = axis_frame_gate_lockstep(&frames, 0.7, 0.6, 0.0, 7).expect("runs");
    assert!(r.divergences.is_empty(), "{:?}", &r.divergences[..r.divergences.len().min(5)]);
    assert_eq!((r.whole, r.cut, r.dropped), (300, 0, 0));
}
