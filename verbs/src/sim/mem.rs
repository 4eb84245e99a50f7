//! Process memory as the simulated engine reaches it: through windows the backend mapped,
//! an IOMMU whose device addresses are the process's own virtual addresses. The driver's
//! rings are page-aligned allocations of the backend; registered regions are the
//! application's memory, reached in place (zero copy).
//!
//! Every DMA access and every CPU access of the backend's rings ([`Coherence`]) happens
//! under one lock, so a completion the engine writes is seen whole by `poll_cq`, and the
//! lock's release/acquire orders the payload written before it. The application's own
//! accesses to its buffers are not locked: the verbs contract keeps them apart from the
//! engine's (a buffer is the engine's from posting to completion).

use std::alloc::Layout;
use std::sync::{Arc, Mutex, MutexGuard};

use roce_model::engine::{Dma, DmaError};

/// The page size of windows and ring allocations.
pub const PAGE: usize = 4096;

/// The lock that orders engine DMA against the CPU's ring accesses.
#[derive(Clone, Debug, Default)]
pub struct Coherence(Arc<Mutex<()>>);

impl Coherence {
    /// Take the lock.
    pub fn lock(&self) -> MutexGuard<'_, ()> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A window of process memory the engine may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The backend's buffer id.
    pub id: usize,
    /// First address (device address = process address).
    pub start: u64,
    /// Length in bytes.
    pub len: u64,
    /// Application memory (a registered region), not one of the driver's rings.
    pub user: bool,
}

/// The mapped windows (owned by the engine thread).
#[derive(Debug, Default)]
pub struct Windows {
    list: Vec<Window>,
    /// DMA accesses that fell outside every window (IOMMU faults).
    pub faults: u64,
    /// Bytes the engine's DMA read from application memory.
    pub user_read: u64,
    /// Bytes the engine's DMA wrote into application memory.
    pub user_written: u64,
}

impl Windows {
    /// Map a window.
    pub fn map(&mut self, w: Window) {
        self.list.push(w);
    }

    /// Unmap the window of buffer `id`.
    pub fn unmap(&mut self, id: usize) {
        self.list.retain(|w| w.id != id);
    }

    /// The window `[addr, addr + len)` lies inside, if any.
    fn covering(&self, addr: u64, len: usize) -> Option<&Window> {
        let end = addr.checked_add(len as u64)?;
        self.list.iter().find(|w| addr >= w.start && end <= w.start + w.len)
    }

    /// Check an access: false (and a fault counted) outside every window; bytes to or from
    /// application memory counted.
    fn access(&mut self, addr: u64, len: usize, write: bool) -> bool {
        match self.covering(addr, len).map(|w| w.user) {
            None => {
                self.faults += 1;
                false
            }
            Some(user) => {
                if user && write {
                    self.user_written += len as u64;
                } else if user {
                    self.user_read += len as u64;
                }
                true
            }
        }
    }

    /// The engine's DMA port over these windows.
    pub fn dma<'a>(&'a mut self, coherence: &'a Coherence) -> ProcDma<'a> {
        ProcDma { w: self, coherence }
    }
}

/// [`Dma`] over mapped process memory.
pub struct ProcDma<'a> {
    w: &'a mut Windows,
    coherence: &'a Coherence,
}

impl Dma for ProcDma<'_> {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        if !self.w.access(addr, buf.len(), false) {
            return Err(DmaError::Unmapped { op: "read", addr, len: buf.len() });
        }
        let _g = self.coherence.lock();
        // SAFETY: the range lies in a mapped window: memory the backend allocated and frees
        // only after unmapping it, or application memory that `Backend::map_user`'s contract
        // keeps allocated until its (synchronous) unmap. The engine thread, the only one that
        // runs this, processes unmaps in order with its DMA.
        unsafe { std::ptr::copy_nonoverlapping(addr as usize as *const u8, buf.as_mut_ptr(), buf.len()) };
        Ok(())
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if !self.w.access(addr, data.len(), true) {
            return Err(DmaError::Unmapped { op: "write", addr, len: data.len() });
        }
        let _g = self.coherence.lock();
        // SAFETY: as in dma_read.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), addr as usize as *mut u8, data.len()) };
        Ok(())
    }
}

/// A zeroed, page-aligned allocation for the driver's rings.
#[derive(Debug)]
pub struct RingMem {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: RingMem is the owner of a plain heap allocation; which thread frees it does not
// matter, and accesses go through the coherence lock.
unsafe impl Send for RingMem {}

impl RingMem {
    /// `len` bytes (rounded up to whole pages).
    pub fn new(len: usize) -> Option<Self> {
        let size = len.max(1).checked_next_multiple_of(PAGE)?;
        let layout = Layout::from_size_align(size, PAGE).ok()?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        (!ptr.is_null()).then_some(RingMem { ptr, layout })
    }

    /// First byte.
    pub fn addr(&self) -> u64 {
        self.ptr as u64
    }

    /// Bytes allocated.
    pub fn size(&self) -> usize {
        self.layout.size()
    }

    /// Copy out of `[off, off + out.len())` (false if outside).
    pub fn read(&self, coherence: &Coherence, off: usize, out: &mut [u8]) -> bool {
        if off.checked_add(out.len()).is_none_or(|e| e > self.layout.size()) {
            return false;
        }
        let _g = coherence.lock();
        // SAFETY: in bounds of the allocation (checked); the engine's accesses to it take the
        // same lock.
        unsafe { std::ptr::copy_nonoverlapping(self.ptr.add(off), out.as_mut_ptr(), out.len()) };
        true
    }

    /// Copy `data` in at `off` (false if outside).
    pub fn write(&self, coherence: &Coherence, off: usize, data: &[u8]) -> bool {
        if off.checked_add(data.len()).is_none_or(|e| e > self.layout.size()) {
            return false;
        }
        let _g = coherence.lock();
        // SAFETY: as in read.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) };
        true
    }
}

impl Drop for RingMem {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dma_reaches_only_mapped_windows() {
        let c = Coherence::default();
        let r = RingMem::new(100).unwrap();
        assert_eq!(r.size(), PAGE);
        let mut w = Windows::default();
        w.map(Window { id: 1, start: r.addr(), len: 128, user: false });
        let mut d = w.dma(&c);
        d.dma_write(r.addr() + 8, &[1, 2, 3]).unwrap();
        assert!(d.dma_write(r.addr() + 126, &[1, 2, 3]).is_err());
        let mut b = [0u8; 4];
        assert!(r.read(&c, 7, &mut b));
        assert_eq!(b, [0, 1, 2, 3]);
        w.unmap(1);
        let mut d = w.dma(&c);
        assert!(d.dma_read(r.addr(), &mut b).is_err());
        assert_eq!((w.faults, w.user_read, w.user_written), (2, 0, 0));
        // an application's window: its bytes are counted
        let mut app = vec![0u8; 64];
        w.map(Window { id: 2, start: app.as_mut_ptr() as u64, len: 64, user: true });
        let mut d = w.dma(&c);
        d.dma_write(app.as_ptr() as u64 + 4, &[9; 8]).unwrap();
        d.dma_read(app.as_ptr() as u64, &mut b).unwrap();
        assert_eq!((w.user_read, w.user_written), (4, 8));
        w.unmap(2);
        assert_eq!(app[4..12], [9; 8]);
        assert!(!r.read(&c, PAGE - 2, &mut b));
    }
}
