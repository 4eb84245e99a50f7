//! `roce-sim transfer`: two engines over an impaired link, driven by `roce-driver`, moving a
//! workload and verifying every byte.
//!
//! Node A is the requester. For `send`, B keeps receive WQEs posted and A sends; for
//! `write`, A writes into B's memory; for `read`, A reads from it. Messages use a ring of
//! `slots` buffers on each side; message `i` carries a pattern derived from `(seed, i)`, and
//! is checked where it lands when its completion arrives (on B for SEND, in B's memory on
//! A's completion for WRITE, in A's buffer for READ). Anything missing, extra, out of order
//! or different is counted, and the run fails if any is.

use std::collections::VecDeque;

use roce_driver::{CqeStatus, RecvWr, SendWr, WorkCompletion, WrOp};
use roce_model::engine::{Counters, HostMemBudget, Profile};

use crate::net::fabric::{LinkConfig, LinkStats};
use crate::net::hdl::HdlConfig;
use crate::net::pair::{drv, Pair, PairConfig};
use crate::net::shadow::{Divergence, ShadowStats};
use crate::SimError;

/// The operation a transfer repeats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// SEND into posted receives.
    Send,
    /// RDMA WRITE.
    Write,
    /// RDMA READ.
    Read,
}

/// A transfer workload.
#[derive(Clone, Debug)]
pub struct TransferConfig {
    /// Operation.
    pub op: Op,
    /// Message size in bytes.
    pub size: usize,
    /// Number of messages.
    pub messages: u64,
    /// Path MTU in bytes.
    pub mtu: u32,
    /// Messages in flight (and buffer slots on each side).
    pub depth: usize,
    /// Link impairments (both directions; each gets its own RNG stream).
    pub link: LinkConfig,
    /// Seed of the data patterns and of the link.
    pub seed: u64,
    /// Give up after this many simulated cycles.
    pub max_cycles: u64,
    /// Use IPv6 instead of IPv4.
    pub ipv6: bool,
    /// RoCEv1 (Ethertype 0x8915 + GRH) instead of RoCEv2.
    pub rocev1: bool,
    /// Local ACK timeout code (4.096 µs × 2^timeout).
    pub timeout: u8,
    /// Capture every frame on the link (A->B and B->A).
    pub capture: bool,
    /// Which nodes run the Verilated engine instead of the model: [A (requester), B].
    pub hdl: [bool; 2],
    /// Cosim: the HDL nodes run the model beside the Verilated engine (with this harness
    /// configuration) and the run stops at the first divergence.
    pub cosim: Option<HdlConfig>,
    /// Cosim self-check: flip a bit of the model's copy of B's buffer at this offset once
    /// the pair is set up, so the comparison must find a divergence (tests prove with it
    /// that the comparison can fail).
    pub model_fault: Option<u64>,
    /// Random backpressure on every MAC and DMA port of the HDL nodes.
    pub stall: f64,
    /// Whose choices the nodes running the model alone make (`Profile::Rxe`: like Linux
    /// Soft-RoCE, the peer users meet).
    pub peer: Profile,
    /// Host memory of both nodes.
    pub host_mem: HostMemBudget,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig {
            op: Op::Write,
            size: 65536,
            messages: 64,
            mtu: 4096,
            depth: 16,
            link: LinkConfig::default(),
            seed: 1,
            max_cycles: 4_000_000_000,
            ipv6: false,
            rocev1: false,
            timeout: 8,
            hdl: [false, false],
            cosim: None,
            model_fault: None,
            stall: 0.0,
            capture: false,
            peer: Profile::Engine,
            host_mem: HostMemBudget::default(),
        }
    }
}

/// The outcome of a transfer.
#[derive(Clone, Debug, Default)]
pub struct TransferReport {
    /// Messages whose completion arrived with success.
    pub completed: u64,
    /// Bytes checked against the expected pattern.
    pub bytes_verified: u64,
    /// Messages whose data differed.
    pub mismatches: u64,
    /// Messages that never completed.
    pub lost: u64,
    /// Completions that were not expected (duplicates, unknown ids).
    pub duplicated: u64,
    /// Completions with an error status.
    pub errors: u64,
    /// First error status seen.
    pub first_error: Option<CqeStatus>,
    /// Simulated cycles from the first post to the last completion.
    pub cycles: u64,
    /// (cycle from the first post, messages completed) when a quarter and when three
    /// quarters of the messages had completed: the steady state lies between them, without
    /// the start and the tail.
    pub quartiles: Option<((u64, u64), (u64, u64))>,
    /// Engine counters of A and B.
    pub counters: [Counters; 2],
    /// Link statistics A->B and B->A.
    pub links: [LinkStats; 2],
    /// Clock of the engines in MHz.
    pub clock_mhz: f64,
    /// Captured frames: (cycle, direction 0 = A->B, frame).
    pub capture: Vec<(u64, u8, Vec<u8>)>,
    /// ACK/NAKs each node's engine model (A, B) still owed when the run stopped (0 for a
    /// Verilated node).
    pub owed_acks: [usize; 2],
    /// Most DMA reads each node (A, B) had outstanding at once.
    pub peak_reads: [usize; 2],
    /// How often each node's DMA reads waited for a read tag: the model counts reads that
    /// waited, the Verilated engine's harness the cycles its read request port was held.
    pub tag_waits: [u64; 2],
    /// Cosim: what was compared at each HDL node (None: not a cosim node).
    pub cosim: [Option<ShadowStats>; 2],
    /// Cosim: the counters of the model that ran beside each HDL node (None: not a cosim
    /// node), to compare with the HDL's in `counters`.
    pub model_counters: [Option<Counters>; 2],
    /// Cosim: the first divergence between the HDL and the model (node index, divergence).
    pub divergence: Option<(usize, Divergence)>,
}

impl TransferReport {
    /// Goodput in bytes per cycle.
    pub fn bytes_per_cycle(&self) -> f64 {
        self.bytes_verified as f64 / self.cycles.max(1) as f64
    }
    /// Goodput in Gb/s at the engines' clock.
    pub fn gbps(&self) -> f64 {
        self.bytes_per_cycle() * 8.0 * self.clock_mhz / 1000.0
    }
    /// Goodput in Gb/s between the first and the third quartile of completions (the steady
    /// state; None with fewer than 8 messages).
    pub fn steady_gbps(&self, messages: u64, size: usize) -> Option<f64> {
        let ((c1, n1), (c3, n3)) = self.quartiles?;
        if messages < 8 || c3 <= c1 || n3 <= n1 {
            return None;
        }
        let bytes = (n3 - n1) * size as u64;
        Some(bytes as f64 / (c3 - c1) as f64 * 8.0 * self.clock_mhz / 1000.0)
    }
    /// Whether every message arrived once, intact.
    pub fn clean(&self, messages: u64) -> bool {
        self.completed == messages && self.mismatches == 0 && self.lost == 0 && self.duplicated == 0 && self.errors == 0
    }
}

/// The byte pattern of message `i`.
pub fn pattern(seed: u64, i: u64, out: &mut [u8]) {
    let mut x = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in out.chunks_mut(8) {
        // splitmix64
        x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

fn diverged(pair: &Pair) -> bool {
    [&pair.a.node, &pair.b.node].iter().any(|n| n.borrow().shadow.as_ref().is_some_and(|s| s.divergence.is_some()))
}

/// Run a transfer; `progress` is called now and then with (messages completed, total).
pub fn run(cfg: &TransferConfig, mut progress: impl FnMut(u64, u64)) -> Result<TransferReport, SimError> {
    if cfg.size == 0 && cfg.op == Op::Read {
        return Err(SimError::Config("zero-length READs carry nothing to verify".into()));
    }
    if cfg.depth == 0 || cfg.depth > 4096 {
        return Err(SimError::Config(format!("depth {} out of range 1..=4096", cfg.depth)));
    }
    // Buffer slots per side: `depth`, reused. Cosim READs use a slot per message instead: a
    // duplicate READ that arrives after its message completed is re-executed by the
    // responder, and if the host had rewritten the slot meanwhile, what it returns depends on
    // when the engine read it (the HDL and the model read at different cycles).
    let slots =
        if cfg.cosim.is_some() && cfg.op == Op::Read { cfg.messages.max(cfg.depth as u64) } else { cfg.depth as u64 };
    if (cfg.size.max(8) as u64).saturating_mul(slots) > 1 << 28 {
        return Err(SimError::Config(format!(
            "cosim READs keep every message's source: {} x {} B is over 256 MiB",
            cfg.messages, cfg.size
        )));
    }
    let pcfg = PairConfig {
        mtu: cfg.mtu,
        depth: cfg.depth as u32,
        buf_len: cfg.size.max(8) * slots as usize,
        ipv6: cfg.ipv6,
        rocev1: cfg.rocev1,
        timeout: cfg.timeout,
        link: cfg.link,
        seed: cfg.seed,
        hdl: cfg.hdl,
        cosim: cfg.cosim.clone(),
        stall: cfg.stall,
        peer: cfg.peer,
        host_mem: cfg.host_mem,
        ..PairConfig::default()
    };
    let mut pair = Pair::new(&pcfg)?;
    if cfg.capture {
        pair.capture = Some(Vec::new());
    }
    if cfg.model_fault.is_some() && (cfg.op != Op::Read || pair.b.node.borrow().shadow.is_none()) {
        return Err(SimError::Config(
            "model_fault is for cosim READs (it changes the model's copy of a READ source)".into(),
        ));
    }
    let mut rep = TransferReport { clock_mhz: pair.a.node.borrow().engine.cfg.clock_mhz, ..Default::default() };
    let n = cfg.messages;
    let size = cfg.size;
    let slot_len = size.max(8);
    let mut posted = 0u64; // messages posted by A
    let mut recv_posted = 0u64; // receives posted by B
    let mut done_a = 0u64; // completions in order at A
    let mut done_b = 0u64; // receive completions at B
    let mut inflight: VecDeque<u64> = VecDeque::new();
    let mut data = vec![0u8; size];
    let mut got = vec![0u8; size];
    let mut wcs = [WorkCompletion {
        wr_id: 0,
        status: CqeStatus::Success,
        opcode: roce_driver::CqeOpcode::Send,
        byte_len: 0,
        imm: None,
        invalidated: None,
        qpn: 0,
        src_qp: 0,
    }; 32];
    // A Verilated node's clock ran through the set-up's register accesses (each takes AXI4-Lite
    // cycles); the transfer starts when both nodes are there, so that setup is not counted.
    for n in [&pair.a.node, &pair.b.node] {
        let n = n.borrow();
        pair.now = pair.now.max(n.now).max(n.hdl.as_ref().map_or(0, |h| h.cycle));
    }
    pair.exchange();
    let start = pair.now;
    let mut last_progress = 0u64;
    let (mut q1, mut q3) = (None, None);
    let mut quiet = false;
    let sends_done = |done_a: u64, done_b: u64| if cfg.op == Op::Send { done_a.min(done_b) } else { done_a };

    loop {
        let (a, b) = (&mut pair.a, &mut pair.b);
        // B keeps its receive queue full.
        if cfg.op == Op::Send {
            while recv_posted < n && recv_posted - done_b < cfg.depth as u64 {
                let slot = (recv_posted % slots) as usize;
                let sge = [b.mr.sge((slot * slot_len) as u64, size as u32)];
                b.dev.post_recv(b.qp, &[RecvWr { wr_id: recv_posted, sges: &sge }]).map_err(drv)?;
                recv_posted += 1;
            }
        }
        // A keeps `depth` messages in flight.
        while posted < n && inflight.len() < cfg.depth {
            let slot = (posted % slots) as usize;
            let off = (slot * slot_len) as u64;
            pattern(cfg.seed, posted, &mut data);
            let op = match cfg.op {
                Op::Send => {
                    a.dev.write_buf(&a.buf, off as usize, &data);
                    WrOp::Send
                }
                Op::Write => {
                    a.dev.write_buf(&a.buf, off as usize, &data);
                    WrOp::Write { remote_addr: b.mr.va + off, rkey: b.mr.rkey }
                }
                Op::Read => {
                    // B's application prepares the data; A's landing area is scrubbed.
                    b.dev.write_buf(&b.buf, off as usize, &data);
                    a.dev.write_buf(&a.buf, off as usize, &vec![0u8; size]);
                    if let Some(f) = cfg.model_fault.filter(|f| (off..off + size as u64).contains(f)) {
                        if let Some(s) = b.node.borrow_mut().shadow.as_mut() {
                            let va = b.buf.iova + f;
                            let x = s.mem.read_vec(va, 1);
                            s.mem.write(va, &[x.first().copied().unwrap_or(0) ^ 0x10]);
                        }
                    }
                    WrOp::Read { remote_addr: b.mr.va + off, rkey: b.mr.rkey }
                }
            };
            let sge = [a.mr.sge(off, size as u32)];
            let sges: &[_] = if size == 0 { &[] } else { &sge };
            a.dev.post_send(a.qp, &[SendWr::new(posted, op, sges)]).map_err(drv)?;
            inflight.push_back(posted);
            posted += 1;
        }

        // Completions at A (requester side).
        let k = a.dev.poll_cq(a.cq, &mut wcs).map_err(drv)?;
        for wc in &wcs[..k] {
            if wc.status != CqeStatus::Success {
                rep.errors += 1;
                rep.first_error.get_or_insert(wc.status);
                inflight.retain(|&x| x != wc.wr_id);
                continue;
            }
            if inflight.front() != Some(&wc.wr_id) {
                rep.duplicated += 1;
                continue;
            }
            inflight.pop_front();
            let i = wc.wr_id;
            let off = (i % slots) as usize * slot_len;
            match cfg.op {
                Op::Send => {}
                Op::Write | Op::Read => {
                    pattern(cfg.seed, i, &mut data);
                    if cfg.op == Op::Write {
                        b.dev.read_buf(&b.buf, off, &mut got);
                    } else {
                        a.dev.read_buf(&a.buf, off, &mut got);
                    }
                    if got == data {
                        rep.bytes_verified += size as u64;
                        rep.completed += 1;
                    } else {
                        rep.mismatches += 1;
                    }
                }
            }
            done_a += 1;
        }
        // Receive completions at B.
        if cfg.op == Op::Send {
            let k = b.dev.poll_cq(b.cq, &mut wcs).map_err(drv)?;
            for wc in &wcs[..k] {
                if wc.status != CqeStatus::Success {
                    rep.errors += 1;
                    rep.first_error.get_or_insert(wc.status);
                    continue;
                }
                if wc.wr_id != done_b {
                    rep.duplicated += 1;
                    continue;
                }
                let off = (wc.wr_id % slots) as usize * slot_len;
                pattern(cfg.seed, wc.wr_id, &mut data);
                b.dev.read_buf(&b.buf, off, &mut got);
                if got == data && wc.byte_len as usize == size {
                    rep.bytes_verified += size as u64;
                    rep.completed += 1;
                } else {
                    rep.mismatches += 1;
                }
                done_b += 1;
            }
        }
        let finished = sends_done(done_a, done_b);
        if finished >= n / 4 && q1.is_none() {
            q1 = Some((pair.now - start, finished));
        }
        if finished >= 3 * n / 4 && q3.is_none() {
            q3 = Some((pair.now - start, finished));
        }
        if finished / 16 != last_progress / 16 {
            progress(finished, n);
        }
        last_progress = finished;
        if (done_a >= n && (cfg.op != Op::Send || done_b >= n)) || rep.errors > 0 {
            break;
        }
        // Completions freed room: the hosts post again at the same cycle.
        let room_a = posted < n && inflight.len() < cfg.depth;
        let room_b = cfg.op == Op::Send && recv_posted < n && recv_posted - done_b < cfg.depth as u64;
        if room_a || room_b {
            continue;
        }

        // Move frames: links deliver, engines transmit; then the next event.
        pair.exchange();
        let next = pair.next_event();
        let Some(t) = next else {
            // Nothing is scheduled: let the hosts look at their CQs once more, then stop.
            if quiet {
                break;
            }
            quiet = true;
            continue;
        };
        quiet = false;
        pair.now = t.max(pair.now + 1);
        for n in [&pair.a.node, &pair.b.node] {
            n.borrow_mut().now = pair.now;
        }
        if pair.now - start > cfg.max_cycles || diverged(&pair) {
            break;
        }
    }
    for (i, node) in [&pair.a.node, &pair.b.node].into_iter().enumerate() {
        let mut n = node.borrow_mut();
        n.shadow_finish();
        if let Some(s) = n.shadow.as_ref() {
            rep.cosim[i] = Some(s.stats.clone());
            rep.model_counters[i] = Some(n.engine.counters.clone());
            if let (None, Some(d)) = (&rep.divergence, &s.divergence) {
                rep.divergence = Some((i, d.clone()));
            }
        }
    }
    rep.cycles = pair.now - start;
    rep.quartiles = q1.zip(q3);
    rep.lost = n.saturating_sub(rep.completed + rep.mismatches);
    rep.counters = [pair.a.node.borrow_mut().counters(), pair.b.node.borrow_mut().counters()];
    for (i, (node, qpn)) in [(&pair.a.node, pair.a.qp.qpn()), (&pair.b.node, pair.b.qp.qpn())].into_iter().enumerate() {
        let n = node.borrow();
        if n.hdl.is_none() {
            rep.owed_acks[i] =
                n.engine.qp(qpn).map_or(0, |q| usize::from(q.resp.ack.is_some()) + q.resp.acks_after.len());
        }
        (rep.peak_reads[i], rep.tag_waits[i]) = match n.hdl.as_ref() {
            Some(h) => (h.rd_peak, h.rd_tag_stalls),
            None => (n.engine.host.peak_reads, n.engine.host.tag_waits),
        };
    }
    rep.links = [pair.ab.stats, pair.ba.stats];
    rep.capture = pair.capture.take().unwrap_or_default();
    progress(sends_done(done_a, done_b), n);
    Ok(rep)
}
