//! The device: discovery, port setup, the context commands and the queues.

use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use roce_model::contract::{
    regs, CmdErrorCode, CmdOpcode, CqCtx, CqFlags, Cqe, CqeFlags, CqeOwner, MrCtx, QpCtx, QpType, RqWqe, Sge as CSge,
    SqWqe, VlanTag, MAX_SQ_WIN_SHIFT, RQ_MAX_SGE,
};

use roce_model::engine::qp_ctx::LOG_SQ_WIN;

use crate::backend::{Backend, DmaBuf};
use crate::error::{DriverError, Result};
use crate::verbs::*;
use crate::wqe::encode_send_into;

/// WQEs `post_send` encodes before copying them into the ring with one `mem_write`.
const SQ_STAGE: usize = 32;

/// Where `post_send` encodes WQEs (kept across calls: no allocation or zeroing per call;
/// the encoder writes every byte of a slot).
struct SqStage(Vec<[u8; SqWqe::SIZE]>);

impl std::fmt::Debug for SqStage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqStage({} WQEs)", self.0.len())
    }
}

/// Hasher of the QP, CQ and MR tables. Their keys are indices the driver hands out (small,
/// dense, not chosen by a peer), so SipHash's flooding resistance buys nothing, and it was
/// the largest single cost of `poll_cq` (one QP lookup per completion). A multiply by an
/// odd constant (Fibonacci hashing) spreads the indices over the low bits hashbrown places
/// with and the high bits it tags with.
#[derive(Default)]
struct IndexHasher(u64);

impl Hasher for IndexHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64((self.0 << 8) | u64::from(b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// A table keyed by QP, CQ or MR index.
type IndexMap<V> = HashMap<u32, V, BuildHasherDefault<IndexHasher>>;

/// Port features to enable.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Features {
    /// Send ECN-capable packets and count CE marks.
    pub ecn: bool,
    /// Answer CE marks with CNPs.
    pub cnp: bool,
    /// DCQCN rate limiting on received CNPs.
    pub dcqcn: bool,
    /// Honour PFC pause frames.
    pub pfc: bool,
}

#[derive(Debug)]
struct CqState {
    ring: DmaBuf,
    log_size: u8,
    ci: u32,
    /// Armed by [`Device::arm_cq`] and not seen firing yet: (consumer index at the arm,
    /// solicited only).
    armed: Option<(u32, bool)>,
}

#[derive(Debug)]
struct QpRings {
    sq: DmaBuf,
    sq_log: u8,
    sq_pi: u32,
    /// Posted, not yet completed: (wr_id, signaled).
    sq_shadow: VecDeque<(u64, bool)>,
    rq: DmaBuf,
    rq_log: u8,
    rq_pi: u32,
    rq_ci: u32,
    pd: u32,
    send_cq: u32,
    recv_cq: u32,
    /// The send window: `QpCtx.sq_win_shift` and `sq_win_base` (blocks of [`WinPool`]).
    win: (u8, u16),
}

/// The engine's deep-window pool: as many blocks of 16 send-window entries as the engine
/// has QPs. A QP whose send queue holds more than 16 WQEs takes an aligned run of
/// `2^shift` free blocks (a window of up to 256 WQEs, `MAX_SQ_WIN_SHIFT`), the largest that
/// is free; when none is, it keeps its own 16 entries (shift 0), so the number of QPs never
/// depends on the pool.
#[derive(Debug, Default)]
struct WinPool {
    used: Vec<bool>,
}

impl WinPool {
    /// Take a run for a send queue of `2^sq_log` entries: `(shift, base)`.
    fn take(&mut self, sq_log: u8) -> (u8, u16) {
        let want = sq_log.saturating_sub(LOG_SQ_WIN as u8).min(MAX_SQ_WIN_SHIFT);
        for shift in (1..=want).rev() {
            let n = 1usize << shift;
            let base = (0..self.used.len() / n).map(|k| k * n).find(|&b| self.used[b..b + n].iter().all(|u| !u));
            if let Some(b) = base {
                self.used[b..b + n].iter_mut().for_each(|u| *u = true);
                return (shift, b as u16);
            }
        }
        (0, 0)
    }

    /// Give a run back.
    fn give(&mut self, (shift, base): (u8, u16)) {
        if shift > 0 {
            let b = usize::from(base);
            self.used[b..b + (1 << shift)].iter_mut().for_each(|u| *u = false);
        }
    }
}

/// An opened engine.
#[derive(Debug)]
pub struct Device<B: Backend> {
    b: B,
    caps: u32,
    qps: IndexMap<QpRings>,
    cqs: IndexMap<CqState>,
    mrs: IndexMap<MemoryRegion>,
    next_pd: u32,
    mr_tag: u8,
    sq_stage: SqStage,
    win_pool: WinPool,
}

fn log2_ceil(n: u32) -> u8 {
    n.max(2).next_power_of_two().trailing_zeros() as u8
}

impl<B: Backend> Device<B> {
    /// Open the engine behind `b`: check its identity and contract version, soft-reset it
    /// and wait until it is ready.
    pub fn open(mut b: B) -> Result<Self> {
        let id = b.read32(regs::ID);
        if id != regs::ID_VALUE {
            return Err(DriverError::NotEngine(id));
        }
        let v = b.read32(regs::VERSION);
        let (major, minor) = (regs::version::MAJOR.get(v), regs::version::MINOR.get(v));
        if major != regs::VERSION_MAJOR {
            return Err(DriverError::Version { major, minor });
        }
        b.write32(regs::CTRL, regs::ctrl::SOFT_RESET.mask());
        let mut polls = 0;
        while !regs::status::READY.is_set(b.read32(regs::STATUS)) {
            polls += 1;
            if polls > 100_000 {
                return Err(DriverError::NotReady(polls));
            }
        }
        let caps = b.read32(regs::CAPS);
        let sq_stage = SqStage(vec![[0; SqWqe::SIZE]; SQ_STAGE]);
        let win_pool = WinPool { used: vec![false; 1 << regs::caps::LOG_MAX_QP.get(caps)] };
        Ok(Device {
            b,
            caps,
            qps: IndexMap::default(),
            cqs: IndexMap::default(),
            mrs: IndexMap::default(),
            next_pd: 1,
            mr_tag: 0,
            sq_stage,
            win_pool,
        })
    }

    /// The backend.
    pub fn backend(&mut self) -> &mut B {
        &mut self.b
    }

    /// Number of QPs the engine has.
    pub fn max_qps(&self) -> u32 {
        1 << regs::caps::LOG_MAX_QP.get(self.caps)
    }

    /// Set the port's MAC, IPv4 address and IPv6 GID.
    pub fn configure_port(&mut self, mac: [u8; 6], ipv4: Ipv4Addr, gid: Ipv6Addr) {
        self.b.write32(regs::MAC_HI, u32::from(u16::from_be_bytes([mac[0], mac[1]])));
        self.b.write32(regs::MAC_LO, u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]]));
        self.b.write32(regs::IPV4, u32::from(ipv4));
        let g = gid.octets();
        for i in 0..4 {
            self.b.write32(
                regs::gid::at(i as u32),
                u32::from_be_bytes([g[4 * i], g[4 * i + 1], g[4 * i + 2], g[4 * i + 3]]),
            );
        }
    }

    /// Tell the engine its clock frequency: the prescalers of the IB timer tick (4.096 us:
    /// local ACK timeout, RNR timer) and of the microsecond (congestion control timers) are
    /// set from it, rounded, at least one cycle each. The reset values are for 250 MHz.
    pub fn set_clock_hz(&mut self, hz: u64) {
        let per = |ns: f64, max: u32| ((hz as f64 * ns * 1e-9).round() as u64).clamp(1, u64::from(max)) as u32;
        self.b.write32(regs::TICK_CYCLES, per(4096.0, 0xFFFF));
        self.b.write32(regs::US_CYCLES, per(1000.0, 0xFFF));
    }

    /// Enable the engine with the given features.
    pub fn enable(&mut self, f: Features) {
        use regs::ctrl::*;
        let mut v = ENABLE.mask();
        for (on, fld) in [(f.ecn, ECN_ENABLE), (f.cnp, CNP_ENABLE), (f.dcqcn, DCQCN_ENABLE), (f.pfc, PFC_ENABLE)] {
            if on {
                v |= fld.mask();
            }
        }
        self.b.write32(regs::CTRL, v);
    }

    /// Read a 64-bit counter by its `*_LO` offset.
    pub fn counter(&mut self, lo: u32) -> u64 {
        let l = self.b.read32(lo);
        let h = self.b.read32(lo + 4);
        u64::from(l) | (u64::from(h) << 32)
    }

    fn command(&mut self, op: CmdOpcode, index: u32, data: Option<&[u8]>, arg: u32) -> Result<()> {
        if let Some(d) = data {
            let mut buf = [0u8; 128];
            buf[..d.len()].copy_from_slice(d);
            for i in 0..32 {
                let w = u32::from_le_bytes([buf[4 * i], buf[4 * i + 1], buf[4 * i + 2], buf[4 * i + 3]]);
                self.b.write32(regs::cmd_data::at(i as u32), w);
            }
        }
        self.b.write32(regs::CMD_ARG, arg);
        let cmd = regs::cmd::OPCODE.val(u32::from(op.code())).unwrap_or(0)
            | regs::cmd::INDEX.val(index).map_err(|_| DriverError::Invalid(format!("index {index}")))?;
        self.b.write32(regs::CMD, cmd);
        let mut polls = 0u32;
        let st = loop {
            let st = self.b.read32(regs::CMD_STATUS);
            if !regs::cmd_status::BUSY.is_set(st) {
                break st;
            }
            polls += 1;
            if polls > 1_000_000 {
                return Err(DriverError::NotReady(polls));
            }
        };
        let code = regs::cmd_status::ERROR.get(st);
        match CmdErrorCode::try_from(code as u8) {
            Ok(CmdErrorCode::Ok) => Ok(()),
            Ok(code) => Err(DriverError::Command { cmd: op.name(), index, code }),
            Err(_) => Err(DriverError::BadCommandCode(code)),
        }
    }

    fn read_back(&mut self) -> [u8; 128] {
        let mut b = [0u8; 128];
        for i in 0..32 {
            b[4 * i..4 * i + 4].copy_from_slice(&self.b.read32(regs::cmd_data::at(i as u32)).to_le_bytes());
        }
        b
    }

    /// Allocate a protection domain.
    pub fn alloc_pd(&mut self) -> ProtectionDomain {
        let pd = ProtectionDomain(self.next_pd);
        self.next_pd += 1;
        pd
    }

    /// Allocate a DMA buffer.
    pub fn alloc_buf(&mut self, len: usize) -> Result<DmaBuf> {
        self.b.dma_alloc(len)
    }

    /// Register `[off, off+len)` of `buf` with `access`; its virtual addresses are its DMA
    /// addresses.
    pub fn reg_mr(
        &mut self,
        pd: ProtectionDomain,
        buf: &DmaBuf,
        off: usize,
        len: usize,
        access: AccessFlags,
    ) -> Result<MemoryRegion> {
        self.reg_mr_at(pd, buf, off, len, buf.iova.wrapping_add(off as u64), access)
    }

    /// Register `[off, off+len)` of `buf` with `access`, addressed by work requests and
    /// peers as `[va, va+len)` (`ibv_reg_mr_iova2`: the application's own pointer, or any
    /// IOVA it chooses).
    pub fn reg_mr_at(
        &mut self,
        pd: ProtectionDomain,
        buf: &DmaBuf,
        off: usize,
        len: usize,
        va: u64,
        access: AccessFlags,
    ) -> Result<MemoryRegion> {
        if off.checked_add(len).is_none_or(|e| e > buf.len) {
            return Err(DriverError::OutOfBounds {
                what: "MR",
                off: off as u64,
                len: len as u64,
                size: buf.len as u64,
            });
        }
        if va.checked_add(len as u64).is_none() {
            return Err(DriverError::OutOfBounds { what: "MR address", off: va, len: len as u64, size: u64::MAX });
        }
        let max = 1u32 << regs::caps::LOG_MAX_MR.get(self.caps);
        let index = (1..max).find(|i| !self.mrs.contains_key(i)).ok_or(DriverError::Exhausted("MR"))?;
        self.mr_tag = self.mr_tag.wrapping_add(1);
        let key = (index << 8) | u32::from(self.mr_tag);
        let iova = buf.iova + off as u64;
        let c = MrCtx { va, len: len as u64, iova, pd: pd.0, key, access, valid: true };
        self.command(CmdOpcode::MrWrite, index, Some(&c.encode()), 0)?;
        let mr = MemoryRegion { buf: *buf, va, len: len as u64, lkey: key, rkey: key, access, pd };
        self.mrs.insert(index, mr);
        Ok(mr)
    }

    /// Number of MRs the engine has (index 0 is never used).
    pub fn max_mrs(&self) -> u32 {
        1 << regs::caps::LOG_MAX_MR.get(self.caps)
    }

    /// Number of CQs the engine has.
    pub fn max_cqs(&self) -> u32 {
        1 << regs::caps::LOG_MAX_CQ.get(self.caps)
    }

    /// RDMA READ / atomic requests a QP may have outstanding, as requester or responder.
    pub fn max_rd_atomic(&self) -> u32 {
        1 << regs::caps::LOG_MAX_RD_ATOMIC.get(self.caps)
    }

    /// Largest path MTU the engine accepts.
    pub fn max_mtu(&self) -> PathMtu {
        PathMtu::try_from(regs::caps::MAX_MTU.get(self.caps) as u8).unwrap_or(PathMtu::Mtu1024)
    }

    /// The CAPS register as read at open.
    pub fn caps(&self) -> u32 {
        self.caps
    }

    /// Deregister a memory region.
    pub fn dereg_mr(&mut self, mr: &MemoryRegion) -> Result<()> {
        let index = mr.lkey >> 8;
        if self.mrs.get(&index).is_none_or(|m| m.lkey != mr.lkey) {
            return Err(DriverError::UnknownMr(mr.lkey));
        }
        self.command(CmdOpcode::MrInvalidate, index, None, 0)?;
        self.mrs.remove(&index);
        Ok(())
    }

    /// Create a completion queue of at least `depth` entries.
    pub fn create_cq(&mut self, depth: u32) -> Result<CompletionQueue> {
        let max = 1u32 << regs::caps::LOG_MAX_CQ.get(self.caps);
        let cqn = (0..max).find(|i| !self.cqs.contains_key(i)).ok_or(DriverError::Exhausted("CQ"))?;
        let log_size = log2_ceil(depth);
        if log_size > 15 {
            return Err(DriverError::Invalid(format!("CQ depth {depth}")));
        }
        let ring = self.b.dma_alloc(Cqe::SIZE << log_size)?;
        let c = CqCtx { base: ring.iova, log_size, flags: CqFlags::IRQ_ENABLE, valid: true, ..CqCtx::default() };
        if let Err(e) = self.command(CmdOpcode::CqWrite, cqn, Some(&c.encode()), 0) {
            self.b.dma_free(ring);
            return Err(e);
        }
        self.cqs.insert(cqn, CqState { ring, log_size, ci: 0, armed: None });
        Ok(CompletionQueue(cqn))
    }

    /// Number of entries of a CQ's ring.
    pub fn cq_size(&self, cq: CompletionQueue) -> Result<u32> {
        self.cqs.get(&cq.0).map(|c| 1 << c.log_size).ok_or(DriverError::UnknownCq(cq.0))
    }

    /// Destroy a CQ: invalidate it in the engine and free its ring. A CQ that a QP still
    /// completes into is [`DriverError::Busy`].
    pub fn destroy_cq(&mut self, cq: CompletionQueue) -> Result<()> {
        if !self.cqs.contains_key(&cq.0) {
            return Err(DriverError::UnknownCq(cq.0));
        }
        if self.qps.values().any(|q| q.send_cq == cq.0 || q.recv_cq == cq.0) {
            return Err(DriverError::Busy("CQ"));
        }
        self.command(CmdOpcode::CqWrite, cq.0, Some(&CqCtx::default().encode()), 0)?;
        if let Some(c) = self.cqs.remove(&cq.0) {
            self.b.dma_free(c.ring);
        }
        Ok(())
    }

    /// Request one completion event (`ibv_req_notify_cq`): the engine raises
    /// `IRQ_STATUS.CQ_EVENT` at the next completion (`solicited_only`: the next solicited or
    /// failed one), or at once if completions are waiting. [`Device::take_cq_events`] then
    /// names the CQs that fired.
    pub fn arm_cq(&mut self, cq: CompletionQueue, solicited_only: bool) -> Result<()> {
        let c = self.cqs.get_mut(&cq.0).ok_or(DriverError::UnknownCq(cq.0))?;
        c.armed = Some((c.ci, solicited_only));
        let mut db = regs::cq_db::CI.val(c.ci & 0xFFFF).unwrap_or(0)
            | regs::cq_db::CQ.val(cq.0).unwrap_or(0)
            | regs::cq_db::ARM.mask();
        if solicited_only {
            db |= regs::cq_db::SOLICITED.mask();
        }
        self.b.write32(regs::CQ_DB, db);
        Ok(())
    }

    /// The armed CQs that have fired (a new completion, or for a solicited-only arm a
    /// solicited or failed one, since the arm), found from the rings as the register map's
    /// interrupt protocol says; they are disarmed.
    pub fn take_cq_events(&mut self) -> Vec<CompletionQueue> {
        let mut fired = Vec::new();
        for (&cqn, c) in self.cqs.iter_mut() {
            let Some((from, solicited)) = c.armed else { continue };
            let mut ci = from;
            let mut hit = false;
            // at most one ring's worth of entries can be new
            for _ in 0..(1u32 << c.log_size) {
                let mut img = [0u8; Cqe::SIZE];
                let slot = (ci & ((1 << c.log_size) - 1)) as usize * Cqe::SIZE;
                self.b.mem_read(&c.ring, slot, &mut img);
                let want = ((ci >> c.log_size) & 1) ^ 1;
                if u32::from(img[23] & CqeOwner::PHASE.bits()) != want {
                    break;
                }
                let Ok(e) = Cqe::decode(&img) else { break };
                if !solicited || e.flags.contains(CqeFlags::SOLICITED) || e.status != CqeStatus::Success {
                    hit = true;
                    break;
                }
                ci = ci.wrapping_add(1);
            }
            if hit {
                c.armed = None;
                fired.push(CompletionQueue(cqn));
            }
        }
        fired
    }

    /// Read and clear the interrupt causes (`IRQ_STATUS`, write one to clear).
    pub fn take_irq_status(&mut self) -> u32 {
        let st = self.b.read32(regs::IRQ_STATUS);
        if st != 0 {
            self.b.write32(regs::IRQ_STATUS, st);
        }
        st
    }

    /// Set `IRQ_MASK` (1 = the cause does not interrupt).
    pub fn set_irq_mask(&mut self, mask: u32) {
        self.b.write32(regs::IRQ_MASK, mask);
    }

    /// `QP_ERR_INFO`: the first QP the engine moved to the error state since
    /// `IRQ_STATUS.QP_ERROR` was last cleared, and the CqeStatus code of why.
    pub fn qp_err_info(&mut self) -> (u32, u8) {
        let v = self.b.read32(regs::QP_ERR_INFO);
        (regs::qp_err_info::QPN.get(v), regs::qp_err_info::CAUSE.get(v) as u8)
    }

    /// Forget a QP error not yet taken from `IRQ_STATUS` when it is `qpn`'s: a QP being
    /// destroyed takes its error with it, so that the interrupt handler does not report it
    /// for the next QP given the same number. Clears `IRQ_STATUS.QP_ERROR` alone (the other
    /// causes stay for the handler); true when it did.
    pub fn forget_qp_error(&mut self, qpn: u32) -> bool {
        let st = self.b.read32(regs::IRQ_STATUS);
        if st & regs::irq_status::QP_ERROR.mask() == 0 || self.qp_err_info().0 != qpn {
            return false;
        }
        self.b.write32(regs::IRQ_STATUS, regs::irq_status::QP_ERROR.mask());
        true
    }

    /// Create an RC queue pair (state INIT is reached with [`Device::modify_qp`]).
    pub fn create_qp(
        &mut self,
        pd: ProtectionDomain,
        send_cq: CompletionQueue,
        recv_cq: CompletionQueue,
        sq_depth: u32,
        rq_depth: u32,
    ) -> Result<QueuePair> {
        let max = self.max_qps();
        let qpn = (2..max).find(|i| !self.qps.contains_key(i)).ok_or(DriverError::Exhausted("QP"))?;
        let (sq_log, rq_log) = (log2_ceil(sq_depth), log2_ceil(rq_depth));
        if sq_log > 15 || rq_log > 15 {
            return Err(DriverError::Invalid("queue depth above 32768".into()));
        }
        for cq in [send_cq, recv_cq] {
            if !self.cqs.contains_key(&cq.0) {
                return Err(DriverError::UnknownCq(cq.0));
            }
        }
        let sq = self.b.dma_alloc(SqWqe::SIZE << sq_log)?;
        let rq = self.b.dma_alloc(RqWqe::SIZE << rq_log)?;
        let win = self.win_pool.take(sq_log);
        let c = QpCtx {
            state: QpState::Reset,
            qp_type: QpType::Rc,
            pd: pd.0,
            sq_base: sq.iova,
            rq_base: rq.iova,
            sq_log_size: sq_log,
            rq_log_size: rq_log,
            send_cq: send_cq.0 as u16,
            recv_cq: recv_cq.0 as u16,
            sq_win_shift: win.0,
            sq_win_base: win.1,
            ..QpCtx::default()
        };
        if let Err(e) = self.command(CmdOpcode::QpWrite, qpn, Some(&c.encode()), 0) {
            self.b.dma_free(sq);
            self.b.dma_free(rq);
            self.win_pool.give(win);
            return Err(e);
        }
        self.qps.insert(
            qpn,
            QpRings {
                sq,
                sq_log,
                sq_pi: 0,
                sq_shadow: VecDeque::new(),
                rq,
                rq_log,
                rq_pi: 0,
                rq_ci: 0,
                pd: pd.0,
                send_cq: send_cq.0,
                recv_cq: recv_cq.0,
                win,
            },
        );
        Ok(QueuePair(qpn))
    }

    /// Send and receive queue sizes of a QP (entries).
    pub fn qp_depths(&self, qp: QueuePair) -> Result<(u32, u32)> {
        let q = self.qps.get(&qp.0).ok_or(DriverError::UnknownQp(qp.0))?;
        Ok((1 << q.sq_log, 1 << q.rq_log))
    }

    /// Send work requests posted to a QP and not retired yet, and free send queue slots.
    pub fn sq_space(&self, qp: QueuePair) -> Result<usize> {
        let q = self.qps.get(&qp.0).ok_or(DriverError::UnknownQp(qp.0))?;
        Ok((1usize << q.sq_log) - q.sq_shadow.len())
    }

    /// Free receive queue slots of a QP.
    pub fn rq_space(&self, qp: QueuePair) -> Result<usize> {
        let q = self.qps.get(&qp.0).ok_or(DriverError::UnknownQp(qp.0))?;
        Ok((1usize << q.rq_log) - q.rq_pi.wrapping_sub(q.rq_ci) as usize)
    }

    /// Modify a QP: apply the attributes `mask` selects (see [`masks`]).
    pub fn modify_qp(&mut self, qp: QueuePair, a: &QpAttr, mask: QpAttrMask) -> Result<()> {
        let pd = self.qps.get(&qp.0).ok_or(DriverError::UnknownQp(qp.0))?.pd;
        let dest_ip = match a.dest_ip {
            IpAddr::V4(v) => v.to_ipv6_mapped().octets(),
            IpAddr::V6(v) => v.octets(),
        };
        let c = QpCtx {
            state: a.state,
            qp_type: QpType::Rc,
            path_mtu: a.path_mtu,
            encap: a.encap,
            pd,
            access: a.access,
            dest_qpn: a.dest_qpn,
            sq_psn: a.sq_psn,
            rq_psn: a.rq_psn,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            min_rnr_timer: a.min_rnr_timer,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            dest_mac: a.dest_mac,
            vlan: a.vlan.map_or(VlanTag::default(), |(vid, pcp)| VlanTag { vid, pcp, valid: true }),
            dscp: a.dscp,
            hop_limit: a.hop_limit,
            dest_ip,
            ..QpCtx::default()
        };
        c.validate()?;
        self.command(CmdOpcode::QpModify, qp.0, Some(&c.encode()), mask.bits())?;
        if a.state == QpState::Reset && mask.contains(QpAttrMask::STATE) {
            // the engine restarts the QP's ring indices at 0 in Reset
            if let Some(q) = self.qps.get_mut(&qp.0) {
                q.sq_pi = 0;
                q.sq_shadow.clear();
                q.rq_pi = 0;
                q.rq_ci = 0;
            }
        }
        Ok(())
    }

    /// Destroy a QP: move it to RESET in the engine (outstanding work is discarded) and free
    /// its rings.
    pub fn destroy_qp(&mut self, qp: QueuePair) -> Result<()> {
        if !self.qps.contains_key(&qp.0) {
            return Err(DriverError::UnknownQp(qp.0));
        }
        let reset = QpAttr { state: QpState::Reset, ..QpAttr::default() };
        self.modify_qp(qp, &reset, QpAttrMask::STATE)?;
        if let Some(q) = self.qps.remove(&qp.0) {
            self.b.dma_free(q.sq);
            self.b.dma_free(q.rq);
            self.win_pool.give(q.win);
        }
        Ok(())
    }

    /// Read a QP's context back from the engine.
    pub fn query_qp(&mut self, qp: QueuePair) -> Result<QpCtx> {
        if !self.qps.contains_key(&qp.0) {
            return Err(DriverError::UnknownQp(qp.0));
        }
        self.command(CmdOpcode::QpRead, qp.0, None, 0)?;
        Ok(QpCtx::decode(&self.read_back())?)
    }

    /// Post send work requests (one doorbell for the batch). A single request with inline
    /// data goes through the inline doorbell when the engine has one (CAPS.BF) and the
    /// platform maps it: the WQE image is written to the ring and to the BlueFlame window,
    /// so the engine need not read it; otherwise `SQ_DB`.
    pub fn post_send(&mut self, qp: QueuePair, wrs: &[SendWr<'_>]) -> Result<()> {
        let bf = regs::caps::BF.get(self.caps) != 0 && wrs.len() == 1 && wrs[0].inline.is_some();
        let Device { b, qps, sq_stage: SqStage(stage), .. } = self;
        let q = qps.get_mut(&qp.0).ok_or(DriverError::UnknownQp(qp.0))?;
        let size = 1u32 << q.sq_log;
        if q.sq_shadow.len() + wrs.len() > size as usize {
            return Err(DriverError::QueueFull("send queue"));
        }
        // WQEs go into the ring slots past the producer index; only the doorbell publishes
        // them, so a bad request fails the call with nothing posted. They are encoded into
        // `stage` and copied with one mem_write per run of consecutive slots.
        let mut pi = q.sq_pi;
        let mut rest = wrs;
        while !rest.is_empty() {
            let slot = pi & (size - 1);
            let n = rest.len().min(stage.len()).min((size - slot) as usize);
            let (run, later) = rest.split_at(n);
            for (wr, w) in run.iter().zip(stage.iter_mut()) {
                encode_send_into(wr, w)?;
            }
            b.mem_write(&q.sq, slot as usize * SqWqe::SIZE, stage[..n].as_flattened());
            pi = pi.wrapping_add(n as u32);
            rest = later;
        }
        q.sq_pi = pi;
        q.sq_shadow.extend(wrs.iter().map(|w| (w.wr_id, w.signaled)));
        let db = regs::sq_db::PI.val(pi & 0xFFFF).unwrap_or(0) | regs::sq_db::QP.val(qp.0).unwrap_or(0);
        if bf {
            // stage[0] holds the one WQE's image as written to the ring
            let w = &mut stage[0];
            w[crate::wqe::BF_DB..crate::wqe::BF_DB + 4].copy_from_slice(&db.to_le_bytes());
            if b.bf_write(qp.0, w) {
                return Ok(());
            }
        }
        b.write32(regs::SQ_DB, db);
        Ok(())
    }

    /// Post receive work requests (one doorbell for the batch).
    pub fn post_recv(&mut self, qp: QueuePair, wrs: &[RecvWr<'_>]) -> Result<()> {
        let q = self.qps.get_mut(&qp.0).ok_or(DriverError::UnknownQp(qp.0))?;
        let size = 1u32 << q.rq_log;
        if q.rq_pi.wrapping_sub(q.rq_ci) as usize + wrs.len() > size as usize {
            return Err(DriverError::QueueFull("receive queue"));
        }
        let ring = q.rq;
        let mut pi = q.rq_pi;
        for wr in wrs {
            if wr.sges.len() > RQ_MAX_SGE {
                return Err(DriverError::Invalid(format!("{} SGEs (max {RQ_MAX_SGE})", wr.sges.len())));
            }
            let mut sge = [CSge::default(); RQ_MAX_SGE];
            for (d, s) in sge.iter_mut().zip(wr.sges) {
                *d = CSge { addr: s.addr, len: s.len, lkey: s.lkey };
            }
            let w = RqWqe { wr_id: wr.wr_id, num_sge: wr.sges.len() as u8, sge };
            self.b.mem_write(&ring, (pi & (size - 1)) as usize * RqWqe::SIZE, &w.encode());
            pi = pi.wrapping_add(1);
        }
        if let Some(q) = self.qps.get_mut(&qp.0) {
            q.rq_pi = pi;
        }
        let db = regs::rq_db::PI.val(pi & 0xFFFF).unwrap_or(0) | regs::rq_db::QP.val(qp.0).unwrap_or(0);
        self.b.write32(regs::RQ_DB, db);
        Ok(())
    }

    /// Poll up to `out.len()` completions; returns how many were written. One CQ doorbell
    /// per call returns the consumed entries to the engine.
    pub fn poll_cq(&mut self, cq: CompletionQueue, out: &mut [WorkCompletion]) -> Result<usize> {
        let c = self.cqs.get(&cq.0).ok_or(DriverError::UnknownCq(cq.0))?;
        let (ring, log, mut ci) = (c.ring, c.log_size, c.ci);
        let mut n = 0;
        while n < out.len() {
            let mut img = [0u8; Cqe::SIZE];
            let slot = (ci & ((1 << log) - 1)) as usize * Cqe::SIZE;
            self.b.mem_read(&ring, slot, &mut img);
            let want = ((ci >> log) & 1) ^ 1;
            if u32::from(img[23] & CqeOwner::PHASE.bits()) != want {
                break;
            }
            let e = Cqe::decode(&img)?;
            let wc = WorkCompletion {
                wr_id: e.wr_id,
                status: e.status,
                opcode: e.opcode,
                byte_len: e.byte_len,
                imm: e.flags.contains(CqeFlags::IMM_VALID).then_some(e.imm_or_inv),
                invalidated: e.flags.contains(CqeFlags::INV_VALID).then_some(e.imm_or_inv),
                qpn: e.qpn,
                src_qp: e.src_qp,
            };
            self.retire(&wc);
            out[n] = wc;
            n += 1;
            ci = ci.wrapping_add(1);
        }
        if n > 0 {
            if let Some(c) = self.cqs.get_mut(&cq.0) {
                c.ci = ci;
            }
            let db = regs::cq_db::CI.val(ci & 0xFFFF).unwrap_or(0) | regs::cq_db::CQ.val(cq.0).unwrap_or(0);
            self.b.write32(regs::CQ_DB, db);
        }
        Ok(n)
    }

    /// Free the queue slots a completion accounts for.
    fn retire(&mut self, wc: &WorkCompletion) {
        let Some(q) = self.qps.get_mut(&wc.qpn) else { return };
        // Receive opcodes have bit 7 set (a flushed receive WQE reports Recv).
        if wc.opcode.code() & 0x80 != 0 {
            q.rq_ci = q.rq_ci.wrapping_add(1);
            return;
        }
        if wc.status != CqeStatus::Success {
            // error and flush CQEs are written for every WQE, signaled or not
            q.sq_shadow.pop_front();
            return;
        }
        // A signaled completion also retires the unsignaled WQEs before it.
        while let Some((id, sig)) = q.sq_shadow.pop_front() {
            if sig && id == wc.wr_id {
                break;
            }
        }
    }

    /// The ring buffer of a CQ (for tools that inspect or, in tests, fill it).
    pub fn cq_ring(&self, cq: CompletionQueue) -> Option<DmaBuf> {
        self.cqs.get(&cq.0).map(|c| c.ring)
    }

    /// Memory of a buffer, for the application (CPU view).
    pub fn read_buf(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        self.b.mem_read(buf, off, out);
    }

    /// Write a buffer (CPU view).
    pub fn write_buf(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        self.b.mem_write(buf, off, data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roce_model::contract::{CqeOpcode, CqeStatus, SQ_DATA_BYTES};

    #[test]
    fn the_window_pool_gives_aligned_runs_and_never_runs_out_of_qps() {
        let mut p = WinPool { used: vec![false; 32] };
        // 16 WQEs or fewer: the QP's own entries; 64: four blocks; above 256: sixteen
        assert_eq!(p.take(4), (0, 0));
        assert_eq!(p.take(6), (2, 0));
        assert_eq!(p.take(5), (1, 4));
        assert_eq!(p.take(15), (4, 16));
        assert_eq!(p.take(8), (3, 8));
        // 30 of 32 blocks taken: a 64-deep QP gets the 32-deep run left, then its own 16
        assert_eq!(p.take(6), (1, 6));
        assert_eq!(p.take(6), (0, 0));
        p.give((4, 16));
        assert_eq!(p.take(8), (4, 16));
        p.give((2, 0));
        p.give((1, 4));
        assert_eq!(p.take(6), (2, 0));
        assert_eq!(p.used.iter().filter(|&&u| u).count(), 2 + 8 + 16 + 4);
    }

    /// BAR0 enough for `open` and the commands, DMA memory in a Vec, register writes logged.
    #[derive(Default)]
    struct Mem {
        mem: Vec<u8>,
        writes: Vec<(u32, u32)>,
        /// The BlueFlame window, when the platform has one: its writes (qpn, image).
        bf: Option<Vec<(u32, [u8; SqWqe::SIZE])>>,
    }

    impl Backend for Mem {
        fn read32(&mut self, off: u32) -> u32 {
            match off {
                regs::ID => regs::ID_VALUE,
                regs::VERSION => regs::VERSION_MAJOR << 16,
                regs::STATUS => regs::status::READY.mask(),
                regs::CAPS => regs::caps::RESET,
                _ => 0,
            }
        }
        fn write32(&mut self, off: u32, val: u32) {
            self.writes.push((off, val));
        }
        fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf> {
            let iova = self.mem.len() as u64;
            self.mem.resize(self.mem.len() + len.div_ceil(4096) * 4096, 0);
            Ok(DmaBuf { iova, len, id: 0 })
        }
        fn dma_free(&mut self, _buf: DmaBuf) {}
        fn mem_read(&self, b: &DmaBuf, off: usize, out: &mut [u8]) {
            let a = b.iova as usize + off;
            out.copy_from_slice(&self.mem[a..a + out.len()]);
        }
        fn mem_write(&mut self, b: &DmaBuf, off: usize, data: &[u8]) {
            assert!(off + data.len() <= b.len, "write past the buffer");
            let a = b.iova as usize + off;
            self.mem[a..a + data.len()].copy_from_slice(data);
        }
        fn bf_write(&mut self, qpn: u32, wqe: &[u8; 128]) -> bool {
            match self.bf.as_mut() {
                Some(v) => {
                    v.push((qpn, *wqe));
                    true
                }
                None => false,
            }
        }
    }

    #[test]
    fn a_single_inline_send_goes_through_the_blueflame_window() {
        let mut dev = Device::open(Mem { bf: Some(Vec::new()), ..Mem::default() }).unwrap();
        let pd = dev.alloc_pd();
        let cq = dev.create_cq(4).unwrap();
        let qp = dev.create_qp(pd, cq, cq, 64, 2).unwrap();
        let data = [7u8; 40];
        let sge = [Sge { addr: 0x2000, len: 40, lkey: 0x101 }];
        let wr = |i: u64, inline: bool| SendWr {
            wr_id: i,
            op: WrOp::Write { remote_addr: 0x10_0000, rkey: 0x202 },
            sges: if inline { &[] } else { &sge },
            inline: inline.then_some(&data[..]),
            signaled: true,
            solicited: false,
            fence: false,
        };
        let db = |pi: u32| regs::sq_db::PI.val(pi).unwrap() | regs::sq_db::QP.val(qp.0).unwrap();
        // one inline request: the ring holds its image (bf_db zero), the window the same
        // image with bf_db = the doorbell, and SQ_DB is not written
        dev.post_send(qp, &[wr(1, true)]).unwrap();
        let ring = slot(&mut dev, qp, 0);
        assert_eq!(ring, crate::wqe::tests::generic(&wr(1, true)).unwrap().encode());
        let bf = dev.backend().bf.clone().unwrap();
        assert_eq!(bf.len(), 1);
        assert_eq!(bf[0].0, qp.0);
        let mut want = ring;
        want[crate::wqe::BF_DB..crate::wqe::BF_DB + 4].copy_from_slice(&db(1).to_le_bytes());
        assert_eq!(bf[0].1, want);
        assert!(sq_doorbells(&mut dev).is_empty());
        // a gather list, or two requests at once: SQ_DB
        dev.post_send(qp, &[wr(2, false)]).unwrap();
        dev.post_send(qp, &[wr(3, true), wr(4, true)]).unwrap();
        assert_eq!(sq_doorbells(&mut dev), [db(2), db(4)]);
        assert_eq!(dev.backend().bf.as_ref().map(Vec::len), Some(1));
        // a platform without the window: SQ_DB
        let mut dev = Device::open(Mem::default()).unwrap();
        let pd = dev.alloc_pd();
        let cq = dev.create_cq(4).unwrap();
        let qp2 = dev.create_qp(pd, cq, cq, 64, 2).unwrap();
        dev.post_send(qp2, &[wr(1, true)]).unwrap();
        assert_eq!(sq_doorbells(&mut dev).len(), 1);
    }

    fn sq_doorbells(dev: &mut Device<Mem>) -> Vec<u32> {
        dev.backend().writes.iter().filter(|w| w.0 == regs::SQ_DB).map(|w| w.1).collect()
    }

    /// Ring slot `i` of the QP's SQ.
    fn slot(dev: &mut Device<Mem>, qp: QueuePair, i: u32) -> [u8; SqWqe::SIZE] {
        let sq = dev.qps[&qp.0].sq;
        let mut b = [0; SqWqe::SIZE];
        dev.read_buf(&sq, i as usize * SqWqe::SIZE, &mut b);
        b
    }

    #[test]
    fn post_send_writes_the_contract_bytes_and_only_the_doorbell_publishes() {
        let mut dev = Device::open(Mem::default()).unwrap();
        let pd = dev.alloc_pd();
        let cq = dev.create_cq(4).unwrap();
        let qp = dev.create_qp(pd, cq, cq, 64, 2).unwrap();
        let sges = [Sge { addr: 0x2000, len: 100, lkey: 0x101 }, Sge { addr: 0x3000, len: 28, lkey: 0x101 }];
        let data: Vec<u8> = (0..SQ_DATA_BYTES as u8).collect();
        let wr = |i: u64| {
            let op = match i % 4 {
                0 => WrOp::Send,
                1 => WrOp::Write { remote_addr: 0x10_0000 + i, rkey: 0x202 },
                2 => WrOp::FetchAdd { remote_addr: 0x8000, rkey: 0x202, add: i },
                _ => WrOp::WriteImm { remote_addr: 0x20_0000, rkey: 0x202, imm: i as u32 },
            };
            let inline = (i % 5 == 0 && i % 4 != 2).then(|| &data[..(i as usize) % SQ_DATA_BYTES]);
            SendWr {
                wr_id: i,
                op,
                sges: &sges[..(i % 3) as usize],
                inline,
                signaled: true,
                solicited: i % 2 == 0,
                fence: false,
            }
        };
        let check = |dev: &mut Device<Mem>, wrs: &[SendWr<'_>], first: u32| {
            for (k, w) in wrs.iter().enumerate() {
                let want = crate::wqe::tests::generic(w).unwrap().encode();
                assert_eq!(slot(dev, qp, (first + k as u32) % 64), want, "WQE {k}");
            }
        };
        let db = |pi: u32| regs::sq_db::PI.val(pi).unwrap() | regs::sq_db::QP.val(qp.0).unwrap();

        // 40 WQEs: two runs through the staging buffer, one doorbell
        let a: Vec<SendWr> = (0..40).map(wr).collect();
        dev.post_send(qp, &a).unwrap();
        check(&mut dev, &a, 0);
        assert_eq!(sq_doorbells(&mut dev), [db(40)]);

        // complete them all (signaled: the CQE of the last retires the ones before it)
        let ring = dev.cq_ring(cq).unwrap();
        let e = Cqe {
            wr_id: 39,
            qpn: qp.0,
            opcode: CqeOpcode::Send,
            status: CqeStatus::Success,
            owner: CqeOwner::PHASE,
            ..Cqe::default()
        };
        dev.write_buf(&ring, 0, &e.encode());
        let mut wc = [WorkCompletion::EMPTY; 2];
        assert_eq!(dev.poll_cq(cq, &mut wc).unwrap(), 1);

        // a bad request late in a batch: an error, no doorbell, the producer index unchanged
        let mut b: Vec<SendWr> = (100..150).map(wr).collect();
        b[45].inline = Some(&[0; SQ_DATA_BYTES + 1]);
        let err = dev.post_send(qp, &b).unwrap_err();
        assert!(matches!(err, DriverError::Invalid(_)), "{err}");
        assert_eq!(sq_doorbells(&mut dev), [db(40)]);
        assert_eq!(dev.qps[&qp.0].sq_pi, 40);
        assert_eq!(dev.qps[&qp.0].sq_shadow.len(), 0);

        // the same batch, fixed: slots 40..63 and 0..25 (the ring wraps), one doorbell
        b[45].inline = None;
        dev.post_send(qp, &b).unwrap();
        check(&mut dev, &b, 40);
        assert_eq!(sq_doorbells(&mut dev), [db(40), db(90)]);

        // more than the ring has free
        let c: Vec<SendWr> = (0..15).map(wr).collect();
        assert!(matches!(dev.post_send(qp, &c), Err(DriverError::QueueFull(_))));
        assert!(matches!(dev.post_send(QueuePair(999), &c), Err(DriverError::UnknownQp(999))));
        assert_eq!(sq_doorbells(&mut dev).len(), 2);
    }
}
