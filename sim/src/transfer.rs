//! `roce-sim transfer`: two engines over an impaired link, driven by `roce-driver`, moving a
//! workload and verifying every byte.
//!
//! Node A is the requester. For `send`, B keeps receive WQEs posted and A sends; for
//! `write`, A writes into B's memory; for `read`, A reads from it. Messages use a ring of
//! `slots` buffers on each side; message `i` carries a pattern derived from `(seed, i)`, and
//! is checked where it lands when its completion arrives (on B for SEND, in B's memory on
//! A's completion for WRITE, in A's buffer for READ). Anything missing, extra, out of order
//! or different is counted, and the run fails if any is.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::rc::Rc;

use roce_driver::device::Features;
use roce_driver::{
    masks, AccessFlags, CompletionQueue, CqeStatus, Device, DmaBuf, MemoryRegion, PathMtu, QpAttr, QpState, QueuePair,
    RecvWr, SendWr, WorkCompletion, WrOp,
};
use roce_model::engine::{Counters, EngineConfig};

use crate::fabric::{Link, LinkConfig, LinkStats};
use crate::node::{ModelBackend, NodeRef, SimNode};
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
    /// Local ACK timeout code (4.096 µs × 2^timeout).
    pub timeout: u8,
    /// Capture every frame on the link (A->B and B->A).
    pub capture: bool,
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
            timeout: 8,
            capture: false,
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
    /// Engine counters of A and B.
    pub counters: [Counters; 2],
    /// Link statistics A->B and B->A.
    pub links: [LinkStats; 2],
    /// Clock of the engines in MHz.
    pub clock_mhz: f64,
    /// Captured frames: (cycle, direction 0 = A->B, frame).
    pub capture: Vec<(u64, u8, Vec<u8>)>,
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

struct Side {
    node: NodeRef,
    dev: Device<ModelBackend>,
    cq: CompletionQueue,
    qp: QueuePair,
    buf: DmaBuf,
    mr: MemoryRegion,
}

fn drv(e: roce_driver::DriverError) -> SimError {
    SimError::Config(format!("driver: {e}"))
}

fn setup(cfg: &TransferConfig, mac: [u8; 6], ip: Ipv4Addr, gid: Ipv6Addr) -> Result<Side, SimError> {
    let ecfg = EngineConfig { mac, ipv4: ip, gid, ..EngineConfig::default() };
    let node = Rc::new(RefCell::new(SimNode::new(ecfg)));
    let mut dev = Device::open(ModelBackend(node.clone())).map_err(drv)?;
    dev.configure_port(mac, ip, gid);
    dev.enable(Features { ecn: true, cnp: true, dcqcn: true, pfc: true });
    let pd = dev.alloc_pd();
    let buf = dev.alloc_buf(cfg.size.max(8) * cfg.depth).map_err(drv)?;
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let mr = dev.reg_mr(pd, &buf, 0, buf.len, access).map_err(drv)?;
    let cq = dev.create_cq(4 * cfg.depth as u32 + 16).map_err(drv)?;
    let qp = dev.create_qp(pd, cq, cq, cfg.depth as u32, cfg.depth as u32).map_err(drv)?;
    Ok(Side { node, dev, cq, qp, buf, mr })
}

fn connect(cfg: &TransferConfig, me: &mut Side, peer_qpn: u32, peer_mac: [u8; 6], peer_ip: IpAddr, my_psn: u32, peer_psn: u32) -> Result<(), SimError> {
    let mtu = match cfg.mtu {
        256 => PathMtu::Mtu256,
        512 => PathMtu::Mtu512,
        1024 => PathMtu::Mtu1024,
        2048 => PathMtu::Mtu2048,
        4096 => PathMtu::Mtu4096,
        m => return Err(SimError::Config(format!("MTU {m} is not one of 256, 512, 1024, 2048, 4096"))),
    };
    let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    let mut a = QpAttr {
        state: QpState::Init,
        access,
        path_mtu: mtu,
        dest_qpn: peer_qpn,
        rq_psn: peer_psn,
        sq_psn: my_psn,
        encap: if cfg.ipv6 { roce_driver::Encap::RoceV2Ipv6 } else { roce_driver::Encap::RoceV2Ipv4 },
        dest_mac: peer_mac,
        dest_ip: peer_ip,
        timeout: cfg.timeout,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 1,
        ..QpAttr::default()
    };
    me.dev.modify_qp(me.qp, &a, masks::INIT).map_err(drv)?;
    a.state = QpState::Rtr;
    me.dev.modify_qp(me.qp, &a, masks::RTR).map_err(drv)?;
    a.state = QpState::Rts;
    me.dev.modify_qp(me.qp, &a, masks::RTS).map_err(drv)?;
    Ok(())
}

/// Run a transfer; `progress` is called now and then with (messages completed, total).
pub fn run(cfg: &TransferConfig, mut progress: impl FnMut(u64, u64)) -> Result<TransferReport, SimError> {
    if cfg.size == 0 && cfg.op == Op::Read {
        return Err(SimError::Config("zero-length READs carry nothing to verify".into()));
    }
    if cfg.depth == 0 || cfg.depth > 4096 {
        return Err(SimError::Config(format!("depth {} out of range 1..=4096", cfg.depth)));
    }
    let (mac_a, mac_b) = ([0x02, 0, 0, 0, 0, 0xA], [0x02, 0, 0, 0, 0, 0xB]);
    let (ip_a, ip_b) = (Ipv4Addr::new(192, 0, 2, 1), Ipv4Addr::new(192, 0, 2, 2));
    let (gid_a, gid_b) = ("2001:db8::a".parse::<Ipv6Addr>().unwrap_or(Ipv6Addr::LOCALHOST), "2001:db8::b".parse::<Ipv6Addr>().unwrap_or(Ipv6Addr::LOCALHOST));
    let mut a = setup(cfg, mac_a, ip_a, gid_a)?;
    let mut b = setup(cfg, mac_b, ip_b, gid_b)?;
    let (ipa, ipb): (IpAddr, IpAddr) = if cfg.ipv6 { (gid_a.into(), gid_b.into()) } else { (ip_a.into(), ip_b.into()) };
    let (psn_a, psn_b) = ((cfg.seed as u32).wrapping_mul(2654435761) & 0xFF_FFFF, (cfg.seed as u32 ^ 0x5A5A5A).wrapping_mul(40503) & 0xFF_FFFF);
    let (qa, qb) = (a.qp.qpn(), b.qp.qpn());
    connect(cfg, &mut a, qb, mac_b, ipb, psn_a, psn_b)?;
    connect(cfg, &mut b, qa, mac_a, ipa, psn_b, psn_a)?;

    let mut ab = Link::new(cfg.link, cfg.seed.wrapping_mul(31).wrapping_add(1));
    let mut ba = Link::new(cfg.link, cfg.seed.wrapping_mul(31).wrapping_add(2));
    let mut rep = TransferReport { clock_mhz: a.node.borrow().engine.cfg.clock_mhz, ..Default::default() };
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
    let mut wcs = [WorkCompletion { wr_id: 0, status: CqeStatus::Success, opcode: roce_driver::CqeOpcode::Send, byte_len: 0, imm: None, invalidated: None, qpn: 0, src_qp: 0 }; 32];
    let mut now = 0u64;
    let start = now;
    let mut last_progress = 0u64;
    let mut quiet = false;
    let sends_done = |done_a: u64, done_b: u64| if cfg.op == Op::Send { done_a.min(done_b) } else { done_a };

    loop {
        // B keeps its receive queue full.
        if cfg.op == Op::Send {
            while recv_posted < n && recv_posted - done_b < cfg.depth as u64 {
                let slot = (recv_posted % cfg.depth as u64) as usize;
                let sge = [b.mr.sge((slot * slot_len) as u64, size as u32)];
                b.dev.post_recv(b.qp, &[RecvWr { wr_id: recv_posted, sges: &sge }]).map_err(drv)?;
                recv_posted += 1;
            }
        }
        // A keeps `depth` messages in flight.
        while posted < n && inflight.len() < cfg.depth {
            let slot = (posted % cfg.depth as u64) as usize;
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
                    WrOp::Read { remote_addr: b.mr.va + off, rkey: b.mr.rkey }
                }
            };
            let sge = [a.mr.sge(off, size as u32)];
            let sges: &[_] = if size == 0 { &[] } else { &sge };
            a.node.borrow_mut().now = now;
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
            let off = (i % cfg.depth as u64) as usize * slot_len;
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
                let off = (wc.wr_id % cfg.depth as u64) as usize * slot_len;
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

        // Move frames: links deliver, engines transmit.
        for (node, link) in [(&a.node, &mut ba), (&b.node, &mut ab)] {
            let mut nd = node.borrow_mut();
            nd.now = now;
            while let Some(f) = link.recv(now) {
                nd.rx(&f);
            }
        }
        for (dir, (node, link)) in [(&a.node, &mut ab), (&b.node, &mut ba)].into_iter().enumerate() {
            let mut nd = node.borrow_mut();
            nd.now = now;
            while let Some(f) = nd.tx() {
                if cfg.capture {
                    rep.capture.push((now, dir as u8, f.clone()));
                }
                link.send(now, f);
            }
        }
        // Next event.
        let mut next: Option<u64> = None;
        let mut take = |t: Option<u64>| {
            if let Some(t) = t {
                next = Some(next.map_or(t, |x: u64| x.min(t)));
            }
        };
        take(a.node.borrow().engine.next_event());
        take(b.node.borrow().engine.next_event());
        take(ab.next_arrival());
        take(ba.next_arrival());
        let Some(t) = next else {
            // Nothing is scheduled: let the hosts look at their CQs once more, then stop.
            if quiet {
                break;
            }
            quiet = true;
            continue;
        };
        quiet = false;
        now = t.max(now + 1);
        if now - start > cfg.max_cycles {
            break;
        }
    }
    rep.cycles = now - start;
    rep.lost = n.saturating_sub(rep.completed + rep.mismatches);
    rep.counters = [a.node.borrow().engine.counters.clone(), b.node.borrow().engine.counters.clone()];
    rep.links = [ab.stats, ba.stats];
    progress(sends_done(done_a, done_b), n);
    Ok(rep)
}
