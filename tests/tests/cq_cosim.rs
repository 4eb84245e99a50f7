//! Lockstep: `roce_cq` (Verilated) against its model (the engine's CQ table functions):
//! CQ_WRITE / CQ_READ (well-formed, malformed, out of range, other opcodes), completions
//! to valid, invalid and out-of-range CQs that fill, wrap and overrun small rings, and CQ
//! doorbells that consume and arm (plain and solicited-only) with CQEs solicited, plain
//! and in error; random offer gaps on all three inputs and DMA backpressure. Also the
//! stated throughput (one operation per 2 cycles) and the ring protocol end to end: the
//! phase bit a host would read.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::cq::CqOut;
use roce_model::contract::regs::{cq_db, CQ_ERR_INVALID, CQ_ERR_OVERRUN};
use roce_model::contract::{CmdOpcode, CqCtx, CqFlags};
use roce_sim::cosim::cq::{cq_lockstep, CqOp};

fn write_cmd(index: u32, ctx: &CqCtx) -> CqOp {
    CqOp::Command { opcode: CmdOpcode::CqWrite.code(), index, data: ctx.encode() }
}

fn db(cq: u32, ci: u32, arm: bool, sol: bool) -> u32 {
    cq_db::CI.val(ci & 0xFFFF).unwrap() | cq_db::CQ.val(cq).unwrap() | u32::from(sol) << 30 | u32::from(arm) << 31
}

fn random_ops(rng: &mut ChaCha8Rng, n: usize) -> Vec<CqOp> {
    let mut ops = Vec::new();
    // a few CQs with small rings so they wrap and overrun
    let cqs: Vec<u32> = vec![0, 1, 5, 77, 255];
    for &c in &cqs {
        let ctx = CqCtx {
            base: rng.random::<u64>() & !0xFFF,
            log_size: rng.random_range(0..5),
            flags: if rng.random_bool(0.7) { CqFlags::IRQ_ENABLE } else { CqFlags::EMPTY },
            valid: c != 77,
            ..CqCtx::default()
        };
        ops.push(write_cmd(c, &ctx));
    }
    // completions sent per CQ (what a host that keeps up would have consumed)
    let mut sent = [0u32; 256];
    for _ in 0..n {
        let c = if rng.random_bool(0.9) { cqs[rng.random_range(0..cqs.len())] } else { rng.random_range(0..300) };
        match rng.random_range(0..100) {
            0..=59 => {
                let mut cqe = [0u8; 32];
                rng.fill(&mut cqe[..]);
                cqe[21] = if rng.random_bool(0.8) { 0 } else { rng.random_range(1..22) };
                cqe[22] &= 0x7;
                if c < 256 {
                    sent[c as usize] = sent[c as usize].wrapping_add(1);
                }
                ops.push(CqOp::Completion { cq: c as u16, cqe });
            }
            60..=84 => {
                let i = (c as usize).min(255);
                // mostly "consumed everything sent", sometimes lagging (rings fill and overrun)
                let ci = if rng.random_bool(0.8) { sent[i] } else { sent[i].wrapping_sub(rng.random_range(0..20)) };
                ops.push(CqOp::Doorbell(db(c & 0x3FFF, ci, rng.random_bool(0.4), rng.random_bool(0.3))));
            }
            85..=91 => ops.push(CqOp::Command { opcode: CmdOpcode::CqRead.code(), index: c, data: [0; 32] }),
            92..=96 => {
                let mut ctx = CqCtx {
                    base: rng.random::<u64>() & !0x1F,
                    log_size: rng.random_range(0..16),
                    flags: CqFlags::IRQ_ENABLE,
                    valid: rng.random_bool(0.8),
                    ..CqCtx::default()
                };
                if rng.random_bool(0.1) {
                    ctx.log_size = 3;
                }
                let mut data = ctx.encode();
                match rng.random_range(0..12) {
                    0 => data[8] |= 0x10,                     // log_size over 4 bits
                    1 => data[9] |= 0x2,                      // undefined flag
                    2 => data[10] = 2,                        // valid not 0/1
                    3 => data[rng.random_range(17..32)] = 1,  // reserved byte
                    4 => data[16] = rng.random::<u8>() & 0x7, // engine state: ignored
                    5 => data[12] = 9,                        // engine state: ignored
                    _ => {}
                }
                if c < 256 {
                    sent[c as usize] = 0;
                }
                ops.push(CqOp::Command { opcode: CmdOpcode::CqWrite.code(), index: c, data });
            }
            _ => ops.push(CqOp::Command { opcode: rng.random_range(0..12), index: c, data: [0; 32] }),
        }
    }
    ops
}

#[test]
fn cq_lockstep_random() {
    let mut rng = ChaCha8Rng::seed_from_u64(0xC0);
    let ops = random_ops(&mut rng, 20_000);
    for (seed, in_order, rate, ready) in [(1u64, true, 0.5, 0.7), (2, false, 1.0, 0.3), (3, true, 0.3, 1.0)] {
        let rep = cq_lockstep(&ops, in_order, rate, ready, seed, None).expect("run");
        assert!(rep.divergences.is_empty(), "seed {seed}: {:?}", rep.divergences);
        assert_eq!(rep.accepted, ops.len());
        // coverage
        let count = |f: &dyn Fn(&CqOut) -> bool| rep.events.iter().filter(|e| f(e)).count();
        assert!(count(&|e| *e == CqOut::Event) > 50, "events");
        assert!(count(&|e| matches!(e, CqOut::Error { cause, .. } if *cause == CQ_ERR_OVERRUN)) > 50);
        assert!(count(&|e| matches!(e, CqOut::Error { cause, .. } if *cause == CQ_ERR_INVALID)) > 50);
        eprintln!("seed {seed}: dma {} events {} outcomes {}", rep.dma.len(), rep.events.len(), rep.outcomes.len());
        // out of order, doorbells overtake the completions they acknowledge (CI beyond PI),
        // so most rings overrun: fewer writes, many OVERRUN errors
        assert!(rep.dma.len() > if in_order { 1000 } else { 20 }, "{}", rep.dma.len());
        if in_order {
            // (out of order at rate 1 the commands, which have priority, all run first)
            assert!(rep.dma.iter().any(|d| d.1[23] == 0), "a second pass over some ring (phase 0)");
            assert!(rep.outcomes.iter().any(|o| o.rdata.as_ref().is_some_and(|d| d[16] != 0)), "CQ_READ with state");
        }
        for e in [0u8, 1, 2, 4] {
            assert!(rep.outcomes.iter().any(|o| o.error == e), "no command with error {e}");
        }
    }
}

#[test]
fn cq_ring_protocol_and_throughput() {
    // one CQ of 8 entries: 20 completions with the host consuming as it goes; every CQE
    // lands in slot pi mod 8 with the phase a host expects
    let base = 0x5_0000u64;
    let mut ops = vec![write_cmd(3, &CqCtx { base, log_size: 3, valid: true, ..CqCtx::default() })];
    for i in 0..20u32 {
        let mut cqe = [0u8; 32];
        cqe[0..4].copy_from_slice(&i.to_le_bytes());
        ops.push(CqOp::Completion { cq: 3, cqe });
        ops.push(CqOp::Doorbell(db(3, i + 1, false, false)));
    }
    let rep = cq_lockstep(&ops, true, 1.0, 1.0, 9, None).expect("run");
    assert!(rep.divergences.is_empty(), "{:?}", rep.divergences);
    assert_eq!(rep.dma.len(), 20);
    for (i, (addr, cqe)) in rep.dma.iter().enumerate() {
        assert_eq!(*addr, base + 32 * (i as u64 % 8));
        assert_eq!(u32::from_le_bytes(cqe[0..4].try_into().unwrap()), i as u32);
        assert_eq!(cqe[23], u8::from((i / 8) % 2 == 0), "phase of CQE {i}");
    }
    // 41 operations offered back to back: one per 2 cycles (the harness offers the next one
    // in the cycle after a handshake, so in order that is one per 2 cycles too)
    assert_eq!(rep.span.1 - rep.span.0, 2 * 40, "{:?}", rep.span);
}
