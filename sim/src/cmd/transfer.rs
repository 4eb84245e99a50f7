//! `roce-sim transfer`: two engines over an impaired link, driven by `roce-driver`, moving a
//! workload and verifying every byte.
//!
//! Node A is the requester. For `send`, B keeps receive WQEs posted and A sends; for
//! `write`, A writes into B's memory; for `read`, A reads from it. The pair has
//! [`TransferConfig::qps`] connected QPs; message `i` goes on QP `i mod qps`, and each QP
//! keeps up to `depth` messages in flight (the send and receive queues have `depth` entries;
//! the host posts round robin over the QPs that have room). Each QP has its own region of
//! the buffer on each side, a ring of `slots` message buffers, so no two QPs' data share a
//! byte. Message `i` carries a pattern derived from `(seed, i)`, and is checked where it
//! lands when its completion arrives (on B for SEND, in B's memory on A's completion for
//! WRITE, in A's buffer for READ). Completions of different QPs may interleave; those of one
//! QP must come in the order it posted. Anything missing, extra, out of order or different
//! is counted, and the run fails if any is.

use std::collections::{HashMap, VecDeque};

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
    /// Messages in flight on each QP (its send and receive queue size, and its buffer
    /// slots on each side).
    pub depth: usize,
    /// Connected QPs between A and B (message `i` goes on QP `i mod qps`).
    pub qps: usize,
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
    /// Post the data inline (SEND and WRITE up to 64 bytes; each post one WQE, through the
    /// inline doorbell where the engine has one).
    pub inline: bool,
    /// Selective signaling: every this many messages of a QP (and its last) ask for a
    /// completion (1: all); a completion retires the unsignaled ones before it.
    pub signal_every: u64,
}

impl Default for TransferConfig {
    fn default() -> Self {
        TransferConfig {
            op: Op::Write,
            size: 65536,
            messages: 64,
            mtu: 4096,
            depth: 16,
            qps: 1,
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
            inline: false,
            signal_every: 1,
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
    /// Completions that were not expected (duplicates, unknown ids or QPs).
    pub duplicated: u64,
    /// Completions of messages still in flight on their QP that came before an earlier
    /// message of that QP (its order broken).
    pub out_of_order: u64,
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
    /// Bytes verified on each QP (index `k`: the QP that carries messages `k`, `k + qps`, ...).
    pub qp_bytes: Vec<u64>,
    /// Messages verified on each QP.
    pub qp_messages: Vec<u64>,
    /// Messages each QP completed between a quarter and three quarters of all completions
    /// (the steady state; None when no message completed in that window).
    pub qp_steady: Option<Vec<u64>>,
    /// Engine counters of A and B.
    pub counters: [Counters; 2],
    /// Link statistics A->B and B->A.
    pub links: [LinkStats; 2],
    /// Clock of the engines in MHz.
    pub clock_mhz: f64,
    /// Captured frames: (cycle, direction 0 = A->B, frame).
    pub capture: Vec<(u64, u8, Vec<u8>)>,
    /// ACK/NAKs each node's engine model (A, B) still owed on its QPs when the run stopped
    /// (0 for a Verilated node).
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
    /// The run stopped with messages outstanding because nothing was left to happen (model
    /// nodes) or nothing completed for [`stall_cycles`] (a Verilated node always ticks):
    /// the cycles since the last completion.
    pub stalled: Option<u64>,
}

/// Cycles without a completion after which a transfer stops as stalled: sixteen local ACK
/// timeouts (4.096 µs x 2^timeout at 250 MHz; the retry budget is at most eight) and 2^20
/// cycles more, so a requester that retransmits and then completes in error is never cut off.
pub fn stall_cycles(timeout: u8) -> u64 {
    (16u64 << 10 << timeout.min(31)) + (1 << 20)
}

impl TransferReport {
    /// Count a message of `size` bytes on QP `q` that completed and whose bytes matched.
    fn verified(&mut self, q: usize, size: usize) {
        self.bytes_verified += size as u64;
        self.qp_bytes[q] += size as u64;
        self.qp_messages[q] += 1;
        self.completed += 1;
    }

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
    /// Messages per second between the first and the third quartile of completions (the
    /// steady state; None with fewer than 8 messages).
    pub fn steady_msg_rate(&self, messages: u64) -> Option<f64> {
        let ((c1, n1), (c3, n3)) = self.quartiles?;
        if messages < 8 || c3 <= c1 || n3 <= n1 {
            return None;
        }
        Some((n3 - n1) as f64 * self.clock_mhz * 1e6 / (c3 - c1) as f64)
    }
    /// Messages completed per simulated second at the engines' clock.
    pub fn msg_rate(&self) -> f64 {
        self.completed as f64 * self.clock_mhz * 1e6 / self.cycles.max(1) as f64
    }
    /// Jain's fairness index over the bytes each QP completed in the steady state (between a
    /// quarter and three quarters of the completions; over the whole run when that window is
    /// empty): `(Σx)² / (n·Σx²)`, 1 when every QP got the same, `1/n` when one got all.
    /// Every message has the same size, so bytes and messages give the same index (messages
    /// are counted, so zero-length messages count too). None without QPs or completions.
    pub fn fairness(&self) -> Option<f64> {
        jain(self.qp_steady.as_ref().unwrap_or(&self.qp_messages))
    }
    /// Whether every message arrived once, intact, in order.
    pub fn clean(&self, messages: u64) -> bool {
        self.completed == messages
            && self.mismatches == 0
            && self.lost == 0
            && self.duplicated == 0
            && self.out_of_order == 0
            && self.errors == 0
    }
}

/// Jain's fairness index of `x`: `(Σx)² / (n·Σx²)` (None when `x` is empty or all zero).
pub fn jain(x: &[u64]) -> Option<f64> {
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    let sq: f64 = x.iter().map(|&v| (v as f64) * (v as f64)).sum();
    (sq > 0.0).then(|| sum * sum / (x.len() as f64 * sq))
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
    if cfg.signal_every == 0 || cfg.signal_every > cfg.depth as u64 {
        return Err(SimError::Config(format!(
            "signal every {} messages: must be 1..=depth ({})",
            cfg.signal_every, cfg.depth
        )));
    }
    if cfg.inline && (cfg.op == Op::Read || cfg.size > roce_model::contract::MAX_INLINE) {
        return Err(SimError::Config(format!(
            "inline data is for SEND and WRITE of at most {} bytes",
            roce_model::contract::MAX_INLINE
        )));
    }
    if cfg.depth == 0 || cfg.depth > 4096 {
        return Err(SimError::Config(format!("depth {} out of range 1..=4096", cfg.depth)));
    }
    if cfg.qps == 0 || cfg.qps > 1024 {
        return Err(SimError::Config(format!("{} QPs out of range 1..=1024", cfg.qps)));
    }
    if cfg.qps > 1 && cfg.messages < cfg.qps as u64 {
        return Err(SimError::Config(format!(
            "{} messages over {} QPs: every QP carries at least one message",
            cfg.messages, cfg.qps
        )));
    }
    let nq = cfg.qps as u64;
    // Messages QP `q` carries: `q`, `q + nq`, ... below `messages`.
    let per_qp = |q: usize| cfg.messages.saturating_sub(q as u64).div_ceil(nq);
    // Buffer slots per QP and side: `depth`, reused. Cosim READs use a slot per message
    // instead: a duplicate READ that arrives after its message completed is re-executed by
    // the responder, and if the host had rewritten the slot meanwhile, what it returns
    // depends on when the engine read it (the HDL and the model read at different cycles).
    let slots =
        if cfg.cosim.is_some() && cfg.op == Op::Read { per_qp(0).max(cfg.depth as u64) } else { cfg.depth as u64 };
    let slot_len = cfg.size.max(8);
    if (slot_len as u64).saturating_mul(slots).saturating_mul(nq) > 1 << 28 {
        return Err(SimError::Config(format!(
            "{} QPs x {slots} slots x {slot_len} B of buffer on each side is over 256 MiB",
            cfg.qps
        )));
    }
    // QP `q`'s region of the buffer on each side starts here.
    let region = slot_len * slots as usize;
    let pcfg = PairConfig {
        mtu: cfg.mtu,
        depth: cfg.depth as u32,
        qps: cfg.qps as u32,
        buf_len: region * cfg.qps,
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
    let mut rep = TransferReport {
        clock_mhz: pair.a.node.borrow().engine.cfg.clock_mhz,
        qp_bytes: vec![0; cfg.qps],
        qp_messages: vec![0; cfg.qps],
        ..Default::default()
    };
    let n = cfg.messages;
    let size = cfg.size;
    let depth = cfg.depth;
    // Where message `i` lives on either side: its QP's region, slot (i / nq) mod slots.
    let offset = |i: u64| (i % nq) as usize * region + ((i / nq) % slots) as usize * slot_len;
    // Each side's QP index by local QP number.
    let index = |qps: &[roce_driver::QueuePair]| -> HashMap<u32, usize> {
        qps.iter().enumerate().map(|(k, q)| (q.qpn(), k)).collect()
    };
    let (qa_index, qb_index) = (index(&pair.a.qps), index(&pair.b.qps));
    let mut sent = vec![0u64; cfg.qps]; // messages posted on each QP by A
                                        // by A, in order: (message, signaled)
    let mut inflight: Vec<VecDeque<(u64, bool)>> = vec![VecDeque::new(); cfg.qps];
    let mut recv_posted = vec![0u64; cfg.qps]; // receives posted on each QP by B
    let mut recv_done = vec![0u64; cfg.qps]; // receive completions on each QP at B

    // The QPs with room and messages left, in the order the hosts serve them (round robin):
    // a QP is in its queue at most once (flagged in `queued_*`).
    let mut ready_a: VecDeque<usize> = (0..cfg.qps).collect();
    let mut queued_a = vec![true; cfg.qps];
    let mut ready_b: VecDeque<usize> = if cfg.op == Op::Send { (0..cfg.qps).collect() } else { VecDeque::new() };
    let mut queued_b = vec![cfg.op == Op::Send; cfg.qps];
    let mut done_a = 0u64; // completions in order at A
    let mut done_b = 0u64; // receive completions at B
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
        pair.now = pair.now.max(n.clock());
    }
    pair.exchange();
    let start = pair.now;
    let mut last_progress = 0u64;
    let mut last_done = 0u64; // completions at A and B
    let mut progress_at = start; // cycle of the last completion (or of the start)
    let stall_after = stall_cycles(cfg.timeout);
    let (mut q1, mut q3) = (None, None);
    let mut steady_from: Option<Vec<u64>> = None;
    let mut quiet = false;
    let sends_done = |done_a: u64, done_b: u64| if cfg.op == Op::Send { done_a.min(done_b) } else { done_a };

    loop {
        let (a, b) = (&mut pair.a, &mut pair.b);
        // B keeps every QP's receive queue full.
        while let Some(q) = ready_b.pop_front() {
            let i = q as u64 + recv_posted[q] * nq;
            let sge = [b.mr.sge(offset(i) as u64, size as u32)];
            b.dev.post_recv(b.qps[q], &[RecvWr { wr_id: i, sges: &sge }]).map_err(drv)?;
            recv_posted[q] += 1;
            queued_b[q] = recv_posted[q] < per_qp(q) && recv_posted[q] - recv_done[q] < depth as u64;
            if queued_b[q] {
                ready_b.push_back(q);
            }
        }
        // A keeps `depth` messages in flight on every QP, posting round robin.
        while let Some(q) = ready_a.pop_front() {
            let i = q as u64 + sent[q] * nq;
            let off = offset(i) as u64;
            pattern(cfg.seed, i, &mut data);
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
            let sges: &[_] = if size == 0 || cfg.inline { &[] } else { &sge };
            let mut wr = SendWr::new(i, op, sges);
            if cfg.inline {
                wr.inline = Some(&data);
            }
            wr.signaled = (sent[q] + 1) % cfg.signal_every.max(1) == 0 || sent[q] + 1 == per_qp(q);
            a.dev.post_send(a.qps[q], &[wr]).map_err(drv)?;
            inflight[q].push_back((i, wr.signaled));
            sent[q] += 1;
            queued_a[q] = sent[q] < per_qp(q) && inflight[q].len() < depth;
            if queued_a[q] {
                ready_a.push_back(q);
            }
        }

        // Completions at A (requester side).
        let k = a.dev.poll_cq(a.cq, &mut wcs).map_err(drv)?;
        for wc in &wcs[..k] {
            let Some(&q) = qa_index.get(&wc.qpn) else {
                rep.duplicated += 1;
                continue;
            };
            if wc.status != CqeStatus::Success {
                rep.errors += 1;
                rep.first_error.get_or_insert(wc.status);
                inflight[q].retain(|&x| x.0 != wc.wr_id);
            } else if let Some(pos) =
                inflight[q].iter().position(|x| x.0 == wc.wr_id).filter(|&p| inflight[q].iter().take(p).all(|x| !x.1))
            {
                // the completion retires it and the unsignaled messages before it
                for (i, _) in inflight[q].drain(..=pos).collect::<Vec<_>>() {
                    match cfg.op {
                        Op::Send => {}
                        Op::Write | Op::Read => {
                            pattern(cfg.seed, i, &mut data);
                            if cfg.op == Op::Write {
                                b.dev.read_buf(&b.buf, offset(i), &mut got);
                            } else {
                                a.dev.read_buf(&a.buf, offset(i), &mut got);
                            }
                            if got == data {
                                rep.verified(q, size);
                            } else {
                                rep.mismatches += 1;
                            }
                        }
                    }
                    done_a += 1;
                }
            } else if inflight[q].iter().any(|x| x.0 == wc.wr_id) {
                rep.out_of_order += 1;
                continue;
            } else {
                rep.duplicated += 1;
                continue;
            }
            if !queued_a[q] && sent[q] < per_qp(q) && inflight[q].len() < depth {
                queued_a[q] = true;
                ready_a.push_back(q);
            }
        }
        // Receive completions at B.
        if cfg.op == Op::Send {
            let k = b.dev.poll_cq(b.cq, &mut wcs).map_err(drv)?;
            for wc in &wcs[..k] {
                let Some(&q) = qb_index.get(&wc.qpn) else {
                    rep.duplicated += 1;
                    continue;
                };
                if wc.status != CqeStatus::Success {
                    rep.errors += 1;
                    rep.first_error.get_or_insert(wc.status);
                    continue;
                }
                let want = q as u64 + recv_done[q] * nq;
                if wc.wr_id != want {
                    if wc.wr_id > want && wc.wr_id % nq == q as u64 && wc.wr_id < q as u64 + recv_posted[q] * nq {
                        rep.out_of_order += 1;
                    } else {
                        rep.duplicated += 1;
                    }
                    continue;
                }
                pattern(cfg.seed, wc.wr_id, &mut data);
                b.dev.read_buf(&b.buf, offset(wc.wr_id), &mut got);
                if got == data && wc.byte_len as usize == size {
                    rep.verified(q, size);
                } else {
                    rep.mismatches += 1;
                }
                done_b += 1;
                recv_done[q] += 1;
                if !queued_b[q] && recv_posted[q] < per_qp(q) {
                    queued_b[q] = true;
                    ready_b.push_back(q);
                }
            }
        }
        let finished = sends_done(done_a, done_b);
        if finished >= n / 4 && q1.is_none() {
            q1 = Some((pair.now - start, finished));
            steady_from = Some(rep.qp_messages.clone());
        }
        if finished >= 3 * n / 4 && q3.is_none() {
            q3 = Some((pair.now - start, finished));
            if let Some(from) = &steady_from {
                let window: Vec<u64> = rep.qp_messages.iter().zip(from).map(|(x, y)| x - y).collect();
                rep.qp_steady = window.iter().any(|&x| x > 0).then_some(window);
            }
        }
        if finished / 16 != last_progress / 16 {
            progress(finished, n);
        }
        if done_a + done_b != last_done {
            last_done = done_a + done_b;
            progress_at = pair.now;
        }
        last_progress = finished;
        if (done_a >= n && (cfg.op != Op::Send || done_b >= n)) || rep.errors > 0 {
            break;
        }
        // Completions freed room: the hosts post again at the same cycle.
        if !ready_a.is_empty() || !ready_b.is_empty() {
            continue;
        }

        // Move frames: links deliver, engines transmit; then the next event.
        pair.exchange();
        let next = pair.next_event();
        let Some(t) = next else {
            // Nothing is scheduled: let the hosts look at their CQs once more, then stop.
            if quiet {
                rep.stalled = Some(pair.now - progress_at);
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
        if pair.now - progress_at > stall_after {
            rep.stalled = Some(pair.now - progress_at);
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
    for (i, e) in [&pair.a, &pair.b].into_iter().enumerate() {
        let n = e.node.borrow();
        if n.hdl.is_none() {
            rep.owed_acks[i] = e
                .qps
                .iter()
                .filter_map(|qp| n.engine.qp(qp.qpn()))
                .map(|q| usize::from(q.resp.ack.is_some()) + q.resp.acks_after.len())
                .sum();
        }
        (rep.peak_reads[i], rep.tag_waits[i]) = match n.hdl.as_ref() {
            Some(h) => (h.host.peak_reads, h.rd_tag_stalls),
            None => (n.engine.host.peak_reads, n.engine.host.tag_waits),
        };
    }
    rep.links = [pair.ab.stats, pair.ba.stats];
    rep.capture = pair.capture.take().unwrap_or_default();
    progress(sends_done(done_a, done_b), n);
    Ok(rep)
}
