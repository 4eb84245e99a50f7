//! An opened engine as the verbs layer sees it: the driver's [`Context`] over the backend the
//! device string chose, the port's addresses, the interrupt thread that turns the engine's
//! CQ arms and QP errors into completion-channel and async events, and next-hop resolution.
//!
//! One engine per process and device: every `ibv_open_device` of it shares one
//! [`OpenDevice`] (a simulated engine owns its socket path), freed with the last context.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use roce_driver::device::Features;
use roce_driver::vfio::VfioBackend;
use roce_driver::{Backend, Context, Device, DmaBuf, DriverError};
use roce_model::contract::regs;

use crate::config::{self, DeviceSpec};
use crate::fd::{poll_in, write_record, EventFd};
use crate::sim::{Shared, SimBackend, SimConfig, SimError};
use crate::sys;

/// The backends a device string can name.
#[derive(Debug)]
pub enum AnyBackend {
    /// A simulated engine in this process.
    Sim(SimBackend),
    /// A board through VFIO.
    Vfio(VfioBackend),
}

macro_rules! each {
    ($self:expr, $b:ident => $e:expr) => {
        match $self {
            AnyBackend::Sim($b) => $e,
            AnyBackend::Vfio($b) => $e,
        }
    };
}

impl Backend for AnyBackend {
    fn read32(&mut self, off: u32) -> u32 {
        each!(self, b => b.read32(off))
    }
    fn write32(&mut self, off: u32, val: u32) {
        each!(self, b => b.write32(off, val))
    }
    fn dma_alloc(&mut self, len: usize) -> roce_driver::error::Result<DmaBuf> {
        each!(self, b => b.dma_alloc(len))
    }
    fn dma_free(&mut self, buf: DmaBuf) {
        each!(self, b => b.dma_free(buf))
    }
    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        each!(self, b => b.mem_read(buf, off, out))
    }
    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        each!(self, b => b.mem_write(buf, off, data))
    }
    unsafe fn map_user(&mut self, addr: *mut u8, len: usize) -> roce_driver::error::Result<DmaBuf> {
        // SAFETY: the caller's contract is forwarded unchanged.
        each!(self, b => unsafe { b.map_user(addr, len) })
    }
    fn unmap_user(&mut self, buf: DmaBuf) {
        each!(self, b => b.unmap_user(buf))
    }
    fn bf_write(&mut self, qpn: u32, wqe: &[u8; 128]) -> bool {
        each!(self, b => b.bf_write(qpn, wqe))
    }
}

/// Why a device did not open.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The simulated engine did not start.
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The driver refused the engine.
    #[error(transparent)]
    Driver(#[from] DriverError),
    /// The configuration is wrong.
    #[error(transparent)]
    Config(#[from] config::ConfigError),
    /// An OS resource could not be made.
    #[error("{0}: {1}")]
    Os(&'static str, #[source] std::io::Error),
}

impl OpenError {
    /// The errno `ibv_open_device` reports.
    pub fn errno(&self) -> i32 {
        match self {
            OpenError::Sim(SimError::Bind { source, .. }) | OpenError::Os(_, source) => {
                source.raw_os_error().unwrap_or(libc::EIO)
            }
            OpenError::Driver(DriverError::Vfio(_)) => libc::ENODEV,
            OpenError::Config(_) => libc::EINVAL,
            _ => libc::EIO,
        }
    }
}

/// The port: addresses and MTUs.
#[derive(Clone, Copy, Debug)]
pub struct Port {
    /// IPv4 address.
    pub ip: Ipv4Addr,
    /// Station MAC.
    pub mac: [u8; 6],
    /// Active MTU, `enum ibv_mtu`.
    pub active_mtu: u32,
    /// Largest MTU, `enum ibv_mtu`.
    pub max_mtu: u32,
}

impl Port {
    /// GID index 0: the RoCEv2 IPv4-mapped GID.
    pub fn gid(&self) -> [u8; 16] {
        self.ip.to_ipv6_mapped().octets()
    }
}

/// The node GUID of a port MAC (EUI-64), in network byte order as `ibv_get_device_guid`
/// returns it.
pub fn guid_of(mac: [u8; 6]) -> u64 {
    u64::from_be_bytes([mac[0] ^ 2, mac[1], mac[2], 0xff, 0xfe, mac[3], mac[4], mac[5]]).to_be()
}

/// Who hears about a CQ's completion events and a QP's errors: the write end of a pipe and
/// the C object's address to write into it.
#[derive(Debug, Default)]
pub struct Listeners {
    /// CQ number -> (completion channel's write end, `struct ibv_cq *`).
    pub cqs: HashMap<u32, (RawFd, usize)>,
    /// QP number -> (context's async event write end, `struct ibv_qp *`, state cell set to
    /// ERR when the engine moves the QP there).
    pub qps: HashMap<u32, (RawFd, usize, Arc<std::sync::atomic::AtomicU32>)>,
}

struct Inner {
    ctx: Context<AnyBackend>,
    listeners: Mutex<Listeners>,
}

/// An opened engine shared by the contexts of this process.
pub struct OpenDevice {
    inner: Arc<Inner>,
    /// The port.
    pub port: Port,
    /// The device string it was opened from.
    pub spec: DeviceSpec,
    sim: Option<Arc<Shared>>,
    /// Serialises the bookkeeping of C objects shared between contexts (channel reference
    /// counts).
    pub objects: Mutex<()>,
    stop: EventFd,
    irq_thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for OpenDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenDevice").field("spec", &self.spec).finish_non_exhaustive()
    }
}

static OPEN: Mutex<Option<Weak<OpenDevice>>> = Mutex::new(None);

/// Interrupt causes the verbs layer handles.
const IRQS: u32 = regs::irq_status::CQ_EVENT.mask() | regs::irq_status::QP_ERROR.mask();

impl OpenDevice {
    /// Open (or share the already open) engine of `spec`.
    pub fn open(spec: &DeviceSpec) -> Result<Arc<OpenDevice>, OpenError> {
        let mut g = OPEN.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(d) = g.as_ref().and_then(Weak::upgrade) {
            if &d.spec == spec {
                return Ok(d);
            }
        }
        let d = Arc::new(Self::start(spec)?);
        *g = Some(Arc::downgrade(&d));
        Ok(d)
    }

    fn start(spec: &DeviceSpec) -> Result<OpenDevice, OpenError> {
        let mtu = config::mtu_from_env()?;
        let (backend, ip, mac, irq_fd, sim) = match spec {
            DeviceSpec::Sim { engine, local, peer, ip } => {
                let mac = config::mac_of(*ip);
                let b = SimBackend::start(SimConfig {
                    engine: engine.clone(),
                    local: local.clone(),
                    peer: peer.clone(),
                    ip: *ip,
                    mac,
                })?;
                let sh = Arc::clone(b.shared());
                // SAFETY: dup of the live eventfd the backend owns; the copy is ours.
                let fd = unsafe { libc::dup(sh.irq.fd()) };
                if fd < 0 {
                    return Err(OpenError::Os("dup", std::io::Error::last_os_error()));
                }
                // SAFETY: `fd` is a new descriptor owned here.
                (AnyBackend::Sim(b), *ip, mac, unsafe { OwnedFd::from_raw_fd(fd) }, Some(sh))
            }
            DeviceSpec::Vfio { bdf, ip, peer_mac: _ } => {
                let mut b = VfioBackend::open(bdf)?;
                b.enable_msi_eventfd()?;
                let raw = b.irq_eventfd().map(|e| e.as_raw_fd()).unwrap_or(-1);
                // SAFETY: dup of the live MSI eventfd; the copy is ours.
                let fd = unsafe { libc::dup(raw) };
                if fd < 0 {
                    return Err(OpenError::Os("dup", std::io::Error::last_os_error()));
                }
                // a board's MAC: locally administered from its address, like a simulated port
                // SAFETY: `fd` is a new descriptor owned here.
                (AnyBackend::Vfio(b), *ip, config::mac_of(*ip), unsafe { OwnedFd::from_raw_fd(fd) }, None)
            }
        };
        let mut dev = Device::open(backend)?;
        dev.configure_port(mac, ip, ip.to_ipv6_mapped());
        dev.enable(Features::default());
        dev.set_irq_mask(!IRQS);
        let max_mtu = dev.max_mtu() as u32;
        let active_mtu = (mtu.trailing_zeros() - 7).min(max_mtu);
        let inner = Arc::new(Inner { ctx: Context::new(dev), listeners: Mutex::new(Listeners::default()) });
        let stop = EventFd::new().map_err(|e| OpenError::Os("eventfd", e))?;
        let stop_fd = stop.fd();
        let i2 = Arc::clone(&inner);
        let irq_thread = std::thread::Builder::new()
            .name("roce-verbs-irq".into())
            .spawn(move || irq_loop(&i2, irq_fd, stop_fd))
            .map_err(|e| OpenError::Os("spawn the interrupt thread", e))?;
        Ok(OpenDevice {
            inner,
            port: Port { ip, mac, active_mtu, max_mtu },
            spec: spec.clone(),
            sim,
            objects: Mutex::new(()),
            stop,
            irq_thread: Some(irq_thread),
        })
    }

    /// The driver context.
    pub fn ctx(&self) -> &Context<AnyBackend> {
        &self.inner.ctx
    }

    /// The event listeners, locked.
    pub fn listeners(&self) -> MutexGuard<'_, Listeners> {
        self.inner.listeners.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A simulated engine's counters.
    pub fn sim(&self) -> Option<&Arc<Shared>> {
        self.sim.as_ref()
    }

    /// The next hop's MAC for `ip` (what the kernel's neighbour resolution gives a RoCE
    /// NIC's `modify_qp`): from ARP on a simulated port (up to ~1 s), the configured MAC on a
    /// board. ETIMEDOUT if nobody answers.
    pub fn resolve(&self, ip: Ipv4Addr) -> Result<[u8; 6], i32> {
        if ip == self.port.ip {
            return Ok(self.port.mac);
        }
        match &self.spec {
            DeviceSpec::Vfio { peer_mac, .. } => Ok(*peer_mac),
            DeviceSpec::Sim { .. } => {
                let Some(sh) = &self.sim else { return Err(libc::EHOSTUNREACH) };
                if let Some(m) = sh.neigh.get(ip) {
                    return Ok(m);
                }
                for _ in 0..5 {
                    if let AnyBackend::Sim(b) = self.inner.ctx.lock().backend() {
                        b.arp_request(ip);
                    }
                    if let Some(m) = sh.neigh.wait(ip, Instant::now() + Duration::from_millis(200)) {
                        return Ok(m);
                    }
                }
                Err(libc::ETIMEDOUT)
            }
        }
    }
}

impl Drop for OpenDevice {
    fn drop(&mut self) {
        self.stop.signal();
        if let Some(t) = self.irq_thread.take() {
            let _ = t.join();
        }
    }
}

/// The interrupt handler: read and clear IRQ_STATUS, then tell the listeners of the CQs
/// whose arm fired and of QPs the engine moved to the error state.
fn irq_loop(inner: &Inner, irq: OwnedFd, stop: RawFd) {
    loop {
        let ready = poll_in(&[irq.as_raw_fd(), stop], None);
        if ready.contains(&1) {
            return;
        }
        if ready.is_empty() {
            continue;
        }
        let mut b = [0u8; 8];
        // SAFETY: reads the eventfd's 8-byte counter into a valid buffer.
        let _ = unsafe { libc::read(irq.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
        // the listeners are locked before the status is taken: a QP destroyed meanwhile
        // (ibv_destroy_qp forgets its pending error under the same lock) is either still
        // listening when its error is dispatched, or its error is gone, and never mistaken
        // for a new QP with its number
        let l = inner.listeners.lock().unwrap_or_else(|p| p.into_inner());
        let (st, fired, err) = {
            let mut d = inner.ctx.lock();
            let st = d.take_irq_status();
            let fired = if st & regs::irq_status::CQ_EVENT.mask() != 0 { d.take_cq_events() } else { Vec::new() };
            let err = (st & regs::irq_status::QP_ERROR.mask() != 0).then(|| d.qp_err_info());
            (st, fired, err)
        };
        let _ = st;
        for cq in fired {
            if let Some(&(fd, ptr)) = l.cqs.get(&cq.number()) {
                write_record(fd, &(ptr as u64).to_ne_bytes());
            }
        }
        if let Some((qpn, cause)) = err {
            if let Some((fd, ptr, state)) = l.qps.get(&qpn) {
                state.store(sys::IBV_QPS_ERR, std::sync::atomic::Ordering::Relaxed);
                let ev = match cause {
                    c if c == sys::IBV_WC_LOC_ACCESS_ERR as u8 || c == sys::IBV_WC_REM_ACCESS_ERR as u8 => {
                        sys::IBV_EVENT_QP_ACCESS_ERR
                    }
                    c if c == sys::IBV_WC_REM_INV_REQ_ERR as u8 => sys::IBV_EVENT_QP_REQ_ERR,
                    _ => sys::IBV_EVENT_QP_FATAL,
                };
                let desc = sys::ib_uverbs_async_event_desc { element: *ptr as u64, event_type: ev, reserved: 0 };
                // SAFETY: the descriptor is plain old data of 16 bytes.
                let bytes = unsafe {
                    std::slice::from_raw_parts(
                        (&desc as *const sys::ib_uverbs_async_event_desc).cast::<u8>(),
                        std::mem::size_of_val(&desc),
                    )
                };
                write_record(*fd, bytes);
            }
        }
    }
}
