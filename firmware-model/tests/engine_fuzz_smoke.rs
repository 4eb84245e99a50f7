//! The `engine_rx` fuzz body (firmware-model/fuzz/src/engine_rx.rs) over seeded inputs in a
//! plain `cargo test`: random bytes, and built RoCEv2 frames of every opcode with random
//! fields, steered at the engine's MAC and QP and sealed. `ROCE_SOAK=1` runs 50x more.

#[path = "../fuzz/src/engine_rx.rs"]
mod engine_rx;

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};
use roce_model::wire::*;

fn built(rng: &mut StdRng) -> Vec<u8> {
    let useful = [
        Opcode::RcRdmaWriteOnly,
        Opcode::RcSendOnly,
        Opcode::RcFetchAdd,
        Opcode::RcCompareSwap,
        Opcode::RcRdmaReadRequest,
        Opcode::RcSendOnlyWithImmediate,
    ];
    let op = if rng.random_bool(0.5) {
        useful[rng.random_range(0..useful.len())]
    } else {
        Opcode::ALL[rng.random_range(0..Opcode::ALL.len())]
    };
    let mut bth = BthFields::new(op, 2, (100 + rng.random_range(0..4u32)).wrapping_sub(1) & 0xFF_FFFF);
    bth.ack_req = rng.random();
    let va = 0x10_0000 + rng.random_range(0..17 * 1024u64);
    let rkey = if rng.random_bool(0.8) { (1 << 8) | 0x5A } else { rng.random() };
    let plen = if op.has_payload() { rng.random_range(0..1100usize) } else { 0 };
    let dma_len = if rng.random_bool(0.6) { plen as u32 } else { rng.random_range(0..20_000) };
    let mut ext = ExtHeaders::NONE;
    for k in op.ext_headers() {
        match k {
            ExtHeaderKind::Reth => ext.reth = Some(RethFields { va, rkey, dma_len }),
            ExtHeaderKind::AtomicEth => {
                ext.atomic_eth =
                    Some(AtomicEthFields { va: va & !7, rkey, swap_add: rng.random(), compare: rng.random() })
            }
            ExtHeaderKind::Aeth => {
                ext.aeth = Some(AethFields { syndrome: rng.random(), msn: rng.random::<u32>() & 0xFF_FFFF })
            }
            ExtHeaderKind::AtomicAckEth => {
                ext.atomic_ack_eth = Some(AtomicAckEthFields { orig_remote_data: rng.random() })
            }
            ExtHeaderKind::ImmDt => ext.immdt = Some(ImmDtFields { imm: rng.random() }),
            ExtHeaderKind::Ieth => ext.ieth = Some(IethFields { rkey }),
            ExtHeaderKind::Deth => ext.deth = Some(DethFields { qkey: rng.random(), src_qp: 7 }),
            ExtHeaderKind::CnpPadding => {}
        }
    }
    let mut payload = vec![0u8; plen];
    rng.fill_bytes(&mut payload);
    let ip = Ipv4Fields { src: [192, 0, 2, 1].into(), dst: [192, 0, 2, 2].into(), ..Ipv4Fields::default() };
    FrameBuilder::new(
        EthernetFields { dst: [0x02, 0, 0, 0, 0, 0xB], src: [0x02, 0, 0, 0, 0, 0xA], vlan: None },
        ip,
        bth,
    )
    .with_ext(ext)
    .build(&payload)
    .unwrap_or_default()
}

#[test]
fn engine_rx_fuzz_body_seeded() {
    let soak = std::env::var("ROCE_SOAK").is_ok_and(|v| !v.is_empty() && v != "0");
    let rounds = if soak { 50 } else { 1 };
    let (mut fed, mut writes, mut replies) = (0, 0, 0);
    for seed in 0..(20 * rounds) {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut input = Vec::new();
        for _ in 0..60 {
            let f = if rng.random_bool(0.15) {
                let mut v = vec![0u8; rng.random_range(0..120)];
                rng.fill_bytes(&mut v);
                v
            } else {
                built(&mut rng)
            };
            let flags: u8 = if rng.random_bool(0.9) { 7 } else { rng.random() };
            input.extend_from_slice(&(f.len() as u16).to_le_bytes());
            input.push(flags);
            input.extend_from_slice(&f);
        }
        let r = engine_rx::engine_rx_body(&input);
        fed += r.frames;
        writes += r.mr_writes;
        replies += r.replies;
    }
    assert_eq!(fed, 1200 * rounds as usize);
    // the inputs reach execution (memory writes) and the response paths, not just the parser
    assert!(writes > 50 && replies > 200, "{writes} MR writes, {replies} replies");
}
