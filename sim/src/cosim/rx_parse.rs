//! Lockstep run of `roce_rx_parse`: the Verilated parser and its model
//! (`roce_model::blocks::rx_parse`) get the same frames; every record and every payload
//! beat is compared, under random input gaps and independent random backpressure on the
//! record and payload outputs.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::axis::{split_frame, AxisBeat};
use roce_model::blocks::rx_parse::{self as model, BYTES};
use roce_model::contract::records::RxHdr;

use crate::cosim::Divergence;
use crate::stream::Traffic;
use crate::vl::{pack_bytes, unpack_bytes, Dut, Model, Port};
use crate::SimError;

/// Result of [`rx_parse_lockstep`].
#[derive(Clone, Debug, Default)]
pub struct RxParseReport {
    /// Records the HDL emitted, decoded (`None` where a reserved bit was set).
    pub records: Vec<Option<RxHdr>>,
    /// Payload beats the HDL emitted.
    pub payload_beats: usize,
    /// Every difference, in the order found.
    pub divergences: Vec<Divergence>,
    /// Per record: cycles from the acceptance of the beat that completed the frame's header
    /// to the first cycle the record was valid.
    pub rec_latency: Vec<u64>,
    /// Cycles the run took.
    pub cycles: u64,
    /// The cycle in which the last expected output moved.
    pub done_at: u64,
    /// Input beats.
    pub in_beats: usize,
}

struct Ports {
    rst: Port,
    s_data: Port,
    s_keep: Port,
    s_valid: Port,
    s_ready: Port,
    s_last: Port,
    s_tlen: Port,
    r_data: Port,
    r_valid: Port,
    r_ready: Port,
    p_data: Port,
    p_keep: Port,
    p_valid: Port,
    p_ready: Port,
    p_last: Port,
    p_user: Port,
}

fn beat_words(data: &[u8]) -> [u32; 16] {
    let mut d = [0u32; 16];
    pack_bytes(data, &mut d);
    d
}

fn words_bytes(w: &[u32], n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    unpack_bytes(w, &mut v);
    v
}

/// Run `frames` through the HDL parser and the model and compare. `traffic.valid_p` gaps
/// the input, `traffic.ready_p` is the probability each output is ready in a cycle
/// (drawn independently for the two).
pub fn rx_parse_lockstep(frames: &[Vec<u8>], traffic: &Traffic, fst: Option<&Path>) -> Result<RxParseReport, SimError> {
    let m = Model::RxParse512;
    let mut dut = Dut::new(m, fst)?;
    let port = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("{} has no port {n}", m.name())));
    let p = Ports {
        rst: port("rst")?,
        s_data: port("s_axis_tdata")?,
        s_keep: port("s_axis_tkeep")?,
        s_valid: port("s_axis_tvalid")?,
        s_ready: port("s_axis_tready")?,
        s_last: port("s_axis_tlast")?,
        s_tlen: port("s_axis_tlen")?,
        r_data: port("m_axis_rec_tdata")?,
        r_valid: port("m_axis_rec_tvalid")?,
        r_ready: port("m_axis_rec_tready")?,
        p_data: port("m_axis_pay_tdata")?,
        p_keep: port("m_axis_pay_tkeep")?,
        p_valid: port("m_axis_pay_tvalid")?,
        p_ready: port("m_axis_pay_tready")?,
        p_last: port("m_axis_pay_tlast")?,
        p_user: port("m_axis_pay_tuser")?,
    };

    // Expected outputs and the input beats (with the frame's length and whether the beat
    // completes the header).
    let mut want_recs = Vec::new();
    let mut want_pay: Vec<(usize, AxisBeat)> = Vec::new();
    let mut beats: Vec<(AxisBeat, u16, bool)> = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let r = model::parse(f);
        if let Some(pl) = model::payload(f, &r) {
            want_pay.extend(model::payload_beats(pl).into_iter().map(|b| (i, b)));
        }
        want_recs.push(r);
        let split = split_frame(f, BYTES, 0);
        let n = split.len();
        for (k, b) in split.into_iter().enumerate() {
            let completes = k == 1 || (k == 0 && n == 1);
            beats.push((b, f.len().min(usize::from(u16::MAX)) as u16, completes));
        }
    }

    for _ in 0..4 {
        dut.set_u64(p.rst, 1);
        dut.eval();
        dut.tick();
    }
    dut.set_u64(p.rst, 0);

    let mut rng = ChaCha8Rng::seed_from_u64(traffic.seed);
    let mut rep = RxParseReport { in_beats: beats.len(), ..RxParseReport::default() };
    let mut next = 0usize;
    let mut presenting = false;
    let mut hdr_accepted: Vec<u64> = Vec::new();
    let mut rec_seen_at: Option<u64> = None;
    let mut got_pay = 0usize;
    let mut idle = 0u64;
    let mut settle = 0u32;
    let mut cycle = 0u64;
    let mut rw = vec![0u32; p.r_data.words()];
    let mut pw = [0u32; 16];
    loop {
        let done = next == beats.len() && rep.records.len() >= want_recs.len() && got_pay >= want_pay.len();
        if done {
            if settle == 0 {
                rep.done_at = cycle;
            }
            settle += 1;
            if settle > 32 {
                break;
            }
        }
        if !presenting && next < beats.len() {
            presenting = rng.random_bool(traffic.valid_p.clamp(0.0, 1.0));
        }
        let (b, tlen, completes) = beats.get(next).map_or((None, 0, false), |(b, l, c)| (Some(b), *l, *c));
        let valid = presenting && b.is_some();
        let r_ready = done || rng.random_bool(traffic.ready_p.clamp(0.0, 1.0));
        let p_ready = done || rng.random_bool(traffic.ready_p.clamp(0.0, 1.0));
        dut.set(p.s_data, &beat_words(b.map_or(&[][..], |b| &b.data[..])));
        dut.set_u64(p.s_keep, b.map_or(0, |b| b.keep));
        dut.set_u64(p.s_valid, u64::from(valid));
        dut.set_u64(p.s_last, u64::from(b.is_some_and(|b| b.last)));
        dut.set_u64(p.s_tlen, u64::from(tlen));
        dut.set_u64(p.r_ready, u64::from(r_ready));
        dut.set_u64(p.p_ready, u64::from(p_ready));
        dut.eval();
        let s_ready = dut.get_bool(p.s_ready);
        let r_valid = dut.get_bool(p.r_valid);
        let p_valid = dut.get_bool(p.p_valid);
        let mut moved = false;
        if valid && s_ready {
            if completes {
                hdr_accepted.push(cycle);
            }
            next += 1;
            presenting = false;
            moved = true;
        }
        if r_valid {
            let k = rep.records.len();
            let first = *rec_seen_at.get_or_insert(cycle);
            if r_ready {
                dut.get(p.r_data, &mut rw);
                let bytes = words_bytes(&rw, RxHdr::SIZE);
                let got = RxHdr::decode(&bytes).ok();
                let frame = k;
                match (&got, want_recs.get(k)) {
                    (_, None) => rep.divergences.push(Divergence {
                        frame,
                        beat: 0,
                        cycle,
                        what: "HDL emitted a record the model did not".into(),
                    }),
                    (None, Some(w)) => rep.divergences.push(Divergence {
                        frame,
                        beat: 0,
                        cycle,
                        what: format!("record with reserved bits set: {bytes:02x?}; model {w:?}"),
                    }),
                    (Some(g), Some(w)) if g != w => rep.divergences.push(Divergence {
                        frame,
                        beat: 0,
                        cycle,
                        what: format!("record: HDL {g:?}\n  model {w:?}"),
                    }),
                    _ => {}
                }
                if let Some(&a) = hdr_accepted.get(k) {
                    rep.rec_latency.push(first - a);
                }
                rep.records.push(got);
                rec_seen_at = None;
                moved = true;
            }
        }
        if p_valid && p_ready {
            dut.get(p.p_data, &mut pw);
            let g = AxisBeat {
                data: words_bytes(&pw, BYTES),
                keep: dut.get_u64(p.p_keep),
                last: dut.get_bool(p.p_last),
                user: dut.get_u64(p.p_user) as u8,
            };
            match want_pay.get(got_pay) {
                None => rep.divergences.push(Divergence {
                    frame: frames.len(),
                    beat: got_pay,
                    cycle,
                    what: "HDL emitted a payload beat the model did not".into(),
                }),
                Some((fi, w)) if *w != g => rep.divergences.push(Divergence {
                    frame: *fi,
                    beat: got_pay,
                    cycle,
                    what: format!(
                        "payload beat: HDL keep {:#x} last {} user {} data {:02x?}\n  model keep {:#x} last {} data {:02x?}",
                        g.keep, g.last, g.user, g.data, w.keep, w.last, w.data
                    ),
                }),
                _ => {}
            }
            got_pay += 1;
            moved = true;
        }
        dut.tick();
        cycle += 1;
        if moved {
            idle = 0;
        } else if !done {
            idle += 1;
            if idle > 2000 {
                return Err(SimError::Stalled {
                    model: m.name(),
                    idle,
                    cycle,
                    got: rep.records.len(),
                    want: want_recs.len(),
                });
            }
        }
        if rep.divergences.len() > 20 {
            break;
        }
    }
    rep.payload_beats = got_pay;
    rep.cycles = cycle;
    Ok(rep)
}
