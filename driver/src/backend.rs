//! What the driver needs from the platform: 32-bit register access to BAR0 and DMA memory
//! that both the CPU and the engine can reach.

use crate::error::{DriverError, Result};

/// A buffer of DMA memory: the engine reaches it at `iova`, the CPU through the backend.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaBuf {
    /// Device (IOMMU) address of the first byte.
    pub iova: u64,
    /// Length in bytes.
    pub len: usize,
    /// Backend-private identifier.
    pub id: usize,
}

/// A platform the driver runs on (VFIO, or a simulator).
pub trait Backend {
    /// Read a 32-bit register of BAR0.
    fn read32(&mut self, off: u32) -> u32;
    /// Write a 32-bit register of BAR0.
    fn write32(&mut self, off: u32, val: u32);
    /// Allocate `len` bytes of zeroed DMA memory, page aligned, mapped for the device.
    fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf>;
    /// Release a buffer (unmaps it from the device).
    fn dma_free(&mut self, buf: DmaBuf);
    /// CPU read of `out.len()` bytes at offset `off` of `buf`.
    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]);
    /// CPU write of `data` at offset `off` of `buf`.
    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]);

    /// Make `len` bytes of the application's own memory at `addr` reachable by the engine's
    /// DMA (on VFIO: pinned and mapped into the IOMMU), without copying: the returned
    /// buffer's `iova` is the device address of `addr`. The CPU keeps using the memory
    /// directly (it is not a buffer for [`Backend::mem_read`]). The default refuses.
    ///
    /// # Safety
    ///
    /// `addr..addr + len` must stay allocated, mapped and not reused for anything else until
    /// [`Backend::unmap_user`] of the returned buffer has returned: the engine may read and
    /// write it at any time until then.
    unsafe fn map_user(&mut self, addr: *mut u8, len: usize) -> Result<DmaBuf> {
        let _ = (addr, len);
        Err(DriverError::Unsupported("mapping application memory for DMA"))
    }

    /// Undo [`Backend::map_user`]: when this returns, the engine can no longer reach the
    /// memory.
    fn unmap_user(&mut self, buf: DmaBuf) {
        let _ = buf;
    }

    /// Write one 128-byte SQ WQE image, its `bf_db` set, into QP `qpn`'s slot of the
    /// BlueFlame window (BAR2 offset 128 x `qpn`): two 64-byte stores in order, each fenced.
    /// The write is the QP's doorbell. False when the platform has no window (the default):
    /// nothing was written and the caller rings `SQ_DB`.
    fn bf_write(&mut self, qpn: u32, wqe: &[u8; 128]) -> bool {
        let _ = (qpn, wqe);
        false
    }
}
