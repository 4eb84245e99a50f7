//! The Verilated HDL models behind a safe, cycle-stepped API.
//!
//! `build.rs` compiles every model with the shim in `csrc/axis_shim.cpp`, whose functions are
//! prefixed with the model's name. [`AxisDut`] wraps one instance: one Verilator context per
//! instance, so instances on different threads do not share state.

use std::ffi::{c_char, c_void, CString};
use std::path::Path;
use std::ptr::NonNull;

use crate::SimError;

type NewFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type BitsFn = unsafe extern "C" fn() -> i32;
type SetFn = unsafe extern "C" fn(*mut c_void, u8, *const u32, *const u32, u8, u8, u8, u8);
type GetFn = unsafe extern "C" fn(*mut c_void, *mut u32, *mut u32, *mut u8, *mut u8);
type TickFn = unsafe extern "C" fn(*mut c_void);

struct Vtable {
    new: NewFn,
    free: FreeFn,
    data_bits: BitsFn,
    set_inputs: SetFn,
    get_outputs: GetFn,
    tick: TickFn,
}

macro_rules! models {
    ($($var:ident => $name:literal),* $(,)?) => {
        /// The Verilated AXI4-Stream models this crate was built with.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Model { $(
            #[doc = concat!("`", $name, "`")]
            $var,
        )* }

        impl Model {
            /// Every model.
            pub const ALL: &'static [Model] = &[$(Model::$var),*];

            /// The model's name (also its shim's symbol prefix).
            pub fn name(self) -> &'static str {
                match self { $(Model::$var => $name),* }
            }

            fn vtable(self) -> &'static Vtable {
                match self { $(Model::$var => {
                    mod ffi {
                        use super::*;
                        unsafe extern "C" {
                            #[link_name = concat!($name, "_new")]
                            pub fn new(p: *const c_char) -> *mut c_void;
                            #[link_name = concat!($name, "_free")]
                            pub fn free(h: *mut c_void);
                            #[link_name = concat!($name, "_data_bits")]
                            pub fn data_bits() -> i32;
                            #[link_name = concat!($name, "_set_inputs")]
                            pub fn set_inputs(h: *mut c_void, rst: u8, d: *const u32, k: *const u32,
                                              v: u8, l: u8, u: u8, r: u8);
                            #[link_name = concat!($name, "_get_outputs")]
                            pub fn get_outputs(h: *mut c_void, d: *mut u32, k: *mut u32,
                                               f: *mut u8, u: *mut u8);
                            #[link_name = concat!($name, "_tick")]
                            pub fn tick(h: *mut c_void);
                        }
                    }
                    static VT: Vtable = Vtable {
                        new: ffi::new, free: ffi::free, data_bits: ffi::data_bits,
                        set_inputs: ffi::set_inputs, get_outputs: ffi::get_outputs,
                        tick: ffi::tick,
                    };
                    &VT
                }),* }
            }
        }
    };
}

models! {
    Icrc64Insert => "icrc64_ins",
    Icrc64Check => "icrc64_chk",
    Icrc256Insert => "icrc256_ins",
    Icrc256Check => "icrc256_chk",
    Icrc512Insert => "icrc512_ins",
    Icrc512Check => "icrc512_chk",
    // ---- roce_axis_drop_fifo (see `Model::drop_fifo_config`) ----
    DropFifo64 => "dropfifo64",
    DropFifo256 => "dropfifo256",
    DropFifo512 => "dropfifo512",
    DropFifo64Small => "dropfifo64_small",
    DropFifo256Small => "dropfifo256_small",
    DropFifo512Small => "dropfifo512_small",
    DropFifo64Dwf => "dropfifo64_dwf",
    // ---- end roce_axis_drop_fifo ----
}

impl Model {
    /// The ICRC block for a datapath of `data_bits` and a mode.
    pub fn icrc(data_bits: usize, insert: bool) -> Option<Model> {
        Some(match (data_bits, insert) {
            (64, true) => Model::Icrc64Insert,
            (64, false) => Model::Icrc64Check,
            (256, true) => Model::Icrc256Insert,
            (256, false) => Model::Icrc256Check,
            (512, true) => Model::Icrc512Insert,
            (512, false) => Model::Icrc512Check,
            _ => return None,
        })
    }
}

// ---- roce_axis_drop_fifo ---------------------------------------------------------------

/// Parameters a `roce_axis_drop_fifo` model was built with (must match `build.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropFifoConfig {
    /// `DATA_W`.
    pub data_bits: usize,
    /// `DEPTH` in beats.
    pub depth: usize,
    /// `DROP_WHEN_FULL`.
    pub drop_when_full: bool,
}

impl Model {
    /// The drop FIFO at its default depth (two 9 KB jumbo frames) for `data_bits`.
    pub fn drop_fifo(data_bits: usize) -> Option<Model> {
        Some(match data_bits {
            64 => Model::DropFifo64,
            256 => Model::DropFifo256,
            512 => Model::DropFifo512,
            _ => return None,
        })
    }

    /// The drop FIFO with a small depth (8 KiB: 1024, 256, 128 beats) for `data_bits`, so
    /// that jumbo frames overflow it.
    pub fn drop_fifo_small(data_bits: usize) -> Option<Model> {
        Some(match data_bits {
            64 => Model::DropFifo64Small,
            256 => Model::DropFifo256Small,
            512 => Model::DropFifo512Small,
            _ => return None,
        })
    }

    /// The parameters of a drop FIFO model; `None` for other blocks.
    pub fn drop_fifo_config(self) -> Option<DropFifoConfig> {
        let (data_bits, depth, drop_when_full) = match self {
            Model::DropFifo64 => (64, 4096, false),
            Model::DropFifo256 => (256, 1024, false),
            Model::DropFifo512 => (512, 512, false),
            Model::DropFifo64Small => (64, 1024, false),
            Model::DropFifo256Small => (256, 256, false),
            Model::DropFifo512Small => (512, 128, false),
            Model::DropFifo64Dwf => (64, 256, true),
            _ => return None,
        };
        Some(DropFifoConfig { data_bits, depth, drop_when_full })
    }
}

type DropCountersFn = unsafe extern "C" fn(*mut c_void, *mut u32);

macro_rules! drop_fifo_counters {
    ($($var:ident => $name:literal),* $(,)?) => {
        fn drop_fifo_counters_fn(m: Model) -> Option<DropCountersFn> {
            match m {
                $(Model::$var => {
                    unsafe extern "C" {
                        #[link_name = concat!($name, "_drop_fifo_counters")]
                        fn counters(h: *mut c_void, c: *mut u32);
                    }
                    Some(counters as DropCountersFn)
                })*
                _ => None,
            }
        }
    };
}

drop_fifo_counters! {
    DropFifo64 => "dropfifo64",
    DropFifo256 => "dropfifo256",
    DropFifo512 => "dropfifo512",
    DropFifo64Small => "dropfifo64_small",
    DropFifo256Small => "dropfifo256_small",
    DropFifo512Small => "dropfifo512_small",
    DropFifo64Dwf => "dropfifo64_dwf",
}

/// The frame counters of a drop FIFO (`*_count` outputs, 32-bit wrapping).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DropFifoCounters {
    /// `good_count`.
    pub good: u32,
    /// `drop_bad_count`.
    pub bad: u32,
    /// `drop_overflow_count`.
    pub overflow: u32,
    /// `drop_full_count`.
    pub full: u32,
}

impl AxisDut {
    /// The counters of a `roce_axis_drop_fifo` model as they are now (they lag the frame's
    /// last beat by two cycles); `None` for other blocks.
    pub fn drop_fifo_counters(&self) -> Option<DropFifoCounters> {
        let f = drop_fifo_counters_fn(self.model)?;
        let mut c = [0u32; 4];
        // SAFETY: `h` is a live handle of this model's shim; the function writes 4 words.
        unsafe { f(self.h.as_ptr(), c.as_mut_ptr()) };
        Some(DropFifoCounters { good: c[0], bad: c[1], overflow: c[2], full: c[3] })
    }
}

// ---- end roce_axis_drop_fifo ------------------------------------------------------------

/// Inputs of an AXI4-Stream block for one cycle.
#[derive(Clone, Copy, Debug)]
pub struct AxisIn<'a> {
    /// Synchronous reset.
    pub rst: bool,
    /// `s_axis_tdata`, one byte per lane (shorter slices are zero-extended).
    pub data: &'a [u8],
    /// `s_axis_tkeep`.
    pub keep: u64,
    /// `s_axis_tvalid`.
    pub valid: bool,
    /// `s_axis_tlast`.
    pub last: bool,
    /// `s_axis_tuser`.
    pub user: u8,
    /// `m_axis_tready`.
    pub ready: bool,
}

/// Outputs of an AXI4-Stream block in one cycle, sampled before the clock edge.
#[derive(Clone, Debug)]
pub struct AxisOut {
    /// `s_axis_tready`.
    pub s_ready: bool,
    /// `m_axis_tvalid`.
    pub valid: bool,
    /// `m_axis_tdata`, one byte per lane.
    pub data: [u8; 64],
    /// `m_axis_tkeep`.
    pub keep: u64,
    /// `m_axis_tlast`.
    pub last: bool,
    /// `m_axis_tuser`.
    pub user: u8,
}

/// One instance of a Verilated AXI4-Stream block.
pub struct AxisDut {
    vt: &'static Vtable,
    h: NonNull<c_void>,
    model: Model,
    bytes: usize,
    cycle: u64,
}

// SAFETY: an instance owns its own VerilatedContext and model; nothing in it is shared with
// another instance, so moving it to another thread is sound (it is not Sync: one thread at a time).
unsafe impl Send for AxisDut {}

impl std::fmt::Debug for AxisDut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AxisDut").field("model", &self.model).field("cycle", &self.cycle).finish()
    }
}

impl AxisDut {
    /// Instantiate `model`, optionally dumping an FST waveform to `fst` (needs the `fst`
    /// feature). The model starts in reset; call [`AxisDut::reset`].
    pub fn new(model: Model, fst: Option<&Path>) -> Result<Self, SimError> {
        let vt = model.vtable();
        let path = match fst {
            Some(p) => Some(
                CString::new(p.as_os_str().as_encoded_bytes())
                    .map_err(|_| SimError::Trace(p.display().to_string(), "path has a NUL byte"))?,
            ),
            None => None,
        };
        let ptr = path.as_ref().map_or(std::ptr::null(), |c| c.as_ptr());
        // SAFETY: `ptr` is null or a NUL-terminated string that outlives the call; the shim
        // copies what it needs.
        let h = unsafe { (vt.new)(ptr) };
        let h = NonNull::new(h).ok_or_else(|| {
            SimError::Trace(
                fst.map(|p| p.display().to_string()).unwrap_or_default(),
                if cfg!(feature = "fst") { "cannot open the FST file" } else { "built without the `fst` feature" },
            )
        })?;
        // SAFETY: a pure function of the compiled model.
        let bits = unsafe { (vt.data_bits)() } as usize;
        Ok(AxisDut { vt, h, model, bytes: bits / 8, cycle: 0 })
    }

    /// Which model this is.
    pub fn model(&self) -> Model {
        self.model
    }

    /// Datapath width in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// Hold reset for `n` cycles with all inputs idle.
    pub fn reset(&mut self, n: usize) {
        for _ in 0..n {
            self.cycle(&AxisIn { rst: true, data: &[], keep: 0, valid: false, last: false, user: 0, ready: false });
        }
    }

    /// Apply `inp`, settle, sample the outputs, then clock one cycle.
    /// The returned outputs are those the clock edge acted on: a beat moved on the input
    /// port iff `inp.valid && out.s_ready`, on the output port iff `out.valid && inp.ready`.
    pub fn cycle(&mut self, inp: &AxisIn<'_>) -> AxisOut {
        let mut d = [0u32; 16];
        for (i, b) in inp.data.iter().take(self.bytes).enumerate() {
            d[i / 4] |= u32::from(*b) << (8 * (i % 4));
        }
        let k = [inp.keep as u32, (inp.keep >> 32) as u32];
        let mut od = [0u32; 16];
        let mut ok = [0u32; 2];
        let mut flags = 0u8;
        let mut user = 0u8;
        // SAFETY: `h` is a live handle from `new`; the arrays hold 16 and 2 words, enough for
        // the widest port (512-bit data, 64-bit keep) the shim reads or writes.
        unsafe {
            (self.vt.set_inputs)(
                self.h.as_ptr(),
                u8::from(inp.rst),
                d.as_ptr(),
                k.as_ptr(),
                u8::from(inp.valid),
                u8::from(inp.last),
                inp.user,
                u8::from(inp.ready),
            );
            (self.vt.get_outputs)(self.h.as_ptr(), od.as_mut_ptr(), ok.as_mut_ptr(), &mut flags, &mut user);
            (self.vt.tick)(self.h.as_ptr());
        }
        self.cycle += 1;
        let mut out = AxisOut {
            s_ready: flags & 1 != 0,
            valid: flags & 2 != 0,
            last: flags & 4 != 0,
            user,
            keep: u64::from(ok[0]) | (u64::from(ok[1]) << 32),
            data: [0; 64],
        };
        if self.bytes < 64 {
            out.keep &= (1u64 << self.bytes) - 1;
        }
        for i in 0..self.bytes {
            out.data[i] = (od[i / 4] >> (8 * (i % 4))) as u8;
        }
        out
    }
}

impl Drop for AxisDut {
    fn drop(&mut self) {
        // SAFETY: `h` came from `new` and is freed exactly once, here.
        unsafe { (self.vt.free)(self.h.as_ptr()) }
    }
}
