//! A simulated engine attached to a real datagram socket: the "sim device".
//!
//! [`NetDev::open`] creates an engine model (the Rust model, [`Engine`] with host memory
//! behind an IOMMU, like [`crate::net::node::SimNode`]) and plugs its Ethernet port into a unix
//! datagram socket: it binds `local_sock` and sends to `remote_sock`, **one Ethernet frame
//! (no FCS) per datagram**. That is the convention of QEMU's `-netdev dgram`, so a NetDev can
//! be the peer of the Soft-RoCE VM of `tests/rxevm` (its eth0 socket is our remote socket),
//! or of another NetDev in another process (each one's local socket is the other's remote).
//!
//! Real time drives the engine: engine cycle = nanoseconds since [`NetDev::open`] ×
//! `clock_mhz` / 1000. Programs use it through `roce-driver` exactly as they would use a
//! board: `Device::open(netdev.backend())`. [`NetDev::resolve`] does ARP for the peer's MAC
//! (the engine itself does no address resolution), and the NetDev answers ARP requests for
//! its own IPv4 address.
//!
//! # Threads
//! The node (engine + host memory + current cycle) lives in an `Arc<Mutex<..>>` shared by:
//! - the **application** (any thread): every [`NetDevBackend`] call (MMIO, DMA buffer access)
//!   locks the node for the duration of that one call. A write to a doorbell, `CMD` or `CTRL`
//!   register also wakes the pump thread.
//! - the **pump thread** (`netdev-pump`): waits on a channel for received frames or a
//!   wake-up, then locks the node once per round to set the engine's cycle from the wall
//!   clock, feed it the received frames and collect what it transmits; it sends those frames
//!   after unlocking. Engine events up to [`LOOKAHEAD_NS`] in the future (DMA latency,
//!   pipeline delays, serialisation at line rate) are run at once — engine time may run
//!   ahead of the wall clock by at most that much — and the thread sleeps until the next
//!   event further out (an ACK timer, say), at most [`MAX_IDLE`]. Each round that moved
//!   anything bumps an activity counter that [`NetDev::wait_activity`] waits on, so a
//!   polling application can sleep instead of spinning on the CQ.
//! - the **receive thread** (`netdev-rx`): blocks in `recv` on the socket, answers ARP
//!   requests for our IPv4 address, learns neighbours from ARP, and hands every other frame
//!   to the pump thread through the channel. Because it never waits for the pump, two
//!   NetDevs sending bursts to each other cannot deadlock on full socket queues (unix
//!   datagram sends block when the receiver's queue is full: backpressure, not loss).
//!
//! Dropping the [`NetDev`] stops both threads and removes `local_sock`. A
//! [`NetDevBackend`] still held afterwards keeps working for MMIO and memory, but no frame
//! moves and engine time no longer advances on its own.

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::unix::fs::FileTypeExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use roce_driver::{Backend, DmaBuf, DriverError};
use roce_model::contract::regs;
use roce_model::engine::{Counters, Engine, EngineConfig, HostMem, HostMemBudget};

use crate::SimError;

/// How far ahead of the wall clock the pump runs engine events (50 µs): short engine delays
/// are not slept through (a sleep costs tens of µs of timer slack), long ones are.
pub const LOOKAHEAD_NS: u64 = 50_000;
/// Longest the pump thread sleeps without a frame, a wake-up or an engine event.
pub const MAX_IDLE: Duration = Duration::from_millis(20);
/// A send to the remote socket that blocks longer than this drops the frame (a peer that
/// stopped reading; a live peer drains its queue continuously).
pub const SEND_TIMEOUT: Duration = Duration::from_millis(500);
/// Largest datagram accepted (an Ethernet frame with a 9000-byte payload fits easily).
pub const MAX_FRAME: usize = 16384;

/// How a [`NetDev`] is set up.
#[derive(Clone, Debug)]
pub struct NetDevConfig {
    /// Station MAC.
    pub mac: [u8; 6],
    /// IPv4 address (RoCEv2 over IPv4; ARP is answered for it).
    pub ipv4: Ipv4Addr,
    /// IPv6 GID.
    pub gid: Ipv6Addr,
    /// Socket path to bind (our end of the link).
    pub local_sock: PathBuf,
    /// Socket path to send to (the peer's end: the VM's eth0 socket, or another NetDev's
    /// `local_sock`).
    pub remote_sock: PathBuf,
    /// Engine clock in MHz: wall time maps to cycles at this rate.
    pub clock_mhz: f64,
}

impl NetDevConfig {
    /// Defaults for a link between two socket paths: MAC `52:54:00:00:00:02`, IPv4
    /// `192.0.2.2` (the engine's address in the VM harness), GID `::ffff:192.0.2.2`, 250 MHz.
    pub fn new(local_sock: impl Into<PathBuf>, remote_sock: impl Into<PathBuf>) -> Self {
        let ipv4 = Ipv4Addr::new(192, 0, 2, 2);
        NetDevConfig {
            mac: [0x52, 0x54, 0, 0, 0, 0x02],
            ipv4,
            gid: ipv4.to_ipv6_mapped(),
            local_sock: local_sock.into(),
            remote_sock: remote_sock.into(),
            clock_mhz: 250.0,
        }
    }
}

/// Frame counters of a [`NetDev`] (the engine has its own, [`NetDev::engine_counters`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetDevStats {
    /// Frames handed to the engine.
    pub frames_in: u64,
    /// Frames the engine transmitted that were sent on the socket.
    pub frames_out: u64,
    /// Frames that could not be sent (no peer socket, peer not reading).
    pub send_errors: u64,
    /// ARP requests answered.
    pub arp_replies: u64,
    /// ARP requests sent by [`NetDev::resolve`].
    pub arp_requests: u64,
}

#[derive(Default)]
struct AtomicStats {
    frames_in: AtomicU64,
    frames_out: AtomicU64,
    send_errors: AtomicU64,
    arp_replies: AtomicU64,
    arp_requests: AtomicU64,
}

/// The engine, its host memory and its clock.
struct NetNode {
    engine: Engine,
    mem: HostMem,
    /// The engine's current cycle (monotonic; at most the look-ahead past the wall clock).
    now: u64,
    next_iova: u64,
}

enum Msg {
    Frame(Vec<u8>),
    Wake,
    Stop,
}

struct Shared {
    node: Mutex<NetNode>,
    cfg: NetDevConfig,
    start: Instant,
    sock: UnixDatagram,
    stop: AtomicBool,
    to_pump: Sender<Msg>,
    activity: Mutex<u64>,
    activity_cv: Condvar,
    neigh: Mutex<HashMap<Ipv4Addr, [u8; 6]>>,
    neigh_cv: Condvar,
    stats: AtomicStats,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// The engine cycle of the wall clock now.
    fn wall_cycle(&self) -> u64 {
        (self.start.elapsed().as_nanos() as f64 * self.cfg.clock_mhz / 1000.0) as u64
    }

    fn cycles_of_ns(&self, ns: u64) -> u64 {
        (ns as f64 * self.cfg.clock_mhz / 1000.0) as u64
    }

    fn ns_of_cycles(&self, c: u64) -> u64 {
        (c as f64 * 1000.0 / self.cfg.clock_mhz) as u64
    }

    fn wake_pump(&self) {
        let _ = self.to_pump.send(Msg::Wake);
    }

    fn bump_activity(&self) {
        *lock(&self.activity) += 1;
        self.activity_cv.notify_all();
    }

    fn send_frame(&self, f: &[u8]) -> bool {
        match self.sock.send_to(f, &self.cfg.remote_sock) {
            Ok(n) if n == f.len() => true,
            _ => {
                self.stats.send_errors.fetch_add(1, Ordering::Relaxed);
                false
            }
        }
    }
}

/// A simulated engine on a unix datagram socket, with its pump and receive threads (see the
/// [module documentation](self)). Dropping it stops the threads and removes the socket file.
pub struct NetDev {
    shared: Arc<Shared>,
    pump: Option<JoinHandle<()>>,
    rx: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for NetDev {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetDev").field("cfg", &self.shared.cfg).field("stats", &self.stats()).finish()
    }
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> SimError {
    move |e| SimError::Io(what, e)
}

/// Bind `path`, replacing a stale socket file nobody is bound to any more.
fn bind_socket(path: &Path) -> Result<UnixDatagram, SimError> {
    match UnixDatagram::bind(path) {
        Ok(s) => Ok(s),
        Err(e) if e.kind() == ErrorKind::AddrInUse => {
            let is_sock = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_socket());
            let probe = UnixDatagram::unbound().map_err(io_err("unbound socket".into()))?;
            let live = probe.send_to(&[], path).is_ok();
            if !is_sock || live {
                return Err(SimError::Io(format!("bind {} (in use)", path.display()), e));
            }
            std::fs::remove_file(path).map_err(io_err(format!("remove stale {}", path.display())))?;
            UnixDatagram::bind(path).map_err(io_err(format!("bind {}", path.display())))
        }
        Err(e) => Err(SimError::Io(format!("bind {}", path.display()), e)),
    }
}

impl NetDev {
    /// Create the engine, bind `cfg.local_sock` and start the threads.
    pub fn open(cfg: NetDevConfig) -> Result<NetDev, SimError> {
        if !(cfg.clock_mhz.is_finite() && cfg.clock_mhz > 0.0) {
            return Err(SimError::Config(format!("clock_mhz {} must be positive", cfg.clock_mhz)));
        }
        let sock = bind_socket(&cfg.local_sock)?;
        sock.set_read_timeout(Some(Duration::from_millis(200))).map_err(io_err("set_read_timeout".into()))?;
        sock.set_write_timeout(Some(SEND_TIMEOUT)).map_err(io_err("set_write_timeout".into()))?;
        // IB timers are in units of 4.096 us whatever the clock (the engine derives US_CYCLES,
        // and so the 50 us CNP interval, from clock_mhz).
        let ecfg = EngineConfig {
            mac: cfg.mac,
            ipv4: cfg.ipv4,
            gid: cfg.gid,
            clock_mhz: cfg.clock_mhz,
            tick_cycles: ((4.096 * cfg.clock_mhz).round() as u64).max(1),
            // PCIe Gen3 x16's bytes per cycle at this clock
            host_mem: HostMemBudget::pcie(
                HostMemBudget::PCIE_GEN3_X16_GBYTES,
                cfg.clock_mhz,
                HostMemBudget::READ_LATENCY,
                HostMemBudget::READ_TAGS,
            )?,
            ..EngineConfig::default()
        };
        let node = NetNode { engine: Engine::new(ecfg), mem: HostMem::with_iommu(), now: 0, next_iova: 0x1_0000_0000 };
        let (tx, rx) = channel();
        let shared = Arc::new(Shared {
            node: Mutex::new(node),
            cfg,
            start: Instant::now(),
            sock,
            stop: AtomicBool::new(false),
            to_pump: tx.clone(),
            activity: Mutex::new(0),
            activity_cv: Condvar::new(),
            neigh: Mutex::new(HashMap::new()),
            neigh_cv: Condvar::new(),
            stats: AtomicStats::default(),
        });
        let s = Arc::clone(&shared);
        let pump = std::thread::Builder::new()
            .name("netdev-pump".into())
            .spawn(move || pump_loop(&s, &rx))
            .map_err(io_err("spawn the pump thread".into()))?;
        let s = Arc::clone(&shared);
        let rxt = std::thread::Builder::new().name("netdev-rx".into()).spawn(move || rx_loop(&s, &tx));
        let mut dev = NetDev { shared, pump: Some(pump), rx: None };
        dev.rx = Some(rxt.map_err(io_err("spawn the receive thread".into()))?);
        Ok(dev)
    }

    /// A driver backend for this engine (cheap; any number may exist).
    pub fn backend(&self) -> NetDevBackend {
        NetDevBackend(Arc::clone(&self.shared))
    }

    /// The configuration.
    pub fn config(&self) -> &NetDevConfig {
        &self.shared.cfg
    }

    /// The frame counters.
    pub fn stats(&self) -> NetDevStats {
        let s = &self.shared.stats;
        NetDevStats {
            frames_in: s.frames_in.load(Ordering::Relaxed),
            frames_out: s.frames_out.load(Ordering::Relaxed),
            send_errors: s.send_errors.load(Ordering::Relaxed),
            arp_replies: s.arp_replies.load(Ordering::Relaxed),
            arp_requests: s.arp_requests.load(Ordering::Relaxed),
        }
    }

    /// A copy of the engine's counters.
    pub fn engine_counters(&self) -> Counters {
        lock(&self.shared.node).engine.counters.clone()
    }

    /// The engine's current cycle.
    pub fn cycle(&self) -> u64 {
        lock(&self.shared.node).now
    }

    /// Add a static neighbour (no ARP needed for it).
    pub fn add_neighbor(&self, ip: Ipv4Addr, mac: [u8; 6]) {
        lock(&self.shared.neigh).insert(ip, mac);
        self.shared.neigh_cv.notify_all();
    }

    /// The MAC of `ip`: from the neighbour table, else by ARP (a request every 200 ms until
    /// `timeout`). None if nobody answered.
    pub fn resolve(&self, ip: Ipv4Addr, timeout: Duration) -> Option<[u8; 6]> {
        let sh = &self.shared;
        let end = Instant::now() + timeout;
        let mut next_req = Instant::now();
        let mut g = lock(&sh.neigh);
        loop {
            if let Some(m) = g.get(&ip) {
                return Some(*m);
            }
            let now = Instant::now();
            if now >= end {
                return None;
            }
            if now >= next_req {
                drop(g);
                sh.stats.arp_requests.fetch_add(1, Ordering::Relaxed);
                sh.send_frame(&arp_request(sh.cfg.mac, sh.cfg.ipv4, ip));
                next_req = now + Duration::from_millis(200);
                g = lock(&sh.neigh);
                continue;
            }
            let until = next_req.min(end);
            g = sh.neigh_cv.wait_timeout(g, until - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Wait until the pump thread moved something (a frame in or out, an engine event) since
    /// the count in `seen`, or `timeout` passes; updates `seen`. Returns whether there was
    /// activity. Poll the CQ after every return: a completion can only appear after
    /// activity, so nothing is missed.
    pub fn wait_activity(&self, seen: &mut u64, timeout: Duration) -> bool {
        let sh = &self.shared;
        let mut g = lock(&sh.activity);
        if *g == *seen {
            g = sh.activity_cv.wait_timeout(g, timeout).unwrap_or_else(|p| p.into_inner()).0;
        }
        let changed = *g != *seen;
        *seen = *g;
        changed
    }

    /// Keep the link up until no frame has moved for `quiet` (at most `max`): call before
    /// exiting so the last ACKs reach the peer (and a retransmission is still answered).
    pub fn linger(&self, quiet: Duration, max: Duration) {
        let end = Instant::now() + max;
        let count = |s: NetDevStats| s.frames_in + s.frames_out;
        let mut last = count(self.stats());
        let mut since = Instant::now();
        while Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5).min(quiet));
            let c = count(self.stats());
            if c != last {
                last = c;
                since = Instant::now();
            } else if since.elapsed() >= quiet {
                return;
            }
        }
    }
}

impl Drop for NetDev {
    fn drop(&mut self) {
        let sh = &self.shared;
        sh.stop.store(true, Ordering::SeqCst);
        let _ = sh.to_pump.send(Msg::Stop);
        // wake the receive thread out of recv (it also times out on its own)
        if let Ok(s) = UnixDatagram::unbound() {
            let _ = s.send_to(&[], &sh.cfg.local_sock);
        }
        if let Some(h) = self.pump.take() {
            let _ = h.join();
        }
        if let Some(h) = self.rx.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_file(&sh.cfg.local_sock);
    }
}

fn pump_loop(sh: &Shared, rx: &Receiver<Msg>) {
    let lookahead = sh.cycles_of_ns(LOOKAHEAD_NS);
    let mut wait = Duration::ZERO;
    let mut frames: Vec<Vec<u8>> = Vec::new();
    let mut out: Vec<Vec<u8>> = Vec::new();
    loop {
        // Wait for a frame, a wake-up or the next engine event; then take whatever else is queued.
        let first = if wait.is_zero() {
            rx.try_recv().ok()
        } else {
            match rx.recv_timeout(wait) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        };
        for m in first.into_iter().chain(rx.try_iter()) {
            match m {
                Msg::Frame(f) => frames.push(f),
                Msg::Wake => {}
                Msg::Stop => return,
            }
        }
        if sh.stop.load(Ordering::SeqCst) {
            return;
        }
        let got = !frames.is_empty();
        let (next, wall, stepped) = {
            let mut g = lock(&sh.node);
            let n = &mut *g;
            let wall = sh.wall_cycle();
            n.now = n.now.max(wall);
            for f in frames.drain(..) {
                n.engine.rx(n.now, &f, &mut n.mem);
                sh.stats.frames_in.fetch_add(1, Ordering::Relaxed);
            }
            let horizon = wall + lookahead;
            let mut steps = 0u32;
            let next = loop {
                while let Some(f) = n.engine.tx(n.now, &mut n.mem) {
                    out.push(f);
                }
                match n.engine.next_event() {
                    Some(t) if t <= horizon && steps < 10_000 => {
                        n.now = t.max(n.now + 1);
                        steps += 1;
                    }
                    other => break other,
                }
            };
            (next, wall, steps > 0)
        };
        let moved = !out.is_empty();
        for f in out.drain(..) {
            if sh.send_frame(&f) {
                sh.stats.frames_out.fetch_add(1, Ordering::Relaxed);
            }
        }
        if got || moved || stepped {
            sh.bump_activity();
        }
        // Sleep until the next event comes within the look-ahead.
        wait = match next {
            Some(t) => {
                let due = t.saturating_sub(lookahead);
                let now = sh.wall_cycle().max(wall);
                Duration::from_nanos(sh.ns_of_cycles(due.saturating_sub(now))).min(MAX_IDLE)
            }
            None => MAX_IDLE,
        };
        if moved && wait.is_zero() {
            // sending took long enough for the next event to be due: go round again
            continue;
        }
        wait = wait.max(Duration::from_micros(1));
    }
}

fn rx_loop(sh: &Shared, to_pump: &Sender<Msg>) {
    let mut buf = vec![0u8; MAX_FRAME];
    while !sh.stop.load(Ordering::SeqCst) {
        let n = match sh.sock.recv(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                continue
            }
            Err(_) => {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        if n == 0 {
            continue; // a wake-up
        }
        let f = &buf[..n];
        if let Some(arp) = parse_arp(f) {
            handle_arp(sh, &arp);
            continue;
        }
        if to_pump.send(Msg::Frame(f.to_vec())).is_err() {
            return;
        }
    }
}

/// The fields of an Ethernet/IPv4 ARP packet.
struct Arp {
    op: u16,
    sha: [u8; 6],
    spa: Ipv4Addr,
    tpa: Ipv4Addr,
}

fn parse_arp(f: &[u8]) -> Option<Arp> {
    if f.len() < 42 || f[12..14] != [0x08, 0x06] {
        return None;
    }
    let a = &f[14..42];
    if a[0..6] != [0, 1, 0x08, 0x00, 6, 4] {
        return None;
    }
    let mut sha = [0u8; 6];
    sha.copy_from_slice(&a[8..14]);
    Some(Arp {
        op: u16::from_be_bytes([a[6], a[7]]),
        sha,
        spa: Ipv4Addr::new(a[14], a[15], a[16], a[17]),
        tpa: Ipv4Addr::new(a[24], a[25], a[26], a[27]),
    })
}

fn handle_arp(sh: &Shared, a: &Arp) {
    let me = sh.cfg.ipv4;
    if !a.spa.is_unspecified() && (a.op == 2 || a.tpa == me) {
        lock(&sh.neigh).insert(a.spa, a.sha);
        sh.neigh_cv.notify_all();
    }
    if a.op == 1 && a.tpa == me {
        let r = arp_frame(2, a.sha, sh.cfg.mac, me, a.sha, a.spa);
        if sh.send_frame(&r) {
            sh.stats.arp_replies.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn arp_frame(op: u16, eth_dst: [u8; 6], sha: [u8; 6], spa: Ipv4Addr, tha: [u8; 6], tpa: Ipv4Addr) -> Vec<u8> {
    let mut r = Vec::with_capacity(60);
    r.extend_from_slice(&eth_dst);
    r.extend_from_slice(&sha);
    r.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4]);
    r.extend_from_slice(&op.to_be_bytes());
    r.extend_from_slice(&sha);
    r.extend_from_slice(&spa.octets());
    r.extend_from_slice(&tha);
    r.extend_from_slice(&tpa.octets());
    r.resize(60, 0);
    r
}

/// A broadcast ARP request for `target` from `mac`/`ip` (60 bytes, untagged).
pub fn arp_request(mac: [u8; 6], ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    arp_frame(1, [0xff; 6], mac, ip, [0; 6], target)
}

/// `roce-driver` backend over a [`NetDev`]'s engine: MMIO goes to the engine's register file
/// at the engine's current cycle, DMA buffers are windows of its host memory. Each call locks
/// the node briefly; `Send`, so the driver may run on any thread.
#[derive(Clone)]
pub struct NetDevBackend(Arc<Shared>);

impl std::fmt::Debug for NetDevBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("NetDevBackend").field(&self.0.cfg.local_sock).finish()
    }
}

impl Backend for NetDevBackend {
    fn read32(&mut self, off: u32) -> u32 {
        lock(&self.0.node).engine.mmio_read(off)
    }

    fn write32(&mut self, off: u32, val: u32) {
        {
            let mut g = lock(&self.0.node);
            let n = &mut *g;
            n.now = n.now.max(self.0.wall_cycle());
            n.engine.mmio_write(n.now, off, val, &mut n.mem);
        }
        if matches!(off, regs::SQ_DB | regs::RQ_DB | regs::CQ_DB | regs::CMD | regs::CTRL) {
            self.0.wake_pump();
        }
    }

    fn bf_write(&mut self, _qpn: u32, wqe: &[u8; 128]) -> bool {
        {
            let mut g = lock(&self.0.node);
            let n = &mut *g;
            n.now = n.now.max(self.0.wall_cycle());
            n.engine.bf_write(n.now, wqe, &mut n.mem);
        }
        self.0.wake_pump();
        true
    }

    fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf, DriverError> {
        let mut n = lock(&self.0.node);
        let len_pg = (len.max(1) as u64).div_ceil(4096) * 4096;
        let iova = n.next_iova;
        n.next_iova += len_pg + 4096; // a guard page between buffers
        n.mem.map_window(iova, len_pg);
        Ok(DmaBuf { iova, len, id: 0 })
    }

    fn dma_free(&mut self, buf: DmaBuf) {
        lock(&self.0.node).mem.unmap_window(buf.iova);
    }

    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        lock(&self.0.node).mem.read(buf.iova + off as u64, out);
    }

    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        lock(&self.0.node).mem.write(buf.iova + off as u64, data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_driver::{Device, RecvWr, SendWr, WorkCompletion, WrOp};

    fn assert_send<T: Send>() {}

    #[test]
    fn backend_is_send() {
        assert_send::<NetDevBackend>();
        assert_send::<NetDev>();
    }

    #[test]
    fn arp_round_trip() {
        let req = arp_request([2, 0, 0, 0, 0, 1], Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let a = parse_arp(&req).unwrap();
        assert_eq!(
            (a.op, a.sha, a.spa, a.tpa),
            (1, [2, 0, 0, 0, 0, 1], Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2))
        );
        assert_eq!(req.len(), 60);
        assert!(parse_arp(&req[..41]).is_none());
    }

    /// Two NetDevs in one process, wired to each other: ARP both ways, then SENDs.
    #[test]
    fn two_netdevs_exchange_sends() {
        use roce_driver::device::Features;
        use roce_driver::{masks, AccessFlags, Encap, PathMtu, QpAttr, QpState};
        use std::net::IpAddr;
        let dir = std::env::temp_dir().join(format!("netdev-ut-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (sa, sb) = (dir.join("a.sock"), dir.join("b.sock"));
        let mut ca = NetDevConfig::new(&sa, &sb);
        ca.ipv4 = Ipv4Addr::new(192, 0, 2, 10);
        ca.mac = [2, 0, 0, 0, 0, 0x10];
        let mut cb = NetDevConfig::new(&sb, &sa);
        cb.ipv4 = Ipv4Addr::new(192, 0, 2, 11);
        cb.mac = [2, 0, 0, 0, 0, 0x11];
        let (na, nb) = (NetDev::open(ca.clone()).unwrap(), NetDev::open(cb.clone()).unwrap());
        assert!(NetDev::open(ca.clone()).is_err(), "a live socket is not replaced");
        assert_eq!(na.resolve(cb.ipv4, Duration::from_secs(2)), Some(cb.mac));
        assert_eq!(nb.resolve(ca.ipv4, Duration::from_secs(2)), Some(ca.mac));
        let size = 3000usize;
        let side = |n: &NetDev, c: &NetDevConfig| {
            let mut d = Device::open(n.backend()).unwrap();
            d.configure_port(c.mac, c.ipv4, c.ipv4.to_ipv6_mapped());
            d.enable(Features::default());
            let pd = d.alloc_pd();
            let buf = d.alloc_buf(2 * size).unwrap();
            let mr = d.reg_mr(pd, &buf, 0, buf.len, AccessFlags::LOCAL_WRITE).unwrap();
            let cq = d.create_cq(64).unwrap();
            let qp = d.create_qp(pd, cq, cq, 16, 16).unwrap();
            (d, buf, mr, cq, qp)
        };
        let (mut da, bufa, mra, cqa, qpa) = side(&na, &ca);
        let (mut db, bufb, mrb, cqb, qpb) = side(&nb, &cb);
        let conn = |d: &mut Device<NetDevBackend>, qp, dqp, mac, ip: Ipv4Addr, psn_me, psn_peer| {
            let mut a = QpAttr {
                state: QpState::Init,
                path_mtu: PathMtu::Mtu1024,
                dest_qpn: dqp,
                rq_psn: psn_peer,
                sq_psn: psn_me,
                encap: Encap::RoceV2Ipv4,
                dest_mac: mac,
                dest_ip: IpAddr::V4(ip),
                ..QpAttr::default()
            };
            d.modify_qp(qp, &a, masks::INIT).unwrap();
            a.state = QpState::Rtr;
            d.modify_qp(qp, &a, masks::RTR).unwrap();
            a.state = QpState::Rts;
            d.modify_qp(qp, &a, masks::RTS).unwrap();
        };
        conn(&mut da, qpa, qpb.qpn(), cb.mac, cb.ipv4, 100, 200);
        conn(&mut db, qpb, qpa.qpn(), ca.mac, ca.ipv4, 200, 100);
        let pattern: Vec<u8> = (0..size).map(|i| (i * 7 + 1) as u8).collect();
        da.write_buf(&bufa, 0, &pattern);
        let mut wcs = [WorkCompletion {
            wr_id: 0,
            status: roce_driver::CqeStatus::Success,
            opcode: roce_driver::CqeOpcode::Send,
            byte_len: 0,
            imm: None,
            invalidated: None,
            qpn: 0,
            src_qp: 0,
        }; 4];
        let t = Instant::now();
        for i in 0..5u64 {
            db.post_recv(qpb, &[RecvWr { wr_id: i, sges: &[mrb.sge(0, size as u32)] }]).unwrap();
            da.post_send(qpa, &[SendWr::new(i, WrOp::Send, &[mra.sge(0, size as u32)])]).unwrap();
            let (mut got_a, mut got_b) = (false, false);
            let (mut seen_a, mut seen_b) = (0, 0);
            let end = Instant::now() + Duration::from_secs(5);
            while !(got_a && got_b) {
                assert!(Instant::now() < end, "message {i} did not complete: {:?} {:?}", na.stats(), nb.stats());
                if da.poll_cq(cqa, &mut wcs).unwrap() > 0 {
                    assert_eq!(wcs[0].status, roce_driver::CqeStatus::Success);
                    got_a = true;
                }
                if db.poll_cq(cqb, &mut wcs).unwrap() > 0 {
                    assert_eq!((wcs[0].status, wcs[0].byte_len), (roce_driver::CqeStatus::Success, size as u32));
                    got_b = true;
                }
                na.wait_activity(&mut seen_a, Duration::from_millis(1));
                nb.wait_activity(&mut seen_b, Duration::from_millis(1));
            }
            let mut back = vec![0u8; size];
            db.read_buf(&bufb, 0, &mut back);
            assert_eq!(back, pattern);
        }
        eprintln!("5 SENDs of {size} B in {:?}: {:?} / {:?}", t.elapsed(), na.stats(), nb.stats());
        drop((da, db));
        drop(na);
        assert!(!sa.exists(), "socket removed on drop");
        drop(nb);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
