//! Model of `hdl/rtl/roce_rd_rsp.sv`: the packets (descriptor and payload) of the READ
//! responses and ATOMIC Acknowledges the responder asks for, segmented as the engine's
//! responder does ([`read_response_packets`]). Operation-level: the lockstep test compares
//! every descriptor and payload in order.

use crate::contract::records::{RdRsp, TxDesc, TxDescFlags};
use crate::engine::resp::{read_response_packets, ACK_SYNDROME};
use crate::wire::Opcode;

/// The packets of `r`, reading payload with `read(dma, buf)` (false: the read failed; the
/// packet still goes, with zeros). Returns them and the number of failed reads.
pub fn packets(r: &RdRsp, mut read: impl FnMut(u64, &mut [u8]) -> bool) -> (Vec<(TxDesc, Vec<u8>)>, u32) {
    let base = TxDesc { qpn: r.qpn, psn: r.psn, flags: TxDescFlags::EMPTY, ..TxDesc::default() };
    if r.atomic {
        let d = TxDesc {
            opcode: Opcode::RcAtomicAcknowledge as u8,
            aeth_syndrome: ACK_SYNDROME,
            aeth_msn: r.msn,
            atomic_orig: r.orig,
            ..base
        };
        return (vec![(d, Vec::new())], 0);
    }
    let mut errors = 0;
    let out = read_response_packets(r.psn, r.len, r.path_mtu.bytes())
        .map(|p| {
            let mut payload = vec![0u8; p.len as usize];
            if p.len > 0 && !read(r.dma + p.off, &mut payload) {
                errors += 1;
                payload.fill(0);
            }
            let d = TxDesc {
                opcode: p.opcode as u8,
                psn: p.psn,
                payload_len: p.len as u16,
                aeth_syndrome: if p.aeth { ACK_SYNDROME } else { 0 },
                aeth_msn: if p.aeth { r.msn } else { 0 },
                ..base
            };
            (d, payload)
        })
        .collect();
    (out, errors)
}
