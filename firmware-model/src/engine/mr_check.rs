//! `roce_mr_check`: the memory region table and the L_Key/R_Key checks.
//!
//! A key names a table entry by its upper 24 bits (`key >> 8`); the low 8 bits are a tag the
//! driver changes on every re-registration, so a stale key never matches a reused entry.
//! A check passes when the entry is valid, its full key matches, it belongs to the QP's
//! protection domain, its access flags allow the operation, and `[va, va+len)` lies inside the
//! region. It returns the DMA address of `va`. Zero-length accesses need no key (IBTA
//! o9-5.1). Cost: one table read (2 cycles) and the compares, pipelined.

use super::types::{Sge, WcStatus};
use crate::contract::{AccessFlags, CmdErrorCode, CmdOpcode, MrCtx};

/// Pipeline latency of a key check in cycles.
pub const LATENCY: u64 = 2;

/// One memory region.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mr {
    /// Full key (L_Key = R_Key).
    pub key: u32,
    /// Protection domain.
    pub pd: u32,
    /// Start of the region in the application's virtual address space.
    pub va: u64,
    /// Length in bytes.
    pub len: u64,
    /// DMA address that `va` maps to (the region is contiguous in DMA space).
    pub iova: u64,
    /// `access::*` flags.
    pub access: u32,
}

/// Why a key check failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MrError {
    /// No valid region has this key.
    #[error("key {0:#x} names no valid memory region")]
    InvalidKey(u32),
    /// The region belongs to another protection domain.
    #[error("key {key:#x} belongs to PD {mr_pd}, not {pd}")]
    PdMismatch {
        /// Key.
        key: u32,
        /// Region's PD.
        mr_pd: u32,
        /// QP's PD.
        pd: u32,
    },
    /// The region's access flags do not allow the operation.
    #[error("key {key:#x} lacks access {need:#x} (has {have:#x})")]
    Access {
        /// Key.
        key: u32,
        /// Needed flags.
        need: u32,
        /// Region's flags.
        have: u32,
    },
    /// The range is not inside the region.
    #[error("[{va:#x}, +{len}) is outside the region of key {key:#x}")]
    Bounds {
        /// Key.
        key: u32,
        /// Start.
        va: u64,
        /// Length.
        len: u64,
    },
}

/// The region table.
#[derive(Clone, Debug)]
pub struct MrTable {
    entries: Vec<Option<Mr>>,
}

impl MrTable {
    /// A table of `n` entries.
    pub fn new(n: usize) -> Self {
        MrTable { entries: vec![None; n] }
    }

    /// Number of entries.
    pub fn capacity(&self) -> usize {
        self.entries.len()
    }

    /// Install `mr` in the entry its key names. Fails if the index is out of range.
    pub fn insert(&mut self, mr: Mr) -> Result<(), MrError> {
        let i = (mr.key >> 8) as usize;
        let e = self.entries.get_mut(i).ok_or(MrError::InvalidKey(mr.key))?;
        *e = Some(mr);
        Ok(())
    }

    /// Invalidate the region with this key (SEND with invalidate, or deregistration);
    /// returns the region if it matched and belongs to `pd` (any PD if `None`).
    pub fn invalidate(&mut self, key: u32, pd: Option<u32>) -> Result<Mr, MrError> {
        let i = (key >> 8) as usize;
        let e = self.entries.get_mut(i).ok_or(MrError::InvalidKey(key))?;
        match *e {
            Some(mr) if mr.key == key => {
                if let Some(pd) = pd {
                    if mr.pd != pd {
                        return Err(MrError::PdMismatch { key, mr_pd: mr.pd, pd });
                    }
                }
                *e = None;
                Ok(mr)
            }
            _ => Err(MrError::InvalidKey(key)),
        }
    }

    /// The region in entry `index`, if valid.
    pub fn entry(&self, index: u32) -> Option<&Mr> {
        self.entries.get(index as usize)?.as_ref()
    }

    /// The region with this key, if valid.
    pub fn get(&self, key: u32) -> Option<&Mr> {
        self.entries.get((key >> 8) as usize)?.as_ref().filter(|m| m.key == key)
    }

    /// Check an access and translate `va` to its DMA address.
    pub fn check(&self, key: u32, pd: u32, va: u64, len: u64, need: u32) -> Result<u64, MrError> {
        if len == 0 {
            return Ok(0);
        }
        let mr = self.get(key).ok_or(MrError::InvalidKey(key))?;
        if mr.pd != pd {
            return Err(MrError::PdMismatch { key, mr_pd: mr.pd, pd });
        }
        if mr.access & need != need {
            return Err(MrError::Access { key, need, have: mr.access });
        }
        let end = va.checked_add(len).ok_or(MrError::Bounds { key, va, len })?;
        if va < mr.va || end > mr.va.saturating_add(mr.len) {
            return Err(MrError::Bounds { key, va, len });
        }
        Ok(mr.iova + (va - mr.va))
    }
}

/// MR_WRITE: install region `index` from `c` (or, with `valid` clear, invalidate it if its
/// key matches). `BadIndex` unless `c.key >> 8 == index` and the index is in the table.
pub fn write_mr(mrs: &mut MrTable, index: u32, c: &MrCtx) -> Result<(), CmdErrorCode> {
    if c.key >> 8 != index || index as usize >= mrs.capacity() {
        return Err(CmdErrorCode::BadIndex);
    }
    if !c.valid {
        let _ = mrs.invalidate(c.key, None);
        return Ok(());
    }
    mrs.insert(Mr { key: c.key, pd: c.pd, va: c.va, len: c.len, iova: c.iova, access: c.access.bits() })
        .map_err(|_| CmdErrorCode::BadIndex)
}

/// The MR commands on the table, with the command's staging data (`CMD_DATA`): MR_WRITE
/// (`BadAttr` if `data` is not a valid [`MrCtx`]), MR_READ (returns the entry's image, all
/// zero if invalid) and MR_INVALIDATE; `BadIndex` for an entry outside the table, `BadOpcode`
/// for any other command.
pub fn mr_command(mrs: &mut MrTable, op: CmdOpcode, index: u32, data: &[u8]) -> Result<Option<Vec<u8>>, CmdErrorCode> {
    match op {
        CmdOpcode::MrWrite => {
            let c = MrCtx::decode(data).map_err(|_| CmdErrorCode::BadAttr)?;
            write_mr(mrs, index, &c).map(|()| None)
        }
        CmdOpcode::MrRead => {
            if index as usize >= mrs.capacity() {
                return Err(CmdErrorCode::BadIndex);
            }
            let c = mrs.entry(index).map_or(MrCtx::default(), |m| MrCtx {
                va: m.va,
                len: m.len,
                iova: m.iova,
                pd: m.pd,
                key: m.key,
                access: AccessFlags::from_bits_truncate(m.access),
                valid: true,
            });
            Ok(Some(c.encode().to_vec()))
        }
        CmdOpcode::MrInvalidate => {
            if index as usize >= mrs.capacity() {
                return Err(CmdErrorCode::BadIndex);
            }
            if let Some(k) = mrs.entry(index).map(|m| m.key) {
                let _ = mrs.invalidate(k, None);
            }
            Ok(None)
        }
        _ => Err(CmdErrorCode::BadOpcode),
    }
}

/// Walk a scatter/gather list: for each piece of `[off, off+len)` of the list's byte space,
/// call `f(dma_address, range_in_message)`. Fails with `LocLenErr` if the list is too short
/// and `LocProtErr` if a key check fails.
pub fn walk_sges(
    mrs: &MrTable,
    pd: u32,
    sges: &[Sge],
    off: u64,
    len: u64,
    need: u32,
    mut f: impl FnMut(u64, std::ops::Range<usize>) -> Result<(), WcStatus>,
) -> Result<(), WcStatus> {
    let mut skip = off;
    let mut done = 0u64;
    for s in sges {
        if done == len {
            break;
        }
        let sl = u64::from(s.len);
        if skip >= sl {
            skip -= sl;
            continue;
        }
        let n = (sl - skip).min(len - done);
        let dma = mrs.check(s.lkey, pd, s.addr + skip, n, need).map_err(|_| WcStatus::LocProtErr)?;
        f(dma, done as usize..(done + n) as usize)?;
        done += n;
        skip = 0;
    }
    if done < len {
        return Err(WcStatus::LocLenErr);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::types::access::*;

    #[test]
    fn checks() {
        let mut t = MrTable::new(16);
        let mr = Mr { key: 0x305, pd: 1, va: 0x1000, len: 0x100, iova: 0x9000, access: REMOTE_WRITE };
        t.insert(mr).unwrap();
        assert_eq!(t.check(0x305, 1, 0x1010, 0x10, REMOTE_WRITE), Ok(0x9010));
        assert_eq!(t.check(0x306, 1, 0x1010, 0x10, REMOTE_WRITE), Err(MrError::InvalidKey(0x306)));
        assert!(matches!(t.check(0x305, 2, 0x1010, 0x10, REMOTE_WRITE), Err(MrError::PdMismatch { .. })));
        assert!(matches!(t.check(0x305, 1, 0x1010, 0x10, REMOTE_READ), Err(MrError::Access { .. })));
        assert!(matches!(t.check(0x305, 1, 0x10F8, 0x10, REMOTE_WRITE), Err(MrError::Bounds { .. })));
        assert!(matches!(t.check(0x305, 1, u64::MAX, 2, REMOTE_WRITE), Err(MrError::Bounds { .. })));
        assert_eq!(t.check(0xdead, 1, 0, 0, REMOTE_WRITE), Ok(0));
        assert!(t.invalidate(0x305, Some(2)).is_err());
        assert!(t.invalidate(0x305, Some(1)).is_ok());
        assert!(t.check(0x305, 1, 0x1010, 0x10, REMOTE_WRITE).is_err());
        assert!(t.insert(Mr { key: 0x1000, ..mr }).is_err());
    }
}
