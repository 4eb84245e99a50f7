//! Lockstep: `roce_mr_check` (Verilated) against its model (the engine's MrTable and MR
//! commands): random MR_WRITE / MR_READ / MR_INVALIDATE commands (well-formed, malformed,
//! out of range, mismatched keys, other opcodes) interleaved with checks and invalidates
//! aimed at the installed regions (tag mismatches, wrong PD, missing access, ranges around
//! both ends, 64-bit wrap, regions ending at 2^64, zero length), under random gaps and
//! backpressure, with a soft reset between phases. Also the stated latency, one check per
//! cycle, and the init sweep's length.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::mr_check::{MrReq, LATENCY, ST_ACCESS, ST_BOUNDS, ST_KEY, ST_OK, ST_PD};
use roce_model::contract::{AccessFlags, CmdOpcode, MrCtx};
use roce_sim::cosim::mr_check::{mr_check_lockstep, MrCmd, MrPacing};

const N: u32 = 1024;

#[derive(Clone, Copy)]
struct Region {
    key: u32,
    pd: u32,
    va: u64,
    len: u64,
    access: u8,
}

fn ctx_bytes(c: &MrCtx) -> [u8; 64] {
    c.encode()
}

/// A phase: commands that (mostly) install regions, and requests aimed at them.
fn phase(rng: &mut ChaCha8Rng, ncmd: usize, nreq: usize) -> (Vec<MrCmd>, Vec<MrReq>) {
    let mut regions: Vec<Region> = Vec::new();
    let mut cmds = Vec::new();
    // install first (the requests race the later commands)
    for k in 0..ncmd {
        let r: u32 = rng.random_range(0..100);
        let index = if rng.random_bool(0.05) { rng.random_range(N..1 << 24) } else { rng.random_range(0..N) };
        let tag: u8 = rng.random();
        let va = match rng.random_range(0..10) {
            0 => u64::MAX - rng.random_range(0..0x1_0000),
            1 => 0,
            _ => rng.random::<u64>() >> rng.random_range(0..40),
        };
        let len = match rng.random_range(0..10) {
            0 => 0,
            1 => u64::MAX,
            _ => rng.random_range(1..1 << 20),
        };
        let access: u8 = rng.random::<u8>() & 0xF;
        let pd = rng.random_range(0..4);
        let mut c = MrCtx {
            va,
            len,
            iova: rng.random(),
            pd,
            key: (index << 8) | u32::from(tag),
            access: AccessFlags::from_bits_truncate(access.into()),
            valid: !rng.random_bool(0.1),
        };
        if rng.random_bool(0.05) {
            c.key = rng.random(); // key does not name the index
        }
        let mut data = ctx_bytes(&c);
        let opcode = match r {
            0..=54 => {
                match rng.random_range(0..30) {
                    0 => data[rng.random_range(37..64)] = rng.random_range(1..=255), // reserved byte
                    1 => data[36] = rng.random_range(2..=255),                       // valid not 0/1
                    2 => data[32 + rng.random_range(0..4)] |= 0xF0,                  // undefined access bit
                    _ => {}
                }
                if c.valid && c.key >> 8 == index && index < N {
                    regions.push(Region { key: c.key, pd, va, len, access });
                }
                CmdOpcode::MrWrite.code()
            }
            55..=79 => CmdOpcode::MrRead.code(),
            80..=89 => CmdOpcode::MrInvalidate.code(),
            90..=94 => CmdOpcode::QpWrite.code(),
            _ => rng.random_range(9..=255),
        };
        if k % 7 == 0 && !regions.is_empty() {
            // read back something installed
            let g = regions[rng.random_range(0..regions.len())];
            cmds.push(MrCmd { opcode: CmdOpcode::MrRead.code(), index: g.key >> 8, data: [0; 64] });
        }
        cmds.push(MrCmd { opcode, index, data });
    }
    let mut reqs = Vec::new();
    for u in 0..nreq {
        let mut q = MrReq { user: u as u32 & 0xFFFF, ..MrReq::default() };
        if let (false, Some(g)) =
            (rng.random_bool(0.15), (!regions.is_empty()).then(|| regions[rng.random_range(0..regions.len())]))
        {
            q.key = if rng.random_bool(0.08) { g.key ^ rng.random_range(1..256) } else { g.key };
            q.pd = if rng.random_bool(0.1) { g.pd ^ 1 } else { g.pd };
            q.need = if rng.random_bool(0.8) { g.access & rng.random::<u8>() } else { rng.random::<u8>() & 0xF };
            let span = g.len.min(1 << 22);
            q.len = match rng.random_range(0..10) {
                0 => 0,
                1 => u32::MAX,
                _ => rng.random_range(1..=span.clamp(1, u64::from(u32::MAX)) as u32),
            };
            q.va = match rng.random_range(0..8) {
                // at the end: exactly fitting or one byte over
                0 => g.va.wrapping_add(g.len).wrapping_sub(u64::from(q.len)).wrapping_add(rng.random_range(0..2)),
                1 => g.va.wrapping_sub(rng.random_range(0..2)),
                2 => u64::MAX - rng.random_range(0..0x100),
                _ => g.va.wrapping_add(rng.random_range(0..span.max(1))),
            };
        } else {
            q.key = rng.next_u32();
            q.pd = rng.random_range(0..4);
            q.va = rng.random();
            q.len = rng.random_range(0..0x1000);
            q.need = rng.random::<u8>() & 0xF;
        }
        q.invalidate = rng.random_bool(0.03);
        reqs.push(q);
    }
    (cmds, reqs)
}

#[test]
fn mr_check_lockstep_random() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x4d52);
    let phases: Vec<_> = (0..3).map(|_| phase(&mut rng, 400, 4000)).collect();
    for (seed, (req_rate, cmd_rate, ready_rate)) in
        [(1u64, (0.9, 0.3, 0.8)), (2, (0.4, 0.8, 0.4)), (3, (1.0, 0.1, 1.0))]
    {
        let rep = mr_check_lockstep(&phases, MrPacing { req_rate, cmd_rate, ready_rate, seed }, None).expect("run");
        for d in rep.divergences.iter().take(5) {
            eprintln!("{d}");
        }
        assert!(rep.divergences.is_empty(), "{} divergences", rep.divergences.len());
        assert_eq!(rep.results.len(), 12_000);
        assert_eq!(rep.outcomes.len(), phases.iter().map(|p| p.0.len()).sum::<usize>());
        // coverage: every status and every command outcome class happened
        for st in [ST_OK, ST_KEY, ST_PD, ST_ACCESS, ST_BOUNDS] {
            let n = rep.results.iter().filter(|r| r.status == st).count();
            assert!(n > 20, "status {st}: {n}");
        }
        assert!(rep.results.iter().filter(|r| r.status == ST_OK && r.dma != 0).count() > 500);
        for e in 0..=4u8 {
            if e == 3 {
                continue; // BAD_STATE: no MR command gives it
            }
            assert!(rep.outcomes.iter().any(|o| o.error == e), "no command with error {e}");
        }
        assert!(rep.outcomes.iter().filter(|o| o.rdata.as_ref().is_some_and(|d| d[36] == 1)).count() > 20);
    }
}

#[test]
fn mr_check_latency_throughput_and_init() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let key = (7 << 8) | 0x42;
    let ctx = MrCtx {
        va: 0x1000,
        len: 0x10_0000,
        iova: 0xAB00_0000,
        pd: 3,
        key,
        access: AccessFlags::from_bits_truncate(0xF),
        valid: true,
    };
    let cmds = vec![MrCmd { opcode: CmdOpcode::MrWrite.code(), index: 7, data: ctx.encode() }];
    // the requests wait for the command: cmd first (req_rate 1 from the start would race it,
    // so the first requests are zero-length checks, which pass regardless)
    let reqs: Vec<MrReq> = (0..2000)
        .map(|i| MrReq {
            key,
            pd: 3,
            va: 0x1000 + rng.random_range(0..0x8000),
            len: if i < 50 { 0 } else { rng.random_range(1..0x1000) },
            need: 0x2,
            user: i,
            invalidate: false,
        })
        .collect();
    let rep =
        mr_check_lockstep(&[(cmds, reqs)], MrPacing { req_rate: 1.0, cmd_rate: 1.0, ready_rate: 1.0, seed: 1 }, None)
            .expect("run");
    assert!(rep.divergences.is_empty(), "{:?}", &rep.divergences[..rep.divergences.len().min(3)]);
    assert_eq!(rep.init_cycles, u64::from(N), "the sweep clears one entry per cycle");
    assert!(rep.latency.iter().all(|&l| l == LATENCY), "latency {:?}", &rep.latency[..8]);
    // the command holds requests off for a few cycles; after that one result per cycle
    let span = rep.done_at - rep.first_accept + 1;
    assert!(span <= 2000 + LATENCY + 12, "2000 results took {span} cycles");
    assert!(rep.results[60..].iter().all(|r| r.status == ST_OK && r.dma != 0));
}
