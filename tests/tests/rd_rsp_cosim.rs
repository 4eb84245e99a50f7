//! Lockstep: `roce_rd_rsp` (Verilated) against its model (the responder's READ response
//! segmentation): READs of 0 bytes to several MTUs at every MTU, PSNs across the wrap,
//! unaligned DMA addresses, reads that fail (outside the IOMMU windows), ATOMIC
//! Acknowledges between them; random DMA latency and backpressure. Plus the throughput of
//! long READs: the payload stream runs at one beat per cycle with the DMA latency hidden.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::contract::records::RdRsp;
use roce_model::contract::PathMtu;
use roce_model::engine::HostMem;
use roce_sim::cosim::rd_rsp::rd_rsp_lockstep;

const BASE: u64 = 0x10_0000;
const LEN: u64 = 1 << 20;

fn memory(rng: &mut ChaCha8Rng) -> HostMem {
    let mut m = HostMem::with_iommu();
    m.map_window(BASE, LEN);
    let d: Vec<u8> = (0..LEN).map(|_| rng.random()).collect();
    m.write(BASE, &d);
    m
}

#[test]
fn responses_match_the_model() {
    for seed in 0..4u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mem = memory(&mut rng);
        let rsps: Vec<RdRsp> = (0..300)
            .map(|_| {
                let mtu = [PathMtu::Mtu256, PathMtu::Mtu512, PathMtu::Mtu1024, PathMtu::Mtu2048, PathMtu::Mtu4096]
                    [rng.random_range(0..5)];
                let m = mtu.bytes();
                let len = match rng.random_range(0..4) {
                    0 => rng.random_range(0..64),
                    1 => m * rng.random_range(1..4),
                    _ => rng.random_range(0..5 * m),
                };
                let dma =
                    if rng.random_bool(0.05) { 0x9000_0000 } else { BASE + rng.random_range(0..LEN - u64::from(len)) };
                RdRsp {
                    qpn: rng.random_range(2..1024),
                    psn: if rng.random_bool(0.2) { 0xFF_FFFE } else { rng.random_range(0..0xFF_FFFF) },
                    msn: rng.random_range(0..0xFF_FFFF),
                    atomic: rng.random_bool(0.15),
                    path_mtu: mtu,
                    len,
                    dma,
                    orig: rng.random(),
                }
            })
            .collect();
        let (lat, rp) = [((3, 10), 1.0), ((50, 300), 0.7), ((1, 40), 0.3), ((200, 250), 0.95)][seed as usize];
        let r = rd_rsp_lockstep(&rsps, &mem, lat, rp, seed).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {:?}", r.divergences);
        assert!(
            r.dma_errors > 0 && r.packets > 300,
            "seed {seed}: {} packets, {} failed reads",
            r.packets,
            r.dma_errors
        );
    }
}

#[test]
fn long_reads_stream_at_a_beat_per_cycle() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mem = memory(&mut rng);
    // 16 READs of 64 KiB at MTU 4096 with 250 cycles of DMA latency
    let rsps: Vec<RdRsp> = (0..16)
        .map(|i| RdRsp {
            qpn: 5,
            psn: 16 * i,
            msn: i,
            atomic: false,
            path_mtu: PathMtu::Mtu4096,
            len: 65536,
            dma: BASE + 65536 * u64::from(i % 8),
            orig: 0,
        })
        .collect();
    let r = rd_rsp_lockstep(&rsps, &mem, (250, 250), 1.0, 0).expect("runs");
    assert!(r.divergences.is_empty(), "{:?}", r.divergences);
    assert_eq!(r.packets, 256);
    // 16384 beats, one idle cycle between two packets' payloads (each descriptor is taken
    // while the payload before it streams); one DMA latency to start
    let busy = r.cycles - 50;
    eprintln!("{} beats in {busy} cycles ({:.1} per 4 KiB packet)", r.beats, busy as f64 / 256.0);
    assert!(busy <= 256 * 65 + 350, "{busy} cycles");
}
