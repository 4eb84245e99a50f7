//! `roce_tx_arb`: the transmit arbiter, header assembly and MAC pacing (the frame itself is
//! built by `wire::FrameBuilder`, `roce_tx_build`'s counterpart).
//!
//! Priority per frame slot: CNPs, then owed ACK/NAKs (one per QP, coalesced), then READ
//! responses and atomic ACKs, then requests (round-robin over QPs with work; the requester
//! runs ahead of the MAC, up to `tx_prefetch` packets and [`REQ_PAYLOAD_FIFO`] bytes of
//! payload, so payload DMA latency is hidden). A frame whose 802.1Q
//! priority is paused by PFC waits. Headers come from the QP context (addressing, VLAN,
//! DSCP, UDP source port) and the station identity; the ICRC is filled by `roce_icrc`
//! (insert). The MAC is busy for the frame plus FCS, preamble and inter-frame gap at line
//! rate.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::wire::{
    AethFields, BthFields, EthernetFields, ExtHeaders, FrameBuilder, IpFields, Ipv4Fields, Ipv6Fields, Opcode, Vlan,
};

use super::mem::Dma;
use super::qp_ctx::Qp;
use super::req::Blocked;
use super::types::*;
use super::{Engine, Profile, TxKind, TxPkt};

/// Header build + ICRC insert latency in cycles (the `roce_icrc` pipeline dominates).
pub const LATENCY: u64 = 3 + crate::blocks::icrc::LATENCY as u64;

/// Bytes of request payload the requester keeps ahead of the MAC (`roce_req`'s payload FIFO,
/// 32 KiB): a packet is made only with room for one of the largest MTU (4096).
pub const REQ_PAYLOAD_FIFO: usize = 32768;

fn v4_of(ip: Option<IpAddr>) -> Ipv4Addr {
    match ip {
        Some(IpAddr::V4(a)) => a,
        Some(IpAddr::V6(a)) => a.to_ipv4_mapped().unwrap_or(Ipv4Addr::UNSPECIFIED),
        None => Ipv4Addr::UNSPECIFIED,
    }
}

fn v6_of(ip: Option<IpAddr>) -> Ipv6Addr {
    match ip {
        Some(IpAddr::V6(a)) => a,
        Some(IpAddr::V4(a)) => a.to_ipv6_mapped(),
        None => Ipv6Addr::UNSPECIFIED,
    }
}

fn min_into(t: &mut Option<u64>, x: u64) {
    *t = Some(t.map_or(x, |y| y.min(x)));
}

/// The port's identity as the TX header uses it (`roce_tx_arb`'s cfg inputs).
#[derive(Clone, Copy, Debug)]
pub struct TxPort {
    /// Station MAC.
    pub mac: [u8; 6],
    /// IPv4 address.
    pub ipv4: Ipv4Addr,
    /// GID.
    pub gid: Ipv6Addr,
    /// Send ECN-capable (ECT(0)) RoCEv2 packets.
    pub ecn: bool,
    /// The port's 802.1Q tag (VID, PCP) for QPs without their own.
    pub vlan: Option<(u16, u8)>,
}

/// A QP's addressing, the attributes the TX header takes from it.
#[derive(Clone, Copy, Debug)]
pub struct TxAddr {
    /// Encapsulation.
    pub encap: Encap,
    /// Destination MAC.
    pub dest_mac: [u8; 6],
    /// The QP's own 802.1Q tag (VID, PCP).
    pub vlan: Option<(u16, u8)>,
    /// DSCP.
    pub dscp: u8,
    /// TTL / hop limit.
    pub hop_limit: u8,
    /// IPv6 flow label.
    pub flow_label: u32,
    /// UDP source port.
    pub udp_sport: u16,
    /// Destination IP.
    pub dest_ip: Option<IpAddr>,
}

impl TxAddr {
    /// A QP's addressing.
    pub fn of_qp(qp: &Qp) -> Self {
        TxAddr {
            encap: qp.encap,
            dest_mac: qp.dest_mac,
            vlan: qp.vlan,
            dscp: qp.dscp,
            hop_limit: qp.hop_limit,
            flow_label: qp.flow_label,
            udp_sport: qp.udp_sport,
            dest_ip: qp.dest_ip,
        }
    }

    /// The addressing in a QP attribute record (`qp_attr_t`).
    pub fn of_attr(a: &crate::contract::records::QpAttr) -> Self {
        let ip = Ipv6Addr::from(a.dest_ip);
        let dest_ip = match a.encap {
            Encap::RoceV2Ipv4 => IpAddr::V4(Ipv4Addr::new(a.dest_ip[12], a.dest_ip[13], a.dest_ip[14], a.dest_ip[15])),
            _ => IpAddr::V6(ip),
        };
        TxAddr {
            encap: a.encap,
            dest_mac: a.dest_mac,
            vlan: a.vlan.valid.then_some((a.vlan.vid, a.vlan.pcp)),
            dscp: a.dscp,
            hop_limit: a.hop_limit,
            flow_label: a.flow_label,
            udp_sport: a.udp_sport,
            dest_ip: Some(dest_ip),
        }
    }
}

/// The frame builder of a packet with BTH `bth` and extension headers `ext` of a QP
/// addressed by `a`, sent from `port`; `ip_id` is the IPv4 identification (RoCEv2 over
/// IPv4). The engine and `roce_tx_arb`'s model share it.
pub fn frame_builder(port: &TxPort, a: &TxAddr, bth: BthFields, ext: ExtHeaders, ip_id: u16) -> FrameBuilder {
    let vlan = a.vlan.or(port.vlan).map(|(vid, pcp)| Vlan { pcp, dei: false, vid });
    let eth = EthernetFields { dst: a.dest_mac, src: port.mac, vlan };
    let ecn = if port.ecn { 0b10 } else { 0 };
    let ip = match a.encap {
        Encap::RoceV2Ipv6 => IpFields::V6(Ipv6Fields {
            src: port.gid,
            dst: v6_of(a.dest_ip),
            traffic_class: (a.dscp << 2) | ecn,
            flow_label: a.flow_label,
            hop_limit: a.hop_limit,
        }),
        Encap::RoceV1 => IpFields::Grh(Ipv6Fields {
            src: port.gid,
            dst: v6_of(a.dest_ip),
            traffic_class: a.dscp << 2,
            flow_label: a.flow_label,
            hop_limit: a.hop_limit,
        }),
        Encap::RoceV2Ipv4 => IpFields::V4(Ipv4Fields {
            src: port.ipv4,
            dst: v4_of(a.dest_ip),
            dscp: a.dscp,
            ecn,
            ttl: a.hop_limit,
            identification: ip_id,
            dont_fragment: true,
        }),
    };
    FrameBuilder::new(eth, ip, bth).with_ext(ext).with_udp_src_port(a.udp_sport)
}

impl Engine {
    /// The port identity the TX header uses.
    pub fn tx_port(&self) -> TxPort {
        TxPort {
            mac: self.cfg.mac,
            ipv4: self.cfg.ipv4,
            gid: self.cfg.gid,
            ecn: self.cfg.ecn_enable,
            vlan: self.cfg.port_vlan,
        }
    }

    /// Build the frame of a packet of `qp`.
    pub(crate) fn build_frame(&mut self, qp: &Qp, bth: BthFields, ext: ExtHeaders, payload: &[u8]) -> Option<Vec<u8>> {
        if qp.encap == Encap::RoceV2Ipv4 {
            self.ip_id = self.ip_id.wrapping_add(1);
        }
        let mut f = frame_builder(&self.tx_port(), &TxAddr::of_qp(qp), bth, ext, self.ip_id).build(payload).ok()?;
        crate::icrc::fill(&mut f).ok()?;
        Some(f)
    }

    /// The 802.1Q tag a QP's frames carry: its own, else the port's (VLAN register).
    fn vlan_of(&self, qp: &Qp) -> Option<(u16, u8)> {
        qp.vlan.or(self.cfg.port_vlan)
    }

    fn pcp_of(&self, qpn: u32) -> usize {
        self.qp(qpn).and_then(|q| self.vlan_of(q)).map_or(0, |(_, p)| usize::from(p & 7))
    }

    fn paused(&self, qpn: u32, now: u64) -> bool {
        self.pause_until[self.pcp_of(qpn)] > now
    }

    /// Whether the requester may make a packet: fewer than `tx_prefetch` queued, and room for
    /// a packet of any size in `roce_req`'s payload FIFO ([`REQ_PAYLOAD_FIFO`] bytes).
    fn req_room(&self) -> bool {
        let queued: usize = self.req_q.iter().map(|p| p.payload.len()).sum();
        self.req_q.len() < self.cfg.tx_prefetch && queued + 4096 <= REQ_PAYLOAD_FIFO
    }

    /// Keep the requester's prefetch queue full (round-robin over active QPs).
    fn refill_requests(&mut self, now: u64, mem: &mut impl Dma) {
        let mut tries = self.req_rr.len();
        while self.req_room() && tries > 0 {
            let Some(qpn) = self.req_rr.pop_front() else { break };
            let Some(mut qp) = self.take_qp(qpn) else {
                tries -= 1;
                continue;
            };
            let v = self.req_turn(&mut qp, now, mem);
            if v.pkts.is_empty() {
                tries -= 1;
            } else {
                self.req_q.extend(v.pkts);
                tries = self.req_rr.len() + 1;
            }
            let err = qp.state == QpState::Err;
            self.put_qp(qp);
            if err {
                self.flush_qp(qpn, mem);
            } else {
                self.req_rr.push_back(qpn);
            }
        }
    }

    /// The MAC asks for a frame at cycle `now`; returns it if one can start now.
    pub fn tx(&mut self, now: u64, mem: &mut impl Dma) -> Option<Vec<u8>> {
        if !self.regs.enabled {
            return None;
        }
        self.check_timers(now, mem);
        // the requester runs ahead of the MAC (up to `tx_prefetch` packets)
        self.refill_requests(now, mem);
        if now < self.mac_free_at {
            return None;
        }
        let frame = self.pick(now, mem)?;
        self.mac_free_at = now + self.wire_cycles(frame.len());
        self.counters.tx_frames += 1;
        self.counters.tx_bytes += frame.len() as u64;
        Some(frame)
    }

    fn pick(&mut self, now: u64, mem: &mut impl Dma) -> Option<Vec<u8>> {
        // CNPs
        if let Some(p) = self.cnp_q.front() {
            if p.ready + LATENCY <= now && !self.paused(p.qpn, now) {
                let p = self.cnp_q.pop_front()?;
                if let Some(f) = self.frame_of(&p) {
                    return Some(f);
                }
            }
        }
        // ACK/NAKs owed
        for _ in 0..self.ack_qps.len() {
            let qpn = self.ack_qps.pop_front()?;
            let owed = self.qp(qpn).and_then(|q| q.resp.ack);
            match owed {
                Some(a) if a.ready + LATENCY <= now && !self.paused(qpn, now) => {
                    let mut qp = self.take_qp(qpn)?;
                    let mut a = a;
                    if self.cfg.profile == Profile::Engine {
                        // the ACKs owed since whose packets are done by now
                        while let Some(&b) = qp.resp.acks_after.front().filter(|b| b.ready + LATENCY <= now) {
                            a = super::resp::ack_merge(Some(a), b);
                            qp.resp.acks_after.pop_front();
                        }
                    }
                    qp.resp.ack = qp.resp.acks_after.pop_front();
                    if qp.resp.ack.is_some() {
                        self.ack_qps.push_back(qpn);
                    }
                    let bth = BthFields::new(Opcode::RcAcknowledge, qp.dest_qpn, a.psn);
                    let ext =
                        ExtHeaders { aeth: Some(AethFields { syndrome: a.syndrome, msn: a.msn }), ..ExtHeaders::NONE };
                    let f = self.build_frame(&qp, bth, ext, &[]);
                    self.put_qp(qp);
                    self.counters.acks_sent += 1;
                    if let Some(f) = f {
                        return Some(f);
                    }
                }
                Some(_) => self.ack_qps.push_back(qpn),
                None => {}
            }
        }
        // READ responses, atomic ACKs
        if let Some(p) = self.resp_q.front() {
            if p.ready + LATENCY <= now && !self.paused(p.qpn, now) {
                let p = self.resp_q.pop_front()?;
                if let Some(f) = self.frame_of(&p) {
                    return Some(f);
                }
            }
        }
        // Requests
        self.refill_requests(now, mem);
        while let Some(p) = self.req_q.front() {
            let live = self.qp(p.qpn).is_some_and(|q| q.state == QpState::Rts && q.req.gen == p.gen);
            if !live {
                self.req_q.pop_front();
                continue;
            }
            if p.ready + LATENCY > now || self.paused(p.qpn, now) {
                return None;
            }
            let p = self.req_q.pop_front()?;
            if let Some(f) = self.frame_of(&p) {
                return Some(f);
            }
        }
        None
    }

    fn frame_of(&mut self, p: &TxPkt) -> Option<Vec<u8>> {
        let qp = self.take_qp(p.qpn)?;
        let f = self.build_frame(&qp, p.bth, p.ext, &p.payload);
        self.put_qp(qp);
        if p.kind == TxKind::Request && f.is_none() {
            self.counters.dma_errors += 1;
        }
        f
    }

    /// The earliest cycle at which [`Engine::tx`] may return a frame or a timer fires
    /// (`None`: nothing pending).
    pub fn next_event(&self) -> Option<u64> {
        let mut t: Option<u64> = None;
        let mac = self.mac_free_at;
        // a frame can start once it is ready, the MAC is free and its priority is not paused
        let at = |qpn: u32, ready: u64| ready.max(mac).max(self.pause_until[self.pcp_of(qpn)]);
        if let Some(p) = self.cnp_q.front() {
            min_into(&mut t, at(p.qpn, p.ready + LATENCY));
        }
        for &q in &self.ack_qps {
            if let Some(a) = self.qp(q).and_then(|q| q.resp.ack) {
                min_into(&mut t, at(q, a.ready + LATENCY));
            }
        }
        if let Some(p) = self.resp_q.front() {
            min_into(&mut t, at(p.qpn, p.ready + LATENCY));
        }
        if let Some(p) = self.req_q.front() {
            min_into(&mut t, at(p.qpn, p.ready + LATENCY));
        }
        for &q in &self.req_rr {
            let Some(qp) = self.qp(q) else { continue };
            if let Some(tm) = self.timer_due(qp) {
                min_into(&mut t, tm);
            }
            if self.req_room() {
                match self.req_ready(qp, 0, &super::req::CompView::of(qp)) {
                    Ok(()) => min_into(&mut t, 0),
                    Err(Blocked::Until(w)) => min_into(&mut t, w),
                    Err(_) => {}
                }
            }
        }
        t
    }
}
