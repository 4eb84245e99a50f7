//! HDL-versus-model runs: the Verilated block and its Rust model get the same frames, and
//! every output beat is compared (valid data lanes, `tkeep`, `tlast`, `tuser`).

use std::path::Path;

use roce_model::blocks::axis::{split_frame, AxisBeat};
use roce_model::blocks::roce_icrc::{IcrcMode, IcrcVerdict, RoceIcrc};

use crate::stream::{self, StreamRun, Traffic};
use crate::vl::{AxisDut, Model};
use crate::SimError;

/// One output beat on which HDL and model differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Frame index.
    pub frame: usize,
    /// Beat index within the frame.
    pub beat: usize,
    /// Cycle at which the HDL emitted the beat.
    pub cycle: u64,
    /// What differs, with both values.
    pub what: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "frame {} beat {} (cycle {}): {}", self.frame, self.beat, self.cycle, self.what)
    }
}

/// Per-frame outcome of an ICRC cosimulation.
#[derive(Clone, Debug)]
pub struct IcrcFrame {
    /// The frame as the HDL emitted it.
    pub hdl_frame: Vec<u8>,
    /// The HDL's verdict (`m_axis_tuser` of the last beat).
    pub hdl: IcrcVerdict,
    /// The model's verdict.
    pub model: IcrcVerdict,
    /// Whether every beat of the frame agreed.
    pub agree: bool,
}

/// Result of [`icrc`].
#[derive(Clone, Debug)]
pub struct IcrcReport {
    /// Per input frame.
    pub frames: Vec<IcrcFrame>,
    /// Every differing beat.
    pub divergences: Vec<Divergence>,
    /// The HDL run (cycle stamps).
    pub run: StreamRun,
}

fn compare(a: &AxisBeat, b: &AxisBeat) -> Option<String> {
    if a.keep != b.keep {
        return Some(format!("tkeep hdl {:#x} model {:#x}", a.keep, b.keep));
    }
    if a.last != b.last {
        return Some(format!("tlast hdl {} model {}", a.last, b.last));
    }
    if a.user != b.user {
        return Some(format!("tuser hdl {:#04b} model {:#04b}", a.user, b.user));
    }
    let n = a.len();
    if a.data[..n] != b.data[..n] {
        let i = (0..n).find(|&i| a.data[i] != b.data[i]).unwrap_or(0);
        return Some(format!(
            "tdata lane {i}: hdl {:02x?} model {:02x?}",
            &a.data[i..n.min(i + 8)],
            &b.data[i..n.min(i + 8)]
        ));
    }
    None
}

/// Run `frames` (each with its input error bit) through the `roce_icrc` HDL block and its
/// model, at `data_bits` in insert or check mode, and compare every beat.
pub fn icrc(
    data_bits: usize,
    insert: bool,
    frames: &[(Vec<u8>, bool)],
    traffic: &Traffic,
    fst: Option<&Path>,
) -> Result<IcrcReport, SimError> {
    let model_kind = Model::icrc(data_bits, insert)
        .ok_or_else(|| SimError::Config(format!("roce_icrc has no DATA_W={data_bits}")))?;
    let bytes = data_bits / 8;
    let mode = if insert { IcrcMode::Insert } else { IcrcMode::Check };
    let mut model = RoceIcrc::new(mode, bytes);
    let mut beats = Vec::new();
    let mut frame_of = Vec::new();
    let mut expect = Vec::new();
    for (i, (f, err)) in frames.iter().enumerate() {
        for b in split_frame(f, bytes, u8::from(*err)) {
            frame_of.push(i);
            // the input error flag is presented on every beat of the frame
            let mut b = b;
            b.user = u8::from(*err);
            model.push(b.clone());
            beats.push(b);
        }
        while let Some(b) = model.pop() {
            expect.push(b);
        }
    }
    let mut dut = AxisDut::new(model_kind, fst)?;
    dut.reset(4);
    let run = stream::run(&mut dut, &beats, beats.len(), traffic, 1000)?;

    let mut out = Vec::with_capacity(frames.len());
    let mut divergences = Vec::new();
    let mut cur =
        IcrcFrame { hdl_frame: Vec::new(), hdl: IcrcVerdict::default(), model: IcrcVerdict::default(), agree: true };
    let mut beat_in_frame = 0;
    for (k, ((cycle, h), m)) in run.out.iter().zip(&expect).enumerate() {
        if let Some(what) = compare(h, m) {
            divergences.push(Divergence { frame: frame_of[k], beat: beat_in_frame, cycle: *cycle, what });
            cur.agree = false;
        }
        cur.hdl_frame.extend_from_slice(h.bytes());
        beat_in_frame += 1;
        if m.last {
            cur.hdl = IcrcVerdict::from_tuser(h.user);
            cur.model = IcrcVerdict::from_tuser(m.user);
            out.push(std::mem::replace(
                &mut cur,
                IcrcFrame {
                    hdl_frame: Vec::new(),
                    hdl: IcrcVerdict::default(),
                    model: IcrcVerdict::default(),
                    agree: true,
                },
            ));
            beat_in_frame = 0;
        }
    }
    Ok(IcrcReport { frames: out, divergences, run })
}

// ---- roce_axis_drop_fifo ---------------------------------------------------------------

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

/// Result of [`drop_fifo`].
#[derive(Clone, Debug)]
pub struct DropFifoReport {
    /// The model's fate for every input frame.
    pub fates: Vec<roce_model::blocks::roce_axis_drop_fifo::FrameFate>,
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
    pub model_stats: roce_model::blocks::roce_axis_drop_fifo::DropFifoStats,
}

/// Run `frames` through a `roce_axis_drop_fifo` HDL model (one with `DROP_WHEN_FULL=0`,
/// whose output is timing-independent) and its Rust model, and compare every output beat.
/// After the expected output, the remaining input (frames that are dropped) is fed back to
/// back and the HDL must emit nothing more; then the counters are read.
pub fn drop_fifo(
    model: Model,
    frames: &[FifoFrame],
    traffic: &Traffic,
    fst: Option<&Path>,
) -> Result<DropFifoReport, SimError> {
    use roce_model::blocks::roce_axis_drop_fifo::RoceAxisDropFifo;

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
