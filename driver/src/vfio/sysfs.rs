//! PCI addresses and the sysfs facts VFIO needs: the IOMMU group of a device, the driver it
//! is bound to, and a search by vendor/device ID. Every function takes the sysfs root
//! (`/sys` on a real system) so tests run against a fake tree in a temporary folder.

use std::fmt;
use std::fs;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::error::VfioError;

/// A PCI address `domain:bus:device.function`, printed the way sysfs and VFIO name devices
/// (`0000:03:00.0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PciAddr {
    /// PCI domain (segment).
    pub domain: u16,
    /// Bus number.
    pub bus: u8,
    /// Device number, 0..32.
    pub device: u8,
    /// Function number, 0..8.
    pub function: u8,
}

impl FromStr for PciAddr {
    type Err = VfioError;

    /// Parses `DDDD:BB:DD.F` or `BB:DD.F` (domain 0), hexadecimal, either case.
    fn from_str(s: &str) -> Result<Self, VfioError> {
        let bad = || VfioError::BadPciAddress(s.to_string());
        let hex = |t: &str, max_len: usize| -> Result<u32, VfioError> {
            if t.is_empty() || t.len() > max_len || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad());
            }
            u32::from_str_radix(t, 16).map_err(|_| bad())
        };
        let (head, func) = s.rsplit_once('.').ok_or_else(bad)?;
        let parts: Vec<&str> = head.split(':').collect();
        let (domain, bus, dev) = match parts.as_slice() {
            [d, b, v] => (hex(d, 4)?, hex(b, 2)?, hex(v, 2)?),
            [b, v] => (0, hex(b, 2)?, hex(v, 2)?),
            _ => return Err(bad()),
        };
        let function = hex(func, 1)?;
        if dev >= 32 || function >= 8 {
            return Err(bad());
        }
        Ok(PciAddr { domain: domain as u16, bus: bus as u8, device: dev as u8, function: function as u8 })
    }
}

impl fmt::Display for PciAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.domain, self.bus, self.device, self.function)
    }
}

/// `<root>/bus/pci/devices/<addr>`.
pub fn device_dir(root: &Path, addr: &PciAddr) -> PathBuf {
    root.join("bus/pci/devices").join(addr.to_string())
}

fn existing_device_dir(root: &Path, addr: &PciAddr) -> Result<PathBuf, VfioError> {
    let dir = device_dir(root, addr);
    if dir.is_dir() {
        Ok(dir)
    } else {
        Err(VfioError::NoDevice { addr: addr.to_string(), path: dir })
    }
}

/// The IOMMU group number of a device: the last component of the `iommu_group` link
/// (`../../../kernel/iommu_groups/<n>`).
pub fn iommu_group(root: &Path, addr: &PciAddr) -> Result<u32, VfioError> {
    let link = existing_device_dir(root, addr)?.join("iommu_group");
    let target = match fs::read_link(&link) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(VfioError::NoIommuGroup { addr: addr.to_string(), path: link })
        }
        Err(e) => return Err(VfioError::Sysfs(link, e)),
    };
    target
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse::<u32>().ok())
        .ok_or(VfioError::BadIommuGroup { addr: addr.to_string(), target })
}

/// The driver a device is bound to (the last component of its `driver` link), if any.
pub fn bound_driver(root: &Path, addr: &PciAddr) -> Result<Option<String>, VfioError> {
    let link = existing_device_dir(root, addr)?.join("driver");
    match fs::read_link(&link) {
        Ok(t) => Ok(t.file_name().map(|n| n.to_string_lossy().into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(VfioError::Sysfs(link, e)),
    }
}

fn read_id(path: &Path) -> Option<u16> {
    let t = fs::read_to_string(path).ok()?;
    let t = t.trim();
    u16::from_str_radix(t.strip_prefix("0x").unwrap_or(t), 16).ok()
}

/// Every PCI device whose `vendor` and `device` files hold these IDs, sorted by address.
/// Entries that are not PCI addresses or whose ID files do not parse are skipped.
pub fn find_devices(root: &Path, vendor: u16, device: u16) -> Result<Vec<PciAddr>, VfioError> {
    let dir = root.join("bus/pci/devices");
    let rd = fs::read_dir(&dir).map_err(|e| VfioError::Sysfs(dir.clone(), e))?;
    let mut out = Vec::new();
    for ent in rd.flatten() {
        let Some(addr) = ent.file_name().to_str().and_then(|n| n.parse::<PciAddr>().ok()) else {
            continue;
        };
        let p = ent.path();
        if read_id(&p.join("vendor")) == Some(vendor) && read_id(&p.join("device")) == Some(device) {
            out.push(addr);
        }
    }
    out.sort();
    Ok(out)
}
