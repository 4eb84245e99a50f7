//! Lockstep of `roce_icrc` (the `icrc_*` lines): the Verilated block and
//! `roce_model::blocks::icrc` on the same frames, every output beat compared.

use std::path::Path;

use roce_model::blocks::axis::split_frame;
use roce_model::blocks::icrc::{IcrcMode, IcrcVerdict, RoceIcrc};

use super::{compare, Divergence};
use crate::stream::{self, StreamRun, Traffic};
use crate::vl::{AxisDut, Model};
use crate::SimError;

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

/// Result of [`icrc_lockstep`].
#[derive(Clone, Debug)]
pub struct IcrcReport {
    /// Per input frame.
    pub frames: Vec<IcrcFrame>,
    /// Every differing beat.
    pub divergences: Vec<Divergence>,
    /// The HDL run (cycle stamps).
    pub run: StreamRun,
}

/// Run `frames` (each with its input error bit) through the `roce_icrc` HDL block and its
/// model, at `data_bits` in insert or check mode, and compare every beat.
pub fn icrc_lockstep(
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
