//! The C ABI of libibverbs: every function and object Debian's `libibverbs.so.1` exports,
//! at the same symbol versions (`libibverbs.map`; the IBVERBS_1.0 compatibility versions in
//! [`compat`]).
//!
//! Each function follows the contract of its libibverbs man page: the caller passes pointers
//! that the same library handed out (or valid argument structs), and errors come back the way
//! libibverbs reports them (NULL or -1 with `errno`, or an errno value returned). A Rust panic
//! never crosses the boundary: [`guard`] turns it into that function's failure value with
//! `errno` = EIO.
//!
//! The objects handed to the application ([`objects`]) are boxes whose first field is the C
//! struct the application sees (`ibv_pd`, `ibv_cq`, ...), followed by the Rust handle of
//! `roce_driver::context` that owns the engine resource.
#![allow(clippy::missing_safety_doc)]

pub mod compat;
pub mod device;
pub mod kern;
pub mod objects;
pub mod private;
pub mod strings;
pub mod unsupported;

use std::os::raw::c_int;

/// Set the calling thread's `errno`.
pub(crate) fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e };
}

/// Run `f`; a panic inside becomes `fail` with `errno` = EIO (panics must not unwind into C).
pub(crate) fn guard<R>(fail: R, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            set_errno(libc::EIO);
            fail
        }
    }
}

/// `Err(errno)` as a NULL pointer with `errno` set.
pub(crate) fn null_on<T>(r: Result<*mut T, c_int>) -> *mut T {
    match r {
        Ok(p) => p,
        Err(e) => {
            set_errno(e);
            std::ptr::null_mut()
        }
    }
}

/// `Err(errno)` as the errno value returned (and set), `Ok` as 0: the convention of most
/// libibverbs calls that return `int` (modify_qp, dealloc_pd, post_send, ...).
pub(crate) fn errno_ret(r: Result<(), c_int>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e);
            e
        }
    }
}

/// `Err(errno)` as -1 with `errno` set, `Ok` as 0: the convention of ibv_query_gid,
/// ibv_get_cq_event and a few others.
pub(crate) fn minus_one(r: Result<(), c_int>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            set_errno(e);
            -1
        }
    }
}
