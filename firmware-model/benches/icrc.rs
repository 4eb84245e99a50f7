//! Software ICRC throughput against plain crc32fast over the same bytes.
//!
//! `cargo bench -p roce-model --bench icrc`. The interesting figure is the ratio of the two
//! throughputs at each size (the masked-header copy is the only extra work).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use roce_model::icrc;
use std::hint::black_box;

fn frame(payload: usize) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    f[12] = 0x08;
    let ip_len = 20 + 8 + 12 + payload + 4;
    f.extend_from_slice(&[0x45, 0x02]);
    f.extend_from_slice(&(ip_len as u16).to_be_bytes());
    f.extend_from_slice(&[0, 1, 0x40, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2]);
    f.extend_from_slice(&[0xC0, 0x00, 0x12, 0xB7]);
    f.extend_from_slice(&((8 + 12 + payload + 4) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    f.extend_from_slice(&[0x0A, 0, 0xFF, 0xFF, 0, 0, 0, 0x11, 0x80, 0, 0, 5]);
    f.extend((0..payload).map(|i| (i * 131 + 7) as u8));
    f.extend_from_slice(&[0; 4]);
    f
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("icrc");
    for size in [64usize, 256, 1024, 4096, 9000] {
        let f = frame(size);
        let l = icrc::locate(&f).expect("valid frame");
        let covered = &f[l.ip_offset..l.icrc_offset()];
        g.throughput(Throughput::Bytes(covered.len() as u64));
        g.bench_with_input(BenchmarkId::new("icrc_compute", size), &f, |b, f| {
            b.iter(|| icrc::compute(black_box(f), &l))
        });
        g.bench_with_input(BenchmarkId::new("crc32fast_hash", size), &covered, |b, d| {
            b.iter(|| crc32fast::hash(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("icrc_locate_and_check", size), &f, |b, f| {
            b.iter(|| icrc::check(black_box(f)))
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
