//! Lockstep run of `roce_comp` against the engine model's completer
//! (`roce_model::blocks::comp`).
//!
//! Engine A's requester is the model's own (`blocks::req::visit` on its QPs in turn,
//! the WQEs it reads arrive at once); its packets go to the peer engine B over a lossy
//! link, and B's responses come back over another to the HDL block, as the RX dispatch
//! hands them over
//! (`roce_rx_parse`'s header record, the QP's attributes and state, the payload stream).
//! At the start of each of the block's operations (`dbg_op_*`: a response taken, a timeout
//! the scanner found, a kick, a context op) the harness takes the requester's state
//! (`req_rd_t`), the send window and the attributes of that QP, answers the block's reads
//! during the operation with them, and runs the model's operation with the same values.
//! Around the block it plays `roce_req` (its read ports, kicks for malformed WQEs and for
//! doorbells of QPs in ERR, the READ/atomic bodies it hands over: one in eight left out, one
//! in eight of the rest given wrong and then cleared with the QP's stretch as a RESET
//! clears it), `roce_qp_ctx` (attributes; SET_SQ_PSN and ENTER_RTS at the
//! start; ENTER_ERR for every QP the block or the requester reports), `roce_mr_check` (A's
//! table), host memory behind the DMA ports, random backpressure.
//!
//! Compared: the DMA writes in order (CQ ring excluded), the completions per QP (CQE image
//! and CQ), the QP errors in order, the wakes in order (a model operation other than a
//! context op that changed what `roce_req` reads of the QP must bring one, for that QP), the
//! QP's `comp_rd_t` read on the block's port for `roce_req` as each wake comes (so every
//! rewind request, una, sq_ci, RNR back-off), the counters, and at the end every QP's
//! `comp_rd_t` and sq_ci (state-read port). Inputs come with random gaps (responses,
//! payload beats, DMA read data) and outputs see random backpressure.

use std::collections::{BTreeMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::comp;
use roce_model::blocks::req::{self, comp_rd, req_rd};
use roce_model::blocks::resp::Recorder;
use roce_model::blocks::rx_parse;
use roce_model::contract::records::{CompRd, CtxOpReq, DmaReq, MrReq, MrRes, QpAttr, RxFlags, SqWin};
use roce_model::contract::{Cqe, QpState};
use roce_model::engine::comp::ReqView;
use roce_model::engine::cq::encode_cqe;
use roce_model::engine::qp_ctx::CtxOp;
use roce_model::engine::req::CompView;
use roce_model::engine::{Dma, Engine, EngineEvent};
use roce_model::wire::Opcode;

use super::{bytes_of, events_from, offer_beat, ports, random_ready, reset_until_init, words_of, Beat};
use crate::cosim::req::{ReqSetup, ReqTraffic};
use crate::vl::{Dut, Model};
use crate::SimError;

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct CompReport {
    /// Cycles run after the reset sweep.
    pub cycles: u64,
    /// Operations by kind: response, timeout, kick, flush kick, context op.
    pub ops: [u64; 5],
    /// Requester packets the model sent.
    pub packets: u64,
    /// DMA writes (HDL).
    pub writes: u64,
    /// Completions by status code (HDL).
    pub completions: BTreeMap<u8, u64>,
    /// QP errors (HDL).
    pub errors: u64,
    /// Counters (HDL): NAKs, RNR NAKs, timeouts, failed reads.
    pub counters: [u64; 4],
    /// Wakes sent to the requester (each checked against the model's operation that changed
    /// the completer's state, with that state as `comp_rd_t` read at the wake).
    pub wakes: u64,
    /// Wakes whose state carried a new rewind request.
    pub rewind_wakes: u64,
    /// Rewinds the model's requester applied.
    pub rewinds: u64,
    /// Response opcodes taken.
    pub opcodes: BTreeMap<u8, u64>,
    /// AETH syndromes of the Acknowledges taken.
    pub syndromes: BTreeMap<u8, u64>,
    /// READ/atomic WQE bodies given to the block as `roce_req` would (s_body).
    pub bodies: u64,
    /// READ/atomic WQE bodies left out (one in eight, at random): the block reads those
    /// WQEs again from the SQ ring.
    pub bodies_left_out: u64,
    /// READ/atomic WQE bodies given wrong (one in eight of the rest, at random: the first
    /// SGE's address moved by 64 bytes) and then forgotten with the QP's whole stretch of the
    /// body store by `s_body_clr`, as `roce_req` asks at a RESET: had the clear missed the
    /// entry, the block would place the READ data where the wrong body says.
    pub bodies_cleared: u64,
    /// WQEs the block read again from the SQ ring (a body it was not given, or one whose
    /// store entry another WQE took).
    pub wqe_reads: u64,
    /// Differences from the model.
    pub divergences: Vec<String>,
}

/// What the block reads during one operation, taken at its start.
struct Snap {
    q: u32,
    rv: ReqView,
    win: BTreeMap<u32, SqWin>,
    attr: Vec<u32>,
    state: u64,
}

fn snap(eng: &Engine, q: u32) -> Snap {
    match eng.qp(q) {
        Some(qp) => Snap {
            q,
            rv: ReqView::of(qp),
            win: req::window(qp).into_iter().collect(),
            attr: words_of(&qp.to_attr().encode()),
            state: u64::from(qp.state.code()),
        },
        None => {
            Snap { q, rv: ReqView::default(), win: BTreeMap::new(), attr: words_of(&[0u8; QpAttr::SIZE]), state: 0 }
        }
    }
}

/// Run `s` (A's requester played by the model) through the HDL completer and the model.
pub fn comp_lockstep(s: ReqSetup, t: &ReqTraffic) -> Result<CompReport, SimError> {
    let ReqSetup { a: mut eng, amem, b: mut peer, bmem: mut pmem, qpns, doorbells, peer_rq, again: _, inline_dbs: _ } =
        s;
    let cq_region = (0x4000_0000u64, 0x4000_0000u64 + (32 << 14));
    let mut rng = ChaCha8Rng::seed_from_u64(t.seed);
    let mut dut = Dut::new(Model::Comp, None)?;
    let p = ports!(dut;
        rst = "rst", init_done = "init_done", now = "now", now_tick = "now_tick", us = "cfg_us_cycles",
        rsp_v = "s_rsp_valid", rsp_r = "s_rsp_ready", rsp_h = "s_rsp_hdr", rsp_a = "s_rsp_attr", rsp_s = "s_rsp_state",
        py_d = "s_axis_pay_tdata", py_k = "s_axis_pay_tkeep", py_v = "s_axis_pay_tvalid", py_r = "s_axis_pay_tready",
        py_l = "s_axis_pay_tlast",
        kk_v = "s_kick_valid", kk_r = "s_kick_ready", kk_q = "s_kick_qpn", kk_f = "s_kick_flush",
        ctx_v = "s_ctx_valid", ctx_r = "s_ctx_ready", ctx = "s_ctx",
        st_v = "s_strd_valid", st_r = "s_strd_ready", st_q = "s_strd_qpn", st_done = "strd_done", st_ci = "strd_sq_ci",
        at_v = "m_attr_valid", at_r = "m_attr_ready", at_sv = "s_attr_valid", at_d = "s_attr_data", at_st = "s_attr_state",
        rd_v = "m_rd_valid", rd_q = "m_rd_qpn", rd_sv = "s_rd_valid", rd_d = "s_rd_data",
        rd2_v = "m_rd2_valid", rd2_q = "m_rd2_qpn", rd2_sv = "s_rd2_valid", rd2_d = "s_rd2_data",
        wn_v = "m_win_valid", wn_q = "m_win_qpn", wn_i = "m_win_idx", wn_sv = "s_win_valid", wn_d = "s_win_data",
        cp_v = "s_comp_valid", cp_q = "s_comp_qpn", cp_ov = "m_comp_valid", cp_d = "m_comp_data",
        wk_v = "m_wake_valid", wk_r = "m_wake_ready", wk_q = "m_wake_qpn",
        mr_v = "m_mr_valid", mr_r = "m_mr_ready", mr = "m_mr",
        mr_user = "m_mr_user",
        mrs_v = "s_mr_valid", mrs = "s_mr", mrs_user = "s_mr_user",
        dr_v = "m_dma_rd_valid", dr_r = "m_dma_rd_ready", dr = "m_dma_rd",
        dd_d = "s_dma_rd_tdata", dd_v = "s_dma_rd_tvalid", dd_l = "s_dma_rd_tlast", dd_u = "s_dma_rd_tuser",
        dw_v = "m_dma_wr_valid", dw_r = "m_dma_wr_ready", dw = "m_dma_wr",
        wd_d = "m_axis_dma_wr_tdata", wd_k = "m_axis_dma_wr_tkeep", wd_v = "m_axis_dma_wr_tvalid",
        wd_r = "m_axis_dma_wr_tready", wd_l = "m_axis_dma_wr_tlast",
        cpl_v = "m_cpl_valid", cpl_r = "m_cpl_ready", cpl_d = "m_cpl_tdata", cpl_u = "m_cpl_tuser",
        er_v = "m_err_valid", er_r = "m_err_ready", er_q = "m_err_qpn", er_c = "m_err_cause",
        op_v = "dbg_op_valid", op_k = "dbg_op_kind", op_q = "dbg_op_qpn",
        bd_v = "s_body_valid", bd_q = "s_body_qpn", bd_i = "s_body_idx", bd_s = "s_body_sge", bd_c = "s_body_clr",
        c_nak = "cnt_nak", c_rnr = "cnt_rnr", c_tmo = "cnt_timeout", c_dma = "cnt_dma_err",
    );
    let mut rep = CompReport::default();
    let mut amem = amem;
    let mut hmem = amem.clone(); // the block's view of A's memory (its DMA writes)
    eng.trace_events = true;
    eng.log_completions = true;
    eng.regs.enabled = true;
    peer.regs.enabled = true;
    let tick_cycles = eng.cfg.tick_cycles.max(1);

    for q in [
        p.rsp_v, p.py_v, p.kk_v, p.ctx_v, p.st_v, p.at_sv, p.rd_sv, p.rd2_sv, p.wn_sv, p.cp_v, p.mrs_v, p.dd_v, p.bd_v,
        p.bd_c,
    ] {
        dut.set_u64(q, 0);
    }
    dut.set_u64(p.us, u64::from(eng.dcqcn.us_cycles));
    let mut cycle = reset_until_init(&mut dut, p.rst, p.init_done, 3, |dut, c| {
        dut.set_u64(p.now, c);
        dut.set_u64(p.now_tick, c / tick_cycles);
    })?;

    let mut ctx_q: VecDeque<(u8, u32, u32)> = VecDeque::new();
    for &q in &qpns {
        let qp = eng.qp(q).ok_or_else(|| SimError::Config(format!("QP {q} does not exist")))?;
        ctx_q.push_back((CtxOp::SetSqPsn(0).code().code(), q, qp.comp.una));
        let op = qp.enter_rts();
        ctx_q.push_back((op.code().code(), q, op.arg()));
    }
    let mut ctx_on = false;
    let mut err_sent: BTreeMap<u32, bool> = BTreeMap::new();
    let mut kick_q: VecDeque<(u32, bool)> = VecDeque::new();
    let mut kick_on = false;
    // the set-up's times, the limit and the report's cycles count from the end of the reset
    // sweep (N x 16 cycles: the body store's entries)
    let t0 = cycle;
    let mut dbs = events_from(t0, doorbells);
    let mut prq = events_from(t0, peer_rq);
    let mut rsp_q: VecDeque<(u64, Vec<u8>)> = VecDeque::new(); // (arrival, frame)
    let mut beats: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
    let mut beat_on = false;
    let mut op_snaps: VecDeque<Snap> = VecDeque::new(); // operations started, for their reads
    let mut cur_snap: Option<Snap> = None;
    let mut rd_ans: VecDeque<(u64, Vec<u32>)> = VecDeque::new();
    let mut rd2_ans: VecDeque<(u64, Vec<u32>)> = VecDeque::new();
    let mut win_ans: VecDeque<(u64, Vec<u32>)> = VecDeque::new();
    let mut attr_ans: VecDeque<(u64, Vec<u32>, u64)> = VecDeque::new();
    let mut mr_q: VecDeque<(u64, u8, u64, u8)> = VecDeque::new();
    let mut dma_q: VecDeque<Beat> = VecDeque::new();
    let mut wr_reqs: VecDeque<(u64, usize)> = VecDeque::new();
    let mut wr_data: Vec<u8> = Vec::new();
    let mut wr_done: VecDeque<Vec<u8>> = VecDeque::new();
    let mut hdl_writes: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut m_writes: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut hdl_cqes: BTreeMap<u32, Vec<[u8; 32]>> = BTreeMap::new();
    let mut hdl_errs: Vec<EngineEvent> = Vec::new();
    let mut model_dma_err = 0u64;
    let mut req_errs: Vec<usize> = Vec::new();
    let mut ab: VecDeque<(u64, Vec<u8>)> = VecDeque::new();
    let mut exp_wakes: VecDeque<(u32, Option<CompRd>)> = VecDeque::new(); // (qpn, state after)
    let mut wake_seen = false;
    let mut crd_reads: VecDeque<(u64, u32, Option<CompRd>)> = VecDeque::new(); // (due, qpn, expected)
    let mut rsp_on = false;
    let mut bodies: VecDeque<(u32, u32, u64)> = VecDeque::new(); // WQEs arrived: (qpn, SQ index, address)
    let mut clear_next: Option<u32> = None; // a QP whose stretch of the body store to clear
    let mut clear_hold = 0u32; // cycles no body is given, while a clear walks the stretch
    let mut last_gen: BTreeMap<u32, u8> = BTreeMap::new();
    let mut rr = 0usize;
    let mut idle = 0u64;
    let mut quiet = 0u64;

    loop {
        let now = cycle;
        dut.set_u64(p.now, now);
        dut.set_u64(p.now_tick, now / tick_cycles);
        // ---- the requester (model): one visit per cycle, QPs in turn
        if !qpns.is_empty() && ab.len() < 64 {
            let q = qpns[rr % qpns.len()];
            rr += 1;
            let before_gen = eng.qp(q).map_or(0, |x| x.req.gen);
            let cv = eng.qp(q).map(CompView::of);
            if let Some(cv) = cv {
                let mut rec = Recorder { mem: &mut amem, writes: Vec::new(), skip: cq_region };
                if let Some(v) = req::visit(&mut eng, q, now, &cv, || true, &mut rec) {
                    for (idx, fetch) in v.read.iter().flat_map(|r| r.wqes()) {
                        req::arrived(&mut eng, q, idx, fetch);
                    }
                    // roce_req gives the block each READ/atomic body as it arrives (one in
                    // eight is left out here: the block reads those again by DMA)
                    if let Some(r) = v.read {
                        for (k, (idx, _)) in r.wqes().enumerate() {
                            bodies.push_back((q, idx, r.addr + 128 * k as u64));
                        }
                    }
                    if v.malformed.is_some() {
                        kick_q.push_back((q, false));
                    }
                    if let Some(st) = v.failed {
                        // (the requester reports it; the block only sees ENTER_ERR)
                        let n = eng.events.len();
                        comp::local_error(&mut eng, q, st);
                        req_errs.extend(n..eng.events.len());
                    }
                    for pk in v.pkts {
                        rep.packets += 1;
                        let d = req::desc_of(&pk);
                        if let Some(f) = crate::cosim::req::frame_of(&eng, &peer, &d, &pk.payload) {
                            if !rng.random_bool(t.loss) {
                                let at = ab.back().map_or(now + t.link_delay, |b| b.0.max(now + t.link_delay));
                                if rng.random_bool(t.dup) {
                                    ab.push_back((at, f.clone()));
                                }
                                ab.push_back((at, f));
                            }
                        }
                    }
                }
            }
            if eng.qp(q).is_some_and(|x| x.req.gen != before_gen) {
                rep.rewinds += 1;
            }
        }
        while dbs.front().is_some_and(|d| d.0 <= now) {
            if let Some((_, q, pi)) = dbs.pop_front() {
                if comp::post(&mut eng, q, pi, now, &mut amem) {
                    kick_q.push_back((q, true));
                }
            }
        }
        // ---- the peer and the links
        while ab.front().is_some_and(|f| f.0 <= now) {
            if let Some((_, f)) = ab.pop_front() {
                peer.rx(now, &f, &mut pmem);
            }
        }
        while prq.front().is_some_and(|x| x.0 <= now) {
            if let Some((_, q, pi)) = prq.pop_front() {
                peer.rq_doorbell(q, pi, &mut pmem);
            }
        }
        while let Some(f) = peer.tx(now, &mut pmem) {
            if rng.random_bool(t.loss) {
                continue;
            }
            let at = rsp_q.back().map_or(now + t.link_delay, |b| b.0.max(now + t.link_delay));
            if rng.random_bool(t.dup) {
                rsp_q.push_back((at, f.clone()));
            }
            rsp_q.push_back((at, f));
        }
        // responses the dispatch does not give the completer are dropped here
        while let Some((at, f)) = rsp_q.front().filter(|_| !rsp_on) {
            if *at > now {
                break;
            }
            let h = rx_parse::parse(f);
            let ok = h.flags.contains(RxFlags::ROCE)
                && Opcode::from_u8(h.opcode).is_ok_and(|o| o.is_response())
                && eng.qp(h.dest_qp).is_some_and(|q| q.can_receive());
            if ok {
                break;
            }
            rsp_q.pop_front();
        }

        // ---- inputs
        if !ctx_on {
            if let Some(&(op, q, arg)) = ctx_q.front() {
                dut.set_bundle(p.ctx, &CtxOpReq { code: op, qpn: q, arg });
                ctx_on = true;
            }
        }
        dut.set_u64(p.ctx_v, u64::from(ctx_on));
        if !kick_on {
            if let Some(&(q, fl)) = kick_q.front() {
                dut.set_u64(p.kk_q, u64::from(q));
                dut.set_u64(p.kk_f, u64::from(fl));
                kick_on = true;
            }
        }
        dut.set_u64(p.kk_v, u64::from(kick_on));
        // a response is offered after random gaps and held until taken
        if !rsp_on && rsp_q.front().is_some_and(|f| f.0 <= now) && ctx_q.is_empty() && beats.is_empty() {
            rsp_on = rng.random_bool(t.ready_p.max(0.3));
        }
        let offer = rsp_q.front().filter(|_| rsp_on).map(|f| f.1.clone());
        dut.set_u64(p.rsp_v, u64::from(offer.is_some()));
        if let Some(f) = &offer {
            let h = rx_parse::parse(f);
            dut.set(p.rsp_h, &words_of(&h.encode()));
            let (a, st) = eng
                .qp(h.dest_qp)
                .map_or((vec![0u8; QpAttr::SIZE], 0), |q| (q.to_attr().encode().to_vec(), u64::from(q.state.code())));
            dut.set(p.rsp_a, &words_of(&a));
            dut.set_u64(p.rsp_s, st);
        }
        if !beat_on && !beats.is_empty() && rng.random_bool(t.ready_p.max(0.5)) {
            beat_on = true;
        }
        dut.set_u64(p.py_v, u64::from(beat_on));
        if let Some((b, last)) = beats.front() {
            dut.set(p.py_d, &words_of(b));
            dut.set_u64(p.py_k, if b.len() >= 64 { u64::MAX } else { (1u64 << b.len()) - 1 });
            dut.set_u64(p.py_l, u64::from(*last));
        }
        for (q, v, d) in
            [(&mut rd_ans, p.rd_sv, p.rd_d), (&mut rd2_ans, p.rd2_sv, p.rd2_d), (&mut win_ans, p.wn_sv, p.wn_d)]
        {
            let now_v = q.front().is_some_and(|x| x.0 <= now);
            dut.set_u64(v, u64::from(now_v));
            if let Some((_, w)) = q.front() {
                dut.set(d, w);
            }
        }
        let attr_now = attr_ans.front().is_some_and(|x| x.0 <= now);
        dut.set_u64(p.at_sv, u64::from(attr_now));
        if let Some((_, w, st)) = attr_ans.front() {
            dut.set(p.at_d, w);
            dut.set_u64(p.at_st, *st);
        }
        dut.set_u64(p.at_r, 1);
        let mr_now = mr_q.front().is_some_and(|m| m.0 <= now);
        dut.set_u64(p.mrs_v, u64::from(mr_now));
        if let Some(&(_, st, dma, user)) = mr_q.front() {
            dut.set_bundle(p.mrs, &MrRes { status: st, dma });
            dut.set_u64(p.mrs_user, u64::from(user));
        }
        dut.set_u64(p.bd_v, 0);
        dut.set_u64(p.bd_c, 0);
        if let Some(q) = clear_next.take() {
            // the clear walks the QP's 16 entries, one a cycle where no body is written
            dut.set_u64(p.bd_c, 1);
            dut.set_u64(p.bd_q, u64::from(q));
            clear_hold = 17;
        } else if clear_hold > 0 {
            clear_hold -= 1;
        } else if let Some((q, idx, addr)) = bodies.pop_front() {
            let mut w = [0u8; 128];
            let ok = hmem.dma_read(addr, &mut w).is_ok();
            let rd_atomic = ok && (5..=7).contains(&w[8]);
            if rd_atomic && rng.random_bool(0.125) {
                rep.bodies_left_out += 1;
            } else if rd_atomic {
                let mut b = w[64..128].to_vec();
                b.push(w[10] & 7);
                if rng.random_bool(0.125) {
                    b[0] ^= 0x40;
                    clear_next = Some(q);
                    rep.bodies_cleared += 1;
                } else {
                    rep.bodies += 1;
                }
                dut.set_u64(p.bd_v, 1);
                dut.set_u64(p.bd_q, u64::from(q));
                dut.set_u64(p.bd_i, u64::from(idx));
                dut.set(p.bd_s, &words_of(&b));
            }
        }
        let dd_now = offer_beat(&mut dut, &dma_q, now, [p.dd_v, p.dd_d, p.dd_l, p.dd_u]);
        let rdy =
            random_ready(&mut dut, &mut rng, t.ready_p, [p.mr_r, p.dr_r, p.dw_r, p.wd_r, p.cpl_r, p.er_r, p.wk_r]);
        dut.eval();

        // ---- an operation starts: the model does it with what the block will read
        let mut moved = false;
        if dut.get_bool(p.op_v) {
            let kind = dut.get_u64(p.op_k) as usize;
            let q = dut.get_u64(p.op_q) as u32;
            rep.ops[kind.min(4)] += 1;
            let sn = snap(&eng, q);
            let rv = sn.rv;
            let before = eng.qp(q).map(|x| comp_rd(&CompView::of(x)));
            let dma_before = eng.counters.dma_errors;
            let mut rec = Recorder { mem: &mut amem, writes: Vec::new(), skip: cq_region };
            match kind {
                0 => {
                    if let Some(f) = &offer {
                        comp::response(&mut eng, q, f, now, &rv, &mut rec);
                    }
                }
                1 => {
                    comp::timeout(&mut eng, q, now, &rv, &mut rec);
                }
                2 | 3 => comp::kick(&mut eng, q, kind == 3, now, &rv, &mut rec),
                _ => {
                    if ctx_q.front().is_some_and(|c| c.0 == CtxOp::EnterErr.code().code()) {
                        comp::enter_err(&mut eng, q, &rv, &mut rec);
                    }
                }
            }
            m_writes.extend(rec.writes);
            model_dma_err += eng.counters.dma_errors - dma_before;
            // an operation that changed what roce_req reads of the QP wakes it (not a context op)
            let after = eng.qp(q).map(|x| comp_rd(&CompView::of(x)));
            if kind != 4 && after != before {
                exp_wakes.push_back((q, after));
            }
            op_snaps.push_back(sn);
            moved = true;
        }
        // ---- handshakes
        if ctx_on && dut.get_bool(p.ctx_r) {
            ctx_on = false;
            ctx_q.pop_front();
            moved = true;
        }
        if kick_on && dut.get_bool(p.kk_r) {
            kick_on = false;
            kick_q.pop_front();
            moved = true;
        }
        if offer.is_some() && dut.get_bool(p.rsp_r) {
            rsp_on = false;
            if let Some((_, f)) = rsp_q.pop_front() {
                let h = rx_parse::parse(&f);
                *rep.opcodes.entry(h.opcode).or_default() += 1;
                if h.opcode == Opcode::RcAcknowledge as u8 {
                    *rep.syndromes.entry(h.aeth_syndrome).or_default() += 1;
                }
                if h.flags.contains(RxFlags::PAYLOAD) {
                    let (o, n) = (usize::from(h.payload_off), usize::from(h.payload_len));
                    let pl = f.get(o..o + n).unwrap_or(&[]).to_vec();
                    let nb = n.div_ceil(64).max(1);
                    for i in 0..nb {
                        beats.push_back((pl.get(64 * i..(64 * i + 64).min(n)).unwrap_or(&[]).to_vec(), i + 1 == nb));
                    }
                }
            }
            moved = true;
        }
        if beat_on && dut.get_bool(p.py_r) {
            beats.pop_front();
            beat_on = false;
            moved = true;
        }
        for (q, v) in [(&mut rd_ans, p.rd_sv), (&mut rd2_ans, p.rd2_sv), (&mut win_ans, p.wn_sv)] {
            if q.front().is_some_and(|x| x.0 <= now) && dut.get_bool(v) {
                q.pop_front();
            }
        }
        if attr_now {
            attr_ans.pop_front();
        }
        if mr_now {
            mr_q.pop_front();
        }
        if dut.get_bool(p.rd_v) {
            // the operation's first read: from now on its reads are answered from its snapshot
            cur_snap = op_snaps.pop_front();
            let q = dut.get_u64(p.rd_q) as u32;
            let rv = cur_snap.as_ref().map_or(ReqView::default(), |s| s.rv);
            rd_ans.push_back((now + 2, words_of(&req_rd(&rv).encode())));
            if cur_snap.is_none() {
                rep.divergences.push(format!("a read of QP {q}'s requester state outside an operation"));
            }
        }
        if dut.get_bool(p.rd2_v) {
            let q = dut.get_u64(p.rd2_q) as u32;
            let rv = eng.qp(q).map(ReqView::of).unwrap_or_default();
            rd2_ans.push_back((now + 2, words_of(&req_rd(&rv).encode())));
        }
        if dut.get_bool(p.wn_v) {
            let idx = dut.get_u64(p.wn_i) as u32;
            let wq = dut.get_u64(p.wn_q) as u32;
            if cur_snap.as_ref().is_some_and(|s| s.q != wq) {
                rep.divergences.push(format!("window of QP {wq} read during an operation on another QP (cycle {now})"));
            }
            let w = cur_snap.as_ref().and_then(|s| s.win.get(&idx).copied());
            if w.is_none() {
                rep.divergences.push(format!("window entry {idx} read, not in the window (cycle {now})"));
            }
            win_ans.push_back((now + 2, words_of(&w.unwrap_or_default().encode())));
        }
        if dut.get_bool(p.at_v) {
            let (a, st) = cur_snap.as_ref().map_or((words_of(&[0u8; QpAttr::SIZE]), 0), |s| (s.attr.clone(), s.state));
            attr_ans.push_back((now + 2, a, st));
        }
        if rdy[0] && dut.get_bool(p.mr_v) {
            let m: MrReq = dut.get_bundle(p.mr);
            let (key, pd, va, len, need) = (m.key, m.pd, m.va, u64::from(m.len), u32::from(m.need));
            let user = dut.get_u64(p.mr_user) as u8;
            let (st, dma) = match eng.mrs.check(key, pd, va, len, need) {
                Ok(d) => (0, d),
                Err(_) => (1, 0),
            };
            let at = mr_q.back().map_or(now + 4, |b| b.0.max(now + 4));
            mr_q.push_back((at, st, dma, user));
            moved = true;
        }
        if rdy[1] && dut.get_bool(p.dr_v) {
            let r: DmaReq = dut.get_bundle(p.dr);
            let (addr, len) = (r.addr, usize::from(r.len));
            rep.wqe_reads += u64::from(len == 128);
            let mut buf = vec![0u8; len];
            let err = hmem.dma_read(addr, &mut buf).is_err();
            if err {
                buf.fill(0);
            }
            let lat = rng.random_range(t.dma_latency.0..=t.dma_latency.1);
            let nb = len.div_ceil(64).max(1);
            let mut at = dma_q.back().map_or(now + lat, |x| x.0.max(now + lat));
            for i in 0..nb {
                dma_q.push_back((
                    at,
                    buf.get(64 * i..(64 * i + 64).min(len)).unwrap_or(&[]).to_vec(),
                    i + 1 == nb,
                    err,
                ));
                at += 1 + u64::from(rng.random_bool(1.0 - t.ready_p.max(0.5)));
            }
            moved = true;
        }
        if dd_now {
            dma_q.pop_front();
        }
        if rdy[2] && dut.get_bool(p.dw_v) {
            let w: DmaReq = dut.get_bundle(p.dw);
            wr_reqs.push_back((w.addr, usize::from(w.len)));
            moved = true;
        }
        if rdy[3] && dut.get_bool(p.wd_v) {
            let b = bytes_of(&dut, p.wd_d, 64);
            let n = dut.get_u64(p.wd_k).count_ones() as usize;
            wr_data.extend_from_slice(&b[..n]);
            if dut.get_bool(p.wd_l) {
                wr_done.push_back(std::mem::take(&mut wr_data));
            }
            moved = true;
        }
        while !wr_reqs.is_empty() && !wr_done.is_empty() {
            let (Some((addr, len)), Some(d)) = (wr_reqs.pop_front(), wr_done.pop_front()) else { break };
            if d.len() != len {
                rep.divergences.push(format!("DMA write at {addr:#x}: {} bytes for a request of {len}", d.len()));
            }
            let _ = hmem.dma_write(addr, &d);
            hdl_writes.push((addr, d));
            rep.writes += 1;
        }
        if rdy[4] && dut.get_bool(p.cpl_v) {
            let b = bytes_of(&dut, p.cpl_d, 32);
            let mut img = [0u8; 32];
            img.copy_from_slice(&b);
            let qpn = u32::from_le_bytes([img[16], img[17], img[18], 0]);
            let cq = dut.get_u64(p.cpl_u) as u32;
            let want_cq = eng.qp(qpn).map(|q| q.send_cq);
            if want_cq != Some(cq) {
                rep.divergences.push(format!("CQE of QP {qpn} to CQ {cq}, expected {want_cq:?}"));
            }
            *rep.completions.entry(img[21]).or_default() += 1;
            hdl_cqes.entry(qpn).or_default().push(img);
            moved = true;
        }
        if rdy[5] && dut.get_bool(p.er_v) {
            let q = dut.get_u64(p.er_q) as u32;
            hdl_errs.push(EngineEvent::QpError { qpn: q, cause: dut.get_u64(p.er_c) as u8 });
            rep.errors += 1;
            moved = true;
        }
        // a wake: the model's operation that changed the state, and the state (comp_rd_t)
        // read on the port roce_req reads it on, before the next operation can write it back
        dut.set_u64(p.cp_v, 0);
        if dut.get_bool(p.wk_v) && !wake_seen {
            wake_seen = true;
            let q = dut.get_u64(p.wk_q) as u32;
            match exp_wakes.pop_front() {
                Some((wq, st)) if wq == q => {
                    dut.set_u64(p.cp_v, 1);
                    dut.set_u64(p.cp_q, u64::from(q));
                    crd_reads.push_back((now + 2, q, st));
                }
                other => rep.divergences.push(format!("wake of QP {q} at cycle {now}, model {other:?}")),
            }
        }
        if rdy[6] && dut.get_bool(p.wk_v) {
            rep.wakes += 1;
            wake_seen = false;
            moved = true;
        }
        if let Some(&(due, q, want)) = crd_reads.front() {
            if due == now {
                crd_reads.pop_front();
                let got =
                    dut.get_bool(p.cp_ov).then(|| CompRd::decode(&bytes_of(&dut, p.cp_d, CompRd::SIZE)).ok()).flatten();
                if got != want {
                    rep.divergences
                        .push(format!("QP {q} comp_rd at its wake (cycle {now}): hdl {got:?} model {want:?}"));
                } else if let Some(w) = want {
                    if last_gen.insert(q, w.rw_gen).unwrap_or(0) != w.rw_gen {
                        rep.rewind_wakes += 1;
                    }
                }
            }
        }
        for (i, c) in [p.c_nak, p.c_rnr, p.c_tmo, p.c_dma].into_iter().enumerate() {
            if dut.get_bool(c) {
                rep.counters[i] += 1;
            }
        }
        // a QP the model moved to ERR: ENTER_ERR for the block (roce_qp_ctx)
        for &q in &qpns {
            if eng.qp(q).is_some_and(|x| x.state == QpState::Err) && !err_sent.get(&q).copied().unwrap_or(false) {
                err_sent.insert(q, true);
                ctx_q.push_back((CtxOp::EnterErr.code().code(), q, 0));
            }
        }

        dut.tick();
        cycle += 1;
        idle = if moved { 0 } else { idle + 1 };
        let settled = qpns.iter().all(|&q| eng.qp(q).is_none_or(|qp| qp.state == QpState::Err || qp.sq.ci == qp.sq.pi));
        quiet = if settled && ab.is_empty() && rsp_q.is_empty() { quiet + 1 } else { 0 };
        let drained =
            dbs.is_empty() && ctx_q.is_empty() && !ctx_on && kick_q.is_empty() && !kick_on && beats.is_empty();
        // (idle: no operation for two sweeps of the timer scanner over the 1024 QPs)
        if drained && quiet > 3000 && idle > 2500 {
            break;
        }
        if cycle - t0 > t.max_cycles {
            let stuck: Vec<String> = qpns
                .iter()
                .filter_map(|&q| eng.qp(q).map(|qp| (q, qp)))
                .filter(|(_, qp)| qp.state != QpState::Err && qp.sq.ci != qp.sq.pi)
                .map(|(q, qp)| {
                    format!(
                        "QP {q}: ci {} pi {} fetched {} started {} cur {} next {} una {} max_sent {} rw {:?}",
                        qp.sq.ci,
                        qp.sq.pi,
                        qp.req.fetched,
                        qp.req.started,
                        qp.req.cur,
                        qp.req.next_psn,
                        qp.comp.una,
                        qp.req.max_sent,
                        qp.comp.rewind
                    )
                })
                .collect();
            return Err(SimError::Config(format!(
                "roce_comp run did not finish in {} cycles: {}; divergences {:?}",
                t.max_cycles,
                stuck.join("; "),
                rep.divergences.iter().take(5).collect::<Vec<_>>()
            )));
        }
    }
    rep.cycles = cycle - t0;

    // ---- final state (outputs taken from now on: an operation the scanner starts must not
    // hold the state reads up)
    for r in [p.mr_r, p.dr_r, p.dw_r, p.wd_r, p.cpl_r, p.er_r, p.wk_r] {
        dut.set_u64(r, 1);
    }
    for v in [p.rsp_v, p.py_v, p.kk_v, p.ctx_v, p.rd_sv, p.rd2_sv, p.wn_sv, p.at_sv, p.mrs_v, p.dd_v] {
        dut.set_u64(v, 0);
    }
    for &q in &qpns {
        let Some(qp) = eng.qp(q) else { continue };
        let want = comp_rd(&CompView::of(qp));
        dut.set_u64(p.cp_v, 1);
        dut.set_u64(p.cp_q, u64::from(q));
        let mut got = None;
        for _ in 0..4 {
            dut.eval();
            if dut.get_bool(p.cp_ov) {
                got = CompRd::decode(&bytes_of(&dut, p.cp_d, CompRd::SIZE)).ok();
                break;
            }
            dut.tick();
            dut.set_u64(p.cp_v, 0);
        }
        dut.set_u64(p.cp_v, 0);
        if got != Some(want) {
            rep.divergences.push(format!("QP {q} comp_rd: hdl {got:?} model {want:?} ({:?})", qp.state));
        }
        dut.set_u64(p.st_v, 1);
        dut.set_u64(p.st_q, u64::from(q));
        let mut ci = None;
        for _ in 0..20 {
            dut.eval();
            let taken = dut.get_bool(p.st_r);
            dut.tick();
            if taken {
                dut.set_u64(p.st_v, 0);
            }
            dut.eval();
            if dut.get_bool(p.st_done) {
                ci = Some(dut.get_u64(p.st_ci) as u32);
                break;
            }
        }
        dut.set_u64(p.st_v, 0);
        if ci != Some(qp.sq.ci & 0xFFFF) {
            rep.divergences.push(format!("QP {q} sq_ci: hdl {ci:?} model {}", qp.sq.ci & 0xFFFF));
        }
    }

    // ---- compare
    let d = &mut rep.divergences;
    if !exp_wakes.is_empty() {
        d.push(format!("{} wakes the model expects never came: {:?}", exp_wakes.len(), exp_wakes.front()));
    }
    cmp(d, "DMA write", &hdl_writes, &m_writes);
    let m_errs: Vec<EngineEvent> = eng
        .events
        .iter()
        .enumerate()
        .filter(|(i, e)| matches!(e, EngineEvent::QpError { .. }) && !req_errs.contains(i))
        .map(|(_, e)| *e)
        .collect();
    cmp(d, "QP error", &hdl_errs, &m_errs);
    let mut m_cqes: BTreeMap<u32, Vec<[u8; 32]>> = BTreeMap::new();
    for (_, c) in &eng.completion_log {
        let mut img = encode_cqe(c, 0, 0);
        img[23] = 0;
        m_cqes.entry(c.qpn).or_default().push(img);
    }
    for q in m_cqes.keys().chain(hdl_cqes.keys()).copied().collect::<std::collections::BTreeSet<u32>>() {
        let h: Vec<_> = hdl_cqes.get(&q).cloned().unwrap_or_default().iter().map(|i| Cqe::decode(i).ok()).collect();
        let m: Vec<_> = m_cqes.get(&q).cloned().unwrap_or_default().iter().map(|i| Cqe::decode(i).ok()).collect();
        cmp(d, &format!("completion of QP {q}"), &h, &m);
    }
    let c = &eng.counters;
    let want = [c.naks_rcvd, c.rnr_rcvd, c.timeouts, model_dma_err];
    if rep.counters != want {
        d.push(format!("counters (NAK, RNR, timeout, failed reads): hdl {:?} model {want:?}", rep.counters));
    }
    Ok(rep)
}

fn cmp<T: PartialEq + std::fmt::Debug>(out: &mut Vec<String>, what: &str, hdl: &[T], model: &[T]) {
    if let Some(i) = (0..hdl.len().max(model.len())).find(|&i| hdl.get(i) != model.get(i)) {
        let show = |x: Option<&T>| {
            let s = format!("{x:?}");
            if s.len() > 400 {
                format!("{}...", &s[..400])
            } else {
                s
            }
        };
        out.push(format!(
            "{what} {i}: hdl {} model {} ({} vs {} in all)",
            show(hdl.get(i)),
            show(model.get(i)),
            hdl.len(),
            model.len()
        ));
    }
}
