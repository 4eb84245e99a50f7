//! The Verilated engine (`roce_engine`) on the simulated fabric, programmed by roce-driver
//! like the model: node B runs the HDL as the responder of node A's (the model's)
//! requests; every byte is verified where it lands.

use roce_sim::fabric::LinkConfig;
use roce_sim::transfer::{run, Op, TransferConfig};

fn go(op: Op, size: usize, messages: u64, mtu: u32, link: LinkConfig, seed: u64) -> roce_sim::transfer::TransferReport {
    let cfg = TransferConfig { op, size, messages, mtu, link, seed, depth: 8, hdl: [false, true], max_cycles: 200_000_000, ..Default::default() };
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
fn hdl_responder_serves_writes() {
    let r = go(Op::Write, 3000, 8, 1024, LinkConfig::default(), 1);
    eprintln!("{} cycles, A {:?}\nB {:?}", r.cycles, r.counters[0], r.counters[1]);
}
