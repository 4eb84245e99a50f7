//! Lockstep: `roce_comp` (Verilated) against the engine model's completer. The requester is
//! the model's own (`roce_sim::cosim::comp` lists what the harness plays and compares); its packets go
//! to a peer engine over lossy, duplicating links and the peer's responses come back to the
//! block: coalesced ACKs, PSN sequence NAKs after losses, RNR NAKs (late receive WQEs; some
//! QPs run out of RNR retries), NAKs invalid request (a SEND longer than the receive
//! buffer), remote access (bad R_Key) and remote operational error (an atomic on memory the
//! peer cannot reach), READ responses of up to 5 packets (MTU 256-4096; lost ones: later
//! responses go back, duplicates are dropped), ATOMIC Acknowledges, silence (a peer QP that
//! does not exist: local ACK timeouts until RETRY_EXC_ERR), READ data on a bad local L_Key
//! (LOC_PROT_ERR), malformed WQEs (completed in order on the requester's kick), SQs flushed
//! on ERR (posted WQEs included, one ring unreadable), doorbells after ERR. Random
//! backpressure on every output, random gaps on every input stream, DMA latency.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::contract::{
    AccessFlags, CqCtx, MrCtx, PathMtu, QpAttrMask, QpCtx, QpState, QpType, RqWqe, Sge, SqData, SqFlags, SqOpcode,
    SqWqe,
};
use roce_model::engine::{Engine, EngineConfig, HostMem};
use roce_sim::cosim::comp::{comp_lockstep, CompReport};
use roce_sim::cosim::req::{ReqSetup, ReqTraffic};

const CQ_BASE: u64 = 0x4000_0000;
const CQ_LOG: u8 = 14;
const SQ_BASE: u64 = 0x3000_0000;
const SQ_LOG: u8 = 8;
const LOCAL_VA: u64 = 0x1000_0000; // A's MR 1
const LOCAL_IOVA: u64 = 0x2000_0000;
const DATA_LEN: u64 = 1 << 21;
const REMOTE_VA: u64 = 0x6000_0000; // B's MR 1
const REMOTE_IOVA: u64 = 0x7000_0000;
const DEAD_VA: u64 = 0x5000_0000; // B's MR 2: its IOVA is not mapped
const RECV_VA: u64 = 0x8000_0000; // B's MR 3
const RECV_IOVA: u64 = 0x9000_0000;
const RQ_BASE: u64 = 0xA000_0000;
const PD: u32 = 1;
const TICK: u64 = 64;

fn key(index: u32, tag: u32) -> u32 {
    index << 8 | tag
}

/// What goes wrong on a QP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// The peer has no receive WQEs for a while: RNR NAKs.
    LateRecv,
    /// A WRITE/READ with a bad R_Key: NAK remote access error.
    BadRkey,
    /// The peer's receive buffers are 16 bytes: a longer SEND gets NAK invalid request.
    RecvTooShort,
    /// An atomic on peer memory it cannot reach: NAK remote operational error.
    RemoteOp,
    /// The peer QP does not exist: timeouts until the retries run out.
    Silent,
    /// A READ whose local SGE has a bad L_Key: LOC_PROT_ERR when its data comes.
    BadReadLkey,
    /// A malformed WQE (bad opcode): completed on the requester's kick.
    Malformed,
    /// The SQ ring is readable only in part: the flush reads wr_ids that fail.
    UnreadableRing,
}

const FAULTS: [Fault; 8] = [
    Fault::LateRecv,
    Fault::BadRkey,
    Fault::RecvTooShort,
    Fault::RemoteOp,
    Fault::Silent,
    Fault::BadReadLkey,
    Fault::Malformed,
    Fault::UnreadableRing,
];

fn cfg(mac: u8, ip: u8) -> EngineConfig {
    EngineConfig {
        mac: [2, 0, 0, 0, 0, mac],
        ipv4: std::net::Ipv4Addr::new(192, 0, 2, ip),
        tick_cycles: TICK,
        ..EngineConfig::default()
    }
}

/// How a QP is brought up.
struct Up {
    qpn: u32,
    dest_qpn: u32,
    mtu: PathMtu,
    sq_psn: u32,
    rq_psn: u32,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    max_rd: u8,
    sq_base: u64,
    rq_base: u64,
}

/// QP `u.qpn` of `e` from Reset to RTS toward `u.dest_qpn` at `peer`.
fn bring_up(e: &mut Engine, m: &mut HostMem, peer: &EngineConfig, u: &Up) {
    let mut c = QpCtx {
        state: QpState::Init,
        qp_type: QpType::Rc,
        pd: PD,
        sq_base: u.sq_base,
        rq_base: u.rq_base,
        sq_log_size: SQ_LOG,
        rq_log_size: 8,
        send_cq: 1,
        recv_cq: 1,
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC,
        ..QpCtx::default()
    };
    e.create_qp(u.qpn, &c).expect("qp");
    c.state = QpState::Rtr;
    c.path_mtu = u.mtu;
    c.dest_qpn = u.dest_qpn;
    c.rq_psn = u.rq_psn;
    c.min_rnr_timer = 1;
    c.max_dest_rd_atomic = 16;
    c.dest_mac = peer.mac;
    c.dest_ip = peer.ipv4.to_ipv6_mapped().octets();
    let rtr = QpAttrMask::STATE
        | QpAttrMask::AV
        | QpAttrMask::PATH_MTU
        | QpAttrMask::DEST_QPN
        | QpAttrMask::RQ_PSN
        | QpAttrMask::MAX_DEST_RD_ATOMIC
        | QpAttrMask::MIN_RNR_TIMER;
    e.modify_qp(u.qpn, &c, rtr, m).expect("rtr");
    c.state = QpState::Rts;
    c.sq_psn = u.sq_psn;
    c.timeout = u.timeout;
    c.retry_cnt = u.retry_cnt;
    c.rnr_retry = u.rnr_retry;
    c.max_rd_atomic = u.max_rd;
    let rts = QpAttrMask::STATE
        | QpAttrMask::SQ_PSN
        | QpAttrMask::TIMEOUT
        | QpAttrMask::RETRY_CNT
        | QpAttrMask::RNR_RETRY
        | QpAttrMask::MAX_QP_RD_ATOMIC;
    e.modify_qp(u.qpn, &c, rts, m).expect("rts");
}

/// A scatter/gather list of `len` bytes in A's MR 1, in 1..=4 pieces (`bad`: the first piece
/// with a wrong L_Key).
fn sges(rng: &mut ChaCha8Rng, len: u32, bad: bool) -> ([Sge; 4], u8) {
    let mut s = [Sge::default(); 4];
    let n = rng.random_range(1..=4u32).min(len.max(1));
    let mut left = len;
    for (k, x) in s.iter_mut().enumerate().take(n as usize) {
        let l = if k as u32 + 1 == n { left } else { rng.random_range(0..=left) };
        left -= l;
        let lkey = if bad && k == 0 { key(1, 6) } else { key(1, 5) };
        *x = Sge { addr: LOCAL_VA + rng.random_range(0..DATA_LEN - 0x1_0000), len: l, lkey };
    }
    if bad {
        s[0].len = s[0].len.max(1);
    }
    (s, n as u8)
}

/// A WQE: mostly READs and atomics (the completer places their results), the rest SENDs and
/// WRITEs; `fault` makes it the QP's faulty one.
fn wqe(rng: &mut ChaCha8Rng, qpn: u32, i: usize, mtu: u32, fault: Option<Fault>) -> SqWqe {
    let kind = match fault {
        Some(Fault::RemoteOp) => 6,
        Some(Fault::BadRkey) => [2, 4][rng.random_range(0..2)],
        Some(Fault::BadReadLkey) => 4,
        Some(Fault::LateRecv | Fault::RecvTooShort) => 0,
        _ => rng.random_range(0..8),
    };
    let len = match rng.random_range(0..5) {
        // (the LateRecv SEND is alone on the wire: a packet behind it would bring a sequence
        // NAK that replaces the RNR NAK the peer owes)
        _ if fault == Some(Fault::LateRecv) => rng.random_range(0..mtu),
        0 => rng.random_range(0..16),
        1 => rng.random_range(16..mtu),
        2 => mtu * rng.random_range(1..4),
        _ => rng.random_range(mtu..(4 * mtu).min(4096) + 1),
    };
    let mut flags = SqFlags::EMPTY;
    if rng.random_bool(0.6) {
        flags = flags.union(SqFlags::SIGNALED);
    }
    if rng.random_bool(0.05) {
        flags = flags.union(SqFlags::FENCE);
    }
    let remote = REMOTE_VA + 8 * rng.random_range(0..(DATA_LEN - 0x1_0000) / 8);
    let mut w = SqWqe {
        wr_id: u64::from(qpn) << 32 | i as u64,
        flags,
        remote_addr: remote,
        rkey: key(1, 3),
        total_len: len,
        ..SqWqe::default()
    };
    w.opcode = match kind {
        0 => SqOpcode::Send,
        1 => SqOpcode::SendImm,
        2 => SqOpcode::Write,
        3 => SqOpcode::WriteImm,
        4 | 5 => SqOpcode::Read,
        _ => {
            if rng.random_bool(0.5) {
                SqOpcode::AtomicCas
            } else {
                SqOpcode::AtomicFaa
            }
        }
    };
    w.imm_or_inv = rng.random();
    if matches!(w.opcode, SqOpcode::AtomicCas | SqOpcode::AtomicFaa) {
        w.total_len = 8;
        w.compare_add = rng.random();
        w.swap = rng.random();
        let mut s = [Sge::default(); 4];
        s[0] = Sge { addr: LOCAL_VA + 8 * rng.random_range(0..(DATA_LEN - 0x1_0000) / 8), len: 8, lkey: key(1, 5) };
        w.data = SqData::Sge(s);
        w.num_sge = 1;
        if fault == Some(Fault::RemoteOp) {
            w.remote_addr = DEAD_VA + 8 * rng.random_range(0..64);
            w.rkey = key(2, 3);
        }
    } else if fault == Some(Fault::RecvTooShort) {
        let mut s = [Sge::default(); 4];
        s[0] = Sge { addr: LOCAL_VA + rng.random_range(0..DATA_LEN - 0x1_0000), len: len.max(17), lkey: key(1, 5) };
        w.data = SqData::Sge(s);
        w.num_sge = 1;
        w.total_len = s[0].len;
    } else if w.opcode != SqOpcode::Read && len <= 64 && rng.random_bool(0.3) {
        let mut d = [0u8; 64];
        rng.fill(&mut d[..]);
        w.data = SqData::Inline(d);
        w.total_len = len;
    } else {
        let (s, n) = sges(rng, len, fault == Some(Fault::BadReadLkey));
        w.data = SqData::Sge(s);
        w.num_sge = n;
        if let SqData::Sge(ref s) = w.data {
            w.total_len = s.iter().take(n as usize).map(|x| x.len).sum();
        }
    }
    if fault == Some(Fault::BadRkey) {
        w.rkey = key(9, 9);
    }
    w
}

/// The QPs of a run: `nqp` of them, `nwqe` WQEs each, half of them with a fault.
fn setup(seed: u64, nqp: u32, nwqe: usize) -> ReqSetup {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (ca, cb) = (cfg(1, 1), cfg(2, 2));
    let mut a = Engine::new(ca.clone());
    let mut b = Engine::new(cb.clone());
    let mut amem = HostMem::with_iommu();
    let mut bmem = HostMem::with_iommu();
    amem.map_window(CQ_BASE, 32 << CQ_LOG);
    amem.map_window(LOCAL_IOVA, DATA_LEN);
    bmem.map_window(CQ_BASE, 32 << CQ_LOG);
    bmem.map_window(REMOTE_IOVA, DATA_LEN);
    bmem.map_window(RECV_IOVA, DATA_LEN);
    bmem.map_window(RQ_BASE, 0x100_0000);
    let d: Vec<u8> = (0..DATA_LEN).map(|_| rng.random()).collect();
    amem.write(LOCAL_IOVA, &d);
    bmem.write(REMOTE_IOVA, &d);
    for e in [&mut a, &mut b] {
        e.create_cq(1, &CqCtx { base: CQ_BASE, log_size: CQ_LOG, valid: true, ..CqCtx::default() }).expect("cq");
    }
    let all =
        AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let mr = |va, iova, access, k| MrCtx { va, len: DATA_LEN, iova, pd: PD, key: k, access, valid: true };
    a.write_mr(1, &mr(LOCAL_VA, LOCAL_IOVA, AccessFlags::LOCAL_WRITE, key(1, 5))).expect("a mr1");
    b.write_mr(1, &mr(REMOTE_VA, REMOTE_IOVA, all, key(1, 3))).expect("b mr1");
    b.write_mr(2, &mr(DEAD_VA, 0xE000_0000, all, key(2, 3))).expect("b mr2");
    b.write_mr(3, &mr(RECV_VA, RECV_IOVA, AccessFlags::LOCAL_WRITE, key(3, 1))).expect("b mr3");
    let mut qpns = Vec::new();
    let mut doorbells = Vec::new();
    let mut peer_rq = Vec::new();
    for n in 0..nqp {
        let qpn = 3 + n * 41 % 1000;
        let bqpn = 600 + n;
        let mtu = [PathMtu::Mtu256, PathMtu::Mtu256, PathMtu::Mtu1024, PathMtu::Mtu4096][rng.random_range(0..4)];
        let psn = if n % 3 == 0 { 0xFF_FFFF - rng.random_range(0..20) } else { rng.random_range(0..0xFF_FFFF) };
        let fault = (n % 2 == 1).then(|| FAULTS[(n as usize / 2 + seed as usize * 3) % FAULTS.len()]);
        let sq_base = SQ_BASE + u64::from(n) * 0x10_0000;
        let ring = 128u64 << SQ_LOG;
        // a partly readable ring: its fetches beyond the first part fail (malformed WQEs), and
        // so do the flush's wr_id reads there
        amem.map_window(sq_base, if fault == Some(Fault::UnreadableRing) { ring / 16 } else { ring });
        let rq_base = RQ_BASE + u64::from(n) * 0x10_0000;
        let retry_cnt = match fault {
            Some(Fault::Silent) => rng.random_range(0..3),
            _ => [2u8, 7, 7][rng.random_range(0..3)],
        };
        let rnr_retry = match fault {
            // none left (RNR_RETRY_EXC_ERR on the first RNR NAK), or retry forever
            Some(Fault::LateRecv) => [0u8, 7][seed as usize % 2],
            _ => 7,
        };
        let up = Up {
            qpn,
            dest_qpn: if fault == Some(Fault::Silent) { 900 + n } else { bqpn },
            mtu,
            sq_psn: psn,
            rq_psn: 0,
            // 4.096 us x 2^t at TICK = 64 cycles: 2^(t+6) cycles; 2048 (a few round trips) is
            // short when the peer's responses to all QPs queue up: spurious timeouts
            timeout: if fault == Some(Fault::Silent) { 5 } else { [5u8, 7, 8][rng.random_range(0..3)] },
            retry_cnt,
            rnr_retry,
            max_rd: [1u8, 2, 4, 8][rng.random_range(0..4)],
            sq_base,
            rq_base: 0,
        };
        bring_up(&mut a, &mut amem, &cb, &up);
        let up_b = Up {
            qpn: bqpn,
            dest_qpn: qpn,
            sq_psn: 0,
            rq_psn: psn,
            timeout: 5,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd: 16,
            sq_base: 0,
            rq_base,
            ..up
        };
        bring_up(&mut b, &mut bmem, &ca, &up_b);
        // B's receive WQEs: enough for every SEND
        for i in 0..256u32 {
            let mut s = [Sge::default(); 3];
            let len = if fault == Some(Fault::RecvTooShort) { 16 } else { 0x1_0000 };
            s[0] = Sge { addr: RECV_VA + u64::from(n) * 0x1_0000, len, lkey: key(3, 1) };
            let w = RqWqe { wr_id: u64::from(i), num_sge: 1, sge: s };
            bmem.write(rq_base + 64 * u64::from(i), &w.encode());
        }
        if fault == Some(Fault::LateRecv) {
            // the first WQE is a SEND, the receive WQEs come after many RNR back-offs (or
            // never in time: the QP runs out of RNR retries)
            peer_rq.push((rng.random_range(20_000..30_000), bqpn, 255));
        } else {
            b.rq_doorbell(bqpn, 255, &mut bmem);
        }
        let at = if fault == Some(Fault::LateRecv) { 0 } else { rng.random_range(nwqe / 4..nwqe.max(2)) };
        let mut t = rng.random_range(0..200u64);
        for i in 0..nwqe {
            let f = if i == at { fault } else { None };
            let w = wqe(&mut rng, qpn, i, mtu.bytes(), f);
            let mut img = w.encode().to_vec();
            if f == Some(Fault::Malformed) {
                img[8] = 8; // no such opcode
            }
            amem.write(sq_base + 128 * i as u64, &img);
            if rng.random_bool(0.3) || i + 1 == nwqe || f == Some(Fault::LateRecv) {
                doorbells.push((t, qpn, i as u32 + 1));
                t += if f == Some(Fault::LateRecv) { 4000 } else { rng.random_range(0..2500) };
            }
        }
        qpns.push(qpn);
    }
    doorbells.sort_by_key(|d| d.0);
    ReqSetup { a, amem, b, bmem, qpns, doorbells, inline_dbs: Vec::new(), peer_rq, again: None }
}

fn run(seed: u64, nqp: u32, nwqe: usize, t: ReqTraffic) -> CompReport {
    let s = setup(seed, nqp, nwqe);
    let r = comp_lockstep(s, &t).expect("runs");
    assert!(
        r.divergences.is_empty(),
        "seed {seed}: {} divergences:\n{}",
        r.divergences.len(),
        r.divergences.join("\n")
    );
    eprintln!(
        "seed {seed}: {} cycles, ops {:?}, {} packets, {} DMA writes, {} QP errors, counters {:?}, {} wakes ({} with a rewind), {} rewinds applied, {} bodies given, {} left out, {} given wrong and cleared, {} WQEs read again, completions {:?}, opcodes {:?}, syndromes {:?}",
        r.cycles, r.ops, r.packets, r.writes, r.errors, r.counters, r.wakes, r.rewind_wakes, r.rewinds, r.bodies, r.bodies_left_out, r.bodies_cleared, r.wqe_reads, r.completions, r.opcodes, r.syndromes
    );
    r
}

#[test]
fn completer_matches_the_model_on_lossy_links() {
    let mut tot = CompReport::default();
    for seed in 0..8u64 {
        let i = seed as usize % 4;
        let t = ReqTraffic {
            ready_p: [1.0, 0.6, 0.85, 0.4][i],
            dma_latency: (5, 80),
            pace_p: 1.0,
            loss: [0.0, 0.03, 0.02, 0.05][i],
            dup: 0.01,
            link_delay: 300,
            seed,
            max_cycles: 3_000_000,
        };
        let r = run(seed, 16, 60, t);
        for k in 0..5 {
            tot.ops[k] += r.ops[k];
        }
        for k in 0..4 {
            tot.counters[k] += r.counters[k];
        }
        tot.cycles += r.cycles;
        tot.packets += r.packets;
        tot.rewinds += r.rewinds;
        tot.writes += r.writes;
        tot.errors += r.errors;
        tot.wakes += r.wakes;
        tot.rewind_wakes += r.rewind_wakes;
        tot.bodies += r.bodies;
        tot.wqe_reads += r.wqe_reads;
        tot.bodies_left_out += r.bodies_left_out;
        tot.bodies_cleared += r.bodies_cleared;
        for (src, dst) in
            [(&r.completions, &mut tot.completions), (&r.opcodes, &mut tot.opcodes), (&r.syndromes, &mut tot.syndromes)]
        {
            for (&k, &v) in src {
                *dst.entry(k).or_default() += v;
            }
        }
    }
    eprintln!("total: {tot:?}");
    // every response opcode: READ response FIRST/MIDDLE/LAST/ONLY, Acknowledge, ATOMIC Acknowledge
    for op in 0x0Du8..=0x12 {
        assert!(tot.opcodes.contains_key(&op), "response opcode {op:#x} never taken: {:?}", tot.opcodes);
    }
    // ACKs, RNR NAKs, NAKs: PSN sequence error, invalid request, remote access, remote operational
    let has = |lo: u8, hi: u8| tot.syndromes.range(lo..=hi).next().is_some();
    assert!(has(0x00, 0x1F) && has(0x20, 0x3F), "{:?}", tot.syndromes);
    for syn in [0x60u8, 0x61, 0x62, 0x63] {
        assert!(tot.syndromes.contains_key(&syn), "syndrome {syn:#x} never taken: {:?}", tot.syndromes);
    }
    // completions: success; LOC_QP_OP_ERR (malformed), LOC_PROT_ERR (READ data), WR_FLUSH_ERR,
    // REM_INV_REQ, REM_ACCESS, REM_OP, RETRY_EXC, RNR_RETRY_EXC
    for st in [0x00u8, 0x02, 0x04, 0x05, 0x09, 0x0A, 0x0B, 0x0C, 0x0D] {
        assert!(tot.completions.contains_key(&st), "status {st:#x} never completed: {:?}", tot.completions);
    }
    // every kind of operation, timeouts, failed wr_id reads in a flush, rewinds by wake
    assert!(tot.ops.iter().all(|&n| n > 0), "{:?}", tot.ops);
    assert!(tot.counters[2] > 0 && tot.counters[3] > 0, "{:?}", tot.counters);
    assert!(tot.rewind_wakes > 0 && tot.writes > 0 && tot.errors > 0, "{tot:?}");
    // READ/atomic SGEs both from the bodies roce_req gives and read again from the ring, and
    // wrong bodies forgotten by a QP's clear (s_body_clr) before their data came
    assert!(tot.bodies > 0 && tot.wqe_reads > 0 && tot.bodies_cleared > 0, "{tot:?}");
}
