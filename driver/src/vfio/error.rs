//! Errors of the VFIO backend (one `thiserror` enum, rust-vmm style); they reach users as
//! [`crate::DriverError::Vfio`].

use std::io;
use std::path::PathBuf;

/// What went wrong while opening or driving a device through VFIO.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    /// The string is not a PCI address (`DDDD:BB:DD.F` or `BB:DD.F`).
    #[error("{0:?} is not a PCI address (expected DDDD:BB:DD.F, e.g. 0000:03:00.0)")]
    BadPciAddress(String),
    /// No such PCI device in sysfs.
    #[error("no PCI device {addr}: {path} does not exist")]
    NoDevice {
        /// The PCI address.
        addr: String,
        /// The sysfs folder looked for.
        path: PathBuf,
    },
    /// The device has no IOMMU group (IOMMU off or absent).
    #[error(
        "PCI device {addr} has no IOMMU group ({path} is missing): enable the IOMMU \
         (intel_iommu=on / amd_iommu=on) or use a machine that has one"
    )]
    NoIommuGroup {
        /// The PCI address.
        addr: String,
        /// The `iommu_group` link looked for.
        path: PathBuf,
    },
    /// The `iommu_group` link does not end in a group number.
    #[error("cannot parse the IOMMU group of {addr} from {target:?}")]
    BadIommuGroup {
        /// The PCI address.
        addr: String,
        /// Where the link points.
        target: PathBuf,
    },
    /// The device is bound to a host driver, or to none, instead of vfio-pci.
    #[error(
        "PCI device {addr} is bound to {}, not vfio-pci: \
         echo vfio-pci > /sys/bus/pci/devices/{addr}/driver_override, unbind it from its \
         driver, then echo {addr} > /sys/bus/pci/drivers_probe",
        driver.as_deref().unwrap_or("no driver")
    )]
    NotBoundToVfio {
        /// The PCI address.
        addr: String,
        /// The driver it is bound to, if any.
        driver: Option<String>,
    },
    /// A sysfs file could not be read.
    #[error("cannot read {0}: {1}")]
    Sysfs(PathBuf, #[source] io::Error),
    /// `/dev/vfio/vfio` could not be opened.
    #[error(
        "cannot open the VFIO container {1}: {0} (is the vfio-pci module loaded, and does \
         this machine have an IOMMU?)"
    )]
    OpenContainer(#[source] io::Error, PathBuf),
    /// The kernel speaks another VFIO API version.
    #[error("VFIO API version {0} is not supported (expected 0)")]
    ApiVersion(i32),
    /// The container does not support the Type1 v2 IOMMU model.
    #[error("the VFIO container does not support VFIO_TYPE1v2_IOMMU")]
    NoType1v2,
    /// A container ioctl failed.
    #[error("VFIO container: {0} failed: {1}")]
    Container(&'static str, #[source] io::Error),
    /// `/dev/vfio/<group>` could not be opened.
    #[error(
        "cannot open VFIO group {1}: {0} (bound to vfio-pci? EBUSY means another process \
         holds the group)"
    )]
    OpenGroup(#[source] io::Error, PathBuf),
    /// Not every device of the group is bound to vfio-pci (or unbound).
    #[error(
        "VFIO group {0} is not viable: every device in /sys/kernel/iommu_groups/{0}/devices \
         must be bound to vfio-pci or to no driver"
    )]
    GroupNotViable(u32),
    /// A group ioctl failed.
    #[error("VFIO group {0}: {1} failed: {2}")]
    Group(u32, &'static str, #[source] io::Error),
    /// The device fd could not be obtained from the group.
    #[error("VFIO_GROUP_GET_DEVICE_FD {0} failed: {1}")]
    GetDevice(String, #[source] io::Error),
    /// A device ioctl or region access failed.
    #[error("VFIO device {0}: {1} failed: {2}")]
    Device(String, &'static str, #[source] io::Error),
    /// BAR0 is missing or cannot be memory mapped.
    #[error("BAR0 of {addr} cannot be mapped (region flags {flags:#x}, size {size})")]
    Bar0NotMappable {
        /// The PCI address.
        addr: String,
        /// `vfio_region_info.flags`.
        flags: u32,
        /// Region size.
        size: u64,
    },
    /// BAR0 is smaller than the register map.
    #[error("BAR0 of {addr} is {size} bytes, the register map needs {need}")]
    Bar0TooSmall {
        /// The PCI address.
        addr: String,
        /// Region size.
        size: u64,
        /// Bytes needed.
        need: u64,
    },
    /// The configured IOVA window is empty or has no room for a buffer.
    #[error("no IOVA space left for {len} bytes in {base:#x}..{limit:#x}")]
    IovaExhausted {
        /// Bytes asked for.
        len: usize,
        /// Window start.
        base: u64,
        /// Window end (exclusive).
        limit: u64,
    },
    /// The configuration is unusable.
    #[error("bad VFIO backend configuration: {0}")]
    Config(String),
    /// Anonymous memory for a DMA buffer could not be mapped.
    #[error("cannot allocate {len} bytes of DMA memory: {source}")]
    DmaMemory {
        /// Bytes asked for.
        len: usize,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// VFIO_IOMMU_MAP_DMA failed.
    #[error("VFIO_IOMMU_MAP_DMA iova {iova:#x} size {size:#x} failed: {source} (RLIMIT_MEMLOCK?)")]
    DmaMap {
        /// Device address.
        iova: u64,
        /// Bytes.
        size: u64,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The device has no MSI interrupt.
    #[error("VFIO device {0} has no MSI interrupt")]
    NoMsi(String),
    /// [`crate::vfio::VfioBackend::wait_irq`] without an enabled interrupt.
    #[error("no interrupt is enabled (call enable_msi_eventfd first)")]
    IrqNotEnabled,
    /// An eventfd operation failed.
    #[error("eventfd: {0} failed: {1}")]
    EventFd(&'static str, #[source] io::Error),
}

impl VfioError {
    /// Whether the error means "no usable VFIO on this machine" (no `/dev/vfio`, no IOMMU,
    /// no such device), as opposed to a failure of a working VFIO stack.
    pub fn is_unavailable(&self) -> bool {
        match self {
            VfioError::NoDevice { .. } | VfioError::NoIommuGroup { .. } => true,
            VfioError::OpenContainer(e, _) | VfioError::OpenGroup(e, _) => e.kind() == io::ErrorKind::NotFound,
            _ => false,
        }
    }
}
