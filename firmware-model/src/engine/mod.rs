//! The RoCEv2 RC engine: a cycle-approximate model with the block structure of the HDL
//! (`roce_engine`, docs/engine-hdl.md). Where each HDL block's function lives here:
//!
//! ```text
//!   roce_icrc, roce_rx_parse, roce_tx_build   crate::icrc, crate::wire (the codec)
//!   roce_rx_disp                              rx_disp (rx_verdict, the RX path)
//!   roce_qp_ctx, roce_cq, roce_mr_check       qp_ctx, cq, mr_check (tables and commands)
//!   roce_regs, roce_ctrl                      regs (Engine::mmio_read / mmio_write)
//!   roce_resp, roce_ack_q, roce_rd_rsp        resp (responder, ack_merge, read responses)
//!   roce_req (with the SQ doorbells)          req, fetch (visits, WQE reads ahead)
//!   roce_comp                                 comp
//!   roce_tx_arb                               tx_arb (frame_builder, the TX priorities)
//!   roce_dcqcn                                dcqcn
//! ```
//!
//! A file named after a block (`roce_<stem>` -> `<stem>.rs`) holds that block's function with
//! its pipeline latency as a constant; `fetch` (the WQE reads of `roce_req` and `roce_resp`),
//! `mem` (host memory behind [`mem::Dma`]) and `types` are not blocks of their own. The engine
//! processes a packet functionally when it arrives and stamps what it produces with the
//! cycle the HDL would produce it (DMA latency and bandwidth, MAC serialisation, pipeline
//! latencies). Host memory is reached only through [`mem::Dma`].

pub mod comp;
pub mod cq;
pub mod dcqcn;
pub mod fetch;
pub mod mem;
pub mod mr_check;
pub mod qp_ctx;
pub mod regs;
pub mod req;
pub mod resp;
pub mod rx_disp;
pub mod tx_arb;
pub mod types;

use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr};

pub use mem::{BudgetError, Dma, DmaError, HostMem, HostMemBudget, HostMemTimer, DMA_BEAT_BYTES};
pub use mr_check::{Mr, MrError, MrTable};
pub use qp_ctx::{Qp, Ring};
pub use types::*;

use crate::contract::{CmdErrorCode, CmdOpcode, CqCtx, MrCtx, QpAttrMask, QpCtx};

use crate::wire::{BthFields, ExtHeaders};

/// Static configuration of an engine instance.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Station MAC.
    pub mac: [u8; 6],
    /// IPv4 address (RoCEv2 over IPv4).
    pub ipv4: Ipv4Addr,
    /// IPv6 GID (RoCEv2 over IPv6, RoCEv1).
    pub gid: Ipv6Addr,
    /// Engine clock in MHz.
    pub clock_mhz: f64,
    /// Line rate in Gb/s (the MAC serialises at this rate, with 20 bytes of preamble and
    /// inter-frame gap and 4 bytes of FCS per frame).
    pub line_gbps: f64,
    /// What host memory gives the DMA: read latency, bandwidth per direction, reads
    /// outstanding (enforced by [`Engine::host`]).
    pub host_mem: HostMemBudget,
    /// Cycles per 4.096 µs (the IB timer unit).
    pub tick_cycles: u64,
    /// Number of QP contexts.
    pub max_qps: usize,
    /// Number of CQ contexts.
    pub max_cqs: usize,
    /// Number of MR table entries.
    pub max_mrs: usize,
    /// Requester packets in flight in the TX DMA pipeline (`roce_req`'s `DESC_DEPTH`).
    pub tx_prefetch: usize,
    /// Maximum unacknowledged packets per QP.
    pub max_unacked: u32,
    /// Set AckReq on at least every this many packets.
    pub ack_every: u32,
    /// Send packets ECN-capable (ECT(0)) and count CE marks.
    pub ecn_enable: bool,
    /// Reply to CE-marked packets with CNPs.
    pub cnp_enable: bool,
    /// React to received CNPs with DCQCN rate reduction.
    pub dcqcn_enable: bool,
    /// Honour 802.1Qbb PFC pause frames.
    pub pfc_enable: bool,
    /// Largest path MTU accepted, in bytes.
    pub max_mtu: u32,
    /// The port's 802.1Q tag (VID, PCP), for QPs without their own (VLAN register).
    pub port_vlan: Option<(u16, u8)>,
    /// Whose choices the engine makes where the specification leaves room.
    pub profile: Profile,
}

/// Where InfiniBand leaves the choice to the implementation (when to ask for an ACK, how
/// many packets may be outstanding, whether owed ACKs coalesce), whose choices to make.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Profile {
    /// This engine's (the HDL's): AckReq every `ack_every` packets of a message and on its
    /// last when the WQE is signaled, is the last one fetched (nothing in the send window
    /// after it), ends a group of `2^req::LOG_ACK_WQES` WQEs or is resent, `max_unacked` packets outstanding, an owed ACK replaced by a
    /// newer one.
    #[default]
    Engine,
    /// Linux Soft-RoCE's (rdma_rxe, kernel 6.1): AckReq on a message's last packet and
    /// after every [`RXE_MAX_PKT_PER_ACK`] + 1 packets without one, counted across messages;
    /// at most [`RXE_MAX_UNACKED_PSNS`] + 1 packets outstanding; every AckReq packet, every
    /// duplicate SEND/WRITE and every NAK answered by its own ACK, in order (no coalescing).
    /// The peer of the lockstep tests that stands in for the kernel.
    Rxe,
}

/// rxe's `RXE_MAX_PKT_PER_ACK` (rxe_param.h).
pub const RXE_MAX_PKT_PER_ACK: u32 = 64;
/// rxe's `RXE_MAX_UNACKED_PSNS` (rxe_param.h): the requester waits while its next PSN is
/// more than this past the oldest unacknowledged one.
pub const RXE_MAX_UNACKED_PSNS: u32 = 128;

impl Default for EngineConfig {
    /// A 100 Gb/s engine at 250 MHz with 1024 QPs, behind PCIe Gen3 x16
    /// ([`HostMemBudget::default`]).
    fn default() -> Self {
        EngineConfig {
            mac: [0x02, 0, 0, 0, 0, 1],
            ipv4: Ipv4Addr::new(192, 0, 2, 1),
            gid: Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1),
            clock_mhz: 250.0,
            line_gbps: 100.0,
            host_mem: HostMemBudget::default(),
            tick_cycles: 1024,
            max_qps: 1024,
            max_cqs: 1024,
            max_mrs: 4096,
            tx_prefetch: 64,
            max_unacked: 4096,
            ack_every: 32,
            ecn_enable: true,
            cnp_enable: true,
            dcqcn_enable: true,
            pfc_enable: true,
            max_mtu: 4096,
            port_vlan: None,
            profile: Profile::Engine,
        }
    }
}

impl EngineConfig {
    /// The model with Linux Soft-RoCE's choices ([`Profile::Rxe`]): a stand-in for the
    /// kernel's rdma_rxe as the peer of a lockstep run.
    pub fn rxe() -> Self {
        EngineConfig { profile: Profile::Rxe, max_unacked: RXE_MAX_UNACKED_PSNS + 1, ..EngineConfig::default() }
    }

    /// Line bytes per engine cycle.
    pub fn line_bytes_per_cycle(&self) -> f64 {
        self.line_gbps * 1000.0 / 8.0 / self.clock_mhz
    }
}

/// Event and error counters (the register file exposes them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Frames received.
    pub rx_frames: u64,
    /// Bytes received.
    pub rx_bytes: u64,
    /// Frames dropped for a bad ICRC.
    pub rx_icrc_errors: u64,
    /// Frames dropped as malformed (parse errors).
    pub rx_malformed: u64,
    /// Frames for a QP that does not exist or cannot receive.
    pub rx_unknown_qp: u64,
    /// Frames that were not RoCE (ARP etc.).
    pub rx_not_roce: u64,
    /// Frames dropped because the engine is disabled (CTRL.ENABLE = 0).
    pub rx_dropped: u64,
    /// Frames sent.
    pub tx_frames: u64,
    /// Bytes sent.
    pub tx_bytes: u64,
    /// Packets retransmitted.
    pub retransmits: u64,
    /// Local ACK timeouts.
    pub timeouts: u64,
    /// NAKs sent: PSN sequence error.
    pub nak_seq_sent: u64,
    /// RNR NAKs sent.
    pub nak_rnr_sent: u64,
    /// NAKs sent: invalid request.
    pub nak_inv_sent: u64,
    /// NAKs sent: remote access error.
    pub nak_acc_sent: u64,
    /// NAKs sent: remote operational error.
    pub nak_op_sent: u64,
    /// NAKs received (any kind).
    pub naks_rcvd: u64,
    /// RNR NAKs received.
    pub rnr_rcvd: u64,
    /// Duplicate requests answered.
    pub duplicates: u64,
    /// CNPs sent.
    pub cnp_sent: u64,
    /// CNPs received.
    pub cnp_rcvd: u64,
    /// CE-marked packets received.
    pub ecn_marked: u64,
    /// PFC pause frames received.
    pub pfc_rcvd: u64,
    /// ACKs sent.
    pub acks_sent: u64,
    /// Completions written.
    pub cqes: u64,
    /// DMA accesses refused by host memory.
    pub dma_errors: u64,
}

/// What a queued TX packet is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxKind {
    /// A request from the requester (generation-tagged).
    Request,
    /// A READ response or atomic ACK from the responder.
    Response,
    /// A congestion notification.
    Cnp,
}

/// A packet waiting for the MAC.
#[derive(Clone, Debug)]
pub struct TxPkt {
    /// Local QP.
    pub qpn: u32,
    /// BTH.
    pub bth: BthFields,
    /// Extension headers.
    pub ext: ExtHeaders,
    /// Payload (already fetched from host memory).
    pub payload: Vec<u8>,
    /// Cycle from which it can go on the wire.
    pub ready: u64,
    /// Requester generation it belongs to.
    pub gen: u32,
    /// Kind.
    pub kind: TxKind,
}

/// An event of the engine's transport, as the HDL blocks emit it (see `Engine::events`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineEvent {
    /// The responder owes an ACK or NAK (before coalescing: `roce_resp`'s `m_ack`).
    Ack {
        /// Local QP.
        qpn: u32,
        /// PSN.
        psn: u32,
        /// AETH syndrome.
        syndrome: u8,
        /// MSN.
        msn: u32,
    },
    /// The engine moved a QP to the error state (`m_err` of the transport blocks).
    QpError {
        /// QP.
        qpn: u32,
        /// QP_ERR_INFO cause (the completion status code).
        cause: u8,
    },
}

/// A completion queue.
#[derive(Clone, Debug)]
pub struct Cq {
    /// Ring in host memory.
    pub ring: Ring,
    /// Raise an event on the next completion (armed by the CQ doorbell).
    pub armed: bool,
    /// The arm fires only on a solicited or error completion.
    pub armed_solicited: bool,
    /// An event is pending for the host.
    pub event: bool,
    /// The ring overflowed (a fatal error on real NICs).
    pub overflow: bool,
    /// Arming raises an interrupt.
    pub irq: bool,
}

/// Whether CQ `cq` exists (QP_WRITE's check of `send_cq` / `recv_cq`).
fn cq_valid(cqs: &[Option<Cq>], cq: u16) -> bool {
    cqs.get(usize::from(cq)).is_some_and(Option::is_some)
}

/// One engine instance.
#[derive(Debug)]
pub struct Engine {
    /// Configuration.
    pub cfg: EngineConfig,
    qps: Vec<Option<Qp>>,
    cqs: Vec<Option<Cq>>,
    /// Memory regions.
    pub mrs: MrTable,
    /// Counters.
    pub counters: Counters,
    resp_q: VecDeque<TxPkt>,
    cnp_q: VecDeque<TxPkt>,
    ack_qps: VecDeque<u32>,
    req_q: VecDeque<TxPkt>,
    req_rr: VecDeque<u32>,
    /// `roce_req`'s WQE prefetch store, a stretch per QP (`qp_ctx::wqe_store_slot`).
    pub(crate) wqe_store: Vec<Option<qp_ctx::StoreEntry>>,
    mac_free_at: u64,
    /// Host memory's timing: every DMA read and write the engine issues, under
    /// `cfg.host_mem`.
    pub host: HostMemTimer,
    /// `roce_resp`'s receive WQE prefetch (timing only: the WQE itself is read from host
    /// memory when it is consumed, as before).
    pub(crate) rq_pf: resp::RqPrefetch,
    pause_until: [u64; 8],
    /// Completions in the order they were written (kept for tests and the simulator's
    /// bookkeeping; the host reads them from the CQ rings).
    pub completion_log: Vec<(u64, Completion)>,
    /// Keep `completion_log` (off by default: long runs would grow it).
    pub log_completions: bool,
    /// Responder and QP-error events in order, kept while `trace_events` is set (the HDL
    /// block lockstep tests compare them with the blocks' outputs).
    pub events: Vec<EngineEvent>,
    /// Keep `events` (off by default).
    pub trace_events: bool,
    /// The last payload placement by DMA (a SEND or WRITE packet at the responder, a READ
    /// response at the completer): (cycle the write starts, cycle it is done, bytes), the
    /// model's timing estimate that `roce-sim latency` sets beside the HDL's measurement.
    pub last_placement: Option<(u64, u64, u64)>,
    /// DCQCN and CNP parameters (the DCQCN_*, CNP_INTERVAL and US_CYCLES registers).
    pub dcqcn: dcqcn::DcqcnConfig,
    /// What the DCQCN reaction and notification points did (for tests).
    pub dcqcn_events: dcqcn::Events,
    /// The register file.
    pub regs: regs::RegFile,
    ip_id: u16,
}

impl Engine {
    /// An engine with empty tables.
    pub fn new(cfg: EngineConfig) -> Self {
        Engine {
            qps: (0..cfg.max_qps).map(|_| None).collect(),
            cqs: (0..cfg.max_cqs).map(|_| None).collect(),
            mrs: MrTable::new(cfg.max_mrs),
            counters: Counters::default(),
            resp_q: VecDeque::new(),
            cnp_q: VecDeque::new(),
            ack_qps: VecDeque::new(),
            req_q: VecDeque::new(),
            req_rr: VecDeque::new(),
            wqe_store: vec![None; 1 << qp_ctx::LOG_WQE_STORE],
            mac_free_at: 0,
            host: HostMemTimer::new(cfg.host_mem),
            rq_pf: resp::RqPrefetch::default(),
            pause_until: [0; 8],
            completion_log: Vec::new(),
            log_completions: false,
            events: Vec::new(),
            trace_events: false,
            last_placement: None,
            dcqcn: dcqcn::DcqcnConfig {
                us_cycles: (cfg.clock_mhz.round() as u32).clamp(1, 0xFFF),
                line_mbps: ((cfg.line_gbps * 1000.0).round() as u32).clamp(1, 0xF_FFFF),
                ..dcqcn::DcqcnConfig::default()
            },
            dcqcn_events: dcqcn::Events::default(),
            regs: regs::RegFile::default(),
            ip_id: 0,
            cfg,
        }
    }

    /// CQ_WRITE: (re)create CQ `cqn` from its context.
    pub fn create_cq(&mut self, cqn: u32, c: &CqCtx) -> Result<(), CmdErrorCode> {
        cq::cq_command(&mut self.cqs, CmdOpcode::CqWrite, cqn, &c.encode()).map(|_| ())
    }

    /// QP_WRITE: create QP `qpn` (state Reset or Init) from its context.
    pub fn create_qp(&mut self, qpn: u32, c: &QpCtx) -> Result<(), CmdErrorCode> {
        let cqs = &self.cqs;
        qp_ctx::qp_write(&mut self.qps, qpn, c, |cq| cq_valid(cqs, cq))?;
        self.req_rr.retain(|&x| x != qpn);
        self.forget_wqes(qpn);
        self.rq_prefetch_forget(qpn);
        Ok(())
    }

    /// QP_MODIFY. Moving to ERR flushes outstanding work with `WrFlushErr` completions.
    pub fn modify_qp(&mut self, qpn: u32, c: &QpCtx, mask: QpAttrMask, mem: &mut impl Dma) -> Result<(), CmdErrorCode> {
        let ops = qp_ctx::qp_modify(&mut self.qps, qpn, c, mask, self.cfg.max_mtu)?;
        self.after_modify(qpn, &ops, mem);
        Ok(())
    }

    /// A QP command from CMD (QP_WRITE, QP_READ, QP_MODIFY; `qp_ctx::qp_command`): the QpCtx
    /// image for QP_READ.
    pub(crate) fn qp_command(
        &mut self,
        op: CmdOpcode,
        index: u32,
        arg: u32,
        data: &[u8],
        mem: &mut impl Dma,
    ) -> Result<Option<[u8; QpCtx::SIZE]>, CmdErrorCode> {
        let cqs = &self.cqs;
        let out = qp_ctx::qp_command(&mut self.qps, op, index, arg, data, |cq| cq_valid(cqs, cq), self.cfg.max_mtu)?;
        match op {
            CmdOpcode::QpWrite => {
                self.req_rr.retain(|&x| x != index);
                self.forget_wqes(index);
            }
            CmdOpcode::QpModify => self.after_modify(index, &out.ops, mem),
            _ => {}
        }
        Ok(out.rdata)
    }

    /// The engine's side of a QP_MODIFY that succeeded with context ops `ops` (the Qp has
    /// applied them): EnterErr flushes, a QP in Rts joins the requester's round-robin list.
    fn after_modify(&mut self, qpn: u32, ops: &[qp_ctx::CtxOp], mem: &mut impl Dma) {
        if ops.contains(&qp_ctx::CtxOp::Reset) {
            self.forget_wqes(qpn);
            self.rq_prefetch_forget(qpn);
        }
        if ops.contains(&qp_ctx::CtxOp::EnterErr) {
            self.flush_qp(qpn, mem);
        }
        if self.qp(qpn).is_some_and(|q| q.state == QpState::Rts) {
            self.activate(qpn);
        }
    }

    /// A QP.
    pub fn qp(&self, qpn: u32) -> Option<&Qp> {
        self.qps.get(qpn as usize)?.as_ref()
    }

    fn qp_mut(&mut self, qpn: u32) -> Option<&mut Qp> {
        self.qps.get_mut(qpn as usize)?.as_mut()
    }

    /// A CQ.
    pub fn cq(&self, cqn: u32) -> Option<&Cq> {
        self.cqs.get(cqn as usize)?.as_ref()
    }

    /// MR_WRITE: install (or, with `valid` clear, remove) region `index`.
    pub fn write_mr(&mut self, index: u32, c: &MrCtx) -> Result<(), CmdErrorCode> {
        mr_check::write_mr(&mut self.mrs, index, c)
    }

    /// RESET of QP `qpn`: the requester forgets the WQE bodies of the QP in its prefetch store
    /// (`roce_req` walks the QP's stretch, one entry per cycle).
    pub(crate) fn forget_wqes(&mut self, qpn: u32) {
        for idx in 0..1 << qp_ctx::LOG_SQ_WIN {
            let e = &mut self.wqe_store[qp_ctx::wqe_store_slot(qpn, idx)];
            if e.is_some_and(|e| e.qpn == qpn) {
                *e = None;
            }
        }
    }

    /// Put a QP on the requester's round-robin list if it is not there.
    fn activate(&mut self, qpn: u32) {
        if !self.req_rr.contains(&qpn) {
            self.req_rr.push_back(qpn);
        }
    }

    /// Take the READ responses and atomic ACKs the responder queued (for the block lockstep
    /// tests, which run the responder without the transmit side).
    pub fn take_responses(&mut self) -> Vec<TxPkt> {
        self.resp_q.drain(..).collect()
    }

    /// Cycles the MAC is busy with a frame of `len` bytes (plus FCS, preamble, IFG).
    fn wire_cycles(&self, len: usize) -> u64 {
        ((len + 24) as f64 / self.cfg.line_bytes_per_cycle()).ceil() as u64
    }

    /// A DMA read of `n` bytes requested at `now`: the cycle its data is in. Every read of
    /// every client (payload, WQEs, READ responses, atomics) shares host memory's budget.
    fn dma_read_done(&mut self, now: u64, n: usize) -> u64 {
        self.host.read(now, n as u64)
    }

    /// A DMA write of `n` bytes whose data is ready at `at`: the cycle it has passed.
    fn dma_write_done(&mut self, at: u64, n: usize) -> u64 {
        self.host.write(at, n as u64)
    }

    /// A packet's payload of `n` bytes placed by DMA from `at`: the cycle it is written,
    /// recorded with its first cycle in `last_placement`.
    fn place_payload(&mut self, at: u64, n: u64) -> u64 {
        let done = self.dma_write_done(at, n as usize);
        self.last_placement = Some((done - self.cfg.host_mem.write_cycles(n), done, n));
        done
    }
}
