//! `--engine cosim`: the Verilated engine and the engine model on identical stimulus.
//!
//! A cosim node runs the HDL engine (it does the node's work: its frames go on the wire, its
//! host memory is what the driver reads) and, beside it, the engine model with a shadow copy
//! of host memory. Both get every received frame in the same order, every register write and
//! every host-memory write of the driver. What each emits is compared as ordered
//! transactions, which do not depend on the two engines' different cycle timing:
//!
//! - **frames**: every non-ACK frame in order per producing block (READ responses; NAKs and
//!   atomic ACKs; requests; the order between blocks is the TX arbiter's, i.e. timing),
//!   byte for byte except the IPv4 identification and header checksum (a per-frame counter
//!   that coalesced ACKs shift) and the ICRC over them; the HDL's own ICRC and IPv4 checksum
//!   are checked on every frame instead. ACKs and NAKs are coalesced by timing (a newer one
//!   replaces a queued one), so every ACK/NAK the HDL sends must be one the model's
//!   responder asked for (before its coalescing), and per QP the last one of each side is
//!   compared at the end; CNPs (rate limited by time) are counted.
//!   Requests (a requester node) are compared by (destination QP, PSN): each request must
//!   equal the other side's request of that PSN; per QP, while neither side has sent a PSN
//!   of that QP twice, they are also compared in order, and in the end both must have sent
//!   the same PSNs (the order between QPs is the schedulers', i.e. timing). Once one goes
//!   back on a QP (go-back-N after a NAK or a local ACK timeout), how many packets it had
//!   sent before, when its timer fired, and whether a response to the other's re-issued
//!   READ spared it a resend are timing: then only that QP's requests of the same PSN are
//!   compared (the completer's DMA writes and CQEs stay compared in order).
//! - **DMA writes**: per host-memory window (each driver allocation: a ring, a buffer), the
//!   written bytes in order, address and data: payload placement and CQEs. The order across
//!   windows is the DMA arbiters' (timing) and is not compared.
//!
//! The first difference is kept as a [`Divergence`]: the HDL cycle it was seen at, the block
//! that produced the value, and both values.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;

use roce_model::engine::{Dma, DmaError, HostMem};
use roce_model::icrc;
use roce_model::wire::{parse_frame, AethSyndrome, Opcode};

/// The first place where the HDL and the model disagreed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// HDL cycle at which the difference was seen.
    pub cycle: u64,
    /// The block that produced the value (by what it is: frame kind, memory written).
    pub block: &'static str,
    /// What was compared.
    pub what: String,
    /// The HDL's value.
    pub hdl: String,
    /// The model's value.
    pub model: String,
}

impl fmt::Display for Divergence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "cycle {}: {} ({})\n    hdl:   {}\n    model: {}",
            self.cycle, self.what, self.block, self.hdl, self.model
        )
    }
}

/// What the comparison covered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShadowStats {
    /// Non-ACK frames compared.
    pub frames: u64,
    /// Plain ACKs sent by the HDL / the model (coalesced differently).
    pub acks: [u64; 2],
    /// CNPs sent by the HDL / the model.
    pub cnps: [u64; 2],
    /// DMA-written bytes compared.
    pub dma_bytes: u64,
}

type WriteQ = VecDeque<(u64, Vec<u8>, usize)>;

/// The model beside an HDL engine, and the comparison of what both emit.
#[derive(Debug, Default)]
pub struct Shadow {
    /// The model's host memory (the driver's writes are mirrored into it).
    pub mem: HostMem,
    windows: BTreeMap<u64, u64>,
    tx: BTreeMap<&'static str, [VecDeque<Vec<u8>>; 2]>,
    acks: [HashMap<u32, (u32, u32)>; 2],
    /// ACK/NAKs the model's responder asked for: (dest QPN, PSN, syndrome, MSN).
    ack_reqs: HashSet<(u32, u32, u8, u32)>,
    /// ACK/NAKs the HDL sent, not yet matched with a model request (the model may process
    /// a frame later than the HDL): (cycle, dest QPN, PSN, syndrome, MSN).
    hdl_acks: VecDeque<(u64, u32, u32, u8, u32)>,
    writes: HashMap<u64, [WriteQ; 2]>,
    /// Requests each side sent, by (destination QP, PSN): the last one, normalized.
    reqs: [HashMap<(u32, u32), Vec<u8>>; 2],
    /// Per destination QP: request keys in send order while neither side has sent a PSN of
    /// that QP twice.
    req_order: HashMap<u32, [VecDeque<(u32, u32)>; 2]>,
    /// Destination QPs on which a side sent a PSN again (went back).
    req_repeat: HashSet<u32>,
    /// What was compared.
    pub stats: ShadowStats,
    /// The first difference, once seen (comparison stops there).
    pub divergence: Option<Divergence>,
}

/// Which side a transaction came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The Verilated engine.
    Hdl = 0,
    /// The engine model.
    Model = 1,
}

/// A [`Dma`] over the shadow memory that hands every write to the comparison.
pub struct Recording<'a> {
    shadow: &'a mut Shadow,
}

impl Dma for Recording<'_> {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        self.shadow.mem.dma_read(addr, buf)
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        self.shadow.mem.dma_write(addr, data)?;
        self.shadow.push_write(Side::Model, addr, data);
        Ok(())
    }
}

fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b.iter().take(96) {
        s.push_str(&format!("{x:02x}"));
    }
    if b.len() > 96 {
        s.push_str(&format!("... ({} bytes)", b.len()));
    }
    s
}

/// A frame's kind as the comparison treats it.
enum Kind {
    /// An ACK or NAK to `qpn`: (PSN, syndrome, MSN).
    Ack(u32, u32, u8, u32),
    Cnp,
    /// Anything else, with the block that builds it.
    Other(&'static str),
}

fn kind(f: &[u8]) -> Kind {
    let Ok(p) = parse_frame(f) else { return Kind::Other("roce_tx_build") };
    let Some(r) = p.roce() else { return Kind::Other("roce_tx_build") };
    let bth = r.bth();
    match bth.opcode() {
        Opcode::Cnp => Kind::Cnp,
        Opcode::RcAcknowledge => match r.aeth() {
            Some(a) => Kind::Ack(bth.dest_qp(), bth.psn(), a.syndrome(), a.msn()),
            None => Kind::Other("roce_ack_q (ACK without AETH)"),
        },
        Opcode::RcAtomicAcknowledge => Kind::Other("roce_ack_q (atomic ACK)"),
        Opcode::RcRdmaReadResponseFirst
        | Opcode::RcRdmaReadResponseMiddle
        | Opcode::RcRdmaReadResponseLast
        | Opcode::RcRdmaReadResponseOnly => Kind::Other("roce_rd_rsp (READ response)"),
        _ => Kind::Other("roce_req (request)"),
    }
}

/// A request packet's (destination QP, PSN).
fn request_key(f: &[u8]) -> Option<(u32, u32)> {
    let p = parse_frame(f).ok()?;
    let r = p.roce()?;
    let bth = r.bth();
    bth.opcode().is_request().then(|| (bth.dest_qp(), bth.psn()))
}

/// The frame with the fields a per-frame counter decides blanked: IPv4 identification and
/// header checksum, and the ICRC that covers the identification.
fn normalized(f: &[u8]) -> Vec<u8> {
    let mut v = f.to_vec();
    if let Ok(p) = parse_frame(f) {
        if let (Some(ip), Some(_)) = (p.ip_offset(), p.ipv4()) {
            for i in [ip + 4, ip + 5, ip + 10, ip + 11] {
                if let Some(b) = v.get_mut(i) {
                    *b = 0;
                }
            }
        }
        if let Some(o) = p.icrc_offset() {
            for b in v.iter_mut().skip(o).take(4) {
                *b = 0;
            }
        }
    }
    v
}

/// Whether an IPv4 header checksum (if the frame is IPv4) verifies.
fn ipv4_checksum_ok(f: &[u8]) -> bool {
    let Ok(p) = parse_frame(f) else { return true };
    let (Some(ip), Some(h)) = (p.ip_offset(), p.ipv4()) else { return true };
    let Some(hdr) = f.get(ip..ip + h.header_len()) else { return false };
    let mut sum: u32 = hdr.chunks(2).map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]))).sum();
    while sum > 0xFFFF {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    sum == 0xFFFF
}

impl Shadow {
    /// An empty shadow (memory behind an IOMMU, as the node's).
    pub fn new() -> Self {
        Shadow { mem: HostMem::with_iommu(), ..Shadow::default() }
    }

    /// The model's DMA view, recording its writes.
    pub fn dma(&mut self) -> Recording<'_> {
        Recording { shadow: self }
    }

    /// A host-memory window was mapped (mirror it; writes are compared per window).
    pub fn map_window(&mut self, iova: u64, len: u64) {
        self.mem.map_window(iova, len);
        self.windows.insert(iova, len);
    }

    /// A window was unmapped.
    pub fn unmap_window(&mut self, iova: u64) {
        self.mem.unmap_window(iova);
        self.windows.remove(&iova);
    }

    fn window_of(&self, addr: u64) -> u64 {
        match self.windows.range(..=addr).next_back() {
            Some((&base, &len)) if addr < base + len => base,
            _ => u64::MAX,
        }
    }

    /// A DMA write by `side`.
    pub fn push_write(&mut self, side: Side, addr: u64, data: &[u8]) {
        if self.divergence.is_some() || data.is_empty() {
            return;
        }
        let w = self.window_of(addr);
        self.writes.entry(w).or_default()[side as usize].push_back((addr, data.to_vec(), 0));
    }

    /// The model's responder asked for an ACK/NAK (before coalescing) to `dest_qpn`.
    pub fn push_ack_request(&mut self, dest_qpn: u32, psn: u32, syndrome: u8, msn: u32) {
        self.ack_reqs.insert((dest_qpn, psn, syndrome, msn));
    }

    /// A frame sent by `side`.
    pub fn push_frame(&mut self, side: Side, cycle: u64, f: &[u8]) {
        if self.divergence.is_some() {
            return;
        }

        match kind(f) {
            Kind::Ack(qpn, psn, syndrome, msn) => {
                self.stats.acks[side as usize] += 1;
                self.acks[side as usize].insert(qpn, (psn, msn));
                if side == Side::Hdl {
                    self.hdl_acks.push_back((cycle, qpn, psn, syndrome, msn));
                }
            }
            Kind::Cnp => self.stats.cnps[side as usize] += 1,
            Kind::Other(block) => {
                if side == Side::Hdl && !matches!(icrc::check(f), Ok(true)) {
                    self.diverge(cycle, block, "the HDL's frame has a wrong ICRC".into(), hex(f), String::new());
                    return;
                }
                if side == Side::Hdl && !ipv4_checksum_ok(f) {
                    self.diverge(
                        cycle,
                        block,
                        "the HDL's frame has a wrong IPv4 header checksum".into(),
                        hex(f),
                        String::new(),
                    );
                    return;
                }
                if let Some(key) = request_key(f) {
                    self.push_request(side, cycle, key, f);
                    return;
                }
                self.tx.entry(block).or_default()[side as usize].push_back(f.to_vec());
            }
        }
        self.compare(cycle);
    }

    /// A request frame (destination QP, PSN) by `side`: compared with the other side's
    /// request of that PSN, and in order while neither side has gone back.
    fn push_request(&mut self, side: Side, cycle: u64, key: (u32, u32), f: &[u8]) {
        const BLOCK: &str = "roce_req (request)";
        let (me, other) = (side as usize, 1 - side as usize);
        let n = normalized(f);
        if self.reqs[me].contains_key(&key) && self.req_repeat.insert(key.0) {
            self.req_order.remove(&key.0);
        }
        if let Some(o) = self.reqs[other].get(&key) {
            self.stats.frames += 1;
            if *o != n {
                let (h, m) = if side == Side::Hdl { (&n, o) } else { (o, &n) };
                let at = h.iter().zip(m.iter()).position(|(a, b)| a != b).unwrap_or(h.len().min(m.len()));
                let from = at.saturating_sub(8);
                let show = |f: &[u8]| format!("[{from}..] {}", hex(f.get(from..).unwrap_or_default()));
                let what = format!(
                    "request to QP {:#x} PSN {:#08x} differs from byte {at} (lengths {} / {})",
                    key.0,
                    key.1,
                    h.len(),
                    m.len()
                );
                let (hs, ms) = (show(h), show(m));
                self.diverge(cycle, BLOCK, what, hs, ms);
                return;
            }
        }
        self.reqs[me].insert(key, n);
        if !self.req_repeat.contains(&key.0) {
            let order = self.req_order.entry(key.0).or_default();
            order[me].push_back(key);
            let [hq, mq] = order;
            while let (Some(h), Some(m)) = (hq.front(), mq.front()) {
                if h != m {
                    let what = "requests in a different order (neither side went back)".to_string();
                    let (hs, ms) =
                        (format!("QP {:#x} PSN {:#08x}", h.0, h.1), format!("QP {:#x} PSN {:#08x}", m.0, m.1));
                    self.diverge(cycle, BLOCK, what, hs, ms);
                    return;
                }
                hq.pop_front();
                mq.pop_front();
            }
        }
        self.compare(cycle);
    }

    fn diverge(&mut self, cycle: u64, block: &'static str, what: String, hdl: String, model: String) {
        if self.divergence.is_none() {
            self.divergence = Some(Divergence { cycle, block, what, hdl, model });
        }
    }

    /// Compare what both sides have emitted so far (called after every step).
    pub fn compare(&mut self, cycle: u64) {
        self.match_acks(false);
        let mut found = None;
        for (&block, [hq, mq]) in self.tx.iter_mut() {
            while let (Some(h), Some(m)) = (hq.front(), mq.front()) {
                self.stats.frames += 1;
                let (hn, mn) = (normalized(h), normalized(m));
                if hn != mn {
                    let at = hn.iter().zip(&mn).position(|(a, b)| a != b).unwrap_or(hn.len().min(mn.len()));
                    let from = at.saturating_sub(8);
                    let show = |f: &[u8]| format!("[{from}..] {}", hex(f.get(from..).unwrap_or_default()));
                    let what = format!(
                        "frame {} of {block} differs from byte {at} (lengths {} / {})",
                        self.stats.frames,
                        h.len(),
                        m.len()
                    );
                    found = Some((block, what, show(h), show(m)));
                    break;
                }
                hq.pop_front();
                mq.pop_front();
            }
            if found.is_some() {
                break;
            }
        }
        if let Some((block, what, h, m)) = found {
            self.diverge(cycle, block, what, h, m);
            return;
        }
        let mut found = None;
        for (&w, q) in self.writes.iter_mut() {
            let [hq, mq] = q;
            while let (Some(h), Some(m)) = (hq.front_mut(), mq.front_mut()) {
                let (ha, ma) = (h.0 + h.2 as u64, m.0 + m.2 as u64);
                let n = (h.1.len() - h.2).min(m.1.len() - m.2);
                let (hs, ms) = (&h.1[h.2..h.2 + n], &m.1[m.2..m.2 + n]);
                if ha != ma || hs != ms {
                    let i = hs.iter().zip(ms).position(|(a, b)| a != b).unwrap_or(0);
                    let block =
                        if h.1.len() == 32 || m.1.len() == 32 { "roce_cq (CQE)" } else { "roce_pay_scatter (payload)" };
                    let what = if ha != ma {
                        format!("DMA write address in window {w:#x}")
                    } else {
                        format!("DMA write data at {:#x} (window {w:#x})", ha + i as u64)
                    };
                    found = Some((
                        block,
                        what,
                        format!("{ha:#x}: {}", hex(&hs[i..])),
                        format!("{ma:#x}: {}", hex(&ms[i..])),
                    ));
                    break;
                }
                self.stats.dma_bytes += n as u64;
                h.2 += n;
                m.2 += n;
                if h.2 == h.1.len() {
                    hq.pop_front();
                }
                if m.2 == m.1.len() {
                    mq.pop_front();
                }
            }
            if found.is_some() {
                break;
            }
        }
        if let Some((block, what, h, m)) = found {
            self.diverge(cycle, block, what, h, m);
        }
    }

    /// Match the HDL's ACK/NAKs with the model's requests; at the end (`all`), or when one
    /// has waited long, an unmatched one is a divergence.
    fn match_acks(&mut self, all: bool) {
        self.hdl_acks.retain(|a| !self.ack_reqs.contains(&(a.1, a.2, a.3, a.4)));
        let Some(&(at, qpn, psn, syndrome, msn)) = self.hdl_acks.front() else { return };
        if !all && self.hdl_acks.len() < 4096 {
            return;
        }
        let nak = !matches!(AethSyndrome::from_u8(syndrome), AethSyndrome::Ack { .. });
        let kind = if nak { "NAK" } else { "ACK" };
        let mut near: Vec<_> = self.ack_reqs.iter().filter(|r| r.0 == qpn && r.1 == psn).collect();
        near.sort_unstable();
        let model = if near.is_empty() {
            "(no request at that PSN)".to_string()
        } else {
            near.iter().map(|r| format!("syndrome {:#04x} MSN {}", r.2, r.3)).collect::<Vec<_>>().join(", ")
        };
        self.diverge(
            at,
            "roce_ack_q",
            format!("the HDL sent an {kind} the model's responder never asked for"),
            format!("QP {qpn:#x} PSN {psn:#08x} syndrome {syndrome:#04x} MSN {msn}"),
            model,
        );
    }

    /// At the end of a run: what one side emitted and the other did not, and the last ACK
    /// of every QP.
    pub fn finish(&mut self, cycle: u64) {
        self.compare(cycle);
        self.match_acks(true);
        if self.divergence.is_some() {
            return;
        }
        let mut extra = None;
        for (&block, q) in &self.tx {
            for (side, other) in [(0usize, "model"), (1, "HDL")] {
                if let Some(f) = q[side].front() {
                    let (h, m) =
                        if side == 0 { (hex(f), "(none)".to_string()) } else { ("(none)".to_string(), hex(f)) };
                    extra.get_or_insert((
                        block,
                        format!("{} frame(s) of {block} the {other} did not send", q[side].len()),
                        h,
                        m,
                    ));
                }
            }
        }
        if let Some((block, what, h, m)) = extra {
            self.diverge(cycle, block, what, h, m);
            return;
        }
        // After a side went back on a QP, one side may resend a PSN the other never needs
        // again: a response to the other's re-issued READ, or an ACK, can reach it before its
        // own timer fires. Only on QPs without any going back must both have sent the same
        // PSNs.
        for (side, other) in [(0usize, "model"), (1, "HDL")] {
            let mut missing: Vec<_> = self.reqs[side]
                .keys()
                .filter(|k| !self.req_repeat.contains(&k.0) && !self.reqs[1 - side].contains_key(k))
                .copied()
                .collect();
            missing.sort_unstable();
            if let Some(&(q, p)) = missing.first() {
                let v = format!("QP {q:#x} PSN {p:#08x} (and {} more)", missing.len() - 1);
                let (h, m) = if side == 0 { (v, "(none)".to_string()) } else { ("(none)".to_string(), v) };
                self.diverge(cycle, "roce_req (request)", format!("requests the {other} never sent"), h, m);
                return;
            }
        }
        let mut extra = None;
        for (&w, q) in &self.writes {
            for (side, other) in [(0usize, "model"), (1, "HDL")] {
                if let Some((a, d, o)) = q[side].front() {
                    let v = format!("{:#x}: {}", a + *o as u64, hex(&d[*o..]));
                    let (h, m) = if side == 0 { (v, "(none)".to_string()) } else { ("(none)".to_string(), v) };
                    extra.get_or_insert((format!("DMA writes in window {w:#x} the {other} did not make"), h, m));
                }
            }
        }
        if let Some((what, h, m)) = extra {
            self.diverge(cycle, "roce_pay_scatter / roce_cq", what, h, m);
            return;
        }
        let mut qpns: Vec<u32> = self.acks[0].keys().chain(self.acks[1].keys()).copied().collect();
        qpns.sort_unstable();
        qpns.dedup();
        for q in qpns {
            let (h, m) = (self.acks[0].get(&q), self.acks[1].get(&q));
            if h != m {
                let s =
                    |x: Option<&(u32, u32)>| x.map_or("(no ACK)".to_string(), |(p, n)| format!("PSN {p:#08x} MSN {n}"));
                self.diverge(cycle, "roce_ack_q (coalesced ACKs)", format!("last ACK to QP {q:#x}"), s(h), s(m));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_compare_across_different_splits() {
        let mut s = Shadow::new();
        s.map_window(0x1000, 0x1000);
        s.push_write(Side::Hdl, 0x1000, &[1, 2, 3, 4]);
        s.push_write(Side::Hdl, 0x1004, &[5, 6]);
        s.push_write(Side::Model, 0x1000, &[1, 2]);
        s.push_write(Side::Model, 0x1002, &[3, 4, 5, 6]);
        s.finish(10);
        assert_eq!(s.divergence, None);
        assert_eq!(s.stats.dma_bytes, 6);
        s.push_write(Side::Hdl, 0x1010, &[7, 8]);
        s.push_write(Side::Model, 0x1010, &[7, 9]);
        s.compare(11);
        let d = s.divergence.expect("a data difference is found");
        assert_eq!(d.cycle, 11);
        assert!(d.what.contains("0x1011"), "{d}");
    }

    fn request(psn: u32, byte: u8) -> Vec<u8> {
        request_to(0x11, psn, byte)
    }

    fn request_to(qpn: u32, psn: u32, byte: u8) -> Vec<u8> {
        use roce_model::wire::{BthFields, EthernetFields, FrameBuilder, Ipv4Fields};
        let eth = EthernetFields { dst: [2, 0, 0, 0, 0, 0xB], src: [2, 0, 0, 0, 0, 0xA], vlan: None };
        let ip = Ipv4Fields { src: [192, 0, 2, 1].into(), dst: [192, 0, 2, 2].into(), ..Ipv4Fields::default() };
        let b = FrameBuilder::new(eth, ip, BthFields::new(Opcode::RcSendOnly, qpn, psn));
        let mut f = b.build(&[byte; 40]).expect("frame");
        icrc::fill(&mut f).expect("ICRC");
        f
    }

    #[test]
    fn requests_compare_by_psn_and_in_order_until_one_side_goes_back() {
        let mut s = Shadow::new();
        for p in 0..3 {
            s.push_frame(Side::Hdl, p.into(), &request(p, 1));
        }
        s.push_frame(Side::Model, 3, &request(0, 1));
        s.push_frame(Side::Model, 4, &request(1, 1));
        // the HDL goes back to PSN 1 before the model sent PSN 2 (timing): allowed
        s.push_frame(Side::Hdl, 5, &request(1, 1));
        s.push_frame(Side::Model, 6, &request(2, 1));
        s.finish(7);
        assert_eq!(s.divergence, None);
        assert_eq!(s.stats.frames, 4);
        // the same PSN with other bytes is not
        s.push_frame(Side::Model, 8, &request(2, 9));
        let d = s.divergence.expect("a different request of the same PSN");
        assert!(d.what.contains("PSN 0x000002"), "{d}");

        // without going back, the order and the PSNs sent count
        let mut s = Shadow::new();
        s.push_frame(Side::Hdl, 1, &request(0, 1));
        s.push_frame(Side::Model, 1, &request(1, 1));
        assert!(s.divergence.expect("order").what.contains("different order"));
        let mut s = Shadow::new();
        s.push_frame(Side::Hdl, 1, &request(0, 1));
        s.finish(2);
        assert!(s.divergence.expect("missing").what.contains("the model never sent"));
    }

    #[test]
    fn a_missing_write_is_reported_at_the_end() {
        let mut s = Shadow::new();
        s.map_window(0x1000, 0x1000);
        s.push_write(Side::Model, 0x1000, &[1]);
        s.finish(5);
        assert!(s.divergence.expect("reported").what.contains("the HDL did not make"));
    }

    #[test]
    fn requests_compare_in_order_per_qp() {
        // two QPs interleaved differently by the two sides (the schedulers' timing): no
        // divergence; each QP's own order still counts
        let mut s = Shadow::new();
        for (q, p) in [(0x11, 0), (0x12, 5), (0x11, 1), (0x12, 6)] {
            s.push_frame(Side::Hdl, 1, &request_to(q, p, 1));
        }
        for (q, p) in [(0x12, 5), (0x12, 6), (0x11, 0), (0x11, 1)] {
            s.push_frame(Side::Model, 2, &request_to(q, p, 1));
        }
        s.finish(3);
        assert_eq!(s.divergence, None);
        let mut s = Shadow::new();
        s.push_frame(Side::Hdl, 1, &request_to(0x12, 5, 1));
        s.push_frame(Side::Model, 1, &request_to(0x11, 0, 1));
        s.push_frame(Side::Model, 1, &request_to(0x12, 6, 1));
        assert!(s.divergence.expect("order within QP 0x12").what.contains("different order"));
    }
}
