//! `roce_axis_async_fifo` on two clocks (250 MHz / 322 MHz in both directions, and a
//! near-equal pair that drifts slowly through every phase): every beat in order through the
//! beat-by-beat and store-and-forward FIFOs under random gaps and backpressure; frames
//! leave the store-and-forward FIFO without a gap (what the CMAC's TX needs); the dropping
//! FIFO (the RX side of a MAC that cannot wait) never stalls its writer, drops only whole
//! frames, counts each on s_drop and passes every other frame intact.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_sim::cosim::axis_async_fifo::{axis_async_fifo_lockstep, AsyncFifoModel, Beat};

/// Frames of 1..=max_beats beats, random data, partial last beats, tuser on some beats.
fn frames(rng: &mut ChaCha8Rng, n: usize, max_beats: usize) -> Vec<Vec<Beat>> {
    (0..n)
        .map(|_| {
            let k = rng.random_range(1..=max_beats);
            (0..k)
                .map(|i| {
                    let last = i + 1 == k;
                    let keep = if last { (1u64 << rng.random_range(1..=8)) - 1 } else { 0xFF };
                    Beat {
                        data: (0..8).map(|_| rng.random()).collect(),
                        keep,
                        last,
                        user: u64::from(rng.random_bool(0.1)),
                    }
                })
                .collect()
        })
        .collect()
}

const CLOCKS: [(u64, u64); 3] = [(4000, 3103), (3103, 4000), (4000, 3990)];

#[test]
fn every_beat_in_order_across_the_clocks() {
    for (i, &(w, r)) in CLOCKS.iter().enumerate() {
        for (cfg, max_beats) in [(AsyncFifoModel::STREAM, 40), (AsyncFifoModel::FRAME, 16)] {
            let mut rng = ChaCha8Rng::seed_from_u64(i as u64);
            let beats: Vec<Beat> = frames(&mut rng, 300, max_beats).concat();
            for (vp, rp) in [(1.0, 1.0), (0.5, 0.9), (0.9, 0.3)] {
                let rep = axis_async_fifo_lockstep(cfg, &beats, w, r, vp, rp, i as u64).expect("runs");
                assert_eq!(rep.out.len(), beats.len(), "{cfg:?} clocks {w}/{r} ps, p {vp}/{rp}");
                assert!(rep.out == beats, "{cfg:?} clocks {w}/{r} ps, p {vp}/{rp}: data differs");
                if cfg.frame {
                    assert_eq!(rep.gaps, 0, "{cfg:?} clocks {w}/{r}: gaps inside frames");
                }
            }
        }
    }
}

#[test]
fn store_and_forward_frames_leave_without_gaps_to_a_faster_reader() {
    // the TX case: engine (250 MHz) writing with gaps, the MAC (322 MHz) always ready
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let beats: Vec<Beat> = frames(&mut rng, 500, 16).concat();
    let rep = axis_async_fifo_lockstep(AsyncFifoModel::FRAME, &beats, 4000, 3103, 0.6, 1.0, 5).expect("runs");
    assert!(rep.out == beats);
    assert_eq!(rep.gaps, 0);
}

#[test]
fn the_dropping_fifo_drops_whole_frames_only() {
    for (i, &(w, r)) in CLOCKS.iter().enumerate() {
        // the RX case: the MAC writes without pause, the reader is slow; frames up to twice
        // the depth, so some can never fit
        let mut rng = ChaCha8Rng::seed_from_u64(10 + i as u64);
        let fr = frames(&mut rng, 400, 32);
        let beats: Vec<Beat> = fr.concat();
        let rep = axis_async_fifo_lockstep(AsyncFifoModel::DROP, &beats, w, r, 1.0, 0.5, i as u64).expect("runs");
        assert_eq!(rep.stalls, 0, "the writer was stalled");
        // what came out is a subsequence of the frames, each whole
        let out: Vec<Vec<Beat>> = rep.out.split_inclusive(|b| b.last).map(<[Beat]>::to_vec).collect();
        let mut k = 0;
        for f in &out {
            while k < fr.len() && fr[k] != *f {
                k += 1;
            }
            assert!(k < fr.len(), "clocks {w}/{r}: a frame came out that did not go in whole");
            k += 1;
        }
        assert_eq!(rep.drops as usize, fr.len() - out.len(), "clocks {w}/{r}: drops counted");
        assert!(rep.drops > 10 && out.len() > 100, "clocks {w}/{r}: {} dropped, {} passed", rep.drops, out.len());
        assert!(out.iter().all(|f| f.len() <= 16), "a frame longer than the FIFO passed");
        assert_eq!(rep.gaps, 0);
    }
    // with a reader that keeps up nothing is dropped, as long as a frame fits beside the
    // one before it while that one crosses over (here: half the depth; the board's RX FIFO
    // holds 512 beats for frames of at most ~150)
    let mut rng = ChaCha8Rng::seed_from_u64(20);
    let beats: Vec<Beat> = frames(&mut rng, 300, 8).concat();
    let rep = axis_async_fifo_lockstep(AsyncFifoModel::DROP, &beats, 4000, 3103, 0.7, 1.0, 20).expect("runs");
    assert_eq!(rep.drops, 0);
    assert!(rep.out == beats);
}
