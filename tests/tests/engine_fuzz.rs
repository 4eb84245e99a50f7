//! A live engine fed arbitrary packets: random bytes, and well-formed RoCE frames with random
//! opcodes, PSNs, keys, addresses and lengths aimed at its QP. It must not panic, and every
//! DMA write must land in its registered buffer or its CQ ring. `ROCE_SOAK=1` runs 50x more.

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_driver::{RecvWr, WorkCompletion};
use roce_model::wire::{
    AethFields, AtomicEthFields, BthFields, EthernetFields, ExtHeaders, FrameBuilder, IethFields, ImmDtFields,
    Ipv4Fields, Opcode, RethFields,
};
use roce_sim::net::pair::{Pair, PairConfig};

fn random_frame(rng: &mut ChaCha8Rng, pair: &Pair, epsn: u32) -> Vec<u8> {
    let (a, b) = (&pair.a, &pair.b);
    if rng.random_bool(0.1) {
        let mut f = vec![0u8; rng.random_range(0..200)];
        rng.fill_bytes(&mut f);
        return f;
    }
    let useful = [
        Opcode::RcRdmaWriteOnly,
        Opcode::RcRdmaWriteOnlyWithImmediate,
        Opcode::RcRdmaWriteFirst,
        Opcode::RcSendOnly,
        Opcode::RcSendFirst,
        Opcode::RcRdmaReadRequest,
        Opcode::RcFetchAdd,
        Opcode::RcCompareSwap,
    ];
    let op = if rng.random_bool(0.5) {
        useful[rng.random_range(0..useful.len())]
    } else {
        Opcode::ALL[rng.random_range(0..Opcode::ALL.len())]
    };
    let qpn = if rng.random_bool(0.9) { b.qp.qpn() } else { rng.random_range(0..2048) };
    let psn =
        if rng.random_bool(0.7) { epsn.wrapping_add(rng.random_range(0..3)).wrapping_sub(1) } else { rng.random() };
    let mut bth = BthFields::new(op, qpn, psn & 0xFF_FFFF);
    bth.ack_req = rng.random();
    let mr = b.mr;
    let plen = if !op.has_payload() {
        0
    } else if rng.random_bool(0.7) {
        rng.random_range(0..=1024)
    } else {
        rng.random_range(0..4200)
    };
    let va = if rng.random_bool(0.7) {
        (mr.va + rng.random_range(0..mr.len + 64).min(mr.len - plen as u64)) & !7
    } else {
        rng.random()
    };
    let rkey = if rng.random_bool(0.8) { mr.rkey } else { rng.random() };
    // usually a length consistent with the packet, so execution paths are reached
    let len = if rng.random_bool(0.5) { plen as u32 } else { rng.random_range(0..9000u32) };
    let mut ext = ExtHeaders::NONE;
    use roce_model::wire::ExtHeaderKind as K;
    for k in op.ext_headers() {
        match k {
            K::Reth => ext.reth = Some(RethFields { va, rkey, dma_len: len }),
            K::AtomicEth => {
                ext.atomic_eth = Some(AtomicEthFields { va, rkey, swap_add: rng.random(), compare: rng.random() })
            }
            K::Aeth => ext.aeth = Some(AethFields { syndrome: rng.random(), msn: rng.random::<u32>() & 0xFF_FFFF }),
            K::ImmDt => ext.immdt = Some(ImmDtFields { imm: rng.random() }),
            K::Ieth => ext.ieth = Some(IethFields { rkey }),
            K::AtomicAckEth => {
                ext.atomic_ack_eth = Some(roce_model::wire::AtomicAckEthFields { orig_remote_data: rng.random() })
            }
            K::Deth => {
                ext.deth =
                    Some(roce_model::wire::DethFields { qkey: rng.random(), src_qp: rng.random::<u32>() & 0xFF_FFFF })
            }
            K::CnpPadding => {}
        }
    }
    let mut payload = vec![0u8; plen];
    rng.fill_bytes(&mut payload);
    let ip = |x: std::net::IpAddr| match x {
        std::net::IpAddr::V4(v) => v,
        std::net::IpAddr::V6(_) => std::net::Ipv4Addr::UNSPECIFIED,
    };
    let ipf = Ipv4Fields { src: ip(a.ip), dst: ip(b.ip), ..Ipv4Fields::default() };
    let Ok(mut f) = FrameBuilder::new(EthernetFields { dst: b.mac, src: a.mac, vlan: None }, ipf, bth)
        .with_ext(ext)
        .build(&payload)
    else {
        return Vec::new();
    };
    if roce_model::icrc::fill(&mut f).is_err() || rng.random_bool(0.05) {
        let i = rng.random_range(0..f.len());
        f[i] ^= 1;
    }
    f
}

#[test]
fn arbitrary_packets_never_write_outside_registered_memory() {
    let rounds = if roce_tests::soak() { 50 } else { 1 };
    let (mut executed, mut naks) = (0usize, 0u64);
    for seed in 0..(4 * rounds) {
        let mut pair =
            Pair::new(&PairConfig { buf_len: 16 * 1024, mtu: 1024, depth: 16, ..PairConfig::default() }).expect("pair");
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // receive buffers: the first half of B's buffer
        let sge = [pair.b.mr.sge(0, 8192)];
        for i in 0..16 {
            pair.b.dev.post_recv(pair.b.qp, &[RecvWr { wr_id: i, sges: &sge }]).expect("post_recv");
        }
        let cq_ring = {
            let n = pair.b.node.borrow();
            let c = n.engine.cq(pair.b.cq.number()).expect("cq").ring;
            (c.base, (32u64) << c.log_size)
        };
        pair.b.node.borrow_mut().mem.track_writes = true;
        let (buf_lo, buf_hi) = (pair.b.buf.iova, pair.b.buf.iova + pair.b.buf.len as u64);
        let epsn = pair.a.psn;
        let mut wcs = [WorkCompletion {
            wr_id: 0,
            status: roce_driver::CqeStatus::Success,
            opcode: roce_driver::CqeOpcode::Send,
            byte_len: 0,
            imm: None,
            invalidated: None,
            qpn: 0,
            src_qp: 0,
        }; 16];
        let _ = epsn;
        for _ in 0..500 {
            let (state, epsn) = {
                let n = pair.b.node.borrow();
                let q = n.engine.qp(pair.b.qp.qpn()).expect("qp");
                (q.state, q.resp.epsn)
            };
            if state == roce_driver::QpState::Err {
                // bring the QP back so the fuzz keeps reaching execution
                let reset =
                    roce_driver::QpAttr { state: roce_driver::QpState::Reset, ..roce_driver::QpAttr::default() };
                pair.b.dev.modify_qp(pair.b.qp, &reset, roce_driver::QpAttrMask::STATE).expect("reset");
                let (qa, ma, ia, pa) = (pair.a.qp.qpn(), pair.a.mac, pair.a.ip, pair.a.psn);
                let cfg = PairConfig { mtu: 1024, ..PairConfig::default() };
                roce_sim::net::pair::connect(&cfg, &mut pair.b, qa, ma, ia, pa).expect("reconnect");
                while pair.b.dev.poll_cq(pair.b.cq, &mut wcs).unwrap_or(0) > 0 {}
                for i in 0..8 {
                    let _ = pair.b.dev.post_recv(pair.b.qp, &[RecvWr { wr_id: i, sges: &sge }]);
                }
            }
            let f = random_frame(&mut rng, &pair, epsn);
            let mut n = pair.b.node.borrow_mut();
            n.now += 100;
            n.rx(&f);
            while n.tx().is_some() {}
            drop(n);
            let _ = pair.b.dev.poll_cq(pair.b.cq, &mut wcs);
        }
        let n = pair.b.node.borrow();
        assert_eq!(n.engine.counters.dma_errors, 0, "seed {seed}: the engine tried DMA outside its windows");
        for &(addr, len) in &n.mem.writes {
            let end = addr + len as u64;
            let in_buf = addr >= buf_lo && end <= buf_hi;
            let in_cq = addr >= cq_ring.0 && end <= cq_ring.0 + cq_ring.1;
            assert!(in_buf || in_cq, "seed {seed}: DMA write [{addr:#x}, +{len}) outside the MR and the CQ ring");
        }
        assert!(n.engine.counters.rx_frames >= 500);
        let c = &n.engine.counters;
        executed += n.mem.writes.iter().filter(|w| w.0 >= buf_lo && w.0 < buf_hi).count();
        naks += c.nak_seq_sent + c.nak_inv_sent + c.nak_acc_sent + c.nak_rnr_sent + c.nak_op_sent;
    }
    // the fuzz reached execution and error paths, not just the parser
    assert!(executed > 10 && naks > 10, "only {executed} writes into the MR and {naks} NAKs");
}
