//! HDL ICRC block: bytes per cycle from simulated cycle counts (deterministic), and the
//! Verilator simulation speed in cycles per second (criterion, wall clock).
//!
//! `cargo bench -p roce-sim --bench hdl_icrc`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::axis::split_frame;
use roce_model::icrc;
use roce_sim::stream::{self, Traffic};
use roce_sim::vl::{AxisDut, Model};

/// A mix of frame sizes: small (ACK-sized), MTU-sized (1 KiB, 4 KiB payload) and jumbo.
fn mix(n: usize) -> Vec<Vec<u8>> {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    (0..n)
        .map(|i| {
            let body = match i % 8 {
                0 | 1 => rng.random_range(0..64),
                2 | 3 => 1024 + 16,
                4 | 5 => 4096 + 16,
                6 => rng.random_range(64..9000),
                _ => 8960,
            };
            let mut f = vec![0u8; 14];
            f[12] = 0x08;
            let l4 = 8 + 12 + body + 4;
            f.extend_from_slice(&[0x45, 0]);
            f.extend_from_slice(&((20 + l4) as u16).to_be_bytes());
            f.extend_from_slice(&[0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2, 0xC0, 0, 0x12, 0xB7]);
            f.extend_from_slice(&(l4 as u16).to_be_bytes());
            f.extend_from_slice(&[0; 14]);
            f.extend((0..body + 4).map(|_| rng.random::<u8>()));
            icrc::fill(&mut f).expect("valid");
            f
        })
        .collect()
}

fn cycle_figures(frames: &[Vec<u8>]) {
    println!("\nHDL roce_icrc, {} frames (mix of ACK-sized, 1 KiB, 4 KiB, jumbo), back-to-back:", frames.len());
    println!(
        "{:>8} {:>6} {:>10} {:>10} {:>10} {:>12} {:>12}",
        "DATA_W", "mode", "bytes", "beats", "cycles", "bytes/cycle", "ideal B/cyc"
    );
    for w in [64usize, 256, 512] {
        for ins in [false, true] {
            let beats: Vec<_> = frames.iter().flat_map(|f| split_frame(f, w / 8, 0)).collect();
            let bytes: usize = frames.iter().map(Vec::len).sum();
            let mut dut = AxisDut::new(Model::icrc(w, ins).expect("model"), None).expect("dut");
            dut.reset(2);
            let r = stream::run(&mut dut, &beats, beats.len(), &Traffic::FULL, 100).expect("run");
            // cycles from the first accepted beat to the last emitted one
            let cycles = r.out.last().map_or(0, |(c, _)| *c) - r.accepted[0] + 1;
            println!(
                "{:>8} {:>6} {:>10} {:>10} {:>10} {:>12.2} {:>12.2}",
                w,
                if ins { "insert" } else { "check" },
                bytes,
                beats.len(),
                cycles,
                bytes as f64 / cycles as f64,
                bytes as f64 / beats.len() as f64
            );
        }
    }
}

fn bench(c: &mut Criterion) {
    let frames = mix(400);
    cycle_figures(&frames);
    let mut g = c.benchmark_group("verilator");
    g.sample_size(10);
    for w in [64usize, 512] {
        let beats: Vec<_> = frames.iter().flat_map(|f| split_frame(f, w / 8, 0)).collect();
        let mut dut = AxisDut::new(Model::icrc(w, false).expect("model"), None).expect("dut");
        dut.reset(2);
        let probe = stream::run(&mut dut, &beats, beats.len(), &Traffic::FULL, 100).expect("run");
        g.throughput(Throughput::Elements(probe.cycles));
        g.bench_function(format!("icrc{w}_check_cycles"), |b| {
            b.iter(|| stream::run(&mut dut, &beats, beats.len(), &Traffic::FULL, 100).expect("run"))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
