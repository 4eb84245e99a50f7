//! Devices and contexts: the device list (`ROCE_VERBS_DEVICE`), opening and closing, and
//! the queries of device, port, GID and P_Key with the engine's true attributes.

use std::ffi::{c_char, c_void, CStr};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::raw::{c_int, c_uint};
use std::sync::{Arc, OnceLock};

use super::{errno_ret, guard, minus_one, null_on, set_errno};
use crate::config::{self, DeviceSpec};
use crate::fd;
use crate::provider::{guid_of, OpenDevice};
use crate::sys::*;
use roce_driver::Backend;

/// The engine's PCI vendor ID as the device reports it: Xilinx (AMD), the FPGA family the
/// engine targets. Its part ID is not one perftest knows, so perftest treats it as a generic
/// device (`ibv_post_send`, no device-specific inline defaults).
pub const VENDOR_ID: u32 = 0x10EE;
/// Part ID: "RC".
pub const VENDOR_PART_ID: u32 = 0x5243;
/// The device's name.
pub const DEVICE_NAME: &CStr = c"roce0";

/// A device of the list: the C struct, then what it was made from.
#[repr(C)]
pub struct VDevice {
    /// What the application sees.
    pub dev: ibv_device,
    /// The device string.
    pub spec: DeviceSpec,
}

// SAFETY: VDevice is immutable after creation (a static); its raw pointers are NULL.
unsafe impl Sync for VDevice {}
// SAFETY: as above.
unsafe impl Send for VDevice {}

fn copy_str(dst: &mut [c_char], s: &str) {
    let room = dst.len().saturating_sub(1);
    for (d, b) in dst.iter_mut().zip(s.bytes().take(room)) {
        *d = b as c_char;
    }
}

/// The device `ROCE_VERBS_DEVICE` names, made once per process (devices outlive lists:
/// an application may keep using a device after `ibv_free_device_list`).
fn device() -> Result<Option<&'static VDevice>, c_int> {
    static DEV: OnceLock<Result<Option<Box<VDevice>>, c_int>> = OnceLock::new();
    let r = DEV.get_or_init(|| match config::from_env() {
        Ok(None) => Ok(None),
        Ok(Some(spec)) => {
            // SAFETY: ibv_device is plain data (chars, enums, NULL function pointers).
            let mut dev: ibv_device = unsafe { std::mem::zeroed() };
            dev.node_type = IBV_NODE_CA;
            dev.transport_type = IBV_TRANSPORT_IB;
            copy_str(&mut dev.name, "roce0");
            copy_str(&mut dev.dev_name, "uverbs0");
            copy_str(&mut dev.dev_path, "/sys/class/infiniband_verbs/uverbs0");
            copy_str(&mut dev.ibdev_path, "/sys/class/infiniband/roce0");
            Ok(Some(Box::new(VDevice { dev, spec })))
        }
        Err(e) => {
            eprintln!("libibverbs (roce-verbs): {e}");
            Err(libc::EINVAL)
        }
    });
    match r {
        Ok(d) => Ok(d.as_deref()),
        Err(e) => Err(*e),
    }
}

/// The VDevice behind a device pointer of the list.
fn vdevice(dev: *mut ibv_device) -> Option<&'static VDevice> {
    device().ok().flatten().filter(|d| std::ptr::eq(&d.dev, dev.cast_const()))
}

/// `ibv_get_device_list`: the device `ROCE_VERBS_DEVICE` names (an empty list if it is not
/// set; NULL with EINVAL if it does not parse).
///
/// # Safety
/// `num` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_list(num: *mut c_int) -> *mut *mut ibv_device {
    guard(std::ptr::null_mut(), || {
        null_on(device().and_then(|d| {
            // SAFETY: calloc of two pointers; freed by ibv_free_device_list.
            let list = unsafe { libc::calloc(2, std::mem::size_of::<*mut ibv_device>()) }.cast::<*mut ibv_device>();
            if list.is_null() {
                return Err(libc::ENOMEM);
            }
            let n = match d {
                Some(d) => {
                    // SAFETY: `list` has two slots; the second stays NULL (the terminator).
                    unsafe { *list = std::ptr::from_ref(&d.dev).cast_mut() };
                    1
                }
                None => 0,
            };
            if !num.is_null() {
                // SAFETY: the caller passes a writable int.
                unsafe { *num = n };
            }
            Ok(list)
        }))
    })
}

/// `ibv_free_device_list`.
///
/// # Safety
/// `list` came from [`ibv_get_device_list`].
#[no_mangle]
pub unsafe extern "C" fn ibv_free_device_list(list: *mut *mut ibv_device) {
    // SAFETY: the list was calloc'ed by ibv_get_device_list.
    unsafe { libc::free(list.cast()) };
}

/// `ibv_get_device_name`.
///
/// # Safety
/// `dev` is a device of the list.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_name(dev: *mut ibv_device) -> *const c_char {
    match vdevice(dev) {
        Some(d) => d.dev.name.as_ptr(),
        None => {
            set_errno(libc::EINVAL);
            std::ptr::null()
        }
    }
}

/// `ibv_get_device_guid`: the node GUID (EUI-64 of the port MAC), network byte order.
///
/// # Safety
/// `dev` is a device of the list.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_device_guid(dev: *mut ibv_device) -> __be64 {
    match vdevice(dev).map(|d| &d.spec) {
        Some(DeviceSpec::Sim { ip, .. } | DeviceSpec::Vfio { ip, .. }) => guid_of(config::mac_of(*ip)),
        None => 0,
    }
}

/// `ibv_get_device_index`: -1, the device has no kernel index.
#[no_mangle]
pub extern "C" fn ibv_get_device_index(_dev: *mut ibv_device) -> c_int {
    -1
}

/// `ibv_get_sysfs_path`: `$SYSFS_PATH` or `/sys`, as libibverbs.
#[no_mangle]
pub extern "C" fn ibv_get_sysfs_path() -> *const c_char {
    static PATH: OnceLock<std::ffi::CString> = OnceLock::new();
    PATH.get_or_init(|| {
        let p = std::env::var("SYSFS_PATH").ok().filter(|s| !s.is_empty()).unwrap_or_else(|| "/sys".into());
        std::ffi::CString::new(p.trim_end_matches('/')).unwrap_or_else(|_| c"/sys".into())
    })
    .as_ptr()
}

/// `ibv_read_sysfs_file`: read `dir/file` into `buf` (NUL-terminated, a trailing newline
/// removed); the length, or -1 with errno.
///
/// # Safety
/// `dir` and `file` are C strings, `buf` has `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn ibv_read_sysfs_file(
    dir: *const c_char,
    file: *const c_char,
    buf: *mut c_char,
    size: usize,
) -> c_int {
    guard(-1, || {
        if dir.is_null() || file.is_null() || buf.is_null() || size == 0 {
            set_errno(libc::EINVAL);
            return -1;
        }
        // SAFETY: the caller passes C strings.
        let (d, f) = unsafe { (CStr::from_ptr(dir), CStr::from_ptr(file)) };
        let path = std::path::Path::new(std::ffi::OsStr::new(&*d.to_string_lossy())).join(&*f.to_string_lossy());
        match std::fs::read(&path) {
            Ok(mut data) => {
                data.truncate(size - 1);
                if data.last() == Some(&b'\n') {
                    data.pop();
                }
                // SAFETY: `buf` has `size` bytes; data.len() < size leaves room for the NUL.
                unsafe {
                    std::ptr::copy_nonoverlapping(data.as_ptr(), buf.cast::<u8>(), data.len());
                    *buf.add(data.len()) = 0;
                }
                data.len() as c_int
            }
            Err(e) => {
                set_errno(e.raw_os_error().unwrap_or(libc::EIO));
                -1
            }
        }
    })
}

/// A context: the C structs libibverbs' inline functions reach (`verbs_context` ending in
/// `ibv_context`), then the shared engine and the async event pipe.
#[repr(C)]
pub struct VContext {
    /// What the application sees (`&vctx.context`).
    pub vctx: verbs_context,
    /// The engine.
    pub dev: Arc<OpenDevice>,
    /// Async events: read end (`context->async_fd`).
    pub async_rd: OwnedFd,
    /// Async events: write end.
    pub async_wr: OwnedFd,
}

/// The VContext of a context pointer.
///
/// # Safety
/// `ctx` is a context opened by [`ibv_open_device`] and not closed.
pub unsafe fn vcontext<'a>(ctx: *mut ibv_context) -> Option<&'a VContext> {
    if ctx.is_null() {
        return None;
    }
    let off = std::mem::offset_of!(VContext, vctx) + std::mem::offset_of!(verbs_context, context);
    // SAFETY: contexts of this library are the `context` field of a VContext (container_of).
    Some(unsafe { &*ctx.cast::<u8>().sub(off).cast::<VContext>() })
}

/// `ibv_open_device`: start (or share) the engine and make a context on it.
///
/// # Safety
/// `dev` is a device of the list.
#[no_mangle]
pub unsafe extern "C" fn ibv_open_device(dev: *mut ibv_device) -> *mut ibv_context {
    guard(std::ptr::null_mut(), || {
        null_on((|| {
            let d = vdevice(dev).ok_or(libc::EINVAL)?;
            let od = OpenDevice::open(&d.spec).map_err(|e| {
                eprintln!("libibverbs (roce-verbs): opening {}: {e}", DEVICE_NAME.to_string_lossy());
                e.errno()
            })?;
            let (rd, wr) = fd::pipe().map_err(|e| e.raw_os_error().unwrap_or(libc::EMFILE))?;
            // SAFETY: verbs_context is plain data: function pointers (None), integers, a
            // pthread mutex (initialised below) and pointers.
            let vctx: verbs_context = unsafe { std::mem::zeroed() };
            let mut v = Box::new(VContext { vctx, dev: od, async_rd: rd, async_wr: wr });
            v.vctx.query_port = Some(super::device::query_port_ex);
            v.vctx.query_device_ex = Some(super::device::query_device_ex);
            v.vctx.sz = std::mem::size_of::<verbs_context>();
            let c = &mut v.vctx.context;
            c.device = dev;
            c.ops.poll_cq = Some(super::objects::poll_cq);
            c.ops.req_notify_cq = Some(super::objects::req_notify_cq);
            c.ops.post_send = Some(super::objects::post_send);
            c.ops.post_recv = Some(super::objects::post_recv);
            c.cmd_fd = -1;
            c.async_fd = v.async_rd.as_raw_fd();
            c.num_comp_vectors = 1;
            c.abi_compat = usize::MAX as *mut c_void;
            // SAFETY: initialises the context's mutex in place (it is never moved: boxed).
            unsafe { libc::pthread_mutex_init(std::ptr::addr_of_mut!(c.mutex).cast(), std::ptr::null()) };
            let v = Box::into_raw(v);
            // SAFETY: `v` is the live box just leaked; the context is its field.
            Ok(unsafe { std::ptr::addr_of_mut!((*v).vctx.context) })
        })())
    })
}

/// `ibv_close_device`: free the context (the engine stops with its last context and
/// object).
///
/// # Safety
/// `ctx` is an open context; its objects were destroyed.
#[no_mangle]
pub unsafe extern "C" fn ibv_close_device(ctx: *mut ibv_context) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else {
            return minus_one(Err(libc::EINVAL));
        };
        let p = std::ptr::from_ref(v).cast_mut();
        // SAFETY: the mutex was initialised by ibv_open_device; the box is ours to free.
        unsafe {
            libc::pthread_mutex_destroy(std::ptr::addr_of_mut!((*p).vctx.context.mutex).cast());
            drop(Box::from_raw(p));
        }
        0
    })
}

/// The device attributes, from the engine's capabilities.
fn device_attr(v: &VContext) -> ibv_device_attr {
    // SAFETY: ibv_device_attr is plain data.
    let mut a: ibv_device_attr = unsafe { std::mem::zeroed() };
    let mut d = v.dev.ctx().lock();
    let version = d.backend().read32(roce_model::contract::regs::VERSION);
    let fw = format!(
        "{}.{}",
        roce_model::contract::regs::version::MAJOR.get(version),
        roce_model::contract::regs::version::MINOR.get(version)
    );
    copy_str(&mut a.fw_ver, &fw);
    a.node_guid = guid_of(v.dev.port.mac);
    a.sys_image_guid = a.node_guid;
    a.max_mr_size = u64::MAX;
    a.page_size_cap = 0xFFFF_F000;
    a.vendor_id = VENDOR_ID;
    a.vendor_part_id = VENDOR_PART_ID;
    a.hw_ver = version;
    a.max_qp = d.max_qps() as c_int - 2;
    a.max_qp_wr = MAX_WR;
    a.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SYS_IMAGE_GUID | IBV_DEVICE_PORT_ACTIVE_EVENT;
    a.max_sge = roce_model::contract::RQ_MAX_SGE.min(roce_model::contract::SQ_MAX_SGE) as c_int;
    a.max_sge_rd = a.max_sge;
    a.max_cq = d.max_cqs() as c_int;
    a.max_cqe = MAX_WR;
    a.max_mr = d.max_mrs() as c_int - 1;
    a.max_pd = i32::MAX;
    a.max_qp_rd_atom = d.max_rd_atomic() as c_int;
    a.max_qp_init_rd_atom = a.max_qp_rd_atom;
    a.max_res_rd_atom = a.max_qp_rd_atom * a.max_qp;
    a.atomic_cap = IBV_ATOMIC_HCA;
    a.max_pkeys = 1;
    a.local_ca_ack_delay = 15;
    a.phys_port_cnt = 1;
    a
}

/// Most work requests of a queue (a ring has at most 2^15 entries).
pub const MAX_WR: c_int = 1 << 15;
/// Largest inline payload of a send work request.
pub const MAX_INLINE: u32 = roce_model::contract::MAX_INLINE as u32;

/// `ibv_query_device`.
///
/// # Safety
/// `ctx` is an open context, `attr` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_device(ctx: *mut ibv_context, attr: *mut ibv_device_attr) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return errno_ret(Err(libc::EINVAL)) };
        let a = device_attr(v);
        // SAFETY: the caller passes a writable struct.
        unsafe { *attr = a };
        0
    })
}

/// `verbs_context.query_device_ex`: the basic attributes and no extended ones.
///
/// # Safety
/// `ctx` is an open context, `attr` has `size` writable bytes.
pub unsafe extern "C" fn query_device_ex(
    ctx: *mut ibv_context,
    input: *const ibv_query_device_ex_input,
    attr: *mut ibv_device_attr_ex,
    size: usize,
) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes an open context and, if not NULL, an input struct.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return libc::EINVAL };
        // SAFETY: as above.
        if !input.is_null() && unsafe { (*input).comp_mask } != 0 {
            return libc::EINVAL;
        }
        if size < std::mem::size_of::<ibv_device_attr>() {
            return libc::EINVAL;
        }
        // SAFETY: ibv_device_attr_ex is plain data.
        let mut a: ibv_device_attr_ex = unsafe { std::mem::zeroed() };
        a.orig_attr = device_attr(v);
        a.phys_port_cnt_ex = 1;
        let n = size.min(std::mem::size_of::<ibv_device_attr_ex>());
        // SAFETY: `attr` has `size` bytes; `n` of them are filled from `a`, the rest zeroed.
        unsafe {
            std::ptr::write_bytes(attr.cast::<u8>(), 0, size);
            std::ptr::copy_nonoverlapping(std::ptr::from_ref(&a).cast::<u8>(), attr.cast::<u8>(), n);
        }
        0
    })
}

fn port_attr(v: &VContext) -> ibv_port_attr {
    // SAFETY: ibv_port_attr is plain data.
    let mut a: ibv_port_attr = unsafe { std::mem::zeroed() };
    a.state = IBV_PORT_ACTIVE;
    a.max_mtu = v.dev.port.max_mtu;
    a.active_mtu = v.dev.port.active_mtu;
    a.gid_tbl_len = 1;
    a.port_cap_flags = IBV_PORT_CM_SUP;
    a.max_msg_sz = 1 << 31;
    a.pkey_tbl_len = 1;
    a.max_vl_num = 1;
    // 4X at 25.78125 Gb/s per lane (EDR): 100 Gb/s, the engine's line rate
    a.active_width = 2;
    a.active_speed = 32;
    a.phys_state = 5; // LinkUp
    a.link_layer = IBV_LINK_LAYER_ETHERNET as u8;
    a
}

/// Size of libibverbs' `struct _compat_ibv_port_attr` (`libibverbs/verbs.c`; the header
/// only declares it): `struct ibv_port_attr` up to `flags`, before `port_cap_flags2`.
const COMPAT_PORT_ATTR_SIZE: usize = std::mem::offset_of!(ibv_port_attr, port_cap_flags2);

/// `ibv_query_port` (the exported function, with the old struct layout; the `ibv_query_port`
/// macro of verbs.h calls `verbs_context.query_port` instead).
///
/// # Safety
/// `ctx` is an open context, `attr` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_port(ctx: *mut ibv_context, port: u8, attr: *mut _compat_ibv_port_attr) -> c_int {
    // SAFETY: the compat struct is the leading COMPAT_PORT_ATTR_SIZE bytes of ibv_port_attr.
    unsafe { query_port_ex(ctx, port, attr.cast(), COMPAT_PORT_ATTR_SIZE) }
}

/// `verbs_context.query_port`, what the `ibv_query_port` macro calls: the port's attributes
/// into `len` bytes.
///
/// # Safety
/// `ctx` is an open context, `attr` has `len` writable bytes.
pub unsafe extern "C" fn query_port_ex(ctx: *mut ibv_context, port: u8, attr: *mut ibv_port_attr, len: usize) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return errno_ret(Err(libc::EINVAL)) };
        if port != 1 {
            return errno_ret(Err(libc::EINVAL));
        }
        let a = port_attr(v);
        let n = len.min(std::mem::size_of::<ibv_port_attr>());
        // SAFETY: `attr` has `len` writable bytes.
        unsafe {
            std::ptr::write_bytes(attr.cast::<u8>(), 0, len);
            std::ptr::copy_nonoverlapping(std::ptr::from_ref(&a).cast::<u8>(), attr.cast::<u8>(), n);
        }
        0
    })
}

/// `ibv_query_gid`: index 0 of port 1 is the IPv4-mapped GID; -1 with EINVAL otherwise.
///
/// # Safety
/// `ctx` is an open context, `gid` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_gid(ctx: *mut ibv_context, port: u8, index: c_int, gid: *mut ibv_gid) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return minus_one(Err(libc::EINVAL)) };
        if port != 1 || index != 0 {
            return minus_one(Err(libc::EINVAL));
        }
        // SAFETY: the caller passes a writable GID.
        unsafe { (*gid).raw = v.dev.port.gid() };
        0
    })
}

/// The sysfs GID type of an entry (see `ibv_query_gid_type`).
///
/// # Safety
/// `ctx` is an open context.
pub unsafe fn gid_type(ctx: *mut ibv_context, port: u8, index: c_uint) -> Result<c_uint, c_int> {
    // SAFETY: forwarded.
    unsafe { vcontext(ctx) }.ok_or(libc::EINVAL)?;
    if port != 1 || index != 0 {
        return Err(libc::EINVAL);
    }
    Ok(1) // IBV_GID_TYPE_SYSFS_ROCE_V2
}

/// `_ibv_query_gid_ex` (`ibv_query_gid_ex`): the entry with its type (RoCE v2); an errno
/// value on failure.
///
/// # Safety
/// `ctx` is an open context, `entry` has `size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn _ibv_query_gid_ex(
    ctx: *mut ibv_context,
    port: u32,
    index: u32,
    entry: *mut ibv_gid_entry,
    flags: u32,
    size: usize,
) -> c_int {
    guard(libc::EIO, || {
        // SAFETY: the caller passes an open context.
        let Some(v) = (unsafe { vcontext(ctx) }) else { return libc::EINVAL };
        if flags != 0 {
            return libc::EOPNOTSUPP;
        }
        if port != 1 || index != 0 || size < std::mem::size_of::<ibv_gid_entry>() {
            return libc::EINVAL;
        }
        // SAFETY: the caller passes `size` >= sizeof(ibv_gid_entry) writable bytes.
        unsafe {
            *entry = ibv_gid_entry {
                gid: ibv_gid { raw: v.dev.port.gid() },
                gid_index: 0,
                port_num: 1,
                gid_type: IBV_GID_TYPE_ROCE_V2,
                ndev_ifindex: 0,
            };
        }
        0
    })
}

/// `_ibv_query_gid_table` (`ibv_query_gid_table`): the one entry; -errno on failure.
///
/// # Safety
/// `ctx` is an open context, `entries` has `max * size` writable bytes.
#[no_mangle]
pub unsafe extern "C" fn _ibv_query_gid_table(
    ctx: *mut ibv_context,
    entries: *mut ibv_gid_entry,
    max: usize,
    flags: u32,
    size: usize,
) -> isize {
    if flags != 0 {
        return -(libc::EOPNOTSUPP as isize);
    }
    if max < 1 {
        return -(libc::EINVAL as isize);
    }
    // SAFETY: forwarded: the first entry.
    let r = unsafe { _ibv_query_gid_ex(ctx, 1, 0, entries, 0, size) };
    if r != 0 {
        -(r as isize)
    } else {
        1
    }
}

/// `ibv_query_pkey`: the default P_Key 0xffff at index 0.
///
/// # Safety
/// `ctx` is an open context, `pkey` writable.
#[no_mangle]
pub unsafe extern "C" fn ibv_query_pkey(ctx: *mut ibv_context, port: u8, index: c_int, pkey: *mut __be16) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes an open context.
        if unsafe { vcontext(ctx) }.is_none() || port != 1 || index != 0 {
            return minus_one(Err(libc::EINVAL));
        }
        // SAFETY: the caller passes a writable P_Key.
        unsafe { *pkey = 0xffffu16.to_be() };
        0
    })
}

/// `ibv_get_pkey_index`: 0 for the default P_Key, -1 (ENOENT) otherwise.
///
/// # Safety
/// `ctx` is an open context.
#[no_mangle]
pub unsafe extern "C" fn ibv_get_pkey_index(ctx: *mut ibv_context, port: u8, pkey: __be16) -> c_int {
    // SAFETY: the caller passes an open context.
    if unsafe { vcontext(ctx) }.is_none() || port != 1 {
        return minus_one(Err(libc::EINVAL));
    }
    if u16::from_be(pkey) | 0x8000 == 0xffff {
        0
    } else {
        minus_one(Err(libc::ENOENT))
    }
}

/// `ibv_resolve_eth_l2_from_gid`: the next hop's MAC of the address vector's destination GID
/// (ARP on a simulated port), no VLAN.
///
/// # Safety
/// `ctx` is an open context; `attr`, `mac` (6 bytes) and `vid` valid.
#[no_mangle]
pub unsafe extern "C" fn ibv_resolve_eth_l2_from_gid(
    ctx: *mut ibv_context,
    attr: *mut ibv_ah_attr,
    mac: *mut u8,
    vid: *mut u16,
) -> c_int {
    guard(-1, || {
        // SAFETY: the caller passes an open context and a valid address vector.
        let (Some(v), a) = (unsafe { vcontext(ctx) }, unsafe { &*attr }) else { return minus_one(Err(libc::EINVAL)) };
        if a.is_global == 0 {
            return minus_one(Err(libc::EINVAL));
        }
        // SAFETY: ibv_gid is a union of plain bytes.
        let g = unsafe { a.grh.dgid.raw };
        let Some(ip) = std::net::Ipv6Addr::from(g).to_ipv4_mapped() else { return minus_one(Err(libc::EINVAL)) };
        match v.dev.resolve(ip) {
            Ok(m) => {
                // SAFETY: the caller passes 6 writable bytes and a writable VLAN id.
                unsafe {
                    std::ptr::copy_nonoverlapping(m.as_ptr(), mac, 6);
                    if !vid.is_null() {
                        *vid = 0xffff;
                    }
                }
                0
            }
            Err(e) => minus_one(Err(e)),
        }
    })
}
