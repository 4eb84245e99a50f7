//! `roce_axis_frame_gate` against the rule its header states, cycle by cycle, with random
//! frames, `tvalid` gaps, `tready` backpressure and an enable that rises and falls at any
//! time; plus what the rule is for: every frame reaches the sink whole, cut short (never a
//! beat after a discarded one) or not at all, and a closed gate never stalls the source.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::vl::{Dut, Model};
use crate::SimError;

/// What happened to the frames.
#[derive(Clone, Debug, Default)]
pub struct GateReport {
    /// Frames that reached the sink whole.
    pub whole: u64,
    /// Frames of which a first part reached the sink (en fell during the frame).
    pub cut: u64,
    /// Frames discarded entirely.
    pub dropped: u64,
    /// Cycles run.
    pub cycles: u64,
    /// Differences from the stated rule.
    pub divergences: Vec<String>,
}

/// The rule of the module header: a beat passes iff `en` is high now and either the frame
/// has not started (no beat of it taken yet) or every beat of it so far passed with `en`
/// high at every cycle since its first beat was taken.
#[derive(Clone, Copy, Debug, Default)]
struct Rule {
    started: bool,
    alive: bool,
}

impl Rule {
    fn pass(&self, en: bool) -> bool {
        en && (!self.started || self.alive)
    }
    /// End of a cycle: `taken` = a beat was handed over (with `last`), `passed` = it went on.
    fn step(&mut self, en: bool, taken: Option<(bool, bool)>) {
        if let Some((last, passed)) = taken {
            self.started = !last;
            self.alive = passed;
        }
        if !en {
            self.alive = false;
        }
    }
}

/// Run `frames` (lengths in beats) through the gate. Each cycle the source offers its beat
/// with probability `valid_p`, the sink is ready with probability `ready_p`, and `en`
/// flips with probability `flip_p`.
pub fn axis_frame_gate_lockstep(
    frames: &[usize],
    valid_p: f64,
    ready_p: f64,
    flip_p: f64,
    seed: u64,
) -> Result<GateReport, SimError> {
    let mut dut = Dut::new(Model::AxisFrameGate, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_axis_frame_gate has no port {n}")));
    let (rst, en_p, sv, sr, sl, mv, mr) = (
        p("rst")?,
        p("en")?,
        p("s_axis_tvalid")?,
        p("s_axis_tready")?,
        p("s_axis_tlast")?,
        p("m_axis_tvalid")?,
        p("m_axis_tready")?,
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rep = GateReport::default();
    dut.set_u64(sv, 0);
    dut.set_u64(mr, 0);
    dut.set_u64(en_p, 0);
    dut.set_u64(rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);

    let mut rule = Rule::default();
    let (mut f, mut beat, mut on, mut en) = (0usize, 0usize, false, true);
    // beats of the current frame that went on, and whether one was discarded
    let (mut passed_n, mut discarded) = (0usize, false);
    while f < frames.len() {
        if rep.cycles > 100 * frames.iter().sum::<usize>() as u64 + 10_000 {
            return Err(SimError::Config(format!("roce_axis_frame_gate stalled at frame {f}")));
        }
        if rng.random_bool(flip_p) {
            en = !en;
        }
        if !on {
            on = rng.random_bool(valid_p);
        }
        let last = beat + 1 == frames[f];
        let ready = rng.random_bool(ready_p);
        dut.set_u64(en_p, u64::from(en));
        dut.set_u64(sv, u64::from(on));
        dut.set_u64(sl, u64::from(last));
        dut.set_u64(mr, u64::from(ready));
        dut.eval();
        let (m_valid, s_ready) = (dut.get_bool(mv), dut.get_bool(sr));
        let want_pass = rule.pass(en);
        let want_valid = on && want_pass;
        let want_ready = if want_pass { ready } else { true };
        if m_valid != want_valid || (on && s_ready != want_ready) {
            rep.divergences.push(format!(
                "cycle {}: frame {f} beat {beat} en {en}: m_axis_tvalid {m_valid} s_axis_tready {s_ready}, want {want_valid} {want_ready}",
                rep.cycles
            ));
        }
        let mut taken = None;
        if on && s_ready {
            let passed = m_valid && ready;
            if passed {
                if discarded {
                    rep.divergences.push(format!("frame {f}: beat {beat} passed after a discarded one"));
                }
                passed_n += 1;
            } else {
                discarded = true;
            }
            taken = Some((last, passed));
            on = false;
            beat += 1;
            if last {
                match passed_n {
                    0 => rep.dropped += 1,
                    n if n == frames[f] => rep.whole += 1,
                    _ => rep.cut += 1,
                }
                f += 1;
                beat = 0;
                passed_n = 0;
                discarded = false;
            }
        }
        rule.step(en, taken);
        dut.tick();
        rep.cycles += 1;
    }
    Ok(rep)
}
