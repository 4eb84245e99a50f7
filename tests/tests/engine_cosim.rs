//! The Verilated engine (`roce_engine`) on the simulated fabric, programmed by roce-driver
//! exactly like the model: node B runs the HDL as the responder of node A's requests, A
//! running the engine model; then both nodes run the HDL, A as the requester (roce_req,
//! roce_comp). Every byte is verified where it lands.
//! SEND (into posted receives), RDMA WRITE and RDMA READ, MTUs 256 to 4096, message sizes
//! from 1 byte to 64 KiB, over clean links and links that lose, reorder and duplicate.
//!
//! Runs with the HDL on B only are cosim runs (`--engine cosim`): the engine model runs
//! beside the HDL on the same stimulus, and every frame, DMA write and CQE the HDL emits
//! must equal the model's (sim/src/net/shadow.rs); a divergence fails the test with cycle,
//! block and both values. With the HDL on both nodes, the clean-link runs are cosim runs on
//! both nodes (A's requests and CQEs compared too); over lossy links a requester's packets
//! depend on when the responses arrive (retransmissions from where a NAK or timeout found
//! it), which the comparison does not model, so those runs check the data only.
//! Every cosim run also compares the HDL's counters, read through its registers, with the
//! model's (`counters_agree`).

use roce_model::engine::Counters;
use roce_sim::cmd::transfer::{run, Op, TransferConfig, TransferReport};
use roce_sim::net::fabric::LinkConfig;
use roce_sim::net::hdl::HdlConfig;

fn cfg(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig, seed: u64) -> TransferConfig {
    TransferConfig {
        op,
        size,
        messages,
        mtu,
        link,
        seed,
        depth: 8,
        hdl: [false, true],
        cosim: Some(HdlConfig::default()),
        max_cycles: 400_000_000,
        ..Default::default()
    }
}

/// A cosim node's counters, read through the HDL's counter registers, against those of the
/// model that ran beside it. What both count from the same received frames and the same
/// transport decisions must be equal (NAKs are counted when the responder decides one,
/// before coalescing). ACKs are coalesced by timing, so ACKS_SENT is checked against the
/// Acknowledge frames the HDL put on the wire, and the model's against its own.
fn counters_agree(r: &TransferReport, node: usize, what: &str) {
    let (Some(m), Some(s)) = (&r.model_counters[node], &r.cosim[node]) else {
        panic!("{what}: node {node} is not a cosim node")
    };
    let h = &r.counters[node];
    let pick = |c: &Counters| {
        [
            ("rx_frames", c.rx_frames),
            ("rx_bytes", c.rx_bytes),
            ("rx_icrc_errors", c.rx_icrc_errors),
            ("rx_malformed", c.rx_malformed),
            ("rx_unknown_qp", c.rx_unknown_qp),
            ("rx_not_roce", c.rx_not_roce),
            ("nak_seq_sent", c.nak_seq_sent),
            ("nak_rnr_sent", c.nak_rnr_sent),
            ("nak_inv_sent", c.nak_inv_sent),
            ("nak_acc_sent", c.nak_acc_sent),
            ("nak_op_sent", c.nak_op_sent),
            ("duplicates", c.duplicates),
            ("cqes", c.cqes),
            ("dma_errors", c.dma_errors),
        ]
    };
    assert_eq!(pick(h), pick(m), "{what}: node {node}'s HDL counters (left) against the model's (right)");
    assert_eq!(
        [h.acks_sent, m.acks_sent],
        s.acks,
        "{what}: node {node}'s ACKS_SENT (HDL, model) against the Acknowledge frames each sent"
    );
}

fn go(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig, seed: u64) -> TransferReport {
    let r = run(&cfg(op, size, messages, mtu, link, seed), |_, _| {}).expect("transfer runs");
    if let Some((_, d)) = &r.divergence {
        panic!("{op:?} size {size} mtu {mtu} seed {seed}: the HDL and the model diverged at {d}");
    }
    let s = r.cosim[1].clone().expect("B is a cosim node");
    assert!(s.frames + s.dma_bytes > 0, "nothing was compared: {s:?}");
    assert!(
        r.clean(messages),
        "{op:?} size {size} mtu {mtu} seed {seed}: completed {} mismatches {} lost {} dup {} errors {} ({:?}) cycles {}\nA {:?}\nB {:?}",
        r.completed, r.mismatches, r.lost, r.duplicated, r.errors, r.first_error, r.cycles, r.counters[0], r.counters[1]
    );
    assert_eq!(r.bytes_verified, size as u64 * messages);
    counters_agree(&r, 1, &format!("{op:?} size {size} mtu {mtu} seed {seed}"));
    r
}

#[test]
fn clean_link_every_op() {
    for op in [Op::Write, Op::Send, Op::Read] {
        for (size, mtu) in [(1, 1024), (1024, 1024), (5000, 1024), (65536, 4096), (300, 256)] {
            let r = go(op, size, 12, mtu, LinkConfig::default(), 1);
            assert!(r.counters[1].tx_frames > 0 && r.counters[1].rx_frames > 0);
            // B acknowledged the SENDs and WRITEs it received (READ responses carry their
            // own AETH: no Acknowledge frame) and wrote a CQE per SEND it received
            assert_eq!(r.counters[1].acks_sent > 0, op != Op::Read, "{op:?} {size}: ACKs {}", r.counters[1].acks_sent);
            assert_eq!(r.counters[1].cqes, if op == Op::Send { 12 } else { 0 }, "{op:?} {size}");
        }
    }
}

fn lossy(loss: f64) -> LinkConfig {
    LinkConfig { loss, reorder: loss.min(0.1), dup: loss.min(0.05), reorder_delay: 3000, ..LinkConfig::default() }
}

#[test]
fn lossy_links_every_op() {
    let (mut naks, mut retx, mut dups) = (0, 0, 0);
    for (i, loss) in [0.01, 0.05, 0.2].into_iter().enumerate() {
        for op in [Op::Write, Op::Send, Op::Read] {
            let r = go(op, 3000, 30, 1024, lossy(loss), 7 + i as u64);
            naks += r.counters[1].nak_seq_sent;
            retx += r.counters[0].retransmits;
            dups += r.counters[1].duplicates;
        }
    }
    // the HDL responder saw the losses: it sent sequence NAKs, and A went back; it saw the
    // duplicated and retransmitted requests
    assert!(naks > 0 && retx > 0 && dups > 0, "NAKs {naks}, retransmissions {retx}, duplicates {dups}");
}

#[test]
fn backpressure_on_every_port() {
    // MAC RX tvalid, MAC TX tready, DMA read request ready, DMA read data tvalid, DMA write
    // request ready and DMA write data tready each low 30 % of cycles, at random.
    for (i, op) in [Op::Write, Op::Send, Op::Read].into_iter().enumerate() {
        for (size, mtu, loss) in [(9000, 1024, 0.0), (5000, 256, 0.02), (70000, 4096, 0.01)] {
            let link = if loss > 0.0 { lossy(loss) } else { LinkConfig::default() };
            let c = TransferConfig { stall: 0.3, ..cfg(op, size, 10, mtu, link, 11 + i as u64) };
            let r = run(&c, |_, _| {}).expect("transfer runs");
            if let Some((_, d)) = &r.divergence {
                panic!("{op:?} size {size} mtu {mtu} with backpressure: diverged at {d}");
            }
            assert!(r.clean(10), "{op:?} size {size} mtu {mtu}: {r:?}");
            counters_agree(&r, 1, &format!("{op:?} size {size} mtu {mtu} with backpressure"));
        }
    }
}

#[test]
fn cosim_reports_a_divergence() {
    // The model's copy of one READ source byte differs: the READ response carrying it must
    // be reported, with the block that built it and both values.
    let c =
        TransferConfig { model_fault: Some(3 * 3000 + 1500), ..cfg(Op::Read, 3000, 8, 1024, LinkConfig::default(), 5) };
    let r = run(&c, |_, _| {}).expect("transfer runs");
    let (node, d) = r.divergence.expect("the flipped byte is found");
    assert_eq!(node, 1);
    assert!(d.block.contains("roce_rd_rsp"), "{d}");
    assert!(d.cycle > 0 && d.hdl != d.model, "{d}");
    // the HDL read the true data: the transfer itself is clean
    assert_eq!(r.mismatches, 0);
}

// ---------------------------------------------------------------- HDL requester (A = HDL)

fn go2(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig, seed: u64, cosim: bool) -> TransferReport {
    go2s(op, size, messages, mtu, link, seed, cosim, 0.0)
}

/// [`go2`] with random backpressure `stall` on every MAC and DMA port of both engines.
#[allow(clippy::too_many_arguments)]
fn go2s(
    op: Op,
    size: usize,
    messages: u64,
    mtu: u32,
    link: LinkConfig,
    seed: u64,
    cosim: bool,
    stall: f64,
) -> TransferReport {
    let c = TransferConfig {
        hdl: [true, true],
        cosim: cosim.then(HdlConfig::default),
        stall,
        ..cfg(op, size, messages, mtu, link, seed)
    };
    let r = run(&c, |_, _| {}).expect("transfer runs");
    if let Some((n, d)) = &r.divergence {
        panic!("{op:?} size {size} mtu {mtu} seed {seed}: the HDL and the model diverged at node {n}: {d}");
    }
    if cosim {
        let s = r.cosim[0].clone().expect("A is a cosim node");
        assert!(s.frames + s.dma_bytes > 0, "nothing was compared at A: {s:?}");
        for node in [0, 1] {
            counters_agree(&r, node, &format!("HDL<->HDL {op:?} size {size} mtu {mtu} seed {seed}"));
        }
    }
    assert!(
        r.clean(messages),
        "HDL<->HDL {op:?} size {size} mtu {mtu} seed {seed}: completed {} mismatches {} lost {} dup {} errors {} ({:?}) cycles {}\nA {:?}\nB {:?}",
        r.completed, r.mismatches, r.lost, r.duplicated, r.errors, r.first_error, r.cycles, r.counters[0], r.counters[1]
    );
    assert_eq!(r.bytes_verified, size as u64 * messages);
    r
}

#[test]
fn hdl_requester_clean_link_every_op() {
    for op in [Op::Write, Op::Send, Op::Read] {
        for (size, mtu) in [(1, 1024), (5000, 1024), (65536, 4096), (300, 256)] {
            let r = go2(op, size, 12, mtu, LinkConfig::default(), 3, true);
            assert!(r.counters[0].tx_frames > 0 && r.counters[0].rx_frames > 0);
            assert_eq!(r.counters[0].retransmits, 0, "{op:?} {size}: a clean link needs no retransmission");
            // A wrote a CQE per (signaled) request, B one per SEND it received
            assert_eq!(r.counters[0].cqes, 12, "{op:?} {size}");
            assert_eq!(r.counters[1].cqes, if op == Op::Send { 12 } else { 0 }, "{op:?} {size}");
        }
    }
}

#[test]
fn hdl_requester_lossy_links_every_op() {
    // cosim on both nodes: the requests are compared by PSN (go-back-N resends what the
    // model resends, byte for byte), the completer's DMA writes and CQEs in order
    let (mut naks, mut retx) = (0, 0);
    for (i, (loss, size, mtu)) in
        [(0.01, 3000, 1024), (0.05, 3000, 1024), (0.2, 5000, 4096), (0.05, 700, 256)].into_iter().enumerate()
    {
        for op in [Op::Write, Op::Send, Op::Read] {
            let r = go2(op, size, 20, mtu, lossy(loss), 11 + i as u64, true);
            naks += r.counters[0].naks_rcvd;
            retx += r.counters[0].retransmits;
        }
    }
    // the HDL requester saw the losses: it received NAKs and went back
    assert!(naks > 0 && retx > 0, "NAKs received {naks}, retransmissions {retx}");
}

#[test]
fn hdl_requester_backpressure_on_every_port() {
    // Both engines Verilated, every MAC and DMA port of each stalled 30 % of cycles: on a
    // clean link in cosim on both nodes (the requester's packets, the completer's DMA
    // writes and CQEs compared with the model), on a lossy link every byte verified.
    for (i, op) in [Op::Write, Op::Send, Op::Read].into_iter().enumerate() {
        for (size, mtu) in [(9000, 1024), (70000, 4096)] {
            go2s(op, size, 10, mtu, LinkConfig::default(), 21 + i as u64, true, 0.3);
        }
        go2s(op, 5000, 10, 256, lossy(0.02), 31 + i as u64, false, 0.3);
    }
}

#[test]
fn small_reads_over_many_qps_keep_their_bodies() {
    // 64 B READs round robin over 64 QPs, both engines Verilated, clean link: the completer
    // finds each READ's SGEs where roce_req put them, in the QP's own stretch of its body
    // store (QPs sharing entries take each other's bodies, and each WQE is read again from
    // the SQ ring: 65 cycles a READ then over 16 QPs, and more over 64; ~38 now); every
    // byte verified
    let c = TransferConfig {
        hdl: [true, true],
        cosim: None,
        qps: 64,
        ..cfg(Op::Read, 64, 1024, 4096, LinkConfig::default(), 1)
    };
    let r = run(&c, |_, _| {}).expect("transfer runs");
    assert!(r.clean(1024), "completed {} mismatches {} errors {}", r.completed, r.mismatches, r.errors);
    eprintln!("1024 READs over 64 QPs: {} cycles", r.cycles);
    assert!(r.cycles < 48 * 1024, "1024 READs over 64 QPs took {} cycles", r.cycles);
}
