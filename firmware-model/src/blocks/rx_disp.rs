//! Model of `hdl/rtl/roce_rx_disp.sv`: the engine's RX decision ([`rx_verdict`]) on the
//! header record `roce_rx_parse` gives. A record that is not RoCE carries no addresses, so
//! the MAC filter applies to RoCE frames only (the engine also drops non-RoCE frames to
//! other unicast MACs; the HDL counts them as not RoCE).

use std::net::{Ipv4Addr, Ipv6Addr};

use crate::contract::records::{RxFlags, RxHdr};
use crate::engine::rx_disp::{rx_verdict, RxFacts, RxVerdict};
use crate::wire::Opcode;

/// The decision for record `h`; `enabled` is CTRL.ENABLE (`None` when disabled: dropped).
pub fn verdict(
    h: &RxHdr,
    enabled: bool,
    mac: [u8; 6],
    ipv4: Ipv4Addr,
    gid: Ipv6Addr,
    can_receive: impl Fn(u32) -> bool,
) -> Option<RxVerdict> {
    if !enabled {
        return None;
    }
    let roce = h.flags.contains(RxFlags::ROCE) && !h.flags.contains(RxFlags::ERROR);
    let facts = RxFacts {
        malformed: h.flags.contains(RxFlags::ERROR),
        dst_mac: if roce { h.dst_mac } else { mac },
        roce: if roce {
            Opcode::from_u8(h.opcode).ok().map(|op| {
                let v4 = !h.flags.contains(RxFlags::IPV6) && !h.flags.contains(RxFlags::ROCEV1);
                (Ipv6Addr::from(h.dst_ip), v4, op, h.dest_qp, h.flags.contains(RxFlags::CE))
            })
        } else {
            None
        },
    };
    Some(rx_verdict(&facts, mac, ipv4, gid, can_receive))
}
