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

use roce_sim::cmd::latency::{dma_read_latency, measure, LatencyConfig, LatencyPoint};
use roce_sim::cmd::transfer::Op;

fn points(op: Op) -> Vec<LatencyPoint> {
    let c = LatencyConfig { op, sizes: vec![64, 1024, 4096], mtu: 4096, samples: 3, ..LatencyConfig::default() };
    measure(&c, |_| {}).expect("latency run")
}

/// 64-byte beats of a packet: Ethernet + IPv4 + UDP + BTH + `ext` bytes of extension
/// headers (RETH 16 on a WRITE's first packet, AETH 4 on a READ response) + payload + ICRC.
fn beats(payload: usize, ext: usize) -> u64 {
    (14 + 20 + 8 + 12 + ext + payload + 4).div_ceil(64) as u64
}

#[test]
fn write_latency_hdl_against_its_steps_and_the_model() {
    let l = dma_read_latency();
    let pts = points(Op::Write);
    for p in pts.iter().filter(|p| p.engine == "hdl") {
        let m = pts.iter().find(|m| m.engine == "model" && m.size == p.size).expect("model point");
        eprintln!("{p:?}\n{m:?}");
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
        assert!(p.doorbell_to_wire.min >= l && p.doorbell_to_wire.max < 2 * l, "{p:?}");
        // the completer places the response after its last beat
        assert!(p.wire_to_dma_done.min >= beats(p.packet_payload, 4), "{p:?}");
    }
}
