//! The SQ WQE encoder of `post_send`: a send work request straight to the 128-byte image of
//! the contract's [`SqWqe`], without building the `SqWqe` value and running the generic
//! layout encoder over it (which moved the 200-byte value and the image through the stack
//! several times per WQE and was most of `post_send`'s cost).
//!
//! The byte offsets are not written here: they are read at compile time from the contract's
//! layout tables (`SqWqe::LAYOUT`, `Sge::LAYOUT`), and the build fails if a field this
//! encoder writes changes size or width, or if the layout gains or loses a field. The tests
//! compare the output with `SqWqe::encode` for arbitrary requests, errors included.

use roce_model::contract::{LayoutDesc, Sge as CSge, SqFlags, SqOpcode, SqWqe, SQ_DATA_BYTES, SQ_MAX_SGE};

use crate::error::{DriverError, Result};
use crate::verbs::{SendWr, WrOp};

/// Byte offsets of the fields, from the contract's layout tables.
mod at {
    use super::*;

    const fn same(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        if a.len() != b.len() {
            return false;
        }
        let mut i = 0;
        while i < a.len() {
            if a[i] != b[i] {
                return false;
            }
            i += 1;
        }
        true
    }

    /// Offset of field `name` of `l`, which must be a full-width field of `size` bytes
    /// (the encoder writes whole little-endian values, no reserved bits).
    const fn field(l: &LayoutDesc, name: &str, size: usize) -> usize {
        let mut i = 0;
        while i < l.fields.len() {
            let f = &l.fields[i];
            if same(f.name, name) {
                assert!(f.size == size && f.bits == 8 * size as u32, "contract field changed size or width");
                return f.offset;
            }
            i += 1;
        }
        panic!("field missing from the contract layout")
    }

    pub const WR_ID: usize = field(&SqWqe::LAYOUT, "wr_id", 8);
    pub const OPCODE: usize = field(&SqWqe::LAYOUT, "opcode", 1);
    pub const FLAGS: usize = field(&SqWqe::LAYOUT, "flags", 1);
    pub const NUM_SGE: usize = field(&SqWqe::LAYOUT, "num_sge", 1);
    pub const IMM_OR_INV: usize = field(&SqWqe::LAYOUT, "imm_or_inv", 4);
    pub const REMOTE_ADDR: usize = field(&SqWqe::LAYOUT, "remote_addr", 8);
    pub const RKEY: usize = field(&SqWqe::LAYOUT, "rkey", 4);
    pub const TOTAL_LEN: usize = field(&SqWqe::LAYOUT, "total_len", 4);
    pub const COMPARE_ADD: usize = field(&SqWqe::LAYOUT, "compare_add", 8);
    pub const SWAP: usize = field(&SqWqe::LAYOUT, "swap", 8);
    pub const BF_DB: usize = field(&SqWqe::LAYOUT, "bf_db", 4);
    pub const DATA: usize = field(&SqWqe::LAYOUT, "data", SQ_DATA_BYTES);
    pub const SGE_ADDR: usize = field(&CSge::LAYOUT, "addr", 8);
    pub const SGE_LEN: usize = field(&CSge::LAYOUT, "len", 4);
    pub const SGE_LKEY: usize = field(&CSge::LAYOUT, "lkey", 4);

    // Every field of both layouts is written below (a new field would be left zero; bf_db
    // is zero in the ring and set only in the inline doorbell's copy), and the SGE list
    // fills the data area.
    const _: () = assert!(SqWqe::LAYOUT.fields.len() == 12 && CSge::LAYOUT.fields.len() == 3);
    const _: () = assert!(SQ_MAX_SGE * CSge::SIZE == SQ_DATA_BYTES && DATA + SQ_DATA_BYTES <= SqWqe::SIZE);
}

/// Byte offset of `SqWqe.bf_db` (the inline doorbell's SQ_DB value).
pub(crate) const BF_DB: usize = at::BF_DB;

/// `v` at `w[off..]`; `off` is one of the constants above, so this is one store.
#[inline(always)]
fn put<const N: usize>(w: &mut [u8; SqWqe::SIZE], off: usize, v: [u8; N]) {
    w[off..off + N].copy_from_slice(&v);
}

/// Write the SqWqe image of `wr` into `w`, every byte (reserved ones zero): the bytes
/// `SqWqe::encode` gives for the WQE the request describes. On an invalid request `w` holds
/// garbage and the error says why.
#[inline]
pub(crate) fn encode_send_into(wr: &SendWr<'_>, w: &mut [u8; SqWqe::SIZE]) -> Result<()> {
    let (opcode, imm_or_inv, remote_addr, rkey, compare_add, swap) = match wr.op {
        WrOp::Send => (SqOpcode::Send, 0, 0, 0, 0, 0),
        WrOp::SendImm(i) => (SqOpcode::SendImm, i, 0, 0, 0, 0),
        WrOp::SendInv(k) => (SqOpcode::SendInv, k, 0, 0, 0, 0),
        WrOp::Write { remote_addr, rkey } => (SqOpcode::Write, 0, remote_addr, rkey, 0, 0),
        WrOp::WriteImm { remote_addr, rkey, imm } => (SqOpcode::WriteImm, imm, remote_addr, rkey, 0, 0),
        WrOp::Read { remote_addr, rkey } => (SqOpcode::Read, 0, remote_addr, rkey, 0, 0),
        WrOp::CmpSwap { remote_addr, rkey, compare, swap } => {
            (SqOpcode::AtomicCas, 0, remote_addr, rkey, compare, swap)
        }
        WrOp::FetchAdd { remote_addr, rkey, add } => (SqOpcode::AtomicFaa, 0, remote_addr, rkey, add, 0),
    };
    let mut flags = SqFlags::EMPTY
        .with(SqFlags::SIGNALED, wr.signaled)
        .with(SqFlags::SOLICITED, wr.solicited)
        .with(SqFlags::FENCE, wr.fence);
    *w = [0; SqWqe::SIZE];
    let (num_sge, total_len) = match wr.inline {
        Some(d) => {
            if d.len() > SQ_DATA_BYTES
                || matches!(wr.op, WrOp::Read { .. } | WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. })
            {
                return Err(DriverError::Invalid(format!("inline data of {} bytes for {:?}", d.len(), wr.op)));
            }
            flags |= SqFlags::INLINE;
            w[at::DATA..at::DATA + d.len()].copy_from_slice(d);
            (0, d.len() as u32)
        }
        None => {
            if wr.sges.len() > SQ_MAX_SGE {
                return Err(DriverError::Invalid(format!("{} SGEs (max {SQ_MAX_SGE})", wr.sges.len())));
            }
            let mut total = 0u64;
            for i in 0..SQ_MAX_SGE {
                if let Some(s) = wr.sges.get(i) {
                    let e = at::DATA + i * CSge::SIZE;
                    put(w, e + at::SGE_ADDR, s.addr.to_le_bytes());
                    put(w, e + at::SGE_LEN, s.len.to_le_bytes());
                    put(w, e + at::SGE_LKEY, s.lkey.to_le_bytes());
                    total += u64::from(s.len);
                }
            }
            let total = if matches!(wr.op, WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. }) { 8 } else { total };
            let total = u32::try_from(total).map_err(|_| DriverError::Invalid("message over 4 GiB".into()))?;
            (wr.sges.len() as u8, total)
        }
    };
    put(w, at::WR_ID, wr.wr_id.to_le_bytes());
    put(w, at::OPCODE, [opcode.code()]);
    put(w, at::FLAGS, [flags.bits()]);
    put(w, at::NUM_SGE, [num_sge]);
    put(w, at::IMM_OR_INV, imm_or_inv.to_le_bytes());
    put(w, at::REMOTE_ADDR, remote_addr.to_le_bytes());
    put(w, at::RKEY, rkey.to_le_bytes());
    put(w, at::TOTAL_LEN, total_len.to_le_bytes());
    put(w, at::COMPARE_ADD, compare_add.to_le_bytes());
    put(w, at::SWAP, swap.to_le_bytes());
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use proptest::prelude::*;
    use roce_model::contract::{Sge as CSge, SqData, SqFlags, SqOpcode, SqWqe, SQ_DATA_BYTES, SQ_MAX_SGE};

    use super::encode_send_into;
    use crate::error::{DriverError, Result};
    use crate::verbs::{SendWr, Sge, WrOp};

    /// The encoder `post_send` used before: the request to an `SqWqe` value, which
    /// `SqWqe::encode` (the contract's generic layout encoder) turns into bytes.
    pub(crate) fn generic(wr: &SendWr<'_>) -> Result<SqWqe> {
        let (opcode, imm_or_inv, remote_addr, rkey, compare_add, swap) = match wr.op {
            WrOp::Send => (SqOpcode::Send, 0, 0, 0, 0, 0),
            WrOp::SendImm(i) => (SqOpcode::SendImm, i, 0, 0, 0, 0),
            WrOp::SendInv(k) => (SqOpcode::SendInv, k, 0, 0, 0, 0),
            WrOp::Write { remote_addr, rkey } => (SqOpcode::Write, 0, remote_addr, rkey, 0, 0),
            WrOp::WriteImm { remote_addr, rkey, imm } => (SqOpcode::WriteImm, imm, remote_addr, rkey, 0, 0),
            WrOp::Read { remote_addr, rkey } => (SqOpcode::Read, 0, remote_addr, rkey, 0, 0),
            WrOp::CmpSwap { remote_addr, rkey, compare, swap } => {
                (SqOpcode::AtomicCas, 0, remote_addr, rkey, compare, swap)
            }
            WrOp::FetchAdd { remote_addr, rkey, add } => (SqOpcode::AtomicFaa, 0, remote_addr, rkey, add, 0),
        };
        let mut flags = SqFlags::EMPTY;
        flags = flags
            .with(SqFlags::SIGNALED, wr.signaled)
            .with(SqFlags::SOLICITED, wr.solicited)
            .with(SqFlags::FENCE, wr.fence);
        let (data, num_sge, total_len) = match wr.inline {
            Some(d) => {
                if d.len() > SQ_DATA_BYTES
                    || matches!(wr.op, WrOp::Read { .. } | WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. })
                {
                    return Err(DriverError::Invalid(format!("inline data of {} bytes for {:?}", d.len(), wr.op)));
                }
                let mut b = [0u8; SQ_DATA_BYTES];
                b[..d.len()].copy_from_slice(d);
                (SqData::Inline(b), 0, d.len() as u32)
            }
            None => {
                if wr.sges.len() > SQ_MAX_SGE {
                    return Err(DriverError::Invalid(format!("{} SGEs (max {SQ_MAX_SGE})", wr.sges.len())));
                }
                let mut s = [CSge::default(); SQ_MAX_SGE];
                for (d, x) in s.iter_mut().zip(wr.sges) {
                    *d = CSge { addr: x.addr, len: x.len, lkey: x.lkey };
                }
                let total: u64 = wr.sges.iter().map(|s| u64::from(s.len)).sum();
                let total = if matches!(wr.op, WrOp::CmpSwap { .. } | WrOp::FetchAdd { .. }) { 8 } else { total };
                let total = u32::try_from(total).map_err(|_| DriverError::Invalid("message over 4 GiB".into()))?;
                (SqData::Sge(s), wr.sges.len() as u8, total)
            }
        };
        Ok(SqWqe {
            wr_id: wr.wr_id,
            opcode,
            flags,
            num_sge,
            imm_or_inv,
            remote_addr,
            rkey,
            total_len,
            compare_add,
            swap,
            bf_db: 0,
            data,
        })
    }

    fn op() -> impl Strategy<Value = WrOp> {
        let (a, k) = (any::<u64>(), any::<u32>());
        prop_oneof![
            Just(WrOp::Send),
            any::<u32>().prop_map(WrOp::SendImm),
            any::<u32>().prop_map(WrOp::SendInv),
            (a, k).prop_map(|(remote_addr, rkey)| WrOp::Write { remote_addr, rkey }),
            (a, k, any::<u32>()).prop_map(|(remote_addr, rkey, imm)| WrOp::WriteImm { remote_addr, rkey, imm }),
            (a, k).prop_map(|(remote_addr, rkey)| WrOp::Read { remote_addr, rkey }),
            (a, k, any::<u64>(), any::<u64>()).prop_map(|(remote_addr, rkey, compare, swap)| WrOp::CmpSwap {
                remote_addr,
                rkey,
                compare,
                swap
            }),
            (a, k, any::<u64>()).prop_map(|(remote_addr, rkey, add)| WrOp::FetchAdd { remote_addr, rkey, add }),
        ]
    }

    fn sge() -> impl Strategy<Value = Sge> {
        // mostly small lengths; any u32 too, so the sum can pass 4 GiB
        let len = prop_oneof![3 => 0..=65536u32, 1 => any::<u32>()];
        (any::<u64>(), len, any::<u32>()).prop_map(|(addr, len, lkey)| Sge { addr, len, lkey })
    }

    /// Owned parts of a `SendWr`: wr_id, op, SGEs, inline data, signaled/solicited/fence.
    type Parts = (u64, WrOp, Vec<Sge>, Option<Vec<u8>>, (bool, bool, bool));

    fn parts() -> impl Strategy<Value = Parts> {
        (
            any::<u64>(),
            op(),
            prop::collection::vec(sge(), 0..=SQ_MAX_SGE + 1),
            prop::option::weighted(0.3, prop::collection::vec(any::<u8>(), 0..=SQ_DATA_BYTES + 4)),
            any::<(bool, bool, bool)>(),
        )
    }

    fn same(wr: &SendWr<'_>, stale: &[u8]) -> std::result::Result<(), TestCaseError> {
        // the slot holds whatever an earlier WQE left there: every byte must be written
        let mut w = [0u8; SqWqe::SIZE];
        w.copy_from_slice(stale);
        match (encode_send_into(wr, &mut w), generic(wr)) {
            (Ok(()), Ok(wqe)) => prop_assert_eq!(w, wqe.encode(), "{:?}", wr),
            (Err(a), Err(b)) => prop_assert_eq!(format!("{a:?}"), format!("{b:?}")),
            (a, b) => prop_assert!(false, "{:?}: {:?} against {:?}", wr, a, b.map(|_| ())),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// The same bytes as the contract's encoder, and the same errors, for any request.
        #[test]
        fn same_bytes_as_sqwqe_encode(
            (wr_id, op, sges, inline, (signaled, solicited, fence)) in parts(),
            stale in prop::collection::vec(any::<u8>(), SqWqe::SIZE),
        ) {
            let wr = SendWr { wr_id, op, sges: &sges, inline: inline.as_deref(), signaled, solicited, fence };
            same(&wr, &stale)?;
        }
    }

    #[test]
    fn edges() {
        let big = Sge { addr: 1, len: u32::MAX, lkey: 2 };
        let four = [Sge { addr: 0x1000, len: 64, lkey: 0x105 }; 4];
        let data = [0x5a; SQ_DATA_BYTES + 1];
        let w = |op, sges, inline| SendWr { wr_id: 7, op, sges, inline, signaled: true, solicited: false, fence: true };
        let (wr, rd, cas) = (
            WrOp::Write { remote_addr: 9, rkey: 3 },
            WrOp::Read { remote_addr: 9, rkey: 3 },
            WrOp::CmpSwap { remote_addr: 8, rkey: 3, compare: 1, swap: 2 },
        );
        for wr in [
            w(wr, &four, None),
            w(wr, &[big, big], None),                         // over 4 GiB
            w(cas, &[big, big], None),                        // atomics: 8, whatever the SGEs
            w(wr, &[four[0]; 5], None),                       // too many SGEs
            w(WrOp::Send, &[], Some(&data[..SQ_DATA_BYTES])), // full inline
            w(WrOp::Send, &[], Some(&data)),                  // inline too long
            w(WrOp::SendImm(5), &four, Some(&[])),            // empty inline wins over SGEs
            w(rd, &[], Some(&[1])),                           // inline READ
            w(WrOp::Send, &[], None),
        ] {
            same(&wr, &[0xff; SqWqe::SIZE]).unwrap();
        }
    }
}
