//! Lockstep tests of the `roce_axis_drop_fifo` HDL block against its model at every DATA_W:
//! random frames from 1 byte to ~10 KB (some longer than the FIFO), ~20% marked bad, random
//! tvalid gaps and tready backpressure; the throughput and latency of committed frames from
//! the cycle stamps; DROP_WHEN_FULL=1 behaviour; and roce_icrc (check) -> drop FIFO in the
//! model.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::axis::{join_frame, split_frame, AxisBeat};
use roce_model::blocks::axis_drop_fifo::{self as dfifo, FrameFate, RoceAxisDropFifo};
use roce_model::blocks::icrc::{self as icrc_block, IcrcMode, RoceIcrc};
use roce_model::icrc;
use roce_sim::cosim::axis_drop_fifo::{axis_drop_fifo_lockstep, DropFifoReport, FifoFrame};
use roce_sim::stream::Traffic;
use roce_sim::vl::{AxisDut, AxisIn, Model};
use roce_tests::{random_frame, random_shape};

fn random_len(rng: &mut impl Rng, max: usize) -> usize {
    match rng.random_range(0..10) {
        0..=4 => rng.random_range(1..=1500.min(max)),
        5..=7 => rng.random_range(1..=max),
        _ => rng.random_range(max * 3 / 4..=max),
    }
}

fn fifo_frame(rng: &mut impl RngCore, len: usize, bad: bool) -> FifoFrame {
    let mut data = vec![0u8; len];
    rng.fill_bytes(&mut data);
    let roce = rng.random_bool(0.5);
    // Other beats carry random tuser, including the error bit, which must be ignored.
    FifoFrame { data, user_last: (u8::from(roce) << 1) | u8::from(bad), user_other: rng.random_range(0..4) }
}

/// `n` random frames up to `max` bytes, ~20% bad, plus the length corner cases of a FIFO of
/// `cap` bytes (exactly full, one byte over, one beat over).
fn frames(seed: u64, n: usize, max: usize, cap: usize, bytes: usize) -> Vec<FifoFrame> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut v: Vec<FifoFrame> = (0..n)
        .map(|_| {
            let len = random_len(&mut rng, max);
            let bad = rng.random_bool(0.2);
            fifo_frame(&mut rng, len, bad)
        })
        .collect();
    for (i, len) in [1, bytes, bytes + 1, cap - 1, cap, cap + 1, cap + bytes, 1].into_iter().enumerate() {
        let f = fifo_frame(&mut rng, len, false);
        v.insert((i * 7 + 3).min(v.len()), f);
    }
    v
}

fn check(model: Model, fr: &[FifoFrame], t: Traffic) -> DropFifoReport {
    let cfg = model.drop_fifo_config().expect("drop FIFO");
    let bytes = cfg.data_bits / 8;
    let rep = axis_drop_fifo_lockstep(model, fr, &t, None).expect("cosim runs");
    for d in rep.divergences.iter().take(10) {
        eprintln!("{}: {d}", model.name());
    }
    assert!(rep.divergences.is_empty(), "{}: {} divergences", model.name(), rep.divergences.len());
    // The model's fates against the rule, frame by frame.
    for (f, fate) in fr.iter().zip(&rep.fates) {
        let beats = f.data.len().div_ceil(bytes);
        let want = if beats > cfg.depth {
            FrameFate::Overflow
        } else if f.user_last & 1 != 0 {
            FrameFate::Bad
        } else {
            FrameFate::Good
        };
        assert_eq!(*fate, want);
    }
    let good: Vec<usize> = (0..fr.len()).filter(|&i| rep.fates[i] == FrameFate::Good).collect();
    assert_eq!(rep.out_frames, good);
    let s = rep.model_stats;
    let c = rep.hdl_counters;
    assert_eq!(
        (u64::from(c.good), u64::from(c.bad), u64::from(c.overflow), u64::from(c.full)),
        (s.good, s.bad, s.overflow, 0),
        "{}: HDL counters vs model",
        model.name()
    );
    rep
}

#[test]
fn drop_fifo_lockstep_small_depth() {
    // 8 KiB FIFOs: frames up to 10 KB, so jumbo frames overflow.
    for w in [64, 256, 512] {
        let model = Model::drop_fifo_small(w).unwrap();
        let cfg = model.drop_fifo_config().unwrap();
        let cap = cfg.depth * w / 8;
        for t in [
            Traffic { valid_p: 0.7, ready_p: 0.6, seed: 11 },
            Traffic { valid_p: 1.0, ready_p: 0.3, seed: 12 },
            Traffic { valid_p: 0.5, ready_p: 1.0, seed: 13 },
            Traffic { seed: 14, ..Traffic::FULL },
        ] {
            let fr = frames(t.seed ^ w as u64, 120, 10_240, cap, w / 8);
            let rep = check(model, &fr, t);
            let s = rep.model_stats;
            assert!(s.good > 0 && s.bad > 0 && s.overflow > 0, "{s:?}");
        }
    }
}

#[test]
fn drop_fifo_lockstep_default_depth() {
    // Default depth (two jumbo frames, 32 KiB); a few frames longer than that.
    for w in [64, 256, 512] {
        let model = Model::drop_fifo(w).unwrap();
        let cfg = model.drop_fifo_config().unwrap();
        assert_eq!(cfg.depth, dfifo::default_depth(w / 8));
        let cap = cfg.depth * w / 8;
        let t = Traffic { valid_p: 0.9, ready_p: 0.4, seed: 21 };
        let fr = frames(t.seed ^ w as u64, 100, 10_240, cap, w / 8);
        let rep = check(model, &fr, t);
        assert_eq!(rep.model_stats.overflow, 2, "cap+1 and cap+bytes frames");
    }
}

/// Output cycle stamps of a back-to-back run: the first beat of frame k leaves at
/// max(end of frame k-1 + 1, last beat of k accepted + LATENCY); inside a frame no gaps.
/// Returns (idle cycles between output beats, idle cycles a frame-FIFO cannot avoid).
fn check_stamps(rep: &DropFifoReport) -> (u64, u64) {
    let mut k = 0usize; // output frame index
    let mut first = true;
    let mut prev: Option<u64> = None;
    let (mut idle, mut unavoidable) = (0u64, 0u64);
    for (cycle, b) in &rep.run.out {
        if first {
            let ready = rep.last_accepted[rep.out_frames[k]] + dfifo::LATENCY;
            let expect = prev.map_or(ready, |p| ready.max(p + 1));
            assert_eq!(*cycle, expect, "first beat of output frame {k}");
            if let Some(p) = prev {
                idle += cycle - p - 1;
                unavoidable += expect - p - 1;
            }
        } else {
            assert_eq!(Some(*cycle), prev.map(|p| p + 1), "gap inside output frame {k}");
        }
        prev = Some(*cycle);
        first = b.last;
        if b.last {
            k += 1;
        }
    }
    (idle, unavoidable)
}

#[test]
fn drop_fifo_back_to_back_throughput() {
    for w in [64, 256, 512] {
        let bytes = w / 8;
        let model = Model::drop_fifo(w).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(31 + w as u64);

        // Equal lengths, all good: after the first frame is committed, not one idle cycle.
        let fr: Vec<FifoFrame> = (0..40).map(|_| fifo_frame(&mut rng, 1000, false)).collect();
        let rep = check(model, &fr, Traffic::FULL);
        let (idle, _) = check_stamps(&rep);
        assert_eq!(idle, 0, "{w}: idle cycles between equal frames");
        let first_in = rep.run.accepted[0];
        let latency = rep.run.out[0].0 - rep.last_accepted[0];
        let beats = rep.run.out.len() as u64;
        let span = rep.run.out.last().unwrap().0 - rep.run.out[0].0 + 1;
        eprintln!(
            "DATA_W={w}: 40 x 1000 B back to back: last-in -> first-out latency {latency} cycles, \
             first input beat at {first_in}, output {beats} beats in {span} cycles"
        );
        assert_eq!(latency, dfifo::LATENCY);
        assert_eq!(span, beats);

        // Random lengths (good and bad): every idle output cycle is one a store-and-forward
        // FIFO cannot avoid (the next frame was not yet complete); committed frames leave back
        // to back. Includes minimum-size frames (1 beat).
        let fr: Vec<FifoFrame> = (0..200)
            .map(|_| {
                let len = if rng.random_bool(0.3) { rng.random_range(1..=bytes) } else { random_len(&mut rng, 9216) };
                let bad = rng.random_bool(0.2);
                fifo_frame(&mut rng, len, bad)
            })
            .collect();
        let rep = check(model, &fr, Traffic::FULL);
        let (idle, unavoidable) = check_stamps(&rep);
        assert_eq!(idle, unavoidable);
        let beats = rep.run.out.len() as u64;
        let span = rep.run.out.last().unwrap().0 - rep.run.out[0].0 + 1;
        eprintln!(
            "DATA_W={w}: 200 random frames: output {beats} beats in {span} cycles, {idle} idle \
             (all waiting for an incomplete frame)"
        );
    }
}

#[test]
fn drop_fifo_lockstep_short_frames_backpressure() {
    // Many short frames (1..200 B, often a single beat) back to back into a half-ready sink:
    // the FIFO holds a backlog of committed frames and every frame boundary is exercised.
    for w in [64, 256, 512] {
        let model = Model::drop_fifo(w).unwrap();
        let mut rng = ChaCha8Rng::seed_from_u64(41 + w as u64);
        let fr: Vec<FifoFrame> = (0..300)
            .map(|_| {
                let len = rng.random_range(1..200);
                let bad = rng.random_bool(0.2);
                fifo_frame(&mut rng, len, bad)
            })
            .collect();
        check(model, &fr, Traffic { valid_p: 1.0, ready_p: 0.5, seed: 41 });
    }
}

/// Drive `beats` with random handshakes and collect every output beat, until the input is
/// consumed and the output has been quiet for 64 cycles. Also checks that s_axis_tready is
/// never low in the middle of a frame.
fn drive_dwf(dut: &mut AxisDut, beats: &[AxisBeat], t: &Traffic) -> Vec<AxisBeat> {
    let mut rng = ChaCha8Rng::seed_from_u64(t.seed);
    let mut out = Vec::new();
    let (mut next, mut presenting, mut quiet, mut mid_frame) = (0usize, false, 0u32, false);
    while next < beats.len() || quiet < 64 {
        if !presenting && next < beats.len() {
            presenting = rng.random_bool(t.valid_p);
        }
        let ready = next >= beats.len() || rng.random_bool(t.ready_p);
        let b = beats.get(next);
        let o = dut.cycle(&AxisIn {
            rst: false,
            data: b.map_or(&[][..], |b| &b.data[..]),
            keep: b.map_or(0, |b| b.keep),
            valid: presenting,
            last: b.is_some_and(|b| b.last),
            user: b.map_or(0, |b| b.user),
            ready,
        });
        assert!(o.s_ready || !mid_frame, "DROP_WHEN_FULL=1 stalled the input inside a frame");
        if presenting && o.s_ready {
            mid_frame = !beats[next].last;
            next += 1;
            presenting = false;
        }
        quiet += 1;
        if o.valid && ready {
            out.push(AxisBeat { data: o.data[..dut.bytes()].to_vec(), keep: o.keep, last: o.last, user: o.user });
            quiet = 0;
        }
        assert!(dut.cycles() < 50_000_000, "runaway");
    }
    out
}

#[test]
fn drop_fifo_drop_when_full() {
    // DROP_WHEN_FULL=1, DEPTH 256 x 8 B: under heavy backpressure frames that meet a full
    // FIFO are dropped (never a stall inside a frame); what comes out is an in-order
    // subsequence of the good frames, beat-exact, and the counters add up.
    let model = Model::AxisDropFifo64Dwf;
    let cfg = model.drop_fifo_config().unwrap();
    assert!(cfg.drop_when_full);
    let bytes = cfg.data_bits / 8;
    let cap = cfg.depth * bytes;
    for t in [Traffic { valid_p: 1.0, ready_p: 0.3, seed: 51 }, Traffic { valid_p: 0.8, ready_p: 0.7, seed: 52 }] {
        let fr = frames(t.seed, 400, 3000, cap, bytes);
        let mut m = RoceAxisDropFifo::with_params(bytes, cfg.depth, 2, 0);
        let mut beats = Vec::new();
        let mut expect: Vec<Vec<AxisBeat>> = Vec::new();
        for f in &fr {
            for mut b in split_frame(&f.data, bytes, f.user_last) {
                if !b.last {
                    b.user = f.user_other;
                }
                m.push(b.clone());
                beats.push(b);
            }
            let o: Vec<AxisBeat> = std::iter::from_fn(|| m.pop()).collect();
            if !o.is_empty() {
                expect.push(o);
            }
        }
        let mut dut = AxisDut::new(model, None).unwrap();
        dut.reset(4);
        let out = drive_dwf(&mut dut, &beats, &t);
        let mut got: Vec<&[AxisBeat]> = Vec::new();
        let mut s = 0;
        for (i, b) in out.iter().enumerate() {
            if b.last {
                got.push(&out[s..=i]);
                s = i + 1;
            }
        }
        assert_eq!(s, out.len(), "output ends inside a frame");
        // in-order subsequence of the model's (never-full) output
        let mut j = 0;
        for g in &got {
            while j < expect.len() && expect[j].as_slice() != *g {
                j += 1;
            }
            assert!(j < expect.len(), "an output frame is not one of the good input frames in order");
            j += 1;
        }
        let c = dut.drop_fifo_counters().unwrap();
        let st = m.stats();
        eprintln!("DROP_WHEN_FULL=1 {t:?}: model {st:?}, HDL {c:?}");
        assert_eq!(c.good as usize, got.len());
        assert_eq!((c.good + c.bad + c.overflow + c.full) as usize, fr.len());
        assert!(u64::from(c.bad) <= st.bad && u64::from(c.overflow) <= st.overflow);
        if t.ready_p < 0.5 {
            assert!(c.full > 0, "backpressure never filled the FIFO");
        }
    }
}

#[test]
fn icrc_check_then_drop_fifo_model() {
    // RX chain in the model: roce_icrc (check) -> drop FIFO. Out come exactly the frames the
    // ICRC check passes (no input error), unchanged, tuser = roce flag on the last beat.
    for bytes in [8, 32, 64] {
        let mut rng = ChaCha8Rng::seed_from_u64(61 + bytes as u64);
        let mut chk = RoceIcrc::new(IcrcMode::Check, bytes);
        let mut fifo = RoceAxisDropFifo::new(bytes);
        let mut want = Vec::new();
        for _ in 0..200 {
            let shape = random_shape(&mut rng, 2000);
            let mut f = random_frame(&mut rng, shape);
            icrc::fill(&mut f).expect("valid frame");
            if rng.random_bool(0.25) {
                let i = rng.random_range(0..f.len());
                f[i] ^= 1 << rng.random_range(0..8);
            }
            let in_err = rng.random_bool(0.05);
            let v = icrc_block::process_frame(IcrcMode::Check, &mut f.clone(), in_err);
            if !v.error {
                want.push((f.clone(), u8::from(v.roce)));
            }
            for mut b in split_frame(&f, bytes, 0) {
                b.user = u8::from(in_err);
                chk.push(b);
            }
            while let Some(b) = chk.pop() {
                fifo.push(b);
            }
        }
        let out: Vec<AxisBeat> = std::iter::from_fn(|| fifo.pop()).collect();
        let mut got = Vec::new();
        let mut s = 0;
        for (i, b) in out.iter().enumerate() {
            if b.last {
                got.push(join_frame(&out[s..=i]));
                s = i + 1;
            } else {
                assert_eq!(b.user, 0);
            }
        }
        // (a corrupted EtherType or UDP port makes a frame non-RoCE: it passes with roce 0)
        assert_eq!(got, want);
        assert!(want.iter().any(|w| w.1 == 1) && want.len() < 200);
        let st = fifo.stats();
        assert_eq!(st.good as usize, want.len());
        assert_eq!(st.good + st.bad, 200);
    }
}
