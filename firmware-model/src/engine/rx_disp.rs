//! `roce_rx_disp`: frame classification and dispatch on the receive side (the parsing of
//! `roce_rx_parse` is `wire::parse_frame` here).
//!
//! Each received frame is parsed (`wire::parse_frame`), its ICRC checked (the `roce_icrc`
//! block, check mode), its QP looked up (`roce_qp_ctx`), and it is handed to the responder
//! (requests) or the completer (ACKs, READ responses, atomic ACKs), or to the rate limiter
//! (CNPs). PFC pause frames stop the MAC for their priority. Everything else is counted and
//! dropped. Latency: the frame's beats plus [`LATENCY`].

use crate::blocks::icrc;
use std::net::{Ipv4Addr, Ipv6Addr};

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

/// What the receive side does with a frame (`roce_rx_disp`'s decision), after the parse and
/// before the ICRC check the HDL makes earlier in the pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RxVerdict {
    /// Malformed: dropped, counted in RX_MALFORMED.
    Malformed,
    /// Not addressed to the port (unicast MAC, or a RoCE packet to another IP/GID):
    /// dropped, counted in RX_DROPPED.
    NotOurs,
    /// Not RoCE: dropped, counted in RX_NOT_ROCE (MAC control frames are PFC's, elsewhere).
    NotRoce,
    /// A CNP for a QP: the DCQCN reaction point.
    Cnp(u32),
    /// A packet this RC engine does not serve, or for a QP that does not receive: dropped,
    /// counted in RX_UNKNOWN_QP.
    UnknownQp,
    /// An RC request for a receiving QP: the responder; `ce` it was CE-marked.
    Request {
        /// QP.
        qpn: u32,
        /// CE-marked.
        ce: bool,
    },
    /// An RC response: the completer.
    Response {
        /// QP.
        qpn: u32,
        /// CE-marked.
        ce: bool,
    },
}

/// The facts of a frame the RX decision looks at.
#[derive(Clone, Copy, Debug)]
pub struct RxFacts {
    /// The parser refused it.
    pub malformed: bool,
    /// Ethernet destination MAC.
    pub dst_mac: [u8; 6],
    /// For a RoCE packet: destination IP (IPv4 as ::ffff:a.b.c.d), IPv4 or not, opcode,
    /// destination QP, CE.
    pub roce: Option<(Ipv6Addr, bool, Opcode, u32, bool)>,
}

/// The RX decision (engine model and `roce_rx_disp`): `mac`/`ipv4`/`gid` the port's
/// identity, `can_receive(qpn)` whether the QP exists in a receiving state.
pub fn rx_verdict(
    f: &RxFacts,
    mac: [u8; 6],
    ipv4: Ipv4Addr,
    gid: Ipv6Addr,
    can_receive: impl Fn(u32) -> bool,
) -> RxVerdict {
    if f.malformed {
        return RxVerdict::Malformed;
    }
    if f.dst_mac != mac && f.dst_mac[0] & 1 == 0 {
        return RxVerdict::NotOurs;
    }
    let Some((dst, v4, opcode, qpn, ce)) = f.roce else { return RxVerdict::NotRoce };
    let ours = if v4 { dst == ipv4.to_ipv6_mapped() } else { dst == gid || dst == ipv4.to_ipv6_mapped() };
    if !ours {
        return RxVerdict::NotOurs;
    }
    if opcode.is_cnp() {
        return RxVerdict::Cnp(qpn);
    }
    if !opcode.is_request() && !opcode.is_response() {
        return RxVerdict::UnknownQp;
    }
    if !can_receive(qpn) {
        return RxVerdict::UnknownQp;
    }
    if opcode.is_request() {
        RxVerdict::Request { qpn, ce }
    } else {
        RxVerdict::Response { qpn, ce }
    }
}

/// The packet record of a parsed RoCE frame, as the responder and completer take it (`at`:
/// its arrival plus the receive pipeline latency). None for a frame without a BTH.
pub fn rx_pkt<'a>(f: &Frame<'a>, at: u64) -> Option<RxPkt<'a>> {
    let r = f.roce()?;
    let ce = match f.l3() {
        L3::Ipv4(h) => h.ecn() == 3,
        L3::Ipv6(h) | L3::Grh(h) => h.ecn() == 3,
        L3::Other(_) => false,
    };
    let bth = r.bth();
    Some(RxPkt {
        at,
        opcode: bth.opcode(),
        qpn: bth.dest_qp(),
        psn: bth.psn(),
        ack_req: bth.ack_req(),
        solicited: bth.solicited(),
        ext: ext_of(&r),
        payload: r.payload(),
        ce,
    })
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
        let at = now + frame.len().div_ceil(64) as u64 + LATENCY + icrc::LATENCY as u64;
        let f = match wire::parse_frame(frame) {
            Ok(f) => f,
            Err(_) => {
                self.counters.rx_malformed += 1;
                return;
            }
        };
        if let L3::Other(et) = f.l3() {
            // MAC control (PFC) is seen on the raw stream, before the RX decision
            let dst = f.eth().dst();
            if et == ETHERTYPE_MAC_CONTROL && (dst == self.cfg.mac || dst[0] & 1 != 0) {
                self.rx_mac_control(now, &f);
                return;
            }
        }
        let roce = f.roce().map(|r| {
            let (dst, v4, ce) = match f.l3() {
                L3::Ipv4(h) => (h.dst().to_ipv6_mapped(), true, h.ecn() == 3),
                L3::Ipv6(h) | L3::Grh(h) => (h.dst(), false, h.ecn() == 3),
                L3::Other(_) => (Ipv6Addr::UNSPECIFIED, false, false),
            };
            (dst, v4, r.bth().opcode(), r.bth().dest_qp(), ce)
        });
        let facts = RxFacts { malformed: false, dst_mac: f.eth().dst(), roce };
        let verdict = rx_verdict(&facts, self.cfg.mac, self.cfg.ipv4, self.cfg.gid, |q| {
            self.qp(q).is_some_and(|q| q.can_receive())
        });
        match verdict {
            RxVerdict::Malformed => {
                self.counters.rx_malformed += 1;
                return;
            }
            RxVerdict::NotOurs => {
                self.counters.rx_dropped += 1;
                return;
            }
            RxVerdict::NotRoce => {
                self.counters.rx_not_roce += 1;
                return;
            }
            _ => {}
        }
        // roce_icrc (check): a RoCE frame whose ICRC is wrong, or whose IP header the ICRC
        // block does not accept (options), is dropped.
        if crate::icrc::check(frame) != Ok(true) {
            self.counters.rx_icrc_errors += 1;
            return;
        }
        let Some(pkt) = rx_pkt(&f, at + super::qp_ctx::LATENCY) else { return };
        match verdict {
            RxVerdict::Cnp(qpn) => {
                self.counters.cnp_rcvd += 1;
                self.on_cnp(qpn, pkt.at);
            }
            RxVerdict::UnknownQp => self.counters.rx_unknown_qp += 1,
            RxVerdict::Request { qpn, ce } | RxVerdict::Response { qpn, ce } => {
                if ce && self.cfg.ecn_enable {
                    self.counters.ecn_marked += 1;
                    self.maybe_cnp(qpn, pkt.at);
                }
                if matches!(verdict, RxVerdict::Request { .. }) {
                    self.responder(&pkt, mem);
                } else {
                    self.completer(&pkt, mem);
                }
            }
            _ => {}
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
