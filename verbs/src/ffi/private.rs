//! The `IBVERBS_PRIVATE_34` interface: what rdma-core's provider libraries (libmlx5,
//! libefa, ...) import from libibverbs (`libibverbs/driver.h`, `cmd_ioctl.h`). Debian's
//! perftest links libmlx5 and libefa, and with BIND_NOW every one of their imports must
//! resolve, so all are here. A provider only ever works on a device it registered and the
//! kernel announced; here `verbs_register_driver_34` records nothing and no kernel device
//! exists, so no provider is ever handed a device, and the command functions below (each
//! the kernel's `ibv_cmd_*` path) are unreachable through a device: they return EOPNOTSUPP
//! without reading their arguments.

use std::ffi::{c_char, c_void};
use std::os::raw::{c_int, c_uint};
use std::sync::atomic::AtomicBool;

use super::{guard, minus_one, set_errno};
use crate::sys::*;

/// `verbs_allow_disassociate_destroy` (read by providers on device removal).
#[no_mangle]
pub static verbs_allow_disassociate_destroy: AtomicBool = AtomicBool::new(false);

/// `verbs_register_driver_34`: a provider library's constructor announcing itself. No
/// kernel device will ever be matched to it, so nothing is recorded.
#[no_mangle]
pub extern "C" fn verbs_register_driver_34(_ops: *const c_void) {}

macro_rules! eopnotsupp {
    ($($name:ident),* $(,)?) => {$(
        #[doc = concat!("`", stringify!($name), "`: the kernel command path; EOPNOTSUPP (see the module documentation).")]
        #[no_mangle]
        pub extern "C" fn $name() -> c_int {
            set_errno(libc::EOPNOTSUPP);
            libc::EOPNOTSUPP
        }
    )*};
}

eopnotsupp! {
    ibv_cmd_advise_mr, ibv_cmd_alloc_dm, ibv_cmd_alloc_mw, ibv_cmd_alloc_pd, ibv_cmd_attach_mcast,
    ibv_cmd_close_xrcd, ibv_cmd_create_ah, ibv_cmd_create_counters, ibv_cmd_create_cq, ibv_cmd_create_cq_ex,
    ibv_cmd_create_flow, ibv_cmd_create_flow_action_esp, ibv_cmd_create_qp, ibv_cmd_create_qp_ex,
    ibv_cmd_create_qp_ex2, ibv_cmd_create_rwq_ind_table, ibv_cmd_create_srq, ibv_cmd_create_srq_ex,
    ibv_cmd_create_wq, ibv_cmd_dealloc_mw, ibv_cmd_dealloc_pd, ibv_cmd_dereg_mr, ibv_cmd_destroy_ah,
    ibv_cmd_destroy_counters, ibv_cmd_destroy_cq, ibv_cmd_destroy_flow, ibv_cmd_destroy_flow_action,
    ibv_cmd_destroy_qp, ibv_cmd_destroy_rwq_ind_table, ibv_cmd_destroy_srq, ibv_cmd_destroy_wq,
    ibv_cmd_detach_mcast, ibv_cmd_free_dm, ibv_cmd_get_context, ibv_cmd_modify_cq,
    ibv_cmd_modify_flow_action_esp, ibv_cmd_modify_qp, ibv_cmd_modify_qp_ex, ibv_cmd_modify_srq,
    ibv_cmd_modify_wq, ibv_cmd_open_qp, ibv_cmd_open_xrcd, ibv_cmd_poll_cq, ibv_cmd_post_recv,
    ibv_cmd_post_send, ibv_cmd_post_srq_recv, ibv_cmd_query_context, ibv_cmd_query_device_any,
    ibv_cmd_query_mr, ibv_cmd_query_port, ibv_cmd_query_qp, ibv_cmd_query_srq, ibv_cmd_read_counters,
    ibv_cmd_reg_dm_mr, ibv_cmd_reg_dmabuf_mr, ibv_cmd_reg_mr, ibv_cmd_req_notify_cq, ibv_cmd_rereg_mr,
    ibv_cmd_resize_cq, execute_ioctl,
}

/// `_verbs_init_and_alloc_context`: a provider building a context on a kernel device;
/// NULL, EOPNOTSUPP.
#[no_mangle]
pub extern "C" fn _verbs_init_and_alloc_context() -> *mut c_void {
    set_errno(libc::EOPNOTSUPP);
    std::ptr::null_mut()
}

/// `verbs_open_device`: a provider's private open of a kernel device; NULL, EOPNOTSUPP.
#[no_mangle]
pub extern "C" fn verbs_open_device(_device: *mut ibv_device, _private_data: *mut c_void) -> *mut ibv_context {
    set_errno(libc::EOPNOTSUPP);
    std::ptr::null_mut()
}

/// `verbs_set_ops`, `verbs_init_cq`, `verbs_uninit_context`: parts of a provider's context
/// setup on a device it was handed (never, here).
#[no_mangle]
pub extern "C" fn verbs_set_ops(_vctx: *mut verbs_context, _ops: *const c_void) {}

/// See [`verbs_set_ops`].
#[no_mangle]
pub extern "C" fn verbs_init_cq(
    _cq: *mut ibv_cq,
    _ctx: *mut ibv_context,
    _ch: *mut ibv_comp_channel,
    _cq_ctx: *mut c_void,
) {
}

/// See [`verbs_set_ops`].
#[no_mangle]
pub extern "C" fn verbs_uninit_context(_vctx: *mut verbs_context) {}

/// `__verbs_log` (printf-style debug log of providers; variadic in C, its arguments are not
/// read).
#[no_mangle]
pub extern "C" fn __verbs_log(_ctx: *mut verbs_context, _level: u32, _fmt: *const c_char) {}

/// `ibv_read_ibdev_sysfs_file`: a kernel device's sysfs attribute; no kernel device exists,
/// so -1 with ENOENT (what libibverbs gives for a missing file).
#[no_mangle]
pub extern "C" fn ibv_read_ibdev_sysfs_file(
    _buf: *mut c_char,
    _size: usize,
    _dev: *mut ibv_device,
    _fmt: *const c_char,
) -> c_int {
    minus_one(Err(libc::ENOENT))
}

/// The head of rdma-core's `struct ibv_command_buffer` (`libibverbs/cmd_ioctl.h`, not an
/// installed header), up to the attributes of its `struct ib_uverbs_ioctl_hdr`.
#[repr(C)]
struct CommandBuffer {
    next: *mut CommandBuffer,
    next_attr: *mut u8,
    last_attr: *mut u8,
    uhw: [u8; 4],
    flags: u8,
    /// `struct ib_uverbs_ioctl_hdr` (24 bytes, 8-aligned), then the attributes.
    hdr: [u64; 3],
}

/// Size of `struct ib_uverbs_attr`.
const UVERBS_ATTR_SIZE: usize = 16;

/// `__ioctl_final_num_attrs`: `num_attrs` plus the attributes of every linked command
/// buffer (rdma-core `cmd_ioctl.c`); a provider sizes its attribute array with it.
///
/// # Safety
/// `link` is NULL or a chain of valid command buffers (a provider's own).
#[no_mangle]
pub unsafe extern "C" fn __ioctl_final_num_attrs(num_attrs: c_uint, mut link: *mut c_void) -> c_uint {
    guard(num_attrs, || {
        let mut n = num_attrs;
        while !link.is_null() {
            let l = link.cast::<CommandBuffer>();
            // SAFETY: the caller passes a chain of command buffers; attrs follow hdr.
            let (next, used) = unsafe {
                let attrs = std::ptr::addr_of_mut!((*l).hdr).cast::<u8>().add(24);
                ((*l).next, ((*l).next_attr as usize).wrapping_sub(attrs as usize) / UVERBS_ATTR_SIZE)
            };
            n = n.wrapping_add(used as c_uint);
            link = next.cast();
        }
        n
    })
}

/// `ibv_query_gid_type`: the type of GID table entry `index` (rdma-core's
/// `enum ibv_gid_type_sysfs`: 0 = IB/RoCE v1, 1 = RoCE v2). Index 0 is the port's RoCEv2
/// GID; -1 with EINVAL beyond the table.
///
/// # Safety
/// `context` is an open context of this library, `type_` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_gid_type(
    context: *mut ibv_context,
    port_num: u8,
    index: c_uint,
    type_: *mut c_uint,
) -> c_int {
    guard(-1, || {
        // SAFETY: forwarded from the caller.
        minus_one(unsafe { super::device::gid_type(context, port_num, index) }.map(|t| {
            // SAFETY: the caller passes a writable result.
            unsafe { *type_ = t };
        }))
    })
}
