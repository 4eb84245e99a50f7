//! The VFIO backend: the engine as a PCI device bound to `vfio-pci`, driven from userspace.
//!
//! ```text
//!   sysfs: /sys/bus/pci/devices/<addr>/iommu_group -> group N
//!   /dev/vfio/vfio (container) -- VFIO_CHECK_EXTENSION(TYPE1v2)
//!   /dev/vfio/N (group)        -- viable? VFIO_GROUP_SET_CONTAINER, VFIO_SET_IOMMU(TYPE1v2)
//!   VFIO_GROUP_GET_DEVICE_FD(<addr>) -> device fd
//!   VFIO_DEVICE_GET_REGION_INFO(BAR0) -> mmap(device fd, offset)    read32 / write32
//!   config space: PCI_COMMAND |= MEMORY | BUS_MASTER
//!   dma_alloc: anonymous mmap + VFIO_IOMMU_MAP_DMA(iova)            mem_read / mem_write
//!   optional: VFIO_DEVICE_SET_IRQS(MSI, eventfd)                   wait_irq
//! ```
//!
//! Layers (rust-vmm style): [`sys`] holds every ioctl and `unsafe` block behind the
//! [`VfioSys`] trait, [`fake`] is its test double, [`sysfs`] and [`iova`] are plain logic,
//! and [`VfioBackend`] implements [`Backend`] on top of any [`VfioSys`].
//!
//! Out-of-range accesses never touch memory: a BAR read outside the mapped BAR (or not
//! 4-byte aligned) returns `0xFFFF_FFFF` — what a PCIe read that nobody answers returns —
//! and a write there is dropped; a `mem_read`/`mem_write` outside its buffer, or with a
//! `DmaBuf` this backend does not own (freed, or from another backend), is dropped too
//! (`mem_read` then fills `out` with zeros). Each such access is counted in
//! [`VfioBackend::stats`], so tests and health checks can assert there were none.
//!
//! Needs: an IOMMU, the device bound to `vfio-pci`, and (as non-root) access to
//! `/dev/vfio/<group>` and an `RLIMIT_MEMLOCK` that covers the DMA buffers (the kernel pins
//! them).

pub mod error;
pub mod fake;
pub mod iova;
pub mod sys;
pub mod sysfs;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use roce_model::contract::regs;
use vfio_bindings::bindings::vfio::{
    VFIO_TYPE1v2_IOMMU, VFIO_API_VERSION, VFIO_GROUP_FLAGS_VIABLE, VFIO_PCI_BAR0_REGION_INDEX,
    VFIO_PCI_CONFIG_REGION_INDEX, VFIO_PCI_MSI_IRQ_INDEX, VFIO_REGION_INFO_FLAG_MMAP,
};

use crate::backend::{Backend, DmaBuf};
use crate::error::Result;

pub use error::VfioError;
pub use iova::IovaAllocator;
pub use sys::{DeviceInfo, DmaMemory, EventFd, IrqInfo, LinuxVfio, MmioRegion, RegionInfo, VfioSys};
pub use sysfs::PciAddr;

/// Offset of the PCI command register in config space.
const PCI_COMMAND: u64 = 0x04;
/// Command register: memory space enable.
const PCI_COMMAND_MEMORY: u16 = 0x2;
/// Command register: bus master enable (the device may start DMA).
const PCI_COMMAND_MASTER: u16 = 0x4;

/// Tunables of [`VfioBackend`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VfioConfig {
    /// The sysfs root (`/sys`).
    pub sysfs_root: PathBuf,
    /// First device address handed out (non-zero, page aligned).
    pub iova_base: u64,
    /// End (exclusive) of the device addresses handed out; must fit the device's DMA
    /// address width and the IOMMU's.
    pub iova_limit: u64,
    /// Unmapped bytes after each buffer (rounded up to pages).
    pub guard_bytes: u64,
    /// BAR0 must be at least this long.
    pub min_bar0_bytes: u64,
    /// Refuse a device that sysfs shows bound to a driver whose name does not start with
    /// `vfio` (a clearer error than the group's "not viable").
    pub check_driver: bool,
    /// Set memory-space and bus-master enable in the PCI command register on open.
    pub enable_bus_master: bool,
}

impl Default for VfioConfig {
    fn default() -> Self {
        VfioConfig {
            sysfs_root: PathBuf::from("/sys"),
            iova_base: 0x1_0000_0000,
            iova_limit: 1 << 39,
            guard_bytes: 4096,
            min_bar0_bytes: regs::BAR0_BYTES as u64,
            check_driver: true,
            enable_bus_master: true,
        }
    }
}

/// Counters of accesses the backend refused instead of performing (see the module
/// documentation) and of teardown failures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VfioStats {
    /// BAR0 reads/writes out of range or misaligned.
    pub bad_mmio: u64,
    /// `mem_read`/`mem_write` out of range or on a buffer this backend does not own, and
    /// `dma_free` of such a buffer.
    pub bad_mem: u64,
    /// `VFIO_IOMMU_UNMAP_DMA` calls that failed (their IOVA range is never reused).
    pub unmap_failures: u64,
}

#[derive(Debug)]
struct DmaEntry {
    /// The backend's own memory (`dma_alloc`); `None` for application memory mapped with
    /// `map_user`, which the CPU accesses directly, not through the backend.
    mem: Option<DmaMemory>,
    /// Device address of the buffer's first byte.
    iova: u64,
    /// Start of the IOMMU mapping (page aligned; `iova` for `dma_alloc` buffers).
    map_iova: u64,
    /// Bytes the user asked for (the `DmaBuf` length).
    len: usize,
    /// Bytes mapped (page multiple).
    size: u64,
}

/// A device opened through VFIO; implements [`Backend`].
///
/// Teardown (drop): interrupts off, every DMA buffer unmapped from the IOMMU and freed, then
/// BAR0 unmapped and the device, group and container closed, in that order.
#[derive(Debug)]
pub struct VfioBackend<S: VfioSys = LinuxVfio> {
    // Field order is drop order after `Drop::drop`: everything mapped goes before the fds.
    irq: Option<EventFd>,
    dma: HashMap<usize, DmaEntry>,
    bar0: MmioRegion,
    device: S::Device,
    /// Held open for the device's lifetime (closing it detaches the group from the container).
    _group: S::Group,
    container: S::Container,
    sys: S,
    iova: IovaAllocator,
    next_id: usize,
    addr: PciAddr,
    group_id: u32,
    bar0_info: RegionInfo,
    config_info: RegionInfo,
    bad_mmio: AtomicU64,
    bad_mem: AtomicU64,
    unmap_failures: u64,
}

impl VfioBackend<LinuxVfio> {
    /// Open the device at `pci_addr` (`0000:03:00.0`; `03:00.0` means domain 0) with the
    /// default [`VfioConfig`].
    pub fn open(pci_addr: &str) -> Result<Self> {
        Self::open_with_config(pci_addr, VfioConfig::default())
    }

    /// Open the device at `pci_addr` with `cfg`: look up its IOMMU group in sysfs, then
    /// [`VfioBackend::with_sys`] on `/dev/vfio`.
    pub fn open_with_config(pci_addr: &str, cfg: VfioConfig) -> Result<Self> {
        let addr: PciAddr = pci_addr.parse()?;
        let group = sysfs::iommu_group(&cfg.sysfs_root, &addr)?;
        if cfg.check_driver {
            let drv = sysfs::bound_driver(&cfg.sysfs_root, &addr)?;
            if !drv.as_deref().is_some_and(|d| d.starts_with("vfio")) {
                return Err(VfioError::NotBoundToVfio { addr: addr.to_string(), driver: drv }.into());
            }
        }
        Self::with_sys(LinuxVfio::new(), &addr.to_string(), group, cfg)
    }
}

impl<S: VfioSys> VfioBackend<S> {
    /// Open device `pci_addr` of IOMMU group `group` through `sys` (no sysfs look-ups; the
    /// entry point for test doubles): container (Type1 v2), group, device fd, BAR0 mapping,
    /// and bus mastering on.
    pub fn with_sys(sys: S, pci_addr: &str, group: u32, cfg: VfioConfig) -> Result<Self> {
        let addr: PciAddr = pci_addr.parse()?;
        let name = addr.to_string();
        let page = sys::page_size();
        let iova = IovaAllocator::new(cfg.iova_base, cfg.iova_limit, page, cfg.guard_bytes).ok_or_else(|| {
            VfioError::Config(format!(
                "IOVA window {:#x}..{:#x} must be non-empty and start at a non-zero multiple of the page size {page:#x}",
                cfg.iova_base, cfg.iova_limit
            ))
        })?;

        let container = sys.open_container().map_err(|e| VfioError::OpenContainer(e, sys.container_path()))?;
        let v = sys.api_version(&container).map_err(|e| VfioError::Container("VFIO_GET_API_VERSION", e))?;
        if v != VFIO_API_VERSION as i32 {
            return Err(VfioError::ApiVersion(v).into());
        }
        let has = sys
            .check_extension(&container, VFIO_TYPE1v2_IOMMU)
            .map_err(|e| VfioError::Container("VFIO_CHECK_EXTENSION", e))?;
        if !has {
            return Err(VfioError::NoType1v2.into());
        }

        let grp = sys.open_group(group).map_err(|e| VfioError::OpenGroup(e, sys.group_path(group)))?;
        let flags = sys.group_flags(&grp).map_err(|e| VfioError::Group(group, "VFIO_GROUP_GET_STATUS", e))?;
        if flags & VFIO_GROUP_FLAGS_VIABLE == 0 {
            return Err(VfioError::GroupNotViable(group).into());
        }
        sys.group_set_container(&grp, &container)
            .map_err(|e| VfioError::Group(group, "VFIO_GROUP_SET_CONTAINER", e))?;
        sys.set_iommu(&container, VFIO_TYPE1v2_IOMMU)
            .map_err(|e| VfioError::Container("VFIO_SET_IOMMU(TYPE1v2)", e))?;

        let device = sys.group_get_device(&grp, &name).map_err(|e| VfioError::GetDevice(name.clone(), e))?;
        let dev_err = |what: &'static str| {
            let n = name.clone();
            move |e| VfioError::Device(n, what, e)
        };
        let info = sys.device_info(&device).map_err(dev_err("VFIO_DEVICE_GET_INFO"))?;
        if info.num_regions <= VFIO_PCI_CONFIG_REGION_INDEX {
            return Err(VfioError::Device(
                name,
                "VFIO_DEVICE_GET_INFO",
                std::io::Error::other(format!("only {} regions: not a vfio-pci device", info.num_regions)),
            )
            .into());
        }
        let bar0_info = sys
            .region_info(&device, VFIO_PCI_BAR0_REGION_INDEX)
            .map_err(dev_err("VFIO_DEVICE_GET_REGION_INFO(BAR0)"))?;
        if bar0_info.size == 0 || bar0_info.flags & VFIO_REGION_INFO_FLAG_MMAP == 0 {
            return Err(VfioError::Bar0NotMappable { addr: name, flags: bar0_info.flags, size: bar0_info.size }.into());
        }
        if bar0_info.size < cfg.min_bar0_bytes {
            return Err(VfioError::Bar0TooSmall { addr: name, size: bar0_info.size, need: cfg.min_bar0_bytes }.into());
        }
        let map_len = usize::try_from(bar0_info.size).map_err(|_| VfioError::Bar0NotMappable {
            addr: name.clone(),
            flags: bar0_info.flags,
            size: bar0_info.size,
        })?;
        let bar0 = sys.map_region(&device, &bar0_info, map_len).map_err(dev_err("mmap(BAR0)"))?;
        let config_info = sys
            .region_info(&device, VFIO_PCI_CONFIG_REGION_INDEX)
            .map_err(dev_err("VFIO_DEVICE_GET_REGION_INFO(config)"))?;

        let b = VfioBackend {
            irq: None,
            dma: HashMap::new(),
            bar0,
            device,
            _group: grp,
            container,
            sys,
            iova,
            next_id: 1,
            addr,
            group_id: group,
            bar0_info,
            config_info,
            bad_mmio: AtomicU64::new(0),
            bad_mem: AtomicU64::new(0),
            unmap_failures: 0,
        };
        if cfg.enable_bus_master {
            let mut c = [0u8; 2];
            b.config_read(PCI_COMMAND, &mut c)?;
            let cmd = u16::from_le_bytes(c) | PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
            b.config_write(PCI_COMMAND, &cmd.to_le_bytes())?;
        }
        Ok(b)
    }

    /// The device's PCI address.
    pub fn pci_addr(&self) -> PciAddr {
        self.addr
    }

    /// The device's IOMMU group.
    pub fn iommu_group(&self) -> u32 {
        self.group_id
    }

    /// BAR0's region info (its size is what [`Backend::read32`] can reach).
    pub fn bar0_info(&self) -> RegionInfo {
        self.bar0_info
    }

    /// The system layer (for test doubles: inspect what happened).
    pub fn sys(&self) -> &S {
        &self.sys
    }

    /// The IOVA allocator's state.
    pub fn iova_allocator(&self) -> &IovaAllocator {
        &self.iova
    }

    /// Number of live DMA buffers.
    pub fn dma_buffers(&self) -> usize {
        self.dma.len()
    }

    /// Refused accesses and teardown failures so far.
    pub fn stats(&self) -> VfioStats {
        VfioStats {
            bad_mmio: self.bad_mmio.load(Ordering::Relaxed),
            bad_mem: self.bad_mem.load(Ordering::Relaxed),
            unmap_failures: self.unmap_failures,
        }
    }

    fn config_check(&self, off: u64, n: usize) -> Result<u64> {
        match off.checked_add(n as u64) {
            Some(end) if end <= self.config_info.size => Ok(self.config_info.offset + off),
            _ => Err(crate::DriverError::Invalid(format!(
                "config space access {off:#x}+{n} beyond {:#x}",
                self.config_info.size
            ))),
        }
    }

    /// Read PCI config space at `off` (through the device fd; vfio-pci virtualises parts).
    pub fn config_read(&self, off: u64, out: &mut [u8]) -> Result<()> {
        let at = self.config_check(off, out.len())?;
        self.sys
            .read_region(&self.device, at, out)
            .map_err(|e| VfioError::Device(self.addr.to_string(), "config space read", e).into())
    }

    /// Write PCI config space at `off`.
    pub fn config_write(&self, off: u64, data: &[u8]) -> Result<()> {
        let at = self.config_check(off, data.len())?;
        self.sys
            .write_region(&self.device, at, data)
            .map_err(|e| VfioError::Device(self.addr.to_string(), "config space write", e).into())
    }

    /// Route MSI vector 0 to a new eventfd (`VFIO_DEVICE_SET_IRQS`); then
    /// [`VfioBackend::wait_irq`] waits for it. Calling it again replaces the eventfd.
    pub fn enable_msi_eventfd(&mut self) -> Result<()> {
        let name = self.addr.to_string();
        let info = self
            .sys
            .irq_info(&self.device, VFIO_PCI_MSI_IRQ_INDEX)
            .map_err(|e| VfioError::Device(name.clone(), "VFIO_DEVICE_GET_IRQ_INFO(MSI)", e))?;
        if info.count == 0 {
            return Err(VfioError::NoMsi(name).into());
        }
        let fd = EventFd::new().map_err(|e| VfioError::EventFd("eventfd", e))?;
        self.sys
            .set_irq_eventfd(&self.device, VFIO_PCI_MSI_IRQ_INDEX, Some(&fd))
            .map_err(|e| VfioError::Device(name, "VFIO_DEVICE_SET_IRQS(MSI, eventfd)", e))?;
        self.irq = Some(fd);
        Ok(())
    }

    /// Turn MSI off again (no-op if it is not on).
    pub fn disable_msi(&mut self) -> Result<()> {
        if self.irq.is_none() {
            return Ok(());
        }
        self.sys
            .set_irq_eventfd(&self.device, VFIO_PCI_MSI_IRQ_INDEX, None)
            .map_err(|e| VfioError::Device(self.addr.to_string(), "VFIO_DEVICE_SET_IRQS(MSI, none)", e))?;
        self.irq = None;
        Ok(())
    }

    /// Wait at most `timeout` for the MSI: `Some(n)` = it fired `n` times since the last
    /// wait, `None` = timeout.
    pub fn wait_irq(&self, timeout: Duration) -> Result<Option<u64>> {
        let fd = self.irq.as_ref().ok_or(VfioError::IrqNotEnabled)?;
        Ok(fd.wait(timeout).map_err(|e| VfioError::EventFd("poll/read", e))?)
    }

    /// The MSI eventfd, to add to an event loop (`None` if MSI is off).
    pub fn irq_eventfd(&self) -> Option<&EventFd> {
        self.irq.as_ref()
    }

    fn entry(&self, buf: &DmaBuf, off: usize, n: usize) -> Option<&DmaEntry> {
        let e = self.dma.get(&buf.id)?;
        let ok = e.iova == buf.iova && e.len == buf.len && off.checked_add(n).is_some_and(|end| end <= e.len);
        ok.then_some(e)
    }

    fn unmap_entry(&mut self, e: DmaEntry) {
        match self.sys.dma_unmap(&self.container, e.map_iova, e.size) {
            Ok(n) if n == e.size => {
                self.iova.free(e.map_iova);
                drop(e.mem);
            }
            _ => {
                // The device may still reach these pages: keep the IOVA range reserved. The
                // kernel holds its own pin on the pages, so unmapping them from our address
                // space cannot let them be reused under the device.
                self.unmap_failures += 1;
                drop(e.mem);
            }
        }
    }
}

impl<S: VfioSys> Backend for VfioBackend<S> {
    fn read32(&mut self, off: u32) -> u32 {
        match self.bar0.read32(off as usize) {
            Some(v) => v,
            None => {
                self.bad_mmio.fetch_add(1, Ordering::Relaxed);
                u32::MAX
            }
        }
    }

    fn write32(&mut self, off: u32, val: u32) {
        if !self.bar0.write32(off as usize, val) {
            self.bad_mmio.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf> {
        let exhausted = |s: &Self| VfioError::IovaExhausted { len, base: s.iova.base(), limit: s.iova.limit() };
        let size = self.iova.map_size(len).ok_or_else(|| exhausted(self))?;
        let iova = self.iova.alloc(len).ok_or_else(|| exhausted(self))?;
        let mem = match usize::try_from(size).map_err(std::io::Error::other).and_then(DmaMemory::anon) {
            Ok(m) => m,
            Err(source) => {
                self.iova.free(iova);
                return Err(VfioError::DmaMemory { len, source }.into());
            }
        };
        // SAFETY: `mem` is `size` bytes of our own anonymous memory; it is kept in
        // `self.dma` until `dma_unmap` of this range (dma_free or Drop), and only accessed
        // with volatile copies (DmaMemory::read/write).
        if let Err(source) = unsafe { self.sys.dma_map(&self.container, iova, size, mem.as_ptr()) } {
            self.iova.free(iova);
            return Err(VfioError::DmaMap { iova, size, source }.into());
        }
        let id = self.next_id;
        self.next_id += 1;
        self.dma.insert(id, DmaEntry { mem: Some(mem), iova, map_iova: iova, len, size });
        Ok(DmaBuf { iova, len, id })
    }

    fn dma_free(&mut self, buf: DmaBuf) {
        match self.dma.get(&buf.id) {
            Some(e) if e.iova == buf.iova && e.len == buf.len => {
                let e = self.dma.remove(&buf.id).expect("present");
                self.unmap_entry(e);
            }
            _ => {
                self.bad_mem.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        let ok = self.entry(buf, off, out.len()).is_some_and(|e| e.mem.as_ref().is_some_and(|m| m.read(off, out)));
        if !ok {
            out.fill(0);
            self.bad_mem.fetch_add(1, Ordering::Relaxed);
        }
    }

    unsafe fn map_user(&mut self, addr: *mut u8, len: usize) -> Result<DmaBuf> {
        // The IOMMU maps whole pages: the pages covering [addr, addr + len), at an IOVA whose
        // offset in its page is addr's.
        let page = self.iova.page();
        let start = (addr as u64) & !(page - 1);
        let exhausted = |s: &Self| VfioError::IovaExhausted { len, base: s.iova.base(), limit: s.iova.limit() };
        let span = (addr as u64 - start).checked_add(len as u64).ok_or_else(|| exhausted(self))?;
        let span = usize::try_from(span).map_err(|_| exhausted(self))?;
        let size = self.iova.map_size(span).ok_or_else(|| exhausted(self))?;
        let iova = self.iova.alloc(span).ok_or_else(|| exhausted(self))?;
        // SAFETY: the caller guarantees [addr, addr + len) stays allocated until unmap_user;
        // the rest of the first and last page belongs to the same mappings (pages are the
        // unit of memory mapping), and the kernel pins them for the device.
        let r = unsafe { self.sys.dma_map(&self.container, iova, size, start as *mut u8) };
        if let Err(source) = r {
            self.iova.free(iova);
            return Err(VfioError::DmaMap { iova, size, source }.into());
        }
        let id = self.next_id;
        self.next_id += 1;
        let dev = iova + (addr as u64 - start);
        self.dma.insert(id, DmaEntry { mem: None, iova: dev, map_iova: iova, len, size });
        Ok(DmaBuf { iova: dev, len, id })
    }

    fn unmap_user(&mut self, buf: DmaBuf) {
        self.dma_free(buf);
    }

    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        let ok = self.entry(buf, off, data.len()).is_some_and(|e| e.mem.as_ref().is_some_and(|m| m.write(off, data)));
        if !ok {
            self.bad_mem.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<S: VfioSys> Drop for VfioBackend<S> {
    fn drop(&mut self) {
        let _ = self.disable_msi();
        let mut ids: Vec<usize> = self.dma.keys().copied().collect();
        ids.sort_unstable();
        for id in ids {
            if let Some(e) = self.dma.remove(&id) {
                self.unmap_entry(e);
            }
        }
        // Then the fields drop in declaration order: eventfd, BAR0 mapping, device fd, group
        // fd (the kernel detaches it from the container), container fd.
    }
}
