//! Two model engines, driven by roce-driver, over a simulated link: every op, every byte.

use roce_sim::cmd::transfer::{run, Op, TransferConfig};
use roce_sim::net::fabric::LinkConfig;

fn go(
    op: Op,
    size: usize,
    messages: u64,
    mtu: u32,
    link: LinkConfig,
    seed: u64,
) -> roce_sim::cmd::transfer::TransferReport {
    let cfg = TransferConfig {
        op,
        size,
        messages,
        mtu,
        link,
        seed,
        depth: 8,
        max_cycles: 2_000_000_000,
        ..Default::default()
    };
    let r = run(&cfg, |_, _| {}).expect("transfer runs");
    assert!(
        r.clean(messages),
        "{op:?} size {size} mtu {mtu} seed {seed}: completed {} mismatches {} lost {} dup {} errors {} ({:?}) cycles {}\nA {:?}\nB {:?}\nlinks {:?}",
        r.completed, r.mismatches, r.lost, r.duplicated, r.errors, r.first_error, r.cycles, r.counters[0], r.counters[1], r.links
    );
    assert_eq!(r.bytes_verified, size as u64 * messages);
    r
}

#[test]
fn clean_link_every_op() {
    for op in [Op::Send, Op::Write, Op::Read] {
        for (size, mtu) in [(1, 1024), (1024, 1024), (5000, 1024), (65536, 4096), (300, 256)] {
            go(op, size, 20, mtu, LinkConfig::default(), 1);
        }
    }
}

fn lossy(loss: f64) -> LinkConfig {
    LinkConfig { loss, reorder: loss.min(0.1), dup: loss.min(0.05), reorder_delay: 3000, ..LinkConfig::default() }
}

#[test]
fn loss_matrix_every_op() {
    for loss in [0.01, 0.05, 0.20] {
        for op in [Op::Send, Op::Write, Op::Read] {
            for (i, (size, mtu)) in [(3000, 1024), (100, 256), (20000, 4096)].into_iter().enumerate() {
                go(op, size, 40, mtu, lossy(loss), 7 + i as u64);
            }
        }
    }
}
