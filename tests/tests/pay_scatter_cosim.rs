//! Lockstep: `roce_pay_scatter` (Verilated) against its model: payload packets of every
//! length class (empty, partial beat, beat multiples, MTU-sized, jumbo) cut into up to three
//! written or skipped segments of random lengths (aligned and mid-beat starts, empty
//! segments, segments shorter and longer than the payload) and commands without payload,
//! under random payload gaps and DMA backpressure; plus the stated throughput.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::pay_scatter::Segment;
use roce_sim::cosim::pay_scatter::{pay_scatter_lockstep, ScatterCmd, NSEG};

fn random_cmds(rng: &mut ChaCha8Rng, n: usize) -> Vec<ScatterCmd> {
    (0..n)
        .map(|_| {
            let len = match rng.random_range(0..6) {
                0 => rng.random_range(1..64),
                1 => 64 * rng.random_range(1..5),
                2 => rng.random_range(65..300),
                3 => 4096,
                4 => rng.random_range(1..9000),
                _ => rng.random_range(1..1100),
            };
            let payload: Option<Vec<u8>> =
                if rng.random_bool(0.9) { Some((0..len).map(|_| rng.random()).collect()) } else { None };
            let plen = payload.as_ref().map_or(0, Vec::len);
            let mut segs = [Segment::default(); NSEG];
            let mut left = plen;
            for s in segs.iter_mut() {
                let l = match rng.random_range(0..8) {
                    0 => 0,
                    1 => left + rng.random_range(0..100), // past the payload
                    2 | 3 => left,
                    _ => rng.random_range(0..=left),
                };
                let l = l.min(u16::MAX as usize);
                *s = Segment {
                    write: payload.is_some() && rng.random_bool(0.8),
                    len: l as u16,
                    addr: rng.random::<u64>() >> 8,
                };
                left -= l.min(left);
            }
            ScatterCmd { segs, payload }
        })
        .collect()
}

#[test]
fn random_segments_under_backpressure() {
    for seed in 0..4u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let cmds = random_cmds(&mut rng, 400);
        let (vp, rp) = [(1.0, 1.0), (0.6, 0.7), (0.9, 0.4), (0.3, 1.0)][seed as usize];
        let r = pay_scatter_lockstep(&cmds, vp, rp, seed).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {:?}", r.divergences);
        assert!(r.writes.len() > 300, "seed {seed}: only {} writes", r.writes.len());
    }
}

#[test]
fn aligned_segments_move_a_beat_per_cycle() {
    // 200 WRITE-like packets of 4096 bytes, one aligned segment each: 64 beats per packet
    // plus the stated idle cycle per command.
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let cmds: Vec<ScatterCmd> = (0..200)
        .map(|i| {
            let payload: Vec<u8> = (0..4096).map(|_| rng.random()).collect();
            let mut segs = [Segment::default(); NSEG];
            segs[0] = Segment { write: true, len: 4096, addr: 0x1000 * i };
            ScatterCmd { segs, payload: Some(payload) }
        })
        .collect();
    let r = pay_scatter_lockstep(&cmds, 1.0, 1.0, 1).expect("runs");
    assert!(r.divergences.is_empty(), "{:?}", r.divergences);
    assert_eq!(r.beats, 200 * 64);
    // the run ends 50 idle cycles after the last beat
    let busy = r.cycles - 50;
    eprintln!("{busy} cycles for {} beats", r.beats);
    assert!(busy <= 200 * (64 + 1) + 10, "{busy} cycles for {} beats", r.beats);
}
