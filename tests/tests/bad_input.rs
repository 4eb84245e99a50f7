//! Bad input at the responder, one malformed class per test: each gets the protocol's answer
//! (drop, or the right NAK) and leaves the registered memory untouched. Every test also sends
//! the well-formed twin of its bad packet and sees it accepted, so it can fail.

use roce_driver::QpState;
use roce_model::wire::{
    parse_frame, AtomicEthFields, BthFields, EthernetFields, ExtHeaders, FrameBuilder, Ipv4Fields, Opcode, RethFields,
};
use roce_sim::net::pair::{Pair, PairConfig};

struct Rig {
    pair: Pair,
    epsn: u32,
}

fn rig() -> Rig {
    let pair = Pair::new(&PairConfig { buf_len: 64 * 1024, ..PairConfig::default() }).expect("pair");
    let epsn = pair.a.psn;
    Rig { pair, epsn }
}

impl Rig {
    /// A request frame from A to B.
    fn frame(&self, op: Opcode, psn: u32, ext: ExtHeaders, payload: &[u8]) -> Vec<u8> {
        self.frame_to(self.pair.b.qp.qpn(), op, psn, ext, payload)
    }

    fn frame_to(&self, qpn: u32, op: Opcode, psn: u32, ext: ExtHeaders, payload: &[u8]) -> Vec<u8> {
        let (a, b) = (&self.pair.a, &self.pair.b);
        let ip = |x: std::net::IpAddr| match x {
            std::net::IpAddr::V4(v) => v,
            std::net::IpAddr::V6(_) => unreachable!("IPv4 pair"),
        };
        let mut bth = BthFields::new(op, qpn, psn & 0xFF_FFFF);
        bth.ack_req = true;
        let ipf = Ipv4Fields { src: ip(a.ip), dst: ip(b.ip), ..Ipv4Fields::default() };
        let mut f = FrameBuilder::new(EthernetFields { dst: b.mac, src: a.mac, vlan: None }, ipf, bth)
            .with_ext(ext)
            .build(payload)
            .expect("frame");
        roce_model::icrc::fill(&mut f).expect("icrc");
        f
    }

    fn reth(&self, off: u64, len: u32) -> ExtHeaders {
        let mr = &self.pair.b.mr;
        ExtHeaders { reth: Some(RethFields { va: mr.va + off, rkey: mr.rkey, dma_len: len }), ..ExtHeaders::NONE }
    }

    /// Deliver a frame to B and collect what B sends back within a while.
    fn inject(&mut self, f: &[u8]) -> Vec<(Opcode, u32, Option<u8>)> {
        let b = &self.pair.b.node;
        b.borrow_mut().rx(f);
        let mut out = Vec::new();
        for _ in 0..20 {
            let mut n = b.borrow_mut();
            n.now += 500;
            while let Some(fr) = n.tx() {
                let p = parse_frame(&fr).expect("B sends well-formed frames");
                let r = p.roce().expect("RoCE");
                out.push((r.opcode(), r.bth().psn(), r.aeth().map(|a| a.syndrome())));
            }
        }
        out
    }

    fn mem(&self) -> Vec<u8> {
        let b = &self.pair.b;
        let mut v = vec![0u8; b.buf.len];
        b.dev.read_buf(&b.buf, 0, &mut v);
        v
    }

    fn counters(&self) -> roce_model::engine::Counters {
        self.pair.b.node.borrow().engine.counters.clone()
    }

    fn b_state(&self) -> QpState {
        self.pair.b.node.borrow().engine.qp(self.pair.b.qp.qpn()).map_or(QpState::Reset, |q| q.state)
    }
}

const ACK: u8 = 0x1F;
const NAK_SEQ: u8 = 0x60;
const NAK_INV: u8 = 0x61;
const NAK_ACC: u8 = 0x62;

fn payload(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i * 7 + 3) as u8).collect()
}

#[test]
fn bad_icrc_is_dropped_silently() {
    let mut r = rig();
    let before = r.mem();
    let mut f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, r.reth(0, 100), &payload(100));
    let n = f.len();
    f[n - 20] ^= 0x10;
    assert!(r.inject(&f).is_empty());
    assert_eq!(r.counters().rx_icrc_errors, 1);
    assert_eq!(r.mem(), before);
    // the intact frame is accepted
    f[n - 20] ^= 0x10;
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(ACK))]);
    assert_eq!(&r.mem()[..100], &payload(100)[..]);
}

#[test]
fn truncated_frames_are_dropped() {
    let mut r = rig();
    let before = r.mem();
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, r.reth(0, 100), &payload(100));
    for cut in [10, 30, 50, f.len() - 1] {
        assert!(r.inject(&f[..cut]).is_empty(), "cut at {cut}");
    }
    assert_eq!(r.counters().rx_malformed, 4);
    assert_eq!(r.mem(), before);
    assert_eq!(r.inject(&f).len(), 1);
}

#[test]
fn bad_opcode_sequence_naks_invalid_request() {
    let mut r = rig();
    let before = r.mem();
    let f = r.frame(Opcode::RcRdmaWriteMiddle, r.epsn, ExtHeaders::NONE, &payload(4096));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_INV))]);
    assert_eq!(r.mem(), before);
    assert_eq!(r.b_state(), QpState::Err, "invalid request is a fatal responder error");
    // a SEND LAST without FIRST on a fresh pair likewise
    let mut r = rig();
    let f = r.frame(Opcode::RcSendLast, r.epsn, ExtHeaders::NONE, &payload(10));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_INV))]);
}

#[test]
fn unknown_qpn_is_dropped() {
    let mut r = rig();
    let before = r.mem();
    let f = r.frame_to(999, Opcode::RcRdmaWriteOnly, r.epsn, r.reth(0, 100), &payload(100));
    assert!(r.inject(&f).is_empty());
    assert_eq!(r.counters().rx_unknown_qp, 1);
    assert_eq!(r.mem(), before);
}

#[test]
fn psn_out_of_window() {
    let mut r = rig();
    let before = r.mem();
    // ahead: one sequence-error NAK carrying the expected PSN, then silence
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn + 5, r.reth(0, 100), &payload(100));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_SEQ))]);
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn + 6, r.reth(0, 100), &payload(100));
    assert!(r.inject(&f).is_empty());
    // far away (half the PSN space): also "ahead" or "behind", never executed
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn + 0x40_0000, r.reth(0, 100), &payload(100));
    r.inject(&f);
    assert_eq!(r.mem(), before);
    // behind: a duplicate, re-acknowledged with the last PSN, not executed again
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn.wrapping_sub(3), r.reth(0, 100), &payload(100));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn.wrapping_sub(1) & 0xFF_FFFF, Some(ACK))]);
    assert_eq!(r.mem(), before);
    // the expected PSN is accepted
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, r.reth(0, 100), &payload(100));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(ACK))]);
    assert_eq!(r.b_state(), QpState::Rts);
}

#[test]
fn invalid_rkey_naks_remote_access() {
    let mut r = rig();
    let before = r.mem();
    let mut ext = r.reth(0, 100);
    if let Some(h) = ext.reth.as_mut() {
        h.rkey ^= 1;
    }
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, ext, &payload(100));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_ACC))]);
    assert_eq!(r.mem(), before);
    assert_eq!(r.b_state(), QpState::Err);
    // READ with a bad key too
    let mut r = rig();
    let mut ext = r.reth(0, 100);
    if let Some(h) = ext.reth.as_mut() {
        h.rkey = 0;
    }
    let f = r.frame(Opcode::RcRdmaReadRequest, r.epsn, ext, &[]);
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_ACC))]);
}

#[test]
fn out_of_bounds_va_naks_remote_access() {
    let mut r = rig();
    let before = r.mem();
    let len = r.pair.b.mr.len;
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, r.reth(len - 4, 100), &payload(100));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_ACC))]);
    assert_eq!(r.mem(), before);
    // a READ past the end
    let mut r = rig();
    let f = r.frame(Opcode::RcRdmaReadRequest, r.epsn, r.reth(len - 10, 11), &[]);
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_ACC))]);
    // the last byte exactly is fine
    let mut r = rig();
    let f = r.frame(Opcode::RcRdmaReadRequest, r.epsn, r.reth(len - 10, 10), &[]);
    let got = r.inject(&f);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, Opcode::RcRdmaReadResponseOnly);
}

#[test]
fn length_mismatch_naks_invalid_request() {
    let mut r = rig();
    let before = r.mem();
    // RETH says 200, the only packet carries 100
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, r.reth(0, 200), &payload(100));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_INV))]);
    assert_eq!(r.mem(), before);
    // a FIRST shorter than the MTU
    let mut r = rig();
    let f = r.frame(Opcode::RcRdmaWriteFirst, r.epsn, r.reth(0, 9000), &payload(1000));
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_INV))]);
    assert_eq!(r.mem(), before);
}

#[test]
fn qp_in_wrong_state_drops() {
    let mut r = rig();
    let before = r.mem();
    // Move B's QP to ERR through the driver: it no longer receives.
    let qp = r.pair.b.qp;
    let attr = roce_driver::QpAttr { state: QpState::Err, ..roce_driver::QpAttr::default() };
    r.pair.b.dev.modify_qp(qp, &attr, roce_driver::QpAttrMask::STATE).expect("to ERR");
    let f = r.frame(Opcode::RcRdmaWriteOnly, r.epsn, r.reth(0, 100), &payload(100));
    assert!(r.inject(&f).is_empty());
    assert_eq!(r.mem(), before);
    assert_eq!(r.counters().rx_unknown_qp, 1);
}

#[test]
fn send_without_receive_naks_rnr() {
    let mut r = rig();
    let f = r.frame(Opcode::RcSendOnly, r.epsn, ExtHeaders::NONE, &payload(64));
    let got = r.inject(&f);
    assert_eq!(got.len(), 1);
    let syn = got[0].2.expect("AETH");
    assert_eq!(syn & 0xE0, 0x20, "RNR NAK, syndrome {syn:#x}");
    assert_eq!(got[0].1, r.epsn);
    assert_eq!(r.b_state(), QpState::Rts, "RNR is not an error");
}

#[test]
fn misaligned_atomic_naks_invalid_request() {
    let mut r = rig();
    let before = r.mem();
    let mr = r.pair.b.mr;
    let ext = |va| ExtHeaders {
        atomic_eth: Some(AtomicEthFields { va, rkey: mr.rkey, swap_add: 5, compare: 0 }),
        ..ExtHeaders::NONE
    };
    let f = r.frame(Opcode::RcFetchAdd, r.epsn, ext(mr.va + 4), &[]);
    assert_eq!(r.inject(&f), vec![(Opcode::RcAcknowledge, r.epsn, Some(NAK_INV))]);
    assert_eq!(r.mem(), before);
    let mut r = rig();
    let f = r.frame(Opcode::RcFetchAdd, r.epsn, ext(mr.va + 8), &[]);
    let got = r.inject(&f);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, Opcode::RcAtomicAcknowledge);
    assert_eq!(r.mem()[8], 5);
}
