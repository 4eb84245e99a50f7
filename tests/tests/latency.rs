//! `roce-sim latency`: doorbell → wire and wire → DMA on an idle engine, the Verilated
//! engine measured at its ports beside the model's estimate.
//!
//! What must hold (from the blocks' headers, not from a previous run): the requester reads
//! the WQE and then the payload by DMA before the first byte goes out, so doorbell → wire is
//! at least two DMA read latencies; the responder places a packet's payload only after the
//! packet's last beat (its ICRC is checked at the end), so wire → DMA is at least the
//! packet's beats; an idle engine does the same thing each time (a spread of a few cycles
//! at most); and the model's estimate stays within 20 % of the HDL for WRITE, where the
//! two do the same steps.

use roce_sim::cmd::latency::{dma_read_latency, measure, measure_pingpong, LatencyConfig, LatencyPoint};
use roce_sim::cmd::transfer::Op;

fn points(op: Op) -> Vec<LatencyPoint> {
    let c = LatencyConfig {
        op,
        sizes: vec![64, 1024, 4096],
        mtu: 4096,
        samples: 3,
        engines: vec![false, true],
        ..Default::default()
    };
    measure(&c, |_| {}).expect("latency run")
}

/// 64-byte beats of a packet: Ethernet + IPv4 + UDP + BTH + `ext` bytes of extension
/// headers (RETH 16 on a WRITE's first packet, AETH 4 on a READ response) + payload + ICRC.
fn beats(payload: usize, ext: usize) -> u64 {
    (14 + 20 + 8 + 12 + ext + payload + 4).div_ceil(64) as u64
}

/// The HDL point's doorbell → wire in steps: `reads` DMA reads (the odd steps) of at least
/// the DMA latency each, the engine's own cycles between them, and the steps add up to the
/// last sample's doorbell → wire (within the spread); the model has none.
fn check_steps(p: &LatencyPoint, reads: usize, l: u64) {
    if p.engine != "hdl" {
        assert!(p.doorbell_steps.is_empty(), "{p:?}");
        return;
    }
    let st = &p.doorbell_steps;
    assert_eq!(st.len(), 2 * reads + 1, "{reads} DMA reads expected: {p:?}");
    for r in st.iter().skip(1).step_by(2) {
        assert!(*r >= l, "a DMA read shorter than its latency: {p:?}");
    }
    let sum: u64 = st.iter().sum();
    let d = p.doorbell_to_wire;
    assert!(sum >= d.min && sum <= d.max, "steps {st:?} against doorbell -> wire {d:?}");
}

#[test]
fn write_latency_hdl_against_its_steps_and_the_model() {
    let l = dma_read_latency();
    let pts = points(Op::Write);
    for p in pts.iter().filter(|p| p.engine == "hdl") {
        let m = pts.iter().find(|m| m.engine == "model" && m.size == p.size).expect("model point");
        eprintln!("{p:?}\n{m:?}");
        check_steps(p, 2, l);
        let d = p.doorbell_to_wire;
        assert!(d.min >= 2 * l, "doorbell -> wire {d:?} is less than two DMA reads ({l} cycles each)");
        assert!(d.max <= 2 * l + 200 + 2 * p.size.div_ceil(64) as u64, "doorbell -> wire {d:?}");
        assert!(d.max - d.min <= 4, "an idle engine varies by a few cycles at most: {d:?}");
        let w = p.wire_to_dma_done;
        assert!(w.min >= beats(p.packet_payload, 16), "wire -> DMA {w:?} is shorter than the packet");
        assert!(p.wire_to_dma_first.max <= w.min, "first beat after last: {p:?}");
        for (h, e) in [(d.median, m.doorbell_to_wire.median), (w.median, m.wire_to_dma_done.median)] {
            let err = (h as f64 - e as f64).abs() / h as f64;
            assert!(err < 0.2 || h.abs_diff(e) <= 25, "model estimate {e} against HDL {h} ({p:?} / {m:?})");
        }
    }
}

#[test]
fn read_latency_counts_the_request_and_the_response() {
    let l = dma_read_latency();
    for p in points(Op::Read).iter().filter(|p| p.engine == "hdl") {
        eprintln!("{p:?}");
        // a READ request carries no payload: the WQE read, headers
        check_steps(p, 1, l);
        assert!(p.doorbell_to_wire.min >= l && p.doorbell_to_wire.max < 2 * l, "{p:?}");
        // the completer places the response after its last beat
        assert!(p.wire_to_dma_done.min >= beats(p.packet_payload, 4), "{p:?}");
    }
}

/// Ping-pong: each leg is at least the link, the WQE read and the payload read; half the
/// round trip is the mean of the two legs; the payload comes back intact (checked by the
/// measurement); for 8 bytes (where the two take the same steps) the model's estimate stays
/// within 20 % of the HDL. (At 4 KiB the HDL is slower: it reads, checks and writes the
/// payload store-and-forward where the model overlaps; BENCHMARKS.md gives both.)
#[test]
fn pingpong_legs_and_half_round_trip() {
    let l = dma_read_latency();
    let c = LatencyConfig {
        op: Op::Send,
        sizes: vec![8, 4096],
        samples: 3,
        engines: vec![false, true],
        link_latency: 100,
        ..Default::default()
    };
    let pts = measure_pingpong(&c, |_| {}).expect("ping-pong run");
    for p in &pts {
        eprintln!("{p:?}");
        for leg in [p.a_to_b, p.b_to_a] {
            assert!(leg.min >= c.link_latency + 2 * l, "a leg is shorter than the link and two DMA reads: {p:?}");
        }
        assert!(p.half_rtt.median.abs_diff((p.a_to_b.median + p.b_to_a.median) / 2) <= 2, "{p:?}");
        let small = pts.iter().find(|q| q.engine == p.engine && q.size == 8).expect("8-byte point");
        assert!(p.size == 8 || p.half_rtt.median > small.half_rtt.median, "4 KiB not slower than 8 B: {p:?}");
    }
    for h in pts.iter().filter(|p| p.engine == "hdl" && p.size == 8) {
        let m = pts.iter().find(|m| m.engine == "model" && m.size == h.size).expect("model point");
        let err = (h.half_rtt.median as f64 - m.half_rtt.median as f64).abs() / h.half_rtt.median as f64;
        assert!(err < 0.2, "model {m:?} against HDL {h:?}");
    }
}

/// Inline doorbells: the WQE and its payload come with the doorbell, so a 64-byte inline
/// WRITE reaches the wire without a DMA read (less than one DMA latency after its doorbell,
/// on both engines), and an inline ping-pong leg is shorter than two DMA reads.
#[test]
fn inline_doorbells_skip_the_dma_reads() {
    let l = dma_read_latency();
    let c = LatencyConfig {
        op: Op::Write,
        sizes: vec![8, 64],
        samples: 3,
        engines: vec![false, true],
        inline: true,
        ..Default::default()
    };
    for p in measure(&c, |_| {}).expect("inline latency run") {
        eprintln!("{p:?}");
        assert!(p.doorbell_to_wire.max < l, "inline doorbell -> wire {p:?} took a DMA read");
        check_steps(&p, 0, l);
        assert!(p.doorbell_to_wire.max - p.doorbell_to_wire.min <= 4, "{p:?}");
    }
    let c = LatencyConfig { op: Op::Send, link_latency: 100, sizes: vec![8], ..c };
    for p in measure_pingpong(&c, |_| {}).expect("inline ping-pong run") {
        eprintln!("{p:?}");
        for leg in [p.a_to_b, p.b_to_a] {
            assert!(leg.min >= c.link_latency && leg.max < c.link_latency + 2 * l, "{p:?}");
        }
    }
}
