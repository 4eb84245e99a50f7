//! Lockstep: `roce_qp_ctx` (Verilated) against its model (the engine's QP table functions):
//! random command programs walk QPs through every state transition, allowed and refused,
//! with masks that have the right, missing, extra and undefined bits; QP_WRITE with valid
//! and malformed contexts, reserved and out-of-range indices, valid and invalid CQs (the CQ
//! table changes between commands), udp_sport 0 and path MTUs above the build's limit;
//! QP_READ with the engine state the emulated owners hold (PSNs from the context ops, ring
//! indices moved between commands); other opcodes. Transport errors race the commands and
//! both attribute ports read in most cycles. Every command outcome, context op, QP error and
//! attribute read is compared. Also the stated latencies.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::qp_ctx::RoceQpCtx;
use roce_model::contract::records::CtxOpCode;
use roce_model::contract::{
    qp_transition, AccessFlags, CmdErrorCode, CmdOpcode, Encap, PathMtu, QpAttrMask, QpCtx, QpState, QpType, VlanTag,
    QP_TRANSITIONS,
};
use roce_sim::cosim::qp_ctx::{qp_ctx_lockstep, Pace, QpCtxOp, TransportError, LOG_N, MAX_MTU};

const QPNS: &[u32] = &[0, 1, 2, 3, 7, 100, 511, 1022, 1023, 1024, 5000, 0xFF_FFFF];

fn random_ctx(rng: &mut ChaCha8Rng, state: QpState) -> QpCtx {
    let encap = [Encap::RoceV2Ipv4, Encap::RoceV2Ipv6, Encap::RoceV1][rng.random_range(0..3)];
    let mut ip = [0u8; 16];
    rng.fill(&mut ip[..]);
    QpCtx {
        state,
        qp_type: if rng.random_bool(0.95) { QpType::Rc } else { [QpType::Uc, QpType::Ud][rng.random_range(0..2)] },
        path_mtu: PathMtu::ALL[rng.random_range(0..PathMtu::ALL.len())],
        encap,
        pd: rng.random(),
        access: AccessFlags::from_bits_truncate(rng.random_range(0..16)),
        dest_qpn: rng.random_range(0..1 << 24),
        sq_psn: rng.random_range(0..1 << 24),
        rq_psn: rng.random_range(0..1 << 24),
        sq_base: rng.random::<u64>() & !0xFFF,
        rq_base: rng.random::<u64>() & !0xFFF,
        sq_log_size: rng.random_range(0..16),
        rq_log_size: rng.random_range(0..16),
        send_cq: if rng.random_bool(0.9) { rng.random_range(0..12) } else { rng.random_range(0..1 << 14) },
        recv_cq: if rng.random_bool(0.9) { rng.random_range(0..12) } else { rng.random_range(0..1 << 14) },
        timeout: rng.random_range(0..32),
        retry_cnt: rng.random_range(0..8),
        rnr_retry: rng.random_range(0..8),
        min_rnr_timer: rng.random_range(0..32),
        max_rd_atomic: rng.random(),
        max_dest_rd_atomic: rng.random(),
        dest_mac: rng.random(),
        vlan: VlanTag { vid: rng.random_range(0..4096), pcp: rng.random_range(0..8), valid: rng.random_bool(0.5) },
        dscp: rng.random_range(0..64),
        hop_limit: rng.random(),
        udp_sport: if rng.random_bool(0.5) { 0 } else { rng.random() },
        dest_ip: ip,
        // engine state: ignored by QP_WRITE / QP_MODIFY
        sq_pi: rng.random(),
        sq_ci: rng.random(),
        rq_pi: rng.random(),
        rq_ci: rng.random(),
        flow_label: rng.random_range(0..1 << 20),
        // a window QP_WRITE takes, now and then one it refuses (shift above 4, a base not a
        // multiple of its blocks or beyond the pool)
        sq_win_shift: if rng.random_bool(0.9) { rng.random_range(0..=4) } else { rng.random_range(0..8) },
        sq_win_base: match rng.random_range(0..10) {
            0 => rng.random(),
            1 => rng.random_range(0..1 << LOG_N),
            _ => rng.random_range(0..1u16 << (LOG_N - 4)) << 4,
        },
    }
}

/// A malformed image now and then (what qp_ctx_bad refuses), else the context.
fn image(rng: &mut ChaCha8Rng, c: &QpCtx) -> Vec<u8> {
    let mut d = c.encode().to_vec();
    if rng.random_bool(0.08) {
        match rng.random_range(0..8) {
            0 => d[[93, 96, 127][rng.random_range(0..3)]] = 1 << rng.random_range(0..8), // reserved byte
            1 => d[0] = rng.random_range(7..=255),                                       // state code
            2 => d[2] = [0, 6, 7, 200][rng.random_range(0..4)],                          // path MTU code
            3 => d[3] = rng.random_range(3..=255),                                       // encap code
            4 => d[8] |= 0x10 << rng.random_range(0..4),                                 // access bit
            5 => d[15] = 1,                                                              // dest_qpn bit 24
            6 => d[46] |= 0x20,                                                          // timeout bit 5
            _ => d[1] = 0,                                                               // type code
        }
    }
    d
}

fn mask_for(rng: &mut ChaCha8Rng, from: QpState, to: QpState) -> u32 {
    let all = QpAttrMask::from_bits_truncate(u32::MAX);
    let mut m = match qp_transition(from, to) {
        Some(t) => {
            let opt: u32 = t.optional.bits() & rng.random::<u32>();
            QpAttrMask::STATE.bits() | t.required.bits() | opt
        }
        None => QpAttrMask::STATE.bits() | (all.bits() & rng.random::<u32>() & rng.random::<u32>()),
    };
    let defined: Vec<u32> = (1..32).filter(|b| all.bits() >> b & 1 != 0).collect();
    let one = 1u32 << defined[rng.random_range(0..defined.len())];
    match rng.random_range(0..30) {
        0 | 1 => m &= !one,                                                          // missing (if required)
        2 | 3 => m |= one,                                                           // extra (if not allowed)
        4 => m |= 1 << [1, 2, 4, 5, 6, 14, 18, 19, 25, 31][rng.random_range(0..10)], // undefined
        5 => m &= !QpAttrMask::STATE.bits(),
        _ => {}
    }
    m
}

/// A program and its errors; `tried` counts (from, to) QP_MODIFY pairs by predicted state.
fn program(rng: &mut ChaCha8Rng, n: usize, tried: &mut [[u32; 7]; 7]) -> (Vec<QpCtxOp>, Vec<TransportError>) {
    let mut prog = Vec::new();
    // the predicted table (program order, without the racing errors)
    let mut pred = RoceQpCtx::new(LOG_N, MAX_MTU);
    let mut cqs = [false; 256];
    for cq in 0..10u16 {
        prog.push(QpCtxOp::Cq { cq, valid: true });
        cqs[usize::from(cq)] = true;
    }
    let pick = |rng: &mut ChaCha8Rng| {
        if rng.random_bool(0.85) {
            QPNS[rng.random_range(2..8)]
        } else {
            QPNS[rng.random_range(0..QPNS.len())]
        }
    };
    for _ in 0..n {
        let qpn = pick(rng);
        let cur = pred.qp(qpn).map_or(QpState::Reset, |q| q.state);
        let cmd = match rng.random_range(0..100) {
            0..=17 => {
                let st = if rng.random_bool(0.85) {
                    [QpState::Reset, QpState::Init][rng.random_range(0..2)]
                } else {
                    QpState::ALL[rng.random_range(0..7)]
                };
                let c = random_ctx(rng, st);
                // often a QP that is in Reset, so that most writes take
                let reset: Vec<u32> = QPNS[2..8]
                    .iter()
                    .copied()
                    .filter(|&q| pred.qp(q).is_none_or(|x| x.state == QpState::Reset))
                    .collect();
                let index = if !reset.is_empty() && rng.random_bool(0.5) {
                    reset[rng.random_range(0..reset.len())]
                } else {
                    qpn
                };
                QpCtxOp::Command { opcode: CmdOpcode::QpWrite.code(), index, arg: rng.random(), data: image(rng, &c) }
            }
            18..=62 => {
                // mostly a transition the table has from the predicted state
                // (the rows for this state, the "any state" ones less often)
                let rows: Vec<_> = QP_TRANSITIONS.iter().filter(|t| t.from == Some(cur)).collect();
                let r = rng.random_range(0..100);
                let to = if !rows.is_empty() && r < 65 {
                    rows[rng.random_range(0..rows.len())].to
                } else if r < 80 {
                    [QpState::Reset, QpState::Err][rng.random_range(0..2)]
                } else {
                    QpState::ALL[rng.random_range(0..7)]
                };
                tried[cur.code() as usize][to.code() as usize] += 1;
                let mut c = random_ctx(rng, to);
                if rng.random_bool(0.7) {
                    // an MTU the build accepts
                    c.path_mtu = PathMtu::ALL[rng.random_range(0..4)];
                }
                QpCtxOp::Command {
                    opcode: CmdOpcode::QpModify.code(),
                    index: qpn,
                    arg: mask_for(rng, cur, to),
                    data: image(rng, &c),
                }
            }
            63..=79 => {
                QpCtxOp::Command { opcode: CmdOpcode::QpRead.code(), index: qpn, arg: rng.random(), data: vec![0; 128] }
            }
            80..=83 => QpCtxOp::Command {
                opcode: [0, 3, 4, 5, 6, 7, 9, 200][rng.random_range(0..8)],
                index: qpn,
                arg: 0,
                data: vec![0; 128],
            },
            84..=91 => QpCtxOp::Rings { qpn, idx: rng.random() },
            _ => {
                let cq = rng.random_range(0..12u16);
                let valid = rng.random_bool(0.6);
                cqs[usize::from(cq)] = valid;
                QpCtxOp::Cq { cq, valid }
            }
        };
        if let QpCtxOp::Command { opcode, index, arg, data } = &cmd {
            pred.command(*opcode, *index, *arg, data, |cq| cqs.get(usize::from(cq)).copied().unwrap_or(false));
        }
        prog.push(cmd);
    }
    let errs = (0..n / 8).map(|_| TransportError { qpn: pick(rng), cause: rng.random_range(1..22) }).collect();
    (prog, errs)
}

#[test]
fn qp_ctx_lockstep_random() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x9C7);
    let mut tried = [[0u32; 7]; 7];
    let (prog, errs) = program(&mut rng, 6000, &mut tried);
    eprintln!("QP_MODIFY tried (from x to, by predicted state): {tried:?}");
    for (from, row) in tried.iter().enumerate() {
        // (no transition enters Sqe: an RC QP never is in it)
        if from == usize::from(QpState::Sqe.code()) {
            continue;
        }
        for (to, n) in row.iter().enumerate() {
            assert!(*n > 0, "QP_MODIFY {from} -> {to} never tried");
        }
    }
    let paces = [
        // (error rates spread the errors over the whole program)
        Pace { cmd_rate: 0.6, err_rate: 0.025, read_rate: 0.8, p_done: 0.6 },
        Pace { cmd_rate: 1.0, err_rate: 0.03, read_rate: 1.0, p_done: 1.0 },
        Pace { cmd_rate: 0.3, err_rate: 0.012, read_rate: 0.5, p_done: 0.3 },
    ];
    let (mut cmds, mut reads, mut ops) = (0, 0, 0);
    for (seed, pace) in paces.into_iter().enumerate() {
        let rep = qp_ctx_lockstep(&prog, &errs, pace, seed as u64, None).expect("run");
        assert!(rep.divergences.is_empty(), "seed {seed}: {:?}", rep.divergences);
        let n_cmds = prog.iter().filter(|o| matches!(o, QpCtxOp::Command { .. })).count();
        assert_eq!(rep.outcomes.len(), n_cmds);
        assert_eq!(rep.errors_offered, errs.len());
        // coverage
        for e in [
            CmdErrorCode::Ok,
            CmdErrorCode::BadOpcode,
            CmdErrorCode::BadIndex,
            CmdErrorCode::BadAttr,
            CmdErrorCode::BadState,
        ] {
            let k = rep.outcomes.iter().filter(|o| o.error == e.code()).count();
            assert!(k > 20, "seed {seed}: {k} outcomes {e:?}");
        }
        for code in CtxOpCode::ALL {
            let k = rep.ops.iter().filter(|o| o.code == code.code()).count();
            assert!(k > 10, "seed {seed}: {k} ops {code:?}");
        }
        let states: std::collections::HashSet<u8> =
            rep.outcomes.iter().filter_map(|o| o.rdata.as_ref().map(|d| d[0])).collect();
        assert!(states.len() >= 6, "seed {seed}: QP_READ saw states {states:?}");
        assert!(
            rep.outcomes.iter().any(|o| o.rdata.as_ref().is_some_and(|d| d[80..88] != [0; 8])),
            "ring indices read back"
        );
        assert!(rep.errors.len() > 20, "seed {seed}: {} QP errors", rep.errors.len());
        assert!(rep.reads.iter().all(|r| r.iter().filter(|x| x.state >= 2).count() > 100), "reads of live QPs");
        eprintln!(
            "seed {seed}: {} commands, {} ops, {} QP errors of {} offered, {} + {} attribute reads, {} cycles",
            rep.outcomes.len(),
            rep.ops.len(),
            rep.errors.len(),
            rep.errors_offered,
            rep.reads[0].len(),
            rep.reads[1].len(),
            rep.cycles
        );
        cmds += rep.outcomes.len();
        ops += rep.ops.len();
        reads += rep.reads[0].len() + rep.reads[1].len();
    }
    eprintln!("in all: {cmds} command outcomes, {ops} context ops, {reads} attribute reads compared");
}

#[test]
fn qp_ctx_latency() {
    // with the owners answering at once: QP_WRITE (3 ops) 8 cycles, INIT->RTR (1 op) 6,
    // RTR->RTS (2 ops) 7, QP_READ 5, a refused command 4, QP_READ of a QP never written 4
    let c = QpCtx {
        state: QpState::Init,
        qp_type: QpType::Rc,
        sq_psn: 3,
        rq_psn: 4,
        send_cq: 1,
        recv_cq: 1,
        ..QpCtx::default()
    };
    let cmd = |opcode: CmdOpcode, index: u32, arg: QpAttrMask, c: &QpCtx| QpCtxOp::Command {
        opcode: opcode.code(),
        index,
        arg: arg.bits(),
        data: c.encode().to_vec(),
    };
    let rtr = QpAttrMask::STATE
        | QpAttrMask::AV
        | QpAttrMask::PATH_MTU
        | QpAttrMask::DEST_QPN
        | QpAttrMask::RQ_PSN
        | QpAttrMask::MAX_DEST_RD_ATOMIC
        | QpAttrMask::MIN_RNR_TIMER;
    let rts = QpAttrMask::STATE
        | QpAttrMask::SQ_PSN
        | QpAttrMask::TIMEOUT
        | QpAttrMask::RETRY_CNT
        | QpAttrMask::RNR_RETRY
        | QpAttrMask::MAX_QP_RD_ATOMIC;
    let prog = vec![
        QpCtxOp::Cq { cq: 1, valid: true },
        cmd(CmdOpcode::QpWrite, 9, QpAttrMask::EMPTY, &c),
        cmd(CmdOpcode::QpModify, 9, rtr, &QpCtx { state: QpState::Rtr, ..c }),
        cmd(CmdOpcode::QpModify, 9, rts, &QpCtx { state: QpState::Rts, ..c }),
        cmd(CmdOpcode::QpRead, 9, QpAttrMask::EMPTY, &c),
        cmd(CmdOpcode::QpModify, 9, rts, &QpCtx { state: QpState::Init, ..c }),
        cmd(CmdOpcode::QpRead, 10, QpAttrMask::EMPTY, &c),
    ];
    let pace = Pace { cmd_rate: 1.0, err_rate: 0.0, read_rate: 1.0, p_done: 1.0 };
    let rep = qp_ctx_lockstep(&prog, &[], pace, 1, None).expect("run");
    assert!(rep.divergences.is_empty(), "{:?}", rep.divergences);
    let errs: Vec<u8> = rep.outcomes.iter().map(|o| o.error).collect();
    assert_eq!(errs, [0, 0, 0, 0, CmdErrorCode::BadState.code(), 0]);
    assert_eq!(rep.latency, [8, 6, 7, 5, 4, 4]);
    // a transport error offered after the QP is in Rts (this seed offers it late enough):
    // ENTER_ERR, then qp_err_valid 6 cycles after its acceptance
    let rep =
        qp_ctx_lockstep(&prog[..4], &[TransportError { qpn: 9, cause: 12 }], Pace { err_rate: 0.02, ..pace }, 3, None);
    let rep = rep.expect("run");
    assert!(rep.divergences.is_empty(), "{:?}", rep.divergences);
    assert_eq!(rep.errors.len(), 1, "the error came before the QP was live: pick another seed");
    assert_eq!(rep.err_latency, [6]);
    assert_eq!(rep.ops.last().map(|o| o.code), Some(CtxOpCode::EnterErr.code()));
}
