//! A simulated engine in the application's process: the Rust engine model or the Verilated
//! HDL engine, run by its own thread, with its Ethernet port on a unix datagram socket and its
//! DMA on the process's memory. [`SimBackend`] is the `roce-driver` backend that programs it.
//!
//! ```text
//!   application threads                      engine thread
//!   driver ── write32 ──► request queue ──►  MMIO into the engine (posted)
//!          ── read32  ──► request queue ──►  MMIO read ──► reply
//!          ── rings: RingMem (coherence lock) ◄── DMA (ProcDma, same lock, same memory)
//!   registered buffers (the app's own) ◄──── DMA (windows mapped by map_user)
//!                                            frames ◄──► unix datagram socket (peer)
//!                                            IRQ line (IRQ_STATUS & ~IRQ_MASK) ──► eventfd
//! ```
//!
//! Time: the model runs on the wall clock at its 250 MHz (a cycle is 4 ns of real time), so
//! its timers (ACK timeout, RNR) mean what they say to a peer in real time. The Verilated
//! engine is far slower than real time; it runs its own cycles, as many as its work needs
//! after each event (request, frame) and a few hundred per 5 ms when idle so its timers
//! advance.

pub mod mem;
pub mod net;

use std::collections::{HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use roce_driver::{Backend, DmaBuf, DriverError};
use roce_model::contract::regs;
use roce_model::engine::{Engine, EngineConfig};
use roce_sim::net::hdl::{HdlConfig, HdlEngine};

use crate::config;
use crate::fd::{poll_in, EventFd};
use mem::{Coherence, RingMem, Window, Windows};
use net::{Arp, Neighbours};

/// Errors starting a simulated device.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The socket could not be bound.
    #[error("bind {path}: {source}")]
    Bind {
        /// The path.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// An OS resource (eventfd, thread) could not be made.
    #[error("{0}: {1}")]
    Os(&'static str, #[source] std::io::Error),
    /// The Verilated engine did not start.
    #[error("the Verilated engine: {0}")]
    Hdl(String),
    /// The engine thread ended before reporting.
    #[error("the engine thread ended while starting")]
    Thread,
}

/// What a simulated device runs on.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// Model or HDL.
    pub engine: config::Engine,
    /// Socket to bind.
    pub local: PathBuf,
    /// Socket to send to.
    pub peer: PathBuf,
    /// Port address.
    pub ip: Ipv4Addr,
    /// Station MAC.
    pub mac: [u8; 6],
}

/// Counters of a simulated device.
#[derive(Debug, Default)]
pub struct SimStats {
    /// Frames received from the socket (ARP included).
    pub frames_in: AtomicU64,
    /// Frames sent.
    pub frames_out: AtomicU64,
    /// Frames the socket refused (peer absent or its queue full): lost on the link.
    pub frames_dropped: AtomicU64,
    /// Engine cycles simulated so far.
    pub cycles: AtomicU64,
    /// DMA accesses outside the mapped windows.
    pub dma_faults: AtomicU64,
    /// Bytes the engine's DMA read straight from the application's registered memory.
    pub user_dma_read: AtomicU64,
    /// Bytes the engine's DMA wrote straight into the application's registered memory.
    pub user_dma_written: AtomicU64,
}

/// State shared by the backend and the engine thread.
#[derive(Debug)]
pub struct Shared {
    coherence: Coherence,
    /// The neighbour table ARP fills.
    pub neigh: Neighbours,
    wake: EventFd,
    /// The interrupt (MSI): signalled when IRQ_STATUS & ~IRQ_MASK goes non-zero.
    pub irq: EventFd,
    /// Counters.
    pub stats: SimStats,
    /// Port address and MAC.
    pub ip: Ipv4Addr,
    /// Station MAC.
    pub mac: [u8; 6],
}

enum Req {
    Write(u32, u32),
    /// An inline doorbell: a WQE image for the BlueFlame window.
    Bf(Box<[u8; 128]>),
    Read(u32, SyncSender<u32>),
    Map(Window),
    Unmap(usize, SyncSender<()>),
    Arp(Ipv4Addr),
    /// Print the figures now (`ROCE_VERBS_STATS=1`, at process exit).
    Report(SyncSender<()>),
    Stop,
}

/// The engines of this process that print their figures (`ROCE_VERBS_STATS=1`): at exit,
/// those whose device was never closed (a program that exits with objects still open) print
/// theirs from an `atexit` handler.
static REPORTERS: std::sync::Mutex<Vec<Reporter>> = std::sync::Mutex::new(Vec::new());

/// An engine that prints its figures: its id, its request queue and its wake-up.
type Reporter = (usize, Sender<Req>, Arc<Shared>);

fn reporters() -> std::sync::MutexGuard<'static, Vec<Reporter>> {
    REPORTERS.lock().unwrap_or_else(|p| p.into_inner())
}

extern "C" fn report_at_exit() {
    let list: Vec<_> = reporters().drain(..).collect();
    for (_, tx, shared) in list {
        let (t, r) = mpsc::sync_channel(1);
        if tx.send(Req::Report(t)).is_ok() {
            shared.wake.signal();
            let _ = r.recv_timeout(Duration::from_secs(2));
        }
    }
}

fn stats_wanted() -> bool {
    std::env::var(STATS_ENV).is_ok_and(|v| v == "1")
}

/// The `roce-driver` backend of a simulated engine; dropping it stops the engine thread.
pub struct SimBackend {
    tx: Sender<Req>,
    shared: Arc<Shared>,
    rings: HashMap<usize, RingMem>,
    users: HashMap<usize, DmaBuf>,
    next_id: usize,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for SimBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimBackend").field("ip", &self.shared.ip).finish_non_exhaustive()
    }
}

impl SimBackend {
    /// Bind the socket and start the engine thread.
    pub fn start(cfg: SimConfig) -> Result<Self, SimError> {
        // A stale socket file of an earlier run would make bind fail.
        let _ = std::fs::remove_file(&cfg.local);
        let sock =
            UnixDatagram::bind(&cfg.local).map_err(|source| SimError::Bind { path: cfg.local.clone(), source })?;
        // Sends must not block: a peer's queue holds only net.unix.max_dgram_qlen (10)
        // datagrams, and two engines each blocked sending to the other's full queue would
        // never read their own (see Node::flush).
        sock.set_nonblocking(true).map_err(|e| SimError::Os("set_nonblocking", e))?;
        let shared = Arc::new(Shared {
            coherence: Coherence::default(),
            neigh: Neighbours::default(),
            wake: EventFd::new().map_err(|e| SimError::Os("eventfd", e))?,
            irq: EventFd::new().map_err(|e| SimError::Os("eventfd", e))?,
            stats: SimStats::default(),
            ip: cfg.ip,
            mac: cfg.mac,
        });
        let (tx, rx) = mpsc::channel();
        let (ready_tx, ready_rx) = mpsc::sync_channel(1);
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("roce-engine".into())
            .spawn(move || {
                let ecfg = EngineConfig {
                    mac: cfg.mac,
                    ipv4: cfg.ip,
                    gid: cfg.ip.to_ipv6_mapped(),
                    ..EngineConfig::default()
                };
                let core = match cfg.engine {
                    config::Engine::Model => Ok(Core::Model(Box::new(Engine::new(ecfg.clone())))),
                    config::Engine::Hdl => HdlEngine::new(HdlConfig {
                        host_mem: ecfg.host_mem,
                        line_bytes_per_cycle: ecfg.line_bytes_per_cycle(),
                        ..HdlConfig::default()
                    })
                    .map(|h| Core::Hdl(Box::new(h)))
                    .map_err(|e| e.to_string()),
                };
                let core = match core {
                    Ok(c) => {
                        let _ = ready_tx.send(Ok(()));
                        c
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let node = Node {
                    core,
                    win: Windows::default(),
                    sock,
                    peer: cfg.peer,
                    shared: sh,
                    start: Instant::now(),
                    clock_mhz: ecfg.clock_mhz,
                    irq_line: false,
                    idle_at: Instant::now(),
                    window: None,
                    busy_cycles: 0,
                    rx_pending: false,
                    outq: VecDeque::new(),
                };
                node.run(rx);
            })
            .map_err(|e| SimError::Os("spawn the engine thread", e))?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(SimError::Hdl(e));
            }
            Err(_) => {
                let _ = thread.join();
                return Err(SimError::Thread);
            }
        }
        if stats_wanted() {
            static HOOKED: std::sync::Once = std::sync::Once::new();
            // SAFETY: registers a handler that only sends on channels and waits with a
            // timeout; it is an `extern "C" fn()` of this library, which stays loaded.
            HOOKED.call_once(|| unsafe {
                libc::atexit(report_at_exit);
            });
            reporters().push((Arc::as_ptr(&shared) as usize, tx.clone(), Arc::clone(&shared)));
        }
        Ok(SimBackend { tx, shared, rings: HashMap::new(), users: HashMap::new(), next_id: 1, thread: Some(thread) })
    }

    /// State shared with the engine thread (neighbours, interrupt eventfd, counters).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    fn send(&self, r: Req) {
        if self.tx.send(r).is_ok() {
            self.shared.wake.signal();
        }
    }

    /// Ask the port to resolve `ip` with an ARP request (the answer lands in
    /// [`Shared::neigh`]).
    pub fn arp_request(&self, ip: Ipv4Addr) {
        self.send(Req::Arp(ip));
    }

    fn sync(&self, make: impl FnOnce(SyncSender<()>) -> Req) {
        let (t, r) = mpsc::sync_channel(1);
        self.send(make(t));
        // An error means the engine thread is gone, which cannot reach memory any more.
        let _ = r.recv();
    }
}

impl Backend for SimBackend {
    fn read32(&mut self, off: u32) -> u32 {
        let (t, r) = mpsc::sync_channel(1);
        self.send(Req::Read(off, t));
        // no engine thread: a read nobody answers, as on PCIe
        r.recv().unwrap_or(u32::MAX)
    }

    fn write32(&mut self, off: u32, val: u32) {
        self.send(Req::Write(off, val));
    }

    fn bf_write(&mut self, _qpn: u32, wqe: &[u8; 128]) -> bool {
        self.send(Req::Bf(Box::new(*wqe)));
        true
    }

    fn dma_alloc(&mut self, len: usize) -> roce_driver::error::Result<DmaBuf> {
        let m = RingMem::new(len).ok_or(DriverError::Dma { len, why: "out of memory".into() })?;
        let id = self.next_id;
        self.next_id += 1;
        let buf = DmaBuf { iova: m.addr(), len, id };
        self.send(Req::Map(Window { id, start: m.addr(), len: m.size() as u64, user: false }));
        self.rings.insert(id, m);
        Ok(buf)
    }

    fn dma_free(&mut self, buf: DmaBuf) {
        if self.rings.get(&buf.id).is_some_and(|m| m.addr() == buf.iova) {
            self.sync(|t| Req::Unmap(buf.id, t));
            self.rings.remove(&buf.id);
        }
    }

    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        let ok = off.checked_add(out.len()).is_some_and(|e| e <= buf.len)
            && self
                .rings
                .get(&buf.id)
                .is_some_and(|m| m.addr() == buf.iova && m.read(&self.shared.coherence, off, out));
        if !ok {
            out.fill(0);
        }
    }

    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        if off.checked_add(data.len()).is_some_and(|e| e <= buf.len) {
            if let Some(m) = self.rings.get(&buf.id).filter(|m| m.addr() == buf.iova) {
                m.write(&self.shared.coherence, off, data);
            }
        }
    }

    unsafe fn map_user(&mut self, addr: *mut u8, len: usize) -> roce_driver::error::Result<DmaBuf> {
        if (addr as u64).checked_add(len as u64).is_none() {
            return Err(DriverError::OutOfBounds {
                what: "application memory",
                off: addr as u64,
                len: len as u64,
                size: u64::MAX,
            });
        }
        let id = self.next_id;
        self.next_id += 1;
        let buf = DmaBuf { iova: addr as u64, len, id };
        self.send(Req::Map(Window { id, start: addr as u64, len: len as u64, user: true }));
        self.users.insert(id, buf);
        Ok(buf)
    }

    fn unmap_user(&mut self, buf: DmaBuf) {
        if self.users.get(&buf.id) == Some(&buf) {
            self.sync(|t| Req::Unmap(buf.id, t));
            self.users.remove(&buf.id);
        }
    }
}

impl Drop for SimBackend {
    fn drop(&mut self) {
        let me = Arc::as_ptr(&self.shared) as usize;
        reporters().retain(|(id, ..)| *id != me);
        let _ = self.tx.send(Req::Stop);
        self.shared.wake.signal();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        // the engine thread is gone: the rings can be freed (RingMem's Drop)
    }
}

enum Core {
    Model(Box<Engine>),
    Hdl(Box<HdlEngine>),
}

/// HDL cycles run per step while the engine has work in its harness.
const HDL_CHUNK: u64 = 64;
/// HDL cycles run after activity (a WQE fetch and its packets take a few hundred).
const HDL_SETTLE: u64 = 1024;
/// HDL cycles run per idle period, so its timers advance.
const HDL_IDLE_CYCLES: u64 = 256;
/// The idle period.
const HDL_IDLE_PERIOD: Duration = Duration::from_millis(5);
/// Longest sleep of the engine thread.
const MAX_SLEEP: Duration = Duration::from_millis(50);

struct Node {
    core: Core,
    win: Windows,
    sock: UnixDatagram,
    peer: PathBuf,
    shared: Arc<Shared>,
    start: Instant,
    clock_mhz: f64,
    irq_line: bool,
    idle_at: Instant,
    /// Engine cycles of the first and the last RoCE frame in or out (the Verilated engine:
    /// of the first and last run of cycles that took or made one).
    window: Option<(u64, u64)>,
    /// HDL cycles run while the engine had work (its harness busy), without the settling
    /// and idle cycles run to let its timers advance.
    busy_cycles: u64,
    /// A RoCE frame was queued into the Verilated engine since its last run.
    rx_pending: bool,
    /// Frames the peer's full socket queue has not taken yet, in order.
    outq: VecDeque<Vec<u8>>,
}

/// Print a simulated engine's figures when it stops (`ROCE_VERBS_STATS=1`).
pub const STATS_ENV: &str = "ROCE_VERBS_STATS";

impl Node {
    /// The model's cycle for now (the wall clock at the engine's clock rate).
    fn now(&self) -> u64 {
        match &self.core {
            Core::Model(_) => (self.start.elapsed().as_nanos() as f64 * self.clock_mhz / 1000.0) as u64,
            Core::Hdl(h) => h.cycle,
        }
    }

    fn run(mut self, rx: Receiver<Req>) {
        let mut buf = vec![0u8; 65536];
        loop {
            let mut active = false;
            loop {
                match rx.try_recv() {
                    Ok(Req::Stop) | Err(TryRecvError::Disconnected) => {
                        if stats_wanted() {
                            self.report();
                        }
                        return;
                    }
                    Ok(Req::Report(done)) => {
                        self.report();
                        let _ = done.send(());
                    }
                    Ok(r) => {
                        self.request(r);
                        active = true;
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            loop {
                // SAFETY: receives into a valid buffer of its length from our own socket.
                let n = unsafe {
                    libc::recv(self.sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), libc::MSG_DONTWAIT)
                };
                if n <= 0 {
                    break;
                }
                self.frame_in(&buf[..n as usize]);
                active = true;
            }
            active |= self.step(active);
            self.flush();
            if active || matches!(self.core, Core::Model(_)) {
                self.check_irq();
            }
            self.shared.stats.cycles.store(self.now(), Ordering::Relaxed);
            self.shared.stats.dma_faults.store(self.win.faults, Ordering::Relaxed);
            self.shared.stats.user_dma_read.store(self.win.user_read, Ordering::Relaxed);
            self.shared.stats.user_dma_written.store(self.win.user_written, Ordering::Relaxed);
            let wait = if active {
                Duration::ZERO
            } else if !self.outq.is_empty() {
                // the peer's queue is full: look again soon (its reads make room)
                self.idle_wait().min(Duration::from_micros(200))
            } else {
                self.idle_wait()
            };
            if !wait.is_zero() {
                poll_in(&[self.sock.as_raw_fd(), self.shared.wake.fd()], Some(wait));
            }
            self.shared.wake.drain();
        }
    }

    fn mark(&mut self) {
        let now = self.now();
        self.window = Some(self.window.map_or((now, now), |(a, _)| (a, now)));
    }

    /// One line of figures on stderr: the engine's cycles between its first and last RoCE
    /// frame (the time the traffic took in the engine's clock), and its counters.
    fn report(&mut self) {
        let wall = self.start.elapsed().as_secs_f64();
        let Node { core, win, shared, .. } = self;
        let (kind, c) = match core {
            Core::Model(e) => ("model", e.counters.clone()),
            Core::Hdl(h) => ("HDL", h.counters(&mut win.dma(&shared.coherence)).unwrap_or_default()),
        };
        let cycles = self.window.map_or(0, |(a, b)| b - a);
        let us = cycles as f64 / self.clock_mhz;
        let busy = match core {
            Core::Model(_) => String::new(),
            Core::Hdl(_) => format!(" ({} of them busy)", self.busy_cycles),
        };
        eprintln!(
            "roce-verbs stats: {kind} engine {}: {cycles} cycles from first to last RoCE frame{busy} ({us:.1} us at {} MHz), \
             tx {} frames {} B, rx {} frames {} B, retransmits {}, timeouts {}, CQEs {}, \
             DMA from app memory {} B, into app memory {} B, wall {wall:.2} s",
            self.shared.ip,
            self.clock_mhz,
            c.tx_frames,
            c.tx_bytes,
            c.rx_frames,
            c.rx_bytes,
            c.retransmits,
            c.timeouts,
            c.cqes,
            self.win.user_read,
            self.win.user_written,
        );
    }

    fn request(&mut self, r: Req) {
        if matches!(r, Req::Write(regs::IRQ_STATUS, _)) {
            // The handler acknowledged: a cause still (or again) pending after its write is
            // a new interrupt (what an MSI-generating device does after the W1C), not one
            // the handler has seen.
            self.irq_line = false;
        }
        let now = self.now();
        let Node { core, win, shared, .. } = self;
        let mut dma = win.dma(&shared.coherence);
        match r {
            Req::Write(off, val) => match core {
                Core::Model(e) => e.mmio_write(now, off, val, &mut dma),
                Core::Hdl(h) => {
                    let _ = h.write32(off, val, &mut dma);
                }
            },
            Req::Bf(wqe) => match core {
                Core::Model(e) => {
                    e.bf_write(now, &wqe, &mut dma);
                }
                Core::Hdl(h) => {
                    let _ = h.bf_write(&wqe, &mut dma);
                }
            },
            Req::Read(off, reply) => {
                let v = match core {
                    Core::Model(e) => e.mmio_read(off),
                    Core::Hdl(h) => h.read32(off, &mut dma).unwrap_or(u32::MAX),
                };
                let _ = reply.send(v);
            }
            Req::Map(w) => win.map(w),
            Req::Unmap(id, done) => {
                win.unmap(id);
                let _ = done.send(());
            }
            Req::Arp(ip) => {
                let f = Arp::request(shared.mac, shared.ip, ip);
                self.send_frame(&f);
            }
            Req::Stop | Req::Report(_) => {}
        }
    }

    /// Send a frame to the peer, or queue it behind those its full queue has not taken.
    fn send_frame(&mut self, f: &[u8]) {
        if self.outq.is_empty() && self.try_send(f) {
            return;
        }
        self.outq.push_back(f.to_vec());
    }

    /// One send; false if the peer's queue is full (the frame is to be sent again). Any
    /// other error (no peer bound yet, or gone) loses the frame, as a link without a
    /// partner would.
    fn try_send(&self, f: &[u8]) -> bool {
        match self.sock.send_to(f, &self.peer) {
            Ok(_) => {
                self.shared.stats.frames_out.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(_) => {
                self.shared.stats.frames_dropped.fetch_add(1, Ordering::Relaxed);
                true
            }
        }
    }

    /// Send the queued frames the peer takes now. The engine thread keeps reading its own
    /// socket between attempts, so two engines sending to each other never wait for each
    /// other (with blocking sends both ended in unix_wait_for_peer: ib_send_bw and
    /// ib_read_bw of 30 x 64 KiB hung).
    fn flush(&mut self) {
        while let Some(f) = self.outq.front() {
            if !self.try_send(f) {
                return;
            }
            self.outq.pop_front();
        }
    }

    fn frame_in(&mut self, f: &[u8]) {
        self.shared.stats.frames_in.fetch_add(1, Ordering::Relaxed);
        if let Some(a) = Arp::parse(f) {
            self.shared.neigh.learn(a.spa, a.sha);
            if let Some(r) = a.reply_for(self.shared.mac, self.shared.ip) {
                self.send_frame(&r);
            }
            return;
        }
        if f.len() < 14 || f[..6] != self.shared.mac {
            return;
        }
        // the model takes the frame now; the Verilated engine queues it for its next cycles
        // (marked when it runs them)
        match self.core {
            Core::Model(_) => self.mark(),
            Core::Hdl(_) => self.rx_pending = true,
        }
        let now = self.now();
        let Node { core, win, shared, .. } = self;
        match core {
            Core::Model(e) => e.rx(now, f, &mut win.dma(&shared.coherence)),
            Core::Hdl(h) => h.rx(f),
        }
    }

    /// Run the engine up to now and send what it transmits; true if it sent anything.
    fn step(&mut self, active: bool) -> bool {
        let mut out = Vec::new();
        match &mut self.core {
            Core::Model(e) => {
                let now = (self.start.elapsed().as_nanos() as f64 * self.clock_mhz / 1000.0) as u64;
                let mut dma = self.win.dma(&self.shared.coherence);
                while let Some(f) = e.tx(now, &mut dma) {
                    out.push(f);
                }
            }
            Core::Hdl(h) => {
                let mut dma = self.win.dma(&self.shared.coherence);
                let idle_due = self.idle_at.elapsed() >= HDL_IDLE_PERIOD;
                if active || h.busy() {
                    let c0 = h.cycle;
                    let had_rx = std::mem::take(&mut self.rx_pending);
                    h.run_to(h.cycle + HDL_CHUNK, &mut dma);
                    while h.busy() {
                        h.run_to(h.cycle + HDL_CHUNK, &mut dma);
                        while let Some(f) = h.tx() {
                            out.push(f);
                        }
                    }
                    self.busy_cycles += h.cycle - c0;
                    if had_rx || !out.is_empty() {
                        // the frames were taken and made in [c0, now]
                        let w = self.window.map_or((c0, h.cycle), |(a, _)| (a, h.cycle));
                        self.window = Some(w);
                    }
                    h.run_to(h.cycle + HDL_SETTLE, &mut dma);
                    self.idle_at = Instant::now();
                } else if idle_due {
                    h.run_to(h.cycle + HDL_IDLE_CYCLES, &mut dma);
                    self.idle_at = Instant::now();
                }
                while let Some(f) = h.tx() {
                    out.push(f);
                }
            }
        }
        if !out.is_empty() && matches!(self.core, Core::Model(_)) {
            self.mark();
        }
        for f in &out {
            self.send_frame(f);
        }
        !out.is_empty()
    }

    /// The interrupt line: signal the eventfd when IRQ_STATUS & ~IRQ_MASK turns non-zero.
    fn check_irq(&mut self) {
        let Node { core, win, shared, .. } = self;
        let (st, mask) = match core {
            Core::Model(e) => (e.mmio_read(regs::IRQ_STATUS), e.mmio_read(regs::IRQ_MASK)),
            Core::Hdl(h) => {
                let mut dma = win.dma(&shared.coherence);
                (h.read32(regs::IRQ_STATUS, &mut dma).unwrap_or(0), h.read32(regs::IRQ_MASK, &mut dma).unwrap_or(!0))
            }
        };
        let line = st & !mask != 0;
        if line && !self.irq_line {
            self.shared.irq.signal();
        }
        self.irq_line = line;
    }

    /// How long to sleep with nothing happening.
    fn idle_wait(&self) -> Duration {
        match &self.core {
            Core::Model(e) => {
                let now = self.now();
                match e.next_event() {
                    Some(t) if t > now => {
                        Duration::from_nanos(((t - now) as f64 * 1000.0 / self.clock_mhz) as u64).min(MAX_SLEEP)
                    }
                    // due now: run again soon (a little later, so the clock moves on)
                    Some(_) => Duration::from_micros(5),
                    None => MAX_SLEEP,
                }
            }
            Core::Hdl(_) => HDL_IDLE_PERIOD.saturating_sub(self.idle_at.elapsed()).max(Duration::from_micros(100)),
        }
    }
}
