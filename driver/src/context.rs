//! Owned verbs objects: a [`Context`] shares one opened [`Device`] between threads, and the
//! objects made from it ([`Pd`], [`Mr`], [`Cq`], [`Qp`]) are handles that free what they
//! hold in the engine when dropped (or by their explicit `dealloc` / `dereg` / `destroy`,
//! which report errors). They cannot be made from integers, and an object of one context
//! passed to another is [`DriverError::ForeignHandle`].
//!
//! Lifetimes follow the verbs rules: an MR or a QP keeps its PD alive, a QP keeps its CQs
//! alive, so `Pd::dealloc` and `Cq::destroy` of an object still in use fail with
//! [`DriverError::Busy`] (what `ibv_dealloc_pd` / `ibv_destroy_cq` report as `EBUSY`).
//!
//! Memory regions are zero copy: [`Pd::reg_mr`] registers memory the caller lends for the
//! region's lifetime, [`Pd::reg_mr_owned`] memory the region owns; the engine's DMA reads
//! and writes it in place (the backend maps it with [`Backend::map_user`]). The CPU side
//! reads and writes it through [`Mr::read`] / [`Mr::write`], which copy without creating
//! Rust references to memory the engine may be writing.
//!
//! Every call takes the context's lock for the time of its register and ring accesses, so
//! posting on a QP and polling its CQ work from different threads.
//!
//! ```text
//!   let ctx = Context::new(Device::open(backend)?);
//!   let pd = ctx.alloc_pd();
//!   let mr = pd.reg_mr_owned(vec![0; 4096].into(), access)?;
//!   let cq = ctx.create_cq(64)?;
//!   let qp = pd.create_qp(&cq, &cq, 64, 64)?;
//!   qp.modify(&attr, masks::INIT)?; ... qp.post_send(&[SendWr::new(1, WrOp::Send, &[mr.sge(0, 64)?])])?;
//!   cq.poll(&mut wc)?;
//! ```

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, MutexGuard};

use roce_model::contract::QpCtx;

use crate::backend::{Backend, DmaBuf};
use crate::device::Device;
use crate::error::{DriverError, Result};
use crate::verbs::{
    AccessFlags, CompletionQueue, MemoryRegion, ProtectionDomain, QpAttr, QpAttrMask, QueuePair, RecvWr, SendWr, Sge,
    WorkCompletion,
};

struct Shared<B: Backend> {
    dev: Mutex<Device<B>>,
}

impl<B: Backend> Shared<B> {
    fn lock(&self) -> MutexGuard<'_, Device<B>> {
        // A panic while the lock was held leaves the device as the last call left it; the
        // engine's state is in the engine, so carrying on is as good as it gets.
        self.dev.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// An opened device shared by the objects made from it.
pub struct Context<B: Backend> {
    shared: Arc<Shared<B>>,
}

impl<B: Backend> Clone for Context<B> {
    fn clone(&self) -> Self {
        Context { shared: Arc::clone(&self.shared) }
    }
}

impl<B: Backend> std::fmt::Debug for Context<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context").finish_non_exhaustive()
    }
}

impl<B: Backend> Context<B> {
    /// Share `dev` (opened, port configured and enabled).
    pub fn new(dev: Device<B>) -> Self {
        Context { shared: Arc::new(Shared { dev: Mutex::new(dev) }) }
    }

    /// The device, locked: for what the objects do not cover (port setup, counters,
    /// capabilities, interrupts).
    pub fn lock(&self) -> MutexGuard<'_, Device<B>> {
        self.shared.lock()
    }

    /// Allocate a protection domain.
    pub fn alloc_pd(&self) -> Pd<B> {
        let pd = self.lock().alloc_pd();
        Pd { inner: Arc::new(PdInner { shared: Arc::clone(&self.shared), pd }) }
    }

    /// Create a completion queue of at least `depth` entries.
    pub fn create_cq(&self, depth: u32) -> Result<Cq<B>> {
        let cq = self.lock().create_cq(depth)?;
        Ok(Cq { inner: Arc::new(CqInner { shared: Arc::clone(&self.shared), cq, live: true.into() }) })
    }

    /// The CQs whose arm fired since the last call (see [`Device::take_cq_events`]), as
    /// their [`Cq::number`]s.
    pub fn take_cq_events(&self) -> Vec<u32> {
        self.lock().take_cq_events().into_iter().map(|c| c.0).collect()
    }

    fn same(&self, other: &Arc<Shared<B>>) -> bool {
        Arc::ptr_eq(&self.shared, other)
    }
}

struct PdInner<B: Backend> {
    shared: Arc<Shared<B>>,
    pd: ProtectionDomain,
}

/// A protection domain. Regions and QPs made from it keep it alive.
pub struct Pd<B: Backend> {
    inner: Arc<PdInner<B>>,
}

impl<B: Backend> std::fmt::Debug for Pd<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pd").field("pd", &self.inner.pd.0).finish()
    }
}

impl<B: Backend> Pd<B> {
    /// The engine's PD number.
    pub fn number(&self) -> u32 {
        self.inner.pd.0
    }

    /// Free the PD; [`DriverError::Busy`] (and the PD back) while regions or QPs use it.
    pub fn dealloc(self) -> std::result::Result<(), (Self, DriverError)> {
        if Arc::strong_count(&self.inner) > 1 {
            return Err((self, DriverError::Busy("PD")));
        }
        Ok(())
    }

    /// Register memory the caller lends for the region's lifetime (zero copy).
    pub fn reg_mr<'m>(&self, mem: &'m mut [u8], access: AccessFlags) -> Result<Mr<'m, B>> {
        let (ptr, len) = (mem.as_mut_ptr(), mem.len());
        // SAFETY: `mem` is borrowed mutably for 'm, the lifetime of the returned region,
        // which unmaps it when dropped; nothing else can use the memory meanwhile.
        unsafe { self.register(ptr, len, ptr as u64, access, None) }
    }

    /// Register memory the region owns (zero copy); [`Mr::into_inner`] gives it back.
    pub fn reg_mr_owned(&self, mem: Box<[u8]>, access: AccessFlags) -> Result<Mr<'static, B>> {
        let len = mem.len();
        let ptr = Box::into_raw(mem).cast::<u8>();
        // SAFETY: the allocation is owned by the region from here on (freed by its Drop
        // after the unmap), so it outlives the mapping.
        let r = unsafe { self.register(ptr, len, ptr as u64, access, Some(len)) };
        if r.is_err() {
            // SAFETY: registration failed, so nothing maps the allocation; `ptr`/`len` are
            // the Box's own.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr, len)) });
        }
        r
    }

    /// Register `len` bytes at `addr` of memory the caller manages, addressed by work
    /// requests and peers as `[va, va + len)` (`ibv_reg_mr_iova2`).
    ///
    /// # Safety
    ///
    /// The memory must stay allocated until the region is dropped (or deregistered); the
    /// engine reads and writes it at any time until then.
    pub unsafe fn reg_mr_raw(&self, addr: *mut u8, len: usize, va: u64, access: AccessFlags) -> Result<Mr<'static, B>> {
        // SAFETY: the caller's contract is the one `register` needs.
        unsafe { self.register(addr, len, va, access, None) }
    }

    /// # Safety
    /// `ptr..ptr + len` stays allocated until the returned region is dropped.
    unsafe fn register<'m>(
        &self,
        ptr: *mut u8,
        len: usize,
        va: u64,
        access: AccessFlags,
        owned: Option<usize>,
    ) -> Result<Mr<'m, B>> {
        let mut d = self.inner.shared.lock();
        // SAFETY: forwarded from the caller.
        let buf = unsafe { d.backend().map_user(ptr, len)? };
        match d.reg_mr_at(self.inner.pd, &buf, 0, len, va, access) {
            Ok(mr) => Ok(Mr { pd: Arc::clone(&self.inner), mr, buf, ptr, owned, live: true, _mem: PhantomData }),
            Err(e) => {
                d.backend().unmap_user(buf);
                Err(e)
            }
        }
    }

    /// Create an RC QP completing into `send_cq` and `recv_cq` (state Reset), with at
    /// least `sq_depth` / `rq_depth` slots.
    pub fn create_qp(&self, send_cq: &Cq<B>, recv_cq: &Cq<B>, sq_depth: u32, rq_depth: u32) -> Result<Qp<B>> {
        for cq in [send_cq, recv_cq] {
            if !Arc::ptr_eq(&cq.inner.shared, &self.inner.shared) {
                return Err(DriverError::ForeignHandle("CQ"));
            }
        }
        let qp = self.inner.shared.lock().create_qp(
            self.inner.pd,
            send_cq.inner.cq,
            recv_cq.inner.cq,
            sq_depth,
            rq_depth,
        )?;
        Ok(Qp {
            pd: Arc::clone(&self.inner),
            send_cq: Arc::clone(&send_cq.inner),
            recv_cq: Arc::clone(&recv_cq.inner),
            qp,
            live: true,
        })
    }

    /// Whether the PD belongs to `ctx`.
    pub fn is_of(&self, ctx: &Context<B>) -> bool {
        ctx.same(&self.inner.shared)
    }
}

/// A registered memory region over memory that is lent (`'m`), owned, or (raw) managed by
/// the caller. Dropping it deregisters it and unmaps the memory from the engine.
pub struct Mr<'m, B: Backend> {
    pd: Arc<PdInner<B>>,
    mr: MemoryRegion,
    buf: DmaBuf,
    ptr: *mut u8,
    /// Length of the allocation the region owns (a `Box<[u8]>`), if it owns one.
    owned: Option<usize>,
    /// Registered and mapped (false once released).
    live: bool,
    _mem: PhantomData<&'m mut [u8]>,
}

// SAFETY: the region's memory is only reached through `read`/`write` (which copy) and by the
// engine; the raw pointer is not shared state of any thread. The device is behind the
// context's mutex.
unsafe impl<B: Backend + Send> Send for Mr<'_, B> {}
// SAFETY: `&Mr` allows only copies in and out of the memory, which the verbs contract
// already leaves to the application to order against the engine.
unsafe impl<B: Backend + Send> Sync for Mr<'_, B> {}

impl<B: Backend> std::fmt::Debug for Mr<'_, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mr").field("va", &self.mr.va).field("len", &self.mr.len).field("lkey", &self.mr.lkey).finish()
    }
}

impl<'m, B: Backend> Mr<'m, B> {
    /// The local key.
    pub fn lkey(&self) -> u32 {
        self.mr.lkey
    }

    /// The remote key.
    pub fn rkey(&self) -> u32 {
        self.mr.rkey
    }

    /// First address of the region as work requests and peers name it.
    pub fn va(&self) -> u64 {
        self.mr.va
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.buf.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.buf.len == 0
    }

    /// The driver's description of the region.
    pub fn region(&self) -> &MemoryRegion {
        &self.mr
    }

    /// An SGE for `[off, off + len)` of the region, checked against its bounds.
    pub fn sge(&self, off: usize, len: u32) -> Result<Sge> {
        if off.checked_add(len as usize).is_none_or(|e| e > self.buf.len) {
            return Err(DriverError::OutOfBounds {
                what: "SGE",
                off: off as u64,
                len: len.into(),
                size: self.buf.len as u64,
            });
        }
        Ok(self.mr.sge(off as u64, len))
    }

    fn range(&self, off: usize, n: usize) -> Result<*mut u8> {
        if off.checked_add(n).is_none_or(|e| e > self.buf.len) {
            return Err(DriverError::OutOfBounds {
                what: "access",
                off: off as u64,
                len: n as u64,
                size: self.buf.len as u64,
            });
        }
        Ok(self.ptr.wrapping_add(off))
    }

    /// Copy `out.len()` bytes at `off` of the region out.
    pub fn read(&self, off: usize, out: &mut [u8]) -> Result<()> {
        let p = self.range(off, out.len())?;
        // SAFETY: `p..p + out.len()` lies in the region's memory (checked), which stays
        // allocated while `self` lives; `out` is a distinct Rust buffer.
        unsafe { std::ptr::copy_nonoverlapping(p.cast_const(), out.as_mut_ptr(), out.len()) };
        Ok(())
    }

    /// Copy `data` into the region at `off`.
    pub fn write(&self, off: usize, data: &[u8]) -> Result<()> {
        let p = self.range(off, data.len())?;
        // SAFETY: as in `read`; the region's memory is not borrowed by any Rust reference
        // while registered (borrowed memory's `&mut` is held by the region itself).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), p, data.len()) };
        Ok(())
    }

    /// Deregister in the engine and unmap the memory from it. The unmap happens even if the
    /// engine refuses the deregistration: then the engine's DMA faults instead of reaching
    /// memory the region no longer guards.
    fn release(&mut self) -> Result<()> {
        if !self.live {
            return Ok(());
        }
        self.live = false;
        let mut d = self.pd.shared.lock();
        let r = d.dereg_mr(&self.mr);
        d.backend().unmap_user(self.buf);
        r
    }

    /// Deregister now, reporting an engine error.
    pub fn dereg(mut self) -> Result<()> {
        self.release()
    }

    /// Deregister an owned region and give its memory back (`None` for lent or raw memory).
    pub fn into_inner(mut self) -> Option<Box<[u8]>> {
        let len = self.owned.take()?;
        let _ = self.release();
        // SAFETY: the region owned this Box allocation (reg_mr_owned) and no longer maps it.
        Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, len)) })
    }
}

impl<B: Backend> Drop for Mr<'_, B> {
    fn drop(&mut self) {
        let _ = self.release();
        if let Some(len) = self.owned.take() {
            // SAFETY: the region owned this Box allocation and nothing maps it any more.
            drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(self.ptr, len)) });
        }
    }
}

struct CqInner<B: Backend> {
    shared: Arc<Shared<B>>,
    cq: CompletionQueue,
    /// Still exists in the engine (cleared by an explicit destroy).
    live: std::sync::atomic::AtomicBool,
}

impl<B: Backend> Drop for CqInner<B> {
    fn drop(&mut self) {
        if *self.live.get_mut() {
            let _ = self.shared.lock().destroy_cq(self.cq);
        }
    }
}

/// A completion queue. QPs completing into it keep it alive.
pub struct Cq<B: Backend> {
    inner: Arc<CqInner<B>>,
}

impl<B: Backend> std::fmt::Debug for Cq<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cq").field("cq", &self.inner.cq.0).finish()
    }
}

impl<B: Backend> Cq<B> {
    /// The engine's CQ number.
    pub fn number(&self) -> u32 {
        self.inner.cq.0
    }

    /// Ring entries.
    pub fn size(&self) -> u32 {
        self.inner.shared.lock().cq_size(self.inner.cq).unwrap_or(0)
    }

    /// Poll up to `out.len()` completions.
    pub fn poll(&self, out: &mut [WorkCompletion]) -> Result<usize> {
        self.inner.shared.lock().poll_cq(self.inner.cq, out)
    }

    /// Request one completion event ([`Device::arm_cq`]).
    pub fn arm(&self, solicited_only: bool) -> Result<()> {
        self.inner.shared.lock().arm_cq(self.inner.cq, solicited_only)
    }

    /// Destroy the CQ; [`DriverError::Busy`] (and the CQ back) while QPs complete into it,
    /// or an engine error (and the CQ back).
    pub fn destroy(self) -> std::result::Result<(), (Self, DriverError)> {
        if Arc::strong_count(&self.inner) > 1 {
            return Err((self, DriverError::Busy("CQ")));
        }
        let r = self.inner.shared.lock().destroy_cq(self.inner.cq);
        match r {
            Ok(()) => {
                self.inner.live.store(false, std::sync::atomic::Ordering::Relaxed);
                Ok(())
            }
            Err(e) => Err((self, e)),
        }
    }
}

/// An RC queue pair. Dropping it destroys it (the engine discards its outstanding work).
pub struct Qp<B: Backend> {
    pd: Arc<PdInner<B>>,
    send_cq: Arc<CqInner<B>>,
    recv_cq: Arc<CqInner<B>>,
    qp: QueuePair,
    /// Still exists in the engine (cleared by an explicit destroy).
    live: bool,
}

impl<B: Backend> std::fmt::Debug for Qp<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Qp").field("qpn", &self.qp.0).finish()
    }
}

impl<B: Backend> Qp<B> {
    /// The QP number.
    pub fn qpn(&self) -> u32 {
        self.qp.0
    }

    /// The send and receive CQ numbers.
    pub fn cq_numbers(&self) -> (u32, u32) {
        (self.send_cq.cq.0, self.recv_cq.cq.0)
    }

    /// Modify the QP: apply the attributes `mask` selects.
    pub fn modify(&self, attr: &QpAttr, mask: QpAttrMask) -> Result<()> {
        self.pd.shared.lock().modify_qp(self.qp, attr, mask)
    }

    /// The QP's context as the engine holds it.
    pub fn query(&self) -> Result<QpCtx> {
        self.pd.shared.lock().query_qp(self.qp)
    }

    /// Send and receive queue sizes (entries).
    pub fn depths(&self) -> Result<(u32, u32)> {
        self.pd.shared.lock().qp_depths(self.qp)
    }

    /// Post send work requests (one doorbell; all or nothing).
    pub fn post_send(&self, wrs: &[SendWr<'_>]) -> Result<()> {
        self.pd.shared.lock().post_send(self.qp, wrs)
    }

    /// Post receive work requests (one doorbell; all or nothing).
    pub fn post_recv(&self, wrs: &[RecvWr<'_>]) -> Result<()> {
        self.pd.shared.lock().post_recv(self.qp, wrs)
    }

    /// Free send and receive queue slots.
    pub fn space(&self) -> Result<(usize, usize)> {
        let d = self.pd.shared.lock();
        Ok((d.sq_space(self.qp)?, d.rq_space(self.qp)?))
    }

    /// Destroy now, reporting an engine error (and the QP back).
    pub fn destroy(mut self) -> std::result::Result<(), (Self, DriverError)> {
        let r = self.pd.shared.lock().destroy_qp(self.qp);
        match r {
            Ok(()) => {
                self.live = false;
                Ok(())
            }
            Err(e) => Err((self, e)),
        }
    }
}

impl<B: Backend> Drop for Qp<B> {
    fn drop(&mut self) {
        if self.live {
            let _ = self.pd.shared.lock().destroy_qp(self.qp);
        }
    }
}
