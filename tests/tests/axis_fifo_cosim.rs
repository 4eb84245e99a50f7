//! `roce_axis_fifo` (Verilated, DEPTH 16 so it fills): every beat out in order and
//! unchanged under random gaps and backpressure; a beat per cycle when nothing holds it.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_sim::cosim::axis_fifo::{axis_fifo_lockstep, Beat};

fn beats(n: usize, seed: u64) -> Vec<Beat> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| ((0..16).map(|_| rng.random()).collect(), rng.random(), rng.random_bool(0.2), rng.random_bool(0.1)))
        .collect()
}

#[test]
fn identity_under_backpressure() {
    for (seed, vp, rp) in [(0, 1.0, 1.0), (1, 0.5, 0.9), (2, 0.9, 0.3), (3, 0.3, 0.3)] {
        let b = beats(3000, seed);
        let (out, _) = axis_fifo_lockstep(&b, vp, rp, seed).expect("runs");
        assert_eq!(out, b, "seed {seed}");
    }
}

#[test]
fn a_beat_per_cycle() {
    let b = beats(2000, 9);
    let (out, cycles) = axis_fifo_lockstep(&b, 1.0, 1.0, 0).expect("runs");
    assert_eq!(out.len(), 2000);
    assert!(cycles <= 2000 + 4, "{cycles} cycles");
}
