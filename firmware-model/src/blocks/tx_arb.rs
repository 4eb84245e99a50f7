//! Model of `hdl/rtl/roce_tx_arb.sv`: the frame of a packet descriptor (`TxDesc`) of a QP,
//! as the engine builds it ([`frame_builder`]): addressing from the QP's attributes and the
//! port, the BTH and the extension headers the opcode carries from the descriptor. The
//! lockstep test compares the frame `roce_tx_build` makes of the HDL's record with this
//! one (before the ICRC), in the order the HDL took the packets.

use crate::contract::records::{QpAttr, TxDesc, TxDescFlags};
use crate::contract::Encap;
use crate::engine::tx_arb::{frame_builder, TxAddr, TxPort};
use crate::wire::{
    AethFields, AtomicAckEthFields, AtomicEthFields, BthFields, ExtHeaderKind, ExtHeaders, FrameBuilder, IethFields,
    ImmDtFields, Opcode, RethFields,
};

/// The BTH and extension headers of a descriptor sent to `dest_qpn`; `None` for an opcode
/// the wire codec does not know.
pub fn bth_ext(d: &TxDesc, dest_qpn: u32) -> Option<(BthFields, ExtHeaders)> {
    let op = Opcode::from_u8(d.opcode).ok()?;
    let mut bth = BthFields::new(op, dest_qpn, d.psn);
    bth.solicited = d.flags.contains(TxDescFlags::SE);
    bth.ack_req = d.flags.contains(TxDescFlags::ACK_REQ);
    bth.becn = d.flags.contains(TxDescFlags::BECN);
    let has = |k| op.has_ext_header(k);
    let ext = ExtHeaders {
        deth: None,
        reth: has(ExtHeaderKind::Reth).then_some(RethFields { va: d.va, rkey: d.rkey, dma_len: d.dma_len }),
        atomic_eth: has(ExtHeaderKind::AtomicEth).then_some(AtomicEthFields {
            va: d.va,
            rkey: d.rkey,
            swap_add: d.swap_add,
            compare: d.compare,
        }),
        aeth: has(ExtHeaderKind::Aeth).then_some(AethFields { syndrome: d.aeth_syndrome, msn: d.aeth_msn }),
        atomic_ack_eth: has(ExtHeaderKind::AtomicAckEth)
            .then_some(AtomicAckEthFields { orig_remote_data: d.atomic_orig }),
        immdt: has(ExtHeaderKind::ImmDt).then_some(ImmDtFields { imm: d.imm_or_inv }),
        ieth: has(ExtHeaderKind::Ieth).then_some(IethFields { rkey: d.imm_or_inv }),
    };
    Some((bth, ext))
}

/// The block's state: the IPv4 identification counter.
#[derive(Clone, Debug, Default)]
pub struct RoceTxArb {
    ip_id: u16,
}

impl RoceTxArb {
    /// A block after reset.
    pub fn new() -> Self {
        Self::default()
    }

    /// The frame builder of the next packet (`d` of a QP with attributes `a`) from `port`.
    pub fn builder(&mut self, port: &TxPort, a: &QpAttr, d: &TxDesc) -> Option<FrameBuilder> {
        let (bth, ext) = bth_ext(d, a.dest_qpn)?;
        if a.encap == Encap::RoceV2Ipv4 {
            self.ip_id = self.ip_id.wrapping_add(1);
        }
        Some(frame_builder(port, &TxAddr::of_attr(a), bth, ext, self.ip_id))
    }
}
