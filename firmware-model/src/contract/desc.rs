//! Descriptor layouts: work queue entries and completions in host memory, and the QP, CQ
//! and MR contexts the command interface moves through CMD_DATA. All multi-byte integers
//! are little-endian; byte arrays (addresses) are in memory order.

use super::{
    AccessFlags, ContractError, CqFlags, CqState, CqeFlags, CqeOpcode, CqeOwner, CqeStatus, Encap, FieldKind,
    LayoutField, PathMtu, QpState, QpType, SqFlags, SqOpcode, VlanTag, Wire,
};

layout! {
    /// Scatter/gather element: one buffer of registered memory.
    pub struct Sge: "sge", 16 bytes {
        /// Virtual address of the buffer (in the MR's `va` space).
        addr: u64, at 0;
        /// Length in bytes (0 = unused element).
        len: u32, at 8;
        /// L_Key of the MR that covers the buffer.
        lkey: u32, at 12;
    }
}

/// Size of the SQ WQE's data area: four SGEs or up to 64 bytes of inline data.
pub const SQ_DATA_BYTES: usize = 64;
/// Most bytes of inline data an SQ WQE carries.
pub const MAX_INLINE: usize = SQ_DATA_BYTES;
/// SGEs in an SQ WQE.
pub const SQ_MAX_SGE: usize = 4;
/// SGEs in an RQ WQE.
pub const RQ_MAX_SGE: usize = 3;
/// Largest `QpCtx.sq_win_shift`: a send window of 256 WQEs.
pub const MAX_SQ_WIN_SHIFT: u8 = 4;

/// `SqWqe.data`: the gather list or the inline payload, selected by
/// [`SqFlags::INLINE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqData {
    /// `num_sge` SGEs are used; the rest are zero.
    Sge([Sge; SQ_MAX_SGE]),
    /// The first `total_len` bytes are the payload (at most 64).
    Inline([u8; SQ_DATA_BYTES]),
}

impl Default for SqData {
    fn default() -> Self {
        SqData::Sge([Sge::default(); SQ_MAX_SGE])
    }
}

/// Byte offset of `SqWqe.flags` (the union below looks at it).
const SQ_FLAGS_AT: usize = 9;

impl Wire for SqData {
    const SIZE: usize = SQ_DATA_BYTES;
    const KIND: FieldKind = FieldKind::Union(&[
        LayoutField {
            name: "sge",
            offset: 0,
            size: SQ_DATA_BYTES,
            bits: 8 * SQ_DATA_BYTES as u32,
            kind: <[Sge; SQ_MAX_SGE] as Wire>::KIND,
            desc: "Without INLINE: four SGEs, the first num_sge used (unused ones zero).",
        },
        LayoutField {
            name: "inline_data",
            offset: 0,
            size: SQ_DATA_BYTES,
            bits: 8 * SQ_DATA_BYTES as u32,
            kind: FieldKind::Bytes,
            desc: "With INLINE: the payload, total_len bytes (at most 64); the rest is ignored.",
        },
    ]);
    /// Writes the data and sets or clears `INLINE` in the flags byte to match.
    fn put(&self, buf: &mut [u8], off: usize) {
        match self {
            SqData::Sge(sge) => {
                sge.put(buf, off);
                buf[SQ_FLAGS_AT] &= !SqFlags::INLINE.bits();
            }
            SqData::Inline(data) => {
                data.put(buf, off);
                buf[SQ_FLAGS_AT] |= SqFlags::INLINE.bits();
            }
        }
    }
    fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, ContractError> {
        if buf[SQ_FLAGS_AT] & SqFlags::INLINE.bits() != 0 {
            Ok(SqData::Inline(<[u8; SQ_DATA_BYTES]>::take(buf, off, field)?))
        } else {
            Ok(SqData::Sge(<[Sge; SQ_MAX_SGE]>::take(buf, off, field)?))
        }
    }
}

layout! {
    /// Send queue work queue entry, 128 bytes, in the SQ ring at `QpCtx.sq_base`. The
    /// encoder sets `flags.INLINE` from `data`; a decoded WQE has them consistent.
    pub struct SqWqe: "sq_wqe", 128 bytes {
        /// Caller's identifier, returned in the CQE.
        wr_id: u64, at 0;
        /// Operation (SqOpcode).
        opcode: SqOpcode, at 8;
        /// SqFlags: SIGNALED, SOLICITED, INLINE, FENCE.
        flags: SqFlags, at 9;
        /// SGEs used, 0..=4 (without INLINE). Above 4 completes with LocQpOpErr.
        num_sge: u8, at 10;
        /// SendImm/WriteImm: the immediate data as a number (sent big-endian, so the
        /// driver stores `u32::from_be(ibv imm_data)`). SendInv: the R_Key to invalidate.
        imm_or_inv: u32, at 12;
        /// Write/WriteImm/Read/atomics: remote virtual address.
        remote_addr: u64, at 16;
        /// Write/WriteImm/Read/atomics: remote R_Key.
        rkey: u32, at 24;
        /// Message length in bytes: the sum of the SGE lengths, or the inline length
        /// (at most 64). Atomics: 8.
        total_len: u32, at 28;
        /// AtomicCas: the compare value. AtomicFaa: the value to add.
        compare_add: u64, at 32;
        /// AtomicCas: the swap value.
        swap: u64, at 40;
        /// Inline doorbell only: the `SQ_DB` value (`PI | QP << 16`) the write to the
        /// BlueFlame window rings, PI = this WQE's SQ index + 1. Ignored in the SQ ring.
        bf_db: u32, at 48;
        /// The gather list or the inline payload.
        data: SqData, at 64;
    }
}

layout! {
    /// Receive queue work queue entry, 64 bytes, in the RQ ring at `QpCtx.rq_base`.
    pub struct RqWqe: "rq_wqe", 64 bytes {
        /// Caller's identifier, returned in the CQE.
        wr_id: u64, at 0;
        /// SGEs used, 0..=3. Above 3 completes with LocQpOpErr.
        num_sge: u8, at 8;
        /// Scatter list: the first num_sge used (unused ones zero).
        sge: [Sge; RQ_MAX_SGE], at 16;
    }
}

layout! {
    /// Completion queue entry, 32 bytes, written by the engine into the CQ ring.
    pub struct Cqe: "cqe", 32 bytes {
        /// `wr_id` of the completed WQE.
        wr_id: u64, at 0;
        /// Receive completions: bytes received (RecvWriteImm: the RDMA WRITE's length, as
        /// Linux rxe reports it). Requester: the
        /// message length.
        byte_len: u32, at 8;
        /// The immediate data (flags.IMM_VALID) or the invalidated R_Key
        /// (flags.INV_VALID), as a number.
        imm_or_inv: u32, at 12;
        /// The local QP number (= QP index) the WQE belongs to.
        qpn: u32, at 16, bits 24;
        /// What completed (CqeOpcode). Only `status` is meaningful on an error CQE.
        opcode: CqeOpcode, at 20;
        /// CqeStatus (ibverbs `enum ibv_wc_status`).
        status: CqeStatus, at 21;
        /// CqeFlags: IMM_VALID, INV_VALID, SOLICITED.
        flags: CqeFlags, at 22;
        /// CqeOwner.PHASE; written last (see the queue protocol).
        owner: CqeOwner, at 23;
        /// Receive completions: the remote QP number (the QP's `dest_qpn` for RC).
        src_qp: u32, at 24, bits 24;
    }
}

layout! {
    /// QP context, 128 bytes, moved by QP_WRITE / QP_READ / QP_MODIFY through CMD_DATA.
    /// Bytes 80 to 87 are engine state: QP_READ returns it, QP_WRITE zeroes it and ignores
    /// what is written there.
    pub struct QpCtx: "qp_ctx", 128 bytes {
        /// QpState. QP_WRITE: Reset or Init. QP_MODIFY (STATE): the target state.
        state: QpState, at 0;
        /// QpType; only Rc is implemented. Set by QP_WRITE.
        qp_type: QpType, at 1;
        /// PathMtu (ibverbs `enum ibv_mtu`), at most CAPS.MAX_MTU. Mask bit PATH_MTU.
        path_mtu: PathMtu, at 2;
        /// Encap: RoCEv2 over IPv4 or IPv6. Mask bit AV.
        encap: Encap, at 3;
        /// Protection domain; MRs used by this QP must have the same `pd`. Set by QP_WRITE.
        pd: u32, at 4;
        /// AccessFlags (IBV_ACCESS_*) the QP allows remote requests to use. Mask bit
        /// ACCESS_FLAGS.
        access: AccessFlags, at 8;
        /// Remote QP number. Mask bit DEST_QPN.
        dest_qpn: u32, at 12, bits 24;
        /// PSN of the next request packet to send. Mask bit SQ_PSN.
        sq_psn: u32, at 16, bits 24;
        /// PSN expected in the next request packet received. Mask bit RQ_PSN.
        rq_psn: u32, at 20, bits 24;
        /// DMA address of the SQ ring (4 KiB aligned). Set by QP_WRITE.
        sq_base: u64, at 24;
        /// DMA address of the RQ ring (4 KiB aligned). Set by QP_WRITE.
        rq_base: u64, at 32;
        /// log2 of the SQ ring's entries, 0..=15. Set by QP_WRITE.
        sq_log_size: u8, at 40, bits 4;
        /// log2 of the RQ ring's entries, 0..=15. Set by QP_WRITE.
        rq_log_size: u8, at 41, bits 4;
        /// CQ index for send completions. Set by QP_WRITE.
        send_cq: u16, at 42, bits 14;
        /// CQ index for receive completions. Set by QP_WRITE.
        recv_cq: u16, at 44, bits 14;
        /// Local ACK timeout 4.096 us * 2^timeout (TICK_CYCLES ticks; at least that, at most
        /// a tick more), 0 = infinite (ibverbs `timeout`). Mask bit TIMEOUT.
        timeout: u8, at 46, bits 5;
        /// Transport retries after a timeout or sequence NAK, 0..=7. Mask bit RETRY_CNT.
        retry_cnt: u8, at 47, bits 3;
        /// RNR NAK retries, 0..=6, 7 = infinite. Mask bit RNR_RETRY.
        rnr_retry: u8, at 48, bits 3;
        /// RNR NAK timer code (IB spec table, 0 = 655.36 ms, 1 = 0.01 ms .. 31 = 491.52 ms)
        /// this QP advertises as responder. Mask bit MIN_RNR_TIMER.
        min_rnr_timer: u8, at 49, bits 5;
        /// RDMA READ / atomic requests outstanding as requester, at most
        /// 2^CAPS.LOG_MAX_RD_ATOMIC. Mask bit MAX_QP_RD_ATOMIC.
        max_rd_atomic: u8, at 50;
        /// RDMA READ / atomic requests accepted as responder, same limit. Mask bit
        /// MAX_DEST_RD_ATOMIC.
        max_dest_rd_atomic: u8, at 51;
        /// Destination MAC (next hop), in transmission order. Mask bit AV.
        dest_mac: [u8; 6], at 52;
        /// VlanTag; when not VALID the port VLAN register applies. Mask bit AV.
        vlan: VlanTag, at 58;
        /// DSCP of the IP header (ibverbs `traffic_class >> 2`); the ECN bits come from
        /// CTRL.ECN_ENABLE. Mask bit AV.
        dscp: u8, at 60, bits 6;
        /// IPv4 TTL / IPv6 hop limit. Mask bit AV.
        hop_limit: u8, at 61;
        /// UDP source port; 0 = derived from the QPN (0xC000 | hash). Mask bit AV.
        udp_sport: u16, at 62;
        /// Destination IP, network order. IPv4 as an IPv4-mapped IPv6 address
        /// (::ffff:a.b.c.d, like an rxe GID); the engine uses bytes 12..15. Mask bit AV.
        dest_ip: [u8; 16], at 64;
        /// Engine state (read-only): SQ producer index from the last SQ_DB.
        sq_pi: u16, at 80;
        /// Engine state (read-only): SQ consumer index (WQEs completed or flushed).
        sq_ci: u16, at 82;
        /// Engine state (read-only): RQ producer index from the last RQ_DB.
        rq_pi: u16, at 84;
        /// Engine state (read-only): RQ consumer index (WQEs consumed).
        rq_ci: u16, at 86;
        /// IPv6 flow label. Mask bit AV.
        flow_label: u32, at 88, bits 20;
        /// The send window: at most 16 << sq_win_shift WQEs (0..=MAX_SQ_WIN_SHIFT) fetched
        /// and not completed. 0: the QP's own 16 entries. Above 0: blocks sq_win_base ..
        /// sq_win_base + 2^sq_win_shift of the deep-window pool (2^CAPS.LOG_MAX_QP blocks of
        /// 16 entries; sq_win_base a multiple of 2^sq_win_shift), which the driver gives to
        /// no other live QP. Set by QP_WRITE; the requester takes it at Rtr -> Rts.
        sq_win_shift: u8, at 92, bits 3;
        /// See sq_win_shift. Set by QP_WRITE.
        sq_win_base: u16, at 94;
    }
}

layout! {
    /// CQ context, 32 bytes, moved by CQ_WRITE / CQ_READ. Bytes 12 to 16 are engine state:
    /// CQ_READ returns it, CQ_WRITE zeroes it and ignores what is written there.
    pub struct CqCtx: "cq_ctx", 32 bytes {
        /// DMA address of the CQ ring (4 KiB aligned), 2^log_size entries of 32 bytes,
        /// zero-filled by software before CQ_WRITE.
        base: u64, at 0;
        /// log2 of the ring's entries, 0..=15.
        log_size: u8, at 8, bits 4;
        /// CqFlags: IRQ_ENABLE.
        flags: CqFlags, at 9;
        /// The CQ may receive CQEs. A completion for an invalid CQ is dropped and raises
        /// IRQ_STATUS.CQ_ERROR (CQ_ERR_INFO names the CQ).
        valid: bool, at 10;
        /// Engine state (read-only): producer index, CQEs written (wraps at 2^16).
        pi: u16, at 12;
        /// Engine state (read-only): consumer index from the last CQ_DB.
        ci: u16, at 14;
        /// Engine state (read-only): CqState: ARMED, ARMED_SOLICITED, OVERRUN.
        state: CqState, at 16;
    }
}

layout! {
    /// Memory region context, 64 bytes, moved by MR_WRITE / MR_READ. MR index = `key >> 8`;
    /// the low 8 bits of the key are a tag software changes on re-registration, and the
    /// engine compares the whole key.
    pub struct MrCtx: "mr_ctx", 64 bytes {
        /// First virtual address of the region (what SGEs and remote addresses use).
        va: u64, at 0;
        /// Length in bytes.
        len: u64, at 8;
        /// DMA address `va` maps to; the region is contiguous in DMA space.
        iova: u64, at 16;
        /// Protection domain; must equal the QP's `pd`.
        pd: u32, at 24;
        /// The key, both L_Key and R_Key; `key >> 8` is the MR index.
        key: u32, at 28;
        /// AccessFlags (IBV_ACCESS_*).
        access: AccessFlags, at 32;
        /// The region may be used; cleared by MR_INVALIDATE and SEND with invalidate.
        valid: bool, at 36;
    }
}

impl SqWqe {
    /// The payload bytes of an inline WQE (`total_len` clamped to 64); `None` for an SGE
    /// list.
    pub fn inline_payload(&self) -> Option<&[u8]> {
        match &self.data {
            SqData::Inline(d) => Some(&d[..(self.total_len as usize).min(SQ_DATA_BYTES)]),
            SqData::Sge(_) => None,
        }
    }

    /// The used SGEs (`num_sge` clamped to 4); `None` for inline data.
    pub fn sges(&self) -> Option<&[Sge]> {
        match &self.data {
            SqData::Sge(s) => Some(&s[..usize::from(self.num_sge).min(SQ_MAX_SGE)]),
            SqData::Inline(_) => None,
        }
    }
}

impl RqWqe {
    /// The used SGEs (`num_sge` clamped to 3).
    pub fn sges(&self) -> &[Sge] {
        &self.sge[..usize::from(self.num_sge).min(RQ_MAX_SGE)]
    }
}

impl CqCtx {
    /// Entries in the ring.
    pub const fn entries(&self) -> u32 {
        1 << (self.log_size & 15)
    }
}

impl MrCtx {
    /// MR index of a key.
    pub const fn index_of(key: u32) -> u32 {
        key >> 8
    }
}

/// Every descriptor layout, in dependency order (nested layouts first).
pub const LAYOUTS: &[super::LayoutDesc] =
    &[Sge::LAYOUT, SqWqe::LAYOUT, RqWqe::LAYOUT, Cqe::LAYOUT, QpCtx::LAYOUT, CqCtx::LAYOUT, MrCtx::LAYOUT];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sq_flags_offset_matches_layout() {
        assert_eq!(SqWqe::LAYOUT.field("flags").map(|f| f.offset), Some(SQ_FLAGS_AT));
    }
}
