//! Lockstep: `roce_resp` (Verilated) against the engine model's responder, on request
//! streams a requester would send over a lossy link, with the faults a responder must
//! answer. Per QP: SEND (with immediate, with invalidate), WRITE (with immediate), READ and
//! both atomics, segmented at the QP's MTU (256, 1024, 4096), PSNs across the 2^24 wrap;
//! go-back-N retransmission after lost packets (PSN sequence error NAKs, silently dropped
//! packets ahead), duplicates of whole windows (ACKed again, READs served again, atomics
//! answered from the resources, some already evicted), RNR NAKs on an empty RQ and the
//! doorbells that cure them, receive WQEs with one to three SGEs (pieces placed across
//! SGE boundaries), too short, with a bad L_Key, malformed; and on some QPs one fatal
//! fault: bad R_Key, out of bounds, read-only region written, opcode out of sequence,
//! wrong packet length, WRITE past its RETH, misaligned atomic, invalid R_Key to
//! invalidate, unreadable RQ. Random backpressure on every output and DMA latency.
//! `roce_sim::cosim::resp` lists what is compared.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::contract::{AccessFlags, CqCtx, MrCtx, PathMtu, QpAttrMask, QpCtx, QpState, QpType, RqWqe, Sge};
use roce_model::engine::{Engine, EngineConfig, HostMem};
use roce_model::wire::{
    AtomicEthFields, BthFields, EthernetFields, ExtHeaders, FrameBuilder, IethFields, ImmDtFields, Ipv4Fields, Opcode,
    RethFields,
};
use roce_sim::cosim::resp::{resp_lockstep, RespOp, RespTraffic};

const CQ_BASE: u64 = 0x4000_0000;
const CQ_LOG: u8 = 14;
const RQ_BASE: u64 = 0x3000_0000;
const RQ_LOG: u8 = 5;
const DATA_VA: u64 = 0x1000_0000; // MR 1: remote read/write/atomic
const DATA_IOVA: u64 = 0x2000_0000;
const DATA_LEN: u64 = 1 << 20;
const RO_VA: u64 = 0x5000_0000; // MR 2: remote read only
const RECV_VA: u64 = 0x6000_0000; // MR 3: local write (receive buffers)
const RECV_IOVA: u64 = 0x7000_0000;
const INV_VA: u64 = 0x8000_0000; // MR 4+: invalidatable
const UNMAPPED_RQ: u64 = 0xB000_0000;
const PD: u32 = 1;
const INV_MR0: u32 = 128;

fn key(index: u32, tag: u32) -> u32 {
    index << 8 | tag
}

struct Setup {
    eng: Engine,
    mem: HostMem,
    qpns: Vec<u32>,
    /// per QP: (mtu, next PSN, receive WQEs written in the ring beyond PI, ring PI)
    qps: Vec<QpGen>,
}

#[derive(Clone, Debug)]
struct QpGen {
    qpn: u32,
    mtu: u32,
    psn: u32,
    /// RQ producer index the model has been told
    rq_pi: u32,
    /// WQEs written in the ring (posted or not yet)
    rq_written: u32,
    fault: Option<Fault>,
    /// packets of this QP, in first-send order
    pkts: Vec<Vec<u8>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    BadRkey,
    OutOfBounds,
    WriteReadOnly,
    Sequence,
    Length,
    PastReth,
    Misaligned,
    BadInvalidate,
    UnreadableRq,
    EmptyRq,
}

const FAULTS: [Fault; 10] = [
    Fault::BadRkey,
    Fault::OutOfBounds,
    Fault::WriteReadOnly,
    Fault::Sequence,
    Fault::Length,
    Fault::PastReth,
    Fault::Misaligned,
    Fault::BadInvalidate,
    Fault::UnreadableRq,
    Fault::EmptyRq,
];

fn setup(rng: &mut ChaCha8Rng, nqp: u32, seed: u64, force_mtu: Option<PathMtu>) -> Setup {
    let mut eng = Engine::new(EngineConfig::default());
    let mut mem = HostMem::with_iommu();
    for (base, len) in [
        (CQ_BASE, 32u64 << CQ_LOG),
        (RQ_BASE, 0x10_0000),
        (DATA_IOVA, DATA_LEN),
        (RO_VA + 0x1000_0000, DATA_LEN),
        (RECV_IOVA, DATA_LEN),
        (INV_VA + 0x1000_0000, DATA_LEN),
    ] {
        mem.map_window(base, len);
    }
    // initial memory contents: random data everywhere data can be read
    for base in [DATA_IOVA, RO_VA + 0x1000_0000, RECV_IOVA] {
        let d: Vec<u8> = (0..DATA_LEN).map(|_| rng.random()).collect();
        mem.write(base, &d);
    }
    eng.create_cq(1, &CqCtx { base: CQ_BASE, log_size: CQ_LOG, valid: true, ..CqCtx::default() }).expect("cq");
    let all =
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let mr = |va, iova, access, pd, k| MrCtx { va, len: DATA_LEN, iova, pd, key: k, access, valid: true };
    eng.write_mr(1, &mr(DATA_VA, DATA_IOVA, all, PD, key(1, 5))).expect("mr1");
    eng.write_mr(2, &mr(RO_VA, RO_VA + 0x1000_0000, AccessFlags::REMOTE_READ, PD, key(2, 1))).expect("mr2");
    eng.write_mr(3, &mr(RECV_VA, RECV_IOVA, AccessFlags::LOCAL_WRITE, PD, key(3, 9))).expect("mr3");
    eng.write_mr(5, &mr(RECV_VA, RECV_IOVA, AccessFlags::LOCAL_WRITE, 2, key(5, 1))).expect("mr5 (other PD)");
    // regions to invalidate: eight per QP (SEND with invalidate names each once)
    for i in 0..8 * nqp {
        let k = key(INV_MR0 + i, 3);
        eng.write_mr(INV_MR0 + i, &mr(INV_VA, INV_VA + 0x1000_0000, all, PD, k)).expect("mr inv");
    }
    let mut qps = Vec::new();
    let mut qpns = Vec::new();
    for n in 0..nqp {
        let qpn = 2 + n * 37 % 1000;
        let mtu = [PathMtu::Mtu256, PathMtu::Mtu1024, PathMtu::Mtu4096][rng.random_range(0..3)];
        let mtu = force_mtu.unwrap_or(mtu);
        let psn = if n % 3 == 0 { 0xFF_FFFF - rng.random_range(0..20) } else { rng.random_range(0..0xFF_FFFF) };
        let rq_base = RQ_BASE + u64::from(n) * 0x1000;
        // half the QPs get one fatal fault each, every kind across the seeds
        let fault = (n % 2 == 1).then(|| FAULTS[(n as usize / 2 + seed as usize * 5) % FAULTS.len()]);
        let rq_base = if fault == Some(Fault::UnreadableRq) { UNMAPPED_RQ } else { rq_base };
        let mut c = QpCtx {
            state: QpState::Init,
            qp_type: QpType::Rc,
            pd: PD,
            sq_base: 0x100_0000,
            rq_base,
            sq_log_size: 4,
            rq_log_size: RQ_LOG,
            send_cq: 1,
            recv_cq: 1,
            access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
            ..QpCtx::default()
        };
        eng.create_qp(qpn, &c).expect("qp");
        c.state = QpState::Rtr;
        c.path_mtu = mtu;
        c.dest_qpn = 0x100 + qpn;
        c.rq_psn = psn;
        c.min_rnr_timer = rng.random_range(0..32);
        c.max_dest_rd_atomic = [1, 2, 4, 16][rng.random_range(0..4)];
        c.dest_ip = "::ffff:192.0.2.9".parse::<std::net::Ipv6Addr>().expect("ip").octets();
        let rtr = QpAttrMask::STATE
            | QpAttrMask::AV
            | QpAttrMask::PATH_MTU
            | QpAttrMask::DEST_QPN
            | QpAttrMask::RQ_PSN
            | QpAttrMask::MAX_DEST_RD_ATOMIC
            | QpAttrMask::MIN_RNR_TIMER;
        eng.modify_qp(qpn, &c, rtr, &mut mem).expect("rtr");
        if n % 4 != 3 {
            c.state = QpState::Rts;
            c.sq_psn = 1;
            let rts = QpAttrMask::STATE
                | QpAttrMask::SQ_PSN
                | QpAttrMask::TIMEOUT
                | QpAttrMask::RETRY_CNT
                | QpAttrMask::RNR_RETRY
                | QpAttrMask::MAX_QP_RD_ATOMIC;
            eng.modify_qp(qpn, &c, rts, &mut mem).expect("rts");
        }
        // receive WQEs: the ring filled, the first few posted
        let mut g = QpGen { qpn, mtu: mtu.bytes(), psn, rq_pi: 0, rq_written: 0, fault, pkts: Vec::new() };
        let nwqe = 1u32 << RQ_LOG;
        for i in 0..nwqe {
            let w = recv_wqe(rng, fault, n, i);
            mem.write(rq_base + u64::from(i) * 64, &w.encode());
            g.rq_written += 1;
        }
        g.rq_pi = if fault == Some(Fault::EmptyRq) { 0 } else { rng.random_range(2..8) };
        eng.rq_doorbell(qpn, g.rq_pi, &mut mem);
        qpns.push(qpn);
        qps.push(g);
    }
    Setup { eng, mem, qpns, qps }
}

/// A receive WQE: one to three SGEs in the receive MR, sometimes flawed.
fn recv_wqe(rng: &mut ChaCha8Rng, fault: Option<Fault>, qpi: u32, i: u32) -> RqWqe {
    // the pieces add up to more than the longest message (4 MTUs of 4096 + 1) unless the
    // WQE is meant to be short
    let n = rng.random_range(1..=3usize);
    let short = fault.is_some() && rng.random_bool(0.1);
    let mut sge = [Sge::default(); 3];
    for (k, s) in sge.iter_mut().enumerate().take(n) {
        let len = match (short, rng.random_range(0..3)) {
            (true, _) => rng.random_range(1..300),
            (false, 0) if k + 1 < n => rng.random_range(1..100),
            (false, 1) if k + 1 < n => rng.random_range(100..3000),
            _ => rng.random_range(17_000..20_000),
        };
        let off = u64::from(qpi) * 0x8000 + u64::from(i % 4) * 0x2000 + k as u64 * 0x800 + rng.random_range(0..64);
        let off = off * 3;
        *s = Sge { addr: RECV_VA + (off % (DATA_LEN - 0x4000)), len, lkey: key(3, 9) };
    }
    let mut w = RqWqe { wr_id: u64::from(qpi) << 32 | u64::from(i), num_sge: n as u8, sge };
    if fault.is_some() && rng.random_bool(0.04) {
        match rng.random_range(0..3) {
            0 => w.sge[0].lkey = key(5, 1), // other PD
            1 => w.sge[0].lkey = key(3, 8), // stale tag
            _ => w.num_sge = 0,             // no room at all
        }
    }
    w
}

#[allow(clippy::too_many_arguments)]
fn frame(
    eng: &Engine,
    qpn: u32,
    op: Opcode,
    psn: u32,
    ack_req: bool,
    se: bool,
    ext: ExtHeaders,
    payload: &[u8],
) -> Vec<u8> {
    let mut bth = BthFields::new(op, qpn, psn & 0xFF_FFFF);
    bth.ack_req = ack_req;
    bth.solicited = se;
    let ipf = Ipv4Fields { src: "192.0.2.9".parse().expect("ip"), dst: eng.cfg.ipv4, ..Ipv4Fields::default() };
    let mut f = FrameBuilder::new(EthernetFields { dst: eng.cfg.mac, src: [2, 0, 0, 0, 0, 9], vlan: None }, ipf, bth)
        .with_ext(ext)
        .build(payload)
        .expect("frame");
    roce_model::icrc::fill(&mut f).expect("icrc");
    f
}

/// Packets of one message: (opcode, ext, payload) per packet.
fn segments(
    first: Opcode,
    mid: Opcode,
    last: Opcode,
    only: Opcode,
    len: usize,
    mtu: usize,
) -> Vec<(Opcode, std::ops::Range<usize>)> {
    let n = len.div_ceil(mtu).max(1);
    (0..n)
        .map(|i| {
            let op = match (n, i) {
                (1, _) => only,
                (_, 0) => first,
                (_, i) if i + 1 == n => last,
                _ => mid,
            };
            (op, i * mtu..((i + 1) * mtu).min(len))
        })
        .collect()
}

/// The messages of one QP as packets, with its fault injected somewhere in the middle.
fn messages(rng: &mut ChaCha8Rng, eng: &Engine, g: &mut QpGen, nmsg: usize) {
    let mtu = g.mtu as usize;
    let fault_at = rng.random_range(nmsg / 3..nmsg.max(2));
    let qpi = (g.qpn - 2) / 37;
    let mut inv_left = 8u32;
    for m in 0..nmsg {
        let fault = if m == fault_at { g.fault } else { None };
        let mut kind = match fault {
            Some(Fault::BadInvalidate) => 2,
            Some(Fault::Misaligned) => 9,
            Some(Fault::OutOfBounds | Fault::BadRkey) if rng.random_bool(0.5) => 7,
            Some(Fault::UnreadableRq | Fault::EmptyRq) => 0,
            Some(_) => 4,
            None => rng.random_range(0..10),
        };
        if kind == 2 && fault.is_none() {
            if inv_left == 0 {
                kind = 0;
            } else {
                inv_left -= 1;
            }
        }
        let len = match rng.random_range(0..5) {
            0 => rng.random_range(0..16),
            1 => rng.random_range(16..mtu),
            2 => mtu * rng.random_range(1..4),
            _ => rng.random_range(mtu..4 * mtu + 1),
        };
        let data: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let imm = rng.random::<u32>();
        let se = rng.random_bool(0.3);
        let push = |g: &mut QpGen, rng: &mut ChaCha8Rng, op: Opcode, ext: ExtHeaders, pl: &[u8], last: bool| {
            let f = frame(eng, g.qpn, op, g.psn, last || rng.random_bool(0.3), se && last, ext, pl);
            g.pkts.push(f);
            g.psn = (g.psn + 1) & 0xFF_FFFF;
        };
        match kind {
            0..=2 => {
                // SEND, SEND with immediate, SEND with invalidate
                let (last, only) = match kind {
                    0 => (Opcode::RcSendLast, Opcode::RcSendOnly),
                    1 => (Opcode::RcSendLastWithImmediate, Opcode::RcSendOnlyWithImmediate),
                    _ => (Opcode::RcSendLastWithInvalidate, Opcode::RcSendOnlyWithInvalidate),
                };
                let segs = segments(Opcode::RcSendFirst, Opcode::RcSendMiddle, last, only, len, mtu);
                let nseg = segs.len();
                for (i, (op, r)) in segs.into_iter().enumerate() {
                    let end = i + 1 == nseg;
                    let mut ext = ExtHeaders::NONE;
                    if end && kind == 1 {
                        ext.immdt = Some(ImmDtFields { imm });
                    }
                    if end && kind == 2 {
                        let k = if fault == Some(Fault::BadInvalidate) {
                            key(INV_MR0 + 8 * qpi, 7) // a stale tag
                        } else {
                            key(INV_MR0 + 8 * qpi + inv_left, 3)
                        };
                        ext.ieth = Some(IethFields { rkey: k });
                    }
                    let op =
                        if fault == Some(Fault::Sequence) && i == 0 && nseg > 1 { Opcode::RcSendMiddle } else { op };
                    push(g, rng, op, ext, &data[r], end);
                }
            }
            3..=6 => {
                // WRITE, WRITE with immediate
                let with_imm = kind == 4 && fault.is_none();
                let (last, only) = if with_imm {
                    (Opcode::RcRdmaWriteLastWithImmediate, Opcode::RcRdmaWriteOnlyWithImmediate)
                } else {
                    (Opcode::RcRdmaWriteLast, Opcode::RcRdmaWriteOnly)
                };
                let mut va = DATA_VA + rng.random_range(0..DATA_LEN - 5 * 4096);
                let mut rkey = key(1, 5);
                let mut dma_len = len as u32;
                match fault {
                    Some(Fault::BadRkey) => rkey = key(1, 6),
                    Some(Fault::OutOfBounds) => va = DATA_VA + DATA_LEN - 10,
                    Some(Fault::WriteReadOnly) => {
                        rkey = key(2, 1);
                        va = RO_VA;
                    }
                    Some(Fault::PastReth) => dma_len = (len as u32).saturating_sub(1),
                    _ => {}
                }
                let segs = segments(Opcode::RcRdmaWriteFirst, Opcode::RcRdmaWriteMiddle, last, only, len, mtu);
                let nseg = segs.len();
                for (i, (op, r)) in segs.into_iter().enumerate() {
                    let end = i + 1 == nseg;
                    let mut ext = ExtHeaders::NONE;
                    if i == 0 {
                        ext.reth = Some(RethFields { va, rkey, dma_len });
                    }
                    if end && with_imm {
                        ext.immdt = Some(ImmDtFields { imm });
                    }
                    let mut pl = data[r].to_vec();
                    if fault == Some(Fault::Length) && !end {
                        pl.pop();
                    }
                    if fault == Some(Fault::Length) && nseg == 1 {
                        pl = vec![0; mtu + 4];
                    }
                    push(g, rng, op, ext, &pl, end);
                }
            }
            7 | 8 => {
                // READ
                let (mut va, mut rkey) = if rng.random_bool(0.7) {
                    (DATA_VA + rng.random_range(0..DATA_LEN - 5 * 4096), key(1, 5))
                } else {
                    (RO_VA + rng.random_range(0..DATA_LEN - 5 * 4096), key(2, 1))
                };
                match fault {
                    Some(Fault::BadRkey) => rkey = key(9, 9),
                    Some(Fault::OutOfBounds) => va = DATA_VA + DATA_LEN - 100,
                    _ => {}
                }
                let ext = ExtHeaders { reth: Some(RethFields { va, rkey, dma_len: len as u32 }), ..ExtHeaders::NONE };
                let f = frame(eng, g.qpn, Opcode::RcRdmaReadRequest, g.psn, true, false, ext, &[]);
                g.pkts.push(f);
                g.psn = (g.psn + len.div_ceil(mtu).max(1) as u32) & 0xFF_FFFF;
            }
            _ => {
                // atomics
                let mut va = DATA_VA + 8 * rng.random_range(0..64);
                if fault == Some(Fault::Misaligned) {
                    va += 4;
                }
                let op = if rng.random_bool(0.5) { Opcode::RcCompareSwap } else { Opcode::RcFetchAdd };
                let compare = if rng.random_bool(0.5) { 0 } else { rng.random() };
                let ext = ExtHeaders {
                    atomic_eth: Some(AtomicEthFields { va, rkey: key(1, 5), swap_add: rng.random(), compare }),
                    ..ExtHeaders::NONE
                };
                push(g, rng, op, ext, &[], true);
            }
        }
    }
}

/// Interleave the QPs' packets as a lossy link with go-back-N retransmission would deliver
/// them, with duplicated windows and RQ doorbells.
fn schedule(rng: &mut ChaCha8Rng, qps: &mut [QpGen]) -> Vec<RespOp> {
    let mut ops = Vec::new();
    let mut pos = vec![0usize; qps.len()];
    loop {
        let live: Vec<usize> = (0..qps.len()).filter(|&i| pos[i] < qps[i].pkts.len()).collect();
        let Some(&i) = live.get(rng.random_range(0..live.len().max(1))) else { break };
        let g = &mut qps[i];
        let p = pos[i];
        let r: f64 = rng.random();
        if r < 0.04 && p + 2 < g.pkts.len() {
            // packet p lost: a few after it arrive ahead, then go back to p
            let ahead = rng.random_range(1..4).min(g.pkts.len() - p - 1);
            for k in 1..=ahead {
                ops.push(RespOp::Frame(g.pkts[p + k].clone()));
            }
        } else if r < 0.07 && p > 0 {
            // a window sent again (a lost ACK): duplicates
            let back = rng.random_range(1..=p.min(6));
            for k in p - back..p {
                ops.push(RespOp::Frame(g.pkts[k].clone()));
            }
        } else {
            ops.push(RespOp::Frame(g.pkts[p].clone()));
            pos[i] += 1;
        }
        if rng.random_bool(0.03) && g.rq_pi < g.rq_written {
            g.rq_pi += rng.random_range(1..4).min(g.rq_written - g.rq_pi);
            ops.push(RespOp::RqDoorbell { qpn: g.qpn, pi: g.rq_pi });
        }
        if g.fault == Some(Fault::EmptyRq) && pos[i] == g.pkts.len() / 2 && g.rq_pi == 0 {
            // the receives come late: earlier SENDs were RNR NAKed; go back and resend them
            g.rq_pi = 8;
            ops.push(RespOp::RqDoorbell { qpn: g.qpn, pi: g.rq_pi });
            pos[i] = 0;
        }
    }
    ops
}

fn run(seed: u64, nqp: u32, nmsg: usize, t: RespTraffic) -> roce_sim::cosim::resp::RespReport {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut s = setup(&mut rng, nqp, seed, None);
    for g in s.qps.iter_mut() {
        messages(&mut rng, &s.eng, g, nmsg);
    }
    let ops = schedule(&mut rng, &mut s.qps);
    let nops = ops.len();
    if std::env::var_os("RESP_DEBUG").is_some() {
        // the same run again, model only, printing why QPs fail
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut d = setup(&mut rng, nqp, seed, None);
        for g in d.qps.iter_mut() {
            messages(&mut rng, &d.eng, g, nmsg);
        }
        let ops = schedule(&mut rng, &mut d.qps);
        let (e, m) = (&mut d.eng, &mut d.mem);
        e.trace_events = true;
        e.regs.enabled = true;
        for (i, op) in ops.iter().enumerate() {
            let before = e.events.len();
            let epsn = |e: &Engine, q| e.qp(q).map(|x| x.resp.epsn);
            match op {
                RespOp::Frame(f) => {
                    let p = roce_model::wire::parse_frame(f).expect("frame");
                    let r = p.roce().expect("roce");
                    let q = r.bth().dest_qp();
                    let ep = epsn(e, q);
                    e.rx(i as u64, f, m);
                    for ev in &e.events[before..] {
                        if let roce_model::engine::EngineEvent::QpError { qpn, cause } = ev {
                            let fl = d.qps.iter().find(|g| g.qpn == *qpn).and_then(|g| g.fault);
                            eprintln!("op {i}: QP {qpn} error cause {cause} (fault {fl:?}) on {:?} psn {:#x} epsn {ep:x?} len {}", r.opcode(), r.bth().psn(), r.payload().len());
                        }
                    }
                }
                RespOp::RqDoorbell { qpn, pi } => e.rq_doorbell(*qpn, *pi, m),
            }
        }
    }
    let r = resp_lockstep(s.eng, s.mem, &s.qpns, &ops, (CQ_BASE, CQ_BASE + (32 << CQ_LOG)), &t).expect("runs");
    assert!(
        r.divergences.is_empty(),
        "seed {seed}: {} divergences:\n{}",
        r.divergences.len(),
        r.divergences.join("\n")
    );
    eprintln!(
        "seed {seed}: {nops} ops, {} accepted, {} cycles, {} DMA writes, {} ACK/NAKs, {} responses, {} CQEs, {} QP errors, {:?}",
        r.accepted,
        r.cycles,
        r.writes,
        r.acks.len(),
        r.responses,
        r.cqes,
        r.errors,
        r.counters
    );
    assert!(
        r.writes > 0 && !r.acks.is_empty() && r.responses > 0 && r.cqes > 0,
        "seed {seed}: the run must exercise every output"
    );
    r
}

#[test]
fn responder_matches_the_model_on_lossy_request_streams() {
    let mut total = roce_sim::cosim::resp::RespCounters::default();
    let mut causes = std::collections::BTreeSet::new();
    for seed in 0..4 {
        let i = seed as usize;
        let r = run(
            seed,
            16,
            40,
            RespTraffic {
                ready_p: [1.0, 0.6, 0.85, 0.4][i],
                beat_p: [1.0, 0.7, 0.9, 0.5][i],
                dma_latency: (3, 40),
                seed,
            },
        );
        total.dup += r.counters.dup;
        total.dma_err += r.counters.dma_err;
        total.drop += r.counters.drop;
        for k in 0..5 {
            total.naks[k] += r.counters.naks[k];
        }
        causes.extend(r.acks.iter().filter_map(|e| match e {
            roce_model::engine::EngineEvent::Ack { syndrome, .. } => Some(*syndrome & 0xE0),
            _ => None,
        }));
    }
    // every kind of answer was given somewhere
    assert!(total.dup > 0 && total.dma_err > 0 && total.drop > 0, "{total:?}");
    assert!(total.naks.iter().all(|&n| n > 0), "every NAK kind: {total:?}");
    assert!(causes.contains(&0) && causes.contains(&0x20) && causes.contains(&0x60), "ACK, RNR NAK, NAK: {causes:?}");
}

/// WRITE packets of one QP back to back, nothing held back: the stated cycles per packet.
fn write_stream(mtu: PathMtu, n: usize) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut s = setup(&mut rng, 1, 0, Some(mtu));
    let g = &mut s.qps[0];
    let m = mtu.bytes() as usize;
    let data: Vec<u8> = (0..m * n).map(|i| i as u8).collect();
    let ops: Vec<RespOp> = (0..n)
        .map(|i| {
            let op = match i {
                0 => Opcode::RcRdmaWriteFirst,
                i if i + 1 == n => Opcode::RcRdmaWriteLast,
                _ => Opcode::RcRdmaWriteMiddle,
            };
            let ext = if i == 0 {
                ExtHeaders {
                    reth: Some(RethFields { va: DATA_VA, rkey: key(1, 5), dma_len: (m * n) as u32 }),
                    ..ExtHeaders::NONE
                }
            } else {
                ExtHeaders::NONE
            };
            RespOp::Frame(frame(&s.eng, g.qpn, op, g.psn + i as u32, false, false, ext, &data[i * m..(i + 1) * m]))
        })
        .collect();
    let t = RespTraffic { ready_p: 1.0, beat_p: 1.0, dma_latency: (3, 3), seed: 1 };
    let r = resp_lockstep(s.eng, s.mem, &s.qpns, &ops, (CQ_BASE, CQ_BASE + (32 << CQ_LOG)), &t).expect("runs");
    assert!(r.divergences.is_empty(), "{:?}", r.divergences);
    assert_eq!(r.writes, n);
    // the run ends 200 idle cycles after the last write; a few cycles set the QP up
    (r.cycles - 200) / n as u64
}

#[test]
fn write_packets_cost_the_stated_cycles() {
    // 100 Gb/s at 250 MHz carries a 4096-byte RoCEv2 packet (+ Ethernet/IP/UDP/BTH, FCS,
    // preamble and gap) every 83.8 cycles: the responder must take them faster.
    let per = write_stream(PathMtu::Mtu4096, 100);
    let per_1k = write_stream(PathMtu::Mtu1024, 100);
    eprintln!("WRITE packets: 4096 bytes {per} cycles each, 1024 bytes {per_1k} cycles each");
    assert!(per <= 70, "{per} cycles per 4 KiB packet");
    assert!(per_1k <= 22, "{per_1k} cycles per 1 KiB packet (line rate: 22.9)");
}
