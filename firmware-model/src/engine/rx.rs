//! `roce_rx_parse`: frame classification and dispatch on the receive side.
//!
//! Each received frame is parsed (`wire::parse_frame`), its ICRC checked (the `roce_icrc`
//! block, check mode), its QP looked up (`roce_qp_ctx`), and it is handed to the responder
//! (requests) or the completer (ACKs, READ responses, atomic ACKs), or to the rate limiter
//! (CNPs). PFC pause frames stop the MAC for their priority. Everything else is counted and
//! dropped. Latency: the frame's beats plus [`LATENCY`].

use crate::blocks::roce_icrc;
use crate::wire::{self, ExtHeaders, Frame, Opcode, L3};

use super::mem::Dma;
use super::Engine;

/// Parse pipeline latency in cycles (header extraction and classification).
pub const LATENCY: u64 = 4;

/// Ethertype of MAC control frames (PFC).
pub const ETHERTYPE_MAC_CONTROL: u16 = 0x8808;

/// A received RoCE packet, decoded for the responder and completer.
#[derive(Clone, Debug)]
pub struct RxPkt<'a> {
    /// Arrival cycle plus the receive pipeline latency.
    pub at: u64,
    /// Opcode.
    pub opcode: Opcode,
    /// Destination (local) QP.
    pub qpn: u32,
    /// PSN.
    pub psn: u32,
    /// AckReq.
    pub ack_req: bool,
    /// Solicited event.
    pub solicited: bool,
    /// Extension headers.
    pub ext: ExtHeaders,
    /// Payload (without pad and ICRC).
    pub payload: &'a [u8],
    /// The IP header carried ECN CE.
    pub ce: bool,
}

fn ext_of(r: &wire::RocePacket<'_>) -> ExtHeaders {
    ExtHeaders {
        deth: r.deth().map(|h| h.fields()),
        reth: r.reth().map(|h| h.fields()),
        atomic_eth: r.atomic_eth().map(|h| h.fields()),
        aeth: r.aeth().map(|h| h.fields()),
        atomic_ack_eth: r.atomic_ack_eth().map(|h| h.fields()),
        immdt: r.immdt().map(|h| h.fields()),
        ieth: r.ieth().map(|h| h.fields()),
    }
}

impl Engine {
    /// A frame arrives from the MAC at cycle `now`.
    pub fn rx(&mut self, now: u64, frame: &[u8], mem: &mut impl Dma) {
        self.counters.rx_frames += 1;
        self.counters.rx_bytes += frame.len() as u64;
        if !self.regs.enabled {
            self.counters.rx_dropped += 1;
            return;
        }
        let at = now + frame.len().div_ceil(64) as u64 + LATENCY + roce_icrc::LATENCY as u64;
        let f = match wire::parse_frame(frame) {
            Ok(f) => f,
            Err(_) => {
                self.counters.rx_malformed += 1;
                return;
            }
        };
        // Not for this port: another unicast MAC, or a RoCE packet to another IP/GID.
        let dst = f.eth().dst();
        if dst != self.cfg.mac && dst[0] & 1 == 0 {
            self.counters.rx_dropped += 1;
            return;
        }
        let ours = match f.l3() {
            L3::Ipv4(h) => h.dst() == self.cfg.ipv4,
            L3::Ipv6(h) | L3::Grh(h) => h.dst() == self.cfg.gid || h.dst() == self.cfg.ipv4.to_ipv6_mapped(),
            L3::Other(_) => true,
        };
        if f.roce().is_some() && !ours {
            self.counters.rx_dropped += 1;
            return;
        }
        if let L3::Other(et) = f.l3() {
            if et == ETHERTYPE_MAC_CONTROL {
                self.rx_mac_control(now, &f);
            } else {
                self.counters.rx_not_roce += 1;
            }
            return;
        }
        let Some(r) = f.roce() else {
            self.counters.rx_not_roce += 1;
            return;
        };
        // roce_icrc (check): a RoCE frame whose ICRC is wrong, or whose IP header the ICRC
        // block does not accept (options), is dropped.
        if crate::icrc::check(frame) != Ok(true) {
            self.counters.rx_icrc_errors += 1;
            return;
        }
        let ce = match f.l3() {
            L3::Ipv4(h) => h.ecn() == 3,
            L3::Ipv6(h) | L3::Grh(h) => h.ecn() == 3,
            L3::Other(_) => false,
        };
        let bth = r.bth();
        let pkt = RxPkt {
            at: at + super::qp::LATENCY,
            opcode: bth.opcode(),
            qpn: bth.dest_qp(),
            psn: bth.psn(),
            ack_req: bth.ack_req(),
            solicited: bth.solicited(),
            ext: ext_of(&r),
            payload: r.payload(),
            ce,
        };
        if pkt.opcode.is_cnp() {
            self.counters.cnp_rcvd += 1;
            self.on_cnp(pkt.qpn, pkt.at);
            return;
        }
        if !pkt.opcode.is_request() && !pkt.opcode.is_response() {
            // UD and anything else this RC engine does not serve.
            self.counters.rx_unknown_qp += 1;
            return;
        }
        let alive = self.qp(pkt.qpn).is_some_and(|q| q.can_receive());
        if !alive {
            self.counters.rx_unknown_qp += 1;
            return;
        }
        if ce && self.cfg.ecn_enable {
            self.counters.ecn_marked += 1;
            self.maybe_cnp(pkt.qpn, pkt.at);
        }
        if pkt.opcode.is_request() {
            self.responder(&pkt, mem);
        } else {
            self.completer(&pkt, mem);
        }
    }

    /// 802.1Qbb PFC: opcode 0x0101, class-enable vector, eight pause quanta of 512 bit times.
    fn rx_mac_control(&mut self, now: u64, f: &Frame<'_>) {
        let b = f.as_bytes();
        let o = f.eth().header_len();
        let Some(p) = b.get(o..o + 20) else {
            self.counters.rx_malformed += 1;
            return;
        };
        if u16::from_be_bytes([p[0], p[1]]) != 0x0101 || !self.cfg.pfc_enable {
            self.counters.rx_not_roce += 1;
            return;
        }
        self.counters.pfc_rcvd += 1;
        let enable = u16::from_be_bytes([p[2], p[3]]);
        // one quantum = 512 bit times at line rate
        let quantum_cycles = 512.0 / 8.0 / self.cfg.line_bytes_per_cycle();
        for prio in 0..8 {
            if enable & (1 << prio) != 0 {
                let q = u16::from_be_bytes([p[4 + 2 * prio], p[5 + 2 * prio]]);
                self.pause_until[prio] = now + (f64::from(q) * quantum_cycles).ceil() as u64;
            }
        }
    }
}
