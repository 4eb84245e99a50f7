//! Lockstep test of the `roce_icrc` HDL block against its model, at every DATA_W, in both
//! modes, with random tvalid gaps and tready backpressure.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::icrc::{self as icrc_block, IcrcMode};
use roce_model::icrc;
use roce_sim::cosim::icrc::icrc_lockstep;
use roce_sim::stream::Traffic;
use roce_tests::{random_frame, random_shape};

fn frames(seed: u64, n: usize, max_body: usize) -> Vec<(Vec<u8>, bool)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n)
        .map(|_| {
            let shape = random_shape(&mut rng, max_body);
            let mut f = random_frame(&mut rng, shape);
            icrc::fill(&mut f).expect("valid frame");
            if rng.random_bool(0.3) {
                // corrupt one byte anywhere
                let i = rng.random_range(0..f.len());
                f[i] ^= 1 << rng.random_range(0..8);
            }
            (f, rng.random_bool(0.05))
        })
        .collect()
}

fn check_all(data_bits: usize, insert: bool, t: Traffic, n: usize, max_body: usize) {
    let fr = frames(t.seed ^ data_bits as u64, n, max_body);
    let rep = icrc_lockstep(data_bits, insert, &fr, &t, None).expect("cosim runs");
    for d in rep.divergences.iter().take(10) {
        eprintln!("{d}");
    }
    assert!(rep.divergences.is_empty(), "{} divergences", rep.divergences.len());
    assert_eq!(rep.frames.len(), fr.len());
    // And the model itself against the software ICRC, frame by frame.
    let mode = if insert { IcrcMode::Insert } else { IcrcMode::Check };
    for ((f, err), r) in fr.iter().zip(&rep.frames) {
        let mut m = f.clone();
        let v = icrc_block::process_frame(mode, &mut m, *err);
        assert_eq!(v, r.hdl);
        if insert && v.roce && !v.error {
            assert_eq!(icrc::check(&r.hdl_frame), Ok(true));
        }
        if !insert && !err {
            let expect_bad = icrc::check(f).map(|ok| !ok).unwrap_or(matches!(
                icrc::locate(f),
                Err(icrc::IcrcError::TooShort { .. } | icrc::IcrcError::Truncated { .. })
            ));
            assert_eq!(r.hdl.error, expect_bad);
        }
    }
}

#[test]
fn icrc_lockstep_back_to_back() {
    for w in [64, 256, 512] {
        for ins in [true, false] {
            check_all(w, ins, Traffic { seed: 1, ..Traffic::FULL }, 300, 1500);
        }
    }
}

/// Random gaps and backpressure; frames with bytes after the datagram, whose ICRC straddles
/// two beats, need the beat holding the datagram's end to follow the one before it at once.
#[test]
fn icrc_lockstep_random_handshakes() {
    for seed in 7..11 {
        for w in [64, 256, 512] {
            for ins in [true, false] {
                check_all(w, ins, Traffic { valid_p: 0.7, ready_p: 0.6, seed }, 200, 600);
            }
        }
    }
}

/// Line rate: with back-to-back input and no backpressure the block accepts a beat every
/// cycle and emits a beat every cycle, across frame boundaries, with a fixed latency.
#[test]
fn icrc_full_throughput_fixed_latency() {
    for w in [64, 256, 512] {
        for ins in [true, false] {
            let fr = frames(99, 200, 9000);
            let rep = icrc_lockstep(w, ins, &fr, &Traffic::FULL, None).expect("cosim");
            assert!(rep.divergences.is_empty());
            let acc = &rep.run.accepted;
            let out: Vec<u64> = rep.run.out.iter().map(|(c, _)| *c).collect();
            assert!(acc.windows(2).all(|p| p[1] == p[0] + 1), "input stalled at {w}");
            assert!(out.windows(2).all(|p| p[1] == p[0] + 1), "output bubble at {w}");
            // accepted at edge c into the input register, leaves it at c+1 (its successor is
            // there), then LATENCY cycles to the output register, visible from the next cycle
            assert_eq!(out[0] - acc[0], 1 + icrc_block::LATENCY as u64, "latency at {w}");
        }
    }
}
