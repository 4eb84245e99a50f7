//! Lockstep run of `roce_dma_axi` against `roce_model::blocks::dma_axi`: the engine
//! side (read requests with tags, write requests and their lane-0 aligned data) driven with
//! random gaps and read-data backpressure, the AXI side played by a slave over host memory
//! ([`HostMem`]) with random READY, random latencies, read responses out of order across
//! IDs (and interleaved beat by beat), and injected SLVERR/DECERR responses. Checked: every
//! AR/AW burst, every W beat (data, strobes, WLAST), host memory after the writes, every
//! beat returned to the engine (data, tuser, tlast, per tag in order), the error pulses, and
//! the AXI/AXI-Stream rule that a valid output holds its payload until it is taken.

use std::collections::{HashMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::dma_axi::{self as model, Burst, RdBeat, WrBeat, BEAT};
use roce_model::contract::records::DmaReq;
use roce_model::engine::HostMem;

use super::ports;
use crate::vl::{pack_bytes, unpack_bytes, Dut, Model, Port};
use crate::SimError;

/// A Verilated configuration of the bridge: a `config` line of `hdl/configs.txt` (a unit test
/// checks the parameters against it).
#[derive(Clone, Copy, Debug)]
pub struct DmaAxiModel {
    /// The model.
    pub model: Model,
    /// `TAG_W`.
    pub tag_w: u32,
    /// `MAX_BURST`.
    pub max_burst: u16,
}

impl DmaAxiModel {
    /// The default parameters (TAG_W 4, ID_W 4, MAX_BURST 64, RD_QUEUE 16, WR_QUEUE 4).
    pub const DEFAULT: DmaAxiModel = DmaAxiModel { model: Model::DmaAxi, tag_w: 4, max_burst: 64 };
    /// TAG_W 2, ID_W 3, MAX_BURST 4, RD_QUEUE 2, WR_QUEUE 2: many bursts, full queues.
    pub const SMALL: DmaAxiModel = DmaAxiModel { model: Model::DmaAxiSmall, tag_w: 2, max_burst: 4 };
}

/// A read the engine asks for.
#[derive(Clone, Debug)]
pub struct DmaRead {
    /// Tag (below 2^TAG_W).
    pub tag: u8,
    /// Address.
    pub addr: u64,
    /// Bytes (1..=65535).
    pub len: u16,
}

/// A write the engine makes.
#[derive(Clone, Debug)]
pub struct DmaWrite {
    /// Address.
    pub addr: u64,
    /// Bytes (1..=65535 of them).
    pub data: Vec<u8>,
}

/// How the AXI slave behaves (probabilities per cycle, latencies in cycles).
#[derive(Clone, Copy, Debug)]
pub struct AxiSlave {
    /// ARREADY.
    pub ar_ready: f64,
    /// AWREADY.
    pub aw_ready: f64,
    /// WREADY.
    pub w_ready: f64,
    /// Offering an R beat when one is due.
    pub r_valid: f64,
    /// Offering a B response when one is due.
    pub b_valid: f64,
    /// From an AR to its first beat, and from a burst's last W beat to its B (inclusive range).
    pub latency: (u64, u64),
    /// R beats of different IDs interleave beat by beat (else a burst goes out whole).
    pub interleave: bool,
    /// Probability that a burst fails (SLVERR or DECERR, data zero for reads, not written).
    pub err: f64,
}

/// How the engine side behaves (probabilities per cycle).
#[derive(Clone, Copy, Debug)]
pub struct EngineSide {
    /// Offering the next read request.
    pub rd_valid: f64,
    /// Offering the next write request.
    pub wr_valid: f64,
    /// Offering the next write data beat.
    pub wd_valid: f64,
    /// Taking read data (tready).
    pub rd_ready: f64,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct DmaAxiReport {
    /// Cycles run.
    pub cycles: u64,
    /// Beats returned to the engine.
    pub rd_beats: u64,
    /// First and last cycle a beat was returned to the engine.
    pub rd_span: Option<(u64, u64)>,
    /// W beats.
    pub w_beats: u64,
    /// First and last cycle of a W handshake.
    pub w_span: Option<(u64, u64)>,
    /// Cycles of the first read request, AR, R beat and write data beat handshakes.
    pub firsts: [Option<u64>; 4],
    /// AR bursts.
    pub ar_bursts: u64,
    /// AW bursts.
    pub aw_bursts: u64,
    /// R beats of another ID than the previous beat while that beat's burst was unfinished.
    pub interleaved: u64,
    /// Bursts whose first R beat came before that of a burst issued earlier.
    pub overtaken: u64,
    /// Read and write bursts the slave failed.
    pub rd_err_bursts: u64,
    /// Write bursts the slave failed.
    pub wr_err_bursts: u64,
    /// Differences from the model and protocol violations.
    pub divergences: Vec<String>,
}

struct RdBurst {
    beats: Vec<([u8; BEAT], bool)>,
    resp: u8,
    at: u64,
    next: usize,
    seq: u64,
}

/// Run `reads` and `writes` (each channel in order) through the bridge `cfg`, reads served
/// from `mem` (which the writes also land in: keep the two address ranges apart).
pub fn dma_axi_lockstep(
    cfg: DmaAxiModel,
    reads: &[DmaRead],
    writes: &[DmaWrite],
    mem: &mut HostMem,
    slave: AxiSlave,
    eng: EngineSide,
    seed: u64,
) -> Result<DmaAxiReport, SimError> {
    let mut dut = Dut::new(cfg.model, None)?;
    let p = ports!(dut;
        rst = "rst",
        s_dma_rd_valid = "s_dma_rd_valid",
        s_dma_rd_ready = "s_dma_rd_ready",
        s_dma_rd = "s_dma_rd",
        s_dma_rd_tag = "s_dma_rd_tag",
        m_dma_rd_tdata = "m_dma_rd_tdata",
        m_dma_rd_tvalid = "m_dma_rd_tvalid",
        m_dma_rd_tready = "m_dma_rd_tready",
        m_dma_rd_tlast = "m_dma_rd_tlast",
        m_dma_rd_tuser = "m_dma_rd_tuser",
        m_dma_rd_tid = "m_dma_rd_tid",
        s_dma_wr_valid = "s_dma_wr_valid",
        s_dma_wr_ready = "s_dma_wr_ready",
        s_dma_wr = "s_dma_wr",
        s_axis_dma_wr_tdata = "s_axis_dma_wr_tdata",
        s_axis_dma_wr_tkeep = "s_axis_dma_wr_tkeep",
        s_axis_dma_wr_tvalid = "s_axis_dma_wr_tvalid",
        s_axis_dma_wr_tready = "s_axis_dma_wr_tready",
        s_axis_dma_wr_tlast = "s_axis_dma_wr_tlast",
        m_axi_arid = "m_axi_arid",
        m_axi_araddr = "m_axi_araddr",
        m_axi_arlen = "m_axi_arlen",
        m_axi_arsize = "m_axi_arsize",
        m_axi_arburst = "m_axi_arburst",
        m_axi_arvalid = "m_axi_arvalid",
        m_axi_arready = "m_axi_arready",
        m_axi_rid = "m_axi_rid",
        m_axi_rdata = "m_axi_rdata",
        m_axi_rresp = "m_axi_rresp",
        m_axi_rlast = "m_axi_rlast",
        m_axi_rvalid = "m_axi_rvalid",
        m_axi_rready = "m_axi_rready",
        m_axi_awid = "m_axi_awid",
        m_axi_awaddr = "m_axi_awaddr",
        m_axi_awlen = "m_axi_awlen",
        m_axi_awsize = "m_axi_awsize",
        m_axi_awburst = "m_axi_awburst",
        m_axi_awvalid = "m_axi_awvalid",
        m_axi_awready = "m_axi_awready",
        m_axi_wdata = "m_axi_wdata",
        m_axi_wstrb = "m_axi_wstrb",
        m_axi_wlast = "m_axi_wlast",
        m_axi_wvalid = "m_axi_wvalid",
        m_axi_wready = "m_axi_wready",
        m_axi_bid = "m_axi_bid",
        m_axi_bresp = "m_axi_bresp",
        m_axi_bvalid = "m_axi_bvalid",
        m_axi_bready = "m_axi_bready",
        rd_error = "rd_error",
        wr_error = "wr_error",
    );
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rep = DmaAxiReport::default();
    let ntags = 1usize << cfg.tag_w;
    if let Some(r) = reads.iter().find(|r| usize::from(r.tag) >= ntags || r.len == 0) {
        return Err(SimError::Config(format!("bad read {r:?}")));
    }
    if writes.iter().any(|w| w.data.is_empty() || w.data.len() > 65535) {
        return Err(SimError::Config("a write of 0 or more than 65535 bytes".into()));
    }

    for q in [p.s_dma_rd_valid, p.s_dma_wr_valid, p.s_axis_dma_wr_tvalid, p.m_axi_rvalid, p.m_axi_bvalid] {
        dut.set_u64(q, 0);
    }
    dut.set_u64(p.rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(p.rst, 0);

    // engine side
    let (mut rd_next, mut rd_on) = (0usize, false);
    let (mut wr_next, mut wr_on) = (0usize, false);
    let wd: Vec<(&[u8], bool)> = writes
        .iter()
        .flat_map(|w| {
            let n = w.data.len().div_ceil(BEAT);
            (0..n).map(move |i| (&w.data[BEAT * i..(BEAT * i + BEAT).min(w.data.len())], i + 1 == n))
        })
        .collect();
    let (mut wd_next, mut wd_on) = (0usize, false);
    let mut got: Vec<Vec<RdBeat>> = vec![Vec::new(); ntags];
    // slave side
    let mut ar_log: Vec<(u64, Burst)> = Vec::new();
    let mut pend: HashMap<u64, VecDeque<RdBurst>> = HashMap::new();
    let mut returned: HashMap<u64, Vec<([u8; BEAT], bool)>> = HashMap::new();
    let mut r_cur: Option<u64> = None;
    let mut r_last_id: Option<(u64, bool)> = None; // previous beat's ID, its burst unfinished
    let mut seq = 0u64;
    let mut next_first = 0u64; // the oldest burst (issue order) not yet started
    let mut started: Vec<bool> = Vec::new();
    let mut aw_log: Vec<(u64, Burst)> = Vec::new();
    let mut aw_q: VecDeque<(Burst, bool)> = VecDeque::new();
    let mut aw_errs: Vec<bool> = Vec::new();
    let mut w_all: Vec<WrBeat> = Vec::new();
    let mut w_cur: Vec<WrBeat> = Vec::new();
    let mut w_done: VecDeque<Vec<WrBeat>> = VecDeque::new();
    let mut b_q: VecDeque<(u64, u8)> = VecDeque::new();
    let mut b_cur: Option<u8> = None;
    let (mut rd_err_beats, mut rd_err_pulses, mut wr_err_b, mut wr_err_pulses) = (0u64, 0u64, 0u64, 0u64);
    // protocol: the payload a valid output showed last cycle without being taken
    let mut hold: [Option<Vec<u32>>; 4] = [None, None, None, None];

    let mut w16 = [0u32; 16];
    let mut idle = 0u64;
    let total_rd_beats: usize = reads.iter().map(|r| model::data_beats(usize::from(r.len))).sum();
    let lat = |rng: &mut ChaCha8Rng| rng.random_range(slave.latency.0..=slave.latency.1);
    loop {
        let now = rep.cycles;
        // ---- engine-side inputs
        if !rd_on && rd_next < reads.len() && rng.random_bool(eng.rd_valid) {
            rd_on = true;
            let r = &reads[rd_next];
            dut.set_bundle(p.s_dma_rd, &DmaReq { addr: r.addr, len: r.len });
            dut.set_u64(p.s_dma_rd_tag, u64::from(r.tag));
        }
        dut.set_u64(p.s_dma_rd_valid, u64::from(rd_on));
        if !wr_on && wr_next < writes.len() && rng.random_bool(eng.wr_valid) {
            wr_on = true;
            let w = &writes[wr_next];
            dut.set_bundle(p.s_dma_wr, &DmaReq { addr: w.addr, len: w.data.len() as u16 });
        }
        dut.set_u64(p.s_dma_wr_valid, u64::from(wr_on));
        if !wd_on && wd_next < wd.len() && rng.random_bool(eng.wd_valid) {
            wd_on = true;
            let (b, last) = wd[wd_next];
            pack_bytes(b, &mut w16);
            dut.set(p.s_axis_dma_wr_tdata, &w16);
            dut.set_u64(p.s_axis_dma_wr_tkeep, if b.len() >= 64 { u64::MAX } else { (1u64 << b.len()) - 1 });
            dut.set_u64(p.s_axis_dma_wr_tlast, u64::from(last));
        }
        dut.set_u64(p.s_axis_dma_wr_tvalid, u64::from(wd_on));
        let rd_ready = rng.random_bool(eng.rd_ready);
        dut.set_u64(p.m_dma_rd_tready, u64::from(rd_ready));
        // ---- slave inputs
        let (ar_ready, aw_ready, w_ready) =
            (rng.random_bool(slave.ar_ready), rng.random_bool(slave.aw_ready), rng.random_bool(slave.w_ready));
        dut.set_u64(p.m_axi_arready, u64::from(ar_ready));
        dut.set_u64(p.m_axi_awready, u64::from(aw_ready));
        dut.set_u64(p.m_axi_wready, u64::from(w_ready));
        if r_cur.is_none() && rng.random_bool(slave.r_valid) {
            let cont = r_last_id.filter(|&(_, open)| open && !slave.interleave).map(|x| x.0);
            let mut ready_ids: Vec<u64> =
                pend.iter().filter(|(_, q)| q.front().is_some_and(|b| b.at <= now)).map(|(&id, _)| id).collect();
            ready_ids.sort_unstable();
            r_cur = match cont {
                Some(id) => Some(id),
                None if ready_ids.is_empty() => None,
                None => Some(ready_ids[rng.random_range(0..ready_ids.len())]),
            };
        }
        if let Some(id) = r_cur {
            let Some(b) = pend.get(&id).and_then(|q| q.front()) else {
                return Err(SimError::Config("harness: R beat without a burst".into()));
            };
            pack_bytes(&b.beats[b.next].0, &mut w16);
            dut.set(p.m_axi_rdata, &w16);
            dut.set_u64(p.m_axi_rid, id);
            dut.set_u64(p.m_axi_rresp, u64::from(b.resp));
            dut.set_u64(p.m_axi_rlast, u64::from(b.next + 1 == b.beats.len()));
        }
        dut.set_u64(p.m_axi_rvalid, u64::from(r_cur.is_some()));
        if b_cur.is_none() && b_q.front().is_some_and(|b| b.0 <= now) && rng.random_bool(slave.b_valid) {
            b_cur = b_q.pop_front().map(|b| b.1);
        }
        dut.set_u64(p.m_axi_bvalid, u64::from(b_cur.is_some()));
        dut.set_u64(p.m_axi_bresp, u64::from(b_cur.unwrap_or(0)));
        dut.set_u64(p.m_axi_bid, 0);
        dut.eval();

        // ---- handshakes
        let mut moved = false;
        if rd_on && dut.get_bool(p.s_dma_rd_ready) {
            rep.firsts[0].get_or_insert(now);
            rd_on = false;
            rd_next += 1;
            moved = true;
        }
        if wr_on && dut.get_bool(p.s_dma_wr_ready) {
            wr_on = false;
            wr_next += 1;
            moved = true;
        }
        if wd_on && dut.get_bool(p.s_axis_dma_wr_tready) {
            rep.firsts[3].get_or_insert(now);
            wd_on = false;
            wd_next += 1;
            moved = true;
        }
        // outputs that must hold while not taken: AR, AW, W, read data
        let checks: [(&str, Port, bool, Vec<Port>); 4] = [
            ("AR", p.m_axi_arvalid, ar_ready, vec![p.m_axi_arid, p.m_axi_araddr, p.m_axi_arlen]),
            ("AW", p.m_axi_awvalid, aw_ready, vec![p.m_axi_awid, p.m_axi_awaddr, p.m_axi_awlen]),
            ("W", p.m_axi_wvalid, w_ready, vec![p.m_axi_wdata, p.m_axi_wstrb, p.m_axi_wlast]),
            (
                "m_dma_rd",
                p.m_dma_rd_tvalid,
                rd_ready,
                vec![p.m_dma_rd_tdata, p.m_dma_rd_tlast, p.m_dma_rd_tuser, p.m_dma_rd_tid],
            ),
        ];
        for (k, (name, v, ready, pl)) in checks.iter().enumerate() {
            let valid = dut.get_bool(*v);
            let mut words = Vec::new();
            for q in pl {
                let mut w = vec![0u32; q.words()];
                dut.get(*q, &mut w);
                words.extend(w);
            }
            if let Some(prev) = &hold[k] {
                if !valid || *prev != words {
                    rep.divergences.push(format!("cycle {now}: {name} changed or dropped before it was taken"));
                }
            }
            hold[k] = (valid && !ready).then_some(words);
        }
        if !dut.get_bool(p.m_axi_bready) {
            rep.divergences.push(format!("cycle {now}: BREADY low"));
        }
        if rd_ready && dut.get_bool(p.m_dma_rd_tvalid) {
            dut.get(p.m_dma_rd_tdata, &mut w16);
            let mut data = [0u8; BEAT];
            unpack_bytes(&w16, &mut data);
            let tid = dut.get_u64(p.m_dma_rd_tid) as usize;
            let beat = RdBeat { data, err: dut.get_bool(p.m_dma_rd_tuser), last: dut.get_bool(p.m_dma_rd_tlast) };
            if let Some(g) = got.get_mut(tid) {
                g.push(beat);
            }
            rep.rd_beats += 1;
            rep.rd_span = Some((rep.rd_span.map_or(now, |s| s.0), now));
            moved = true;
        }
        if ar_ready && dut.get_bool(p.m_axi_arvalid) {
            rep.firsts[1].get_or_insert(now);
            let id = dut.get_u64(p.m_axi_arid);
            let b = Burst { addr: dut.get_u64(p.m_axi_araddr), beats: dut.get_u64(p.m_axi_arlen) as u16 + 1 };
            if dut.get_u64(p.m_axi_arsize) != 6 || dut.get_u64(p.m_axi_arburst) != 1 {
                rep.divergences.push(format!("cycle {now}: ARSIZE/ARBURST not 6/INCR"));
            }
            let err = rng.random_bool(slave.err);
            let resp = if err {
                if rng.random_bool(0.5) {
                    2
                } else {
                    3
                }
            } else {
                0
            };
            rep.rd_err_bursts += u64::from(err);
            let beats = (0..usize::from(b.beats))
                .map(|i| {
                    let mut d = [0u8; BEAT];
                    if !err {
                        mem.read(b.addr + (BEAT * i) as u64, &mut d);
                    }
                    (d, err)
                })
                .collect();
            pend.entry(id).or_default().push_back(RdBurst { beats, resp, at: now + lat(&mut rng), next: 0, seq });
            started.push(false);
            seq += 1;
            ar_log.push((id, b));
            rep.ar_bursts += 1;
            moved = true;
        }
        if let Some(id) = r_cur {
            if dut.get_bool(p.m_axi_rready) {
                rep.firsts[2].get_or_insert(now);
                let q = pend.get_mut(&id).ok_or_else(|| SimError::Config("harness: lost burst".into()))?;
                let Some(b) = q.front_mut() else { return Err(SimError::Config("harness: lost burst".into())) };
                if b.next == 0 {
                    started[b.seq as usize] = true;
                    if b.seq > next_first {
                        rep.overtaken += 1;
                    }
                    while (next_first as usize) < started.len() && started[next_first as usize] {
                        next_first += 1;
                    }
                }
                if let Some((last, open)) = r_last_id {
                    if open && last != id {
                        rep.interleaved += 1;
                    }
                }
                let beat = b.beats[b.next];
                rd_err_beats += u64::from(beat.1);
                returned.entry(id).or_default().push(beat);
                b.next += 1;
                let fin = b.next == b.beats.len();
                if fin {
                    q.pop_front();
                }
                r_last_id = Some((id, !fin));
                r_cur = None;
                moved = true;
            }
        }
        if aw_ready && dut.get_bool(p.m_axi_awvalid) {
            let b = Burst { addr: dut.get_u64(p.m_axi_awaddr), beats: dut.get_u64(p.m_axi_awlen) as u16 + 1 };
            if dut.get_u64(p.m_axi_awsize) != 6 || dut.get_u64(p.m_axi_awburst) != 1 {
                rep.divergences.push(format!("cycle {now}: AWSIZE/AWBURST not 6/INCR"));
            }
            let err = rng.random_bool(slave.err);
            aw_errs.push(err);
            aw_q.push_back((b, err));
            aw_log.push((dut.get_u64(p.m_axi_awid), b));
            rep.aw_bursts += 1;
            moved = true;
        }
        if w_ready && dut.get_bool(p.m_axi_wvalid) {
            dut.get(p.m_axi_wdata, &mut w16);
            let mut data = [0u8; BEAT];
            unpack_bytes(&w16, &mut data);
            let w = WrBeat { data, strb: dut.get_u64(p.m_axi_wstrb), last: dut.get_bool(p.m_axi_wlast) };
            w_all.push(w);
            w_cur.push(w);
            if w.last {
                w_done.push_back(std::mem::take(&mut w_cur));
            }
            rep.w_beats += 1;
            rep.w_span = Some((rep.w_span.map_or(now, |s| s.0), now));
            moved = true;
        }
        while !aw_q.is_empty() && !w_done.is_empty() {
            let (Some((b, err)), Some(beats)) = (aw_q.pop_front(), w_done.pop_front()) else { break };
            if beats.len() != usize::from(b.beats) {
                rep.divergences.push(format!(
                    "AW burst at {:#x} of {} beats got {} W beats",
                    b.addr,
                    b.beats,
                    beats.len()
                ));
            }
            if !err {
                model::apply_burst(mem, b.addr, &beats);
            }
            let resp = if err {
                if rng.random_bool(0.5) {
                    2
                } else {
                    3
                }
            } else {
                0
            };
            wr_err_b += u64::from(err);
            b_q.push_back((now + lat(&mut rng), resp));
        }
        if b_cur.is_some() {
            b_cur = None; // BREADY is always high (checked above)
            moved = true;
        }
        rd_err_pulses += dut.get_u64(p.rd_error);
        wr_err_pulses += dut.get_u64(p.wr_error);
        dut.tick();
        rep.cycles += 1;

        let all_in = rd_next == reads.len() && wr_next == writes.len() && wd_next == wd.len();
        let drained = rep.rd_beats as usize >= total_rd_beats
            && pend.values().all(VecDeque::is_empty)
            && aw_q.is_empty()
            && w_done.is_empty()
            && b_q.is_empty();
        idle = if moved { 0 } else { idle + 1 };
        if all_in && drained && idle > 20 {
            break;
        }
        if idle > 20_000 {
            return Err(SimError::Config(format!(
                "roce_dma_axi stalled at cycle {now}: reads {rd_next}/{}, writes {wr_next}/{}, data {wd_next}/{}, \
                 beats back {}/{total_rd_beats}",
                reads.len(),
                writes.len(),
                wd.len(),
                rep.rd_beats
            )));
        }
    }
    // the last cycle's pulses are registered: one more look
    dut.eval();
    rd_err_pulses += dut.get_u64(p.rd_error);
    wr_err_pulses += dut.get_u64(p.wr_error);
    rep.wr_err_bursts = wr_err_b;

    // ---- compare with the model
    let mb = cfg.max_burst;
    let mut d = |m: String| rep.divergences.push(m);
    for (t, got_t) in got.iter().enumerate() {
        let mine: Vec<&DmaRead> = reads.iter().filter(|r| usize::from(r.tag) == t).collect();
        let want_ar: Vec<Burst> = mine.iter().flat_map(|r| model::bursts(r.addr, usize::from(r.len), mb)).collect();
        let got_ar: Vec<Burst> = ar_log.iter().filter(|x| x.0 == t as u64).map(|x| x.1).collect();
        if want_ar != got_ar {
            let i = (0..want_ar.len().max(got_ar.len())).find(|&i| want_ar.get(i) != got_ar.get(i)).unwrap_or(0);
            d(format!("tag {t}: AR burst {i}: hdl {:?} model {:?}", got_ar.get(i), want_ar.get(i)));
        }
        let ret = returned.remove(&(t as u64)).unwrap_or_default();
        let mut at = 0usize;
        let mut want: Vec<RdBeat> = Vec::new();
        for r in &mine {
            let n = model::axi_beats(r.addr, usize::from(r.len));
            let slice = ret.get(at..(at + n).min(ret.len())).unwrap_or(&[]);
            want.extend(model::read_return(r.addr, usize::from(r.len), slice));
            at += n;
        }
        if let Some(i) = (0..want.len().max(got_t.len())).find(|&i| want.get(i) != got_t.get(i)) {
            let show = |b: Option<&RdBeat>| b.map(|b| (b.err, b.last, b.data[..8].to_vec()));
            d(format!(
                "tag {t}: read beat {i} of {}: hdl {:?} model {:?}",
                want.len(),
                show(got_t.get(i)),
                show(want.get(i))
            ));
        }
    }
    if ar_log.iter().any(|x| x.0 >= ntags as u64) {
        d("an ARID beyond the tags".into());
    }
    let want_aw: Vec<Burst> = writes.iter().flat_map(|w| model::bursts(w.addr, w.data.len(), mb)).collect();
    let got_aw: Vec<Burst> = aw_log.iter().map(|x| x.1).collect();
    if want_aw != got_aw {
        let i = (0..want_aw.len().max(got_aw.len())).find(|&i| want_aw.get(i) != got_aw.get(i)).unwrap_or(0);
        d(format!("AW burst {i}: hdl {:?} model {:?}", got_aw.get(i), want_aw.get(i)));
    }
    if aw_log.iter().any(|x| x.0 != 0) {
        d("an AWID other than WR_ID".into());
    }
    let want_w: Vec<WrBeat> = writes.iter().flat_map(|w| model::write_beats(w.addr, &w.data, mb)).collect();
    if let Some(i) = (0..want_w.len().max(w_all.len())).find(|&i| want_w.get(i) != w_all.get(i)) {
        let show = |b: Option<&WrBeat>| b.map(|b| (format!("{:#x}", b.strb), b.last, b.data[..8].to_vec()));
        d(format!("W beat {i} of {}: hdl {:?} model {:?}", want_w.len(), show(w_all.get(i)), show(want_w.get(i))));
    }
    // host memory: every write's bytes as the model's bursts leave them (failed bursts skipped)
    let mut exp = HostMem::new();
    let mut k = 0usize;
    let mut wi = 0usize;
    for w in writes {
        for b in model::bursts(w.addr, w.data.len(), mb) {
            let n = usize::from(b.beats);
            if !aw_errs.get(k).copied().unwrap_or(true) {
                if let Some(beats) = want_w.get(wi..wi + n) {
                    model::apply_burst(&mut exp, b.addr, beats);
                }
            }
            k += 1;
            wi += n;
        }
    }
    for (n, w) in writes.iter().enumerate() {
        if mem.read_vec(w.addr, w.data.len()) != exp.read_vec(w.addr, w.data.len()) {
            d(format!("write {n} at {:#x}: host memory differs from the model", w.addr));
        }
    }
    if rd_err_pulses != rd_err_beats {
        d(format!("rd_error pulsed {rd_err_pulses} times for {rd_err_beats} errored R beats"));
    }
    if wr_err_pulses != wr_err_b {
        d(format!("wr_error pulsed {wr_err_pulses} times for {wr_err_b} errored B responses"));
    }
    Ok(rep)
}
