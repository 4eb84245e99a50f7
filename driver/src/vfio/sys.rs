//! The system layer: every VFIO ioctl, every mapping and every `unsafe` block of the VFIO
//! backend lives here.
//!
//! [`VfioSys`] is the seam between the backend's logic and the kernel: [`LinuxVfio`] issues
//! the real ioctls on `/dev/vfio`, [`super::fake::FakeVfio`] answers with canned values and a
//! heap-backed BAR so the backend is tested without an IOMMU.
//!
//! Safety model (as in rust-vmm's vfio-ioctls): we trust the kernel to validate every file
//! descriptor, ioctl argument and buffer we hand it, and to return what its ABI promises.
//! Memory that a device can reach (BARs, DMA buffers) is never turned into Rust references:
//! it is only accessed through raw pointers with volatile operations, because the device
//! may read or write it at any time.

use std::ffi::CString;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use vfio_bindings::bindings::vfio::{
    vfio_device_info, vfio_group_status, vfio_iommu_type1_dma_map, vfio_iommu_type1_dma_unmap, vfio_irq_info,
    vfio_irq_set, vfio_region_info, VFIO_BASE, VFIO_DMA_MAP_FLAG_READ, VFIO_DMA_MAP_FLAG_WRITE,
    VFIO_IRQ_SET_ACTION_TRIGGER, VFIO_IRQ_SET_DATA_EVENTFD, VFIO_IRQ_SET_DATA_NONE, VFIO_TYPE,
};

/// `_IO(VFIO_TYPE, VFIO_BASE + n)`: every VFIO ioctl is a no-size `_IO` number.
const fn vfio_io(n: u32) -> libc::c_ulong {
    ((VFIO_TYPE as libc::c_ulong) << 8) | (VFIO_BASE + n) as libc::c_ulong
}

/// VFIO ioctl request numbers (`include/uapi/linux/vfio.h`).
pub mod ioctls {
    use super::vfio_io;
    /// `VFIO_GET_API_VERSION`.
    pub const GET_API_VERSION: libc::c_ulong = vfio_io(0);
    /// `VFIO_CHECK_EXTENSION`.
    pub const CHECK_EXTENSION: libc::c_ulong = vfio_io(1);
    /// `VFIO_SET_IOMMU`.
    pub const SET_IOMMU: libc::c_ulong = vfio_io(2);
    /// `VFIO_GROUP_GET_STATUS`.
    pub const GROUP_GET_STATUS: libc::c_ulong = vfio_io(3);
    /// `VFIO_GROUP_SET_CONTAINER`.
    pub const GROUP_SET_CONTAINER: libc::c_ulong = vfio_io(4);
    /// `VFIO_GROUP_GET_DEVICE_FD`.
    pub const GROUP_GET_DEVICE_FD: libc::c_ulong = vfio_io(6);
    /// `VFIO_DEVICE_GET_INFO`.
    pub const DEVICE_GET_INFO: libc::c_ulong = vfio_io(7);
    /// `VFIO_DEVICE_GET_REGION_INFO`.
    pub const DEVICE_GET_REGION_INFO: libc::c_ulong = vfio_io(8);
    /// `VFIO_DEVICE_GET_IRQ_INFO`.
    pub const DEVICE_GET_IRQ_INFO: libc::c_ulong = vfio_io(9);
    /// `VFIO_DEVICE_SET_IRQS`.
    pub const DEVICE_SET_IRQS: libc::c_ulong = vfio_io(10);
    /// `VFIO_IOMMU_MAP_DMA`.
    pub const IOMMU_MAP_DMA: libc::c_ulong = vfio_io(13);
    /// `VFIO_IOMMU_UNMAP_DMA`.
    pub const IOMMU_UNMAP_DMA: libc::c_ulong = vfio_io(14);
}

/// `VFIO_DEVICE_GET_INFO`'s answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    /// `VFIO_DEVICE_FLAGS_*`.
    pub flags: u32,
    /// Number of regions (9 for vfio-pci: BAR0..5, ROM, config, VGA).
    pub num_regions: u32,
    /// Number of interrupt indexes (INTx, MSI, MSI-X, ERR, REQ for vfio-pci).
    pub num_irqs: u32,
}

/// `VFIO_DEVICE_GET_REGION_INFO`'s answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionInfo {
    /// Region index (`VFIO_PCI_*_REGION_INDEX`).
    pub index: u32,
    /// `VFIO_REGION_INFO_FLAG_*` (READ 1, WRITE 2, MMAP 4, CAPS 8).
    pub flags: u32,
    /// Size in bytes (0: the region does not exist, e.g. an unimplemented BAR).
    pub size: u64,
    /// Offset of the region in the device fd (for `mmap` and `pread`/`pwrite`).
    pub offset: u64,
}

/// `VFIO_DEVICE_GET_IRQ_INFO`'s answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqInfo {
    /// Interrupt index (`VFIO_PCI_*_IRQ_INDEX`).
    pub index: u32,
    /// `VFIO_IRQ_INFO_*`.
    pub flags: u32,
    /// Number of vectors.
    pub count: u32,
}

/// The VFIO operations the backend needs, one per ioctl (plus the BAR mapping and the
/// region reads/writes on the device fd). Implemented by [`LinuxVfio`] and by the test
/// double [`super::fake::FakeVfio`].
pub trait VfioSys {
    /// An open container (`/dev/vfio/vfio`).
    type Container;
    /// An open group (`/dev/vfio/<n>`).
    type Group;
    /// A device fd.
    type Device;

    /// Where the container is opened from (for error messages).
    fn container_path(&self) -> PathBuf;
    /// Open a new container.
    fn open_container(&self) -> io::Result<Self::Container>;
    /// `VFIO_GET_API_VERSION`.
    fn api_version(&self, c: &Self::Container) -> io::Result<i32>;
    /// `VFIO_CHECK_EXTENSION`: whether the container supports IOMMU model `ext`.
    fn check_extension(&self, c: &Self::Container, ext: u32) -> io::Result<bool>;
    /// `VFIO_SET_IOMMU`.
    fn set_iommu(&self, c: &Self::Container, iommu_type: u32) -> io::Result<()>;
    /// Where group `group` is opened from (for error messages).
    fn group_path(&self, group: u32) -> PathBuf;
    /// Open group `group`.
    fn open_group(&self, group: u32) -> io::Result<Self::Group>;
    /// `VFIO_GROUP_GET_STATUS`: the group's `VFIO_GROUP_FLAGS_*`.
    fn group_flags(&self, g: &Self::Group) -> io::Result<u32>;
    /// `VFIO_GROUP_SET_CONTAINER`.
    fn group_set_container(&self, g: &Self::Group, c: &Self::Container) -> io::Result<()>;
    /// `VFIO_GROUP_GET_DEVICE_FD` for the device called `name` (its PCI address).
    fn group_get_device(&self, g: &Self::Group, name: &str) -> io::Result<Self::Device>;
    /// `VFIO_DEVICE_GET_INFO`.
    fn device_info(&self, d: &Self::Device) -> io::Result<DeviceInfo>;
    /// `VFIO_DEVICE_GET_REGION_INFO` for region `index`.
    fn region_info(&self, d: &Self::Device, index: u32) -> io::Result<RegionInfo>;
    /// Map `len` bytes of a region (from its start) for MMIO.
    fn map_region(&self, d: &Self::Device, info: &RegionInfo, len: usize) -> io::Result<MmioRegion>;
    /// `pread` on the device fd at `offset` (a region's offset plus the offset inside it).
    fn read_region(&self, d: &Self::Device, offset: u64, buf: &mut [u8]) -> io::Result<()>;
    /// `pwrite` on the device fd at `offset`.
    fn write_region(&self, d: &Self::Device, offset: u64, data: &[u8]) -> io::Result<()>;
    /// `VFIO_IOMMU_MAP_DMA` (read and write) of `size` bytes at `vaddr` to `iova`.
    ///
    /// # Safety
    ///
    /// `vaddr..vaddr + size` must be memory of this process that stays mapped (and is not
    /// reused for anything else) until [`VfioSys::dma_unmap`] of the same range succeeds,
    /// and the CPU may only access it with volatile or atomic operations meanwhile: the
    /// device can read and write it at any time.
    unsafe fn dma_map(&self, c: &Self::Container, iova: u64, size: u64, vaddr: *mut u8) -> io::Result<()>;
    /// `VFIO_IOMMU_UNMAP_DMA`; returns the number of bytes unmapped.
    fn dma_unmap(&self, c: &Self::Container, iova: u64, size: u64) -> io::Result<u64>;
    /// `VFIO_DEVICE_GET_IRQ_INFO` for interrupt index `index`.
    fn irq_info(&self, d: &Self::Device, index: u32) -> io::Result<IrqInfo>;
    /// `VFIO_DEVICE_SET_IRQS`: signal vector 0 of `index` on `fd` (`Some`), or disable
    /// every vector of `index` (`None`).
    fn set_irq_eventfd(&self, d: &Self::Device, index: u32, fd: Option<&EventFd>) -> io::Result<()>;
}

/// The real VFIO: ioctls on the files under `/dev/vfio` (or another folder, for tests).
#[derive(Clone, Debug)]
pub struct LinuxVfio {
    dir: PathBuf,
}

impl Default for LinuxVfio {
    fn default() -> Self {
        LinuxVfio::new()
    }
}

impl LinuxVfio {
    /// VFIO under `/dev/vfio`.
    pub fn new() -> Self {
        LinuxVfio { dir: PathBuf::from("/dev/vfio") }
    }

    /// VFIO device nodes under `dir` instead of `/dev/vfio`.
    pub fn with_dir(dir: impl Into<PathBuf>) -> Self {
        LinuxVfio { dir: dir.into() }
    }
}

fn open_rw(p: &Path) -> io::Result<File> {
    OpenOptions::new().read(true).write(true).open(p)
}

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// An ioctl whose argument is a plain integer.
fn ioctl_val(f: &File, req: libc::c_ulong, arg: libc::c_ulong) -> io::Result<libc::c_int> {
    // SAFETY: `f` is an open file and `arg` is passed by value, so the kernel reads no
    // memory of ours; an unsuitable fd or request makes the kernel fail with an errno.
    check(unsafe { libc::ioctl(f.as_raw_fd(), req as _, arg) })
}

/// An ioctl whose argument points at `*arg`, which the kernel may read and update.
///
/// # Safety
///
/// `arg` must point to a valid, properly sized and initialised argument struct for `req`
/// (its `argsz` field, where it has one, must not exceed the size of `*arg`).
unsafe fn ioctl_ptr<T>(f: &File, req: libc::c_ulong, arg: *mut T) -> io::Result<libc::c_int> {
    // SAFETY: the caller guarantees `arg` is a valid argument for `req`; the kernel reads and
    // writes at most `argsz` bytes of it.
    check(unsafe { libc::ioctl(f.as_raw_fd(), req as _, arg) })
}

/// `struct vfio_irq_set` followed by one eventfd (`data[]` holds an `int32_t` per vector).
#[repr(C)]
struct IrqSetOneFd {
    hdr: vfio_irq_set,
    fd: i32,
}
const _: () = assert!(std::mem::size_of::<IrqSetOneFd>() == 24);
const _: () = assert!(std::mem::offset_of!(IrqSetOneFd, fd) == 20);

impl VfioSys for LinuxVfio {
    type Container = File;
    type Group = File;
    type Device = File;

    fn container_path(&self) -> PathBuf {
        self.dir.join("vfio")
    }

    fn open_container(&self) -> io::Result<File> {
        open_rw(&self.container_path())
    }

    fn api_version(&self, c: &File) -> io::Result<i32> {
        ioctl_val(c, ioctls::GET_API_VERSION, 0)
    }

    fn check_extension(&self, c: &File, ext: u32) -> io::Result<bool> {
        Ok(ioctl_val(c, ioctls::CHECK_EXTENSION, ext.into())? > 0)
    }

    fn set_iommu(&self, c: &File, iommu_type: u32) -> io::Result<()> {
        ioctl_val(c, ioctls::SET_IOMMU, iommu_type.into()).map(drop)
    }

    fn group_path(&self, group: u32) -> PathBuf {
        self.dir.join(group.to_string())
    }

    fn open_group(&self, group: u32) -> io::Result<File> {
        open_rw(&self.group_path(group))
    }

    fn group_flags(&self, g: &File) -> io::Result<u32> {
        let mut st = vfio_group_status { argsz: std::mem::size_of::<vfio_group_status>() as u32, flags: 0 };
        // SAFETY: `st` is a vfio_group_status with a matching argsz.
        unsafe { ioctl_ptr(g, ioctls::GROUP_GET_STATUS, &mut st) }?;
        Ok(st.flags)
    }

    fn group_set_container(&self, g: &File, c: &File) -> io::Result<()> {
        let mut fd: libc::c_int = c.as_raw_fd();
        // SAFETY: the argument is a pointer to an int holding the container fd.
        unsafe { ioctl_ptr(g, ioctls::GROUP_SET_CONTAINER, &mut fd) }.map(drop)
    }

    fn group_get_device(&self, g: &File, name: &str) -> io::Result<File> {
        let name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: the argument is a NUL-terminated string that outlives the call.
        let fd = unsafe { ioctl_ptr(g, ioctls::GROUP_GET_DEVICE_FD, name.as_ptr().cast_mut()) }?;
        // SAFETY: on success the ioctl returns a new file descriptor that nothing else owns.
        Ok(File::from(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn device_info(&self, d: &File) -> io::Result<DeviceInfo> {
        let mut di = vfio_device_info { argsz: std::mem::size_of::<vfio_device_info>() as u32, ..Default::default() };
        // SAFETY: `di` is a vfio_device_info with a matching argsz.
        unsafe { ioctl_ptr(d, ioctls::DEVICE_GET_INFO, &mut di) }?;
        Ok(DeviceInfo { flags: di.flags, num_regions: di.num_regions, num_irqs: di.num_irqs })
    }

    fn region_info(&self, d: &File, index: u32) -> io::Result<RegionInfo> {
        let mut ri =
            vfio_region_info { argsz: std::mem::size_of::<vfio_region_info>() as u32, index, ..Default::default() };
        // SAFETY: `ri` is a vfio_region_info with a matching argsz; if the region has a
        // capability chain the kernel only reports the size it needs in argsz, it never
        // writes past the argsz we gave.
        unsafe { ioctl_ptr(d, ioctls::DEVICE_GET_REGION_INFO, &mut ri) }?;
        Ok(RegionInfo { index, flags: ri.flags, size: ri.size, offset: ri.offset })
    }

    fn map_region(&self, d: &File, info: &RegionInfo, len: usize) -> io::Result<MmioRegion> {
        let map = memmap2::MmapOptions::new().offset(info.offset).len(len).map_raw(d)?;
        Ok(MmioRegion { backing: Backing::Mapped(map), len })
    }

    fn read_region(&self, d: &File, offset: u64, buf: &mut [u8]) -> io::Result<()> {
        d.read_exact_at(buf, offset)
    }

    fn write_region(&self, d: &File, offset: u64, data: &[u8]) -> io::Result<()> {
        d.write_all_at(data, offset)
    }

    unsafe fn dma_map(&self, c: &File, iova: u64, size: u64, vaddr: *mut u8) -> io::Result<()> {
        let mut m = vfio_iommu_type1_dma_map {
            argsz: std::mem::size_of::<vfio_iommu_type1_dma_map>() as u32,
            flags: VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
            vaddr: vaddr as u64,
            iova,
            size,
        };
        // SAFETY: `m` is a vfio_iommu_type1_dma_map with a matching argsz; the caller
        // guarantees the memory behind `vaddr` stays valid while it is mapped.
        unsafe { ioctl_ptr(c, ioctls::IOMMU_MAP_DMA, &mut m) }.map(drop)
    }

    fn dma_unmap(&self, c: &File, iova: u64, size: u64) -> io::Result<u64> {
        let mut u = vfio_iommu_type1_dma_unmap {
            argsz: std::mem::size_of::<vfio_iommu_type1_dma_unmap>() as u32,
            flags: 0,
            iova,
            size,
            ..Default::default()
        };
        // SAFETY: `u` is a vfio_iommu_type1_dma_unmap with a matching argsz and no flags, so
        // the kernel uses no dirty bitmap (the flexible `data` member stays empty).
        unsafe { ioctl_ptr(c, ioctls::IOMMU_UNMAP_DMA, &mut u) }?;
        Ok(u.size)
    }

    fn irq_info(&self, d: &File, index: u32) -> io::Result<IrqInfo> {
        let mut ii = vfio_irq_info { argsz: std::mem::size_of::<vfio_irq_info>() as u32, index, flags: 0, count: 0 };
        // SAFETY: `ii` is a vfio_irq_info with a matching argsz.
        unsafe { ioctl_ptr(d, ioctls::DEVICE_GET_IRQ_INFO, &mut ii) }?;
        Ok(IrqInfo { index, flags: ii.flags, count: ii.count })
    }

    fn set_irq_eventfd(&self, d: &File, index: u32, fd: Option<&EventFd>) -> io::Result<()> {
        match fd {
            Some(e) => {
                let mut s = IrqSetOneFd {
                    hdr: vfio_irq_set {
                        argsz: std::mem::size_of::<IrqSetOneFd>() as u32,
                        flags: VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER,
                        index,
                        start: 0,
                        count: 1,
                        ..Default::default()
                    },
                    fd: e.as_raw_fd(),
                };
                // SAFETY: `s` is a vfio_irq_set for one vector followed by that vector's
                // eventfd, and argsz covers exactly both.
                unsafe { ioctl_ptr(d, ioctls::DEVICE_SET_IRQS, &mut s) }.map(drop)
            }
            None => {
                let mut s = vfio_irq_set {
                    argsz: std::mem::size_of::<vfio_irq_set>() as u32,
                    flags: VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER,
                    index,
                    start: 0,
                    count: 0,
                    ..Default::default()
                };
                // SAFETY: `s` is a vfio_irq_set without data (count 0 = disable the index).
                unsafe { ioctl_ptr(d, ioctls::DEVICE_SET_IRQS, &mut s) }.map(drop)
            }
        }
    }
}

/// The host's page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf takes no pointers and has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 {
        p as u64
    } else {
        4096
    }
}

#[derive(Debug)]
enum Backing {
    /// A BAR mapped from a device fd.
    Mapped(memmap2::MmapRaw),
    /// Heap words standing in for a BAR (tests).
    Heap(Arc<[AtomicU32]>),
}

/// A memory-mapped device region (a BAR) with 32-bit, bounds-checked, volatile access.
#[derive(Debug)]
pub struct MmioRegion {
    backing: Backing,
    len: usize,
}

impl MmioRegion {
    /// A "BAR" made of heap words (for test doubles): reads and writes are atomic accesses to
    /// `words`, which the owner of the other `Arc` can inspect or change.
    pub fn heap(words: Arc<[AtomicU32]>) -> Self {
        let len = words.len() * 4;
        MmioRegion { backing: Backing::Heap(words), len }
    }

    /// Mapped length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the region is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn in_bounds(&self, off: usize) -> bool {
        off % 4 == 0 && off.checked_add(4).is_some_and(|e| e <= self.len)
    }

    /// One 32-bit read at byte offset `off`; `None` if `off` is not 4-byte aligned or the
    /// word is not inside the region (nothing is accessed then).
    pub fn read32(&self, off: usize) -> Option<u32> {
        if !self.in_bounds(off) {
            return None;
        }
        Some(match &self.backing {
            Backing::Mapped(m) => {
                // SAFETY: `off + 4 <= len` and the mapping is `len` bytes long; the mapping
                // is page aligned and `off` is a multiple of 4, so the pointer is aligned.
                // Device memory is only ever accessed with volatile operations.
                unsafe { ptr::read_volatile(m.as_ptr().wrapping_add(off).cast::<u32>()) }
            }
            Backing::Heap(w) => w[off / 4].load(Ordering::SeqCst),
        })
    }

    /// One 32-bit write at byte offset `off`; false (and nothing written) if `off` is not
    /// 4-byte aligned or the word is not inside the region.
    pub fn write32(&self, off: usize, val: u32) -> bool {
        if !self.in_bounds(off) {
            return false;
        }
        match &self.backing {
            Backing::Mapped(m) => {
                // SAFETY: as in `read32`: in bounds, aligned, volatile.
                unsafe { ptr::write_volatile(m.as_mut_ptr().wrapping_add(off).cast::<u32>(), val) }
            }
            Backing::Heap(w) => w[off / 4].store(val, Ordering::SeqCst),
        }
        true
    }
}

/// Anonymous, zeroed, page-aligned memory for DMA. It is accessed only through volatile
/// copies ([`DmaMemory::read`], [`DmaMemory::write`]): once mapped for the device, the device
/// may change it at any time.
#[derive(Debug)]
pub struct DmaMemory {
    map: memmap2::MmapRaw,
    len: usize,
}

impl DmaMemory {
    /// `len` bytes (> 0, a multiple of the page size) of zeroed anonymous memory.
    pub fn anon(len: usize) -> io::Result<Self> {
        if len == 0 {
            return Err(io::Error::from(io::ErrorKind::InvalidInput));
        }
        let map = memmap2::MmapOptions::new().len(len).map_anon()?;
        Ok(DmaMemory { map: memmap2::MmapRaw::from(map), len })
    }

    /// Start of the memory (page aligned), for [`VfioSys::dma_map`].
    pub fn as_ptr(&self) -> *mut u8 {
        self.map.as_mut_ptr()
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the memory is empty (never: `anon` refuses 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn range_ok(&self, off: usize, n: usize) -> bool {
        off.checked_add(n).is_some_and(|e| e <= self.len)
    }

    /// Copy `out.len()` bytes from offset `off`; false (nothing read) if out of bounds.
    pub fn read(&self, off: usize, out: &mut [u8]) -> bool {
        if !self.range_ok(off, out.len()) {
            return false;
        }
        // `off..off + out.len()` lies inside the mapping (checked above).
        let src = self.as_ptr().wrapping_add(off).cast_const();
        let n = out.len();
        let mut i = 0;
        while i < n {
            let p = src.wrapping_add(i);
            if (p as usize) % 8 == 0 && n - i >= 8 {
                // SAFETY: `p..p + 8` lies inside the checked range and `p` is 8-byte aligned.
                let v = unsafe { ptr::read_volatile(p.cast::<u64>()) };
                out[i..i + 8].copy_from_slice(&v.to_ne_bytes());
                i += 8;
            } else {
                // SAFETY: `p` lies inside the checked range.
                out[i] = unsafe { ptr::read_volatile(p) };
                i += 1;
            }
        }
        true
    }

    /// Copy `data` to offset `off`; false (nothing written) if out of bounds.
    pub fn write(&self, off: usize, data: &[u8]) -> bool {
        if !self.range_ok(off, data.len()) {
            return false;
        }
        // `off..off + data.len()` lies inside the mapping (checked above).
        let dst = self.as_ptr().wrapping_add(off);
        let n = data.len();
        let mut i = 0;
        while i < n {
            let p = dst.wrapping_add(i);
            if (p as usize) % 8 == 0 && n - i >= 8 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&data[i..i + 8]);
                // SAFETY: `p..p + 8` lies inside the checked range and `p` is 8-byte aligned.
                unsafe { ptr::write_volatile(p.cast::<u64>(), u64::from_ne_bytes(w)) };
                i += 8;
            } else {
                // SAFETY: `p` lies inside the checked range.
                unsafe { ptr::write_volatile(p, data[i]) };
                i += 1;
            }
        }
        true
    }
}

/// A non-blocking, close-on-exec eventfd (interrupt notification from VFIO).
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// A new eventfd with count 0.
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd takes no pointers; it returns a new fd or -1.
        let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
        // SAFETY: `fd` was just returned by eventfd and is owned by nobody else.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Another handle on the same eventfd (a `dup`).
    pub fn try_clone(&self) -> io::Result<Self> {
        self.0.try_clone().map(EventFd)
    }

    /// Add `v` to the counter (what the kernel does when the interrupt fires).
    pub fn write(&self, v: u64) -> io::Result<()> {
        let b = v.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live local buffer to our own fd.
        let n = unsafe { libc::write(self.0.as_raw_fd(), b.as_ptr().cast(), 8) };
        if n == 8 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    /// Read and reset the counter; `None` if it is 0.
    pub fn try_read(&self) -> io::Result<Option<u64>> {
        let mut b = [0u8; 8];
        // SAFETY: reads at most 8 bytes into a live local buffer of 8 bytes from our own fd.
        let n = unsafe { libc::read(self.0.as_raw_fd(), b.as_mut_ptr().cast(), 8) };
        if n == 8 {
            return Ok(Some(u64::from_ne_bytes(b)));
        }
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock {
            Ok(None)
        } else {
            Err(e)
        }
    }

    /// Wait until the counter is non-zero, at most `timeout`; then read and reset it.
    /// `Ok(None)` on timeout.
    pub fn wait(&self, timeout: Duration) -> io::Result<Option<u64>> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(v) = self.try_read()? {
                return Ok(Some(v));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let ms = left.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
            let mut p = libc::pollfd { fd: self.0.as_raw_fd(), events: libc::POLLIN, revents: 0 };
            // SAFETY: `p` is one valid pollfd that outlives the call.
            let r = unsafe { libc::poll(&mut p, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
}

impl AsRawFd for EventFd {
    fn as_raw_fd(&self) -> std::os::fd::RawFd {
        self.0.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ioctl_numbers_match_the_kernel_header() {
        // _IO(';', 100 + n) from include/uapi/linux/vfio.h
        assert_eq!(ioctls::GET_API_VERSION, 0x3b64);
        assert_eq!(ioctls::CHECK_EXTENSION, 0x3b65);
        assert_eq!(ioctls::SET_IOMMU, 0x3b66);
        assert_eq!(ioctls::GROUP_GET_STATUS, 0x3b67);
        assert_eq!(ioctls::GROUP_SET_CONTAINER, 0x3b68);
        assert_eq!(ioctls::GROUP_GET_DEVICE_FD, 0x3b6a);
        assert_eq!(ioctls::DEVICE_GET_INFO, 0x3b6b);
        assert_eq!(ioctls::DEVICE_GET_REGION_INFO, 0x3b6c);
        assert_eq!(ioctls::DEVICE_GET_IRQ_INFO, 0x3b6d);
        assert_eq!(ioctls::DEVICE_SET_IRQS, 0x3b6e);
        assert_eq!(ioctls::IOMMU_MAP_DMA, 0x3b71);
        assert_eq!(ioctls::IOMMU_UNMAP_DMA, 0x3b72);
    }

    #[test]
    fn dma_memory_copies_at_any_alignment() {
        let m = DmaMemory::anon(8192).unwrap();
        let data: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
        for off in [0usize, 1, 3, 8, 13, 8192 - 200] {
            assert!(m.write(off, &data));
            let mut back = vec![0u8; data.len()];
            assert!(m.read(off, &mut back));
            assert_eq!(back, data, "offset {off}");
        }
        assert!(!m.write(8192 - 199, &data));
        assert!(!m.read(usize::MAX, &mut [0u8; 2]));
        assert!(DmaMemory::anon(0).is_err());
    }

    #[test]
    fn eventfd_counts_and_times_out() {
        let e = EventFd::new().unwrap();
        assert_eq!(e.wait(Duration::from_millis(10)).unwrap(), None);
        let c = e.try_clone().unwrap();
        c.write(2).unwrap();
        c.write(3).unwrap();
        assert_eq!(e.wait(Duration::from_secs(1)).unwrap(), Some(5));
        assert_eq!(e.try_read().unwrap(), None);
    }
}
