//! End-to-end RC protocol behaviour on two engines, each programmed by `roce-driver`, joined
//! by simulated links (`roce_sim::net::pair`). One capability per test, each also showing its
//! good path so that it can fail: retry exhaustion, RNR retry, atomics (exactly once over a
//! duplicating, reordering link), immediate data and invalidation, IPv6 and VLAN, ECN → CNP
//! → DCQCN, PFC, every QP the engine has in use at once, and the counters against what the
//! hosts and the wire saw.
//!
//! The tests marked `hdl_` run the same on two Verilated engines (`roce_engine`: A's
//! requester and completer, B's responder); where a check reads the model's internal
//! state, the HDL run checks the rest (counters are read through the registers on both).
//! (A polled HDL register read runs the engine's clock ahead of the pair's: loops poll
//! completions and captured frames, not counters.)

use std::collections::BTreeSet;
use std::net::IpAddr;

use roce_driver::{
    Backend, CompletionQueue, CqeOpcode, CqeStatus, DriverError, QpState, QueuePair, RecvWr, SendWr, Sge,
    WorkCompletion, WrOp,
};
use roce_model::contract::regs;
use roce_model::engine::Counters;
use roce_model::wire::{parse_frame, Opcode, Vlan, L3};
use roce_sim::cmd::transfer::{self, pattern, Op, TransferConfig};
use roce_sim::net::fabric::{Link, LinkConfig};
use roce_sim::net::pair::{connect, Endpoint, Pair, PairConfig, ALL_ACCESS};

const WC0: WorkCompletion = WorkCompletion {
    wr_id: 0,
    status: CqeStatus::Success,
    opcode: CqeOpcode::Send,
    byte_len: 0,
    imm: None,
    invalidated: None,
    qpn: 0,
    src_qp: 0,
};

/// Drain a CQ into `out`.
fn poll_into(ep: &mut Endpoint, cq: CompletionQueue, out: &mut Vec<WorkCompletion>) {
    let mut wcs = [WC0; 64];
    loop {
        let n = ep.dev.poll_cq(cq, &mut wcs).expect("poll_cq");
        out.extend_from_slice(&wcs[..n]);
        if n < wcs.len() {
            break;
        }
    }
}

/// An endpoint's counters (an HDL node's through its registers: not in a polling loop).
fn counters(ep: &Endpoint) -> Counters {
    ep.node.borrow_mut().counters()
}

/// RNR NAKs B sent, from the capture.
fn rnr_naks(r: &Rig) -> usize {
    r.frames(1)
        .iter()
        .filter(|(_, f)| {
            parse_frame(f)
                .ok()
                .and_then(|p| p.roce().and_then(|x| x.aeth()).map(|a| a.syndrome() >> 5 == 1))
                .unwrap_or(false)
        })
        .count()
}

/// Write message `i`'s pattern at `off` of an endpoint's buffer; returns it.
fn fill(ep: &mut Endpoint, off: u64, i: u64, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    pattern(0xC0FFEE, i, &mut d);
    ep.dev.write_buf(&ep.buf, off as usize, &d);
    d
}

fn read(ep: &Endpoint, off: u64, len: usize) -> Vec<u8> {
    let mut d = vec![0u8; len];
    ep.dev.read_buf(&ep.buf, off as usize, &mut d);
    d
}

fn read_u64(ep: &Endpoint, off: u64) -> u64 {
    let b = read(ep, off, 8);
    u64::from_le_bytes(b.try_into().expect("8 bytes"))
}

/// (PSN, opcode) of a captured RoCE frame.
fn roce_of(f: &[u8]) -> Option<(u32, Opcode)> {
    let p = parse_frame(f).ok()?;
    let r = p.roce()?;
    Some((r.bth().psn(), r.opcode()))
}

/// A pair and the completions its hosts have polled.
struct Rig {
    pair: Pair,
    wa: Vec<WorkCompletion>,
    wb: Vec<WorkCompletion>,
}

impl Rig {
    fn new(cfg: &PairConfig) -> Self {
        Rig { pair: Pair::new(cfg).expect("pair"), wa: Vec::new(), wb: Vec::new() }
    }

    fn poll(&mut self) {
        let (a, b) = (&mut self.pair.a, &mut self.pair.b);
        let (ca, cb) = (a.cq, b.cq);
        poll_into(a, ca, &mut self.wa);
        poll_into(b, cb, &mut self.wb);
    }

    /// Step the pair (polling both CQs) until `done` holds or `max` cycles pass.
    fn run_until(&mut self, max: u64, mut done: impl FnMut(&Rig) -> bool) -> bool {
        let end = self.pair.now + max;
        loop {
            self.poll();
            if done(self) {
                return true;
            }
            if self.pair.now >= end {
                return false;
            }
            if !self.pair.step() {
                self.pair.exchange();
                self.poll();
                return done(self);
            }
        }
    }

    /// A posts a send WR with `len` bytes of its buffer at `a_off` as the local SGE.
    fn post(&mut self, wr_id: u64, op: WrOp, a_off: u64, len: u32) {
        let a = &mut self.pair.a;
        let sge = [a.mr.sge(a_off, len)];
        let sges: &[Sge] = if len == 0 { &[] } else { &sge };
        a.dev.post_send(a.qp, &[SendWr::new(wr_id, op, sges)]).expect("post_send");
    }

    /// B posts a receive of `len` bytes at `b_off`.
    fn recv(&mut self, wr_id: u64, b_off: u64, len: u32) {
        let b = &mut self.pair.b;
        let sge = [b.mr.sge(b_off, len)];
        b.dev.post_recv(b.qp, &[RecvWr { wr_id, sges: &sge }]).expect("post_recv");
    }

    /// WRITE from A's `a_off` to B's `b_off` (B's MR).
    fn write(&mut self, wr_id: u64, a_off: u64, b_off: u64, len: u32) {
        let (va, rkey) = (self.pair.b.mr.va, self.pair.b.mr.rkey);
        self.post(wr_id, WrOp::Write { remote_addr: va + b_off, rkey }, a_off, len);
    }

    fn a_state(&mut self) -> QpState {
        let qp = self.pair.a.qp;
        self.pair.a.dev.query_qp(qp).expect("query_qp").state
    }

    fn b_state(&mut self) -> QpState {
        let qp = self.pair.b.qp;
        self.pair.b.dev.query_qp(qp).expect("query_qp").state
    }

    /// IRQ_STATUS.QP_ERROR and QP_ERR_INFO (QPN, cause) of A, through the driver's backend.
    fn a_qp_error(&mut self) -> Option<(u32, u32)> {
        let b = self.pair.a.dev.backend();
        let irq = b.read32(regs::IRQ_STATUS);
        if !regs::irq_status::QP_ERROR.is_set(irq) {
            return None;
        }
        let info = b.read32(regs::QP_ERR_INFO);
        Some((regs::qp_err_info::QPN.get(info), regs::qp_err_info::CAUSE.get(info)))
    }

    /// Captured frames of direction `dir` (0 = A->B), with their cycles.
    fn frames(&self, dir: u8) -> Vec<(u64, &[u8])> {
        self.pair.capture.as_ref().map_or_else(Vec::new, |c| {
            c.iter().filter(|(_, d, _)| *d == dir).map(|(t, _, f)| (*t, f.as_slice())).collect()
        })
    }
}

const MS: u64 = 250_000; // cycles per millisecond at 250 MHz

fn cause(st: CqeStatus) -> u32 {
    u32::from(st.code())
}

// 1. Retry exhaustion ------------------------------------------------------------------

#[test]
fn retry_exhaustion_fails_the_request_and_the_qp() {
    retry_exhaustion([false; 2]);
}

#[test]
fn hdl_retry_exhaustion_fails_the_request_and_the_qp() {
    retry_exhaustion([true; 2]);
}

fn retry_exhaustion(hdl: [bool; 2]) {
    // timeout code 1 = 4.096 µs << 1 = 2048 cycles; two retries
    let cfg = PairConfig { timeout: 1, retry_cnt: 2, buf_len: 64 * 1024, hdl, ..PairConfig::default() };

    // Good path: over a clean link the same WRITE succeeds with one transmission.
    let mut r = Rig::new(&cfg);
    let data = fill(&mut r.pair.a, 0, 1, 1000);
    r.write(1, 0, 0, 1000);
    assert!(r.run_until(MS, |r| !r.wa.is_empty()));
    assert_eq!((r.wa[0].wr_id, r.wa[0].status, r.wa[0].opcode), (1, CqeStatus::Success, CqeOpcode::Write));
    assert_eq!(read(&r.pair.b, 0, 1000), data);
    assert_eq!(r.pair.ab.stats.sent, 1);
    assert_eq!(r.a_state(), QpState::Rts);
    assert_eq!(r.a_qp_error(), None);

    // Every frame A->B is lost.
    let mut r = Rig::new(&cfg);
    r.pair.ab = Link::new(LinkConfig { loss: 1.0, ..LinkConfig::default() }, 77);
    r.pair.capture = Some(Vec::new());
    let first_psn = r.pair.a.psn;
    let qpn = r.pair.a.qp.qpn();
    for i in 0..3u64 {
        fill(&mut r.pair.a, i * 1000, i, 1000);
        r.write(10 + i, i * 1000, i * 1000, 1000);
    }
    let t0 = r.pair.now;
    assert!(r.run_until(10 * MS, |r| r.wa.len() >= 3), "no completions: {:?}", r.wa);
    let took = r.pair.now - t0;
    let ids_status: Vec<_> = r.wa.iter().map(|w| (w.wr_id, w.status)).collect();
    assert_eq!(
        ids_status,
        vec![(10, CqeStatus::RetryExcErr), (11, CqeStatus::WrFlushErr), (12, CqeStatus::WrFlushErr)]
    );
    // Exactly 1 + retry_cnt transmissions of the first packet, and of every other one.
    let firsts = r.frames(0).iter().filter(|(_, f)| roce_of(f).map(|x| x.0) == Some(first_psn)).count();
    assert_eq!(firsts, 1 + usize::from(cfg.retry_cnt));
    assert_eq!(r.pair.ab.stats.sent, 3 * (1 + u64::from(cfg.retry_cnt)));
    assert_eq!(r.pair.ab.stats.lost, r.pair.ab.stats.sent);
    let ca = counters(&r.pair.a);
    assert_eq!((ca.timeouts, ca.retransmits), (3, 6));
    // Three timeouts of 2048 cycles have to pass (and not many more: each ends up to a tick of
    // 1024 cycles later, the deadline counting whole ticks, and the HDL's timer scanner visits
    // a QP every 1024 cycles).
    let slack = if hdl[0] { 2000 + 6 * 1024 } else { 2000 + 3 * 1024 };
    assert!((3 * 2048..3 * 2048 + slack).contains(&took), "failed after {took} cycles");
    assert_eq!(r.a_state(), QpState::Err);
    assert_eq!(r.a_qp_error(), Some((qpn, cause(CqeStatus::RetryExcErr))));
    // a QP being destroyed takes its error not yet reported with it, and only its own
    // (the verbs library's ibv_destroy_qp: the next QP with the number must not inherit it)
    assert!(!r.pair.a.dev.forget_qp_error(qpn + 1));
    assert_eq!(r.a_qp_error(), Some((qpn, cause(CqeStatus::RetryExcErr))));
    assert!(r.pair.a.dev.forget_qp_error(qpn));
    assert_eq!(r.a_qp_error(), None);
    assert_eq!(read(&r.pair.b, 0, 3000), vec![0u8; 3000], "nothing reached B");
    // A WQE posted after the failure is flushed without reaching the wire.
    let sent = r.pair.ab.stats.sent;
    r.write(13, 0, 0, 1000);
    assert!(r.run_until(MS, |r| r.wa.len() >= 4));
    assert_eq!((r.wa[3].wr_id, r.wa[3].status), (13, CqeStatus::WrFlushErr));
    assert_eq!(r.pair.ab.stats.sent, sent);
}

// 2. RNR retry ---------------------------------------------------------------------------

#[test]
fn rnr_retry_exhausts_or_waits_for_the_receive() {
    rnr_retry([false; 2]);
}

#[test]
fn hdl_rnr_retry_exhausts_or_waits_for_the_receive() {
    rnr_retry([true; 2]);
}

fn rnr_retry(hdl: [bool; 2]) {
    // Finite: B never posts a receive; rnr_retry 2 allows two retries after the first RNR NAK.
    let cfg = PairConfig { rnr_retry: 2, buf_len: 64 * 1024, hdl, ..PairConfig::default() };
    let mut r = Rig::new(&cfg);
    r.pair.capture = Some(Vec::new());
    fill(&mut r.pair.a, 0, 1, 100);
    r.post(1, WrOp::Send, 0, 100);
    assert!(r.run_until(10 * MS, |r| !r.wa.is_empty()));
    assert_eq!((r.wa[0].wr_id, r.wa[0].status), (1, CqeStatus::RnrRetryExcErr));
    assert!(r.wb.is_empty());
    // B's RNR NAK counter register, A's RNR retries register.
    assert_eq!(r.pair.b.dev.counter(regs::NAK_RNR_SENT_LO), 3);
    assert_eq!(r.pair.a.dev.counter(regs::RNR_RETRIES_LO), 3);
    // The SEND went 3 times, each retry at least the advertised RNR timer (code 1 = 10 µs)
    // after the previous attempt.
    let sends: Vec<u64> = r
        .frames(0)
        .iter()
        .filter(|(_, f)| roce_of(f).map(|x| x.1) == Some(Opcode::RcSendOnly))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(sends.len(), 3);
    assert!(sends.windows(2).all(|w| w[1] - w[0] >= 2500), "retries too early: {sends:?}");
    assert_eq!(r.a_state(), QpState::Err);
    assert_eq!(r.a_qp_error(), Some((r.pair.a.qp.qpn(), cause(CqeStatus::RnrRetryExcErr))));
    assert_eq!(r.b_state(), QpState::Rts, "RNR is not an error at the responder");

    // Infinite (7): the receive is posted after a few RNR NAKs and the SEND lands.
    let cfg7 = PairConfig { rnr_retry: 7, ..cfg.clone() };
    let mut r = Rig::new(&cfg7);
    r.pair.capture = Some(Vec::new());
    let data = fill(&mut r.pair.a, 0, 2, 3000);
    r.post(2, WrOp::Send, 0, 3000);
    assert!(r.run_until(10 * MS, |r| rnr_naks(r) >= 5));
    assert!(r.wa.is_empty(), "still retrying: {:?}", r.wa);
    r.recv(20, 4096, 4096);
    assert!(r.run_until(10 * MS, |r| !r.wa.is_empty() && !r.wb.is_empty()));
    assert_eq!((r.wa[0].wr_id, r.wa[0].status), (2, CqeStatus::Success));
    let wb = r.wb[0];
    assert_eq!((wb.wr_id, wb.status, wb.opcode, wb.byte_len), (20, CqeStatus::Success, CqeOpcode::Recv, 3000));
    assert_eq!(read(&r.pair.b, 4096, 3000), data);
    assert_eq!(counters(&r.pair.b).nak_rnr_sent, 5);

    // The RNR retry count is per request: it starts over after progress, so a series of
    // SENDs that each meet `rnr_retry` RNR NAKs all succeed.
    let mut r = Rig::new(&cfg);
    r.pair.capture = Some(Vec::new());
    for k in 0..3u64 {
        let data = fill(&mut r.pair.a, k * 256, 30 + k, 200);
        r.post(30 + k, WrOp::Send, k * 256, 200);
        let want = 2 * (k as usize + 1);
        assert!(r.run_until(10 * MS, |r| rnr_naks(r) >= want), "SEND {k}: {:?}", r.wa);
        r.recv(300 + k, 8192 + k * 256, 256);
        let n = k as usize + 1;
        assert!(r.run_until(10 * MS, |r| r.wa.len() >= n && r.wb.len() >= n));
        assert_eq!((r.wa[k as usize].wr_id, r.wa[k as usize].status), (30 + k, CqeStatus::Success), "SEND {k}");
        assert_eq!((r.wb[k as usize].wr_id, r.wb[k as usize].byte_len), (300 + k, 200));
        assert_eq!(read(&r.pair.b, 8192 + k * 256, 200), data);
    }
    assert_eq!(counters(&r.pair.b).nak_rnr_sent, 6);
    assert_eq!(r.a_state(), QpState::Rts);
}

// 3. Atomics -----------------------------------------------------------------------------

#[test]
fn atomics_execute_exactly_once() {
    atomics([false; 2]);
}

#[test]
fn hdl_atomics_execute_exactly_once() {
    atomics([true; 2]);
}

fn atomics(hdl: [bool; 2]) {
    let cfg = PairConfig { buf_len: 64 * 1024, hdl, ..PairConfig::default() };
    let mut r = Rig::new(&cfg);
    let (va, rkey) = (r.pair.b.mr.va, r.pair.b.mr.rkey);
    let word = 64u64;
    r.pair.b.dev.write_buf(&r.pair.b.buf, word as usize, &100u64.to_le_bytes());
    // FetchAdd: B gets 105, A's local word the original 100.
    r.post(1, WrOp::FetchAdd { remote_addr: va + word, rkey, add: 5 }, 0, 8);
    // CmpSwap that matches: B gets 7, A the original 105.
    r.post(2, WrOp::CmpSwap { remote_addr: va + word, rkey, compare: 105, swap: 7 }, 8, 8);
    // CmpSwap that does not: B keeps 7, A gets 7.
    r.post(3, WrOp::CmpSwap { remote_addr: va + word, rkey, compare: 999, swap: 1 }, 16, 8);
    assert!(r.run_until(MS, |r| r.wa.len() >= 3));
    let got: Vec<_> = r.wa.iter().map(|w| (w.wr_id, w.status, w.opcode)).collect();
    assert_eq!(
        got,
        vec![
            (1, CqeStatus::Success, CqeOpcode::AtomicFaa),
            (2, CqeStatus::Success, CqeOpcode::AtomicCas),
            (3, CqeStatus::Success, CqeOpcode::AtomicCas)
        ]
    );
    assert_eq!(read_u64(&r.pair.b, word), 7);
    assert_eq!([read_u64(&r.pair.a, 0), read_u64(&r.pair.a, 8), read_u64(&r.pair.a, 16)], [100, 105, 7]);
    assert_eq!(read(&r.pair.b, 0, 64), vec![0u8; 64], "neighbouring bytes untouched");
    assert_eq!(read(&r.pair.b, word + 8, 64), vec![0u8; 64]);

    // N FetchAdd(1) over links that duplicate and reorder frames both ways: the word ends at
    // exactly N and request i saw exactly i (duplicates are answered from the saved result).
    // Between two Verilated engines only with ROCE_SOAK=1 (hdl_atomics_over_lossy_links runs
    // such a storm by default, with losses too).
    if hdl == [true; 2] && !roce_tests::soak() {
        return;
    }
    let link = LinkConfig { dup: 0.2, reorder: 0.2, ..LinkConfig::default() };
    let r = atomic_storm(&PairConfig { link, seed: 3, ..cfg }, 400);
    let (ab, ba) = (r.pair.ab.stats, r.pair.ba.stats);
    assert!(ab.duplicated > 20 && ab.reordered > 20 && ba.duplicated > 20, "{ab:?} {ba:?}");
    assert!(counters(&r.pair.b).duplicates > 0, "B never saw a duplicate request");
}

/// `n` FetchAdd(1) on one word of B, at most 32 outstanding, until all complete: every
/// completion succeeds, in order, the word ends at exactly `n` and request i returned i.
fn atomic_storm(cfg: &PairConfig, n: u64) -> Rig {
    let mut r = Rig::new(cfg);
    let (va, rkey) = (r.pair.b.mr.va, r.pair.b.mr.rkey);
    let slot = |i: u64| 1024 + 8 * i;
    for i in 0..n {
        r.pair.a.dev.write_buf(&r.pair.a.buf, slot(i) as usize, &u64::MAX.to_le_bytes());
    }
    let mut posted = 0;
    while (r.wa.len() as u64) < n {
        while posted < n && posted - (r.wa.len() as u64) < 32 {
            r.post(posted, WrOp::FetchAdd { remote_addr: va + 128, rkey, add: 1 }, slot(posted), 8);
            posted += 1;
        }
        let k = r.wa.len();
        assert!(r.run_until(50 * MS, |r| r.wa.len() > k), "seed {}: stalled at {k} completions", cfg.seed);
    }
    let seed = cfg.seed;
    assert!(
        r.wa.iter().all(|w| w.status == CqeStatus::Success),
        "seed {seed}: {:?}",
        r.wa.iter().find(|w| w.status != CqeStatus::Success)
    );
    let ids: Vec<u64> = r.wa.iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, (0..n).collect::<Vec<_>>(), "seed {seed}");
    assert_eq!(read_u64(&r.pair.b, 128), n, "seed {seed}");
    for i in 0..n {
        assert_eq!(read_u64(&r.pair.a, slot(i)), i, "seed {seed}: FetchAdd {i} returned the wrong original value");
    }
    r
}

/// Atomics between two Verilated engines over links that lose, duplicate and reorder frames,
/// seed after seed: the timing of retransmissions, duplicate requests and ACKs differs with
/// each seed. One seed by default, 40 with `ROCE_SOAK=1`.
#[test]
fn hdl_atomics_over_lossy_links() {
    let seeds = if roce_tests::soak() { 40 } else { 1 };
    let link = LinkConfig { loss: 0.03, dup: 0.1, reorder: 0.1, ..LinkConfig::default() };
    for seed in 0..seeds {
        let cfg = PairConfig { buf_len: 64 * 1024, hdl: [true; 2], link, seed: 100 + seed, ..PairConfig::default() };
        let r = atomic_storm(&cfg, 150);
        assert!(r.pair.ab.stats.lost + r.pair.ba.stats.lost > 0, "seed {seed}: nothing lost");
    }
}

// 4. Immediate data and invalidation ------------------------------------------------------

#[test]
fn immediate_data_and_send_with_invalidate() {
    immediate_and_invalidate([false; 2]);
}

#[test]
fn hdl_immediate_data_and_send_with_invalidate() {
    immediate_and_invalidate([true; 2]);
}

fn immediate_and_invalidate(hdl: [bool; 2]) {
    let mut r = Rig::new(&PairConfig { buf_len: 64 * 1024, hdl, ..PairConfig::default() });
    r.pair.capture = Some(Vec::new());

    // SEND with immediate -> RecvImm with the value; a plain SEND -> Recv without one.
    let d1 = fill(&mut r.pair.a, 0, 1, 200);
    r.recv(10, 0, 256);
    r.recv(11, 256, 256);
    r.post(1, WrOp::SendImm(0xDEAD_BEEF), 0, 200);
    r.post(2, WrOp::Send, 0, 100);
    assert!(r.run_until(MS, |r| r.wa.len() >= 2 && r.wb.len() >= 2));
    assert!(r.wa.iter().all(|w| w.status == CqeStatus::Success && w.opcode == CqeOpcode::Send));
    let (w, v) = (r.wb[0], r.wb[1]);
    assert_eq!(
        (w.wr_id, w.status, w.opcode, w.imm, w.invalidated, w.byte_len),
        (10, CqeStatus::Success, CqeOpcode::RecvImm, Some(0xDEAD_BEEF), None, 200)
    );
    assert_eq!((v.wr_id, v.opcode, v.imm, v.byte_len), (11, CqeOpcode::Recv, None, 100));
    assert_eq!((w.qpn, w.src_qp), (r.pair.b.qp.qpn(), r.pair.a.qp.qpn()));
    assert_eq!(read(&r.pair.b, 0, 200), d1);

    // WRITE with immediate (3 packets): the data goes to the RETH address, the immediate
    // consumes a receive WQE (its buffer untouched); byte_len is the WRITE's length.
    let d2 = fill(&mut r.pair.a, 4096, 2, 10_000);
    let (va, rkey) = (r.pair.b.mr.va, r.pair.b.mr.rkey);
    r.recv(12, 1024, 64);
    r.post(3, WrOp::WriteImm { remote_addr: va + 16384, rkey, imm: 0x1234_5678 }, 4096, 10_000);
    assert!(r.run_until(MS, |r| r.wa.len() >= 3 && r.wb.len() >= 3));
    assert_eq!((r.wa[2].wr_id, r.wa[2].status, r.wa[2].opcode), (3, CqeStatus::Success, CqeOpcode::Write));
    let w = r.wb[2];
    assert_eq!(
        (w.wr_id, w.status, w.opcode, w.imm, w.byte_len),
        (12, CqeStatus::Success, CqeOpcode::RecvWriteImm, Some(0x1234_5678), 10_000)
    );
    assert_eq!(read(&r.pair.b, 16384, 10_000), d2);
    assert_eq!(read(&r.pair.b, 1024, 64), vec![0u8; 64]);
    // With the receive queue now empty, the next WRITE with immediate is RNR NAKed (and
    // nothing written) until a receive is posted.
    let d3 = fill(&mut r.pair.a, 0, 3, 500);
    r.post(4, WrOp::WriteImm { remote_addr: va + 32768, rkey, imm: 7 }, 0, 500);
    assert!(r.run_until(MS, |r| rnr_naks(r) >= 1));
    assert_eq!(read(&r.pair.b, 32768, 500), vec![0u8; 500]);
    r.recv(13, 1024, 64);
    assert!(r.run_until(MS, |r| r.wa.len() >= 4 && r.wb.len() >= 4));
    assert_eq!((r.wa[3].wr_id, r.wa[3].status), (4, CqeStatus::Success));
    assert_eq!((r.wb[3].wr_id, r.wb[3].opcode, r.wb[3].imm), (13, CqeOpcode::RecvWriteImm, Some(7)));
    assert_eq!(read(&r.pair.b, 32768, 500), d3);

    // SEND with invalidate of a second MR of B: WRITEs to it work before, fail after.
    let (pd, buf) = (r.pair.b.mr.pd, r.pair.b.buf);
    let mr2 = r.pair.b.dev.reg_mr(pd, &buf, 49152, 4096, ALL_ACCESS).expect("reg_mr");
    let d4 = fill(&mut r.pair.a, 0, 4, 100);
    r.post(5, WrOp::Write { remote_addr: mr2.va, rkey: mr2.rkey }, 0, 100);
    assert!(r.run_until(MS, |r| r.wa.len() >= 5));
    assert_eq!((r.wa[4].wr_id, r.wa[4].status), (5, CqeStatus::Success));
    assert_eq!(read(&r.pair.b, 49152, 100), d4);
    r.recv(14, 2048, 256);
    r.post(6, WrOp::SendInv(mr2.rkey), 4096, 50);
    assert!(r.run_until(MS, |r| r.wa.len() >= 6 && r.wb.len() >= 5));
    assert_eq!((r.wa[5].wr_id, r.wa[5].status), (6, CqeStatus::Success));
    let w = r.wb[4];
    assert_eq!(
        (w.wr_id, w.status, w.opcode, w.invalidated, w.imm, w.byte_len),
        (14, CqeStatus::Success, CqeOpcode::RecvInv, Some(mr2.rkey), None, 50)
    );
    assert_eq!(read(&r.pair.b, 2048, 50), d2[..50]);
    fill(&mut r.pair.a, 0, 5, 100);
    r.post(7, WrOp::Write { remote_addr: mr2.va, rkey: mr2.rkey }, 0, 100);
    assert!(r.run_until(MS, |r| r.wa.len() >= 7));
    assert_eq!((r.wa[6].wr_id, r.wa[6].status), (7, CqeStatus::RemAccessErr));
    assert_eq!(read(&r.pair.b, 49152, 100), d4, "nothing written through the invalidated key");
    assert_eq!(counters(&r.pair.b).nak_acc_sent, 1);
}

// 5. IPv6 and VLAN -----------------------------------------------------------------------

#[test]
fn ipv6_and_vlan() {
    ipv6_vlan([false; 2]);
}

#[test]
fn hdl_ipv6_and_vlan() {
    ipv6_vlan([true; 2]);
}

fn ipv6_vlan(hdl: [bool; 2]) {
    for op in [Op::Write, Op::Read, Op::Send] {
        let cfg = TransferConfig {
            op,
            size: 10_000,
            messages: 16,
            depth: 4,
            ipv6: true,
            capture: true,
            hdl,
            ..TransferConfig::default()
        };
        let rep = transfer::run(&cfg, |_, _| {}).expect("transfer");
        assert!(rep.clean(16), "{op:?} over IPv6: {rep:?}");
        assert!(!rep.capture.is_empty());
        for (_, _, f) in &rep.capture {
            let p = parse_frame(f).expect("frame");
            assert!(matches!(p.l3(), L3::Ipv6(_)), "{op:?}: not IPv6");
            assert!(p.roce().is_some());
            assert_eq!(p.eth().vlan(), None);
        }
    }

    for (ipv6, vlan) in [(false, None), (false, Some((100u16, 5u8))), (true, Some((4094, 2)))] {
        let mut r = Rig::new(&PairConfig { ipv6, vlan, buf_len: 64 * 1024, mtu: 1024, hdl, ..PairConfig::default() });
        r.pair.capture = Some(Vec::new());
        let dw = fill(&mut r.pair.a, 0, 1, 5000);
        let dr = fill(&mut r.pair.b, 16384, 2, 3000);
        let ds = fill(&mut r.pair.a, 8192, 3, 1500);
        let (va, rkey) = (r.pair.b.mr.va, r.pair.b.mr.rkey);
        r.recv(9, 32768, 2048);
        r.write(1, 0, 0, 5000);
        r.post(2, WrOp::Read { remote_addr: va + 16384, rkey }, 24576, 3000);
        r.post(3, WrOp::Send, 8192, 1500);
        assert!(r.run_until(MS, |r| r.wa.len() >= 3 && !r.wb.is_empty()));
        assert!(r.wa.iter().chain(&r.wb).all(|w| w.status == CqeStatus::Success), "{:?} {:?}", r.wa, r.wb);
        assert_eq!(read(&r.pair.b, 0, 5000), dw);
        assert_eq!(read(&r.pair.a, 24576, 3000), dr);
        assert_eq!(read(&r.pair.b, 32768, 1500), ds);
        let cap = r.pair.capture.take().unwrap_or_default();
        assert!(cap.iter().any(|c| c.1 == 0) && cap.iter().any(|c| c.1 == 1));
        let want = vlan.map(|(vid, pcp)| Vlan { pcp, dei: false, vid });
        for (_, dir, f) in &cap {
            let p = parse_frame(f).expect("frame");
            assert_eq!(p.eth().vlan(), want, "direction {dir}");
            assert_eq!(matches!(p.l3(), L3::Ipv6(_)), ipv6);
            if want.is_some() {
                assert_eq!(&f[12..14], &[0x81, 0x00], "802.1Q TPID");
            }
        }
        let ip = r.pair.b.ip;
        assert_eq!(ip.is_ipv6(), ipv6);
    }
}

// 6. ECN -> CNP -> DCQCN -------------------------------------------------------------------

struct EcnRun {
    cycles: u64,
    a: Counters,
    b: Counters,
    rate_after_first_cnp: Option<f64>,
    line: f64,
    ect: bool,
}

fn ecn_run(mark: f64) -> EcnRun {
    let mut r = Rig::new(&PairConfig { buf_len: 1 << 20, ..PairConfig::default() });
    r.pair.ab = Link::new(LinkConfig { ecn: mark, ..LinkConfig::default() }, 5);
    r.pair.capture = Some(Vec::new());
    let qpn = r.pair.a.qp.qpn();
    let line = f64::from(r.pair.a.node.borrow().engine.dcqcn.line_mbps);
    let rate = |r: &Rig| r.pair.a.node.borrow().engine.qp(qpn).and_then(|q| q.cc.rp.rate_mbps());
    const M: u64 = 32;
    const SZ: u32 = 16384;
    let mut data = Vec::new();
    for i in 0..M {
        data.push(fill(&mut r.pair.a, i * u64::from(SZ), i, SZ as usize));
        r.write(i, i * u64::from(SZ), i * u64::from(SZ), SZ);
    }
    let t0 = r.pair.now;
    let mut rate_after_first_cnp = None;
    let mut seen_rate_before = false;
    let done = r.run_until(100 * MS, |r| {
        if counters(&r.pair.a).cnp_rcvd == 0 {
            seen_rate_before |= rate(r).is_some();
        } else if rate_after_first_cnp.is_none() {
            rate_after_first_cnp = rate(r);
        }
        r.wa.len() as u64 >= M
    });
    assert!(done, "transfer did not finish ({} of {M})", r.wa.len());
    assert!(!seen_rate_before, "rate limited before any CNP");
    let cycles = r.pair.now - t0;
    r.pair.settle(MS);
    for (i, w) in r.wa.iter().enumerate() {
        assert_eq!((w.wr_id, w.status), (i as u64, CqeStatus::Success));
        assert_eq!(read(&r.pair.b, i as u64 * u64::from(SZ), SZ as usize), data[i]);
    }
    // captured as sent, before the link marks them: ECT(0)
    let ect =
        r.frames(0).iter().all(|(_, f)| parse_frame(f).ok().and_then(|p| p.ipv4()).is_some_and(|h| h.ecn() == 0b10));
    EcnRun { cycles, a: counters(&r.pair.a), b: counters(&r.pair.b), rate_after_first_cnp, line, ect }
}

#[test]
fn ecn_marks_bring_cnps_and_rate_limiting() {
    // Without marking: ECN-capable frames, no CE, no CNPs, no rate limiting.
    let clean = ecn_run(0.0);
    assert!(clean.ect, "requests are not sent ECN-capable");
    assert_eq!(
        (clean.b.ecn_marked, clean.b.cnp_sent, clean.a.cnp_rcvd, clean.a.cnp_sent, clean.b.cnp_rcvd),
        (0, 0, 0, 0, 0)
    );
    assert_eq!(clean.rate_after_first_cnp, None);

    // Every A->B frame CE-marked: B answers with CNPs (at most one per 50 µs), A's rate is
    // cut on the first (α starts at DCQCN_ALPHA.INIT = 1023/1024: to line * (1 - 1023/2048),
    // in Mb/s with 8 fractional bits), the transfer still completes.
    let marked = ecn_run(1.0);
    assert!(marked.b.ecn_marked > 0 && marked.b.cnp_sent > 0, "{:?}", marked.b);
    assert_eq!(marked.a.cnp_rcvd, marked.b.cnp_sent);
    assert_eq!((marked.a.cnp_sent, marked.b.cnp_rcvd), (0, 0), "B->A is not marked");
    assert!(marked.b.cnp_sent <= 1 + marked.cycles / 12_500, "CNPs not rate limited: {}", marked.b.cnp_sent);
    let rate = marked.rate_after_first_cnp.expect("the first CNP engages the rate limiter");
    let want = marked.line * (1.0 - 1023.0 / 2048.0);
    assert!((rate - want).abs() < 1.0 / 256.0, "rate {rate} Mb/s after the first CNP (line {} Mb/s)", marked.line);
    assert!(
        marked.cycles > clean.cycles + clean.cycles / 2,
        "rate limiting had no effect: {} vs {} cycles",
        marked.cycles,
        clean.cycles
    );
}

// 7. PFC ------------------------------------------------------------------------------------

/// An 802.1Qbb PFC frame pausing the priorities of `classes` for `quanta`.
fn pfc_frame(src: [u8; 6], classes: u8, quanta: u16) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x01, 0x80, 0xC2, 0x00, 0x00, 0x01]);
    f[6..12].copy_from_slice(&src);
    f[12..14].copy_from_slice(&0x8808u16.to_be_bytes());
    f[14..16].copy_from_slice(&0x0101u16.to_be_bytes());
    f[16..18].copy_from_slice(&u16::from(classes).to_be_bytes());
    for p in 0..8 {
        if classes & (1 << p) != 0 {
            f[18 + 2 * p..20 + 2 * p].copy_from_slice(&quanta.to_be_bytes());
        }
    }
    f
}

#[test]
fn pfc_pauses_the_qps_priority_only() {
    const PCP: u8 = 3;
    // 0xFFFF quanta × 512 bit times at 100 Gb/s, in 250 MHz cycles.
    let pause = (0xFFFF as f64 * 512.0 / 100e9 * 250e6).ceil() as u64;
    assert_eq!(pause, 83_885);
    for (classes, paused) in [(1u8 << PCP, true), (1 << 5, false)] {
        let mut r = Rig::new(&PairConfig { vlan: Some((10, PCP)), buf_len: 1 << 20, ..PairConfig::default() });
        r.pair.capture = Some(Vec::new());
        let mut data = Vec::new();
        for i in 0..16u64 {
            data.push(fill(&mut r.pair.a, i * 16384, i, 16384));
            r.write(i, i * 16384, i * 16384, 16384);
        }
        // Pause in the middle of the transfer.
        assert!(r.run_until(MS, |r| r.frames(0).len() >= 8));
        let t0 = r.pair.now;
        let src = r.pair.b.mac;
        r.pair.a.node.borrow_mut().rx(&pfc_frame(src, classes, 0xFFFF));
        assert!(r.run_until(10 * MS, |r| r.wa.len() >= 16), "transfer did not finish ({})", r.wa.len());
        for (i, w) in r.wa.iter().enumerate() {
            assert_eq!((w.wr_id, w.status), (i as u64, CqeStatus::Success));
            assert_eq!(read(&r.pair.b, i as u64 * 16384, 16384), data[i]);
        }
        assert_eq!(r.pair.a.dev.counter(regs::PFC_PAUSE_RCVD_LO), 1);
        let after: Vec<u64> = r.frames(0).iter().map(|(t, _)| *t).filter(|&t| t >= t0).collect();
        assert!(!after.is_empty());
        let during = after.iter().filter(|&&t| t < t0 + pause).count();
        if paused {
            assert_eq!(during, 0, "A sent {during} frames of a paused priority");
            let first = after[0];
            assert!((t0 + pause..t0 + pause + 100).contains(&first), "resumed at +{}", first - t0);
        } else {
            assert!(during > 50, "a pause of another priority held A back ({during} frames)");
            assert!(r.pair.now < t0 + pause, "finished only after the pause time");
        }
    }
}

// 8. Many QPs -------------------------------------------------------------------------------

#[test]
fn every_qp_at_once() {
    every_qp([false; 2]);
}

#[test]
fn hdl_every_qp_at_once() {
    every_qp([true; 2]);
}

fn every_qp(hdl: [bool; 2]) {
    let cfg = PairConfig { depth: 2, buf_len: 1 << 20, hdl, ..PairConfig::default() };
    let mut pair = Pair::new(&cfg).expect("pair");
    let (cqa, cqb) = (pair.a.dev.create_cq(2048).expect("cq"), pair.b.dev.create_cq(2048).expect("cq"));
    let all_qps = |ep: &mut Endpoint, cq: CompletionQueue| -> Vec<QueuePair> {
        let pd = ep.mr.pd;
        let mut list = vec![ep.qp];
        loop {
            match ep.dev.create_qp(pd, cq, cq, 2, 2) {
                Ok(q) => list.push(q),
                Err(DriverError::Exhausted(_)) => return list,
                Err(e) => panic!("create_qp: {e}"),
            }
        }
    };
    let qps = [all_qps(&mut pair.a, cqa), all_qps(&mut pair.b, cqb)];
    let n = qps[0].len();
    assert_eq!(qps[1].len(), n);
    assert_eq!(n, pair.a.dev.max_qps() as usize - 2);
    assert!(n >= 1022, "only {n} QPs");
    // Connect A[i] <-> B[i] (index 0 is the pair's own, already connected).
    let (ma, mb, ia, ib): ([u8; 6], [u8; 6], IpAddr, IpAddr) = (pair.a.mac, pair.b.mac, pair.a.ip, pair.b.ip);
    let (qa0, qb0, pa0, pb0) = (pair.a.qp, pair.b.qp, pair.a.psn, pair.b.psn);
    let psns = |i: usize| -> (u32, u32) {
        if i == 0 {
            (pa0, pb0)
        } else {
            ((i as u32).wrapping_mul(0x9E37_79B1) & 0xFF_FFFF, (i as u32).wrapping_mul(0x85EB_CA77) & 0xFF_FFFF)
        }
    };
    for (i, (&qa, &qb)) in qps[0].iter().zip(&qps[1]).enumerate().skip(1) {
        let (pa, pb) = psns(i);
        (pair.a.qp, pair.a.psn, pair.b.qp, pair.b.psn) = (qa, pa, qb, pb);
        connect(&cfg, &mut pair.a, qb.qpn(), mb, ib, pb).expect("connect A");
        connect(&cfg, &mut pair.b, qa.qpn(), ma, ia, pa).expect("connect B");
    }
    (pair.a.qp, pair.b.qp, pair.a.psn, pair.b.psn) = (qa0, qb0, pa0, pb0);

    // One 256-byte WRITE on every QP, all posted before the first step.
    const SZ: usize = 256;
    let mut all = vec![0u8; n * SZ];
    for (i, chunk) in all.chunks_mut(SZ).enumerate() {
        pattern(0xAB, i as u64, chunk);
    }
    let (va, rkey) = (pair.b.mr.va, pair.b.mr.rkey);
    {
        let a = &mut pair.a;
        a.dev.write_buf(&a.buf, 0, &all);
        for (i, &q) in qps[0].iter().enumerate() {
            let off = (i * SZ) as u64;
            let sge = [a.mr.sge(off, SZ as u32)];
            a.dev
                .post_send(q, &[SendWr::new(i as u64, WrOp::Write { remote_addr: va + off, rkey }, &sge)])
                .expect("post");
        }
    }
    let mut wa = Vec::new();
    let mut wb = Vec::new();
    let end = pair.now + 20 * MS;
    while wa.len() < n && pair.now < end {
        let cq0 = pair.a.cq;
        poll_into(&mut pair.a, cq0, &mut wa);
        poll_into(&mut pair.a, cqa, &mut wa);
        if !pair.step() {
            break;
        }
    }
    poll_into(&mut pair.a, cqa, &mut wa);
    let (cqb0, cqa0) = (pair.b.cq, pair.a.cq);
    poll_into(&mut pair.b, cqb0, &mut wb);
    poll_into(&mut pair.b, cqb, &mut wb);
    poll_into(&mut pair.a, cqa0, &mut wa);
    assert_eq!(wa.len(), n, "{} of {n} WRITEs completed", wa.len());
    assert!(wb.is_empty(), "WRITEs produce no completions at B");
    let mut ids = BTreeSet::new();
    for w in &wa {
        assert_eq!(w.status, CqeStatus::Success, "{w:?}");
        assert_eq!(w.qpn, qps[0][w.wr_id as usize].qpn(), "completion on the wrong QP");
        assert!(ids.insert(w.wr_id), "duplicate completion {}", w.wr_id);
    }
    let mut got = vec![0u8; n * SZ];
    pair.b.dev.read_buf(&pair.b.buf, 0, &mut got);
    for (i, (g, w)) in got.chunks(SZ).zip(all.chunks(SZ)).enumerate() {
        assert_eq!(g, w, "QP {i}: data differs");
    }
    // Each WRITE went through its own connection: every responder advanced by one PSN (and
    // every requester: one WQE posted, sent and completed), as QP_READ reports it.
    for (i, (qa, qb)) in qps[0].iter().zip(&qps[1]).enumerate() {
        let (pa, _) = psns(i);
        let cb = pair.b.dev.query_qp(*qb).expect("query_qp B");
        assert_eq!(cb.rq_psn, (pa + 1) & 0xFF_FFFF, "QP {i}: B's rq_psn");
        let ca = pair.a.dev.query_qp(*qa).expect("query_qp A");
        assert_eq!(ca.sq_psn, (pa + 1) & 0xFF_FFFF, "QP {i}: A's sq_psn");
        assert_eq!((ca.sq_pi, ca.sq_ci), (1, 1), "QP {i}: A's SQ indices");
    }
}

/// RoCEv1 as a per-QP encapsulation: a transfer is clean for every op, every frame is
/// Ethertype 0x8915 with a GRH (no IP/UDP), and the ICRC the engines write checks.
#[test]
fn rocev1_encapsulation() {
    rocev1([false; 2]);
}

#[test]
fn hdl_rocev1_encapsulation() {
    rocev1([true; 2]);
}

fn rocev1(hdl: [bool; 2]) {
    use roce_sim::cmd::transfer::{run, Op, TransferConfig};
    for op in [Op::Send, Op::Write, Op::Read] {
        for ipv6 in [false, true] {
            let cfg = TransferConfig {
                op,
                size: 5000,
                messages: 20,
                mtu: 1024,
                depth: 8,
                rocev1: true,
                ipv6,
                capture: true,
                hdl,
                ..TransferConfig::default()
            };
            let r = run(&cfg, |_, _| {}).expect("transfer");
            assert!(r.clean(20), "{op:?} ipv6={ipv6}: {r:?}");
            assert!(!r.capture.is_empty());
            for (_, _, f) in &r.capture {
                let p = roce_model::wire::parse_frame(f).expect("parses");
                assert!(p.grh().is_some() && p.udp().is_none(), "{op:?}: not RoCEv1");
                assert_eq!(u16::from_be_bytes([f[12], f[13]]), 0x8915);
                assert_eq!(roce_model::icrc::check(f), Ok(true));
            }
        }
    }
}

/// The port VLAN register tags the frames of QPs that have no VLAN of their own.
#[test]
fn port_vlan_register_tags_untagged_qps() {
    port_vlan([false; 2]);
}

#[test]
fn hdl_port_vlan_register_tags_untagged_qps() {
    port_vlan([true; 2]);
}

fn port_vlan(hdl: [bool; 2]) {
    use roce_driver::Backend;
    use roce_model::contract::regs;
    let mut pair = Pair::new(&PairConfig { hdl, ..PairConfig::default() }).expect("pair");
    let v = regs::vlan::VID.val(42).unwrap_or(0) | regs::vlan::PCP.val(4).unwrap_or(0) | regs::vlan::ENABLE.mask();
    pair.a.dev.backend().write32(regs::VLAN, v);
    pair.capture = Some(Vec::new());
    let sge = [pair.a.mr.sge(0, 100)];
    let wr =
        roce_driver::SendWr::new(1, roce_driver::WrOp::Write { remote_addr: pair.b.mr.va, rkey: pair.b.mr.rkey }, &sge);
    pair.a.dev.post_send(pair.a.qp, &[wr]).expect("post");
    pair.settle(100_000);
    let cap = pair.capture.take().unwrap_or_default();
    let mut from_a = 0;
    for (_, dir, f) in &cap {
        let p = roce_model::wire::parse_frame(f).expect("parses");
        let tag = p.eth().vlan().map(|t| (t.vid, t.pcp));
        if *dir == 0 {
            from_a += 1;
            assert_eq!(tag, Some((42, 4)), "A's frames carry the port tag");
        } else {
            assert_eq!(tag, None, "B has no port VLAN");
        }
    }
    assert!(from_a >= 1);
}

// 9. Many QPs failing at once while commands run ----------------------------------------

/// Every frame A sends is lost: each of many QPs exhausts its retries at about the same
/// time (RETRY_EXC_ERR on its first WQE, the QP to ERR, WR_FLUSH_ERR on the rest) while the
/// host keeps reading QP contexts (commands that wait for the transport's state reads).
/// Nothing may hang: every WQE completes, every QP ends in ERR.
#[test]
fn many_qps_fail_at_once() {
    many_qps_fail([false; 2]);
}

#[test]
fn hdl_many_qps_fail_at_once() {
    many_qps_fail([true; 2]);
}

fn many_qps_fail(hdl: [bool; 2]) {
    const N: usize = 48;
    let cfg = PairConfig { timeout: 1, retry_cnt: 0, depth: 4, buf_len: 1 << 16, hdl, ..PairConfig::default() };
    let mut pair = Pair::new(&cfg).expect("pair");
    pair.ab = Link::new(LinkConfig { loss: 1.0, ..LinkConfig::default() }, 9);
    let cqa = pair.a.dev.create_cq(4 * N as u32 + 16).expect("cq");
    let cqb = pair.b.dev.create_cq(4 * N as u32 + 16).expect("cq");
    let (ma, mb, ia, ib): ([u8; 6], [u8; 6], IpAddr, IpAddr) = (pair.a.mac, pair.b.mac, pair.a.ip, pair.b.ip);
    let mut qps = Vec::new();
    for i in 0..N {
        let qa = pair.a.dev.create_qp(pair.a.mr.pd, cqa, cqa, 4, 4).expect("qp A");
        let qb = pair.b.dev.create_qp(pair.b.mr.pd, cqb, cqb, 4, 4).expect("qp B");
        let (pa, pb) = ((i as u32 * 1000) & 0xFF_FFFF, (i as u32 * 7777) & 0xFF_FFFF);
        (pair.a.qp, pair.a.psn, pair.b.qp, pair.b.psn) = (qa, pa, qb, pb);
        connect(&cfg, &mut pair.a, qb.qpn(), mb, ib, pb).expect("connect A");
        connect(&cfg, &mut pair.b, qa.qpn(), ma, ia, pa).expect("connect B");
        qps.push(qa);
    }
    let (va, rkey) = (pair.b.mr.va, pair.b.mr.rkey);
    for (i, &q) in qps.iter().enumerate() {
        let off = (i * 256) as u64;
        let sge = [pair.a.mr.sge(off, 256)];
        let wrs = [
            SendWr::new(2 * i as u64, WrOp::Write { remote_addr: va + off, rkey }, &sge),
            SendWr::new(2 * i as u64 + 1, WrOp::Write { remote_addr: va + off, rkey }, &sge),
        ];
        pair.a.dev.post_send(q, &wrs).expect("post");
    }
    let mut wa = Vec::new();
    let end = pair.now + 40 * MS;
    let (mut k, mut steps) = (0usize, 0u64);
    while wa.len() < 2 * N && pair.now < end {
        poll_into(&mut pair.a, cqa, &mut wa);
        // a command now and then, racing the errors
        steps += 1;
        if steps % if hdl[0] { 2 } else { 1 } == 0 {
            pair.a.dev.query_qp(qps[k % N]).expect("query_qp");
            k += 1;
        }
        if !pair.step() {
            break;
        }
    }
    poll_into(&mut pair.a, cqa, &mut wa);
    assert_eq!(wa.len(), 2 * N, "{} of {} WQEs completed after {} commands", wa.len(), 2 * N, k);
    for w in &wa {
        let want = if w.wr_id % 2 == 0 { CqeStatus::RetryExcErr } else { CqeStatus::WrFlushErr };
        assert_eq!(w.status, want, "{w:?}");
        assert_eq!(w.qpn, qps[(w.wr_id / 2) as usize].qpn());
    }
    for &q in &qps {
        assert_eq!(pair.a.dev.query_qp(q).expect("query_qp").state, QpState::Err);
    }
    assert!(k > 10, "only {k} commands raced the errors");
    println!("{} WQEs completed, {k} commands, {} cycles", wa.len(), pair.now);
}

// 10. Counters ----------------------------------------------------------------------------

#[test]
fn counters_count_completions_acks_and_errors() {
    counters_run([false; 2]);
}

#[test]
fn hdl_counters_count_completions_acks_and_errors() {
    counters_run([true; 2]);
}

/// Acknowledge frames (ACKs and NAKs) in the capture of direction `dir` (0 = A->B).
fn acks_on_wire(r: &Rig, dir: u8) -> u64 {
    r.frames(dir).iter().filter(|(_, f)| roce_of(f).map(|x| x.1) == Some(Opcode::RcAcknowledge)).count() as u64
}

/// A broadcast ARP request from `src`, padded to the 60-byte minimum (no FCS).
fn arp_request(src: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0xFFu8; 6];
    f.extend_from_slice(&src);
    f.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
    f.extend_from_slice(&src);
    f.extend_from_slice(&[10, 0, 0, 1, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2]);
    f.resize(60, 0);
    f
}

/// The counters the register map has beyond the first twenty (CQES, ACKS_SENT, DUPLICATES,
/// RX_NOT_ROCE, DMA_ERRORS, NAK_REM_OP_SENT), each against what the hosts and the wire saw.
fn counters_run(hdl: [bool; 2]) {
    let cfg = PairConfig { buf_len: 64 * 1024, mtu: 1024, hdl, ..PairConfig::default() };
    let mut r = Rig::new(&cfg);
    r.pair.capture = Some(Vec::new());
    // (an HDL node's counters are read through its registers once the pair is quiet)
    let settle = |r: &mut Rig| assert!(!r.run_until(20_000, |_| false));

    // Good path: two SENDs into posted receives, a WRITE, a READ: one CQE per completion
    // on each side, one ACKS_SENT per Acknowledge frame on the wire, no error counted.
    fill(&mut r.pair.a, 0, 1, 3000);
    r.recv(10, 0, 4096);
    r.recv(11, 4096, 4096);
    r.post(1, WrOp::Send, 0, 3000);
    r.post(2, WrOp::Send, 0, 100);
    r.write(3, 0, 8192, 3000);
    let (va, rkey) = (r.pair.b.mr.va, r.pair.b.mr.rkey);
    r.post(4, WrOp::Read { remote_addr: va + 8192, rkey }, 16384, 3000);
    assert!(r.run_until(MS, |r| r.wa.len() >= 4 && r.wb.len() >= 2));
    settle(&mut r);
    assert!(r.wa.iter().chain(&r.wb).all(|w| w.status == CqeStatus::Success), "{:?} {:?}", r.wa, r.wb);
    let (ca, cb) = (counters(&r.pair.a), counters(&r.pair.b));
    assert_eq!((ca.cqes, cb.cqes), (4, 2));
    assert!(acks_on_wire(&r, 1) > 0, "B sent no ACK");
    assert_eq!((ca.acks_sent, cb.acks_sent), (acks_on_wire(&r, 0), acks_on_wire(&r, 1)));
    for c in [&ca, &cb] {
        assert_eq!((c.rx_not_roce, c.duplicates, c.nak_op_sent, c.dma_errors), (0, 0, 0, 0), "{c:?}");
    }

    // A frame that is not RoCE (a broadcast ARP request) reaching B: dropped, counted.
    let arp = arp_request(r.pair.a.mac);
    r.pair.b.node.borrow_mut().rx(&arp);
    settle(&mut r);
    assert_eq!(counters(&r.pair.b).rx_not_roce, 1);

    // A READ of B's memory after its DMA window was unmapped (the MR still covers it): each
    // of the 3 response packets' DMA reads fails; B sends them anyway, with the zeros the
    // host returned, and counts each failed read.
    let gone = r.pair.b.dev.alloc_buf(4096).expect("alloc_buf");
    let pd = r.pair.b.mr.pd;
    let mr2 = r.pair.b.dev.reg_mr(pd, &gone, 0, 4096, ALL_ACCESS).expect("reg_mr");
    r.pair.b.dev.backend().dma_free(gone);
    let a_buf = r.pair.a.buf;
    r.pair.a.dev.write_buf(&a_buf, 24576, &[0xAA; 3000]);
    r.post(5, WrOp::Read { remote_addr: mr2.va, rkey: mr2.rkey }, 24576, 3000);
    assert!(r.run_until(MS, |r| r.wa.len() >= 5));
    settle(&mut r);
    assert_eq!((r.wa[4].wr_id, r.wa[4].status), (5, CqeStatus::Success));
    assert_eq!(read(&r.pair.a, 24576, 3000), vec![0u8; 3000]);
    assert_eq!(counters(&r.pair.b).dma_errors, 3);

    // A SEND into a receive whose SGE has an L_Key no MR has: B completes the receive with
    // a local protection error and NAKs the SEND with remote operational error (its QP goes
    // to error); A's SEND completes with RemOpErr.
    let bad = [Sge { addr: r.pair.b.mr.va, len: 256, lkey: 900 << 8 }];
    let bqp = r.pair.b.qp;
    r.pair.b.dev.post_recv(bqp, &[RecvWr { wr_id: 12, sges: &bad }]).expect("post_recv");
    r.post(6, WrOp::Send, 0, 100);
    assert!(r.run_until(MS, |r| r.wa.len() >= 6 && r.wb.len() >= 3));
    settle(&mut r);
    assert_eq!((r.wa[5].wr_id, r.wa[5].status), (6, CqeStatus::RemOpErr));
    assert_eq!((r.wb[2].wr_id, r.wb[2].status), (12, CqeStatus::LocProtErr));
    let (ca, cb) = (counters(&r.pair.a), counters(&r.pair.b));
    assert_eq!(cb.nak_op_sent, 1);
    assert_eq!((ca.cqes, cb.cqes), (6, 3));
    // the NAK is one of B's Acknowledge frames
    assert_eq!((ca.acks_sent, cb.acks_sent), (acks_on_wire(&r, 0), acks_on_wire(&r, 1)));
    assert_eq!((cb.duplicates, cb.rx_not_roce, cb.dma_errors), (0, 1, 3));
}
