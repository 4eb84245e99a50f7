//! The symbols Debian's library has only at an old, non-default version: the IBVERBS_1.0
//! ABI of 2006 (rdma-core's `compat-1_0.c`, with the `ibv_*_1_0` wrapper structs of that
//! era) and `ibv_register_driver@IBVERBS_1.1` (the provider interface before
//! `verbs_register_driver_34`). A binary linked against libibverbs 1.0 binds to these; this
//! library does not implement that ABI, so each fails the way libibverbs reports an
//! unsupported call: NULL or an error code, with `errno` = EOPNOTSUPP.
//!
//! Each is a small assembly stub defined and versioned (`.symver name, sym@VERSION`) in the
//! same object, which a version script cannot express for a name that also has a newer
//! default version defined in Rust.

use std::os::raw::c_int;

use super::set_errno;

extern "C" fn fail_ptr() -> *mut std::ffi::c_void {
    set_errno(libc::EOPNOTSUPP);
    std::ptr::null_mut()
}

extern "C" fn fail_int() -> c_int {
    set_errno(libc::EOPNOTSUPP);
    libc::EOPNOTSUPP
}

extern "C" fn fail_u64() -> u64 {
    set_errno(libc::EOPNOTSUPP);
    0
}

extern "C" fn nothing() {}

macro_rules! compat {
    ($($name:literal @ $ver:literal => $target:ident),* $(,)?) => {
        std::arch::global_asm!(
            $(
                concat!(".globl __roce_verbs_compat_", $name),
                concat!(".type __roce_verbs_compat_", $name, ", @function"),
                concat!("__roce_verbs_compat_", $name, ":"),
                concat!("jmp {", stringify!($target), "}@PLT"),
                concat!(".size __roce_verbs_compat_", $name, ", . - __roce_verbs_compat_", $name),
                concat!(".symver __roce_verbs_compat_", $name, ", ", $name, "@", $ver),
            )*
            fail_ptr = sym fail_ptr,
            fail_int = sym fail_int,
            fail_u64 = sym fail_u64,
            nothing = sym nothing,
            options(att_syntax)
        );
        /// Every (name, version) this module defines.
        pub const COMPAT_SYMBOLS: &[(&str, &str)] = &[$(($name, $ver)),*];
    };
}

compat! {
    "ibv_ack_async_event" @ "IBVERBS_1.0" => nothing,
    "ibv_ack_cq_events" @ "IBVERBS_1.0" => nothing,
    "ibv_alloc_pd" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_attach_mcast" @ "IBVERBS_1.0" => fail_int,
    "ibv_close_device" @ "IBVERBS_1.0" => fail_int,
    "ibv_create_ah" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_create_cq" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_create_qp" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_create_srq" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_dealloc_pd" @ "IBVERBS_1.0" => fail_int,
    "ibv_dereg_mr" @ "IBVERBS_1.0" => fail_int,
    "ibv_destroy_ah" @ "IBVERBS_1.0" => fail_int,
    "ibv_destroy_cq" @ "IBVERBS_1.0" => fail_int,
    "ibv_destroy_qp" @ "IBVERBS_1.0" => fail_int,
    "ibv_destroy_srq" @ "IBVERBS_1.0" => fail_int,
    "ibv_detach_mcast" @ "IBVERBS_1.0" => fail_int,
    "ibv_free_device_list" @ "IBVERBS_1.0" => nothing,
    "ibv_get_async_event" @ "IBVERBS_1.0" => fail_int,
    "ibv_get_cq_event" @ "IBVERBS_1.0" => fail_int,
    "ibv_get_device_guid" @ "IBVERBS_1.0" => fail_u64,
    "ibv_get_device_list" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_get_device_name" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_modify_qp" @ "IBVERBS_1.0" => fail_int,
    "ibv_modify_srq" @ "IBVERBS_1.0" => fail_int,
    "ibv_open_device" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_query_device" @ "IBVERBS_1.0" => fail_int,
    "ibv_query_gid" @ "IBVERBS_1.0" => fail_int,
    "ibv_query_pkey" @ "IBVERBS_1.0" => fail_int,
    "ibv_query_port" @ "IBVERBS_1.0" => fail_int,
    "ibv_query_qp" @ "IBVERBS_1.0" => fail_int,
    "ibv_query_srq" @ "IBVERBS_1.0" => fail_int,
    "ibv_reg_mr" @ "IBVERBS_1.0" => fail_ptr,
    "ibv_resize_cq" @ "IBVERBS_1.0" => fail_int,
    "ibv_register_driver" @ "IBVERBS_1.1" => nothing,
}
