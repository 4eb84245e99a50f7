//! The Verilated engine (`roce_engine`) on the simulated fabric, programmed by roce-driver
//! exactly like the model: node B runs the HDL as the responder of node A's requests (A is
//! the engine model until the HDL requester exists); every byte is verified where it lands.
//! SEND (into posted receives), RDMA WRITE and RDMA READ, MTUs 256 to 4096, message sizes
//! from 1 byte to 64 KiB, over clean links and links that lose, reorder and duplicate.

use roce_sim::fabric::LinkConfig;
use roce_sim::transfer::{run, Op, TransferConfig, TransferReport};

fn go(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig, seed: u64) -> TransferReport {
    let cfg = TransferConfig { op, size, messages, mtu, link, seed, depth: 8, hdl: [false, true], max_cycles: 400_000_000, ..Default::default() };
    let r = run(&cfg, |_, _| {}).expect("transfer runs");
    assert!(
        r.clean(messages),
        "{op:?} size {size} mtu {mtu} seed {seed}: completed {} mismatches {} lost {} dup {} errors {} ({:?}) cycles {}\nA {:?}\nB {:?}",
        r.completed, r.mismatches, r.lost, r.duplicated, r.errors, r.first_error, r.cycles, r.counters[0], r.counters[1]
    );
    assert_eq!(r.bytes_verified, size as u64 * messages);
    r
}

#[test]
fn clean_link_every_op() {
    for op in [Op::Write, Op::Send, Op::Read] {
        for (size, mtu) in [(1, 1024), (1024, 1024), (5000, 1024), (65536, 4096), (300, 256)] {
            let r = go(op, size, 12, mtu, LinkConfig::default(), 1);
            assert!(r.counters[1].tx_frames > 0 && r.counters[1].rx_frames > 0);
        }
    }
}

fn lossy(loss: f64) -> LinkConfig {
    LinkConfig { loss, reorder: loss.min(0.1), dup: loss.min(0.05), reorder_delay: 3000, ..LinkConfig::default() }
}

#[test]
fn lossy_links_every_op() {
    let (mut naks, mut retx) = (0, 0);
    for (i, loss) in [0.01, 0.05].into_iter().enumerate() {
        for op in [Op::Write, Op::Send, Op::Read] {
            let r = go(op, 3000, 30, 1024, lossy(loss), 7 + i as u64);
            naks += r.counters[1].nak_seq_sent;
            retx += r.counters[0].retransmits;
        }
    }
    // the HDL responder saw the losses: it sent sequence NAKs, and A went back
    assert!(naks > 0 && retx > 0, "NAKs {naks}, retransmissions {retx}");
}
