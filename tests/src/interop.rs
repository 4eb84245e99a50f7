//! The engine model as a live RoCEv2 peer of the Soft-RoCE VM: real time maps to engine
//! cycles (250 MHz), frames move between the engine and the VM's datagram socket, and the
//! host side runs ibv_rc_pingpong's algorithm on the engine through `roce-driver`.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use roce_driver::{CqeOpcode, CqeStatus, RecvWr, SendWr, WorkCompletion, WrOp};
use roce_model::wire::{parse_frame, Opcode, Position};
use roce_sim::hdl::HdlConfig;
use roce_sim::pair::{connect, endpoint_on, Endpoint, PairConfig};
use roce_sim::pcapio::{self, Captured};

use crate::rxevm::{arp_reply, RxeVm};

/// Where the engine's Ethernet goes: the VM's datagram socket, or a test's stand-in.
pub trait FrameLink {
    /// The next frame from the peer, or None after `timeout` (zero: only one already there).
    fn recv_frame(&self, timeout: Duration) -> Option<Vec<u8>>;
    /// Send a frame to the peer (a frame the link cannot take is lost, as on a wire).
    fn send_frame(&self, frame: &[u8]);
}

impl FrameLink for RxeVm {
    fn recv_frame(&self, timeout: Duration) -> Option<Vec<u8>> {
        RxeVm::recv_frame(self, timeout)
    }

    fn send_frame(&self, frame: &[u8]) {
        let _ = RxeVm::send_frame(self, frame);
    }
}

/// Which engine runs on the host side of the VM's link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineKind {
    /// The engine model, its clock the wall clock (250 MHz).
    Model,
    /// The Verilated engine.
    Hdl,
    /// The Verilated engine with the engine model beside it on the same frames, every frame,
    /// DMA write and completion compared (`roce_sim::shadow`); the first divergence is kept.
    Cosim,
}

impl EngineKind {
    /// "model", "HDL" or "cosim".
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Model => "model",
            EngineKind::Hdl => "HDL",
            EngineKind::Cosim => "cosim",
        }
    }

    /// The Verilated engine does the work (HDL or cosim).
    pub fn is_hdl(self) -> bool {
        self != EngineKind::Model
    }
}

/// An engine on the host side of the VM's link.
pub struct HostEngine {
    /// The endpoint (node, driver, PD, buffer, MR, CQ, QP).
    pub ep: Endpoint,
    /// Pair-style configuration (MTU, depths).
    pub cfg: PairConfig,
    start: Instant,
    /// Frames received from the VM.
    pub frames_in: u64,
    /// Frames sent to the VM.
    pub frames_out: u64,
    /// Every frame in and out, stamped with the engine's cycle (4 ns each), when
    /// [`HostEngine::capture_frames`] is set: the engine's view of the exchange.
    pub capture: Vec<Captured>,
    /// Record frames into `capture`.
    pub capture_frames: bool,
    /// Frames the engine sends that the link loses: numbers in `frames_out`'s count (1 =
    /// the first frame); they are neither sent nor recorded.
    pub drop_out: Vec<u64>,
    /// Frames from the VM (not ARP) that the link loses, numbered as `frames_in` counts them.
    pub drop_in: Vec<u64>,
    /// Which engine this is. The Verilated engine's time is its own cycle count: it runs as
    /// fast as the simulator can (about 10^5 cycles a second), continuously, with frames
    /// handed in as they arrive; its timers are scaled to that rate (see [`HostEngine::new_on`]).
    pub kind: EngineKind,
}

/// The clock the Verilated engine's timers are programmed for (`Device::set_clock_hz`): about
/// the rate the simulator runs it at in wall time, so that its local ACK timeout and RNR timer
/// take about the wall time they stand for (the VM's timers run in wall time) instead of
/// thousands of times longer. The engine's prescalers round it to one cycle per IB tick and
/// per microsecond.
pub const HDL_TIMER_CLOCK_HZ: u64 = 250_000;
/// Cycles the Verilated engine runs between looks at the VM's socket.
pub const HDL_SLICE_CYCLES: u64 = 32;

impl HostEngine {
    /// An engine with station MAC/IP, `buf_len` bytes registered, at path MTU `mtu`.
    pub fn new(mac: [u8; 6], ip: Ipv4Addr, mtu: u32, buf_len: usize, depth: u32) -> Self {
        Self::new_on(EngineKind::Model, mac, ip, mtu, buf_len, depth)
    }

    /// [`HostEngine::new`] on the engine `kind`.
    pub fn new_on(kind: EngineKind, mac: [u8; 6], ip: Ipv4Addr, mtu: u32, buf_len: usize, depth: u32) -> Self {
        // rxe (and the tools) use retry_cnt 7; the engine's own timeout is 4.096 us * 2^14.
        let cfg = PairConfig {
            mtu,
            depth,
            buf_len,
            timeout: 14,
            cosim: (kind == EngineKind::Cosim).then(HdlConfig::default),
            ..PairConfig::default()
        };
        let psn = 0x00_1234;
        let mut ep = endpoint_on(&cfg, kind.is_hdl(), mac, ip, ip.to_ipv6_mapped(), psn).expect("engine endpoint");
        if kind.is_hdl() {
            ep.dev.set_clock_hz(HDL_TIMER_CLOCK_HZ);
        }
        HostEngine {
            ep,
            cfg,
            start: Instant::now(),
            frames_in: 0,
            frames_out: 0,
            capture: Vec::new(),
            capture_frames: false,
            drop_out: Vec::new(),
            drop_in: Vec::new(),
            kind,
        }
    }

    /// The engine's counters (the Verilated engine's read through its registers).
    pub fn counters(&self) -> roce_model::engine::Counters {
        self.ep.node.borrow_mut().counters()
    }

    /// Cosim: both engines finish what they still have queued, then whatever one emitted and
    /// the other did not is a divergence too (call at the end of a run).
    pub fn finish_cosim(&mut self) {
        if self.kind == EngineKind::Cosim {
            self.ep.node.borrow_mut().shadow_finish();
        }
    }

    /// Cosim: flip a bit of the model's copy of host memory at `off` into the registered
    /// buffer, so that what the model sends from there differs from the Verilated engine's
    /// (proof that the comparison can fail).
    pub fn fault_model_memory(&mut self, off: u64) {
        let mut n = self.ep.node.borrow_mut();
        if let Some(s) = n.shadow.as_mut() {
            let va = self.ep.buf.iova + off;
            let x = s.mem.read_vec(va, 1).first().copied().unwrap_or(0);
            s.mem.write(va, &[x ^ 0x10]);
        }
    }

    /// Cosim: the first divergence between the Verilated engine and the model, if any.
    pub fn divergence(&self) -> Option<String> {
        let n = self.ep.node.borrow();
        n.shadow.as_ref().and_then(|s| s.divergence.as_ref()).map(|d| d.to_string())
    }

    /// Bring the QP to RTS towards the VM's QP.
    pub fn connect(&mut self, qpn: u32, psn: u32, mac: [u8; 6], ip: Ipv4Addr) {
        if !self.kind.is_hdl() {
            // The model's clock to now: the side channel took seconds, and what is posted next
            // is stamped with it (a stale clock would find its ACK timer long expired).
            let now = (self.start.elapsed().as_nanos() / 4) as u64;
            self.ep.node.borrow_mut().advance(now);
        }
        connect(&self.cfg, &mut self.ep, qpn, mac, IpAddr::V4(ip), psn).expect("connect");
    }

    /// The engine's cycle: the Verilated engine's own count, or the model's clock.
    pub fn engine_cycle(&self) -> u64 {
        let n = self.ep.node.borrow();
        n.hdl.as_ref().map_or(n.now, |h| h.cycle)
    }

    fn record(&mut self, f: &[u8]) {
        if self.capture_frames {
            let ts = Duration::from_nanos(self.engine_cycle() * 4);
            self.capture.push(Captured { ts, orig_len: f.len() as u32, data: f.to_vec() });
        }
    }

    /// Write [`HostEngine::capture`] to a pcap file (nanosecond timestamps = cycles x 4).
    pub fn save_capture(&self, path: &std::path::Path) -> Result<(), roce_sim::SimError> {
        pcapio::write_ns(path, &self.capture)
    }

    fn station_ip(&self) -> Ipv4Addr {
        match self.ep.ip {
            IpAddr::V4(v) => v,
            IpAddr::V6(v) => v.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
        }
    }

    /// A frame from the VM: answered here if it is ARP for us, else into the engine.
    fn deliver(&mut self, vm: &impl FrameLink, f: &[u8]) {
        if let Some(r) = arp_reply(f, self.station_ip(), self.ep.mac) {
            vm.send_frame(&r);
            return;
        }
        self.frames_in += 1;
        if self.drop_in.contains(&self.frames_in) {
            return;
        }
        if !self.kind.is_hdl() {
            self.model_catch_up(vm);
        }
        self.record(f);
        self.ep.node.borrow_mut().rx(f);
    }

    /// Move frames between the VM and the engine for about `dur`. The model: up to `dur`,
    /// returning after the first frames that arrive (its clock is the wall clock). The
    /// Verilated engine: runs for `dur`, in slices of [`HDL_SLICE_CYCLES`], taking every
    /// frame the VM sent before each slice and sending what it transmitted after it; when
    /// it is idle and nothing arrives it waits up to 1 ms for a frame.
    pub fn pump(&mut self, vm: &impl FrameLink, dur: Duration) {
        if self.kind.is_hdl() {
            self.pump_hdl(vm, dur);
            return;
        }
        self.model_catch_up(vm);
        let Some(f) = vm.recv_frame(dur) else { return };
        self.deliver(vm, &f);
        while let Some(f) = vm.recv_frame(Duration::ZERO) {
            self.deliver(vm, &f);
        }
        self.model_catch_up(vm);
    }

    /// The model up to the wall clock: every event it has scheduled until now, in order, and
    /// every frame it sends on the way (a packet's successor is scheduled by the packet's own
    /// event, so one `tx` at the current time alone would send one packet a call).
    fn model_catch_up(&mut self, vm: &impl FrameLink) {
        let now = (self.start.elapsed().as_nanos() / 4) as u64;
        let mut t = {
            let n = self.ep.node.borrow();
            n.next_event().map_or(now, |e| e.min(now)).max(n.now)
        };
        loop {
            self.ep.node.borrow_mut().advance(t);
            self.send_tx(vm);
            let next = self.ep.node.borrow().next_event();
            match next {
                Some(e) if e > t && e <= now => t = e,
                _ if t < now => t = now,
                _ => break,
            }
        }
    }

    fn pump_hdl(&mut self, vm: &impl FrameLink, dur: Duration) {
        let end = Instant::now() + dur;
        loop {
            let active = self.hdl_slice(vm);
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            if !active && !self.hdl_busy() {
                if let Some(f) = vm.recv_frame(left.min(Duration::from_millis(1))) {
                    self.deliver(vm, &f);
                }
            }
        }
    }

    /// One slice of the Verilated engine: every frame the link has now in, [`HDL_SLICE_CYCLES`]
    /// cycles, what it transmitted out. Whether anything happened.
    fn hdl_slice(&mut self, vm: &impl FrameLink) -> bool {
        let mut got = false;
        while let Some(f) = vm.recv_frame(Duration::ZERO) {
            self.deliver(vm, &f);
            got = true;
        }
        let busy = self.hdl_busy();
        {
            let mut n = self.ep.node.borrow_mut();
            let t = n.hdl.as_ref().map_or(n.now, |h| h.cycle) + HDL_SLICE_CYCLES;
            n.advance(t);
        }
        let sent = self.send_tx(vm);
        got || busy || sent
    }

    /// The Verilated engine: run `cycles` cycles (rounded up to whole slices) as
    /// [`HostEngine::pump`] does, whatever the wall clock says (for tests over a stand-in
    /// link that measure in cycles).
    pub fn run_cycles(&mut self, vm: &impl FrameLink, cycles: u64) {
        assert!(self.kind.is_hdl(), "run_cycles is for the Verilated engine");
        let end = self.engine_cycle() + cycles;
        while self.engine_cycle() < end {
            self.hdl_slice(vm);
        }
    }

    /// The Verilated engine's harness still has frames or DMA in flight.
    fn hdl_busy(&self) -> bool {
        self.ep.node.borrow().hdl.as_ref().is_some_and(|h| h.busy())
    }

    /// Send what the engine transmitted; whether there was anything.
    fn send_tx(&mut self, vm: &impl FrameLink) -> bool {
        let mut any = false;
        loop {
            let Some(f) = self.ep.node.borrow_mut().tx() else { break };
            self.frames_out += 1;
            any = true;
            if self.drop_out.contains(&self.frames_out) {
                continue;
            }
            self.record(&f);
            vm.send_frame(&f);
        }
        any
    }
}

/// What a ping-pong run did.
#[derive(Clone, Debug, Default)]
pub struct PingpongResult {
    /// SENDs completed.
    pub sent: u32,
    /// SENDs received.
    pub received: u32,
    /// Received messages whose bytes were not rc_pingpong's 0x7b fill.
    pub bad_payload: u32,
    /// Completions with an error status.
    pub errors: Vec<CqeStatus>,
    /// The work request of each of `errors` (a SEND's number, from 0; receives 1000000 + n).
    pub error_wr_ids: Vec<u64>,
}

/// ibv_rc_pingpong's loop on the engine: keep receives posted; whenever nothing is pending
/// and fewer than `iters` SENDs went out, send one `size`-byte message (rc_pingpong fills its
/// buffer with 0x7b). The client side starts with a SEND; the server waits for one.
pub fn pingpong(
    h: &mut HostEngine,
    vm: &impl FrameLink,
    client: bool,
    size: usize,
    iters: u32,
    timeout: Duration,
) -> PingpongResult {
    const SEND: u8 = 1;
    const RECV: u8 = 2;
    let mut r = PingpongResult::default();
    let slots = h.cfg.depth as usize / 2;
    let recv_off = size * slots; // receives in the second half of the buffer
                                 // our send buffer: rc_pingpong's fill
    h.ep.dev.write_buf(&h.ep.buf, 0, &vec![0x7bu8; size]);
    let mut posted = 0u64;
    let mut post_recvs = |h: &mut HostEngine, upto: u64| {
        while posted < upto {
            let slot = (posted as usize) % slots;
            let sge = [h.ep.mr.sge((recv_off + slot * size) as u64, size as u32)];
            h.ep.dev.post_recv(h.ep.qp, &[RecvWr { wr_id: 1_000_000 + posted, sges: &sge }]).expect("post_recv");
            posted += 1;
        }
    };
    post_recvs(h, slots as u64);
    let send = |h: &mut HostEngine, n: u32| {
        let sge = [h.ep.mr.sge(0, size as u32)];
        let wr = SendWr::new(u64::from(n), WrOp::Send, &sge);
        h.ep.dev.post_send(h.ep.qp, &[wr]).expect("post_send");
    };
    let mut pending = RECV;
    if client {
        send(h, 0);
        pending |= SEND;
    }
    let end = Instant::now() + timeout;
    let mut wcs = [WorkCompletion::EMPTY; 8];
    let mut got = vec![0u8; size];
    while (r.received < iters || r.sent < iters) && Instant::now() < end && r.errors.is_empty() {
        h.pump(vm, Duration::from_micros(500));
        let k = h.ep.dev.poll_cq(h.ep.cq, &mut wcs).expect("poll_cq");
        for wc in &wcs[..k] {
            if wc.status != CqeStatus::Success {
                r.errors.push(wc.status);
                r.error_wr_ids.push(wc.wr_id);
                continue;
            }
            if wc.opcode == CqeOpcode::Recv {
                let slot = ((wc.wr_id - 1_000_000) as usize) % slots;
                h.ep.dev.read_buf(&h.ep.buf, recv_off + slot * size, &mut got);
                if wc.byte_len as usize != size || got.iter().any(|&b| b != 0x7b) {
                    r.bad_payload += 1;
                }
                r.received += 1;
                let upto = u64::from(r.received) + slots as u64;
                post_recvs(h, upto);
                pending &= !RECV;
            } else {
                r.sent += 1;
                pending &= !SEND;
            }
            if r.sent < iters && pending == 0 {
                send(h, r.sent);
                pending = RECV | SEND;
            }
        }
    }
    // let the last ACKs go out
    let tail = Instant::now() + Duration::from_millis(300);
    while Instant::now() < tail {
        h.pump(vm, Duration::from_millis(5));
    }
    r
}

/// The GID (IPv4-mapped) of an IPv4 address, as the pingpong exchange carries it.
pub fn gid_of(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// A RoCE packet of a capture, decoded for the payload checks.
struct Pkt {
    from_engine: bool,
    opcode: Opcode,
    psn: u32,
    reth: Option<(u64, u32)>,
    payload: Vec<u8>,
}

fn packets(h: &HostEngine) -> Vec<Pkt> {
    h.capture
        .iter()
        .filter_map(|c| {
            let f = parse_frame(&c.data).ok()?;
            let r = f.roce()?;
            Some(Pkt {
                from_engine: f.eth().src() == h.ep.mac,
                opcode: r.opcode(),
                psn: r.bth().psn(),
                reth: r.reth().map(|x| (x.va(), x.dma_len())),
                payload: r.payload().to_vec(),
            })
        })
        .collect()
}

/// The first copy of each request PSN the peer sent, in PSN order (retransmissions carry the
/// same bytes; the link may have reordered them; a PSN is only reused after 2^24 packets).
fn first_copies(h: &HostEngine) -> Vec<Pkt> {
    let mut seen = std::collections::HashSet::new();
    let mut v: Vec<Pkt> = packets(h).into_iter().filter(|p| !p.from_engine && seen.insert(p.psn)).collect();
    if let Some(base) = v.first().map(|p| p.psn) {
        // serial order from the first packet seen (less than 2^23 apart)
        v.sort_by_key(|p| ((p.psn.wrapping_sub(base) << 8) as i32) >> 8);
    }
    v
}

/// Checks of the data a peer moved, from the engine's capture ([`HostEngine::capture`], kept
/// with `capture_frames`) against the engine's memory: what was checked, in bytes.
impl HostEngine {
    fn mr_offset(&self, va: u64, len: usize) -> Result<usize, String> {
        let off = va.checked_sub(self.ep.mr.va).ok_or(format!("VA {va:#x} below the MR"))? as usize;
        if off + len > self.ep.buf.len {
            return Err(format!("VA {va:#x} + {len} beyond the MR"));
        }
        Ok(off)
    }

    /// RDMA WRITEs the peer sent: the engine's memory holds, at every address written, the
    /// bytes of the last WRITE packet to it (each packet at its message's VA + its place in
    /// the message x MTU).
    pub fn verify_writes(&self) -> Result<u64, String> {
        let mtu = u64::from(self.cfg.mtu);
        let mut msg: Option<(u32, u64)> = None;
        let mut image: std::collections::BTreeMap<u64, Vec<u8>> = Default::default();
        for p in first_copies(self).iter().filter(|p| p.opcode.is_rdma_write()) {
            if let Some((va, _)) = p.reth {
                msg = Some((p.psn, va));
            }
            let (first, va) = msg.ok_or(format!("WRITE PSN {:#x} without its FIRST", p.psn))?;
            let k = u64::from(p.psn.wrapping_sub(first) & 0xFF_FFFF);
            image.insert(va + k * mtu, p.payload.clone());
        }
        let mut n = 0u64;
        for (va, want) in &image {
            let mut got = vec![0u8; want.len()];
            self.ep.dev.read_buf(&self.ep.buf, self.mr_offset(*va, want.len())?, &mut got);
            if &got != want {
                return Err(format!("memory at VA {va:#x} ({} bytes) is not what the WRITE carried", want.len()));
            }
            n += want.len() as u64;
        }
        Ok(n)
    }

    /// READ responses the engine sent: each carries the bytes of the engine's memory at its
    /// request's VA + its place in the response x MTU (`expect` is that memory, from the MR's
    /// start).
    pub fn verify_read_responses(&self, expect: &[u8]) -> Result<u64, String> {
        let mtu = self.cfg.mtu;
        let pk = packets(self);
        let reqs: Vec<(u32, u64, u32)> = pk
            .iter()
            .filter(|p| !p.from_engine && p.opcode == Opcode::RcRdmaReadRequest)
            .filter_map(|p| p.reth.map(|(va, len)| (p.psn, va, len)))
            .collect();
        let mut n = 0u64;
        for p in
            pk.iter().filter(|p| p.from_engine && p.opcode.as_u8() & 0x1F >= 0x0D && p.opcode.as_u8() & 0x1F <= 0x10)
        {
            let (psn0, va, _) = reqs
                .iter()
                .rev()
                .find(|(q, _, len)| {
                    let k = p.psn.wrapping_sub(*q) & 0xFF_FFFF;
                    k < len.div_ceil(mtu).max(1)
                })
                .ok_or(format!("READ response PSN {:#x} answers no request", p.psn))?;
            let k = u64::from(p.psn.wrapping_sub(*psn0) & 0xFF_FFFF);
            let off = self.mr_offset(va + k * u64::from(mtu), p.payload.len())?;
            if expect.get(off..off + p.payload.len()) != Some(&p.payload[..]) {
                return Err(format!("READ response PSN {:#x} does not carry the memory at offset {off}", p.psn));
            }
            n += p.payload.len() as u64;
        }
        Ok(n)
    }

    /// The SEND messages the peer sent, in order: the payload of each message's packets.
    pub fn sent_messages(&self) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = Vec::new();
        for p in first_copies(self).iter().filter(|p| p.opcode.is_send()) {
            if matches!(p.opcode.position(), Position::First | Position::Only) {
                out.push(Vec::new());
            }
            if let Some(m) = out.last_mut() {
                m.extend_from_slice(&p.payload);
            }
        }
        out
    }
}
