//! `roce_axis_async_fifo` run on two clocks: the write side on `clk` (the shim's tick), the
//! read side on `m_clk` (driven here), both edges scheduled by their periods in picoseconds
//! so the two domains drift through every phase. Frames go in with random `tvalid` gaps and
//! come out with random `tready`; the run reports what came out and how.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// One beat: data bytes (DATA_W/8 of them), tkeep, tlast, tuser.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Beat {
    /// `tdata`.
    pub data: Vec<u8>,
    /// `tkeep`.
    pub keep: u64,
    /// `tlast`.
    pub last: bool,
    /// `tuser`.
    pub user: u64,
}

/// A FIFO configuration the crate was built with: a `model` line of `hdl/configs.txt` (a unit
/// test checks the parameters against it).
#[derive(Clone, Copy, Debug)]
pub struct AsyncFifoModel {
    /// The model.
    pub model: Model,
    /// Bytes per beat.
    pub bytes: usize,
    /// `DEPTH`.
    pub depth: usize,
    /// `FRAME`.
    pub frame: bool,
    /// `DROP_WHEN_FULL`.
    pub drop: bool,
}

impl AsyncFifoModel {
    /// DATA_W 64, DEPTH 16, store and forward (the TX configuration).
    pub const FRAME: AsyncFifoModel =
        AsyncFifoModel { model: Model::AxisAsyncFifoFrame, bytes: 8, depth: 16, frame: true, drop: false };
    /// DATA_W 64, DEPTH 16, store and forward, dropping when full (the RX configuration).
    pub const DROP: AsyncFifoModel =
        AsyncFifoModel { model: Model::AxisAsyncFifoDrop, bytes: 8, depth: 16, frame: true, drop: true };
    /// DATA_W 64, DEPTH 8, beat by beat.
    pub const STREAM: AsyncFifoModel =
        AsyncFifoModel { model: Model::AxisAsyncFifoStream, bytes: 8, depth: 8, frame: false, drop: false };
}

/// What came out.
#[derive(Clone, Debug, Default)]
pub struct AsyncFifoReport {
    /// Beats read, in order.
    pub out: Vec<Beat>,
    /// Read-side cycles in which a frame had started but no beat was offered (counted only
    /// while `tready` was high the cycle before, i.e. gaps the FIFO made).
    pub gaps: u64,
    /// `s_drop` pulses.
    pub drops: u64,
    /// Write-side cycles in which a beat was offered and not taken.
    pub stalls: u64,
    /// Write and read cycles run.
    pub cycles: (u64, u64),
}

/// Push `beats` through `cfg` with the write clock period `w_ps` and the read clock period
/// `r_ps`, `tvalid` probability `valid_p` and `tready` probability `ready_p`.
pub fn axis_async_fifo_lockstep(
    cfg: AsyncFifoModel,
    beats: &[Beat],
    w_ps: u64,
    r_ps: u64,
    valid_p: f64,
    ready_p: f64,
    seed: u64,
) -> Result<AsyncFifoReport, SimError> {
    let mut dut = Dut::new(cfg.model, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_axis_async_fifo has no port {n}")));
    let (rst, sd, sk, sv, sr, sl, su, drop) = (
        p("rst")?,
        p("s_axis_tdata")?,
        p("s_axis_tkeep")?,
        p("s_axis_tvalid")?,
        p("s_axis_tready")?,
        p("s_axis_tlast")?,
        p("s_axis_tuser")?,
        p("s_drop")?,
    );
    let (mclk, mrst, md, mk, mv, mr, ml, mu) = (
        p("m_clk")?,
        p("m_rst")?,
        p("m_axis_tdata")?,
        p("m_axis_tkeep")?,
        p("m_axis_tvalid")?,
        p("m_axis_tready")?,
        p("m_axis_tlast")?,
        p("m_axis_tuser")?,
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rep = AsyncFifoReport::default();
    let mut w = vec![0u32; sd.words()];
    // both resets held over several edges of both clocks
    dut.set_u64(sv, 0);
    dut.set_u64(mr, 0);
    dut.set_u64(rst, 1);
    dut.set_u64(mrst, 1);
    for _ in 0..4 {
        dut.eval();
        dut.tick();
        dut.set_u64(mclk, 1);
        dut.eval();
        dut.set_u64(mclk, 0);
        dut.eval();
    }
    dut.set_u64(rst, 0);
    dut.set_u64(mrst, 0);

    let (mut tw, mut tr) = (w_ps, r_ps / 2 + 1); // next edge times, out of phase
    let (mut next, mut on) = (0usize, false);
    let mut ready = false;
    let mut in_frame = false; // a frame's first beat came out, its last not yet
    let mut was_ready = false;
    let mut idle = 0u64;
    loop {
        if tw <= tr {
            // ---- write clock edge
            if !on && next < beats.len() && rng.random_bool(valid_p) {
                on = true;
                let b = &beats[next];
                pack_bytes(&b.data, &mut w);
                dut.set(sd, &w);
                dut.set_u64(sk, b.keep);
                dut.set_u64(sl, u64::from(b.last));
                dut.set_u64(su, b.user);
            }
            dut.set_u64(sv, u64::from(on));
            dut.eval();
            if on {
                if dut.get_bool(sr) {
                    on = false;
                    next += 1;
                    idle = 0;
                } else {
                    rep.stalls += 1;
                }
            }
            rep.drops += dut.get_u64(drop);
            dut.tick();
            rep.cycles.0 += 1;
            tw += w_ps;
        } else {
            // ---- read clock edge
            dut.set_u64(mr, u64::from(ready));
            dut.eval();
            let valid = dut.get_bool(mv);
            if in_frame && !valid && was_ready {
                rep.gaps += 1;
            }
            if valid && ready {
                dut.get(md, &mut w);
                let mut data = vec![0u8; cfg.bytes];
                unpack_bytes(&w, &mut data);
                let b = Beat { data, keep: dut.get_u64(mk), last: dut.get_bool(ml), user: dut.get_u64(mu) };
                in_frame = !b.last;
                rep.out.push(b);
                idle = 0;
            }
            was_ready = ready;
            dut.set_u64(mclk, 1);
            dut.eval();
            dut.set_u64(mclk, 0);
            dut.eval();
            rep.cycles.1 += 1;
            tr += r_ps;
            ready = rng.random_bool(ready_p);
            idle += 1;
        }
        if next == beats.len() && !on && idle > 200 {
            break;
        }
        if idle > 100_000 {
            return Err(SimError::Config(format!("roce_axis_async_fifo stalled at beat {next} of {}", beats.len())));
        }
    }
    // a drop pulse of the last write cycle
    dut.eval();
    rep.drops += dut.get_u64(drop);
    Ok(rep)
}
