//! PDs, MRs, completion channels, CQs and QPs, and the data path (`post_send`, `post_recv`,
//! `poll_cq`, `req_notify_cq`, which the inline functions of `verbs.h` reach through
//! `context->ops`). Each C object is a box starting with the struct the application sees,
//! followed by the owned handle of `roce_driver::context`.

use std::ffi::c_void;
use std::net::Ipv6Addr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use roce_driver::{
    AccessFlags, Cq, CqeOpcode, DriverError, Encap, Mr, PathMtu, Pd, Qp, QpAttr, QpAttrMask, QpState, RecvWr, SendWr,
    Sge, WorkCompletion, WrOp,
};
use roce_model::contract::{CmdErrorCode, RQ_MAX_SGE, SQ_MAX_SGE};

use super::device::{vcontext, VContext, MAX_INLINE, MAX_WR};
use super::{errno_ret, guard, minus_one, null_on};
use crate::fd;
use crate::provider::{AnyBackend, OpenDevice};
use crate::sys::*;

/// Print the driver's error behind each errno on stderr (`ROCE_VERBS_DEBUG=1`).
pub const DEBUG_ENV: &str = "ROCE_VERBS_DEBUG";

/// The errno libibverbs reports for a driver error.
pub fn errno_of(e: &DriverError) -> c_int {
    static DEBUG: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    if *DEBUG.get_or_init(|| std::env::var(DEBUG_ENV).is_ok_and(|v| v == "1")) {
        eprintln!("roce-verbs: {e}");
    }
    match e {
        DriverError::Exhausted(_) | DriverError::QueueFull(_) | DriverError::Dma { .. } => libc::ENOMEM,
        DriverError::Busy(_) => libc::EBUSY,
        DriverError::Unsupported(_) => libc::EOPNOTSUPP,
        DriverError::NotReady(_) => libc::ETIMEDOUT,
        DriverError::Io(..) | DriverError::Unavailable(..) | DriverError::NotEngine(_) => libc::EIO,
        DriverError::Command { code: CmdErrorCode::BadOpcode, .. } => libc::EOPNOTSUPP,
        _ => libc::EINVAL,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Initialise a pthread mutex and condition variable in place.
///
/// # Safety
/// Both point at memory that stays put until [`destroy_sync`].
unsafe fn init_sync(m: *mut pthread_mutex_t, c: *mut pthread_cond_t) {
    // SAFETY: forwarded from the caller; default attributes.
    unsafe {
        libc::pthread_mutex_init(m.cast(), std::ptr::null());
        libc::pthread_cond_init(c.cast(), std::ptr::null());
    }
}

/// # Safety
/// Both were set up by [`init_sync`] and nobody waits on them.
unsafe fn destroy_sync(m: *mut pthread_mutex_t, c: *mut pthread_cond_t) {
    // SAFETY: forwarded from the caller.
    unsafe {
        libc::pthread_cond_destroy(c.cast());
        libc::pthread_mutex_destroy(m.cast());
    }
}

// ---------------------------------------------------------------- PD

/// A protection domain.
#[repr(C)]
pub struct VPd {
    /// What the application sees.
    pub pd: ibv_pd,
    /// The driver's PD (taken when it is freed).
    pub h: Option<Pd<AnyBackend>>,
}

/// # Safety
/// `pd` is NULL or a PD of this library.
unsafe fn vpd<'a>(pd: *mut ibv_pd) -> Option<&'a mut VPd> {
    // SAFETY: PDs of this library are the first field of a live VPd.
    (!pd.is_null()).then(|| unsafe { &mut *pd.cast::<VPd>() })
}

/// `ibv_alloc_pd`.
///
/// # Safety
/// `ctx` is an open context.
#[no_mangle]
pub unsafe extern "C" fn ibv_alloc_pd(ctx: *mut ibv_context) -> *mut ibv_pd {
    guard(std::ptr::null_mut(), || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return null_on(Err(libc::EINVAL)) };
        let h = v.dev.ctx().alloc_pd();
        let pd = ibv_pd { context: ctx, handle: h.number() };
        Box::into_raw(Box::new(VPd { pd, h: Some(h) })).cast()
    })
}

/// `ibv_dealloc_pd`: EBUSY while MRs or QPs use the PD.
///
/// # Safety
/// `pd` is a PD of this library.
#[no_mangle]
pub unsafe extern "C" fn ibv_dealloc_pd(pd: *mut ibv_pd) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a PD of this library.
        let Some(p) = (unsafe { vpd(pd) }) else { return errno_ret(Err(libc::EINVAL)) };
        let Some(h) = p.h.take() else { return errno_ret(Err(libc::EINVAL)) };
        match h.dealloc() {
            Ok(()) => {
                // SAFETY: the box was made by ibv_alloc_pd; nothing refers to it any more.
                drop(unsafe { Box::from_raw(pd.cast::<VPd>()) });
                0
            }
            Err((h, e)) => {
                p.h = Some(h);
                errno_ret(Err(errno_of(&e)))
            }
        }
    })
}

// ---------------------------------------------------------------- MR

/// A memory region over the application's memory (zero copy).
#[repr(C)]
pub struct VMr {
    /// What the application sees.
    pub mr: ibv_mr,
    /// The driver's region (deregistered when dropped).
    pub h: Option<Mr<'static, AnyBackend>>,
}

/// Access flags the engine implements; the optional-range flags (ACCESS_OPTIONAL_RANGE)
/// and relaxed ordering may be ignored by definition.
const ACCESS_SUPPORTED: u32 =
    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

/// `IBV_ACCESS_OPTIONAL_RANGE` of verbs.h (a macro bindgen does not evaluate).
const ACCESS_OPTIONAL_RANGE: u32 = ((IB_UVERBS_ACCESS_OPTIONAL_LAST << 1) - 1) & !(IBV_ACCESS_OPTIONAL_FIRST - 1);

fn access_of(access: c_int) -> Result<AccessFlags, c_int> {
    let a = access as u32 & !(ACCESS_OPTIONAL_RANGE | IBV_ACCESS_RELAXED_ORDERING);
    if a & !ACCESS_SUPPORTED != 0 {
        // ON_DEMAND, ZERO_BASED, MW_BIND, HUGETLB, FLUSH: not offered
        return Err(libc::EOPNOTSUPP);
    }
    // remote write or atomic access needs local write (IB spec 10.6.3.1; the kernel's check)
    if a & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) != 0 && a & IBV_ACCESS_LOCAL_WRITE == 0 {
        return Err(libc::EINVAL);
    }
    Ok(AccessFlags::from_bits_truncate(a))
}

/// `ibv_reg_mr`: register the application's memory at its own addresses.
///
/// # Safety
/// `pd` is a PD of this library; the memory stays allocated until `ibv_dereg_mr`.
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr(pd: *mut ibv_pd, addr: *mut c_void, len: usize, access: c_int) -> *mut ibv_mr {
    // SAFETY: forwarded.
    unsafe { ibv_reg_mr_iova2(pd, addr, len, addr as u64, access as u32) }
}

/// `ibv_reg_mr_iova`.
///
/// # Safety
/// As [`ibv_reg_mr`].
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr_iova(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: c_int,
) -> *mut ibv_mr {
    // SAFETY: forwarded.
    unsafe { ibv_reg_mr_iova2(pd, addr, len, iova, access as u32) }
}

/// `ibv_reg_mr_iova2`: register `len` bytes at `addr`, addressed by work requests and peers
/// as `[iova, iova + len)`. The engine's DMA reaches the memory in place.
///
/// # Safety
/// As [`ibv_reg_mr`].
#[no_mangle]
pub unsafe extern "C" fn ibv_reg_mr_iova2(
    pd: *mut ibv_pd,
    addr: *mut c_void,
    len: usize,
    iova: u64,
    access: u32,
) -> *mut ibv_mr {
    guard(std::ptr::null_mut(), || {
        null_on((|| {
            // SAFETY: the caller passes a PD of this library.
            let p = unsafe { vpd(pd) }.ok_or(libc::EINVAL)?;
            let h = p.h.as_ref().ok_or(libc::EINVAL)?;
            let acc = access_of(access as c_int)?;
            if len == 0 || addr.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: the verbs contract: the memory stays allocated until ibv_dereg_mr.
            let m = unsafe { h.reg_mr_raw(addr.cast(), len, iova, acc) }.map_err(|e| errno_of(&e))?;
            let mr = ibv_mr {
                context: p.pd.context,
                pd,
                addr,
                length: len,
                handle: m.lkey() >> 8,
                lkey: m.lkey(),
                rkey: m.rkey(),
            };
            Ok(Box::into_raw(Box::new(VMr { mr, h: Some(m) })).cast())
        })())
    })
}

/// `ibv_dereg_mr`.
///
/// # Safety
/// `mr` is an MR of this library.
#[no_mangle]
pub unsafe extern "C" fn ibv_dereg_mr(mr: *mut ibv_mr) -> c_int {
    guard(libc::EIO, || {
        if mr.is_null() {
            return errno_ret(Err(libc::EINVAL));
        }
        // SAFETY: MRs of this library are boxes made by ibv_reg_mr_iova2.
        let mut b = unsafe { Box::from_raw(mr.cast::<VMr>()) };
        let r = b.h.take().map_or(Ok(()), |m| m.dereg());
        errno_ret(r.map_err(|e| errno_of(&e)))
    })
}

// ---------------------------------------------------------------- completion channels

/// A completion channel: a pipe whose read end the application reads (`channel->fd`); the
/// interrupt thread writes an 8-byte CQ pointer per event.
#[repr(C)]
pub struct VChannel {
    /// What the application sees.
    pub ch: ibv_comp_channel,
    /// Read end.
    pub rd: OwnedFd,
    /// Write end.
    pub wr: OwnedFd,
}

/// `ibv_create_comp_channel`.
///
/// # Safety
/// `ctx` is an open context.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_comp_channel(ctx: *mut ibv_context) -> *mut ibv_comp_channel {
    guard(std::ptr::null_mut(), || {
        null_on((|| {
            // SAFETY: the caller passes an open context.
            unsafe { vcontext(ctx) }.ok_or(libc::EINVAL)?;
            let (rd, wr) = fd::pipe().map_err(|e| e.raw_os_error().unwrap_or(libc::EMFILE))?;
            let ch = ibv_comp_channel { context: ctx, fd: rd.as_raw_fd(), refcnt: 0 };
            Ok(Box::into_raw(Box::new(VChannel { ch, rd, wr })).cast())
        })())
    })
}

/// `ibv_destroy_comp_channel`: EBUSY while CQs use it.
///
/// # Safety
/// `ch` is a channel of this library.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_comp_channel(ch: *mut ibv_comp_channel) -> c_int {
    guard(libc::EIO, || {
        if ch.is_null() {
            return errno_ret(Err(libc::EINVAL));
        }
        // SAFETY: channels of this library are VChannel boxes; refcnt changes under the
        // context's mutex.
        let v = unsafe { &*ch.cast::<VChannel>() };
        // SAFETY: a channel's context is open while the channel exists.
        let Some(c) = (unsafe { vcontext(v.ch.context) }) else { return errno_ret(Err(libc::EINVAL)) };
        let _g = lock(&c.dev.objects);
        if v.ch.refcnt != 0 {
            return errno_ret(Err(libc::EBUSY));
        }
        // SAFETY: no CQ uses it: free the box.
        drop(unsafe { Box::from_raw(ch.cast::<VChannel>()) });
        0
    })
}

/// `ibv_get_cq_event`: wait for the next event of a channel.
///
/// # Safety
/// `ch` is a channel of this library, `cq` and `cq_context` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_cq_event(
    ch: *mut ibv_comp_channel,
    cq: *mut *mut ibv_cq,
    cq_context: *mut *mut c_void,
) -> c_int {
    guard(-1, || {
        if ch.is_null() {
            return minus_one(Err(libc::EINVAL));
        }
        let mut rec = [0u8; 8];
        // SAFETY: the caller passes a live channel.
        if !fd::read_exact(unsafe { (*ch).fd }, &mut rec) {
            return -1;
        }
        let p = u64::from_ne_bytes(rec) as usize as *mut ibv_cq;
        // SAFETY: the record is the address of a CQ of this channel (written by the interrupt
        // thread); the application destroys a CQ only after acknowledging its events.
        unsafe {
            *cq = p;
            *cq_context = (*p).cq_context;
        }
        0
    })
}

/// `ibv_ack_cq_events`.
///
/// # Safety
/// `cq` is a CQ of this library.
#[no_mangle]
pub unsafe extern "C" fn ibv_ack_cq_events(cq: *mut ibv_cq, n: u32) {
    guard((), || {
        if cq.is_null() {
            return;
        }
        // SAFETY: the CQ's mutex and cond were initialised at creation.
        unsafe {
            libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*cq).mutex).cast());
            (*cq).comp_events_completed = (*cq).comp_events_completed.wrapping_add(n);
            libc::pthread_cond_signal(std::ptr::addr_of_mut!((*cq).cond).cast());
            libc::pthread_mutex_unlock(std::ptr::addr_of_mut!((*cq).mutex).cast());
        }
    })
}

// ---------------------------------------------------------------- CQ

/// A completion queue.
#[repr(C)]
pub struct VCq {
    /// What the application sees.
    pub cq: ibv_cq,
    /// The driver's CQ.
    pub h: Option<Cq<AnyBackend>>,
    dev: Arc<OpenDevice>,
}

/// # Safety
/// `cq` is NULL or a CQ of this library.
unsafe fn vcq<'a>(cq: *mut ibv_cq) -> Option<&'a mut VCq> {
    // SAFETY: CQs of this library are the first field of a live VCq.
    (!cq.is_null()).then(|| unsafe { &mut *cq.cast::<VCq>() })
}

/// `ibv_create_cq`.
///
/// # Safety
/// `ctx` is an open context, `channel` NULL or a channel of it.
#[no_mangle]
pub unsafe extern "C" fn ibv_create_cq(
    ctx: *mut ibv_context,
    cqe: c_int,
    cq_context: *mut c_void,
    channel: *mut ibv_comp_channel,
    comp_vector: c_int,
) -> *mut ibv_cq {
    guard(std::ptr::null_mut(), || {
        null_on((|| {
            // SAFETY: the caller passes an open context.
            let v = unsafe { vcontext(ctx) }.ok_or(libc::EINVAL)?;
            if !(1..=MAX_WR).contains(&cqe) || comp_vector < 0 || comp_vector >= v.vctx.context.num_comp_vectors {
                return Err(libc::EINVAL);
            }
            let h = v.dev.ctx().create_cq(cqe as u32).map_err(|e| errno_of(&e))?;
            let n = h.number();
            let size = h.size() as c_int;
            // SAFETY: ibv_cq is plain data (its mutex and cond are initialised below).
            let mut b = Box::new(VCq { cq: unsafe { std::mem::zeroed() }, h: Some(h), dev: Arc::clone(&v.dev) });
            b.cq.context = ctx;
            b.cq.channel = channel;
            b.cq.cq_context = cq_context;
            b.cq.handle = n;
            b.cq.cqe = size;
            // SAFETY: the box does not move until it is freed by ibv_destroy_cq.
            unsafe { init_sync(&mut b.cq.mutex, &mut b.cq.cond) };
            let p = Box::into_raw(b);
            if !channel.is_null() {
                let _g = lock(&v.dev.objects);
                // SAFETY: the caller passes a channel of this context.
                let ch = unsafe { &mut *channel.cast::<VChannel>() };
                ch.ch.refcnt += 1;
                v.dev.listeners().cqs.insert(n, (ch.wr.as_raw_fd(), p as usize));
            }
            Ok(p.cast())
        })())
    })
}

/// `ibv_destroy_cq`: EBUSY while QPs complete into it.
///
/// # Safety
/// `cq` is a CQ of this library.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_cq(cq: *mut ibv_cq) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a CQ of this library.
        let Some(c) = (unsafe { vcq(cq) }) else { return errno_ret(Err(libc::EINVAL)) };
        let Some(h) = c.h.take() else { return errno_ret(Err(libc::EINVAL)) };
        let n = h.number();
        if let Err((h, e)) = h.destroy() {
            c.h = Some(h);
            return errno_ret(Err(errno_of(&e)));
        }
        let dev = Arc::clone(&c.dev);
        dev.listeners().cqs.remove(&n);
        if !c.cq.channel.is_null() {
            let _g = lock(&dev.objects);
            // SAFETY: the channel outlives its CQs (its destroy fails while refcnt > 0).
            unsafe { (*c.cq.channel).refcnt -= 1 };
        }
        // SAFETY: set up at creation; the box is ours to free.
        unsafe {
            destroy_sync(&mut c.cq.mutex, &mut c.cq.cond);
            drop(Box::from_raw(cq.cast::<VCq>()));
        }
        0
    })
}

/// `context->ops.req_notify_cq`: arm the engine's CQ for one event.
pub unsafe extern "C" fn req_notify_cq(cq: *mut ibv_cq, solicited_only: c_int) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a CQ of this library.
        let Some(h) = (unsafe { vcq(cq) }).and_then(|c| c.h.as_ref()) else { return libc::EINVAL };
        match h.arm(solicited_only != 0) {
            Ok(()) => 0,
            Err(e) => errno_of(&e),
        }
    })
}

fn wc_of(w: &WorkCompletion) -> ibv_wc {
    // SAFETY: ibv_wc is plain data.
    let mut c: ibv_wc = unsafe { std::mem::zeroed() };
    c.wr_id = w.wr_id;
    c.status = u32::from(w.status.code());
    c.opcode = match w.opcode {
        CqeOpcode::Send => IBV_WC_SEND,
        CqeOpcode::Write => IBV_WC_RDMA_WRITE,
        CqeOpcode::Read => IBV_WC_RDMA_READ,
        CqeOpcode::AtomicCas => IBV_WC_COMP_SWAP,
        CqeOpcode::AtomicFaa => IBV_WC_FETCH_ADD,
        CqeOpcode::RecvWriteImm => IBV_WC_RECV_RDMA_WITH_IMM,
        CqeOpcode::Recv | CqeOpcode::RecvImm | CqeOpcode::RecvInv => IBV_WC_RECV,
    };
    c.byte_len = w.byte_len;
    if let Some(imm) = w.imm {
        // the wire's four bytes, as the application gave them (`__be32`)
        c.__bindgen_anon_1.imm_data = imm.to_be();
        c.wc_flags |= IBV_WC_WITH_IMM;
    } else if let Some(k) = w.invalidated {
        c.__bindgen_anon_1.invalidated_rkey = k;
        c.wc_flags |= IBV_WC_WITH_INV;
    }
    c.qp_num = w.qpn;
    c.src_qp = w.src_qp;
    c
}

/// `context->ops.poll_cq`: up to `n` completions into `wc`; the number, or -1.
pub unsafe extern "C" fn poll_cq(cq: *mut ibv_cq, n: c_int, wc: *mut ibv_wc) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes a CQ of this library.
        let Some(h) = (unsafe { vcq(cq) }).and_then(|c| c.h.as_ref()) else { return -1 };
        let mut buf = [WorkCompletion::EMPTY; 16];
        let mut done = 0usize;
        let want = n.max(0) as usize;
        while done < want {
            let k = (want - done).min(buf.len());
            let got = match h.poll(&mut buf[..k]) {
                Ok(g) => g,
                Err(_) => return if done > 0 { done as c_int } else { -1 },
            };
            for (i, w) in buf[..got].iter().enumerate() {
                // SAFETY: the caller passes room for `n` completions; done + i < n.
                unsafe { *wc.add(done + i) = wc_of(w) };
            }
            done += got;
            if got < k {
                break;
            }
        }
        if done == 0 {
            // An application polling in a loop would otherwise keep a core from the engine's
            // thread (on a machine with few cores, the simulated engine is what it waits for).
            std::thread::yield_now();
        }
        done as c_int
    })
}

// ---------------------------------------------------------------- QP

/// The attributes a QP was given (the engine keeps what it needs; `ibv_query_qp` reports
/// these).
#[derive(Clone, Copy)]
struct QpShadow {
    attr: ibv_qp_attr,
    dest_mac: [u8; 6],
}

/// A queue pair.
#[repr(C)]
pub struct VQp {
    /// What the application sees.
    pub qp: ibv_qp,
    /// The driver's QP.
    pub h: Option<Qp<AnyBackend>>,
    dev: Arc<OpenDevice>,
    /// The state (set to ERR by the interrupt thread when the engine moves the QP there).
    state: Arc<AtomicU32>,
    shadow: Mutex<QpShadow>,
    cap: ibv_qp_cap,
    sq_sig_all: bool,
}

/// # Safety
/// `qp` is NULL or a QP of this library.
unsafe fn vqp<'a>(qp: *mut ibv_qp) -> Option<&'a mut VQp> {
    // SAFETY: QPs of this library are the first field of a live VQp.
    (!qp.is_null()).then(|| unsafe { &mut *qp.cast::<VQp>() })
}

/// `ibv_create_qp`: an RC QP (UD, UC, XRC and SRQs are not offered: EOPNOTSUPP / EINVAL).
///
/// # Safety
/// `pd` is a PD of this library, `attr` valid (its `cap` is updated to what the QP got).
#[no_mangle]
pub unsafe extern "C" fn ibv_create_qp(pd: *mut ibv_pd, attr: *mut ibv_qp_init_attr) -> *mut ibv_qp {
    guard(std::ptr::null_mut(), || {
        null_on((|| {
            // SAFETY: the caller passes a PD of this library and a valid attribute struct.
            let (p, a) = unsafe { (vpd(pd).ok_or(libc::EINVAL)?, attr.as_mut().ok_or(libc::EINVAL)?) };
            let h = p.h.as_ref().ok_or(libc::EINVAL)?;
            // SAFETY: the PD's context is an open context.
            let v: &VContext = unsafe { vcontext(p.pd.context) }.ok_or(libc::EINVAL)?;
            if a.qp_type != IBV_QPT_RC {
                return Err(libc::EOPNOTSUPP);
            }
            if !a.srq.is_null() {
                return Err(libc::EINVAL);
            }
            // SAFETY: the caller passes CQs of this library.
            let (scq, rcq) = unsafe { (vcq(a.send_cq).ok_or(libc::EINVAL)?, vcq(a.recv_cq).ok_or(libc::EINVAL)?) };
            let c = &a.cap;
            if c.max_send_wr > MAX_WR as u32
                || c.max_recv_wr > MAX_WR as u32
                || c.max_send_sge > SQ_MAX_SGE as u32
                || c.max_recv_sge > RQ_MAX_SGE as u32
                || c.max_inline_data > MAX_INLINE
            {
                return Err(libc::EINVAL);
            }
            let (sc, rc) = (scq.h.as_ref().ok_or(libc::EINVAL)?, rcq.h.as_ref().ok_or(libc::EINVAL)?);
            let q = h.create_qp(sc, rc, c.max_send_wr.max(1), c.max_recv_wr.max(1)).map_err(|e| errno_of(&e))?;
            let (sd, rd) = q.depths().map_err(|e| errno_of(&e))?;
            let cap = ibv_qp_cap {
                max_send_wr: sd,
                max_recv_wr: rd,
                max_send_sge: SQ_MAX_SGE as u32,
                max_recv_sge: RQ_MAX_SGE as u32,
                max_inline_data: MAX_INLINE,
            };
            a.cap = cap;
            let qpn = q.qpn();
            // SAFETY: ibv_qp is plain data (mutex and cond initialised below).
            let mut qc: ibv_qp = unsafe { std::mem::zeroed() };
            qc.context = p.pd.context;
            qc.qp_context = a.qp_context;
            qc.pd = pd;
            qc.send_cq = a.send_cq;
            qc.recv_cq = a.recv_cq;
            qc.handle = qpn;
            qc.qp_num = qpn;
            qc.state = IBV_QPS_RESET;
            qc.qp_type = IBV_QPT_RC;
            // SAFETY: ibv_qp_attr is plain data.
            let mut sattr: ibv_qp_attr = unsafe { std::mem::zeroed() };
            sattr.port_num = 1;
            sattr.cap = cap;
            let state = Arc::new(AtomicU32::new(IBV_QPS_RESET));
            let mut b = Box::new(VQp {
                qp: qc,
                h: Some(q),
                dev: Arc::clone(&v.dev),
                state: Arc::clone(&state),
                shadow: Mutex::new(QpShadow { attr: sattr, dest_mac: [0; 6] }),
                cap,
                sq_sig_all: a.sq_sig_all != 0,
            });
            // SAFETY: the box does not move until ibv_destroy_qp frees it.
            unsafe { init_sync(&mut b.qp.mutex, &mut b.qp.cond) };
            let ptr = Box::into_raw(b);
            v.dev.listeners().qps.insert(qpn, (v.async_wr.as_raw_fd(), ptr as usize, state));
            Ok(ptr.cast())
        })())
    })
}

/// `ibv_destroy_qp`.
///
/// # Safety
/// `qp` is a QP of this library.
#[no_mangle]
pub unsafe extern "C" fn ibv_destroy_qp(qp: *mut ibv_qp) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a QP of this library.
        let Some(q) = (unsafe { vqp(qp) }) else { return errno_ret(Err(libc::EINVAL)) };
        let Some(h) = q.h.take() else { return errno_ret(Err(libc::EINVAL)) };
        let n = h.qpn();
        if let Err((h, e)) = h.destroy() {
            q.h = Some(h);
            return errno_ret(Err(errno_of(&e)));
        }
        {
            // an error of this QP the interrupt handler has not taken yet goes with it (else
            // it would move the next QP given this number to ERR)
            let mut l = q.dev.listeners();
            q.dev.ctx().lock().forget_qp_error(n);
            l.qps.remove(&n);
        }
        // SAFETY: set up at creation; the box is ours to free.
        unsafe {
            destroy_sync(&mut q.qp.mutex, &mut q.qp.cond);
            drop(Box::from_raw(qp.cast::<VQp>()));
        }
        0
    })
}

/// (required, optional) attribute masks of an RC QP's transitions, as the kernel's
/// `ib_modify_qp_is_ok` table has them (`IBV_QP_STATE` implied).
fn transition(from: u32, to: u32) -> Option<(u32, u32)> {
    use IBV_QP_ACCESS_FLAGS as ACC;
    let any = |_| Some((0, 0));
    match (from, to) {
        (_, IBV_QPS_RESET) | (_, IBV_QPS_ERR) => any(()),
        (IBV_QPS_RESET, IBV_QPS_INIT) => Some((IBV_QP_PKEY_INDEX | IBV_QP_PORT | ACC, 0)),
        (IBV_QPS_INIT, IBV_QPS_INIT) => Some((0, IBV_QP_PKEY_INDEX | IBV_QP_PORT | ACC)),
        (IBV_QPS_INIT, IBV_QPS_RTR) => Some((
            IBV_QP_AV
                | IBV_QP_PATH_MTU
                | IBV_QP_DEST_QPN
                | IBV_QP_RQ_PSN
                | IBV_QP_MAX_DEST_RD_ATOMIC
                | IBV_QP_MIN_RNR_TIMER,
            IBV_QP_ALT_PATH | ACC | IBV_QP_PKEY_INDEX,
        )),
        (IBV_QPS_RTR, IBV_QPS_RTS) => Some((
            IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
            IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | ACC | IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
        )),
        (IBV_QPS_RTS, IBV_QPS_RTS) | (IBV_QPS_SQD, IBV_QPS_RTS) => {
            Some((0, IBV_QP_CUR_STATE | ACC | IBV_QP_ALT_PATH | IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER))
        }
        (IBV_QPS_RTS, IBV_QPS_SQD) => Some((0, IBV_QP_EN_SQD_ASYNC_NOTIFY)),
        (IBV_QPS_SQD, IBV_QPS_SQD) => Some((
            0,
            IBV_QP_AV
                | IBV_QP_ALT_PATH
                | ACC
                | IBV_QP_PKEY_INDEX
                | IBV_QP_MIN_RNR_TIMER
                | IBV_QP_PATH_MIG_STATE
                | IBV_QP_TIMEOUT
                | IBV_QP_RETRY_CNT
                | IBV_QP_RNR_RETRY
                | IBV_QP_MAX_QP_RD_ATOMIC
                | IBV_QP_MAX_DEST_RD_ATOMIC,
        )),
        (IBV_QPS_SQE, IBV_QPS_RTS) => Some((0, IBV_QP_CUR_STATE | ACC)),
        _ => None,
    }
}

/// The attribute-mask bits the engine's QP context holds (the same bit positions).
const ENGINE_MASK: u32 = IBV_QP_STATE
    | IBV_QP_ACCESS_FLAGS
    | IBV_QP_AV
    | IBV_QP_PATH_MTU
    | IBV_QP_TIMEOUT
    | IBV_QP_RETRY_CNT
    | IBV_QP_RNR_RETRY
    | IBV_QP_RQ_PSN
    | IBV_QP_MAX_QP_RD_ATOMIC
    | IBV_QP_MIN_RNR_TIMER
    | IBV_QP_SQ_PSN
    | IBV_QP_MAX_DEST_RD_ATOMIC
    | IBV_QP_DEST_QPN;

fn qp_state_of(s: u32) -> Result<QpState, c_int> {
    QpState::try_from(s as u8).map_err(|_| libc::EINVAL)
}

/// Check and apply a modify.
fn modify(q: &VQp, a: &ibv_qp_attr, mask: u32) -> Result<(), c_int> {
    let h = q.h.as_ref().ok_or(libc::EINVAL)?;
    let mut sh = lock(&q.shadow);
    let cur = q.state.load(Ordering::Relaxed);
    if mask & IBV_QP_CUR_STATE != 0 && a.cur_qp_state != cur {
        return Err(libc::EINVAL);
    }
    let to = if mask & IBV_QP_STATE != 0 { a.qp_state } else { cur };
    let (req, opt) = transition(cur, to).ok_or(libc::EINVAL)?;
    let rest = mask & !IBV_QP_STATE;
    if rest & req != req || rest & !(req | opt) != 0 {
        return Err(libc::EINVAL);
    }
    let max_rd = h_max_rd(q);
    let bad = (mask & IBV_QP_PORT != 0 && a.port_num != 1)
        || (mask & IBV_QP_PKEY_INDEX != 0 && a.pkey_index != 0)
        || (mask & IBV_QP_PATH_MTU != 0 && !(IBV_MTU_256..=q.dev.port.max_mtu).contains(&a.path_mtu))
        || (mask & IBV_QP_MAX_DEST_RD_ATOMIC != 0 && u32::from(a.max_dest_rd_atomic) > max_rd)
        || (mask & IBV_QP_TIMEOUT != 0 && a.timeout > 31)
        || (mask & IBV_QP_RETRY_CNT != 0 && a.retry_cnt > 7)
        || (mask & IBV_QP_RNR_RETRY != 0 && a.rnr_retry > 7)
        || (mask & IBV_QP_MIN_RNR_TIMER != 0 && a.min_rnr_timer > 31)
        || (mask & IBV_QP_DEST_QPN != 0 && a.dest_qp_num > 0xFF_FFFF)
        || (mask & IBV_QP_RQ_PSN != 0 && a.rq_psn > 0xFF_FFFF)
        || (mask & IBV_QP_SQ_PSN != 0 && a.sq_psn > 0xFF_FFFF);
    if bad {
        return Err(libc::EINVAL);
    }
    // a QP's remote access rights (the MR rule that remote write needs local write does not
    // apply to QPs)
    let acc = if mask & IBV_QP_ACCESS_FLAGS != 0 {
        let f = a.qp_access_flags & !IBV_ACCESS_LOCAL_WRITE;
        if f & !ACCESS_SUPPORTED != 0 {
            return Err(libc::EINVAL);
        }
        Some(AccessFlags::from_bits_truncate(a.qp_access_flags & ACCESS_SUPPORTED))
    } else {
        None
    };
    let mut mac = sh.dest_mac;
    if mask & IBV_QP_AV != 0 {
        // RoCE: the address vector must carry a GRH whose source is GID index 0
        let ah = &a.ah_attr;
        if ah.is_global == 0 || ah.grh.sgid_index != 0 || (ah.port_num != 0 && ah.port_num != 1) {
            return Err(libc::EINVAL);
        }
        // SAFETY: ibv_gid is a union of plain bytes.
        let g = Ipv6Addr::from(unsafe { ah.grh.dgid.raw });
        let ip = g.to_ipv4_mapped().ok_or(libc::EINVAL)?;
        mac = q.dev.resolve(ip)?;
    }
    // the new attributes over the ones set before
    let mut n = sh.attr;
    let m = |bit: u32| mask & bit != 0;
    if m(IBV_QP_ACCESS_FLAGS) {
        n.qp_access_flags = a.qp_access_flags;
    }
    if m(IBV_QP_AV) {
        n.ah_attr = a.ah_attr;
    }
    if m(IBV_QP_PATH_MTU) {
        n.path_mtu = a.path_mtu;
    }
    if m(IBV_QP_DEST_QPN) {
        n.dest_qp_num = a.dest_qp_num;
    }
    if m(IBV_QP_RQ_PSN) {
        n.rq_psn = a.rq_psn;
    }
    if m(IBV_QP_SQ_PSN) {
        n.sq_psn = a.sq_psn;
    }
    if m(IBV_QP_TIMEOUT) {
        n.timeout = a.timeout;
    }
    if m(IBV_QP_RETRY_CNT) {
        n.retry_cnt = a.retry_cnt;
    }
    if m(IBV_QP_RNR_RETRY) {
        n.rnr_retry = a.rnr_retry;
    }
    if m(IBV_QP_MIN_RNR_TIMER) {
        n.min_rnr_timer = a.min_rnr_timer;
    }
    if m(IBV_QP_MAX_QP_RD_ATOMIC) {
        // As requester the QP keeps at most this many READs/atomics outstanding; fewer than
        // the peer allows is always correct, so a larger value (perftest passes the peer's
        // responder resources, 128 from rxe) is reduced to the engine's limit instead of
        // refused. The responder side (max_dest_rd_atomic) cannot be reduced and is checked.
        n.max_rd_atomic = a.max_rd_atomic.min(max_rd as u8);
    }
    if m(IBV_QP_MAX_DEST_RD_ATOMIC) {
        n.max_dest_rd_atomic = a.max_dest_rd_atomic;
    }
    if m(IBV_QP_PKEY_INDEX) {
        n.pkey_index = a.pkey_index;
    }
    if m(IBV_QP_EN_SQD_ASYNC_NOTIFY) {
        n.en_sqd_async_notify = a.en_sqd_async_notify;
    }
    // SAFETY: ibv_gid is a union of plain bytes.
    let dgid = Ipv6Addr::from(unsafe { n.ah_attr.grh.dgid.raw });
    let d = QpAttr {
        state: qp_state_of(to)?,
        access: acc.unwrap_or_else(|| AccessFlags::from_bits_truncate(n.qp_access_flags & ACCESS_SUPPORTED)),
        path_mtu: PathMtu::try_from(n.path_mtu as u8).unwrap_or(PathMtu::Mtu1024),
        dest_qpn: n.dest_qp_num,
        rq_psn: n.rq_psn,
        sq_psn: n.sq_psn,
        encap: Encap::RoceV2Ipv4,
        dest_mac: mac,
        dest_ip: dgid.to_ipv4_mapped().map_or(std::net::IpAddr::V6(dgid), std::net::IpAddr::V4),
        vlan: None,
        dscp: n.ah_attr.grh.traffic_class >> 2,
        hop_limit: n.ah_attr.grh.hop_limit,
        timeout: n.timeout,
        retry_cnt: n.retry_cnt,
        rnr_retry: n.rnr_retry,
        min_rnr_timer: n.min_rnr_timer,
        max_rd_atomic: n.max_rd_atomic,
        max_dest_rd_atomic: n.max_dest_rd_atomic,
    };
    let emask = QpAttrMask::from_bits_truncate(mask & ENGINE_MASK | IBV_QP_STATE);
    h.modify(&d, emask).map_err(|e| errno_of(&e))?;
    n.qp_state = to;
    n.cur_qp_state = to;
    sh.attr = n;
    sh.dest_mac = mac;
    q.state.store(to, Ordering::Relaxed);
    Ok(())
}

fn h_max_rd(q: &VQp) -> u32 {
    q.dev.ctx().lock().max_rd_atomic()
}

/// `ibv_modify_qp`: the kernel's checks of the transition and its attribute mask, then the
/// engine's QP_MODIFY; the next hop's MAC of a new address vector is resolved (ARP).
///
/// # Safety
/// `qp` is a QP of this library, `attr` valid.
#[no_mangle]
pub unsafe extern "C" fn ibv_modify_qp(qp: *mut ibv_qp, attr: *mut ibv_qp_attr, mask: c_int) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a QP of this library and a valid attribute struct.
        let (Some(q), Some(a)) = (unsafe { vqp(qp) }, unsafe { attr.as_ref() }) else {
            return errno_ret(Err(libc::EINVAL));
        };
        let r = modify(q, a, mask as u32);
        if r.is_ok() && mask as u32 & IBV_QP_STATE != 0 {
            q.qp.state = a.qp_state;
        }
        errno_ret(r)
    })
}

/// `ibv_query_qp`: the attributes as set, with the state the engine reports.
///
/// # Safety
/// `qp` is a QP of this library, `attr` and `init` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_qp(
    qp: *mut ibv_qp,
    attr: *mut ibv_qp_attr,
    _mask: c_int,
    init: *mut ibv_qp_init_attr,
) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a QP of this library.
        let Some(q) = (unsafe { vqp(qp) }) else { return errno_ret(Err(libc::EINVAL)) };
        let Some(h) = q.h.as_ref() else { return errno_ret(Err(libc::EINVAL)) };
        let mut a = lock(&q.shadow).attr;
        match h.query() {
            Ok(c) => {
                a.qp_state = u32::from(c.state.code());
                a.cur_qp_state = a.qp_state;
                q.state.store(a.qp_state, Ordering::Relaxed);
            }
            Err(e) => return errno_ret(Err(errno_of(&e))),
        }
        a.cap = q.cap;
        a.port_num = 1;
        // SAFETY: the caller passes writable structs.
        unsafe {
            if !attr.is_null() {
                *attr = a;
            }
            if !init.is_null() {
                let i = &mut *init;
                i.qp_context = q.qp.qp_context;
                i.send_cq = q.qp.send_cq;
                i.recv_cq = q.qp.recv_cq;
                i.srq = std::ptr::null_mut();
                i.cap = q.cap;
                i.qp_type = IBV_QPT_RC;
                i.sq_sig_all = c_int::from(q.sq_sig_all);
            }
        }
        0
    })
}

/// Inline payload gathered from a request's SGEs.
type InlineBuf = [u8; MAX_INLINE as usize];

/// One send work request converted, or the errno it fails with.
fn convert_send(
    q: &VQp,
    w: &ibv_send_wr,
    sges: &mut [Sge; SQ_MAX_SGE],
    inline: &mut InlineBuf,
) -> Result<(WrOp, usize, Option<usize>), c_int> {
    let n = usize::try_from(w.num_sge).map_err(|_| libc::EINVAL)?;
    if n > q.cap.max_send_sge as usize || (n > 0 && w.sg_list.is_null()) {
        return Err(libc::EINVAL);
    }
    // SAFETY: the application passes `num_sge` SGEs at `sg_list`.
    let list = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(w.sg_list, n) } };
    // SAFETY: the unions are read by the member the opcode selects; all are plain data.
    let (rdma, atomic, imm, inv) =
        unsafe { (w.wr.rdma, w.wr.atomic, w.__bindgen_anon_1.imm_data, w.__bindgen_anon_1.invalidate_rkey) };
    let op = match w.opcode {
        IBV_WR_SEND => WrOp::Send,
        IBV_WR_SEND_WITH_IMM => WrOp::SendImm(u32::from_be(imm)),
        IBV_WR_SEND_WITH_INV => WrOp::SendInv(inv),
        IBV_WR_RDMA_WRITE => WrOp::Write { remote_addr: rdma.remote_addr, rkey: rdma.rkey },
        IBV_WR_RDMA_WRITE_WITH_IMM => {
            WrOp::WriteImm { remote_addr: rdma.remote_addr, rkey: rdma.rkey, imm: u32::from_be(imm) }
        }
        IBV_WR_RDMA_READ => WrOp::Read { remote_addr: rdma.remote_addr, rkey: rdma.rkey },
        IBV_WR_ATOMIC_CMP_AND_SWP => WrOp::CmpSwap {
            remote_addr: atomic.remote_addr,
            rkey: atomic.rkey,
            compare: atomic.compare_add,
            swap: atomic.swap,
        },
        IBV_WR_ATOMIC_FETCH_AND_ADD => {
            WrOp::FetchAdd { remote_addr: atomic.remote_addr, rkey: atomic.rkey, add: atomic.compare_add }
        }
        // LOCAL_INV, BIND_MW, TSO, driver opcodes: not offered
        _ => return Err(libc::EINVAL),
    };
    let is_inline = w.send_flags & IBV_SEND_INLINE != 0
        && matches!(op, WrOp::Send | WrOp::SendImm(_) | WrOp::SendInv(_) | WrOp::Write { .. } | WrOp::WriteImm { .. });
    if is_inline {
        let mut len = 0usize;
        for s in list {
            let l = s.length as usize;
            if len + l > inline.len() {
                return Err(libc::EINVAL);
            }
            // SAFETY: an inline SGE's address is the application's own memory of `length`
            // bytes (no key is involved), copied now as verbs requires.
            unsafe { std::ptr::copy_nonoverlapping(s.addr as usize as *const u8, inline[len..].as_mut_ptr(), l) };
            len += l;
        }
        return Ok((op, 0, Some(len)));
    }
    for (d, s) in sges.iter_mut().zip(list) {
        *d = Sge { addr: s.addr, len: s.length, lkey: s.lkey };
    }
    Ok((op, n, None))
}

/// `context->ops.post_send`: the chain up to the first bad request is posted (one
/// doorbell); `*bad_wr` names the first one not posted.
pub unsafe extern "C" fn post_send(qp: *mut ibv_qp, wr: *mut ibv_send_wr, bad_wr: *mut *mut ibv_send_wr) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a QP of this library.
        let Some(q) = (unsafe { vqp(qp) }) else { return libc::EINVAL };
        let set_bad = |w: *mut ibv_send_wr| {
            if !bad_wr.is_null() {
                // SAFETY: the caller passes a writable pointer.
                unsafe { *bad_wr = w };
            }
        };
        let Some(h) = q.h.as_ref() else {
            set_bad(wr);
            return libc::EINVAL;
        };
        let st = q.state.load(Ordering::Relaxed);
        if !matches!(st, IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_ERR) {
            set_bad(wr);
            return libc::EINVAL;
        }
        // convert the chain into owned storage, stopping at the first bad request
        let free = h.space().map(|s| s.0).unwrap_or(0);
        let mut conv: Vec<(u64, WrOp, usize, Option<usize>, u32)> = Vec::new();
        let mut sges: Vec<[Sge; SQ_MAX_SGE]> = Vec::new();
        let mut inl: Vec<InlineBuf> = Vec::new();
        let mut cur = wr;
        let mut err = 0;
        while !cur.is_null() {
            if conv.len() == free {
                err = libc::ENOMEM;
                break;
            }
            // SAFETY: the application's chain of valid requests.
            let w = unsafe { &*cur };
            let mut s = [Sge::default(); SQ_MAX_SGE];
            let mut b = [0u8; MAX_INLINE as usize];
            match convert_send(q, w, &mut s, &mut b) {
                Ok((op, n, il)) => {
                    conv.push((w.wr_id, op, n, il, w.send_flags));
                    sges.push(s);
                    inl.push(b);
                }
                Err(e) => {
                    err = e;
                    break;
                }
            }
            cur = w.next;
        }
        let wrs: Vec<SendWr<'_>> = conv
            .iter()
            .enumerate()
            .map(|(i, &(wr_id, op, n, il, flags))| SendWr {
                wr_id,
                op,
                sges: &sges[i][..n],
                inline: il.map(|l| &inl[i][..l]),
                signaled: q.sq_sig_all || flags & IBV_SEND_SIGNALED != 0,
                solicited: flags & IBV_SEND_SOLICITED != 0,
                fence: flags & IBV_SEND_FENCE != 0,
            })
            .collect();
        if !wrs.is_empty() {
            if let Err(e) = h.post_send(&wrs) {
                set_bad(wr);
                return errno_of(&e);
            }
        }
        if err != 0 {
            set_bad(cur);
        }
        err
    })
}

/// `context->ops.post_recv`.
pub unsafe extern "C" fn post_recv(qp: *mut ibv_qp, wr: *mut ibv_recv_wr, bad_wr: *mut *mut ibv_recv_wr) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes a QP of this library.
        let Some(q) = (unsafe { vqp(qp) }) else { return libc::EINVAL };
        let set_bad = |w: *mut ibv_recv_wr| {
            if !bad_wr.is_null() {
                // SAFETY: the caller passes a writable pointer.
                unsafe { *bad_wr = w };
            }
        };
        let Some(h) = q.h.as_ref() else {
            set_bad(wr);
            return libc::EINVAL;
        };
        if q.state.load(Ordering::Relaxed) == IBV_QPS_RESET {
            set_bad(wr);
            return libc::EINVAL;
        }
        let free = h.space().map(|s| s.1).unwrap_or(0);
        let mut ids = Vec::new();
        let mut sges: Vec<([Sge; RQ_MAX_SGE], usize)> = Vec::new();
        let mut cur = wr;
        let mut err = 0;
        while !cur.is_null() {
            if ids.len() == free {
                err = libc::ENOMEM;
                break;
            }
            // SAFETY: the application's chain of valid requests.
            let w = unsafe { &*cur };
            let n = usize::try_from(w.num_sge).unwrap_or(usize::MAX);
            if n > q.cap.max_recv_sge as usize || (n > 0 && w.sg_list.is_null()) {
                err = libc::EINVAL;
                break;
            }
            let mut s = [Sge::default(); RQ_MAX_SGE];
            // SAFETY: the application passes `num_sge` SGEs.
            let list = if n == 0 { &[][..] } else { unsafe { std::slice::from_raw_parts(w.sg_list, n) } };
            for (d, x) in s.iter_mut().zip(list) {
                *d = Sge { addr: x.addr, len: x.length, lkey: x.lkey };
            }
            ids.push(w.wr_id);
            sges.push((s, n));
            cur = w.next;
        }
        let wrs: Vec<RecvWr<'_>> =
            ids.iter().zip(&sges).map(|(&wr_id, (s, n))| RecvWr { wr_id, sges: &s[..*n] }).collect();
        if !wrs.is_empty() {
            if let Err(e) = h.post_recv(&wrs) {
                set_bad(wr);
                return errno_of(&e);
            }
        }
        if err != 0 {
            set_bad(cur);
        }
        err
    })
}

// ---------------------------------------------------------------- async events

/// `ibv_get_async_event`: wait for the next async event of a context (QP errors the engine
/// reports).
///
/// # Safety
/// `ctx` is an open context, `ev` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_async_event(ctx: *mut ibv_context, ev: *mut ibv_async_event) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return minus_one(Err(libc::EINVAL)) };
        let mut rec = [0u8; 16];
        if !fd::read_exact(v.async_rd.as_raw_fd(), &mut rec) {
            return -1;
        }
        let element = u64::from_ne_bytes(rec[..8].try_into().unwrap_or_default());
        let ty = u32::from_ne_bytes(rec[8..12].try_into().unwrap_or_default());
        // SAFETY: the caller passes a writable event.
        let e = unsafe { &mut *ev };
        e.event_type = ty;
        match ty {
            IBV_EVENT_CQ_ERR => e.element.cq = element as usize as *mut ibv_cq,
            IBV_EVENT_QP_FATAL
            | IBV_EVENT_QP_REQ_ERR
            | IBV_EVENT_QP_ACCESS_ERR
            | IBV_EVENT_COMM_EST
            | IBV_EVENT_SQ_DRAINED
            | IBV_EVENT_PATH_MIG
            | IBV_EVENT_PATH_MIG_ERR
            | IBV_EVENT_QP_LAST_WQE_REACHED => e.element.qp = element as usize as *mut ibv_qp,
            _ => e.element.port_num = element as c_int,
        }
        0
    })
}

/// `ibv_ack_async_event`.
///
/// # Safety
/// `ev` came from [`ibv_get_async_event`].
#[no_mangle]
pub unsafe extern "C" fn ibv_ack_async_event(ev: *mut ibv_async_event) {
    guard((), || {
        // SAFETY: the caller passes an event of this library; its element is a live object.
        unsafe {
            let e = &*ev;
            match e.event_type {
                IBV_EVENT_CQ_ERR => {
                    let cq = e.element.cq;
                    libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*cq).mutex).cast());
                    (*cq).async_events_completed += 1;
                    libc::pthread_cond_signal(std::ptr::addr_of_mut!((*cq).cond).cast());
                    libc::pthread_mutex_unlock(std::ptr::addr_of_mut!((*cq).mutex).cast());
                }
                IBV_EVENT_QP_FATAL
                | IBV_EVENT_QP_REQ_ERR
                | IBV_EVENT_QP_ACCESS_ERR
                | IBV_EVENT_COMM_EST
                | IBV_EVENT_SQ_DRAINED
                | IBV_EVENT_PATH_MIG
                | IBV_EVENT_PATH_MIG_ERR
                | IBV_EVENT_QP_LAST_WQE_REACHED => {
                    let qp = e.element.qp;
                    libc::pthread_mutex_lock(std::ptr::addr_of_mut!((*qp).mutex).cast());
                    (*qp).events_completed += 1;
                    libc::pthread_cond_signal(std::ptr::addr_of_mut!((*qp).cond).cast());
                    libc::pthread_mutex_unlock(std::ptr::addr_of_mut!((*qp).mutex).cast());
                }
                _ => {}
            }
        }
    })
}
