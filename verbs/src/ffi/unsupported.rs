//! Public verbs the engine has no hardware for, failing the way libibverbs fails on a device
//! without them (a provider whose op is missing: NULL or the error code, `errno` =
//! EOPNOTSUPP): shared receive queues, address handles and multicast (UD only; the engine
//! does RC), memory windows (`alloc_mw`/`bind_mw` are `context->ops` entries, NULL here),
//! re-registration and resizing, dma-buf regions, importing objects of another process's
//! kernel context, ECE. And the fork helpers, which are real.

use std::ffi::c_void;
use std::os::raw::c_int;

use super::{errno_ret, guard, set_errno};
use crate::sys::*;

fn null<T>() -> *mut T {
    set_errno(libc::EOPNOTSUPP);
    std::ptr::null_mut()
}

fn eop() -> c_int {
    errno_ret(Err(libc::EOPNOTSUPP))
}

/// `ibv_create_srq`: no SRQ support (device attribute max_srq = 0).
#[no_mangle]
pub extern "C" fn ibv_create_srq(_pd: *mut ibv_pd, _attr: *mut ibv_srq_init_attr) -> *mut ibv_srq {
    null()
}

/// `ibv_modify_srq`.
#[no_mangle]
pub extern "C" fn ibv_modify_srq(_srq: *mut ibv_srq, _attr: *mut ibv_srq_attr, _mask: c_int) -> c_int {
    eop()
}

/// `ibv_query_srq`.
#[no_mangle]
pub extern "C" fn ibv_query_srq(_srq: *mut ibv_srq, _attr: *mut ibv_srq_attr) -> c_int {
    eop()
}

/// `ibv_destroy_srq`.
#[no_mangle]
pub extern "C" fn ibv_destroy_srq(_srq: *mut ibv_srq) -> c_int {
    eop()
}

/// `ibv_create_ah`: address handles are for UD QPs (max_ah = 0).
#[no_mangle]
pub extern "C" fn ibv_create_ah(_pd: *mut ibv_pd, _attr: *mut ibv_ah_attr) -> *mut ibv_ah {
    null()
}

/// `ibv_create_ah_from_wc`.
#[no_mangle]
pub extern "C" fn ibv_create_ah_from_wc(
    _pd: *mut ibv_pd,
    _wc: *mut ibv_wc,
    _grh: *mut ibv_grh,
    _port: u8,
) -> *mut ibv_ah {
    null()
}

/// `ibv_init_ah_from_wc`: completions carry no GRH on RC (only UD receives do).
#[no_mangle]
pub extern "C" fn ibv_init_ah_from_wc(
    _ctx: *mut ibv_context,
    _port: u8,
    _wc: *mut ibv_wc,
    _grh: *mut ibv_grh,
    _attr: *mut ibv_ah_attr,
) -> c_int {
    eop()
}

/// `ibv_destroy_ah`.
#[no_mangle]
pub extern "C" fn ibv_destroy_ah(_ah: *mut ibv_ah) -> c_int {
    eop()
}

/// `ibv_attach_mcast`: multicast is UD only.
#[no_mangle]
pub extern "C" fn ibv_attach_mcast(_qp: *mut ibv_qp, _gid: *const ibv_gid, _lid: u16) -> c_int {
    eop()
}

/// `ibv_detach_mcast`.
#[no_mangle]
pub extern "C" fn ibv_detach_mcast(_qp: *mut ibv_qp, _gid: *const ibv_gid, _lid: u16) -> c_int {
    eop()
}

/// `ibv_rereg_mr`: IBV_REREG_MR_ERR_INPUT (the old MR stays valid), EOPNOTSUPP.
#[no_mangle]
pub extern "C" fn ibv_rereg_mr(
    _mr: *mut ibv_mr,
    _flags: c_int,
    _pd: *mut ibv_pd,
    _addr: *mut c_void,
    _len: usize,
    _access: c_int,
) -> c_int {
    set_errno(libc::EOPNOTSUPP);
    IBV_REREG_MR_ERR_INPUT
}

/// `ibv_resize_cq`.
#[no_mangle]
pub extern "C" fn ibv_resize_cq(_cq: *mut ibv_cq, _cqe: c_int) -> c_int {
    eop()
}

/// `ibv_reg_dmabuf_mr`: no dma-buf importer without a kernel driver.
#[no_mangle]
pub extern "C" fn ibv_reg_dmabuf_mr(
    _pd: *mut ibv_pd,
    _off: u64,
    _len: usize,
    _iova: u64,
    _fd: c_int,
    _access: c_int,
) -> *mut ibv_mr {
    null()
}

/// `ibv_import_device`: the argument is another process's kernel command fd.
#[no_mangle]
pub extern "C" fn ibv_import_device(_cmd_fd: c_int) -> *mut ibv_context {
    null()
}

/// `ibv_import_pd`.
#[no_mangle]
pub extern "C" fn ibv_import_pd(_ctx: *mut ibv_context, _handle: u32) -> *mut ibv_pd {
    null()
}

/// `ibv_import_mr`.
#[no_mangle]
pub extern "C" fn ibv_import_mr(_pd: *mut ibv_pd, _handle: u32) -> *mut ibv_mr {
    null()
}

/// `ibv_import_dm`.
#[no_mangle]
pub extern "C" fn ibv_import_dm(_ctx: *mut ibv_context, _handle: u32) -> *mut ibv_dm {
    null()
}

/// `ibv_unimport_pd` (nothing can have been imported).
#[no_mangle]
pub extern "C" fn ibv_unimport_pd(_pd: *mut ibv_pd) {}

/// `ibv_unimport_mr`.
#[no_mangle]
pub extern "C" fn ibv_unimport_mr(_mr: *mut ibv_mr) {}

/// `ibv_unimport_dm`.
#[no_mangle]
pub extern "C" fn ibv_unimport_dm(_dm: *mut ibv_dm) {}

/// `ibv_query_ece`: no enhanced connection establishment options.
#[no_mangle]
pub extern "C" fn ibv_query_ece(_qp: *mut ibv_qp, _ece: *mut ibv_ece) -> c_int {
    eop()
}

/// `ibv_set_ece`.
#[no_mangle]
pub extern "C" fn ibv_set_ece(_qp: *mut ibv_qp, _ece: *mut ibv_ece) -> c_int {
    eop()
}

/// `ibv_fork_init`: nothing to prepare. The simulated engines reach registered memory by
/// the process's own virtual addresses, so a fork's copy-on-write cannot move a page from
/// under them (see [`ibv_is_fork_initialized`]).
#[no_mangle]
pub extern "C" fn ibv_fork_init() -> c_int {
    0
}

/// `ibv_is_fork_initialized`: IBV_FORK_UNNEEDED (as libibverbs on a kernel with
/// copy-on-fork for pinned pages).
#[no_mangle]
pub extern "C" fn ibv_is_fork_initialized() -> ibv_fork_status {
    IBV_FORK_UNNEEDED
}

fn madvise_range(base: *mut c_void, size: usize, advice: c_int) -> c_int {
    guard(-1, || {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(4096) as usize;
        let start = (base as usize) & !(page - 1);
        let end = (base as usize).saturating_add(size).div_ceil(page) * page;
        // SAFETY: madvise only changes the fork behaviour of the caller's own mapping (an
        // unmapped range is ENOMEM, not undefined behaviour).
        let r = unsafe { libc::madvise(start as *mut c_void, end - start, advice) };
        if r != 0 {
            -1
        } else {
            0
        }
    })
}

/// `ibv_dontfork_range`: madvise(MADV_DONTFORK) over the pages of the range.
#[no_mangle]
pub extern "C" fn ibv_dontfork_range(base: *mut c_void, size: usize) -> c_int {
    madvise_range(base, size, libc::MADV_DONTFORK)
}

/// `ibv_dofork_range`: madvise(MADV_DOFORK) over the pages of the range.
#[no_mangle]
pub extern "C" fn ibv_dofork_range(base: *mut c_void, size: usize) -> c_int {
    madvise_range(base, size, libc::MADV_DOFORK)
}

/// `ibv_query_qp_data_in_order`: 0, "not guaranteed" (libibverbs' answer for a provider
/// that does not implement the query).
#[no_mangle]
pub extern "C" fn ibv_query_qp_data_in_order(_qp: *mut ibv_qp, _op: ibv_wr_opcode, _flags: u32) -> c_int {
    0
}

/// `ibv_qp_to_qp_ex`: NULL: QPs of this library are not extended QPs (they are created by
/// `ibv_create_qp`; `ibv_create_qp_ex` is not offered, so `ibv_wr_*` is not available).
#[no_mangle]
pub extern "C" fn ibv_qp_to_qp_ex(_qp: *mut ibv_qp) -> *mut ibv_qp_ex {
    std::ptr::null_mut()
}
