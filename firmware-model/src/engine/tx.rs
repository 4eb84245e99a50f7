//! `roce_tx_build`: the transmit arbiter, header builder and MAC pacing.
//!
//! Priority per frame slot: CNPs, then owed ACK/NAKs (one per QP, coalesced), then READ
//! responses and atomic ACKs, then requests (round-robin over QPs with work, kept
//! `tx_prefetch` packets ahead so payload DMA latency is hidden). A frame whose 802.1Q
//! priority is paused by PFC waits. Headers come from the QP context (addressing, VLAN,
//! DSCP, UDP source port) and the station identity; the ICRC is filled by `roce_icrc`
//! (insert). The MAC is busy for the frame plus FCS, preamble and inter-frame gap at line
//! rate.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::wire::{AethFields, BthFields, EthernetFields, ExtHeaders, FrameBuilder, IpFields, Ipv4Fields, Ipv6Fields, Opcode, Vlan};

use super::mem::Dma;
use super::qp::Qp;
use super::req::Blocked;
use super::types::*;
use super::{Engine, TxKind, TxPkt};

/// Header build + ICRC insert latency in cycles (the `roce_icrc` pipeline dominates).
pub const LATENCY: u64 = 3 + crate::blocks::roce_icrc::LATENCY as u64;

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

impl Engine {
    /// Build the frame of a packet of `qp`.
    pub(crate) fn build_frame(&mut self, qp: &Qp, bth: BthFields, ext: ExtHeaders, payload: &[u8]) -> Option<Vec<u8>> {
        let vlan = self.vlan_of(qp).map(|(vid, pcp)| Vlan { pcp, dei: false, vid });
        let eth = EthernetFields { dst: qp.dest_mac, src: self.cfg.mac, vlan };
        let ecn = if self.cfg.ecn_enable { 0b10 } else { 0 };
        let ip = match qp.encap {
            Encap::RoceV2Ipv6 => IpFields::V6(Ipv6Fields {
                src: self.cfg.gid,
                dst: v6_of(qp.dest_ip),
                traffic_class: (qp.dscp << 2) | ecn,
                flow_label: qp.flow_label,
                hop_limit: qp.hop_limit,
            }),
            Encap::RoceV1 => IpFields::Grh(Ipv6Fields {
                src: self.cfg.gid,
                dst: v6_of(qp.dest_ip),
                traffic_class: qp.dscp << 2,
                flow_label: qp.flow_label,
                hop_limit: qp.hop_limit,
            }),
            Encap::RoceV2Ipv4 => {
                self.ip_id = self.ip_id.wrapping_add(1);
                IpFields::V4(Ipv4Fields {
                    src: self.cfg.ipv4,
                    dst: v4_of(qp.dest_ip),
                    dscp: qp.dscp,
                    ecn,
                    ttl: qp.hop_limit,
                    identification: self.ip_id,
                    dont_fragment: true,
                })
            }
        };
        let mut f = FrameBuilder::new(eth, ip, bth).with_ext(ext).with_udp_src_port(qp.udp_sport).build(payload).ok()?;
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

    /// Keep the requester's prefetch queue full (round-robin over active QPs).
    fn refill_requests(&mut self, now: u64, mem: &mut impl Dma) {
        let mut tries = self.req_rr.len();
        while self.req_q.len() < self.cfg.tx_prefetch && tries > 0 {
            let Some(qpn) = self.req_rr.pop_front() else { break };
            let Some(mut qp) = self.take_qp(qpn) else {
                tries -= 1;
                continue;
            };
            // roce_dcqcn: the rate timers up to now
            let (cfg, scan) = (self.dcqcn, self.dcqcn_scan());
            super::dcqcn::rp_advance(&mut qp.cc.rp, &cfg, scan, qpn, now, &mut self.dcqcn_events);
            let r = self.req_next(&mut qp, now, mem);
            let failed = matches!(r, Err(Blocked::Failed));
            match r {
                Ok(p) => {
                    self.req_q.push_back(p);
                    tries = self.req_rr.len() + 1;
                }
                Err(_) => tries -= 1,
            }
            if failed {
                self.retire(&mut qp, now, mem);
                qp.state = QpState::Err;
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
                    qp.resp.ack = None;
                    let bth = BthFields::new(Opcode::RcAcknowledge, qp.dest_qpn, a.psn);
                    let ext = ExtHeaders { aeth: Some(AethFields { syndrome: a.syndrome, msn: a.msn }), ..ExtHeaders::NONE };
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
            if let Some(tm) = qp.req.timer {
                min_into(&mut t, tm);
            }
            if self.req_q.len() < self.cfg.tx_prefetch {
                match self.req_ready(qp, 0) {
                    Ok(()) => min_into(&mut t, mac),
                    Err(Blocked::Until(w)) => min_into(&mut t, w.max(mac)),
                    Err(_) => {}
                }
            }
        }
        t
    }
}
