//! A test double for [`VfioSys`]: canned answers for every ioctl, a heap-backed BAR0, a
//! config space in a byte array, a record of the DMA mappings, an interrupt that tests can
//! fire, and injectable failures. It lets the backend's logic (open sequence, error
//! mapping, IOVA handling, bounds checks, teardown) be tested on machines without VFIO.
//!
//! Clones share one state, so a test keeps a clone to inspect after handing one to
//! [`super::VfioBackend::with_sys`].

use std::collections::{BTreeMap, HashSet};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use vfio_bindings::bindings::vfio::{
    VFIO_TYPE1v2_IOMMU, VFIO_GROUP_FLAGS_VIABLE, VFIO_PCI_BAR0_REGION_INDEX, VFIO_PCI_CONFIG_REGION_INDEX,
    VFIO_PCI_MSI_IRQ_INDEX, VFIO_PCI_NUM_IRQS, VFIO_PCI_NUM_REGIONS, VFIO_REGION_INFO_FLAG_MMAP,
    VFIO_REGION_INFO_FLAG_READ, VFIO_REGION_INFO_FLAG_WRITE,
};

use super::sys::{DeviceInfo, EventFd, IrqInfo, MmioRegion, RegionInfo, VfioSys};

/// Device-fd offset of region `i`, as vfio-pci lays them out (`VFIO_PCI_INDEX_TO_OFFSET`).
pub const fn region_offset(i: u32) -> u64 {
    (i as u64) << 40
}

/// An operation of the fake that a test can make fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FakeOp {
    /// Opening the container (fails with ENOENT, like a missing `/dev/vfio/vfio`).
    OpenContainer,
    /// Opening the group (ENOENT).
    OpenGroup,
    /// `VFIO_GROUP_SET_CONTAINER` (EBUSY).
    SetContainer,
    /// `VFIO_SET_IOMMU` (EPERM).
    SetIommu,
    /// `VFIO_GROUP_GET_DEVICE_FD` (ENODEV).
    GetDevice,
    /// Mapping the BAR (ENOMEM).
    MapRegion,
    /// `VFIO_IOMMU_MAP_DMA` (ENOMEM).
    DmaMap,
    /// `VFIO_IOMMU_UNMAP_DMA` (EINVAL).
    DmaUnmap,
    /// `VFIO_DEVICE_SET_IRQS` (EINVAL).
    SetIrqs,
}

impl FakeOp {
    fn errno(self) -> i32 {
        match self {
            FakeOp::OpenContainer | FakeOp::OpenGroup => libc::ENOENT,
            FakeOp::SetContainer => libc::EBUSY,
            FakeOp::SetIommu => libc::EPERM,
            FakeOp::GetDevice => libc::ENODEV,
            FakeOp::MapRegion | FakeOp::DmaMap => libc::ENOMEM,
            FakeOp::DmaUnmap | FakeOp::SetIrqs => libc::EINVAL,
        }
    }
}

/// The fake's state. Fields are public so tests can set up odd devices and inspect what
/// the backend did.
#[derive(Debug)]
pub struct FakeState {
    /// The BAR0 words (the backend's `read32`/`write32` land here).
    pub bar0: Arc<[AtomicU32]>,
    /// BAR0's region info (size, flags); its `offset` is `region_offset(0)`.
    pub bar0_info: RegionInfo,
    /// PCI config space (256 bytes).
    pub config: Vec<u8>,
    /// What `VFIO_GET_API_VERSION` returns.
    pub api_version: i32,
    /// Whether the container supports Type1 v2.
    pub type1v2: bool,
    /// What `VFIO_GROUP_GET_STATUS` returns.
    pub group_flags: u32,
    /// The group number the fake has (opening another fails with ENOENT).
    pub group: u32,
    /// The device name the group holds.
    pub device_name: String,
    /// MSI vectors the device has.
    pub msi_count: u32,
    /// Operations that fail.
    pub fail: HashSet<FakeOp>,
    /// Live DMA mappings: iova -> (size, vaddr).
    pub maps: BTreeMap<u64, (u64, usize)>,
    /// Every (iova, size) ever mapped, in order.
    pub map_log: Vec<(u64, u64)>,
    /// Every (iova, size) ever unmapped, in order.
    pub unmap_log: Vec<(u64, u64)>,
    /// The IOMMU type set on the container.
    pub iommu_set: Option<u32>,
    /// Whether the group has been attached to a container.
    pub container_attached: bool,
    /// The eventfd registered for MSI vector 0.
    pub msi_eventfd: Option<EventFd>,
    /// Open containers, groups and devices (decremented when the backend drops them).
    pub open_handles: usize,
}

/// The test double; see the module documentation.
#[derive(Clone, Debug)]
pub struct FakeVfio {
    state: Arc<Mutex<FakeState>>,
}

/// A handle the fake gives out (container, group or device); counts itself in
/// `FakeState::open_handles` while alive.
#[derive(Debug)]
pub struct FakeHandle {
    kind: &'static str,
    state: Arc<Mutex<FakeState>>,
}

impl FakeHandle {
    /// "container", "group" or "device".
    pub fn kind(&self) -> &'static str {
        self.kind
    }
}

impl Drop for FakeHandle {
    fn drop(&mut self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.open_handles -= 1;
        if self.kind == "group" {
            s.container_attached = false;
        }
        if self.kind == "device" {
            s.msi_eventfd = None;
        }
    }
}

impl FakeVfio {
    /// A viable group `group` holding device `name` whose BAR0 is `bar0_bytes` long
    /// (mappable, read/write), with one MSI vector.
    pub fn new(group: u32, name: &str, bar0_bytes: usize) -> Self {
        let bar0: Arc<[AtomicU32]> = (0..bar0_bytes / 4).map(|_| AtomicU32::new(0)).collect();
        let mut config = vec![0u8; 256];
        config[0..4].copy_from_slice(&[0x34, 0x12, 0xe8, 0x11]);
        FakeVfio {
            state: Arc::new(Mutex::new(FakeState {
                bar0,
                bar0_info: RegionInfo {
                    index: VFIO_PCI_BAR0_REGION_INDEX,
                    flags: VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE | VFIO_REGION_INFO_FLAG_MMAP,
                    size: bar0_bytes as u64,
                    offset: region_offset(VFIO_PCI_BAR0_REGION_INDEX),
                },
                config,
                api_version: 0,
                type1v2: true,
                group_flags: VFIO_GROUP_FLAGS_VIABLE,
                group,
                device_name: name.to_string(),
                msi_count: 1,
                fail: HashSet::new(),
                maps: BTreeMap::new(),
                map_log: Vec::new(),
                unmap_log: Vec::new(),
                iommu_set: None,
                container_attached: false,
                msi_eventfd: None,
                open_handles: 0,
            })),
        }
    }

    /// Lock the state (to set it up or inspect it).
    pub fn state(&self) -> MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Make `op` fail from now on.
    pub fn fail(&self, op: FakeOp) -> &Self {
        self.state().fail.insert(op);
        self
    }

    /// The BAR0 words, shared with the backend's mapping.
    pub fn bar0(&self) -> Arc<[AtomicU32]> {
        Arc::clone(&self.state().bar0)
    }

    /// Set BAR0 word at byte offset `off` (as the device would).
    pub fn set_reg(&self, off: usize, v: u32) {
        self.state().bar0[off / 4].store(v, Ordering::SeqCst);
    }

    /// BAR0 word at byte offset `off`.
    pub fn reg(&self, off: usize) -> u32 {
        self.state().bar0[off / 4].load(Ordering::SeqCst)
    }

    /// Fire MSI vector 0 (write 1 to its eventfd); false if none is registered.
    pub fn fire_msi(&self) -> bool {
        self.state().msi_eventfd.as_ref().is_some_and(|e| e.write(1).is_ok())
    }

    fn op(&self, op: FakeOp) -> io::Result<MutexGuard<'_, FakeState>> {
        let s = self.state();
        if s.fail.contains(&op) {
            Err(io::Error::from_raw_os_error(op.errno()))
        } else {
            Ok(s)
        }
    }

    fn handle(&self, kind: &'static str, mut s: MutexGuard<'_, FakeState>) -> FakeHandle {
        s.open_handles += 1;
        FakeHandle { kind, state: Arc::clone(&self.state) }
    }
}

fn einval() -> io::Error {
    io::Error::from_raw_os_error(libc::EINVAL)
}

fn expect(h: &FakeHandle, kind: &str) -> io::Result<()> {
    if h.kind == kind {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(libc::ENOTTY))
    }
}

impl VfioSys for FakeVfio {
    type Container = FakeHandle;
    type Group = FakeHandle;
    type Device = FakeHandle;

    fn container_path(&self) -> PathBuf {
        PathBuf::from("/fake/vfio/vfio")
    }

    fn open_container(&self) -> io::Result<FakeHandle> {
        let s = self.op(FakeOp::OpenContainer)?;
        Ok(self.handle("container", s))
    }

    fn api_version(&self, c: &FakeHandle) -> io::Result<i32> {
        expect(c, "container")?;
        Ok(self.state().api_version)
    }

    fn check_extension(&self, c: &FakeHandle, ext: u32) -> io::Result<bool> {
        expect(c, "container")?;
        Ok(ext == VFIO_TYPE1v2_IOMMU && self.state().type1v2)
    }

    fn set_iommu(&self, c: &FakeHandle, iommu_type: u32) -> io::Result<()> {
        expect(c, "container")?;
        let mut s = self.op(FakeOp::SetIommu)?;
        if !s.container_attached {
            return Err(einval()); // the kernel wants a group in the container first
        }
        s.iommu_set = Some(iommu_type);
        Ok(())
    }

    fn group_path(&self, group: u32) -> PathBuf {
        PathBuf::from(format!("/fake/vfio/{group}"))
    }

    fn open_group(&self, group: u32) -> io::Result<FakeHandle> {
        let s = self.op(FakeOp::OpenGroup)?;
        if s.group != group {
            return Err(io::Error::from_raw_os_error(libc::ENOENT));
        }
        Ok(self.handle("group", s))
    }

    fn group_flags(&self, g: &FakeHandle) -> io::Result<u32> {
        expect(g, "group")?;
        Ok(self.state().group_flags)
    }

    fn group_set_container(&self, g: &FakeHandle, c: &FakeHandle) -> io::Result<()> {
        expect(g, "group")?;
        expect(c, "container")?;
        let mut s = self.op(FakeOp::SetContainer)?;
        s.container_attached = true;
        Ok(())
    }

    fn group_get_device(&self, g: &FakeHandle, name: &str) -> io::Result<FakeHandle> {
        expect(g, "group")?;
        let s = self.op(FakeOp::GetDevice)?;
        if s.device_name != name || s.iommu_set.is_none() {
            return Err(einval());
        }
        Ok(self.handle("device", s))
    }

    fn device_info(&self, d: &FakeHandle) -> io::Result<DeviceInfo> {
        expect(d, "device")?;
        Ok(DeviceInfo { flags: 2, num_regions: VFIO_PCI_NUM_REGIONS, num_irqs: VFIO_PCI_NUM_IRQS })
    }

    fn region_info(&self, d: &FakeHandle, index: u32) -> io::Result<RegionInfo> {
        expect(d, "device")?;
        let s = self.state();
        Ok(match index {
            VFIO_PCI_BAR0_REGION_INDEX => s.bar0_info,
            VFIO_PCI_CONFIG_REGION_INDEX => RegionInfo {
                index,
                flags: VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE,
                size: s.config.len() as u64,
                offset: region_offset(index),
            },
            i if i < VFIO_PCI_NUM_REGIONS => RegionInfo { index, flags: 0, size: 0, offset: region_offset(i) },
            _ => return Err(einval()),
        })
    }

    fn map_region(&self, d: &FakeHandle, info: &RegionInfo, len: usize) -> io::Result<MmioRegion> {
        expect(d, "device")?;
        let s = self.op(FakeOp::MapRegion)?;
        if info.index != VFIO_PCI_BAR0_REGION_INDEX || len as u64 > s.bar0_info.size || len > s.bar0.len() * 4 {
            return Err(einval());
        }
        let words: Arc<[AtomicU32]> = Arc::clone(&s.bar0);
        let region = MmioRegion::heap(words);
        Ok(region)
    }

    fn read_region(&self, d: &FakeHandle, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        expect(d, "device")?;
        let s = self.state();
        let base = region_offset(VFIO_PCI_CONFIG_REGION_INDEX);
        let o = offset.checked_sub(base).ok_or_else(einval)? as usize;
        let src = s.config.get(o..o + buf.len()).ok_or_else(einval)?;
        buf.copy_from_slice(src);
        Ok(())
    }

    fn write_region(&self, d: &FakeHandle, offset: u64, data: &[u8]) -> io::Result<()> {
        expect(d, "device")?;
        let mut s = self.state();
        let base = region_offset(VFIO_PCI_CONFIG_REGION_INDEX);
        let o = offset.checked_sub(base).ok_or_else(einval)? as usize;
        let dst = s.config.get_mut(o..o + data.len()).ok_or_else(einval)?;
        dst.copy_from_slice(data);
        Ok(())
    }

    unsafe fn dma_map(&self, c: &FakeHandle, iova: u64, size: u64, vaddr: *mut u8) -> io::Result<()> {
        expect(c, "container")?;
        let mut s = self.op(FakeOp::DmaMap)?;
        if s.iommu_set.is_none() || iova == 0 || size == 0 || iova % 4096 != 0 || size % 4096 != 0 {
            return Err(einval());
        }
        // the kernel refuses overlapping mappings with EEXIST
        let end = iova + size;
        if s.maps.range(..end).next_back().is_some_and(|(&a, &(l, _))| a + l > iova) {
            return Err(io::Error::from_raw_os_error(libc::EEXIST));
        }
        s.maps.insert(iova, (size, vaddr as usize));
        s.map_log.push((iova, size));
        Ok(())
    }

    fn dma_unmap(&self, c: &FakeHandle, iova: u64, size: u64) -> io::Result<u64> {
        expect(c, "container")?;
        let mut s = self.op(FakeOp::DmaUnmap)?;
        match s.maps.get(&iova) {
            Some(&(l, _)) if l == size => {
                s.maps.remove(&iova);
                s.unmap_log.push((iova, size));
                Ok(size)
            }
            _ => Ok(0),
        }
    }

    fn irq_info(&self, d: &FakeHandle, index: u32) -> io::Result<IrqInfo> {
        expect(d, "device")?;
        let s = self.state();
        let count = if index == VFIO_PCI_MSI_IRQ_INDEX { s.msi_count } else { 0 };
        Ok(IrqInfo { index, flags: 0, count })
    }

    fn set_irq_eventfd(&self, d: &FakeHandle, index: u32, fd: Option<&EventFd>) -> io::Result<()> {
        expect(d, "device")?;
        let mut s = self.op(FakeOp::SetIrqs)?;
        if index != VFIO_PCI_MSI_IRQ_INDEX || s.msi_count == 0 {
            return Err(einval());
        }
        s.msi_eventfd = match fd {
            Some(e) => Some(e.try_clone()?),
            None => None,
        };
        Ok(())
    }
}
