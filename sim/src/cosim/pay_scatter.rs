//! Lockstep run of `roce_pay_scatter` against `roce_model::blocks::pay_scatter`: random
//! commands (segments written or skipped, any lengths and addresses) with their payload
//! packets, under random `tvalid` gaps on the payload and random backpressure on both DMA
//! write channels; every DMA write (request and data) must equal the model's, in order.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::pay_scatter::{scatter, Segment};
use roce_model::contract::records::DmaReq;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// Segments per command (the HDL's NSEG).
pub const NSEG: usize = 3;

/// One command and its payload packet (`None`: the command reads no payload).
#[derive(Clone, Debug)]
pub struct ScatterCmd {
    /// The segments.
    pub segs: [Segment; NSEG],
    /// The payload packet.
    pub payload: Option<Vec<u8>>,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct ScatterReport {
    /// DMA writes in HDL order.
    pub writes: Vec<(u64, Vec<u8>)>,
    /// Cycles run and data beats written.
    pub cycles: u64,
    /// Data beats moved.
    pub beats: u64,
    /// Differences from the model.
    pub divergences: Vec<String>,
}

/// Run `cmds` with payload `tvalid` probability `valid_p` and `tready` probability
/// `ready_p` on the two DMA channels.
pub fn pay_scatter_lockstep(
    cmds: &[ScatterCmd],
    valid_p: f64,
    ready_p: f64,
    seed: u64,
) -> Result<ScatterReport, SimError> {
    let mut dut = Dut::new(Model::PayScatter, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_pay_scatter has no port {n}")));
    let (rst, c_valid, c_ready, c_pay, c_we, c_len, c_addr) = (
        p("rst")?,
        p("s_cmd_valid")?,
        p("s_cmd_ready")?,
        p("s_cmd_pay")?,
        p("s_cmd_we")?,
        p("s_cmd_len")?,
        p("s_cmd_addr")?,
    );
    let (pd, pk, pv, pr, pl) = (
        p("s_axis_pay_tdata")?,
        p("s_axis_pay_tkeep")?,
        p("s_axis_pay_tvalid")?,
        p("s_axis_pay_tready")?,
        p("s_axis_pay_tlast")?,
    );
    let (rv, rr, rq) = (p("m_dma_wr_valid")?, p("m_dma_wr_ready")?, p("m_dma_wr")?);
    let (dd, dk, dv, dr, dl) = (
        p("m_axis_dma_wr_tdata")?,
        p("m_axis_dma_wr_tkeep")?,
        p("m_axis_dma_wr_tvalid")?,
        p("m_axis_dma_wr_tready")?,
        p("m_axis_dma_wr_tlast")?,
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for q in [c_valid, pv, rr, dr] {
        dut.set_u64(q, 0);
    }
    dut.set_u64(rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);

    // the payload beats of every command, in order
    let mut beats: Vec<(Vec<u8>, bool)> = Vec::new();
    for c in cmds {
        if let Some(pl) = &c.payload {
            let n = pl.len().div_ceil(64).max(1);
            for i in 0..n {
                let chunk = pl.get(64 * i..(64 * i + 64).min(pl.len())).unwrap_or(&[]).to_vec();
                beats.push((chunk, i + 1 == n));
            }
        }
    }
    let mut rep = ScatterReport::default();
    let (mut next_cmd, mut next_beat) = (0usize, 0usize);
    let (mut cmd_on, mut beat_on) = (false, false);
    // the two channels are independent: requests and data are paired in order
    let mut reqs: std::collections::VecDeque<(u64, usize)> = std::collections::VecDeque::new();
    let mut done_data: std::collections::VecDeque<Vec<u8>> = std::collections::VecDeque::new();
    let mut data: Vec<u8> = Vec::new();
    let mut w = [0u32; 16];
    let mut idle = 0u64;
    loop {
        if !cmd_on && next_cmd < cmds.len() {
            cmd_on = true;
            let c = &cmds[next_cmd];
            dut.set_u64(c_pay, u64::from(c.payload.is_some()));
            let (mut we, mut len) = (0u64, 0u64);
            let mut addr = [0u32; 6];
            for (k, s) in c.segs.iter().enumerate() {
                we |= u64::from(s.write) << k;
                len |= u64::from(s.len) << (16 * k);
                addr[2 * k] = s.addr as u32;
                addr[2 * k + 1] = (s.addr >> 32) as u32;
            }
            dut.set_u64(c_we, we);
            dut.set_u64(c_len, len);
            dut.set(c_addr, &addr);
        }
        dut.set_u64(c_valid, u64::from(cmd_on));
        if !beat_on && next_beat < beats.len() && rng.random_bool(valid_p) {
            beat_on = true;
            let (b, last) = &beats[next_beat];
            pack_bytes(b, &mut w);
            dut.set(pd, &w);
            let keep = if b.len() >= 64 { u64::MAX } else { (1u64 << b.len()) - 1 };
            dut.set_u64(pk, keep);
            dut.set_u64(pl, u64::from(*last));
        }
        dut.set_u64(pv, u64::from(beat_on));
        let (r1, r2) = (rng.random_bool(ready_p), rng.random_bool(ready_p));
        dut.set_u64(rr, u64::from(r1));
        dut.set_u64(dr, u64::from(r2));
        dut.eval();
        let mut moved = false;
        if cmd_on && dut.get_bool(c_ready) {
            cmd_on = false;
            next_cmd += 1;
            moved = true;
        }
        if beat_on && dut.get_bool(pr) {
            beat_on = false;
            next_beat += 1;
            moved = true;
        }
        if r1 && dut.get_bool(rv) {
            let r: DmaReq = dut.get_bundle(rq);
            reqs.push_back((r.addr, usize::from(r.len)));
            moved = true;
        }
        if r2 && dut.get_bool(dv) {
            dut.get(dd, &mut w);
            let keep = dut.get_u64(dk);
            let mut b = [0u8; 64];
            unpack_bytes(&w, &mut b);
            let n = keep.count_ones() as usize;
            if keep != if n == 64 { u64::MAX } else { (1u64 << n) - 1 } {
                rep.divergences
                    .push(format!("write {}: tkeep {keep:#x} is not contiguous from lane 0", rep.writes.len()));
            }
            data.extend_from_slice(&b[..n]);
            rep.beats += 1;
            if dut.get_bool(dl) {
                done_data.push_back(std::mem::take(&mut data));
            }
            moved = true;
        }
        while !reqs.is_empty() && !done_data.is_empty() {
            let (Some((addr, len)), Some(d)) = (reqs.pop_front(), done_data.pop_front()) else { break };
            if d.len() != len {
                rep.divergences.push(format!(
                    "write {}: {} data bytes for a request of {len}",
                    rep.writes.len(),
                    d.len()
                ));
            }
            rep.writes.push((addr, d));
        }
        dut.tick();
        rep.cycles += 1;
        idle = if moved { 0 } else { idle + 1 };
        if next_cmd == cmds.len() && next_beat == beats.len() && idle > 50 {
            if !reqs.is_empty() || !done_data.is_empty() {
                rep.divergences.push(format!("{} requests and {} data packets unpaired", reqs.len(), done_data.len()));
            }
            break;
        }
        if idle > 10_000 {
            return Err(SimError::Config(format!(
                "roce_pay_scatter stalled at command {next_cmd} of {}, beat {next_beat} of {}",
                cmds.len(),
                beats.len()
            )));
        }
    }
    let want: Vec<(u64, Vec<u8>)> =
        cmds.iter().flat_map(|c| scatter(c.payload.as_deref().unwrap_or(&[]), &c.segs)).collect();
    if let Some(i) = (0..want.len().max(rep.writes.len())).find(|&i| want.get(i) != rep.writes.get(i)) {
        rep.divergences.push(format!(
            "write {i}: hdl {:?} model {:?} ({} vs {} writes)",
            rep.writes.get(i).map(|(a, d)| (a, d.len())),
            want.get(i).map(|(a, d)| (a, d.len())),
            rep.writes.len(),
            want.len()
        ));
    }
    Ok(rep)
}
