//! Lockstep run of `roce_resp` against the engine model's responder
//! (`roce_model::blocks::resp`).
//!
//! The test builds an [`Engine`] (QPs in RTR/RTS, MRs, CQs, receive WQEs in host memory) and
//! a list of request frames and RQ doorbells. The harness mirrors the QPs' responder state
//! into the HDL block (SET_RQ_PSN context ops, RQ doorbells), then offers the operations in
//! order: each frame goes to the block as its header record (`roce_rx_parse`'s model), the
//! QP's attribute record and its payload stream, and into the model (`Engine::rx`) when the
//! block takes it. Around the block the harness plays its neighbours: `roce_mr_check` (the
//! model's MR table, results in order after a fixed latency), host memory behind the DMA
//! read and write ports (random latency, errors outside the IOMMU windows), `roce_qp_ctx`
//! (answers attribute lookups; sends ENTER_ERR for every QP the block reports on `m_err`),
//! and random backpressure on every output.
//!
//! Compared afterwards: the DMA writes in order (CQ rings excluded), the ACK/NAK requests
//! and QP errors in order, the READ responses / atomic ACKs in order (a READ's bytes as the
//! HDL's `rd_rsp_t` names them in host memory at that moment), the receive completions per
//! QP (the HDL flushes when ENTER_ERR comes back, the model at once), the counters, and each
//! QP's final rq_psn / rq_pi / rq_ci through the state-read port.

use std::collections::{BTreeMap, VecDeque};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::resp::{responses, Recorder, Response};
use roce_model::blocks::rx_parse;
use roce_model::contract::records::{CtxOpReq, DmaReq, MrReq, MrRes, QpAttr, RxFlags, RxHdr};
use roce_model::contract::Cqe;
use roce_model::engine::cq::encode_cqe;
use roce_model::engine::{Engine, EngineEvent, HostMem, MrTable};

use super::{bytes_of, reset_until_init, words_of};
use crate::vl::{Dut, Model, Port};
use crate::SimError;

/// One operation of a run.
#[derive(Clone, Debug)]
pub enum RespOp {
    /// A request frame (a whole Ethernet frame with a valid ICRC).
    Frame(Vec<u8>),
    /// An RQ doorbell.
    RqDoorbell {
        /// QP.
        qpn: u32,
        /// Producer index (16 bits used).
        pi: u32,
    },
}

/// How hard the harness pushes the block.
#[derive(Clone, Copy, Debug)]
pub struct RespTraffic {
    /// Probability per cycle that an output (ACK, response, CQE, error, DMA) is taken.
    pub ready_p: f64,
    /// Probability per cycle that the next payload beat is offered.
    pub beat_p: f64,
    /// DMA read latency range in cycles.
    pub dma_latency: (u64, u64),
    /// RNG seed.
    pub seed: u64,
}

/// Block counters, HDL side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespCounters {
    /// Duplicates.
    pub dup: u64,
    /// NAKs by kind: sequence, RNR, invalid request, remote access, remote operational.
    pub naks: [u64; 5],
    /// DMA read errors.
    pub dma_err: u64,
    /// Packets dropped for a QP in error.
    pub drop: u64,
}

/// What a run produced and how it compared.
#[derive(Clone, Debug, Default)]
pub struct RespReport {
    /// Operations the block took.
    pub accepted: usize,
    /// Cycles run.
    pub cycles: u64,
    /// DMA writes (HDL).
    pub writes: usize,
    /// ACK/NAK requests (HDL).
    pub acks: Vec<EngineEvent>,
    /// Responses (HDL).
    pub responses: usize,
    /// Completions (HDL).
    pub cqes: usize,
    /// QP errors (HDL).
    pub errors: usize,
    /// Counters (HDL).
    pub counters: RespCounters,
    /// Differences from the model.
    pub divergences: Vec<String>,
}

struct Ports {
    rst: Port,
    init_done: Port,
    req: [Port; 4],
    pay: [Port; 5],
    db: [Port; 4],
    ctx: [Port; 4],
    strd: [Port; 7],
    attr: [Port; 5],
    mr_req: [Port; 4],
    mr_res: [Port; 4],
    rd_req: [Port; 3],
    rd_dat: [Port; 5],
    wr_req: [Port; 3],
    wr_dat: [Port; 5],
    ack: [Port; 6],
    rsp: [Port; 3],
    cpl: [Port; 4],
    err: [Port; 4],
    cnt: [Port; 8],
}

fn ports(dut: &Dut) -> Result<Ports, SimError> {
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_resp has no port {n}")));
    Ok(Ports {
        rst: p("rst")?,
        init_done: p("init_done")?,
        req: [p("s_req_valid")?, p("s_req_ready")?, p("s_req_hdr")?, p("s_req_attr")?],
        pay: [
            p("s_axis_pay_tdata")?,
            p("s_axis_pay_tkeep")?,
            p("s_axis_pay_tvalid")?,
            p("s_axis_pay_tready")?,
            p("s_axis_pay_tlast")?,
        ],
        db: [p("s_db_valid")?, p("s_db_ready")?, p("s_db_qpn")?, p("s_db_pi")?],
        ctx: [p("s_ctx_valid")?, p("s_ctx_ready")?, p("s_ctx")?, p("ctx_done")?],
        strd: [
            p("s_strd_valid")?,
            p("s_strd_ready")?,
            p("s_strd_qpn")?,
            p("strd_done")?,
            p("strd_rq_psn")?,
            p("strd_rq_pi")?,
            p("strd_rq_ci")?,
        ],
        attr: [p("m_attr_valid")?, p("m_attr_ready")?, p("m_attr_qpn")?, p("s_attr_valid")?, p("s_attr_data")?],
        mr_req: [p("m_mr_valid")?, p("m_mr_ready")?, p("m_mr")?, p("m_mr_user")?],
        mr_res: [p("s_mr_valid")?, p("s_mr_ready")?, p("s_mr")?, p("s_mr_user")?],
        rd_req: [p("m_dma_rd_valid")?, p("m_dma_rd_ready")?, p("m_dma_rd")?],
        rd_dat: [
            p("s_dma_rd_tdata")?,
            p("s_dma_rd_tvalid")?,
            p("s_dma_rd_tready")?,
            p("s_dma_rd_tlast")?,
            p("s_dma_rd_tuser")?,
        ],
        wr_req: [p("m_dma_wr_valid")?, p("m_dma_wr_ready")?, p("m_dma_wr")?],
        wr_dat: [
            p("m_axis_dma_wr_tdata")?,
            p("m_axis_dma_wr_tkeep")?,
            p("m_axis_dma_wr_tvalid")?,
            p("m_axis_dma_wr_tready")?,
            p("m_axis_dma_wr_tlast")?,
        ],
        ack: [
            p("m_ack_valid")?,
            p("m_ack_ready")?,
            p("m_ack_qpn")?,
            p("m_ack_psn")?,
            p("m_ack_syndrome")?,
            p("m_ack_msn")?,
        ],
        rsp: [p("m_rsp_valid")?, p("m_rsp_ready")?, p("m_rsp_data")?],
        cpl: [p("m_cpl_valid")?, p("m_cpl_ready")?, p("m_cpl_tdata")?, p("m_cpl_tuser")?],
        err: [p("m_err_valid")?, p("m_err_ready")?, p("m_err_qpn")?, p("m_err_cause")?],
        cnt: [
            p("cnt_dup")?,
            p("cnt_nak_seq")?,
            p("cnt_nak_rnr")?,
            p("cnt_nak_inv")?,
            p("cnt_nak_acc")?,
            p("cnt_nak_op")?,
            p("cnt_dma_err")?,
            p("cnt_drop")?,
        ],
    })
}

/// Context-op codes of `roce_qp_ctx` the block understands.
const OP_SET_RQ_PSN: u8 = 1;
const OP_ENTER_ERR: u8 = 4;

/// MR check latency the harness gives (roce_mr_check's).
const MR_LATENCY: u64 = 4;

/// Whether the RX dispatch hands a frame's record to the responder: a well-formed RC
/// request (the dispatch sends responses, CNPs and UD elsewhere).
fn is_rc_request(h: &RxHdr) -> bool {
    h.flags.contains(RxFlags::ROCE) && roce_model::wire::Opcode::from_u8(h.opcode).is_ok_and(|o| o.is_request())
}

/// Run `ops` through the HDL block and through `eng` (with host memory `mem`; DMA writes
/// into `[cq_region.0, cq_region.1)` are CQE writes and not compared as data). `qpns` are
/// the QPs the run uses, in RTR/RTS.
pub fn resp_lockstep(
    mut eng: Engine,
    mem: HostMem,
    qpns: &[u32],
    ops: &[RespOp],
    cq_region: (u64, u64),
    t: &RespTraffic,
) -> Result<RespReport, SimError> {
    let mut rng = ChaCha8Rng::seed_from_u64(t.seed);
    let mut dut = Dut::new(Model::Resp, None)?;
    let pt = ports(&dut)?;
    let mut rep = RespReport::default();

    // the HDL's surroundings start as the model does
    let mut hmem = mem.clone();
    let mut mrs: MrTable = eng.mrs.clone();
    let mut attrs: BTreeMap<u32, QpAttr> = BTreeMap::new();
    for &q in qpns {
        let qp = eng.qp(q).ok_or_else(|| SimError::Config(format!("QP {q} does not exist")))?;
        attrs.insert(q, qp.to_attr());
    }
    let mut mmem = mem;
    eng.trace_events = true;
    eng.log_completions = true;
    eng.regs.enabled = true;

    // reset
    for (q, v) in [(pt.req[0], 0), (pt.pay[2], 0), (pt.db[0], 0), (pt.ctx[0], 0), (pt.strd[0], 0)] {
        dut.set_u64(q, v);
    }
    reset_until_init(&mut dut, pt.rst, pt.init_done, 3, |_, _| {})?;

    // the harness's queues
    let mut ctx_q: VecDeque<(u8, u32, u32)> = VecDeque::new(); // (op, qpn, arg)
    let mut db_pre: VecDeque<(u32, u32)> = VecDeque::new();
    for &q in qpns {
        let qp = eng.qp(q).ok_or_else(|| SimError::Config(format!("QP {q} does not exist")))?;
        ctx_q.push_back((OP_SET_RQ_PSN, q, qp.resp.epsn));
        db_pre.push_back((q, qp.rq.pi & 0xFFFF));
    }
    let mut next_op = 0usize;
    let mut beats: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
    let mut beat_on = false;
    let mut ctx_on = false;
    let mut attr_q: VecDeque<(u64, u32)> = VecDeque::new(); // (ready cycle, qpn)
    let mut mr_q: VecDeque<(u64, u8, u64, u8)> = VecDeque::new(); // (ready, status, dma, user)
    let mut rd_q: VecDeque<(u64, Vec<u8>, bool)> = VecDeque::new(); // (ready, beat, error) per beat; last flagged below
    let mut rd_last: VecDeque<bool> = VecDeque::new();
    let mut wr_reqs: VecDeque<(u64, usize)> = VecDeque::new();
    let mut wr_data: Vec<u8> = Vec::new();
    let mut wr_done: VecDeque<Vec<u8>> = VecDeque::new();
    let mut hdl_writes: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut hdl_events: Vec<EngineEvent> = Vec::new();
    let mut hdl_errors: Vec<EngineEvent> = Vec::new();
    let mut hdl_rsp: Vec<Response> = Vec::new();
    let mut hdl_cqes: BTreeMap<u32, Vec<[u8; 32]>> = BTreeMap::new();
    let mut m_writes: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut cycle = 0u64;
    let mut idle = 0u64;
    let mut op_offered = false;

    loop {
        let now = cycle;
        // ---- inputs
        if !ctx_on {
            if let Some(&(op, q, arg)) = ctx_q.front() {
                dut.set_bundle(pt.ctx[2], &CtxOpReq { code: op, qpn: q, arg });
                ctx_on = true;
            }
        }
        dut.set_u64(pt.ctx[0], u64::from(ctx_on));
        // doorbells that mirror the model's initial RQ state go first
        let pre_db = db_pre.front().copied();
        let mut offer_db = None;
        let mut offer_req: Option<(RxHdr, u32)> = None;
        if ctx_q.is_empty() && !ctx_on {
            if let Some((q, pi)) = pre_db {
                offer_db = Some((q, pi));
            } else if next_op < ops.len() {
                match &ops[next_op] {
                    RespOp::RqDoorbell { qpn, pi } => offer_db = Some((*qpn, *pi & 0xFFFF)),
                    RespOp::Frame(f) => {
                        let h = rx_parse::parse(f);
                        if is_rc_request(&h) && attrs.contains_key(&h.dest_qp) {
                            offer_req = Some((h, h.dest_qp));
                        }
                    }
                }
                op_offered = true;
            }
        }
        dut.set_u64(pt.db[0], u64::from(offer_db.is_some()));
        if let Some((q, pi)) = offer_db {
            dut.set_u64(pt.db[2], u64::from(q));
            dut.set_u64(pt.db[3], u64::from(pi));
        }
        dut.set_u64(pt.req[0], u64::from(offer_req.is_some()));
        if let Some((h, q)) = &offer_req {
            dut.set(pt.req[2], &words_of(&h.encode()));
            let a = attrs.get(q).map(|a| a.encode()).unwrap_or([0u8; QpAttr::SIZE]);
            dut.set(pt.req[3], &words_of(&a));
        }
        if !beat_on && !beats.is_empty() && rng.random_bool(t.beat_p) {
            beat_on = true;
        }
        dut.set_u64(pt.pay[2], u64::from(beat_on));
        if let Some((b, last)) = beats.front() {
            dut.set(pt.pay[0], &words_of(b));
            dut.set_u64(pt.pay[1], if b.len() >= 64 { u64::MAX } else { (1u64 << b.len()) - 1 });
            dut.set_u64(pt.pay[4], u64::from(*last));
        }
        // attribute answers
        let attr_now = attr_q.front().is_some_and(|&(c, _)| c <= now);
        dut.set_u64(pt.attr[3], u64::from(attr_now));
        if let Some(&(_, q)) = attr_q.front() {
            let a = attrs.get(&q).map(|a| a.encode()).unwrap_or([0u8; QpAttr::SIZE]);
            dut.set(pt.attr[4], &words_of(&a));
        }
        dut.set_u64(pt.attr[1], 1);
        // MR results
        let mr_now = mr_q.front().is_some_and(|&(c, ..)| c <= now);
        dut.set_u64(pt.mr_res[0], u64::from(mr_now));
        if let Some(&(_, st, dma, user)) = mr_q.front() {
            dut.set_bundle(pt.mr_res[2], &MrRes { status: st, dma });
            dut.set_u64(pt.mr_res[3], u64::from(user));
        }
        let mr_rdy = rng.random_bool(t.ready_p);
        dut.set_u64(pt.mr_req[1], u64::from(mr_rdy));
        // DMA read data
        let rd_now = rd_q.front().is_some_and(|&(c, ..)| c <= now);
        dut.set_u64(pt.rd_dat[1], u64::from(rd_now));
        if let Some((_, b, e)) = rd_q.front() {
            dut.set(pt.rd_dat[0], &words_of(b));
            dut.set_u64(pt.rd_dat[4], u64::from(*e));
            dut.set_u64(pt.rd_dat[3], u64::from(rd_last.front().copied().unwrap_or(true)));
        }
        let rd_rdy = rng.random_bool(t.ready_p);
        dut.set_u64(pt.rd_req[1], u64::from(rd_rdy));
        let (wr_rdy, wd_rdy) = (rng.random_bool(t.ready_p), rng.random_bool(t.ready_p));
        dut.set_u64(pt.wr_req[1], u64::from(wr_rdy));
        dut.set_u64(pt.wr_dat[3], u64::from(wd_rdy));
        let out_rdy: Vec<bool> = (0..4).map(|_| rng.random_bool(t.ready_p)).collect();
        dut.set_u64(pt.ack[1], u64::from(out_rdy[0]));
        dut.set_u64(pt.rsp[1], u64::from(out_rdy[1]));
        dut.set_u64(pt.cpl[1], u64::from(out_rdy[2]));
        dut.set_u64(pt.err[1], u64::from(out_rdy[3]));
        dut.eval();

        // ---- handshakes
        let mut moved = false;
        if ctx_on && dut.get_bool(pt.ctx[1]) {
            ctx_on = false;
            ctx_q.pop_front();
            moved = true;
        }
        if let Some((q, pi)) = offer_db {
            if dut.get_bool(pt.db[1]) {
                moved = true;
                if pre_db.is_some() {
                    db_pre.pop_front();
                } else {
                    eng.rq_doorbell(q, pi, &mut Recorder { mem: &mut mmem, writes: Vec::new(), skip: cq_region });
                    next_op += 1;
                    rep.accepted += 1;
                }
            }
        }
        if let Some((h, _)) = &offer_req {
            if dut.get_bool(pt.req[1]) {
                moved = true;
                rep.accepted += 1;
                if let RespOp::Frame(f) = &ops[next_op] {
                    if h.flags.contains(RxFlags::PAYLOAD) {
                        let (o, n) = (usize::from(h.payload_off), usize::from(h.payload_len));
                        let pl = f.get(o..o + n).unwrap_or(&[]).to_vec();
                        let nb = n.div_ceil(64).max(1);
                        for i in 0..nb {
                            let chunk = pl.get(64 * i..(64 * i + 64).min(n)).unwrap_or(&[]).to_vec();
                            beats.push_back((chunk, i + 1 == nb));
                        }
                    }
                    let mut r = Recorder { mem: &mut mmem, writes: Vec::new(), skip: cq_region };
                    eng.rx(now, f, &mut r);
                    m_writes.extend(r.writes);
                }
                next_op += 1;
            }
        } else if op_offered && offer_db.is_none() && next_op < ops.len() && pre_db.is_none() && ctx_q.is_empty() {
            // a frame the dispatch would not hand to the responder: the model sees it alone
            if let RespOp::Frame(f) = &ops[next_op] {
                let mut r = Recorder { mem: &mut mmem, writes: Vec::new(), skip: cq_region };
                eng.rx(now, f, &mut r);
                m_writes.extend(r.writes);
                next_op += 1;
                moved = true;
            }
        }
        op_offered = false;
        if beat_on && dut.get_bool(pt.pay[3]) {
            beats.pop_front();
            beat_on = false;
            moved = true;
        }
        if dut.get_bool(pt.attr[0]) {
            attr_q.push_back((now + 2, dut.get_u64(pt.attr[2]) as u32));
        }
        if attr_now {
            attr_q.pop_front();
        }
        if mr_now {
            mr_q.pop_front();
        }
        if mr_rdy && dut.get_bool(pt.mr_req[0]) {
            let m: MrReq = dut.get_bundle(pt.mr_req[2]);
            let (op, key, pd, va, len, need) = (m.op, m.key, m.pd, m.va, u64::from(m.len), u32::from(m.need));
            let user = dut.get_u64(pt.mr_req[3]) as u8;
            let (st, dma) = if op {
                (u8::from(mrs.invalidate(key, Some(pd)).is_err()), 0)
            } else {
                match mrs.check(key, pd, va, len, need) {
                    Ok(d) => (0, d),
                    Err(_) => (1, 0),
                }
            };
            let at = mr_q.back().map_or(now + MR_LATENCY, |b| b.0.max(now + MR_LATENCY));
            mr_q.push_back((at, st, dma, user));
            moved = true;
        }
        if rd_now {
            rd_q.pop_front();
            rd_last.pop_front();
        }
        if rd_rdy && dut.get_bool(pt.rd_req[0]) {
            let r: DmaReq = dut.get_bundle(pt.rd_req[2]);
            let (addr, len) = (r.addr, usize::from(r.len));
            let mut buf = vec![0u8; len];
            let err = roce_model::engine::Dma::dma_read(&mut hmem, addr, &mut buf).is_err();
            let lat = rng.random_range(t.dma_latency.0..=t.dma_latency.1);
            let nb = len.div_ceil(64).max(1);
            let start = rd_q.back().map_or(now + lat, |b| b.0.max(now + lat));
            for i in 0..nb {
                let chunk = buf.get(64 * i..(64 * i + 64).min(len)).unwrap_or(&[]).to_vec();
                rd_q.push_back((start + i as u64, chunk, err));
                rd_last.push_back(i + 1 == nb);
            }
            moved = true;
        }
        if wr_rdy && dut.get_bool(pt.wr_req[0]) {
            let w: DmaReq = dut.get_bundle(pt.wr_req[2]);
            wr_reqs.push_back((w.addr, usize::from(w.len)));
            moved = true;
        }
        if wd_rdy && dut.get_bool(pt.wr_dat[2]) {
            let b = bytes_of(&dut, pt.wr_dat[0], 64);
            let n = dut.get_u64(pt.wr_dat[1]).count_ones() as usize;
            wr_data.extend_from_slice(&b[..n]);
            if dut.get_bool(pt.wr_dat[4]) {
                wr_done.push_back(std::mem::take(&mut wr_data));
            }
            moved = true;
        }
        while !wr_reqs.is_empty() && !wr_done.is_empty() {
            let (Some((addr, len)), Some(d)) = (wr_reqs.pop_front(), wr_done.pop_front()) else { break };
            if d.len() != len {
                rep.divergences.push(format!("DMA write at {addr:#x}: {} bytes for a request of {len}", d.len()));
            }
            let _ = roce_model::engine::Dma::dma_write(&mut hmem, addr, &d);
            hdl_writes.push((addr, d));
        }
        if out_rdy[0] && dut.get_bool(pt.ack[0]) {
            hdl_events.push(EngineEvent::Ack {
                qpn: dut.get_u64(pt.ack[2]) as u32,
                psn: dut.get_u64(pt.ack[3]) as u32,
                syndrome: dut.get_u64(pt.ack[4]) as u8,
                msn: dut.get_u64(pt.ack[5]) as u32,
            });
            moved = true;
        }
        if out_rdy[1] && dut.get_bool(pt.rsp[0]) {
            let b = bytes_of(&dut, pt.rsp[2], 40);
            let u32_at = |o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
            let u64_at = |o: usize| u64::from_le_bytes(b[o..o + 8].try_into().unwrap_or([0; 8]));
            let (qpn, psn, msn, atomic, len, dma, orig) = (
                u32_at(0) & 0xFF_FFFF,
                u32_at(4) & 0xFF_FFFF,
                u32_at(8) & 0xFF_FFFF,
                b[12] & 1 != 0,
                u32_at(16),
                u64_at(24),
                u64_at(32),
            );
            let r = if atomic {
                Response { qpn, psn, msn, npkts: 1, data: Vec::new(), orig: Some(orig) }
            } else {
                let mtu = attrs.get(&qpn).map_or(1024, |a| a.path_mtu.bytes());
                if u32::from(b[13]) != attrs.get(&qpn).map_or(0, |a| a.path_mtu.code().into()) {
                    rep.divergences.push(format!("response of QP {qpn}: path MTU code {} is not the QP's", b[13]));
                }
                let npkts = (len.div_ceil(mtu)).max(1);
                Response { qpn, psn, msn, npkts, data: hmem.read_vec(dma, len as usize), orig: None }
            };
            hdl_rsp.push(r);
            moved = true;
        }
        if out_rdy[2] && dut.get_bool(pt.cpl[0]) {
            let b = bytes_of(&dut, pt.cpl[2], 32);
            let mut img = [0u8; 32];
            img.copy_from_slice(&b);
            let qpn = u32::from_le_bytes([img[16], img[17], img[18], 0]);
            let cq = dut.get_u64(pt.cpl[3]) as u32;
            let want_cq = attrs.get(&qpn).map(|a| u32::from(a.recv_cq));
            if want_cq != Some(cq) {
                rep.divergences.push(format!("CQE of QP {qpn} to CQ {cq}, expected {want_cq:?}"));
            }
            hdl_cqes.entry(qpn).or_default().push(img);
            moved = true;
        }
        if out_rdy[3] && dut.get_bool(pt.err[0]) {
            let q = dut.get_u64(pt.err[2]) as u32;
            hdl_errors.push(EngineEvent::QpError { qpn: q, cause: dut.get_u64(pt.err[3]) as u8 });
            ctx_q.push_back((OP_ENTER_ERR, q, 0));
            moved = true;
        }
        for (i, p) in pt.cnt.iter().enumerate() {
            if dut.get_bool(*p) {
                match i {
                    0 => rep.counters.dup += 1,
                    1..=5 => rep.counters.naks[i - 1] += 1,
                    6 => rep.counters.dma_err += 1,
                    _ => rep.counters.drop += 1,
                }
            }
        }
        dut.tick();
        cycle += 1;
        idle = if moved { 0 } else { idle + 1 };
        let done = next_op >= ops.len() && ctx_q.is_empty() && !ctx_on && db_pre.is_empty() && beats.is_empty();
        if done && idle > 200 {
            break;
        }
        if idle > 20_000 {
            return Err(SimError::Config(format!(
                "roce_resp stalled at operation {next_op} of {} (cycle {cycle}, {} beats waiting)",
                ops.len(),
                beats.len()
            )));
        }
    }
    rep.cycles = cycle;

    // ---- final per-QP state through the state-read port
    let mut finals = Vec::new();
    for &q in qpns {
        dut.set_u64(pt.strd[0], 1);
        dut.set_u64(pt.strd[2], u64::from(q));
        let mut got = None;
        for _ in 0..50 {
            dut.eval();
            let taken = dut.get_bool(pt.strd[1]);
            dut.tick();
            if taken {
                dut.set_u64(pt.strd[0], 0);
            }
            dut.eval();
            if dut.get_bool(pt.strd[3]) {
                got = Some((
                    dut.get_u64(pt.strd[4]) as u32,
                    dut.get_u64(pt.strd[5]) as u32,
                    dut.get_u64(pt.strd[6]) as u32,
                ));
                break;
            }
        }
        dut.set_u64(pt.strd[0], 0);
        finals.push((q, got));
    }

    // ---- compare
    let d = &mut rep.divergences;
    cmp(
        d,
        "DMA write",
        &hdl_writes.iter().map(|(a, b)| (*a, b.len(), b.clone())).collect::<Vec<_>>(),
        &m_writes.iter().map(|(a, b)| (*a, b.len(), b.clone())).collect::<Vec<_>>(),
    );
    let (m_acks, m_errs): (Vec<EngineEvent>, Vec<EngineEvent>) =
        eng.events.iter().copied().partition(|e| matches!(e, EngineEvent::Ack { .. }));
    cmp(d, "ACK/NAK", &hdl_events, &m_acks);
    cmp(d, "QP error", &hdl_errors, &m_errs);
    cmp(d, "response", &hdl_rsp, &responses(eng.take_responses()));
    let mut m_cqes: BTreeMap<u32, Vec<[u8; 32]>> = BTreeMap::new();
    for (_, c) in &eng.completion_log {
        let mut img = encode_cqe(c, 0, 0);
        img[23] = 0; // the owner byte is roce_cq's
        m_cqes.entry(c.qpn).or_default().push(img);
    }
    for q in m_cqes.keys().chain(hdl_cqes.keys()).copied().collect::<std::collections::BTreeSet<u32>>() {
        let h: Vec<_> = hdl_cqes.get(&q).cloned().unwrap_or_default().iter().map(|i| Cqe::decode(i).ok()).collect();
        let m: Vec<_> = m_cqes.get(&q).cloned().unwrap_or_default().iter().map(|i| Cqe::decode(i).ok()).collect();
        cmp(d, &format!("completion of QP {q}"), &h, &m);
    }
    let c = &eng.counters;
    let want = RespCounters {
        dup: c.duplicates,
        naks: [c.nak_seq_sent, c.nak_rnr_sent, c.nak_inv_sent, c.nak_acc_sent, c.nak_op_sent],
        dma_err: c.dma_errors,
        drop: c.rx_unknown_qp,
    };
    if rep.counters != want {
        d.push(format!("counters: hdl {:?} model {want:?}", rep.counters));
    }
    for (q, got) in finals {
        let Some(qp) = eng.qp(q) else { continue };
        let want = (qp.resp.epsn, qp.rq.pi & 0xFFFF, qp.rq.ci & 0xFFFF);
        if got != Some(want) {
            d.push(format!(
                "QP {q} final (rq_psn, rq_pi, rq_ci): hdl {got:?} model {want:?} (model state {:?})",
                qp.state
            ));
        }
    }
    rep.writes = hdl_writes.len();
    rep.acks = hdl_events;
    rep.responses = hdl_rsp.len();
    rep.cqes = hdl_cqes.values().map(Vec::len).sum();
    rep.errors = hdl_errors.len();
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
