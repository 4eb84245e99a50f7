//! The host memory budget (roce_model::engine::HostMemBudget) holds through whole transfers,
//! for the engine model and for the Verilated engine's harness alike: goodput capped by the
//! PCIe bandwidth of the direction that carries the data, reads outstanding by the read
//! tags.

use roce_model::engine::HostMemBudget;
use roce_sim::cmd::transfer::{run, Op, TransferConfig, TransferReport};

/// (engine name, which nodes are Verilated).
const ENGINES: [(&str, [bool; 2]); 2] = [("model", [false, false]), ("hdl2", [true, true])];

fn go(op: Op, size: usize, messages: u64, depth: usize, hdl: [bool; 2], host_mem: HostMemBudget) -> TransferReport {
    let cfg = TransferConfig { op, size, messages, depth, hdl, host_mem, ..TransferConfig::default() };
    let r = run(&cfg, |_, _| {}).expect("transfer runs");
    assert!(r.clean(messages), "{op:?} {size} B on {hdl:?}: not clean: {r:?}");
    r
}

/// 16 bytes per cycle (4 GB/s at 250 MHz, 32 Gb/s): well below the 100 Gb/s line.
fn slow(rd: u64, wr: u64) -> HostMemBudget {
    HostMemBudget { rd_bytes_per_cycle: rd, wr_bytes_per_cycle: wr, ..HostMemBudget::default() }
}

/// READs of 64 KiB: the responder's payload reads carry every byte, so goodput is at most
/// the read bandwidth, and with enough reads outstanding close to it.
#[test]
fn read_goodput_is_capped_by_the_read_bandwidth() {
    for (name, hdl) in ENGINES {
        let r = go(Op::Read, 65536, 32, 16, hdl, slow(16, 64));
        let bpc = r.bytes_per_cycle();
        eprintln!("{name}: READ {bpc:.2} B/cycle in {} cycles", r.cycles);
        assert!(bpc <= 16.0, "{name}: {bpc} B/cycle over a 16 B/cycle read direction");
        assert!(bpc >= 0.95 * 16.0, "{name}: {bpc} B/cycle, far below the 16 B/cycle budget");
        // 2 MiB cannot be read faster than the bandwidth, plus one read latency
        assert!(r.cycles >= (32 * 65536) / 16 + 250, "{name}: {} cycles", r.cycles);
    }
}

/// WRITEs of 64 KiB with reads unlimited and writes at 16 B/cycle: the responder's DMA
/// writes carry every byte (the harness throttles the Verilated engine's write data).
#[test]
fn write_goodput_is_capped_by_the_write_bandwidth() {
    for (name, hdl) in ENGINES {
        let r = go(Op::Write, 65536, 32, 16, hdl, slow(64, 16));
        let bpc = r.bytes_per_cycle();
        eprintln!("{name}: WRITE {bpc:.2} B/cycle in {} cycles", r.cycles);
        assert!(bpc <= 16.0, "{name}: {bpc} B/cycle over a 16 B/cycle write direction");
        assert!(bpc >= 0.95 * 16.0, "{name}: {bpc} B/cycle, far below the 16 B/cycle budget");
        // and the read direction was not what held it: unlimited writes go much faster
        let fast = go(Op::Write, 65536, 32, 16, hdl, slow(64, 64));
        assert!(fast.bytes_per_cycle() > 2.0 * bpc, "{name}: {} unthrottled", fast.bytes_per_cycle());
    }
}

/// 64-byte WRITEs with 2 read tags: the requester never has more than 2 reads outstanding,
/// reads wait for tags, and the message rate falls against 32 tags.
#[test]
fn read_tags_bound_the_reads_outstanding() {
    for (name, hdl) in ENGINES {
        let two = go(Op::Write, 64, 512, 64, hdl, HostMemBudget { read_tags: 2, ..HostMemBudget::default() });
        let many = go(Op::Write, 64, 512, 64, hdl, HostMemBudget::default());
        eprintln!(
            "{name}: 2 tags {} cycles (peak {:?}, waits {:?}); 32 tags {} cycles (peak {:?})",
            two.cycles, two.peak_reads, two.tag_waits, many.cycles, many.peak_reads
        );
        assert_eq!(two.peak_reads[0], 2, "{name}: requester reads outstanding with 2 tags");
        assert!(two.tag_waits[0] > 0, "{name}: no read waited for a tag");
        assert!(many.peak_reads[0] > 2 && many.peak_reads[0] <= 32, "{name}: {:?}", many.peak_reads);
        assert!(two.cycles > many.cycles, "{name}: 2 tags {} cycles, 32 tags {}", two.cycles, many.cycles);
    }
}

/// With the budget off, the read latency stays and nothing else limits but the ports: 64
/// KiB READs run at the line rate rather than the 52 B/cycle of PCIe (the line is slower).
#[test]
fn off_is_the_ports_width() {
    let off = HostMemBudget::unlimited(250);
    assert!(!off.is_limited());
    for (name, hdl) in ENGINES {
        let r = go(Op::Read, 4096, 64, 16, hdl, HostMemBudget { read_tags: 1, ..off });
        assert_eq!(r.peak_reads[1], 1, "{name}: the responder with one tag");
        let u = go(Op::Read, 4096, 64, 16, hdl, off);
        assert!(u.peak_reads[1] > 1, "{name}: no tag limit: {:?}", u.peak_reads);
        assert!(u.cycles < r.cycles, "{name}: {} against {} with one tag", u.cycles, r.cycles);
    }
}
