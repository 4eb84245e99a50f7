//! Lockstep run of `roce_req` against the engine model's requester
//! (`roce_model::blocks::req`).
//!
//! The run has two model engines: A, whose requester the HDL block is, and a peer B that
//! answers A's packets (ACKs, NAKs, RNR NAKs, READ responses, ATOMIC Acknowledges) over a
//! lossy link. Around the block the harness plays its neighbours from engine A:
//! `roce_qp_ctx` (attribute answers; SET_SQ_PSN and ENTER_RTS at the start, ENTER_ERR for
//! every QP the model moves to ERR), `roce_comp` (A's own completer: B's responses go into
//! `Engine::rx`, its state of each QP answers `m_comp`, a change of it sends `s_wake`, the
//! kicks run it, the timers are the model's), `roce_mr_check` (A's MR table),
//! `roce_dcqcn` (random pacing answers), host memory behind the WQE and payload read ports
//! (random latency, failed reads outside the IOMMU windows), the TX arbiter (random
//! backpressure; the packets go to B).
//!
//! At the start of each visit of the block (its `m_comp` read) the harness runs one model
//! visit to the same QP with the same completer state and pacing answer
//! (`req::visit`), and from then expects its actions, each kind in order: a WQE read
//! (address and length: one to eight consecutive WQEs, answered with one latency and two
//! beats per WQE, tuser on those of a WQE that cannot be read), pacing question, L_Key
//! checks (answered from the model's table), packet (descriptor and payload, or a stale
//! drop on `cnt_stale`), sent bytes, local error; the block's WQE data
//! hand-offs tell the model the bodies are held (`req::arrived`), and a fetched
//! malformed WQE must bring a kick. At the end: the state-read port (sq_psn, sq_pi), the
//! `s_rd` port (req_rd_t) and the send window (`s_win`) of every QP against the model, and
//! the counters. Optionally a second round ([`Again`]): once the first has settled, QPs are
//! reset and brought up again with new WQEs at the same SQ indices.

use std::collections::{BTreeMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::req::{self, comp_rd, desc_of, headers_of, req_rd};
use roce_model::contract::records::{CtxOpReq, DmaReq, MrReq, MrRes, ReqRd, SqWin, TxDesc};
use roce_model::contract::{QpState, SqWqe};
use roce_model::engine::comp::ReqView;
use roce_model::engine::fetch::{bf_doorbell, fetch_decode, set_bf_doorbell, BfOutcome};
use roce_model::engine::qp_ctx::CtxOp;
use roce_model::engine::req::{CompView, WqeRead};
use roce_model::engine::{Dma, Engine, HostMem, WcStatus};
use roce_model::wire::{EthernetFields, FrameBuilder, Ipv4Fields};

use super::{bytes_of, events_from, offer_beat, ports, random_ready, reset_until_init, words_of, Beat};
use crate::vl::{Dut, Model, Port};
use crate::SimError;

/// What a run starts from.
#[derive(Debug)]
pub struct ReqSetup {
    /// The requester side (its QPs in RTS, MRs, CQs).
    pub a: Engine,
    /// A's host memory (SQ rings filled with the WQEs the doorbells post).
    pub amem: HostMem,
    /// The peer.
    pub b: Engine,
    /// B's host memory.
    pub bmem: HostMem,
    /// A's QPs.
    pub qpns: Vec<u32>,
    /// SQ doorbells of A: (cycle, qpn, pi).
    pub doorbells: Vec<(u64, u32, u32)>,
    /// Inline doorbells of A: (cycle, qpn, pi), each one WQE (SQ index pi - 1) written to
    /// the BlueFlame window as the ring holds it.
    pub inline_dbs: Vec<(u64, u32, u32)>,
    /// RQ doorbells of B: (cycle, B's qpn, pi).
    pub peer_rq: Vec<(u64, u32, u32)>,
    /// A second round once the first has settled: A's QPs are reset and brought up again.
    pub again: Option<Again>,
}

/// A second round of a run: when the first has settled, `setup` (given A, A's memory, B,
/// B's memory) resets QPs of A and brings them up again in the model, writes their new WQEs
/// and returns their SQ doorbells (cycles after the switch, qpn, pi); the block gets RESET,
/// SET_SQ_PSN and ENTER_RTS for each QP with a doorbell, then the doorbells.
pub struct Again {
    /// The model's side.
    pub setup: AgainFn,
}

/// [`Again::setup`]: (A, A's memory, B, B's memory) -> SQ doorbells (cycles after the
/// switch, qpn, pi).
pub type AgainFn = Box<dyn FnOnce(&mut Engine, &mut HostMem, &mut Engine, &mut HostMem) -> Vec<(u64, u32, u32)>>;

impl std::fmt::Debug for Again {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Again").finish_non_exhaustive()
    }
}

/// How hard the harness pushes the block.
#[derive(Clone, Copy, Debug)]
pub struct ReqTraffic {
    /// Probability per cycle that an output of the block is taken.
    pub ready_p: f64,
    /// DMA read latency range (cycles).
    pub dma_latency: (u64, u64),
    /// Probability that a pacing question is answered "allowed".
    pub pace_p: f64,
    /// Loss probability per packet on each link direction.
    pub loss: f64,
    /// Duplication probability per packet.
    pub dup: f64,
    /// Link delay (cycles).
    pub link_delay: u64,
    /// RNG seed.
    pub seed: u64,
    /// Give up after this many cycles (after the reset sweep).
    pub max_cycles: u64,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct ReqReport {
    /// Cycles run after the reset sweep.
    pub cycles: u64,
    /// Visits (model visits run at the block's `m_comp` reads).
    pub visits: u64,
    /// Packets sent (descriptors taken).
    pub packets: u64,
    /// Payload bytes sent.
    pub bytes: u64,
    /// Cycle of each descriptor hand-off.
    pub desc_cycles: Vec<u64>,
    /// Packets dropped as stale.
    pub stale: u64,
    /// Retransmitted packets (HDL counter).
    pub retransmits: u64,
    /// WQEs read (fetched, read again).
    pub wqe_reads: (u64, u64),
    /// WQE reads (DMA reads of one or more WQEs).
    pub wqe_batches: u64,
    /// Local errors reported.
    pub local_errors: u64,
    /// Kicks (complete a malformed WQE, flush).
    pub kicks: (u64, u64),
    /// Failed payload reads, failed WQE reads (HDL counters).
    pub dma_errors: (u64, u64),
    /// Pacing questions (allowed, refused).
    pub paced: (u64, u64),
    /// Inline doorbells (WQE taken from the write, doorbell only).
    pub inline: (u64, u64),
    /// Completions of A by status code.
    pub completions: BTreeMap<u8, u64>,
    /// Packet opcodes sent.
    pub opcodes: BTreeMap<u8, u64>,
    /// QPs of A that ended in ERR.
    pub qp_errors: u64,
    /// The most WQEs one QP of A had fetched and not completed (sampled every 16 cycles).
    pub max_in_window: u32,
    /// Window entries read and compared while the requester ran.
    pub window_probes: u64,
    /// Differences from the model.
    pub divergences: Vec<String>,
}

/// A one-way link: in-order delivery after a delay, with loss and duplication.
struct Link {
    q: VecDeque<(u64, Vec<u8>)>,
}

impl Link {
    fn send(&mut self, rng: &mut ChaCha8Rng, t: &ReqTraffic, now: u64, f: Vec<u8>) {
        if rng.random_bool(t.loss) {
            return;
        }
        let at = self.q.back().map_or(now + t.link_delay, |b| b.0.max(now + t.link_delay));
        if rng.random_bool(t.dup) {
            self.q.push_back((at, f.clone()));
        }
        self.q.push_back((at, f));
    }
    fn due(&mut self, now: u64) -> Option<Vec<u8>> {
        if self.q.front().is_some_and(|f| f.0 <= now) {
            return self.q.pop_front().map(|f| f.1);
        }
        None
    }
}

/// A frame of A's packet (descriptor + payload) toward B, addressed as A's QP says.
pub(crate) fn frame_of(a: &Engine, b: &Engine, d: &TxDesc, payload: &[u8]) -> Option<Vec<u8>> {
    let qp = a.qp(d.qpn)?;
    let (bth, ext) = headers_of(d, qp.dest_qpn)?;
    let ip = Ipv4Fields { src: a.cfg.ipv4, dst: b.cfg.ipv4, ttl: 64, dont_fragment: true, ..Ipv4Fields::default() };
    let mut f = FrameBuilder::new(EthernetFields { dst: b.cfg.mac, src: a.cfg.mac, vlan: None }, ip, bth)
        .with_ext(ext)
        .build(payload)
        .ok()?;
    roce_model::icrc::fill(&mut f).ok()?;
    Some(f)
}

/// Read one of the block's read ports (`[valid, qpn, out valid, out data]`, latency 2).
fn read_port(dut: &mut Dut, pt: [Port; 4], extra: Option<(Port, u32)>, n: usize, qpn: u32) -> Option<Vec<u8>> {
    let [v, q, ov, d] = pt;
    dut.set_u64(v, 1);
    dut.set_u64(q, u64::from(qpn));
    if let Some((ip, iv)) = extra {
        dut.set_u64(ip, u64::from(iv));
    }
    let mut out = None;
    for _ in 0..4 {
        dut.eval();
        if dut.get_bool(ov) {
            out = Some(bytes_of(dut, d, n));
            break;
        }
        dut.tick();
        dut.set_u64(v, 0);
    }
    dut.set_u64(v, 0);
    out
}

/// An expected packet: descriptor, payload, rewind generation.
type ExpPkt = (TxDesc, Vec<u8>, u32);

/// Run `s` through the HDL block and the model.
pub fn req_lockstep(s: ReqSetup, t: &ReqTraffic) -> Result<ReqReport, SimError> {
    let ReqSetup { a: mut eng, amem, b: mut peer, bmem: mut pmem, qpns, doorbells, inline_dbs, peer_rq, mut again } = s;
    let mut rng = ChaCha8Rng::seed_from_u64(t.seed);
    let mut dut = Dut::new(Model::Req, None)?;
    let p = ports!(dut;
        rst = "rst", init_done = "init_done", now = "now", now_tick = "now_tick",
        db_v = "s_db_valid", db_r = "s_db_ready", db_q = "s_db_qpn", db_pi = "s_db_pi",
        bf_d = "s_axis_bf_tdata", bf_v = "s_axis_bf_tvalid", bf_r = "s_axis_bf_tready", bf_l = "s_axis_bf_tlast",
        wk_v = "s_wake_valid", wk_r = "s_wake_ready", wk_q = "s_wake_qpn",
        ctx_v = "s_ctx_valid", ctx_r = "s_ctx_ready", ctx = "s_ctx",
        st_v = "s_strd_valid", st_r = "s_strd_ready", st_q = "s_strd_qpn", st_done = "strd_done",
        st_psn = "strd_sq_psn", st_pi = "strd_sq_pi",
        at_v = "m_attr_valid", at_r = "m_attr_ready", at_q = "m_attr_qpn", at_sv = "s_attr_valid",
        at_d = "s_attr_data", at_st = "s_attr_state",
        cp_v = "m_comp_valid", cp_r = "m_comp_ready", cp_q = "m_comp_qpn", cp_sv = "s_comp_valid", cp_d = "s_comp_data",
        qy_v = "m_query_valid", qy_r = "m_query_ready", qy_q = "m_query_qpn",
        pc_v = "s_pace_valid", pc_q = "s_pace_qpn", pc_ok = "s_pace_allowed",
        sn_v = "m_sent_valid", sn_r = "m_sent_ready", sn_q = "m_sent_qpn", sn_b = "m_sent_bytes",
        mr_v = "m_mr_valid", mr_r = "m_mr_ready", mr = "m_mr",
        mr_user = "m_mr_user",
        mrs_v = "s_mr_valid", mrs = "s_mr", mrs_user = "s_mr_user",
        wq_v = "m_wqe_rd_valid", wq_r = "m_wqe_rd_ready", wq = "m_wqe_rd",
        wd_d = "s_wqe_rd_tdata", wd_v = "s_wqe_rd_tvalid", wd_r = "s_wqe_rd_tready", wd_l = "s_wqe_rd_tlast",
        wd_u = "s_wqe_rd_tuser",
        dr_v = "m_dma_rd_valid", dr_r = "m_dma_rd_ready", dr = "m_dma_rd",
        dd_d = "s_dma_rd_tdata", dd_v = "s_dma_rd_tvalid", dd_r = "s_dma_rd_tready", dd_l = "s_dma_rd_tlast",
        dd_u = "s_dma_rd_tuser",
        de_v = "m_desc_valid", de_r = "m_desc_ready", de_d = "m_desc",
        py_d = "m_axis_pay_tdata", py_k = "m_axis_pay_tkeep", py_v = "m_axis_pay_tvalid", py_r = "m_axis_pay_tready",
        py_l = "m_axis_pay_tlast",
        kk_v = "m_kick_valid", kk_r = "m_kick_ready", kk_q = "m_kick_qpn", kk_f = "m_kick_flush",
        er_v = "m_err_valid", er_r = "m_err_ready", er_q = "m_err_qpn", er_c = "m_err_cause",
        rd_v = "s_rd_valid", rd_q = "s_rd_qpn", rd_ov = "m_rd_valid", rd_d = "m_rd_data",
        rd2_v = "s_rd2_valid", win_v = "s_win_valid", win_q = "s_win_qpn", win_i = "s_win_idx",
        win_ov = "m_win_valid", win_d = "m_win_data",
        c_rt = "cnt_retransmit", c_st = "cnt_stale", c_de = "cnt_dma_err", c_we = "cnt_wqe_err",
    );
    let mut rep = ReqReport::default();
    let mut amem = amem;
    eng.trace_events = true;
    eng.log_completions = true;
    eng.regs.enabled = true;
    peer.regs.enabled = true;
    let tick_cycles = eng.cfg.tick_cycles.max(1);

    // reset
    for q in [
        p.db_v, p.bf_v, p.wk_v, p.ctx_v, p.st_v, p.wd_v, p.dd_v, p.rd_v, p.rd2_v, p.win_v, p.at_sv, p.cp_sv, p.pc_v,
        p.mrs_v,
    ] {
        dut.set_u64(q, 0);
    }
    let mut cycle = reset_until_init(&mut dut, p.rst, p.init_done, 3, |dut, c| {
        dut.set_u64(p.now, c);
        dut.set_u64(p.now_tick, c / tick_cycles);
    })?;

    // the harness's queues
    let mut ctx_q: VecDeque<(u8, u32, u32)> = VecDeque::new(); // (op, qpn, arg)
    for &q in &qpns {
        let qp = eng.qp(q).ok_or_else(|| SimError::Config(format!("QP {q} does not exist")))?;
        ctx_q.push_back((CtxOp::SetSqPsn(0).code().code(), q, qp.req.next_psn));
        let op = qp.enter_rts();
        ctx_q.push_back((op.code().code(), q, op.arg()));
    }
    let mut ctx_on = false;
    let mut hdl_dead: BTreeMap<u32, bool> = BTreeMap::new();
    let mut err_sent: BTreeMap<u32, bool> = BTreeMap::new();
    // the set-up's times, the limit and the report's cycles count from the end of the reset
    // sweep (N x 16 cycles: the store's tags)
    let t0 = cycle;
    let mut dbs = events_from(t0, doorbells);
    let mut bfs = events_from(t0, inline_dbs);
    let mut bf_rec: Option<([u8; SqWqe::SIZE], usize)> = None; // the record being offered, its beat
    let mut prq = events_from(t0, peer_rq);
    let mut wake_q: VecDeque<u32> = VecDeque::new();
    let mut woken: BTreeMap<u32, CompView> = BTreeMap::new();
    let mut attr_q: VecDeque<(u64, Vec<u32>, u64)> = VecDeque::new();
    let mut comp_q: VecDeque<(u64, Vec<u32>)> = VecDeque::new();
    let mut pace_plan: VecDeque<(u32, bool)> = VecDeque::new();
    let mut pace_q: VecDeque<(u64, u32, bool)> = VecDeque::new();
    let mut mr_q: VecDeque<(u64, u8, u64, u8)> = VecDeque::new();
    let mut exp_reads: VecDeque<(u32, WqeRead)> = VecDeque::new();
    let mut arrivals: VecDeque<(u32, u32, bool, Vec<u8>, bool)> = VecDeque::new(); // (qpn, idx, fetch, bytes, ok)
    let mut wqe_beats: VecDeque<Beat> = VecDeque::new();
    let mut pay_beats: VecDeque<Beat> = VecDeque::new();
    let mut exp_pkts: VecDeque<ExpPkt> = VecDeque::new();
    let mut exp_sent: VecDeque<(u32, u32)> = VecDeque::new();
    let mut exp_errs: VecDeque<(u32, u8)> = VecDeque::new();
    let mut exp_kicks: VecDeque<(u32, bool)> = VecDeque::new();
    let mut exp_dma_err = 0u64;
    let mut wqe_err = 0u64;
    let mut wqe_half = false; // the first beat of a WQE was taken

    // descriptors taken whose payload is not all out yet, oldest first (roce_req offers the
    // next descriptor while the packet before it streams)
    let mut cur: VecDeque<(TxDesc, Vec<u8>, ExpPkt)> = VecDeque::new();
    let mut ab = Link { q: VecDeque::new() };
    let mut ba = Link { q: VecDeque::new() };
    let mut idle = 0u64;
    let mut quiet_model = 0u64;
    // a window entry read through roce_comp's port while the requester runs: (QP, SQ index,
    // the model's entry); it is on m_win two cycles after the request
    let mut probe: Option<(u32, u32, SqWin)> = None;
    let mut probe_at = 0u64;

    loop {
        let now = cycle;
        dut.set_u64(p.now, now);
        dut.set_u64(p.now_tick, now / tick_cycles);
        // ---- the window probe: every 11 cycles an entry of a QP's window whose packets are
        // all made (four WQEs behind the model's send index, so the block has started it
        // too) and not completed
        dut.set_u64(p.win_v, 0);
        if probe.is_none() && now % 11 == 0 && !qpns.is_empty() {
            let q = qpns[(now / 11) as usize % qpns.len()];
            if let Some(qp) = eng.qp(q).filter(|qp| qp.state != QpState::Err) {
                let done = qp.req.cur.wrapping_sub(qp.sq.ci).min(qp.req.started.wrapping_sub(qp.sq.ci));
                if done > 4 && done < 1 << 16 {
                    let k = (now / 7) as u32 % (done - 4);
                    if let Some(&(idx, w)) = req::window(qp).get(k as usize) {
                        dut.set_u64(p.win_v, 1);
                        dut.set_u64(p.win_q, u64::from(q));
                        dut.set_u64(p.win_i, u64::from(idx));
                        probe = Some((q, idx, w));
                        probe_at = now;
                        rep.window_probes += 1;
                    }
                }
            }
        }
        // ---- inputs
        if !ctx_on {
            if let Some(&(op, q, arg)) = ctx_q.front() {
                dut.set_bundle(p.ctx, &CtxOpReq { code: op, qpn: q, arg });
                ctx_on = true;
            }
        }
        dut.set_u64(p.ctx_v, u64::from(ctx_on));
        let db = dbs.front().filter(|d| d.0 <= now && ctx_q.is_empty()).copied();
        dut.set_u64(p.db_v, u64::from(db.is_some()));
        if let Some((_, q, pi)) = db {
            dut.set_u64(p.db_q, u64::from(q));
            dut.set_u64(p.db_pi, u64::from(pi & 0xFFFF));
        }
        // an inline doorbell: the ring's copy of the WQE with bf_db, two beats (gaps at random)
        if bf_rec.is_none() && ctx_q.is_empty() {
            if let Some(&(_, q, pi)) = bfs.front().filter(|d| d.0 <= now) {
                let mut img = [0u8; SqWqe::SIZE];
                if let Some(qp) = eng.qp(q) {
                    let _ = amem.dma_read(qp.sq.slot(pi.wrapping_sub(1), SqWqe::SIZE as u64), &mut img);
                }
                set_bf_doorbell(&mut img, q, pi);
                bf_rec = Some((img, 0));
            }
        }
        let bf_on = bf_rec.is_some() && rng.random_bool(0.8);
        dut.set_u64(p.bf_v, u64::from(bf_on));
        if let Some((img, k)) = &bf_rec {
            dut.set(p.bf_d, &words_of(&img[64 * k..64 * k + 64]));
            dut.set_u64(p.bf_l, u64::from(*k == 1));
        }
        dut.set_u64(p.wk_v, u64::from(!wake_q.is_empty()));
        if let Some(&q) = wake_q.front() {
            dut.set_u64(p.wk_q, u64::from(q));
        }
        let attr_now = attr_q.front().is_some_and(|a| a.0 <= now);
        dut.set_u64(p.at_sv, u64::from(attr_now));
        if let Some((_, d, st)) = attr_q.front() {
            dut.set(p.at_d, d);
            dut.set_u64(p.at_st, *st);
        }
        dut.set_u64(p.at_r, 1);
        let comp_now = comp_q.front().is_some_and(|c| c.0 <= now);
        dut.set_u64(p.cp_sv, u64::from(comp_now));
        if let Some((_, d)) = comp_q.front() {
            dut.set(p.cp_d, d);
        }
        dut.set_u64(p.cp_r, 1);
        let pace_now = pace_q.front().is_some_and(|x| x.0 <= now);
        dut.set_u64(p.pc_v, u64::from(pace_now));
        if let Some(&(_, q, ok)) = pace_q.front() {
            dut.set_u64(p.pc_q, u64::from(q));
            dut.set_u64(p.pc_ok, u64::from(ok));
        }
        let qy_rdy = rng.random_bool(0.5);
        dut.set_u64(p.qy_r, u64::from(qy_rdy));
        let mr_now = mr_q.front().is_some_and(|m| m.0 <= now);
        dut.set_u64(p.mrs_v, u64::from(mr_now));
        if let Some(&(_, st, dma, user)) = mr_q.front() {
            dut.set_bundle(p.mrs, &MrRes { status: st, dma });
            dut.set_u64(p.mrs_user, u64::from(user));
        }
        let mr_rdy = rng.random_bool(t.ready_p);
        dut.set_u64(p.mr_r, u64::from(mr_rdy));
        let wd_now = offer_beat(&mut dut, &wqe_beats, now, [p.wd_v, p.wd_d, p.wd_l, p.wd_u]);
        let dd_now = offer_beat(&mut dut, &pay_beats, now, [p.dd_v, p.dd_d, p.dd_l, p.dd_u]);
        let rdy = random_ready(&mut dut, &mut rng, t.ready_p, [p.wq_r, p.dr_r, p.de_r, p.py_r, p.sn_r, p.kk_r, p.er_r]);
        dut.eval();

        // ---- handshakes
        let mut moved = false;
        let mut model_changed = false;
        if ctx_on && dut.get_bool(p.ctx_r) {
            ctx_on = false;
            if let Some((op, q, _)) = ctx_q.pop_front() {
                if op == CtxOp::EnterErr.code().code() {
                    hdl_dead.insert(q, true);
                }
                if op == CtxOp::Reset.code().code() {
                    hdl_dead.insert(q, false);
                }
            }
            moved = true;
        }
        if let Some((_, q, pi)) = db {
            if dut.get_bool(p.db_r) {
                dbs.pop_front();
                if hdl_dead.get(&q).copied().unwrap_or(false) {
                    exp_kicks.push_back((q, true));
                }
                eng.sq_doorbell(now, q, pi, &mut amem);
                model_changed = true;
                moved = true;
            }
        }
        if bf_on && dut.get_bool(p.bf_r) {
            if let Some((img, k)) = bf_rec.as_mut() {
                if *k == 0 {
                    // the block decides on the record as a whole; the model at once (nothing
                    // the decision reads changes before the block's S_B3)
                    let (q, _) = bf_doorbell(img);
                    match req::bf(&mut eng, img, now, &mut amem) {
                        BfOutcome::Taken { malformed } => {
                            rep.inline.0 += 1;
                            if malformed.is_some() {
                                exp_kicks.push_back((q, false));
                            }
                        }
                        BfOutcome::Doorbell => {
                            rep.inline.1 += 1;
                            if hdl_dead.get(&q).copied().unwrap_or(false) {
                                exp_kicks.push_back((q, true));
                            }
                        }
                        BfOutcome::NoQp => rep.inline.1 += 1,
                    }
                    model_changed = true;
                    *k = 1;
                } else {
                    bfs.pop_front();
                    bf_rec = None;
                }
            }
            moved = true;
        }
        if !wake_q.is_empty() && dut.get_bool(p.wk_r) {
            wake_q.pop_front();
            moved = true;
        }
        if attr_now {
            attr_q.pop_front();
        }
        if comp_now {
            comp_q.pop_front();
        }
        if pace_now {
            pace_q.pop_front();
        }
        if mr_now {
            mr_q.pop_front();
        }
        // a visit starts: the model visits the same QP with the same completer state
        if dut.get_bool(p.cp_v) {
            let q = dut.get_u64(p.cp_q) as u32;
            if !dut.get_bool(p.at_v) || dut.get_u64(p.at_q) as u32 != q {
                rep.divergences.push(format!("visit of QP {q}: attribute and completer reads not together"));
            }
            rep.visits += 1;
            let (cv, attr, state) = match eng.qp(q) {
                Some(qp) => (CompView::of(qp), qp.to_attr().encode().to_vec(), qp.state.code()),
                None => (CompView::default(), vec![0u8; 80], 0),
            };
            comp_q.push_back((now + 2, words_of(&comp_rd(&cv).encode())));
            attr_q.push_back((now + 2, words_of(&attr), u64::from(state)));
            // the pacing answers the block will get, one per question the visit asks
            let mut answers = Vec::new();
            let pace_p = t.pace_p;
            let v = req::visit(
                &mut eng,
                q,
                now - 1,
                &cv,
                || {
                    let a = rng.random_bool(pace_p);
                    answers.push(a);
                    a
                },
                &mut amem,
            );
            for a in answers {
                pace_plan.push_back((q, a));
                if a {
                    rep.paced.0 += 1;
                } else {
                    rep.paced.1 += 1;
                }
            }
            if let Some(v) = v {
                if let Some(rd) = v.read {
                    exp_reads.push_back((q, rd));
                }
                for pk in &v.pkts {
                    exp_pkts.push_back((desc_of(pk), pk.payload.clone(), pk.gen));
                    exp_sent.push_back((q, Engine::sent_bytes(pk)));
                }
                if let Some(st) = v.failed {
                    exp_errs.push_back((q, st.code()));
                }
                exp_dma_err += u64::from(v.dma_errors);
            }
            moved = true;
        }
        if qy_rdy && dut.get_bool(p.qy_v) {
            let q = dut.get_u64(p.qy_q) as u32;
            match pace_plan.pop_front() {
                Some((pq, ok)) if pq == q => pace_q.push_back((now + 3, q, ok)),
                other => rep.divergences.push(format!("pacing question for QP {q} at cycle {now}, model {other:?}")),
            }
            moved = true;
        }
        if mr_rdy && dut.get_bool(p.mr_v) {
            let m: MrReq = dut.get_bundle(p.mr);
            let (key, pd, va, len) = (m.key, m.pd, m.va, u64::from(m.len));
            let user = dut.get_u64(p.mr_user) as u8;
            let (st, dma) = match eng.mrs.check(key, pd, va, len, 0) {
                Ok(d) => (0, d),
                Err(_) => (1, 0),
            };
            let at = mr_q.back().map_or(now + 4, |b| b.0.max(now + 4));
            mr_q.push_back((at, st, dma, user));
            moved = true;
        }
        if rdy[0] && dut.get_bool(p.wq_v) {
            let r: DmaReq = dut.get_bundle(p.wq);
            let (addr, len) = (r.addr, usize::from(r.len));
            match exp_reads.pop_front() {
                Some((q, rd)) if rd.addr == addr && len == rd.n as usize * SqWqe::SIZE => {
                    // one latency for the read, its WQEs' beats back to back; a WQE that
                    // cannot be read comes with tuser on its beats
                    let lat = rng.random_range(t.dma_latency.0..=t.dma_latency.1);
                    let mut at = wqe_beats.back().map_or(now + lat, |x| x.0.max(now + lat));
                    for (k, (idx, fetch)) in rd.wqes().enumerate() {
                        let mut b = vec![0u8; SqWqe::SIZE];
                        let ok = amem.dma_read(addr + (k * SqWqe::SIZE) as u64, &mut b).is_ok();
                        if !ok {
                            b.fill(0);
                            wqe_err += 1;
                        }
                        let last = k + 1 == rd.n as usize;
                        wqe_beats.push_back((at, b[..64].to_vec(), false, !ok));
                        wqe_beats.push_back((at + 1, b[64..].to_vec(), last, !ok));
                        at += 2;
                        arrivals.push_back((q, idx, fetch, b, ok));
                        if fetch {
                            rep.wqe_reads.0 += 1;
                        } else {
                            rep.wqe_reads.1 += 1;
                        }
                    }
                    rep.wqe_batches += 1;
                }
                other => rep.divergences.push(format!("WQE read at {addr:#x} ({len} bytes), model {other:?}")),
            }
            moved = true;
        }
        if wd_now && dut.get_bool(p.wd_r) {
            // a WQE is in with its second beat
            wqe_beats.pop_front();
            wqe_half = !wqe_half;
            if !wqe_half {
                if let Some((q, idx, fetch, b, ok)) = arrivals.pop_front() {
                    req::arrived(&mut eng, q, idx, fetch);
                    if fetch && fetch_decode(&b, ok).is_err() && !hdl_dead.get(&q).copied().unwrap_or(false) {
                        exp_kicks.push_back((q, false));
                    }
                }
            }
            moved = true;
        }
        if rdy[1] && dut.get_bool(p.dr_v) {
            let r: DmaReq = dut.get_bundle(p.dr);
            let (addr, len) = (r.addr, usize::from(r.len));
            let mut buf = vec![0u8; len];
            let err = amem.dma_read(addr, &mut buf).is_err();
            if err {
                buf.fill(0);
            }
            let lat = rng.random_range(t.dma_latency.0..=t.dma_latency.1);
            let nb = len.div_ceil(64).max(1);
            let start = pay_beats.back().map_or(now + lat, |x| x.0.max(now + lat));
            for i in 0..nb {
                let chunk = buf.get(64 * i..(64 * i + 64).min(len)).unwrap_or(&[]).to_vec();
                pay_beats.push_back((start + i as u64, chunk, i + 1 == nb, err));
            }
            moved = true;
        }
        if dd_now && dut.get_bool(p.dd_r) {
            pay_beats.pop_front();
            moved = true;
        }
        if rdy[2] && dut.get_bool(p.de_v) {
            let d = TxDesc::decode(&bytes_of(&dut, p.de_d, TxDesc::SIZE)).unwrap_or_default();
            let Some(e) = exp_pkts.pop_front() else {
                return Err(SimError::Config(format!("roce_req sent {d:?} the model did not make")));
            };
            rep.desc_cycles.push(now);
            cur.push_back((d, Vec::new(), e));
            moved = true;
        }
        if dut.get_bool(p.c_st) {
            rep.stale += 1;
            match exp_pkts.pop_front() {
                Some((d, _, gen)) => {
                    let live = eng.qp(d.qpn).is_some_and(|q| q.state == QpState::Rts && q.req.gen == gen);
                    if live {
                        let st = eng.qp(d.qpn).map(|q| (q.state, q.req.gen, q.comp.rewind));
                        rep.divergences.push(format!(
                            "packet {d:?} (gen {gen}) dropped as stale at cycle {now}, the model has it live: {st:?}"
                        ));
                    }
                }
                None => rep.divergences.push("a stale drop without a packet".into()),
            }
        }
        let mut finished = Vec::new();
        if rdy[3] && dut.get_bool(p.py_v) {
            let b = bytes_of(&dut, p.py_d, 64);
            let n = dut.get_u64(p.py_k).count_ones() as usize;
            let last = dut.get_bool(p.py_l);
            // a descriptor without payload ahead of the beat's own is complete
            while cur.front().is_some_and(|c| c.0.payload_len == 0) {
                finished.push(cur.pop_front());
            }
            match cur.front_mut() {
                Some(c) => {
                    c.1.extend_from_slice(&b[..n]);
                    if last {
                        finished.push(cur.pop_front());
                    }
                }
                None => rep.divergences.push("a payload beat without a descriptor".into()),
            }
            moved = true;
        }
        while cur.front().is_some_and(|c| c.0.payload_len == 0) {
            finished.push(cur.pop_front());
        }
        for (d, pl, (wd, wpl, _)) in finished.into_iter().flatten() {
            if d != wd || pl != wpl {
                rep.divergences.push(format!(
                    "packet {}: hdl {d:?} payload {} bytes, model {wd:?} payload {} bytes{}",
                    rep.packets,
                    pl.len(),
                    wpl.len(),
                    if d == wd { " (payload differs)" } else { "" }
                ));
            }
            rep.packets += 1;
            rep.bytes += pl.len() as u64;
            *rep.opcodes.entry(d.opcode).or_default() += 1;
            if let Some(f) = frame_of(&eng, &peer, &d, &pl) {
                ab.send(&mut rng, t, now, f);
            }
        }
        if rdy[4] && dut.get_bool(p.sn_v) {
            let got = (dut.get_u64(p.sn_q) as u32, dut.get_u64(p.sn_b) as u32);
            let want = exp_sent.pop_front();
            if want != Some(got) {
                rep.divergences.push(format!("sent bytes: hdl {got:?} model {want:?}"));
            }
            moved = true;
        }
        if rdy[5] && dut.get_bool(p.kk_v) {
            let got = (dut.get_u64(p.kk_q) as u32, dut.get_bool(p.kk_f));
            let want = exp_kicks.pop_front();
            if want != Some(got) {
                rep.divergences.push(format!("kick: hdl {got:?} model {want:?}"));
            }
            if got.1 {
                rep.kicks.1 += 1;
            } else {
                rep.kicks.0 += 1;
            }
            req::kick(&mut eng, got.0, got.1, now, &mut amem);
            model_changed = true;
            moved = true;
        }
        if rdy[6] && dut.get_bool(p.er_v) {
            let got = (dut.get_u64(p.er_q) as u32, dut.get_u64(p.er_c) as u8);
            let want = exp_errs.pop_front();
            if want != Some(got) {
                rep.divergences.push(format!("local error: hdl {got:?} model {want:?}"));
            }
            rep.local_errors += 1;
            let st = WcStatus::try_from(got.1).unwrap_or(WcStatus::LocProtErr);
            req::local_error(&mut eng, got.0, st, &mut amem);
            model_changed = true;
            moved = true;
        }
        if dut.get_bool(p.c_rt) {
            rep.retransmits += 1;
        }
        if dut.get_bool(p.c_de) {
            rep.dma_errors.0 += 1;
        }
        if dut.get_bool(p.c_we) {
            rep.dma_errors.1 += 1;
        }

        // ---- the peer and the links
        while let Some(f) = ab.due(now) {
            peer.rx(now, &f, &mut pmem);
        }
        while prq.front().is_some_and(|x| x.0 <= now) {
            if let Some((_, q, pi)) = prq.pop_front() {
                peer.rq_doorbell(q, pi, &mut pmem);
            }
        }
        while let Some(f) = peer.tx(now, &mut pmem) {
            ba.send(&mut rng, t, now, f);
        }
        while let Some(f) = ba.due(now) {
            eng.rx(now, &f, &mut amem);
            model_changed = true;
        }
        if now % 16 == 0 {
            req::timers(&mut eng, now, &mut amem);
            model_changed = true;
        }
        // the completer's state changed: wake the block; a QP in ERR: ENTER_ERR
        if model_changed {
            for &q in &qpns {
                let Some(qp) = eng.qp(q) else { continue };
                let cv = CompView::of(qp);
                if woken.get(&q) != Some(&cv) {
                    woken.insert(q, cv);
                    wake_q.push_back(q);
                }
                if qp.state == QpState::Err && !err_sent.get(&q).copied().unwrap_or(false) {
                    err_sent.insert(q, true);
                    ctx_q.push_back((CtxOp::EnterErr.code().code(), q, 0));
                }
            }
        }

        dut.tick();
        cycle += 1;
        idle = if moved { 0 } else { idle + 1 };
        if let Some((q, idx, w)) = probe.filter(|_| cycle == probe_at + 2) {
            // after the second edge following the request
            dut.eval();
            let got = dut.get_bool(p.win_ov).then(|| bytes_of(&dut, p.win_d, SqWin::SIZE));
            let got = got.and_then(|b| SqWin::decode(&b).ok());
            if got != Some(w) {
                rep.divergences.push(format!("cycle {probe_at}: QP {q} window entry {idx}: hdl {got:?} model {w:?}"));
            }
            probe = None;
        }
        if cycle % 16 == 0 {
            for &q in &qpns {
                if let Some(qp) = eng.qp(q).filter(|qp| qp.state != QpState::Err) {
                    let n = qp.req.fetched.wrapping_sub(qp.sq.ci);
                    if n < 1 << 16 {
                        rep.max_in_window = rep.max_in_window.max(n);
                    }
                }
            }
        }
        let settled = qpns.iter().all(|&q| eng.qp(q).is_none_or(|qp| qp.state == QpState::Err || qp.sq.ci == qp.sq.pi));
        quiet_model = if settled && ab.q.is_empty() && ba.q.is_empty() { quiet_model + 1 } else { 0 };
        let drained = dbs.is_empty()
            && bfs.is_empty()
            && bf_rec.is_none()
            && ctx_q.is_empty()
            && !ctx_on
            && exp_pkts.is_empty()
            && cur.is_empty()
            && wake_q.is_empty();
        if drained && quiet_model > 2000 && idle > 500 {
            if let Some(g) = again.take() {
                // the second round: the QPs reset and brought up again, new WQEs posted
                let mut d = (g.setup)(&mut eng, &mut amem, &mut peer, &mut pmem);
                let mut reset: Vec<u32> = d.iter().map(|x| x.1).collect();
                reset.sort_unstable();
                reset.dedup();
                for &q in &reset {
                    let Some(qp) = eng.qp(q) else { continue };
                    ctx_q.push_back((CtxOp::Reset.code().code(), q, 0));
                    ctx_q.push_back((CtxOp::SetSqPsn(0).code().code(), q, qp.req.next_psn));
                    let op = qp.enter_rts();
                    ctx_q.push_back((op.code().code(), q, op.arg()));
                    err_sent.insert(q, false);
                    woken.remove(&q);
                }
                for x in &mut d {
                    x.0 += now;
                }
                d.sort_by_key(|x| x.0);
                dbs.extend(d);
                idle = 0;
                quiet_model = 0;
                continue;
            }
            break;
        }
        if cycle - t0 > t.max_cycles {
            let stuck: Vec<String> = qpns
                .iter()
                .filter_map(|&q| eng.qp(q).map(|qp| (q, qp)))
                .filter(|(_, qp)| qp.state != QpState::Err && qp.sq.ci != qp.sq.pi)
                .map(|(q, qp)| {
                    format!(
                        "QP {q}: ci {} pi {} fetched {} started {} cur {} next {} una {} max_sent {}",
                        qp.sq.ci,
                        qp.sq.pi,
                        qp.req.fetched,
                        qp.req.started,
                        qp.req.cur,
                        qp.req.next_psn,
                        qp.comp.una,
                        qp.req.max_sent
                    )
                })
                .collect();
            return Err(SimError::Config(format!(
                "roce_req run did not finish in {} cycles ({} packets, {} expected, {} doorbells left): {}; divergences {:?}",
                t.max_cycles,
                rep.packets,
                exp_pkts.len(),
                dbs.len(),
                stuck.join("; "),
                rep.divergences.iter().take(5).collect::<Vec<_>>()
            )));
        }
    }
    rep.cycles = cycle - t0;

    // ---- final state through the read ports
    for &q in &qpns {
        let Some(qp) = eng.qp(q) else { continue };
        let want = req_rd(&ReqView::of(qp));
        let got = read_port(&mut dut, [p.rd_v, p.rd_q, p.rd_ov, p.rd_d], None, ReqRd::SIZE, q)
            .and_then(|b| ReqRd::decode(&b).ok());
        let want_cmp = ReqRd { busy_deadline: if want.busy { want.busy_deadline } else { 0 }, ..want };
        let got_cmp = got.map(|g| ReqRd { busy_deadline: if g.busy { g.busy_deadline } else { 0 }, ..g });
        if qp.state != QpState::Err && got_cmp != Some(want_cmp) {
            rep.divergences.push(format!("QP {q} req_rd: hdl {got_cmp:?} model {want_cmp:?}"));
        }
        if qp.state != QpState::Err {
            for (idx, w) in req::window(qp) {
                let got =
                    read_port(&mut dut, [p.win_v, p.win_q, p.win_ov, p.win_d], Some((p.win_i, idx)), SqWin::SIZE, q)
                        .and_then(|b| SqWin::decode(&b).ok());
                if got != Some(w) {
                    rep.divergences.push(format!("QP {q} window entry {idx}: hdl {got:?} model {w:?}"));
                }
            }
        }
        // state read
        dut.set_u64(p.st_v, 1);
        dut.set_u64(p.st_q, u64::from(q));
        let mut got = None;
        for _ in 0..20 {
            dut.eval();
            let taken = dut.get_bool(p.st_r);
            dut.tick();
            if taken {
                dut.set_u64(p.st_v, 0);
            }
            dut.eval();
            if dut.get_bool(p.st_done) {
                got = Some((dut.get_u64(p.st_psn) as u32, dut.get_u64(p.st_pi) as u32));
                break;
            }
        }
        dut.set_u64(p.st_v, 0);
        let want = (qp.req.next_psn, qp.sq.pi & 0xFFFF);
        if got != Some(want) {
            rep.divergences.push(format!("QP {q} (sq_psn, sq_pi): hdl {got:?} model {want:?}"));
        }
        if qp.state == QpState::Err {
            rep.qp_errors += 1;
        }
    }
    let d = &mut rep.divergences;
    for (what, n) in [
        ("packets", exp_pkts.len()),
        ("sent reports", exp_sent.len()),
        ("local errors", exp_errs.len()),
        ("kicks", exp_kicks.len()),
        ("WQE reads", exp_reads.len()),
        ("pacing questions", pace_plan.len()),
    ] {
        if n != 0 {
            d.push(format!("{n} {what} the model expects never came"));
        }
    }
    if rep.retransmits != eng.counters.retransmits {
        d.push(format!("retransmits: hdl {} model {}", rep.retransmits, eng.counters.retransmits));
    }
    if rep.dma_errors != (exp_dma_err, wqe_err) {
        d.push(format!("failed reads (payload, WQE): hdl {:?} model {:?}", rep.dma_errors, (exp_dma_err, wqe_err)));
    }
    for (_, c) in &eng.completion_log {
        *rep.completions.entry(c.status.code()).or_default() += 1;
    }
    Ok(rep)
}
