//! `roce_axi_axil` (a PCIe bridge's 512-bit AXI4 BAR master to the engine's 32-bit
//! AXI4-Lite register port): 32-bit and 64-bit MMIO as a host makes it, plus bursts, odd
//! sizes and arbitrary strobes, against a register file with random READY, latency and
//! SLVERR on part of the space; every AXI4-Lite access and every B/R compared with the
//! conversion the module's header states (and the registers read back what was written).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_sim::cosim::axi_axil::{axi_axil_lockstep, AxiOp, BEAT, ERR_BIT};

fn random_ops(rng: &mut ChaCha8Rng, n: usize) -> Vec<AxiOp> {
    (0..n)
        .map(|_| {
            let id = rng.random_range(0..16u8);
            let size: u8 = match rng.random_range(0..10) {
                0..=5 => 2,
                6 | 7 => 3,
                8 => rng.random_range(0..=6),
                _ => 6,
            };
            let beats = if rng.random_bool(0.8) { 1 } else { rng.random_range(2..=4) };
            let mut addr = u64::from(rng.random_range(0..0x400u16) & !3)
                | if rng.random_bool(0.1) { u64::from(ERR_BIT) } else { 0 };
            addr |= 0xF000_0000_0000; // bits above the register port's 16 are dropped
            if size >= 2 {
                addr &= !((1u64 << size) - 1);
            }
            if rng.random_bool(0.5) {
                // a write whose strobes are the bytes the access covers (as a host's MMIO)
                let beats = (0..beats)
                    .map(|k| {
                        let mut data = [0u8; BEAT];
                        rng.fill(&mut data[..]);
                        let a = addr + (k << size) as u64;
                        let lanes = 1u64 << size.min(6);
                        let first = (a & 63) & !(lanes - 1);
                        let mut strb = if lanes >= 64 { u64::MAX } else { ((1u64 << lanes) - 1) << first };
                        if rng.random_bool(0.2) {
                            strb &= rng.random::<u64>();
                        }
                        (data, strb)
                    })
                    .collect();
                AxiOp::Write { id, addr, size, beats }
            } else {
                AxiOp::Read { id, addr, size, beats }
            }
        })
        .collect()
}

#[test]
fn mmio_of_every_shape_becomes_the_stated_register_accesses() {
    for (seed, (ready_p, lat)) in [(1.0, 0), (0.5, 3), (0.3, 10)].into_iter().enumerate() {
        let mut rng = ChaCha8Rng::seed_from_u64(seed as u64);
        let ops = random_ops(&mut rng, 600);
        let r = axi_axil_lockstep(&ops, ready_p, lat, seed as u64).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {:#?}", &r.divergences[..r.divergences.len().min(5)]);
        assert!(r.accesses > 600, "seed {seed}: {} register accesses", r.accesses);
    }
}
