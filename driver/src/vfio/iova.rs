//! The IOVA allocator: hands out page-aligned device addresses inside a window, with an
//! unmapped guard gap after every buffer (a device overrun faults in the IOMMU instead of
//! corrupting the next buffer). Freed ranges are merged and reused, first fit.

use std::collections::BTreeMap;

/// Allocator of device (IOMMU) addresses in `base..limit`.
#[derive(Clone, Debug)]
pub struct IovaAllocator {
    base: u64,
    limit: u64,
    page: u64,
    guard: u64,
    /// Free ranges: start -> length, never adjacent (merged on free).
    free: BTreeMap<u64, u64>,
    /// Live allocations: start -> reserved length (size + guard).
    live: BTreeMap<u64, u64>,
}

fn round_up(v: u64, to: u64) -> Option<u64> {
    v.checked_add(to - 1).map(|x| x / to * to)
}

impl IovaAllocator {
    /// A window `base..limit` of pages of `page` bytes (a power of two), `guard` bytes
    /// (rounded up to pages) kept unmapped after each buffer. Returns `None` if `page` is not
    /// a power of two, `base` is 0 or not page aligned, or the window holds no page.
    pub fn new(base: u64, limit: u64, page: u64, guard: u64) -> Option<Self> {
        if !page.is_power_of_two() || base == 0 || base % page != 0 || limit <= base {
            return None;
        }
        let limit = limit / page * page;
        if limit <= base {
            return None;
        }
        let guard = round_up(guard, page)?;
        let mut free = BTreeMap::new();
        free.insert(base, limit - base);
        Some(IovaAllocator { base, limit, page, guard, free, live: BTreeMap::new() })
    }

    /// Window start.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Window end (exclusive).
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The page size.
    pub fn page(&self) -> u64 {
        self.page
    }

    /// `len` rounded up to whole pages (at least one page): the size that is mapped.
    pub fn map_size(&self, len: usize) -> Option<u64> {
        round_up((len as u64).max(1), self.page)
    }

    /// Reserve room for `len` bytes; returns the (page-aligned, non-zero) device address.
    /// The mapped size is [`IovaAllocator::map_size`]`(len)`.
    pub fn alloc(&mut self, len: usize) -> Option<u64> {
        let need = self.map_size(len)?.checked_add(self.guard)?;
        let (&start, &flen) = self.free.iter().find(|(_, &l)| l >= need)?;
        self.free.remove(&start);
        if flen > need {
            self.free.insert(start + need, flen - need);
        }
        self.live.insert(start, need);
        Some(start)
    }

    /// Give back the allocation at `iova`. Returns false (and changes nothing) if `iova` is
    /// not a live allocation.
    pub fn free(&mut self, iova: u64) -> bool {
        let Some(mut len) = self.live.remove(&iova) else {
            return false;
        };
        let mut start = iova;
        // merge with the free range just before and the one just after
        if let Some((&ps, &pl)) = self.free.range(..start).next_back() {
            if ps + pl == start {
                self.free.remove(&ps);
                start = ps;
                len += pl;
            }
        }
        if let Some(nl) = self.free.remove(&(start + len)) {
            len += nl;
        }
        self.free.insert(start, len);
        true
    }

    /// Number of live allocations.
    pub fn live(&self) -> usize {
        self.live.len()
    }

    /// Bytes not reserved (including space too fragmented to use).
    pub fn free_bytes(&self) -> u64 {
        self.free.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_windows() {
        assert!(IovaAllocator::new(0, 1 << 20, 4096, 0).is_none());
        assert!(IovaAllocator::new(4096, 4096, 4096, 0).is_none());
        assert!(IovaAllocator::new(4097, 1 << 20, 4096, 0).is_none());
        assert!(IovaAllocator::new(4096, 1 << 20, 3000, 0).is_none());
        assert!(IovaAllocator::new(4096, 8191, 4096, 0).is_none());
    }

    #[test]
    fn bump_with_guard_then_reuse() {
        let mut a = IovaAllocator::new(0x1_0000_0000, 0x1_0010_0000, 4096, 4096).unwrap();
        let x = a.alloc(1).unwrap();
        let y = a.alloc(4097).unwrap();
        let z = a.alloc(4096).unwrap();
        assert_eq!(x, 0x1_0000_0000);
        assert_eq!(y, x + 2 * 4096, "one page + one guard page");
        assert_eq!(z, y + 3 * 4096, "two pages + guard");
        assert!(a.free(y));
        assert!(!a.free(y), "double free is refused");
        assert!(!a.free(y + 4096), "not an allocation");
        assert_eq!(a.alloc(8192), Some(y), "first fit reuses the hole");
        assert!(a.free(x) && a.free(y) && a.free(z));
        assert_eq!(a.live(), 0);
        assert_eq!(a.free_bytes(), 0x10_0000, "fully merged");
        assert_eq!(a.alloc(0xF_F000), Some(0x1_0000_0000));
    }

    #[test]
    fn exhaustion_and_overflow() {
        let mut a = IovaAllocator::new(4096, 4 * 4096, 4096, 0).unwrap();
        assert!(a.alloc(4 * 4096).is_none());
        assert!(a.alloc(usize::MAX).is_none());
        assert!(a.alloc(3 * 4096).is_some());
        assert!(a.alloc(1).is_none());
    }
}
