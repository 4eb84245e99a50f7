//! Lockstep: `roce_ack_q` (Verilated) against its model (the engine's coalescing rule and
//! ACK queue): ACKs, RNR NAKs and NAKs for a few hot and many cold QPs, newer and older
//! PSNs (across the 2^24 wrap), NAKs that must survive older ACKs, clears of owed and of
//! queued QPs, under random offer gaps and TX backpressure.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_sim::cosim::ack_q::{ack_q_lockstep, AckIn};

fn phases(rng: &mut ChaCha8Rng, n: usize) -> Vec<AckIn> {
    let mut v = Vec::new();
    let mut psn = [0u32; 1024];
    for (q, p) in psn.iter_mut().enumerate() {
        *p = if q % 5 == 0 { 0xFF_FFF0 } else { rng.random_range(0..0xFF_FFFF) };
    }
    for phase in 0..n {
        for _ in 0..300 {
            let q = if rng.random_bool(0.7) { rng.random_range(2..10) } else { rng.random_range(2..1024) };
            let syn = match rng.random_range(0..10) {
                0 => 0x20 | rng.random_range(0..32),
                1 => 0x60 + rng.random_range(0..4),
                _ => 0x1F,
            };
            // mostly newer PSNs, sometimes older ones
            let step = if rng.random_bool(0.8) { rng.random_range(0..4) } else { 0x100_0000 - rng.random_range(1..4) };
            psn[q as usize] = (psn[q as usize] + step) & 0xFF_FFFF;
            v.push(AckIn::Req(q, psn[q as usize], syn, rng.random_range(0..0xFF_FFFF)));
        }
        v.push(AckIn::Drain);
        if phase % 2 == 1 {
            // resets: some QPs owing, some queued, then requests again after a drain
            for q in 2..12 {
                if rng.random_bool(0.3) {
                    continue;
                }
                v.push(AckIn::Req(q, psn[q as usize], 0x1F, 1));
                v.push(AckIn::Clear(q));
            }
            v.push(AckIn::Drain);
        }
    }
    v
}

#[test]
fn coalescing_and_order_match_the_model() {
    for seed in 0..4u64 {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let ins = phases(&mut rng, 8);
        let (op, rp) = [(1.0, 1.0), (0.5, 0.3), (0.9, 0.1), (0.2, 0.9)][seed as usize];
        let r = ack_q_lockstep(&ins, op, rp, seed).expect("runs");
        assert!(r.divergences.is_empty(), "seed {seed}: {:?}", r.divergences);
        let reqs = ins.iter().filter(|i| matches!(i, AckIn::Req(..))).count();
        eprintln!("seed {seed}: {reqs} requests, {} ACKs sent, {} cycles", r.sent.len(), r.cycles);
        // coalescing happened where the TX side was slow, not where it took everything
        assert!(!r.sent.is_empty() && r.sent.len() < reqs);
    }
}
