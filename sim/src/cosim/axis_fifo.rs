//! `roce_axis_fifo` against its model (the identity: every beat out in order, unchanged),
//! with random `tvalid` gaps and `tready` backpressure, and its throughput.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::vl::{Dut, Model};
use crate::SimError;

/// A beat: (tdata words, tkeep, tlast, tuser).
pub type Beat = (Vec<u32>, u64, bool, bool);

/// Stream `beats` through the FIFO; returns what came out and the cycles taken.
pub fn axis_fifo_lockstep(beats: &[Beat], valid_p: f64, ready_p: f64, seed: u64) -> Result<(Vec<Beat>, u64), SimError> {
    let mut dut = Dut::new(Model::AxisFifo16, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_axis_fifo has no port {n}")));
    let (rst, sd, sk, sv, sr, sl, su) = (
        p("rst")?,
        p("s_axis_tdata")?,
        p("s_axis_tkeep")?,
        p("s_axis_tvalid")?,
        p("s_axis_tready")?,
        p("s_axis_tlast")?,
        p("s_axis_tuser")?,
    );
    let (md, mk, mv, mr, ml, mu) = (
        p("m_axis_tdata")?,
        p("m_axis_tkeep")?,
        p("m_axis_tvalid")?,
        p("m_axis_tready")?,
        p("m_axis_tlast")?,
        p("m_axis_tuser")?,
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    dut.set_u64(sv, 0);
    dut.set_u64(mr, 0);
    dut.set_u64(rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);
    let (mut i, mut on, mut out, mut cycles, mut idle) = (0usize, false, Vec::new(), 0u64, 0u64);
    let mut w = vec![0u32; 16];
    while out.len() < beats.len() {
        if !on && i < beats.len() {
            on = rng.random_bool(valid_p);
        }
        dut.set_u64(sv, u64::from(on));
        if let Some((d, k, l, u)) = beats.get(i) {
            dut.set(sd, d);
            dut.set_u64(sk, *k);
            dut.set_u64(sl, u64::from(*l));
            dut.set_u64(su, u64::from(*u));
        }
        let r = rng.random_bool(ready_p);
        dut.set_u64(mr, u64::from(r));
        dut.eval();
        let mut moved = false;
        if on && dut.get_bool(sr) {
            i += 1;
            on = false;
            moved = true;
        }
        if r && dut.get_bool(mv) {
            dut.get(md, &mut w);
            out.push((w.clone(), dut.get_u64(mk), dut.get_bool(ml), dut.get_bool(mu)));
            moved = true;
        }
        dut.tick();
        cycles += 1;
        idle = if moved { 0 } else { idle + 1 };
        if idle > 1000 {
            return Err(SimError::Config(format!(
                "roce_axis_fifo stalled: {} of {} beats out",
                out.len(),
                beats.len()
            )));
        }
    }
    Ok((out, cycles))
}
