//! AXI4-Stream stimulus with random gaps and backpressure, and output collection.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::axis::AxisBeat;

use crate::vl::{AxisDut, AxisIn};
use crate::SimError;

/// How the testbench drives the handshakes.
#[derive(Clone, Copy, Debug)]
pub struct Traffic {
    /// Probability that the source presents its next beat in a cycle (1.0: back to back).
    pub valid_p: f64,
    /// Probability that the sink is ready in a cycle (1.0: never backpressures).
    pub ready_p: f64,
    /// RNG seed.
    pub seed: u64,
}

impl Traffic {
    /// Back-to-back input, no backpressure.
    pub const FULL: Traffic = Traffic { valid_p: 1.0, ready_p: 1.0, seed: 0 };
}

/// The result of streaming beats through a DUT.
#[derive(Clone, Debug, Default)]
pub struct StreamRun {
    /// Output beats in order, with the cycle (since the start of the run) they moved.
    pub out: Vec<(u64, AxisBeat)>,
    /// `m_axis_tlen` of each output beat (0 for blocks without it).
    pub out_tlen: Vec<u64>,
    /// The cycle each input beat was accepted.
    pub accepted: Vec<u64>,
    /// Cycles the run took.
    pub cycles: u64,
}

/// Stream `beats` into `dut` and collect `expect_out` output beats.
///
/// AXI rules are kept: once the source asserts `tvalid` it holds the beat until accepted.
/// Fails if no beat moves for `max_idle` cycles.
pub fn run(
    dut: &mut AxisDut,
    beats: &[AxisBeat],
    expect_out: usize,
    t: &Traffic,
    max_idle: u64,
) -> Result<StreamRun, SimError> {
    let mut rng = ChaCha8Rng::seed_from_u64(t.seed);
    let mut r = StreamRun {
        out: Vec::with_capacity(expect_out),
        out_tlen: Vec::with_capacity(expect_out),
        accepted: Vec::with_capacity(beats.len()),
        cycles: 0,
    };
    let start = dut.cycles();
    let mut next = 0usize;
    let mut presenting = false;
    let mut last_progress = 0u64;
    while r.out.len() < expect_out {
        let now = dut.cycles() - start;
        if now - last_progress > max_idle {
            return Err(SimError::Stalled {
                model: dut.model().name(),
                idle: max_idle,
                cycle: last_progress,
                got: r.out.len(),
                want: expect_out,
            });
        }
        if !presenting && next < beats.len() {
            presenting = t.valid_p >= 1.0 || rng.random_bool(t.valid_p);
        }
        let ready = t.ready_p >= 1.0 || rng.random_bool(t.ready_p);
        let b = beats.get(next);
        let inp = AxisIn {
            rst: false,
            data: b.map_or(&[][..], |b| &b.data[..]),
            keep: b.map_or(0, |b| b.keep),
            valid: presenting,
            last: b.is_some_and(|b| b.last),
            user: b.map_or(0, |b| b.user),
            ready,
        };
        let o = dut.cycle(&inp);
        if presenting && o.s_ready {
            r.accepted.push(now);
            next += 1;
            presenting = false;
            last_progress = now;
        }
        if o.valid && ready {
            let bytes = dut.bytes();
            r.out_tlen.push(o.tlen);
            r.out.push((now, AxisBeat { data: o.data[..bytes].to_vec(), keep: o.keep, last: o.last, user: o.user }));
            last_progress = now;
        }
    }
    r.cycles = dut.cycles() - start;
    Ok(r)
}
