//! Lockstep run of `roce_tx_build`: the Verilated builder gets packet records and payload
//! packets, and every output beat is compared with the frame the model
//! (`roce_model::blocks::tx_build`, i.e. the wire codec's `FrameBuilder`) builds, under
//! random gaps on both inputs and random backpressure on the output. Dropped records are
//! counted on `drop`.

use std::path::Path;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::axis::{split_frame, AxisBeat};
use roce_model::blocks::tx_build::{self as model, BYTES};
use roce_model::contract::records::TxHdr;

use crate::cosim::Divergence;
use crate::stream::Traffic;
use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// One record and the payload packet sent with it.
#[derive(Clone, Debug)]
pub struct TxCase {
    /// The record.
    pub hdr: TxHdr,
    /// The payload beats sent after the previous case's (normally
    /// `model::payload_beats(payload)`; a test may send a packet of the wrong length).
    pub send: Vec<AxisBeat>,
}

/// Result of [`tx_build_lockstep`].
#[derive(Clone, Debug, Default)]
pub struct TxBuildReport {
    /// Frames the HDL wrote.
    pub frames: usize,
    /// `drop` pulses.
    pub drops: usize,
    /// Records the model refuses.
    pub want_drops: usize,
    /// Every difference, in the order found.
    pub divergences: Vec<Divergence>,
    /// Per frame: cycles from its record's acceptance to its first beat being valid.
    pub latency: Vec<u64>,
    /// The cycle in which the last expected output moved.
    pub done_at: u64,
    /// Output beats expected.
    pub out_beats: usize,
    /// The frames the HDL wrote (the bytes `tkeep` marks).
    pub out: Vec<Vec<u8>>,
}

fn words(data: &[u8]) -> Vec<u32> {
    let mut d = vec![0u32; data.len().div_ceil(4)];
    pack_bytes(data, &mut d);
    d
}

fn bytes(w: &[u32], n: usize) -> Vec<u8> {
    let mut v = vec![0; n];
    unpack_bytes(w, &mut v);
    v
}

/// Run the cases through the HDL builder and compare with the model.
pub fn tx_build_lockstep(cases: &[TxCase], traffic: &Traffic, fst: Option<&Path>) -> Result<TxBuildReport, SimError> {
    let m = Model::TxBuild512;
    let mut dut = Dut::new(m, fst)?;
    let port = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("{} has no port {n}", m.name())));
    let rst = port("rst")?;
    let h_data = port("s_axis_hdr_tdata")?;
    let h_valid = port("s_axis_hdr_tvalid")?;
    let h_ready = port("s_axis_hdr_tready")?;
    let p_data = port("s_axis_pay_tdata")?;
    let p_keep = port("s_axis_pay_tkeep")?;
    let p_valid = port("s_axis_pay_tvalid")?;
    let p_ready = port("s_axis_pay_tready")?;
    let p_last = port("s_axis_pay_tlast")?;
    let o_data = port("m_axis_tdata")?;
    let o_keep = port("m_axis_tkeep")?;
    let o_valid = port("m_axis_tvalid")?;
    let o_ready = port("m_axis_tready")?;
    let o_last = port("m_axis_tlast")?;
    let o_user = port("m_axis_tuser")?;
    let drop = port("drop")?;

    // Expected frames (record index, beats) and the input streams.
    let mut want: Vec<(usize, Vec<AxisBeat>)> = Vec::new();
    let mut rep = TxBuildReport::default();
    let mut pay: Vec<AxisBeat> = Vec::new();
    let recs: Vec<Vec<u32>> = cases.iter().map(|c| words(&c.hdr.encode())).collect();
    for (i, c) in cases.iter().enumerate() {
        let (p, _, bad) = model::take_payload(&c.send, c.hdr.payload_len);
        match model::build(&c.hdr, &p) {
            Ok(f) => {
                let mut b = split_frame(&f, BYTES, 0);
                if let Some(l) = b.last_mut() {
                    l.user = u8::from(bad);
                }
                rep.out_beats += b.len();
                want.push((i, b));
            }
            Err(_) => rep.want_drops += 1,
        }
        pay.extend(c.send.iter().cloned());
    }

    for _ in 0..4 {
        dut.set_u64(rst, 1);
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);

    let mut rng = ChaCha8Rng::seed_from_u64(traffic.seed);
    let (mut nh, mut np) = (0usize, 0usize);
    let (mut show_h, mut show_p) = (false, false);
    let mut accepted_at: Vec<u64> = Vec::new();
    let (mut fi, mut bi) = (0usize, 0usize);
    let mut first_seen: Option<u64> = None;
    let mut got_beats = 0usize;
    let mut cur = Vec::new();
    let mut cycle = 0u64;
    let (mut idle, mut settle) = (0u64, 0u32);
    let zero_rec = vec![0u32; h_data.words()];
    let mut ow = [0u32; 16];
    loop {
        let done = nh == cases.len() && np == pay.len() && fi == want.len();
        if done {
            if settle == 0 {
                rep.done_at = cycle;
            }
            settle += 1;
            if settle > 32 {
                break;
            }
        }
        if !show_h && nh < cases.len() {
            show_h = rng.random_bool(traffic.valid_p.clamp(0.0, 1.0));
        }
        if !show_p && np < pay.len() {
            show_p = rng.random_bool(traffic.valid_p.clamp(0.0, 1.0));
        }
        let hv = show_h && nh < cases.len();
        let pv = show_p && np < pay.len();
        let ready = done || rng.random_bool(traffic.ready_p.clamp(0.0, 1.0));
        dut.set(h_data, recs.get(nh).unwrap_or(&zero_rec));
        dut.set_u64(h_valid, u64::from(hv));
        let pb = pay.get(np);
        dut.set(p_data, &words(pb.map_or(&[0u8; BYTES][..], |b| &b.data[..])));
        dut.set_u64(p_keep, pb.map_or(0, |b| b.keep));
        dut.set_u64(p_last, u64::from(pb.is_some_and(|b| b.last)));
        dut.set_u64(p_valid, u64::from(pv));
        dut.set_u64(o_ready, u64::from(ready));
        dut.eval();
        let mut moved = false;
        if hv && dut.get_bool(h_ready) {
            accepted_at.push(cycle);
            nh += 1;
            show_h = false;
            moved = true;
        }
        if pv && dut.get_bool(p_ready) {
            np += 1;
            show_p = false;
            moved = true;
        }
        if dut.get_bool(drop) {
            rep.drops += 1;
            moved = true;
        }
        if dut.get_bool(o_valid) {
            first_seen.get_or_insert(cycle);
            if ready {
                dut.get(o_data, &mut ow);
                let g = AxisBeat {
                    data: bytes(&ow, BYTES),
                    keep: dut.get_u64(o_keep),
                    last: dut.get_bool(o_last),
                    user: dut.get_u64(o_user) as u8,
                };
                got_beats += 1;
                moved = true;
                cur.extend_from_slice(g.bytes());
                if g.last {
                    rep.out.push(std::mem::take(&mut cur));
                }
                match want.get(fi) {
                    None => rep.divergences.push(Divergence {
                        frame: fi,
                        beat: bi,
                        cycle,
                        what: "HDL wrote a beat the model did not".into(),
                    }),
                    Some((rec, w)) => {
                        let wb = w.get(bi);
                        if wb != Some(&g) {
                            rep.divergences.push(Divergence {
                                frame: fi,
                                beat: bi,
                                cycle,
                                what: format!(
                                    "record {rec}: HDL keep {:#x} last {} user {} data {:02x?}\n  model {}",
                                    g.keep,
                                    g.last,
                                    g.user,
                                    g.data,
                                    wb.map_or("no beat".to_string(), |w| format!(
                                        "keep {:#x} last {} user {} data {:02x?}",
                                        w.keep, w.last, w.user, w.data
                                    ))
                                ),
                            });
                        }
                        if bi == 0 {
                            if let (Some(&a), Some(f)) = (accepted_at.get(*rec), first_seen) {
                                rep.latency.push(f - a);
                            }
                        }
                        bi += 1;
                        if g.last || bi >= w.len() {
                            if !g.last || bi != w.len() {
                                rep.divergences.push(Divergence {
                                    frame: fi,
                                    beat: bi,
                                    cycle,
                                    what: format!(
                                        "frame length: HDL tlast at beat {} (last {}), model {} beats",
                                        bi,
                                        g.last,
                                        w.len()
                                    ),
                                });
                            }
                            fi += 1;
                            bi = 0;
                        }
                    }
                }
                first_seen = None;
            }
        }
        dut.tick();
        cycle += 1;
        if moved {
            idle = 0;
        } else if !done {
            idle += 1;
            if idle > 2000 {
                return Err(SimError::Stalled { model: m.name(), idle, cycle, got: got_beats, want: rep.out_beats });
            }
        }
        if rep.divergences.len() > 20 {
            break;
        }
    }
    rep.frames = fi;
    Ok(rep)
}
