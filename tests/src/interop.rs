//! The engine model as a live RoCEv2 peer of the Soft-RoCE VM: real time maps to engine
//! cycles (250 MHz), frames move between the engine and the VM's datagram socket, and the
//! host side runs ibv_rc_pingpong's algorithm on the engine through `roce-driver`.

use std::net::{IpAddr, Ipv4Addr};
use std::time::{Duration, Instant};

use roce_driver::{CqeOpcode, CqeStatus, RecvWr, SendWr, WorkCompletion, WrOp};
use roce_sim::pair::{connect, endpoint_on, Endpoint, PairConfig};

use crate::rxevm::{arp_reply, RxeVm};

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
    /// The node runs the Verilated engine: its time runs by a fixed number of cycles per
    /// pump round instead of the wall clock (it is slower than real time; its requester's
    /// local ACK timeout, 4.096 us x 2^14, is in its own cycles, and the VM's timers are in
    /// the VM's wall-clock time).
    pub hdl: bool,
}

/// HDL cycles run after the engine's ports went quiet (a 4 KiB frame's header work, its
/// DMA latency and the response's build take a few hundred).
pub const HDL_SETTLE_CYCLES: u64 = 1024;
/// HDL cycles run in a pump round in which nothing arrived.
pub const HDL_IDLE_CYCLES: u64 = 256;

impl HostEngine {
    /// An engine with station MAC/IP, `buf_len` bytes registered, at path MTU `mtu`.
    pub fn new(mac: [u8; 6], ip: Ipv4Addr, mtu: u32, buf_len: usize, depth: u32) -> Self {
        Self::new_on(false, mac, ip, mtu, buf_len, depth)
    }

    /// [`HostEngine::new`] on the engine model or (`hdl`) the Verilated engine.
    pub fn new_on(hdl: bool, mac: [u8; 6], ip: Ipv4Addr, mtu: u32, buf_len: usize, depth: u32) -> Self {
        // rxe (and the tools) use retry_cnt 7; the engine's own timeout is 4.096 us * 2^14.
        let cfg = PairConfig { mtu, depth, buf_len, timeout: 14, ..PairConfig::default() };
        let psn = 0x00_1234;
        let ep = endpoint_on(&cfg, hdl, mac, ip, ip.to_ipv6_mapped(), psn).expect("engine endpoint");
        HostEngine { ep, cfg, start: Instant::now(), frames_in: 0, frames_out: 0, hdl }
    }

    /// The engine's counters (the Verilated engine's read through its registers).
    pub fn counters(&self) -> roce_model::engine::Counters {
        self.ep.node.borrow_mut().counters()
    }

    /// Bring the QP to RTS towards the VM's QP.
    pub fn connect(&mut self, qpn: u32, psn: u32, mac: [u8; 6], ip: Ipv4Addr) {
        connect(&self.cfg, &mut self.ep, qpn, mac, IpAddr::V4(ip), psn).expect("connect");
    }

    /// The engine cycle for now: 250 MHz of wall time for the model; for the HDL its own
    /// count plus `hdl_cycles`.
    fn cycle(&self, hdl_cycles: u64) -> u64 {
        if self.hdl {
            let n = self.ep.node.borrow();
            n.hdl.as_ref().map_or(n.now, |h| h.cycle) + hdl_cycles
        } else {
            (self.start.elapsed().as_nanos() / 4) as u64
        }
    }

    /// The Verilated engine's harness still has frames or DMA in flight.
    fn hdl_busy(&self) -> bool {
        self.ep.node.borrow().hdl.as_ref().is_some_and(|h| h.busy())
    }

    /// Move frames between the VM and the engine for up to `dur` (returns early after
    /// `quantum` with nothing arriving).
    pub fn pump(&mut self, vm: &RxeVm, quantum: Duration) {
        let ip = match self.ep.ip {
            IpAddr::V4(v) => v,
            IpAddr::V6(v) => v.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
        };
        let now = self.cycle(HDL_IDLE_CYCLES);
        self.ep.node.borrow_mut().advance(now);
        // work the host posted (a doorbell: WQE and payload reads, the packets) runs through
        self.run_hdl_work(vm);
        self.send_tx(vm);
        let Some(f) = vm.recv_frame(quantum) else { return };
        if let Some(r) = arp_reply(&f, ip, self.ep.mac) {
            let _ = vm.send_frame(&r);
            return;
        }
        self.frames_in += 1;
        let now = self.cycle(0);
        {
            let mut n = self.ep.node.borrow_mut();
            n.advance(now);
            n.rx(&f);
        }
        // The HDL: run until the frame, its DMA and its answer are through (its time is its
        // own, so it is spent only where there is work).
        self.run_hdl_work(vm);
        let now = self.cycle(HDL_SETTLE_CYCLES);
        self.ep.node.borrow_mut().advance(now);
        self.send_tx(vm);
    }

    /// The Verilated engine: run cycles while its harness has frames or DMA in flight.
    fn run_hdl_work(&mut self, vm: &RxeVm) {
        while self.hdl && self.hdl_busy() {
            let now = self.cycle(64);
            self.ep.node.borrow_mut().advance(now);
            self.send_tx(vm);
        }
    }

    fn send_tx(&mut self, vm: &RxeVm) {
        let mut n = self.ep.node.borrow_mut();
        while let Some(f) = n.tx() {
            self.frames_out += 1;
            let _ = vm.send_frame(&f);
        }
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
}

/// ibv_rc_pingpong's loop on the engine: keep receives posted; whenever nothing is pending
/// and fewer than `iters` SENDs went out, send one `size`-byte message (rc_pingpong fills its
/// buffer with 0x7b). The client side starts with a SEND; the server waits for one.
pub fn pingpong(
    h: &mut HostEngine,
    vm: &RxeVm,
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
    let mut wcs = [WorkCompletion {
        wr_id: 0,
        status: CqeStatus::Success,
        opcode: CqeOpcode::Send,
        byte_len: 0,
        imm: None,
        invalidated: None,
        qpn: 0,
        src_qp: 0,
    }; 8];
    let mut got = vec![0u8; size];
    while (r.received < iters || r.sent < iters) && Instant::now() < end && r.errors.is_empty() {
        h.pump(vm, Duration::from_micros(500));
        let k = h.ep.dev.poll_cq(h.ep.cq, &mut wcs).expect("poll_cq");
        for wc in &wcs[..k] {
            if wc.status != CqeStatus::Success {
                r.errors.push(wc.status);
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
