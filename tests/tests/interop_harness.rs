//! The interop harness (`roce_tests::interop::HostEngine`) without the VM: the Verilated
//! engine behind a stand-in link whose other end is an engine model, measured in the
//! engine's cycles. These are the regressions of the two causes of the stalls against Linux
//! rxe (interop with a many-packet message at MTU 256 and with netem loss):
//!
//! - a burst of frames must be taken in together and acknowledged within a few hundred
//!   cycles (the harness once ran 1024 + 256 cycles per frame, ~25 ms of wall time each, so
//!   rxe's 67 ms retransmit timer fired before the ACK of a 16-packet message);
//! - the engine's timers must be set for the simulator's speed (`Device::set_clock_hz`):
//!   a lost ACK is recovered by the engine's own retransmission within 2^14 + a few hundred
//!   cycles at timeout 14, not 2^14 x 1024 cycles (minutes of wall time).

use std::cell::RefCell;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use roce_driver::{CqeStatus, RecvWr, SendWr, WorkCompletion, WrOp};
use roce_model::wire::{parse_frame, Opcode};
use roce_sim::pair::{connect, endpoint, Endpoint, PairConfig};
use roce_tests::interop::{EngineKind, FrameLink, HostEngine};

const HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const HOST_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x02];
const PEER_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const PEER_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x01];
const PEER_PSN: u32 = 0x96_2e2d;

/// A link whose far end the test plays: frames queued for the engine, frames it sent.
#[derive(Default)]
struct StandIn {
    to_engine: RefCell<VecDeque<Vec<u8>>>,
    from_engine: RefCell<Vec<Vec<u8>>>,
}

impl FrameLink for StandIn {
    fn recv_frame(&self, _timeout: Duration) -> Option<Vec<u8>> {
        self.to_engine.borrow_mut().pop_front()
    }

    fn send_frame(&self, frame: &[u8]) {
        self.from_engine.borrow_mut().push(frame.to_vec());
    }
}

/// (opcode, PSN) of a RoCE frame.
fn op_psn(f: &[u8]) -> Option<(Opcode, u32)> {
    let r = parse_frame(f).ok()?.roce()?;
    Some((r.opcode(), r.bth().psn()))
}

/// The Verilated engine at MTU 256 and a model peer, connected.
fn setup() -> (HostEngine, Endpoint, PairConfig) {
    let mtu = 256;
    let h = HostEngine::new_on(EngineKind::Hdl, HOST_MAC, HOST_IP, mtu, 1 << 16, 64);
    let cfg = PairConfig { mtu, timeout: 14, buf_len: 1 << 16, ..PairConfig::default() };
    let mut peer = endpoint(&cfg, PEER_MAC, PEER_IP, PEER_IP.to_ipv6_mapped(), PEER_PSN).expect("peer");
    connect(&cfg, &mut peer, h.ep.qp.qpn(), HOST_MAC, IpAddr::V4(HOST_IP), h.ep.psn).expect("peer connect");
    let mut h = h;
    h.connect(peer.qp.qpn(), PEER_PSN, PEER_MAC, PEER_IP);
    (h, peer, cfg)
}

/// Run the peer model to cycle `t` and collect what it sends.
fn peer_frames(peer: &Endpoint, t: u64) -> Vec<Vec<u8>> {
    let mut n = peer.node.borrow_mut();
    let mut out = Vec::new();
    let mut now = n.now;
    while now <= t {
        n.advance(now);
        out.extend(std::iter::from_fn(|| n.tx()));
        match n.next_event() {
            Some(e) if e > now => now = e,
            _ => now += 1,
        }
    }
    out
}

fn completions(h: &mut HostEngine) -> Vec<WorkCompletion> {
    let mut wcs = [WorkCompletion::EMPTY; 8];
    let k = h.ep.dev.poll_cq(h.ep.cq, &mut wcs).expect("poll_cq");
    wcs[..k].to_vec()
}

#[test]
fn burst_of_sixteen_packets_is_acknowledged_within_a_few_hundred_cycles() {
    let (mut h, mut peer, _) = setup();
    let size = 4095u32;
    let sge = [h.ep.mr.sge(0, size)];
    h.ep.dev.post_recv(h.ep.qp, &[RecvWr { wr_id: 7, sges: &sge }]).expect("post_recv");
    let payload: Vec<u8> = (0..size).map(|i| (i * 7 + 3) as u8).collect();
    peer.dev.write_buf(&peer.buf, 0, &payload);
    let psge = [peer.mr.sge(0, size)];
    peer.dev.post_send(peer.qp, &[SendWr::new(1, WrOp::Send, &psge)]).expect("peer post_send");
    let burst = peer_frames(&peer, 100_000);
    assert_eq!(burst.len(), 16, "4095 B at MTU 256 is 16 packets");
    let link = StandIn::default();
    link.to_engine.borrow_mut().extend(burst);
    let start = h.engine_cycle();
    let mut ack_at = None;
    while h.engine_cycle() - start < 20_000 && ack_at.is_none() {
        h.run_cycles(&link, 32);
        if link.from_engine.borrow().iter().any(|f| op_psn(f) == Some((Opcode::RcAcknowledge, PEER_PSN + 15))) {
            ack_at = Some(h.engine_cycle() - start);
        }
    }
    let took = ack_at.expect("the engine acknowledges the message");
    eprintln!("16-packet burst at MTU 256 acknowledged after {took} cycles");
    assert!(took < 1000, "the ACK of a 16-packet burst came {took} cycles after it arrived");
    let wcs = completions(&mut h);
    assert_eq!(wcs.len(), 1, "{wcs:?}");
    assert_eq!((wcs[0].wr_id, wcs[0].status, wcs[0].byte_len), (7, CqeStatus::Success, size));
    let mut got = vec![0u8; size as usize];
    h.ep.dev.read_buf(&h.ep.buf, 0, &mut got);
    assert_eq!(got, payload);
}

#[test]
fn lost_ack_is_recovered_by_the_engines_timer_at_simulator_speed() {
    let (mut h, mut peer, _) = setup();
    let sge = [h.ep.mr.sge(0, 64)];
    h.ep.dev.post_send(h.ep.qp, &[SendWr::new(9, WrOp::Send, &sge)]).expect("post_send");
    let psge = [peer.mr.sge(0, 64)];
    peer.dev.post_recv(peer.qp, &[RecvWr { wr_id: 1, sges: &psge }]).expect("peer post_recv");
    let link = StandIn::default();
    // The SEND goes out; the peer's ACK of it is lost.
    let start = h.engine_cycle();
    let sends = |l: &StandIn| {
        l.from_engine.borrow().iter().filter(|f| matches!(op_psn(f), Some((Opcode::RcSendOnly, _)))).count()
    };
    while sends(&link) == 0 && h.engine_cycle() - start < 5_000 {
        h.run_cycles(&link, 32);
    }
    assert_eq!(sends(&link), 1, "the SEND is sent");
    let first = h.engine_cycle();
    // Timeout 14 is 2^14 IB ticks; at the simulator's clock that is one cycle per tick.
    while sends(&link) < 2 && h.engine_cycle() - first < 100_000 {
        h.run_cycles(&link, 32);
    }
    let after = h.engine_cycle() - first;
    eprintln!("lost ACK: the SEND retransmitted {after} cycles after it was sent");
    assert_eq!(sends(&link), 2, "the engine retransmits the SEND after its local ACK timeout ({after} cycles)");
    assert!((1 << 14..(1 << 15) + 2048).contains(&after), "retransmitted {after} cycles after the first send");
    // The retransmission reaches the peer, which answers; the SEND completes.
    let retx: Vec<Vec<u8>> = link.from_engine.borrow_mut().drain(..).collect();
    let mut t = 0;
    for f in &retx {
        let mut n = peer.node.borrow_mut();
        n.advance(t);
        n.rx(f);
        t += 100;
    }
    link.to_engine.borrow_mut().extend(peer_frames(&peer, t + 10_000));
    let mut wcs = Vec::new();
    for _ in 0..100 {
        h.run_cycles(&link, 32);
        wcs.extend(completions(&mut h));
        if !wcs.is_empty() {
            break;
        }
    }
    assert_eq!(wcs.len(), 1, "{wcs:?}");
    assert_eq!((wcs[0].wr_id, wcs[0].status), (9, CqeStatus::Success));
}
