//! Host memory as the engine reaches it: only through a DMA interface.
//!
//! [`Dma`] is the boundary the HDL will have (a read/write interface a board wires to a PCIe
//! DMA IP). [`HostMem`] is a sparse model of host memory (4 KiB pages allocated on first
//! touch) that the simulator and the driver's simulator backend share.

use std::collections::HashMap;

/// A DMA access that host memory refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    /// The address range is not mapped for device access (an IOMMU fault on real hardware).
    #[error("DMA {op} of {len} bytes at {addr:#x} is outside the mapped windows")]
    Unmapped {
        /// "read" or "write".
        op: &'static str,
        /// Start address.
        addr: u64,
        /// Length.
        len: usize,
    },
}

/// The engine's view of host memory.
pub trait Dma {
    /// Read `buf.len()` bytes at `addr`.
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError>;
    /// Write `data` at `addr`.
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError>;
}

const PAGE: u64 = 4096;

/// Sparse host memory, optionally behind an IOMMU: then DMA reaches only the mapped windows.
#[derive(Clone, Debug, Default)]
pub struct HostMem {
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
    iommu: bool,
    windows: Vec<(u64, u64)>,
    /// Bytes read by DMA.
    pub dma_read_bytes: u64,
    /// Bytes written by DMA.
    pub dma_write_bytes: u64,
    /// Record every DMA write's range in `writes` (for tests that bound where the engine
    /// may write).
    pub track_writes: bool,
    /// DMA write ranges, when tracked.
    pub writes: Vec<(u64, usize)>,
}

impl HostMem {
    /// Empty memory; DMA reaches every address.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty memory behind an IOMMU: DMA reaches only windows mapped with
    /// [`HostMem::map_window`].
    pub fn with_iommu() -> Self {
        HostMem { iommu: true, ..Self::default() }
    }

    /// Allow device access to `[addr, addr+len)`.
    pub fn map_window(&mut self, addr: u64, len: u64) {
        self.windows.push((addr, addr.saturating_add(len)));
    }

    /// Remove a window previously mapped at `addr`.
    pub fn unmap_window(&mut self, addr: u64) {
        self.windows.retain(|w| w.0 != addr);
    }

    fn allowed(&self, addr: u64, len: usize) -> bool {
        if !self.iommu {
            return true;
        }
        let end = addr.saturating_add(len as u64);
        self.windows.iter().any(|&(s, e)| addr >= s && end <= e)
    }

    /// CPU-side read (no window check).
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        let mut off = 0usize;
        while off < buf.len() {
            let a = addr + off as u64;
            let (pg, po) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - po).min(buf.len() - off);
            match self.pages.get(&pg) {
                Some(p) => buf[off..off + n].copy_from_slice(&p[po..po + n]),
                None => buf[off..off + n].fill(0),
            }
            off += n;
        }
    }

    /// CPU-side write (no window check).
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut off = 0usize;
        while off < data.len() {
            let a = addr + off as u64;
            let (pg, po) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - po).min(data.len() - off);
            let p = self.pages.entry(pg).or_insert_with(|| Box::new([0u8; PAGE as usize]));
            p[po..po + n].copy_from_slice(&data[off..off + n]);
            off += n;
        }
    }

    /// CPU-side read into a new vector.
    pub fn read_vec(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.read(addr, &mut v);
        v
    }

    /// Read a little-endian u64.
    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }
}

impl Dma for HostMem {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        if !self.allowed(addr, buf.len()) {
            return Err(DmaError::Unmapped { op: "read", addr, len: buf.len() });
        }
        self.read(addr, buf);
        self.dma_read_bytes += buf.len() as u64;
        Ok(())
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if !self.allowed(addr, data.len()) {
            return Err(DmaError::Unmapped { op: "write", addr, len: data.len() });
        }
        self.write(addr, data);
        self.dma_write_bytes += data.len() as u64;
        if self.track_writes {
            self.writes.push((addr, data.len()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_read_write_across_pages() {
        let mut m = HostMem::new();
        let data: Vec<u8> = (0..10000).map(|i| i as u8).collect();
        m.write(4090, &data);
        assert_eq!(m.read_vec(4090, 10000), data);
        assert_eq!(m.read_vec(0, 4), vec![0; 4]);
    }

    #[test]
    fn windows_fault_outside() {
        let mut m = HostMem::with_iommu();
        m.map_window(0x1000, 0x1000);
        assert!(m.dma_write(0x1000, &[1; 16]).is_ok());
        assert!(m.dma_write(0x1FF8, &[1; 16]).is_err());
        let mut b = [0u8; 4];
        assert!(m.dma_read(0x3000, &mut b).is_err());
    }
}
