//! libibverbs' pure helpers: the `*_str` functions and the rate conversions, with the
//! strings and tables of rdma-core v44 (`libibverbs/enum_strs.c`, `libibverbs/verbs.c`).

use std::ffi::{c_char, CStr};
use std::os::raw::c_int;

use crate::sys::*;

/// A static C string.
fn s(c: &'static CStr) -> *const c_char {
    c.as_ptr()
}

/// `ibv_node_type_str`.
#[no_mangle]
pub extern "C" fn ibv_node_type_str(t: ibv_node_type) -> *const c_char {
    s(match t {
        IBV_NODE_CA => c"InfiniBand channel adapter",
        IBV_NODE_SWITCH => c"InfiniBand switch",
        IBV_NODE_ROUTER => c"InfiniBand router",
        IBV_NODE_RNIC => c"iWARP NIC",
        IBV_NODE_USNIC => c"usNIC",
        IBV_NODE_USNIC_UDP => c"usNIC UDP",
        IBV_NODE_UNSPECIFIED => c"unspecified",
        _ => c"unknown",
    })
}

/// `ibv_port_state_str`.
#[no_mangle]
pub extern "C" fn ibv_port_state_str(st: ibv_port_state) -> *const c_char {
    s(match st {
        IBV_PORT_NOP => c"no state change (NOP)",
        IBV_PORT_DOWN => c"down",
        IBV_PORT_INIT => c"init",
        IBV_PORT_ARMED => c"armed",
        IBV_PORT_ACTIVE => c"active",
        IBV_PORT_ACTIVE_DEFER => c"active defer",
        _ => c"unknown",
    })
}

/// `ibv_event_type_str`.
#[no_mangle]
pub extern "C" fn ibv_event_type_str(e: ibv_event_type) -> *const c_char {
    s(match e {
        IBV_EVENT_CQ_ERR => c"CQ error",
        IBV_EVENT_QP_FATAL => c"local work queue catastrophic error",
        IBV_EVENT_QP_REQ_ERR => c"invalid request local work queue error",
        IBV_EVENT_QP_ACCESS_ERR => c"local access violation work queue error",
        IBV_EVENT_COMM_EST => c"communication established",
        IBV_EVENT_SQ_DRAINED => c"send queue drained",
        IBV_EVENT_PATH_MIG => c"path migrated",
        IBV_EVENT_PATH_MIG_ERR => c"path migration request error",
        IBV_EVENT_DEVICE_FATAL => c"local catastrophic error",
        IBV_EVENT_PORT_ACTIVE => c"port active",
        IBV_EVENT_PORT_ERR => c"port error",
        IBV_EVENT_LID_CHANGE => c"LID change",
        IBV_EVENT_PKEY_CHANGE => c"P_Key change",
        IBV_EVENT_SM_CHANGE => c"SM change",
        IBV_EVENT_SRQ_ERR => c"SRQ catastrophic error",
        IBV_EVENT_SRQ_LIMIT_REACHED => c"SRQ limit reached",
        IBV_EVENT_QP_LAST_WQE_REACHED => c"last WQE reached",
        IBV_EVENT_CLIENT_REREGISTER => c"client reregistration",
        IBV_EVENT_GID_CHANGE => c"GID table change",
        IBV_EVENT_WQ_FATAL => c"WQ fatal",
        _ => c"unknown",
    })
}

/// `ibv_wc_status_str`.
#[no_mangle]
pub extern "C" fn ibv_wc_status_str(st: ibv_wc_status) -> *const c_char {
    s(match st {
        IBV_WC_SUCCESS => c"success",
        IBV_WC_LOC_LEN_ERR => c"local length error",
        IBV_WC_LOC_QP_OP_ERR => c"local QP operation error",
        IBV_WC_LOC_EEC_OP_ERR => c"local EE context operation error",
        IBV_WC_LOC_PROT_ERR => c"local protection error",
        IBV_WC_WR_FLUSH_ERR => c"Work Request Flushed Error",
        IBV_WC_MW_BIND_ERR => c"memory management operation error",
        IBV_WC_BAD_RESP_ERR => c"bad response error",
        IBV_WC_LOC_ACCESS_ERR => c"local access error",
        IBV_WC_REM_INV_REQ_ERR => c"remote invalid request error",
        IBV_WC_REM_ACCESS_ERR => c"remote access error",
        IBV_WC_REM_OP_ERR => c"remote operation error",
        IBV_WC_RETRY_EXC_ERR => c"transport retry counter exceeded",
        IBV_WC_RNR_RETRY_EXC_ERR => c"RNR retry counter exceeded",
        IBV_WC_LOC_RDD_VIOL_ERR => c"local RDD violation error",
        IBV_WC_REM_INV_RD_REQ_ERR => c"remote invalid RD request",
        IBV_WC_REM_ABORT_ERR => c"aborted error",
        IBV_WC_INV_EECN_ERR => c"invalid EE context number",
        IBV_WC_INV_EEC_STATE_ERR => c"invalid EE context state",
        IBV_WC_FATAL_ERR => c"fatal error",
        IBV_WC_RESP_TIMEOUT_ERR => c"response timeout error",
        IBV_WC_GENERAL_ERR => c"general error",
        IBV_WC_TM_ERR => c"TM error",
        IBV_WC_TM_RNDV_INCOMPLETE => c"TM software rendezvous",
        _ => c"unknown",
    })
}

/// (rate, multiple of 2.5 Gb/s, Mb/s) of every `enum ibv_rate` value; a 0 multiple has no
/// `mult` form.
const RATES: &[(ibv_rate, c_int, c_int)] = &[
    (IBV_RATE_2_5_GBPS, 1, 2500),
    (IBV_RATE_5_GBPS, 2, 5000),
    (IBV_RATE_10_GBPS, 4, 10000),
    (IBV_RATE_20_GBPS, 8, 20000),
    (IBV_RATE_30_GBPS, 12, 30000),
    (IBV_RATE_40_GBPS, 16, 40000),
    (IBV_RATE_60_GBPS, 24, 60000),
    (IBV_RATE_80_GBPS, 32, 80000),
    (IBV_RATE_120_GBPS, 48, 120000),
    (IBV_RATE_14_GBPS, 0, 14062),
    (IBV_RATE_56_GBPS, 0, 56250),
    (IBV_RATE_112_GBPS, 0, 112500),
    (IBV_RATE_168_GBPS, 0, 168750),
    (IBV_RATE_25_GBPS, 0, 25781),
    (IBV_RATE_100_GBPS, 0, 103125),
    (IBV_RATE_200_GBPS, 0, 206250),
    (IBV_RATE_300_GBPS, 0, 309375),
    (IBV_RATE_28_GBPS, 11, 28125),
    (IBV_RATE_50_GBPS, 20, 53125),
    (IBV_RATE_400_GBPS, 160, 425000),
    (IBV_RATE_600_GBPS, 240, 637500),
    (IBV_RATE_800_GBPS, 320, 850000),
    (IBV_RATE_1200_GBPS, 480, 1275000),
];

/// `ibv_rate_to_mult`: -1 for rates that are no multiple of 2.5 Gb/s.
#[no_mangle]
pub extern "C" fn ibv_rate_to_mult(rate: ibv_rate) -> c_int {
    RATES.iter().find(|r| r.0 == rate && r.1 != 0).map_or(-1, |r| r.1)
}

/// `mult_to_ibv_rate`: IBV_RATE_MAX for an unknown multiple.
#[no_mangle]
pub extern "C" fn mult_to_ibv_rate(mult: c_int) -> ibv_rate {
    RATES.iter().find(|r| r.1 == mult && r.1 != 0).map_or(IBV_RATE_MAX, |r| r.0)
}

/// `ibv_rate_to_mbps`: -1 for an unknown rate.
#[no_mangle]
pub extern "C" fn ibv_rate_to_mbps(rate: ibv_rate) -> c_int {
    RATES.iter().find(|r| r.0 == rate).map_or(-1, |r| r.2)
}

/// `mbps_to_ibv_rate`: IBV_RATE_MAX for an unknown rate.
#[no_mangle]
pub extern "C" fn mbps_to_ibv_rate(mbps: c_int) -> ibv_rate {
    RATES.iter().find(|r| r.2 == mbps).map_or(IBV_RATE_MAX, |r| r.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: *const c_char) -> String {
        // SAFETY: the functions return static NUL-terminated strings.
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }

    #[test]
    fn strings_and_rates_as_libibverbs() {
        assert_eq!(text(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR)), "transport retry counter exceeded");
        assert_eq!(text(ibv_wc_status_str(99)), "unknown");
        assert_eq!(text(ibv_port_state_str(IBV_PORT_ACTIVE)), "active");
        assert_eq!(text(ibv_event_type_str(IBV_EVENT_QP_FATAL)), "local work queue catastrophic error");
        assert_eq!(text(ibv_node_type_str(IBV_NODE_CA)), "InfiniBand channel adapter");
        assert_eq!(ibv_rate_to_mult(IBV_RATE_40_GBPS), 16);
        assert_eq!(ibv_rate_to_mult(IBV_RATE_100_GBPS), -1);
        assert_eq!(mult_to_ibv_rate(20), IBV_RATE_50_GBPS);
        assert_eq!(mult_to_ibv_rate(3), IBV_RATE_MAX);
        assert_eq!(ibv_rate_to_mbps(IBV_RATE_100_GBPS), 103125);
        assert_eq!(mbps_to_ibv_rate(103125), IBV_RATE_100_GBPS);
    }
}
