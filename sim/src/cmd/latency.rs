//! Latency of an idle engine, in cycles, one message at a time:
//!
//! - doorbell → wire: from the cycle the SQ doorbell register write is taken (inline: the
//!   inline doorbell's first beat) to the first beat of the request's first packet on the MAC
//!   TX port (the requester: WQE read by DMA unless inline, the payload read by DMA unless
//!   inline, headers, ICRC);
//! - wire → DMA: from the first beat of a packet taken at the MAC RX port to the first and
//!   to the last beat of its payload's DMA write (the responder placing a WRITE or SEND
//!   packet; with `--op read` the completer placing the first READ response packet);
//! - for the Verilated engine, doorbell → wire in steps: the DMA reads the requester made
//!   (request → last data beat, at its ports) and its own cycles before, between and after
//!   them.
//!
//! - ping-pong (`measure_pingpong`): A posts a SEND, B takes its receive completion and
//!   answers with a SEND of the same size, A takes its receive completion; each leg from the
//!   cycle the post starts (its doorbell write) to the cycle the completion is in the CQ, and
//!   half the round trip, over links of a stated one-way latency.
//!
//! The Verilated engine is measured at its ports ([`crate::net::hdl::PortTimes`]); the engine
//! model gives its estimate (the cycle it makes the frame, the placement it schedules).
//! Node A is the requester, node B the responder; both run the same engine. The frame being
//! measured goes straight from one node to the other (no link), the rest (further packets,
//! ACKs) over the pair's links before the next sample.

use roce_driver::{CqeStatus, RecvWr, SendWr, WorkCompletion, WrOp};
use roce_model::contract::regs::SQ_DB;
use roce_model::engine::HostMemBudget;

use crate::cmd::transfer::Op;
use crate::net::fabric::LinkConfig;
use crate::net::node::{NodeRef, SimNode};
use crate::net::pair::{drv, Pair, PairConfig};
use crate::SimError;

/// What to measure.
#[derive(Clone, Debug)]
pub struct LatencyConfig {
    /// Operation (WRITE, SEND or READ).
    pub op: Op,
    /// Message sizes.
    pub sizes: Vec<usize>,
    /// Path MTU.
    pub mtu: u32,
    /// Samples per size (messages, each on an idle pair).
    pub samples: u32,
    /// Engines: false = the model, true = the Verilated engine (on both nodes).
    pub engines: Vec<bool>,
    /// One-way latency of each link in cycles (ping-pong; the other measurements hand the
    /// measured frame over directly).
    pub link_latency: u64,
    /// Host memory of both nodes.
    pub host_mem: HostMemBudget,
    /// Post the data inline (one WQE through the inline doorbell; sizes up to 64 bytes).
    pub inline: bool,
}

impl Default for LatencyConfig {
    fn default() -> Self {
        LatencyConfig {
            op: Op::Write,
            sizes: vec![64, 1024, 4096],
            mtu: 4096,
            samples: 8,
            engines: vec![false, true],
            link_latency: LinkConfig::default().latency,
            host_mem: HostMemBudget::default(),
            inline: false,
        }
    }
}

/// Minimum, median and maximum of a measured latency, in cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spread {
    /// Smallest sample.
    pub min: u64,
    /// Median sample.
    pub median: u64,
    /// Largest sample.
    pub max: u64,
}

impl std::fmt::Display for Spread {
    /// `min / median / max`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} / {} / {}", self.min, self.median, self.max)
    }
}

impl Spread {
    fn of(v: &mut [u64]) -> Self {
        v.sort_unstable();
        Spread {
            min: v.first().copied().unwrap_or(0),
            median: v.get(v.len() / 2).copied().unwrap_or(0),
            max: v.last().copied().unwrap_or(0),
        }
    }
}

/// One size on one engine.
#[derive(Clone, Debug)]
pub struct LatencyPoint {
    /// "model" or "hdl".
    pub engine: &'static str,
    /// Message size.
    pub size: usize,
    /// Doorbell → first byte of the request on the wire.
    pub doorbell_to_wire: Spread,
    /// First byte of the packet in → first beat of its payload's DMA write.
    pub wire_to_dma_first: Spread,
    /// First byte of the packet in → last beat of its payload's DMA write.
    pub wire_to_dma_done: Spread,
    /// Payload bytes of the measured packet.
    pub packet_payload: usize,
    /// The Verilated requester's doorbell → wire of the last sample in steps, from its DMA
    /// reads at the ports: doorbell → first read request, that read (request → last data
    /// beat), → the next read's request, ..., last read's data → wire. Empty for the model;
    /// one step (the whole) when no read was made (inline).
    pub doorbell_steps: Vec<u64>,
}

/// The steps of `doorbell_steps` from the reads logged on `node` between the doorbell `db`
/// and the request's first beat on the wire `wire`.
fn doorbell_steps(node: &NodeRef, db: u64, wire: u64) -> Vec<u64> {
    let n = node.borrow();
    let Some(h) = n.hdl.as_ref() else { return Vec::new() };
    let mut steps = Vec::new();
    let mut at = db;
    for r in h.times.dma_reads.iter().filter(|r| r.request >= db && r.request < wire) {
        let Some(done) = r.done.filter(|&d| d <= wire) else { continue };
        steps.push(r.request.saturating_sub(at));
        steps.push(done - r.request);
        at = done;
    }
    steps.push(wire.saturating_sub(at));
    steps
}

/// Cycles a node may take for one step before the measurement gives up.
const LIMIT: u64 = 200_000;

/// Run `node` alone until it transmits; the frame and the cycle of its first beat.
fn run_until_tx(node: &NodeRef) -> Result<(Vec<u8>, u64), SimError> {
    let mut n = node.borrow_mut();
    let end = n.now + LIMIT;
    loop {
        if let Some(f) = n.tx() {
            let start = match n.hdl.as_ref() {
                Some(h) => h.times.tx.map_or(n.now, |t| t.0),
                None => n.now,
            };
            return Ok((f, start));
        }
        let t = match n.hdl {
            Some(_) => n.now + 1,
            None => n.next_event().map_or(n.now + 1, |e| e.max(n.now + 1)),
        };
        if t > end {
            return Err(SimError::Config(format!("latency: no frame within {LIMIT} cycles")));
        }
        n.advance(t);
    }
}

/// Deliver `frame` to `node` now and run it until `bytes` of payload are written into
/// `[lo, hi)`: (first beat in, first write beat, last write beat).
fn place(node: &NodeRef, frame: &[u8], lo: u64, hi: u64, bytes: usize) -> Result<(u64, u64, u64), SimError> {
    let mut n = node.borrow_mut();
    let t0 = n.now;
    if let Some(h) = n.hdl.as_mut() {
        h.times.dma_writes.clear();
        h.times.rx = None;
    }
    n.engine.last_placement = None;
    n.rx(frame);
    if n.hdl.is_none() {
        let (a, b, _) =
            n.engine.last_placement.ok_or_else(|| SimError::Config("latency: the model placed no payload".into()))?;
        return Ok((t0, a, b));
    }
    let end = t0 + LIMIT;
    loop {
        let t = n.now + 1;
        n.advance(t);
        let Some(h) = n.hdl.as_ref() else { break };
        let w: Vec<_> = h.times.dma_writes.iter().filter(|w| w.0 >= lo && w.0 < hi).collect();
        if w.iter().map(|w| w.1).sum::<usize>() >= bytes {
            let first = w.iter().map(|w| w.2).min().unwrap_or(t);
            let last = w.iter().map(|w| w.3).max().unwrap_or(t);
            let rx = h.times.rx.map_or(t0, |r| r.0);
            return Ok((rx, first, last));
        }
        if t > end {
            break;
        }
    }
    Err(SimError::Config(format!("latency: {bytes} payload bytes not written within {LIMIT} cycles")))
}

/// Cycles without frames or DMA in flight after which the pair counts as idle.
const QUIET: u64 = 2_000;

/// Both nodes to the same cycle, run the pair until it is quiet, and take the completions
/// (every one must be a success).
fn settle(p: &mut Pair) -> Result<(), SimError> {
    p.now = p.a.node.borrow().clock().max(p.b.node.borrow().clock()).max(p.now);
    let end = p.now + LIMIT * 10;
    let mut quiet_since = p.now;
    loop {
        p.exchange();
        let hdl_busy = [&p.a.node, &p.b.node].iter().any(|n| n.borrow().hdl.as_ref().is_some_and(|h| h.busy()));
        if hdl_busy || p.ab.next_arrival().is_some() || p.ba.next_arrival().is_some() {
            quiet_since = p.now;
        }
        if p.now - quiet_since >= QUIET {
            break;
        }
        if p.now > end {
            return Err(SimError::Config("latency: the pair did not go quiet".into()));
        }
        p.now = p.next_event().map_or(p.now + 1, |t| t.max(p.now + 1)).min(quiet_since + QUIET);
        for n in [&p.a.node, &p.b.node] {
            n.borrow_mut().advance(p.now);
        }
    }
    let mut wcs = [WorkCompletion::EMPTY; 8];
    for e in [&mut p.a, &mut p.b] {
        loop {
            let k = e.dev.poll_cq(e.cq, &mut wcs).map_err(drv)?;
            if let Some(w) = wcs[..k].iter().find(|w| w.status != CqeStatus::Success) {
                return Err(SimError::Config(format!("latency: a completion failed: {w:?}")));
            }
            if k == 0 {
                break;
            }
        }
    }
    Ok(())
}

/// The cycle of the doorbell of the post just made on `node`: its register write (`SQ_DB`),
/// or with `inline` its inline doorbell; the model's current cycle.
fn doorbell_cycle(node: &NodeRef, inline: bool) -> Result<u64, SimError> {
    let n = node.borrow();
    let Some(h) = n.hdl.as_ref() else { return Ok(n.now) };
    match (inline, h.times.bf_write, h.times.axil_write) {
        (true, Some(c), _) => Ok(c),
        (false, _, Some((off, c))) if off == SQ_DB => Ok(c),
        (_, bf, w) => Err(SimError::Config(format!(
            "latency: the post made no {} (last register write {w:?}, inline doorbell {bf:?})",
            if inline { "inline doorbell" } else { "SQ doorbell" }
        ))),
    }
}

/// One message: (doorbell → wire, wire → first DMA beat, wire → last DMA beat, payload).
fn sample(
    p: &mut Pair,
    op: Op,
    size: usize,
    mtu: u32,
    k: u64,
    inline: bool,
) -> Result<(u64, u64, u64, usize, Vec<u64>), SimError> {
    settle(p)?;
    let (a, b) = (&mut p.a, &mut p.b);
    for n in [&a.node, &b.node] {
        let mut n = n.borrow_mut();
        if let Some(h) = n.hdl.as_mut() {
            h.log_times = true;
            h.times = Default::default();
        }
    }
    let data: Vec<u8> = (0..size).map(|i| (i as u64 * 7 + k) as u8).collect();
    let op_wr = match op {
        Op::Write => {
            a.dev.write_buf(&a.buf, 0, &data);
            WrOp::Write { remote_addr: b.mr.va, rkey: b.mr.rkey }
        }
        Op::Send => {
            a.dev.write_buf(&a.buf, 0, &data);
            let sge = [b.mr.sge(0, size as u32)];
            b.dev.post_recv(b.qp, &[RecvWr { wr_id: k, sges: &sge }]).map_err(drv)?;
            WrOp::Send
        }
        Op::Read => {
            b.dev.write_buf(&b.buf, 0, &data);
            WrOp::Read { remote_addr: b.mr.va, rkey: b.mr.rkey }
        }
    };
    let sge = [a.mr.sge(0, size as u32)];
    let mut wr = SendWr::new(k, op_wr, &sge);
    if inline {
        wr.sges = &[];
        wr.inline = Some(&data);
    }
    a.dev.post_send(a.qp, &[wr]).map_err(drv)?;
    let db = doorbell_cycle(&a.node, inline)?;
    let (req, wire) = run_until_tx(&a.node)?;
    let steps = doorbell_steps(&a.node, db, wire);
    let plen = size.min(mtu as usize);
    let (rx, first, last) = match op {
        Op::Write | Op::Send => {
            let t = b.node.borrow().now.max(wire);
            b.node.borrow_mut().advance(t);
            place(&b.node, &req, b.buf.iova, b.buf.iova + b.buf.len as u64, plen)?
        }
        Op::Read => {
            let t = b.node.borrow().now.max(wire);
            b.node.borrow_mut().advance(t);
            b.node.borrow_mut().rx(&req);
            let (rsp, w2) = run_until_tx(&b.node)?;
            let t = a.node.borrow().now.max(w2);
            a.node.borrow_mut().advance(t);
            place(&a.node, &rsp, a.buf.iova, a.buf.iova + a.buf.len as u64, plen)?
        }
    };
    // the rest of the message (and its ACK) over the links
    settle(p)?;
    Ok((wire - db, first.saturating_sub(rx), last.saturating_sub(rx), plen, steps))
}

/// Measure every size on every engine; `progress` is told each finished point.
pub fn measure(c: &LatencyConfig, mut progress: impl FnMut(&LatencyPoint)) -> Result<Vec<LatencyPoint>, SimError> {
    if c.sizes.contains(&0) {
        return Err(SimError::Config("latency: sizes must be at least 1 byte (a packet with payload)".into()));
    }
    let mut out = Vec::new();
    for &hdl in &c.engines {
        let buf_len = c.sizes.iter().copied().max().unwrap_or(64).max(4096);
        let cfg = PairConfig {
            mtu: c.mtu,
            depth: 16,
            buf_len,
            hdl: [hdl, hdl],
            link: LinkConfig::default(),
            host_mem: c.host_mem,
            ..PairConfig::default()
        };
        let mut p = Pair::new(&cfg)?;
        let mut k = 0u64;
        for &size in &c.sizes {
            let (mut dw, mut f, mut d) = (Vec::new(), Vec::new(), Vec::new());
            let mut plen = 0;
            let mut steps = Vec::new();
            for _ in 0..c.samples.max(1) {
                let (x, y, z, n, st) = sample(&mut p, c.op, size, c.mtu, k, c.inline)?;
                k += 1;
                dw.push(x);
                f.push(y);
                d.push(z);
                plen = n;
                steps = st;
            }
            let pt = LatencyPoint {
                engine: if hdl { "hdl" } else { "model" },
                size,
                doorbell_to_wire: Spread::of(&mut dw),
                wire_to_dma_first: Spread::of(&mut f),
                wire_to_dma_done: Spread::of(&mut d),
                packet_payload: plen,
                doorbell_steps: steps,
            };
            progress(&pt);
            out.push(pt);
        }
    }
    Ok(out)
}

/// The measured points as a table.
pub fn table(c: &LatencyConfig, pts: &[LatencyPoint]) -> String {
    let mut s = format!(
        "latency, {:?}{}, MTU {}, {} samples per size, cycles at 250 MHz (min / median / max)\n{}\n",
        c.op,
        if c.inline { " inline" } else { "" },
        c.mtu,
        c.samples,
        c.host_mem.describe(250.0)
    );
    s.push_str("| engine | size | doorbell -> wire | wire -> DMA first beat | wire -> DMA done | payload of the packet |\n|---|--:|--:|--:|--:|--:|\n");
    for p in pts {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            p.engine, p.size, p.doorbell_to_wire, p.wire_to_dma_first, p.wire_to_dma_done, p.packet_payload
        ));
    }
    let hdl: Vec<&LatencyPoint> = pts.iter().filter(|p| !p.doorbell_steps.is_empty()).collect();
    if !hdl.is_empty() {
        s.push_str(
            "\nhdl doorbell -> wire in steps (last sample; [a DMA read: request -> last data beat], \
             between them the engine's own cycles):\n",
        );
        for p in hdl {
            let parts: Vec<String> = p
                .doorbell_steps
                .iter()
                .enumerate()
                .map(|(i, v)| if i % 2 == 1 { format!("[{v}]") } else { v.to_string() })
                .collect();
            s.push_str(&format!(
                "  {:>5} B: {} = {}\n",
                p.size,
                parts.join(" + "),
                p.doorbell_steps.iter().sum::<u64>()
            ));
        }
    }
    s
}

/// The DMA read latency of a node built by default (what the latency figures contain).
pub fn dma_read_latency() -> u64 {
    SimNode::new(Default::default()).engine.cfg.host_mem.read_latency
}

/// One ping-pong size on one engine, in cycles.
#[derive(Clone, Debug)]
pub struct PingPongPoint {
    /// "model" or "hdl".
    pub engine: &'static str,
    /// Message size.
    pub size: usize,
    /// A's post of the SEND → B's receive completion in B's CQ.
    pub a_to_b: Spread,
    /// B's post of the answer → A's receive completion in A's CQ.
    pub b_to_a: Spread,
    /// Half the round trip: (A's post → A's receive completion) / 2.
    pub half_rtt: Spread,
}

/// Run the pair until the CQ of B (`on_b`) or A holds a receive completion; the cycle it is
/// seen. Send completions met on the way are taken (they must be successes).
fn run_until_recv(p: &mut Pair, on_b: bool) -> Result<u64, SimError> {
    let end = p.now + LIMIT;
    let mut wcs = [WorkCompletion::EMPTY; 4];
    loop {
        p.exchange();
        let e = if on_b { &mut p.b } else { &mut p.a };
        let k = e.dev.poll_cq(e.cq, &mut wcs).map_err(drv)?;
        if let Some(w) = wcs[..k].iter().find(|w| w.status != CqeStatus::Success) {
            return Err(SimError::Config(format!("ping-pong: a completion failed: {w:?}")));
        }
        // receive opcodes have bit 7 set
        if wcs[..k].iter().any(|w| w.opcode.code() & 0x80 != 0) {
            return Ok(p.now);
        }
        if p.now > end {
            return Err(SimError::Config(format!("ping-pong: no receive completion within {LIMIT} cycles")));
        }
        p.now = p.next_event().map_or(p.now + 1, |t| t.max(p.now + 1));
        for n in [&p.a.node, &p.b.node] {
            n.borrow_mut().advance(p.now);
        }
    }
}

/// One ping-pong of `size` bytes: (A post → B completion, B post → A completion, round trip).
/// A sends from its buffer's start into B's; B answers with what it received into the
/// second half of A's buffer, which must then hold A's bytes.
fn pingpong_sample(p: &mut Pair, size: usize, k: u64, inline: bool) -> Result<(u64, u64, u64), SimError> {
    let half = p.a.buf.len as u64 / 2;
    let rb = [p.b.mr.sge(0, size as u32)];
    p.b.dev.post_recv(p.b.qp, &[RecvWr { wr_id: k, sges: &rb }]).map_err(drv)?;
    let ra = [p.a.mr.sge(half, size as u32)];
    p.a.dev.post_recv(p.a.qp, &[RecvWr { wr_id: k, sges: &ra }]).map_err(drv)?;
    let data: Vec<u8> = (0..size).map(|i| (i as u64 * 13 + k) as u8).collect();
    p.a.dev.write_buf(&p.a.buf, 0, &data);
    p.a.dev.write_buf(&p.a.buf, half as usize, &vec![0u8; size]);
    settle(p)?;
    let t0 = p.now;
    let sa = [p.a.mr.sge(0, size as u32)];
    let mut wa = SendWr::new(k, WrOp::Send, &sa);
    if inline {
        wa.sges = &[];
        wa.inline = Some(&data);
    }
    p.a.dev.post_send(p.a.qp, &[wa]).map_err(drv)?;
    let t1 = run_until_recv(p, true)?;
    // B answers with what it received (inline: read back from its buffer first)
    let mut got = vec![0u8; size];
    p.b.dev.read_buf(&p.b.buf, 0, &mut got);
    let sb = [p.b.mr.sge(0, size as u32)];
    let mut wb = SendWr::new(k, WrOp::Send, &sb);
    if inline {
        wb.sges = &[];
        wb.inline = Some(&got);
    }
    p.b.dev.post_send(p.b.qp, &[wb]).map_err(drv)?;
    let t2 = run_until_recv(p, false)?;
    settle(p)?;
    let mut back = vec![0u8; size];
    p.a.dev.read_buf(&p.a.buf, half as usize, &mut back);
    if back != data {
        return Err(SimError::Config(format!("ping-pong: {size} bytes came back different")));
    }
    Ok((t1 - t0, t2 - t1, t2 - t0))
}

/// Ping-pong every size on every engine (SEND/RECV, both nodes the same engine).
pub fn measure_pingpong(
    c: &LatencyConfig,
    mut progress: impl FnMut(&PingPongPoint),
) -> Result<Vec<PingPongPoint>, SimError> {
    if c.sizes.contains(&0) {
        return Err(SimError::Config("ping-pong: sizes must be at least 1 byte".into()));
    }
    let mut out = Vec::new();
    for &hdl in &c.engines {
        let buf_len = (2 * c.sizes.iter().copied().max().unwrap_or(64)).max(4096);
        let cfg = PairConfig {
            mtu: c.mtu,
            depth: 16,
            buf_len,
            hdl: [hdl, hdl],
            link: LinkConfig { latency: c.link_latency, ..LinkConfig::default() },
            host_mem: c.host_mem,
            ..PairConfig::default()
        };
        let mut p = Pair::new(&cfg)?;
        let mut k = 0u64;
        for &size in &c.sizes {
            let (mut ab, mut ba, mut rt) = (Vec::new(), Vec::new(), Vec::new());
            for _ in 0..c.samples.max(1) {
                let (x, y, z) = pingpong_sample(&mut p, size, k, c.inline)?;
                k += 1;
                ab.push(x);
                ba.push(y);
                rt.push(z.div_ceil(2));
            }
            let pt = PingPongPoint {
                engine: if hdl { "hdl" } else { "model" },
                size,
                a_to_b: Spread::of(&mut ab),
                b_to_a: Spread::of(&mut ba),
                half_rtt: Spread::of(&mut rt),
            };
            progress(&pt);
            out.push(pt);
        }
    }
    Ok(out)
}

/// The ping-pong points as a table.
pub fn pingpong_table(c: &LatencyConfig, pts: &[PingPongPoint]) -> String {
    let mut s = format!(
        "ping-pong (SEND/RECV{}), MTU {}, {} samples per size, cycles at 250 MHz (min / median / max), \
         link latency {} cycles each way\n{}\n",
        if c.inline { ", inline" } else { "" },
        c.mtu,
        c.samples,
        c.link_latency,
        c.host_mem.describe(250.0)
    );
    s.push_str(
        "| engine | size | A post -> B completion | B post -> A completion | half round trip | half round trip - link |\n\
         |---|--:|--:|--:|--:|--:|\n",
    );
    for p in pts {
        s.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            p.engine,
            p.size,
            p.a_to_b,
            p.b_to_a,
            p.half_rtt,
            p.half_rtt.median.saturating_sub(c.link_latency)
        ));
    }
    s
}
