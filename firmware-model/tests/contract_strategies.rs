//! proptest strategies for every contract descriptor, shared by the contract tests
//! (`#[path = "contract_strategies.rs"] mod strategies;`). Every value they generate is
//! valid: fields fit their documented widths and `flags.INLINE` matches `data`.
#![allow(dead_code)]

use proptest::prelude::*;
use roce_model::contract::*;

fn code<T: Copy + core::fmt::Debug + 'static>(all: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(all)
}

fn bits(width: u32) -> impl Strategy<Value = u64> {
    if width >= 64 {
        any::<u64>().boxed()
    } else {
        (0..(1u64 << width)).boxed()
    }
}

pub fn sge() -> impl Strategy<Value = Sge> {
    (any::<u64>(), any::<u32>(), any::<u32>()).prop_map(|(addr, len, lkey)| Sge { addr, len, lkey })
}

pub fn sq_data() -> impl Strategy<Value = SqData> {
    prop_oneof![
        proptest::array::uniform4(sge()).prop_map(SqData::Sge),
        proptest::collection::vec(any::<u8>(), SQ_DATA_BYTES).prop_map(|v| {
            let mut d = [0u8; SQ_DATA_BYTES];
            d.copy_from_slice(&v);
            SqData::Inline(d)
        }),
    ]
}

pub fn sq_wqe() -> impl Strategy<Value = SqWqe> {
    (
        (any::<u64>(), code(SqOpcode::ALL), 0u8..16, any::<u8>(), any::<u32>()),
        (any::<u64>(), any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>(), any::<u32>()),
        sq_data(),
    )
        .prop_map(
            |(
                (wr_id, opcode, flags, num_sge, imm_or_inv),
                (remote_addr, rkey, total_len, compare_add, swap, bf_db),
                data,
            )| {
                let inline = matches!(data, SqData::Inline(_));
                let flags = SqFlags::from_bits_truncate(flags).with(SqFlags::INLINE, inline);
                SqWqe {
                    wr_id,
                    opcode,
                    flags,
                    num_sge,
                    imm_or_inv,
                    remote_addr,
                    rkey,
                    total_len,
                    compare_add,
                    swap,
                    bf_db,
                    data,
                }
            },
        )
}

pub fn rq_wqe() -> impl Strategy<Value = RqWqe> {
    (any::<u64>(), any::<u8>(), proptest::array::uniform3(sge())).prop_map(|(wr_id, num_sge, sge)| RqWqe {
        wr_id,
        num_sge,
        sge,
    })
}

pub fn cqe() -> impl Strategy<Value = Cqe> {
    (
        (any::<u64>(), any::<u32>(), any::<u32>(), bits(24)),
        (code(CqeOpcode::ALL), code(CqeStatus::ALL), 0u8..8, 0u8..2, bits(24)),
    )
        .prop_map(|((wr_id, byte_len, imm_or_inv, qpn), (opcode, status, flags, owner, src_qp))| Cqe {
            wr_id,
            byte_len,
            imm_or_inv,
            qpn: qpn as u32,
            opcode,
            status,
            flags: CqeFlags::from_bits_truncate(flags),
            owner: CqeOwner::from_bits_truncate(owner),
            src_qp: src_qp as u32,
        })
}

pub fn vlan() -> impl Strategy<Value = VlanTag> {
    (0u16..4096, 0u8..8, any::<bool>()).prop_map(|(vid, pcp, valid)| VlanTag { vid, pcp, valid })
}

pub fn qp_ctx() -> impl Strategy<Value = QpCtx> {
    (
        (code(QpState::ALL), code(QpType::ALL), code(PathMtu::ALL), code(Encap::ALL), any::<u32>(), 0u32..16),
        (bits(24), bits(24), bits(24), any::<u64>(), any::<u64>(), 0u8..16, 0u8..16),
        (0u16..(1 << 14), 0u16..(1 << 14), 0u8..32, 0u8..8, 0u8..8, 0u8..32, any::<u8>(), any::<u8>()),
        (any::<[u8; 6]>(), vlan(), 0u8..64, any::<u8>(), any::<u16>(), any::<[u8; 16]>()),
        (any::<u16>(), any::<u16>(), any::<u16>(), any::<u16>(), bits(20), 0u8..8, any::<u16>()),
    )
        .prop_map(|(a, b, c, d, e)| QpCtx {
            state: a.0,
            qp_type: a.1,
            path_mtu: a.2,
            encap: a.3,
            pd: a.4,
            access: AccessFlags::from_bits_truncate(a.5),
            dest_qpn: b.0 as u32,
            sq_psn: b.1 as u32,
            rq_psn: b.2 as u32,
            sq_base: b.3,
            rq_base: b.4,
            sq_log_size: b.5,
            rq_log_size: b.6,
            send_cq: c.0,
            recv_cq: c.1,
            timeout: c.2,
            retry_cnt: c.3,
            rnr_retry: c.4,
            min_rnr_timer: c.5,
            max_rd_atomic: c.6,
            max_dest_rd_atomic: c.7,
            dest_mac: d.0,
            vlan: d.1,
            dscp: d.2,
            hop_limit: d.3,
            udp_sport: d.4,
            dest_ip: d.5,
            sq_pi: e.0,
            sq_ci: e.1,
            rq_pi: e.2,
            rq_ci: e.3,
            flow_label: e.4 as u32,
            sq_win_shift: e.5,
            sq_win_base: e.6,
        })
}

pub fn cq_ctx() -> impl Strategy<Value = CqCtx> {
    (any::<u64>(), 0u8..16, 0u8..2, any::<bool>(), any::<u16>(), any::<u16>(), 0u8..8).prop_map(
        |(base, log_size, flags, valid, pi, ci, state)| CqCtx {
            base,
            log_size,
            flags: CqFlags::from_bits_truncate(flags),
            valid,
            pi,
            ci,
            state: CqState::from_bits_truncate(state),
        },
    )
}

pub fn mr_ctx() -> impl Strategy<Value = MrCtx> {
    (any::<u64>(), any::<u64>(), any::<u64>(), any::<u32>(), any::<u32>(), 0u32..16, any::<bool>()).prop_map(
        |(va, len, iova, pd, key, access, valid)| MrCtx {
            va,
            len,
            iova,
            pd,
            key,
            access: AccessFlags::from_bits_truncate(access),
            valid,
        },
    )
}
