//! Lockstep of `roce_axis_drop_fifo` (the `axis_drop_fifo_*` lines): the Verilated FIFO and
//! `roce_model::blocks::axis_drop_fifo` on the same frames, every output beat compared.

use std::path::Path;

use roce_model::blocks::axis::split_frame;

use super::{compare, Divergence};
use crate::stream::{self, StreamRun, Traffic};
use crate::vl::{AxisDut, Model};
use crate::SimError;

/// One input frame of a drop FIFO run.
#[derive(Clone, Debug)]
pub struct FifoFrame {
    /// The frame bytes.
    pub data: Vec<u8>,
    /// `s_axis_tuser` of the last beat (`{roce, error}`: bit 0 drops the frame).
    pub user_last: u8,
    /// `s_axis_tuser` of every other beat (the FIFO ignores the error bit there).
    pub user_other: u8,
}

/// Result of [`axis_drop_fifo_lockstep`].
#[derive(Clone, Debug)]
pub struct DropFifoReport {
    /// The model's fate for every input frame.
    pub fates: Vec<roce_model::blocks::axis_drop_fifo::FrameFate>,
    /// For every output frame (in order), the index of the input frame it is.
    pub out_frames: Vec<usize>,
    /// Every differing beat (including beats the HDL emitted that the model did not).
    pub divergences: Vec<Divergence>,
    /// The HDL run while output was expected (cycle stamps; `run.accepted` covers only the
    /// input beats accepted during it).
    pub run: StreamRun,
    /// Cycle (same time base as `run`) at which each input frame's last beat was accepted.
    pub last_accepted: Vec<u64>,
    /// The HDL counters after all input was accepted.
    pub hdl_counters: crate::vl::DropFifoCounters,
    /// The model's counts.
    pub model_stats: roce_model::blocks::axis_drop_fifo::DropFifoStats,
}

/// Run `frames` through a `roce_axis_drop_fifo` HDL model (one with `DROP_WHEN_FULL=0`,
/// whose output is timing-independent) and its Rust model, and compare every output beat.
/// After the expected output, the remaining input (frames that are dropped) is fed back to
/// back and the HDL must emit nothing more; then the counters are read.
pub fn axis_drop_fifo_lockstep(
    model: Model,
    frames: &[FifoFrame],
    traffic: &Traffic,
    fst: Option<&Path>,
) -> Result<DropFifoReport, SimError> {
    use roce_model::blocks::axis_drop_fifo::RoceAxisDropFifo;

    let cfg = model
        .drop_fifo_config()
        .filter(|c| !c.drop_when_full)
        .ok_or_else(|| SimError::Config(format!("{} is not a DROP_WHEN_FULL=0 drop FIFO", model.name())))?;
    let bytes = cfg.data_bits / 8;
    let mut m = RoceAxisDropFifo::with_params(bytes, cfg.depth, 2, 0);
    let mut beats = Vec::new();
    let mut frame_of = Vec::new();
    let mut last_beat = Vec::with_capacity(frames.len());
    let mut expect = Vec::new();
    let mut expect_frame = Vec::new();
    let mut expect_tlen = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        for mut b in split_frame(&f.data, bytes, f.user_last) {
            if !b.last {
                b.user = f.user_other;
            }
            frame_of.push(i);
            m.push(b.clone());
            beats.push(b);
        }
        last_beat.push(beats.len() - 1);
        while let Some((b, tlen)) = m.pop_with_tlen() {
            expect.push(b);
            expect_tlen.push(u64::from(tlen));
            expect_frame.push(i);
        }
    }
    let mut dut = AxisDut::new(model, fst)?;
    dut.reset(4);
    let start = dut.cycles();
    let run = stream::run(&mut dut, &beats, expect.len(), traffic, 2000)?;

    let mut divergences = Vec::new();
    let mut out_frames = Vec::new();
    let mut beat_in_frame = 0;
    for (k, ((cycle, h), e)) in run.out.iter().zip(&expect).enumerate() {
        if let Some(what) = compare(h, e) {
            divergences.push(Divergence { frame: expect_frame[k], beat: beat_in_frame, cycle: *cycle, what });
        } else if run.out_tlen[k] != expect_tlen[k] {
            divergences.push(Divergence {
                frame: expect_frame[k],
                beat: beat_in_frame,
                cycle: *cycle,
                what: format!("m_axis_tlen: HDL {} model {}", run.out_tlen[k], expect_tlen[k]),
            });
        }
        beat_in_frame += 1;
        if e.last {
            out_frames.push(expect_frame[k]);
            beat_in_frame = 0;
        }
    }

    // The rest of the input: frames the model dropped. Back to back, sink always ready.
    let mut accepted = run.accepted.clone();
    let mut next = accepted.len();
    let mut idle = 0u64;
    let mut settle = 0;
    while settle < 8 {
        let now = dut.cycles() - start;
        let b = beats.get(next);
        let inp = crate::vl::AxisIn {
            rst: false,
            data: b.map_or(&[][..], |b| &b.data[..]),
            keep: b.map_or(0, |b| b.keep),
            valid: b.is_some(),
            last: b.is_some_and(|b| b.last),
            user: b.map_or(0, |b| b.user),
            ready: true,
        };
        let o = dut.cycle(&inp);
        if b.is_some() && o.s_ready {
            accepted.push(now);
            next += 1;
            idle = 0;
        } else if b.is_some() {
            idle += 1;
            if idle > 2000 {
                return Err(SimError::Stalled {
                    model: model.name(),
                    idle,
                    cycle: now,
                    got: run.out.len(),
                    want: expect.len(),
                });
            }
        } else {
            settle += 1;
        }
        if o.valid {
            divergences.push(Divergence {
                // (which frame it belongs to is unknown: name the one being fed)
                frame: frame_of.get(next).or(frame_of.last()).copied().unwrap_or(0),
                beat: 0,
                cycle: now,
                what: format!("HDL emitted an unexpected beat (tlast {}, tuser {:#x})", o.last, o.user),
            });
        }
    }
    let last_accepted = last_beat.iter().map(|&i| accepted[i]).collect();
    let hdl_counters = dut.drop_fifo_counters().expect("a drop FIFO model");
    Ok(DropFifoReport {
        fates: m.fates().to_vec(),
        out_frames,
        divergences,
        run,
        last_accepted,
        hdl_counters,
        model_stats: m.stats(),
    })
}

// ---- end roce_axis_drop_fifo -----------------------------------------------------------
