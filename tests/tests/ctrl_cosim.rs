//! Lockstep of the control plane: the same random register programs run on the Verilated
//! `roce_ctrl` (registers + command router + QP, CQ and MR tables) over AXI4-Lite and on the
//! engine model's MMIO interface (`Engine::mmio_write` / `mmio_read`, what the driver's
//! simulator backend uses). Every register read must return the same value. Programs stage
//! contexts in CMD_DATA and run QP/CQ/MR commands (valid, malformed, out of range; QP_MODIFY
//! along the state machine with right and wrong masks in CMD_ARG), NOP and unknown opcodes,
//! read contexts back (QP_READ with the PSNs the emulated engine-state owners hold), ring CQ
//! doorbells with arming, write RW registers and IRQ_STATUS (W1C), and soft-reset. The HDL
//! runs each command to completion (polling CMD_STATUS.BUSY, as a driver does); the model
//! completes it at once.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::contract::regs;
use roce_model::contract::{
    qp_transition, AccessFlags, CmdOpcode, CqCtx, CqFlags, Encap, MrCtx, PathMtu, QpAttrMask, QpCtx, QpState, QpType,
    VlanTag, QP_TRANSITIONS,
};
use roce_model::engine::{Engine, EngineConfig, HostMem};
use roce_sim::cosim::ctrl::{CtrlDut, LOG_MAX_QP};

struct Both {
    hdl: CtrlDut,
    eng: Engine,
    mem: HostMem,
    now: u64,
    reads: u64,
}

impl Both {
    fn write(&mut self, off: u32, v: u32) {
        let r = self.hdl.write(off, v).expect("hdl write");
        assert_eq!(r, 0, "BRESP of {off:#x}");
        self.eng.mmio_write(self.now, off, v, &mut self.mem);
        self.now += 1;
        if off == regs::CTRL && regs::ctrl::SOFT_RESET.is_set(v) {
            self.wait_ready();
        }
        if off == regs::CMD {
            // the HDL runs the command; BUSY falls within a few cycles
            let mut n = 0;
            while self.hdl.read(regs::CMD_STATUS).expect("poll") & regs::cmd_status::BUSY.mask() != 0 {
                n += 1;
                assert!(n < 100, "command {v:#x} never completed");
            }
        }
    }

    fn wait_ready(&mut self) {
        let mut n = 0;
        while self.hdl.read(regs::STATUS).expect("status") & regs::status::READY.mask() == 0 {
            self.hdl.idle(64);
            n += 1;
            assert!(n < 100, "STATUS.READY never rose");
        }
    }

    fn check(&mut self, off: u32, what: &str) {
        let h = self.hdl.read(off).expect("hdl read");
        let m = self.eng.mmio_read(off);
        assert_eq!(h, m, "{what}: read {off:#06x}: hdl {h:#010x} model {m:#010x}");
        self.reads += 1;
    }

    fn stage(&mut self, data: &[u8]) {
        for (i, c) in data.chunks(4).enumerate() {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            self.write(regs::CMD_DATA + 4 * i as u32, u32::from_le_bytes(w));
        }
    }

    fn command(&mut self, op: u8, index: u32, what: &str) {
        let v = regs::cmd::OPCODE.val(u32::from(op)).unwrap() | regs::cmd::INDEX.val(index & 0xFF_FFFF).unwrap();
        self.write(regs::CMD, v);
        self.check(regs::CMD_STATUS, what);
        self.check(regs::IRQ_STATUS, what);
        for i in 0..32 {
            self.check(regs::CMD_DATA + 4 * i, what);
        }
    }
}

fn random_qp_ctx(rng: &mut ChaCha8Rng, state: QpState) -> QpCtx {
    let mut ip = [0u8; 16];
    rng.fill(&mut ip[..]);
    QpCtx {
        state,
        qp_type: if rng.random_bool(0.95) { QpType::Rc } else { QpType::Ud },
        path_mtu: PathMtu::ALL[rng.random_range(0..PathMtu::ALL.len())],
        encap: [Encap::RoceV2Ipv4, Encap::RoceV2Ipv6, Encap::RoceV1][rng.random_range(0..3)],
        pd: rng.random(),
        access: AccessFlags::from_bits_truncate(rng.random_range(0..16)),
        dest_qpn: rng.random_range(0..1 << 24),
        sq_psn: rng.random_range(0..1 << 24),
        rq_psn: rng.random_range(0..1 << 24),
        sq_base: rng.random::<u64>() & !0xFFF,
        rq_base: rng.random::<u64>() & !0xFFF,
        sq_log_size: rng.random_range(0..16),
        rq_log_size: rng.random_range(0..16),
        send_cq: rng.random_range(0..20),
        recv_cq: rng.random_range(0..20),
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
        flow_label: rng.random_range(0..1 << 20),
        ..QpCtx::default()
    }
}

/// A QP command: QP_WRITE, QP_MODIFY (mostly along the state machine from the QP's state in
/// the model, with the transition's mask, sometimes a wrong one) or QP_READ.
fn qp_command(b: &mut Both, rng: &mut ChaCha8Rng, step: usize) {
    let mut qpn = if rng.random_bool(0.1) {
        [0, 1, 1 << LOG_MAX_QP, 0xFF_FFFF][rng.random_range(0..4)]
    } else {
        rng.random_range(2..8)
    };
    let mut cur = b.eng.qp(qpn).map_or(QpState::Reset, |q| q.state);
    let op = match rng.random_range(0..10) {
        0..=2 => {
            // mostly a QP in Reset, so that most writes take
            let reset: Vec<u32> = (2..8).filter(|&q| b.eng.qp(q).is_none_or(|x| x.state == QpState::Reset)).collect();
            if !reset.is_empty() && rng.random_bool(0.7) {
                qpn = reset[rng.random_range(0..reset.len())];
                cur = QpState::Reset;
            }
            let st = if rng.random_bool(0.9) {
                [QpState::Reset, QpState::Init][rng.random_range(0..2)]
            } else {
                QpState::Rts
            };
            let mut c = random_qp_ctx(rng, st);
            // mostly CQs that exist
            let valid: Vec<u16> = (0..20).filter(|&q| b.eng.cq(u32::from(q)).is_some()).collect();
            if !valid.is_empty() && rng.random_bool(0.85) {
                c.send_cq = valid[rng.random_range(0..valid.len())];
                c.recv_cq = valid[rng.random_range(0..valid.len())];
            }
            let mut d = c.encode().to_vec();
            if rng.random_bool(0.1) {
                d[rng.random_range(92..128)] = 1;
            }
            b.stage(&d);
            CmdOpcode::QpWrite
        }
        3..=7 => {
            let rows: Vec<_> = QP_TRANSITIONS.iter().filter(|t| t.from == Some(cur)).collect();
            let to = match rng.random_range(0..10) {
                0..=5 if !rows.is_empty() => rows[rng.random_range(0..rows.len())].to,
                0..=7 => [QpState::Reset, QpState::Err][rng.random_range(0..2)],
                _ => QpState::ALL[rng.random_range(0..QpState::ALL.len())],
            };
            let mut mask = qp_transition(cur, to).map_or(QpAttrMask::STATE.bits(), |t| {
                QpAttrMask::STATE.bits() | t.required.bits() | (t.optional.bits() & rng.random::<u32>())
            });
            if rng.random_bool(0.15) {
                mask ^= 1 << rng.random_range(0..21);
            }
            b.stage(&random_qp_ctx(rng, to).encode());
            b.write(regs::CMD_ARG, mask);
            CmdOpcode::QpModify
        }
        _ => CmdOpcode::QpRead,
    };
    b.command(op.code(), qpn, &format!("step {step} {op:?} {qpn:#x} from {cur:?}"));
}

#[test]
fn ctrl_matches_engine_mmio() {
    let cfg = EngineConfig { max_qps: 1 << LOG_MAX_QP, max_cqs: 256, max_mrs: 1024, ..EngineConfig::default() };
    let mut b =
        Both { hdl: CtrlDut::new(3, None).expect("dut"), eng: Engine::new(cfg), mem: HostMem::new(), now: 0, reads: 0 };
    b.wait_ready();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for off in [regs::ID, regs::VERSION, regs::CAPS, regs::NEXT, regs::STATUS, regs::CTRL, regs::IRQ_MASK] {
        b.check(off, "identity");
    }
    let rw: Vec<u32> = regs::ALL
        .iter()
        .filter(|r| r.access == roce_model::contract::Access::Rw && r.offset < 0x100)
        .flat_map(|r| (0..r.count).map(move |k| r.offset + 4 * k))
        .collect();
    let (mut cmds, mut qp_cmds) = (0, 0);
    for step in 0..1200 {
        match rng.random_range(0..130) {
            100..=129 => {
                qp_command(&mut b, &mut rng, step);
                qp_cmds += 1;
            }
            0..=29 => {
                // MR command
                let index =
                    if rng.random_bool(0.1) { rng.random_range(1024..1 << 24) } else { rng.random_range(0..64) };
                let op = [CmdOpcode::MrWrite, CmdOpcode::MrRead, CmdOpcode::MrInvalidate][rng.random_range(0..3)];
                if op == CmdOpcode::MrWrite {
                    let c = MrCtx {
                        va: rng.random(),
                        len: rng.random::<u64>() >> 20,
                        iova: rng.random(),
                        pd: rng.random_range(0..8),
                        key: if rng.random_bool(0.9) { (index << 8) | rng.random_range(0..256) } else { rng.random() },
                        access: AccessFlags::from_bits_truncate(rng.random_range(0..16)),
                        valid: rng.random_bool(0.85),
                    };
                    let mut d = c.encode().to_vec();
                    if rng.random_bool(0.1) {
                        d[rng.random_range(37..64)] = 1;
                    }
                    b.stage(&d);
                }
                b.command(op.code(), index, &format!("step {step} {op:?} {index:#x}"));
                cmds += 1;
            }
            30..=54 => {
                // CQ command
                let index = if rng.random_bool(0.1) { rng.random_range(256..1 << 24) } else { rng.random_range(0..16) };
                let op = if rng.random_bool(0.5) { CmdOpcode::CqWrite } else { CmdOpcode::CqRead };
                if op == CmdOpcode::CqWrite {
                    let c = CqCtx {
                        base: rng.random::<u64>() & !0xFFF,
                        log_size: rng.random_range(0..16),
                        flags: if rng.random_bool(0.5) { CqFlags::IRQ_ENABLE } else { CqFlags::EMPTY },
                        valid: rng.random_bool(0.9),
                        ..CqCtx::default()
                    };
                    let mut d = c.encode().to_vec();
                    if rng.random_bool(0.1) {
                        d[9] |= 0x80;
                    }
                    b.stage(&d);
                }
                b.command(op.code(), index, &format!("step {step} {op:?} {index:#x}"));
                cmds += 1;
            }
            55..=62 => {
                // NOP, unknown opcodes
                let op = if rng.random_bool(0.5) { 0 } else { rng.random_range(9..=255) };
                b.command(op, rng.random_range(0..100), &format!("step {step} opcode {op}"));
                cmds += 1;
            }
            63..=74 => {
                // CQ doorbell: consume / arm, then read the CQ back
                let cq = rng.random_range(0..16);
                let v = regs::cq_db::CI.val(rng.random_range(0..4)).unwrap()
                    | regs::cq_db::CQ.val(cq).unwrap()
                    | u32::from(rng.random_bool(0.5)) << 31
                    | u32::from(rng.random_bool(0.3)) << 30;
                b.write(regs::CQ_DB, v);
                b.command(CmdOpcode::CqRead.code(), cq, &format!("step {step} CQ_DB {v:#x} then CQ_READ"));
            }
            75..=86 => {
                let off = rw[rng.random_range(0..rw.len())];
                let mut v: u32 = rng.random();
                if off == regs::CTRL {
                    v &= !regs::ctrl::SOFT_RESET.mask();
                }
                b.write(off, v);
                b.check(off, &format!("step {step} RW"));
            }
            87..=92 => {
                let v = rng.random();
                b.write(regs::IRQ_STATUS, v);
                b.check(regs::IRQ_STATUS, &format!("step {step} W1C"));
            }
            93..=95 => {
                b.write(regs::CTRL, regs::ctrl::SOFT_RESET.mask());
                b.check(regs::CTRL, &format!("step {step} soft reset"));
                b.check(regs::IRQ_STATUS, &format!("step {step} soft reset"));
            }
            _ => {
                let off = rng.random_range(0..0x500u32) & !3;
                b.check(off, &format!("step {step} any"));
            }
        }
    }
    // every register at the end, counters included
    for off in (0..0x500u32).step_by(4) {
        if off == regs::CMD_STATUS || off == regs::STATUS {
            continue;
        }
        b.check(off, "final sweep");
    }
    assert!(cmds > 300, "{cmds} commands");
    assert!(qp_cmds > 150, "{qp_cmds} QP commands");
    assert!(b.hdl.ctx_ops > 50, "{} context ops", b.hdl.ctx_ops);
    eprintln!(
        "{} reads compared, {cmds} other commands, {qp_cmds} QP commands ({} context ops), {} HDL cycles",
        b.reads,
        b.hdl.ctx_ops,
        b.hdl.cycles()
    );
}
