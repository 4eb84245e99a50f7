//! `roce-sim demo`: a short RC exchange between two nodes through the HDL ICRC pipeline.
//!
//! Node A sends a SEND, an RDMA WRITE (three packets at MTU 1024) and an RDMA READ request;
//! node B acknowledges and answers the READ with a multi-packet response — once over IPv4 and
//! once over IPv6 with an 802.1Q tag. Every frame is built by the model's wire codec with an
//! empty ICRC slot, sealed by the Verilated TX block (`roce_icrc`, INSERT=1), carried over a
//! link that flips one bit in a chosen number of frames, and checked by the Verilated RX block
//! (INSERT=0) and the model side by side.

use std::net::{Ipv4Addr, Ipv6Addr};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::wire::{
    AethFields, BthFields, EthernetFields, ExtHeaders, FrameBuilder, IpFields, Ipv4Fields, Ipv6Fields, Opcode,
    RethFields, Vlan,
};

use crate::cosim::icrc::icrc_lockstep;
use crate::stream::Traffic;
use crate::SimError;

/// One frame of the exchange and who sent it.
#[derive(Clone, Debug)]
pub struct DemoFrame {
    /// `A->B` or `B->A`.
    pub dir: &'static str,
    /// The frame (ICRC slot zero until sealed).
    pub frame: Vec<u8>,
}

struct Node {
    mac: [u8; 6],
    ip: IpFields,
    qpn: u32,
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// The exchange of one address family: SEND, WRITE (First/Middle/Last), READ and the answers.
fn exchange(a: &Node, b: &Node, vlan: Option<Vlan>, psn0: u32) -> Result<Vec<DemoFrame>, SimError> {
    const MTU: usize = 1024;
    let bad = |e: roce_model::wire::BuildError| SimError::Config(format!("demo frame: {e}"));
    let mut v = Vec::new();
    let mut psn_a = psn0;
    let mut msn_b = 0u32;
    let build = |from: &Node, to: &Node, bth: BthFields, ext: ExtHeaders, payload: &[u8]| {
        FrameBuilder::new(EthernetFields { dst: to.mac, src: from.mac, vlan }, from.ip, bth)
            .with_ext(ext)
            .with_udp_src_port(0xC000 | (from.qpn as u16 ^ to.qpn as u16))
            .build(payload)
    };
    let ack = |psn: u32, msn: u32| {
        let bth = BthFields::new(Opcode::RcAcknowledge, a.qpn, psn);
        (bth, ExtHeaders { aeth: Some(AethFields { syndrome: 0x1F, msn }), ..ExtHeaders::NONE })
    };

    // SEND Only, 64 bytes
    let mut bth = BthFields::new(Opcode::RcSendOnly, b.qpn, psn_a);
    bth.ack_req = true;
    v.push(DemoFrame { dir: "A->B", frame: build(a, b, bth, ExtHeaders::NONE, &pattern(64, 1)).map_err(bad)? });
    msn_b += 1;
    let (bth, ext) = ack(psn_a, msn_b);
    v.push(DemoFrame { dir: "B->A", frame: build(b, a, bth, ext, &[]).map_err(bad)? });
    psn_a = (psn_a + 1) & 0xFF_FFFF;

    // RDMA WRITE of 2500 bytes: First (RETH) / Middle / Last
    let data = pattern(2500, 7);
    let chunks: Vec<&[u8]> = data.chunks(MTU).collect();
    for (i, c) in chunks.iter().enumerate() {
        let (op, ext) = match i {
            0 => (
                Opcode::RcRdmaWriteFirst,
                ExtHeaders {
                    reth: Some(RethFields { va: 0x7f00_0000_1000, rkey: 0x1234, dma_len: data.len() as u32 }),
                    ..ExtHeaders::NONE
                },
            ),
            i if i + 1 == chunks.len() => (Opcode::RcRdmaWriteLast, ExtHeaders::NONE),
            _ => (Opcode::RcRdmaWriteMiddle, ExtHeaders::NONE),
        };
        let mut bth = BthFields::new(op, b.qpn, psn_a);
        bth.ack_req = i + 1 == chunks.len();
        v.push(DemoFrame { dir: "A->B", frame: build(a, b, bth, ext, c).map_err(bad)? });
        psn_a = (psn_a + 1) & 0xFF_FFFF;
    }
    msn_b += 1;
    let (bth, ext) = ack(psn_a.wrapping_sub(1) & 0xFF_FFFF, msn_b);
    v.push(DemoFrame { dir: "B->A", frame: build(b, a, bth, ext, &[]).map_err(bad)? });

    // RDMA READ of 3000 bytes: request, then Response First / Middle / Last
    let rd = pattern(3000, 9);
    let mut bth = BthFields::new(Opcode::RcRdmaReadRequest, b.qpn, psn_a);
    bth.ack_req = true;
    let ext = ExtHeaders {
        reth: Some(RethFields { va: 0x7f00_0000_9000, rkey: 0x5678, dma_len: rd.len() as u32 }),
        ..ExtHeaders::NONE
    };
    v.push(DemoFrame { dir: "A->B", frame: build(a, b, bth, ext, &[]).map_err(bad)? });
    msn_b += 1;
    let chunks: Vec<&[u8]> = rd.chunks(MTU).collect();
    for (i, c) in chunks.iter().enumerate() {
        let aeth = Some(AethFields { syndrome: 0x1F, msn: msn_b });
        let (op, ext) = match i {
            0 => (Opcode::RcRdmaReadResponseFirst, ExtHeaders { aeth, ..ExtHeaders::NONE }),
            i if i + 1 == chunks.len() => (Opcode::RcRdmaReadResponseLast, ExtHeaders { aeth, ..ExtHeaders::NONE }),
            _ => (Opcode::RcRdmaReadResponseMiddle, ExtHeaders::NONE),
        };
        let bth = BthFields::new(op, a.qpn, (psn_a + i as u32) & 0xFF_FFFF);
        v.push(DemoFrame { dir: "B->A", frame: build(b, a, bth, ext, c).map_err(bad)? });
    }
    Ok(v)
}

/// Summary of a demo run.
#[derive(Clone, Debug)]
pub struct DemoReport {
    /// Frames on the link.
    pub frames: usize,
    /// Bytes on the link.
    pub bytes: usize,
    /// Frames the RX check passed.
    pub ok: usize,
    /// Frames the RX check flagged.
    pub bad: usize,
    /// Indices of the frames the link corrupted.
    pub corrupted: Vec<usize>,
    /// HDL/model disagreements (TX and RX).
    pub disagreements: usize,
    /// Cycles the RX block took for the whole stream.
    pub rx_cycles: u64,
    /// Per frame: direction, opcode name, PSN, length, RX verdict ok.
    pub lines: Vec<(String, &'static str, u32, usize, bool)>,
    /// The sealed (and corrupted) frames as they crossed the link.
    pub wire: Vec<Vec<u8>>,
}

/// Run the demo at `data_bits`, corrupting `corrupt` frames chosen with `seed`.
pub fn run(data_bits: usize, corrupt: usize, seed: u64) -> Result<DemoReport, SimError> {
    let a4 = Node {
        mac: [0x52, 0x54, 0, 0, 0, 1],
        ip: IpFields::V4(Ipv4Fields {
            src: Ipv4Addr::new(192, 0, 2, 1),
            dst: Ipv4Addr::new(192, 0, 2, 2),
            ..Default::default()
        }),
        qpn: 0x11,
    };
    let b4 = Node {
        mac: [0x52, 0x54, 0, 0, 0, 2],
        ip: IpFields::V4(Ipv4Fields {
            src: Ipv4Addr::new(192, 0, 2, 2),
            dst: Ipv4Addr::new(192, 0, 2, 1),
            ..Default::default()
        }),
        qpn: 0x12,
    };
    let v6 = |s: u16, d: u16| {
        IpFields::V6(Ipv6Fields {
            src: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, s),
            dst: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, d),
            traffic_class: 0x68,
            flow_label: 0x12345,
            ..Default::default()
        })
    };
    let a6 = Node { mac: a4.mac, ip: v6(1, 2), qpn: 0x21 };
    let b6 = Node { mac: b4.mac, ip: v6(2, 1), qpn: 0x22 };
    let mut frames = exchange(&a4, &b4, None, 0x10_0000)?;
    frames.extend(exchange(&a6, &b6, Some(Vlan { pcp: 3, dei: false, vid: 100 }), 0xFF_FFFE)?);

    let t = Traffic::FULL;
    let tx_in: Vec<(Vec<u8>, bool)> = frames.iter().map(|f| (f.frame.clone(), false)).collect();
    let tx = icrc_lockstep(data_bits, true, &tx_in, &t, None)?;
    let mut wire: Vec<Vec<u8>> = tx.frames.iter().map(|f| f.hdl_frame.clone()).collect();

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut corrupted = Vec::new();
    while corrupted.len() < corrupt.min(wire.len()) {
        let i = rng.random_range(0..wire.len());
        if corrupted.contains(&i) {
            continue;
        }
        // a bit in the payload or transport headers (past the IP header's variant fields)
        let f = &mut wire[i];
        let at = rng.random_range(50..f.len() - 4);
        f[at] ^= 1 << rng.random_range(0..8);
        corrupted.push(i);
    }
    corrupted.sort_unstable();

    let rx_in: Vec<(Vec<u8>, bool)> = wire.iter().map(|f| (f.clone(), false)).collect();
    let rx = icrc_lockstep(data_bits, false, &rx_in, &t, None)?;
    let mut lines = Vec::new();
    for (i, (f, r)) in frames.iter().zip(&rx.frames).enumerate() {
        let p = roce_model::wire::parse_frame(&wire[i]).ok();
        let bth = p.as_ref().and_then(|p| p.roce()).map(|r| r.bth());
        let name = bth.map_or("?", |b| b.opcode().name());
        let psn = bth.map_or(0, |b| b.psn());
        lines.push((f.dir.to_string(), name, psn, wire[i].len(), !r.hdl.error));
    }
    let ok = rx.frames.iter().filter(|f| !f.hdl.error).count();
    Ok(DemoReport {
        frames: wire.len(),
        bytes: wire.iter().map(Vec::len).sum(),
        ok,
        bad: wire.len() - ok,
        corrupted,
        disagreements: tx.divergences.len() + rx.divergences.len(),
        rx_cycles: rx.run.cycles,
        lines,
        wire,
    })
}
