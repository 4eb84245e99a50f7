//! Lockstep: `roce_dma_axi` (Verilated) against its model, the AXI side played by a slave
//! over host memory with random READY, random latencies, read responses out of order across
//! IDs and interleaved beat by beat, and injected SLVERR/DECERR; the engine side with random
//! request gaps and read-data backpressure. Reads of every size class and alignment on
//! every tag, writes of every size class and alignment; every burst, W beat, returned beat
//! and written byte compared. Plus the stated throughput (64 B/cycle for long transfers).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::engine::HostMem;
use roce_sim::cosim::dma_axi::{dma_axi_lockstep, AxiSlave, DmaAxiModel, DmaRead, DmaWrite, EngineSide};

const RD_BASE: u64 = 0x7_0000_0000;
const RD_SPAN: u64 = 1 << 18;
const WR_BASE: u64 = 0x9_0000_0000;
const WR_SPAN: u64 = 1 << 20;

fn len_of(rng: &mut ChaCha8Rng) -> usize {
    match rng.random_range(0..10) {
        0 => rng.random_range(1..=8),
        1 => rng.random_range(1..=64),
        2 => 64 * rng.random_range(1..=4),
        3 => rng.random_range(65..=300),
        4 => 4096,
        5 => rng.random_range(1000..=9000),
        6 => rng.random_range(1..=65535),
        _ => rng.random_range(1..=2048),
    }
}

fn addr_of(rng: &mut ChaCha8Rng, base: u64, span: u64, len: usize) -> u64 {
    let a = base + rng.random_range(0..span - len as u64);
    match rng.random_range(0..4) {
        0 => a & !63,
        1 => (a & !4095) + 4096 - rng.random_range(1..=64).min(len as u64), // just before a 4 KiB line
        _ => a,
    }
}

fn traffic(rng: &mut ChaCha8Rng, ntags: u8, n: usize) -> (HostMem, Vec<DmaRead>, Vec<DmaWrite>) {
    let mut mem = HostMem::new();
    let fill: Vec<u8> = (0..RD_SPAN + 65536).map(|_| rng.random()).collect();
    mem.write(RD_BASE, &fill);
    let reads = (0..n)
        .map(|_| {
            let len = len_of(rng);
            DmaRead { tag: rng.random_range(0..ntags), addr: addr_of(rng, RD_BASE, RD_SPAN, len), len: len as u16 }
        })
        .collect();
    let writes = (0..n)
        .map(|_| {
            let len = len_of(rng);
            DmaWrite { addr: addr_of(rng, WR_BASE, WR_SPAN, len), data: (0..len).map(|_| rng.random()).collect() }
        })
        .collect();
    (mem, reads, writes)
}

#[test]
fn random_traffic_against_a_misbehaving_slave() {
    let runs = [
        // (model, seed, slave, engine)
        (
            DmaAxiModel::DEFAULT,
            AxiSlave {
                ar_ready: 0.7,
                aw_ready: 0.7,
                w_ready: 0.6,
                r_valid: 0.7,
                b_valid: 0.5,
                latency: (0, 150),
                interleave: true,
                err: 0.03,
            },
            EngineSide { rd_valid: 0.5, wr_valid: 0.5, wd_valid: 0.8, rd_ready: 0.7 },
        ),
        (
            DmaAxiModel::DEFAULT,
            AxiSlave {
                ar_ready: 1.0,
                aw_ready: 0.3,
                w_ready: 1.0,
                r_valid: 1.0,
                b_valid: 1.0,
                latency: (20, 400),
                interleave: false,
                err: 0.02,
            },
            EngineSide { rd_valid: 1.0, wr_valid: 1.0, wd_valid: 1.0, rd_ready: 1.0 },
        ),
        (
            DmaAxiModel::SMALL,
            AxiSlave {
                ar_ready: 0.5,
                aw_ready: 0.5,
                w_ready: 0.5,
                r_valid: 0.6,
                b_valid: 0.6,
                latency: (0, 60),
                interleave: true,
                err: 0.05,
            },
            EngineSide { rd_valid: 0.7, wr_valid: 0.7, wd_valid: 0.5, rd_ready: 0.4 },
        ),
        (
            DmaAxiModel::SMALL,
            AxiSlave {
                ar_ready: 0.9,
                aw_ready: 0.9,
                w_ready: 0.9,
                r_valid: 0.9,
                b_valid: 0.9,
                latency: (0, 300),
                interleave: false,
                err: 0.0,
            },
            EngineSide { rd_valid: 1.0, wr_valid: 0.2, wd_valid: 1.0, rd_ready: 0.9 },
        ),
    ];
    let (mut inter, mut over, mut rerr, mut werr) = (0, 0, 0, 0);
    for (seed, (cfg, slave, eng)) in runs.into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed as u64);
        let (mut mem, reads, writes) = traffic(&mut rng, 1 << cfg.tag_w, 400);
        let r = dma_axi_lockstep(cfg, &reads, &writes, &mut mem, slave, eng, seed as u64).expect("runs");
        assert!(r.divergences.is_empty(), "run {seed}: {:#?}", &r.divergences[..r.divergences.len().min(10)]);
        eprintln!(
            "run {seed}: {} cycles, {} read beats, {} W beats, {} AR / {} AW bursts, {} interleaved, {} overtaken, \
             {} / {} failed bursts",
            r.cycles,
            r.rd_beats,
            r.w_beats,
            r.ar_bursts,
            r.aw_bursts,
            r.interleaved,
            r.overtaken,
            r.rd_err_bursts,
            r.wr_err_bursts
        );
        inter += r.interleaved;
        over += r.overtaken;
        rerr += r.rd_err_bursts;
        werr += r.wr_err_bursts;
    }
    // the slave did what the test is about
    assert!(inter > 100 && over > 50 && rerr > 5 && werr > 5, "{inter} {over} {rerr} {werr}");
}

fn line_rate(addr_off: u64, aligned_only_reads: bool) -> (f64, f64) {
    let mut mem = HostMem::new();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let fill: Vec<u8> = (0..(64 * 4096 + 4096) as u64).map(|_| rng.random()).collect();
    mem.write(RD_BASE, &fill);
    let reads: Vec<DmaRead> = (0..64u64)
        .map(|i| DmaRead {
            tag: (i % 4) as u8,
            addr: RD_BASE + 4096 * i + if aligned_only_reads { 0 } else { addr_off },
            len: 4096,
        })
        .collect();
    let writes: Vec<DmaWrite> =
        (0..64u64).map(|i| DmaWrite { addr: WR_BASE + 8192 * i + addr_off, data: vec![i as u8; 4096] }).collect();
    let slave = AxiSlave {
        ar_ready: 1.0,
        aw_ready: 1.0,
        w_ready: 1.0,
        r_valid: 1.0,
        b_valid: 1.0,
        latency: (40, 40),
        interleave: false,
        err: 0.0,
    };
    let eng = EngineSide { rd_valid: 1.0, wr_valid: 1.0, wd_valid: 1.0, rd_ready: 1.0 };
    let r = dma_axi_lockstep(DmaAxiModel::DEFAULT, &reads, &writes, &mut mem, slave, eng, 1).expect("runs");
    assert!(r.divergences.is_empty(), "{:?}", r.divergences);
    let (rs, re) = r.rd_span.expect("read beats");
    let (ws, we) = r.w_span.expect("W beats");
    // the stated latencies: request -> AR 2 cycles, R beat -> engine 2 (3 when the first
    // output beat needs the second AXI beat), data beat -> W 1
    let [Some(req), Some(ar), Some(rbeat), Some(wd)] = r.firsts else { panic!("no traffic") };
    assert_eq!((ar - req, rs - rbeat, ws - wd), (2, if addr_off == 0 || aligned_only_reads { 2 } else { 3 }, 1));
    let rd = r.rd_beats as f64 / (re - rs + 1) as f64;
    let wr = r.w_beats as f64 / (we - ws + 1) as f64;
    eprintln!(
        "offset {addr_off}: reads {} beats in {} cycles, W {} beats in {} cycles",
        r.rd_beats,
        re - rs + 1,
        r.w_beats,
        we - ws + 1
    );
    (rd, wr)
}

#[test]
fn long_transfers_move_64_bytes_per_cycle() {
    // 64 reads and 64 writes of 4 KiB, slave always ready, 40 cycles of read latency
    let (rd, wr) = line_rate(0, true);
    assert!(rd > 0.99 && wr > 0.99, "aligned: reads {rd:.3}, writes {wr:.3} beats/cycle");
    // unaligned: 65 AXI beats carry 64 beats of data, nothing more is lost
    let (rd, wr) = line_rate(8, false);
    assert!(rd > 0.97 && wr > 0.99, "unaligned: reads {rd:.3}, writes {wr:.3} beats/cycle");
}
