//! The historical marshalling helpers between libibverbs structs and the kernel ABI's
//! (`libibverbs/marshall.c`), exported for librdmacm: plain field copies, as there.

use super::guard;
use crate::sys::*;

/// `ibv_copy_ah_attr_from_kern`.
///
/// # Safety
/// Both pointers valid (`dst` writable).
#[no_mangle]
pub unsafe extern "C" fn ibv_copy_ah_attr_from_kern(dst: *mut ibv_ah_attr, src: *const ib_uverbs_ah_attr) {
    guard((), || {
        // SAFETY: the caller passes valid structs.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        d.grh.dgid.raw = s.grh.dgid;
        d.grh.flow_label = s.grh.flow_label;
        d.grh.sgid_index = s.grh.sgid_index;
        d.grh.hop_limit = s.grh.hop_limit;
        d.grh.traffic_class = s.grh.traffic_class;
        d.dlid = s.dlid;
        d.sl = s.sl;
        d.src_path_bits = s.src_path_bits;
        d.static_rate = s.static_rate;
        d.is_global = s.is_global;
        d.port_num = s.port_num;
    })
}

/// `ibv_copy_qp_attr_from_kern`.
///
/// # Safety
/// Both pointers valid (`dst` writable).
#[no_mangle]
pub unsafe extern "C" fn ibv_copy_qp_attr_from_kern(dst: *mut ibv_qp_attr, src: *const ib_uverbs_qp_attr) {
    guard((), || {
        // SAFETY: the caller passes valid structs.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        d.cur_qp_state = s.cur_qp_state;
        d.path_mtu = s.path_mtu;
        d.path_mig_state = s.path_mig_state;
        d.qkey = s.qkey;
        d.rq_psn = s.rq_psn;
        d.sq_psn = s.sq_psn;
        d.dest_qp_num = s.dest_qp_num;
        d.qp_access_flags = s.qp_access_flags as _;
        d.cap.max_send_wr = s.max_send_wr;
        d.cap.max_recv_wr = s.max_recv_wr;
        d.cap.max_send_sge = s.max_send_sge;
        d.cap.max_recv_sge = s.max_recv_sge;
        d.cap.max_inline_data = s.max_inline_data;
        // SAFETY: the fields are valid structs of the caller's.
        unsafe {
            ibv_copy_ah_attr_from_kern(&mut d.ah_attr, &s.ah_attr);
            ibv_copy_ah_attr_from_kern(&mut d.alt_ah_attr, &s.alt_ah_attr);
        }
        d.pkey_index = s.pkey_index;
        d.alt_pkey_index = s.alt_pkey_index;
        d.en_sqd_async_notify = s.en_sqd_async_notify;
        d.sq_draining = s.sq_draining;
        d.max_rd_atomic = s.max_rd_atomic;
        d.max_dest_rd_atomic = s.max_dest_rd_atomic;
        d.min_rnr_timer = s.min_rnr_timer;
        d.port_num = s.port_num;
        d.timeout = s.timeout;
        d.retry_cnt = s.retry_cnt;
        d.rnr_retry = s.rnr_retry;
        d.alt_port_num = s.alt_port_num;
        d.alt_timeout = s.alt_timeout;
    })
}

/// `ibv_copy_path_rec_from_kern`.
///
/// # Safety
/// Both pointers valid (`dst` writable).
#[no_mangle]
pub unsafe extern "C" fn ibv_copy_path_rec_from_kern(dst: *mut ibv_sa_path_rec, src: *const ib_user_path_rec) {
    guard((), || {
        // SAFETY: the caller passes valid structs.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        d.dgid.raw = s.dgid;
        d.sgid.raw = s.sgid;
        d.dlid = s.dlid;
        d.slid = s.slid;
        d.raw_traffic = s.raw_traffic as _;
        d.flow_label = s.flow_label;
        d.hop_limit = s.hop_limit;
        d.traffic_class = s.traffic_class;
        d.reversible = s.reversible as _;
        d.numb_path = s.numb_path;
        d.pkey = s.pkey;
        d.sl = s.sl;
        d.mtu_selector = s.mtu_selector;
        d.mtu = s.mtu as u8;
        d.rate_selector = s.rate_selector;
        d.rate = s.rate;
        d.packet_life_time = s.packet_life_time;
        d.preference = s.preference;
        d.packet_life_time_selector = s.packet_life_time_selector;
    })
}

/// `ibv_copy_path_rec_to_kern`.
///
/// # Safety
/// Both pointers valid (`dst` writable).
#[no_mangle]
pub unsafe extern "C" fn ibv_copy_path_rec_to_kern(dst: *mut ib_user_path_rec, src: *const ibv_sa_path_rec) {
    guard((), || {
        // SAFETY: the caller passes valid structs.
        let (d, s) = unsafe { (&mut *dst, &*src) };
        // SAFETY: ibv_gid is a union of plain bytes; `raw` covers all of it.
        let (dg, sg) = unsafe { (s.dgid.raw, s.sgid.raw) };
        d.dgid = dg;
        d.sgid = sg;
        d.dlid = s.dlid;
        d.slid = s.slid;
        d.raw_traffic = s.raw_traffic as _;
        d.flow_label = s.flow_label;
        d.hop_limit = s.hop_limit;
        d.traffic_class = s.traffic_class;
        d.reversible = s.reversible as _;
        d.numb_path = s.numb_path;
        d.pkey = s.pkey;
        d.sl = s.sl;
        d.mtu_selector = s.mtu_selector;
        d.mtu = u32::from(s.mtu);
        d.rate_selector = s.rate_selector;
        d.rate = s.rate;
        d.packet_life_time = s.packet_life_time;
        d.preference = s.preference;
        d.packet_life_time_selector = s.packet_life_time_selector;
    })
}
