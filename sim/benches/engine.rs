//! The engine model's full RC paths: packets per second of wall time through two engines
//! (requester TX + responder RX + ACK back + completer), and the model's own estimate of
//! engine cycles per packet. `cargo bench -p roce-sim --bench engine`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce_sim::cmd::transfer::{run, Op, TransferConfig};

fn cfg(op: Op, size: usize, messages: u64) -> TransferConfig {
    TransferConfig { op, size, messages, mtu: 4096, depth: 32, ..TransferConfig::default() }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("engine_model");
    g.sample_size(10);
    println!("\nmodel-estimated cost (simulated cycles at 250 MHz, 100 Gb/s link):");
    for op in [Op::Write, Op::Send, Op::Read] {
        for size in [64usize, 1024, 4096] {
            let messages = 4000;
            let probe = run(&cfg(op, size, messages), |_, _| {}).expect("transfer");
            assert!(probe.clean(messages));
            let c = &probe.counters;
            let packets = c[0].tx_frames + c[1].tx_frames;
            println!(
                "  {op:?} {size:>5} B: {packets} packets, {} cycles, {:.1} cycles/packet, {:.1} cycles/message, {:.2} Gb/s",
                probe.cycles,
                probe.cycles as f64 / packets as f64,
                probe.cycles as f64 / messages as f64,
                probe.gbps()
            );
            g.throughput(Throughput::Elements(packets));
            g.bench_function(format!("{op:?}_{size}B_packets"), |b| {
                b.iter(|| run(&cfg(op, size, messages), |_, _| {}).expect("transfer"))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
