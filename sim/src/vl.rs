//! The Verilated HDL models behind a safe, cycle-stepped API.
//!
//! `build.rs` compiles one model per `config` and `model` line of `hdl/configs.txt` with the
//! shim in `csrc/port_shim.cpp`, whose functions are prefixed with the model's name, and
//! declares them in [`Model`]. [`AxisDut`] wraps one instance: one Verilator context per
//! instance, so instances on different threads do not share state.

use std::ffi::{c_char, c_void, CString};
use std::path::Path;
use std::ptr::NonNull;

use crate::SimError;

type NewFn = unsafe extern "C" fn(*const c_char) -> *mut c_void;
type FreeFn = unsafe extern "C" fn(*mut c_void);
type NPortsFn = unsafe extern "C" fn() -> i32;
type PortNameFn = unsafe extern "C" fn(i32) -> *const c_char;
type PortIntFn = unsafe extern "C" fn(i32) -> i32;
type SetFn = unsafe extern "C" fn(*mut c_void, i32, *const u32);
type GetFn = unsafe extern "C" fn(*mut c_void, i32, *mut u32);
type StepFn = unsafe extern "C" fn(*mut c_void);
type GateFn = unsafe extern "C" fn(*mut c_void, i32);

struct Vtable {
    new: NewFn,
    free: FreeFn,
    nports: NPortsFn,
    port_name: PortNameFn,
    port_bits: PortIntFn,
    port_dir: PortIntFn,
    set: SetFn,
    get: GetFn,
    eval: StepFn,
    tick: StepFn,
    trace_gate: GateFn,
}

macro_rules! models {
    ($($var:ident => $name:literal, $top:literal, [$(($k:literal, $v:literal)),* $(,)?]),* $(,)?) => {
        /// The Verilated models this crate was built with: the `config` and `model` lines of
        /// `hdl/configs.txt`, by name.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Model { $(
            #[doc = concat!("`", $name, "`: `", $top, "`", $(" ", $k, "=", $v,)*)]
            $var,
        )* }

        impl Model {
            /// Every model.
            pub const ALL: &'static [Model] = &[$(Model::$var),*];

            /// The model's name, its line in `hdl/configs.txt` (also its shim's symbol prefix).
            pub fn name(self) -> &'static str {
                match self { $(Model::$var => $name),* }
            }

            /// The model's top module.
            pub fn top(self) -> &'static str {
                match self { $(Model::$var => $top),* }
            }

            /// The parameters it was built with (the overrides of its line; the others are the
            /// module's defaults).
            pub fn params(self) -> &'static [(&'static str, &'static str)] {
                match self { $(Model::$var => &[$(($k, $v)),*]),* }
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
                            #[link_name = concat!($name, "_nports")]
                            pub fn nports() -> i32;
                            #[link_name = concat!($name, "_port_name")]
                            pub fn port_name(i: i32) -> *const c_char;
                            #[link_name = concat!($name, "_port_bits")]
                            pub fn port_bits(i: i32) -> i32;
                            #[link_name = concat!($name, "_port_dir")]
                            pub fn port_dir(i: i32) -> i32;
                            #[link_name = concat!($name, "_set")]
                            pub fn set(h: *mut c_void, i: i32, w: *const u32);
                            #[link_name = concat!($name, "_get")]
                            pub fn get(h: *mut c_void, i: i32, w: *mut u32);
                            #[link_name = concat!($name, "_eval")]
                            pub fn eval(h: *mut c_void);
                            #[link_name = concat!($name, "_tick")]
                            pub fn tick(h: *mut c_void);
                            #[link_name = concat!($name, "_trace_gate")]
                            pub fn trace_gate(h: *mut c_void, on: i32);
                        }
                    }
                    static VT: Vtable = Vtable {
                        new: ffi::new, free: ffi::free, nports: ffi::nports,
                        port_name: ffi::port_name, port_bits: ffi::port_bits,
                        port_dir: ffi::port_dir, set: ffi::set, get: ffi::get,
                        eval: ffi::eval, tick: ffi::tick, trace_gate: ffi::trace_gate,
                    };
                    &VT
                }),* }
            }
        }
    };
}

// One `Var => "name", "top", [("PARAM", "value"), ...]` line per Verilated model.
include!(concat!(env!("OUT_DIR"), "/models.rs"));

/// Byte lanes into Verilator port words: byte `i` is bits `[8(i%4)+7 : 8(i%4)]` of word
/// `i/4` (lane 0 in the low bits, as AXI). Words past the bytes are zeroed.
pub fn pack_bytes(bytes: &[u8], words: &mut [u32]) {
    words.fill(0);
    for (i, b) in bytes.iter().take(words.len() * 4).enumerate() {
        words[i / 4] |= u32::from(*b) << (8 * (i % 4));
    }
}

/// Port words back into byte lanes (the inverse of [`pack_bytes`]), `out.len()` bytes.
pub fn unpack_bytes(words: &[u32], out: &mut [u8]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = words.get(i / 4).map_or(0, |w| (w >> (8 * (i % 4))) as u8);
    }
}

impl Model {
    /// The ICRC block for a datapath of `data_bits` and a mode.
    pub fn icrc(data_bits: usize, insert: bool) -> Option<Model> {
        Some(match (data_bits, insert) {
            (64, true) => Model::IcrcTx64,
            (64, false) => Model::IcrcRx64,
            (256, true) => Model::IcrcTx256,
            (256, false) => Model::IcrcRx256,
            (512, true) => Model::IcrcTx512,
            (512, false) => Model::IcrcRx512,
            _ => return None,
        })
    }
}

// ---- roce_axis_drop_fifo ---------------------------------------------------------------

/// Parameters a `roce_axis_drop_fifo` model was built with.
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
            64 => Model::AxisDropFifo64,
            256 => Model::AxisDropFifo256,
            512 => Model::AxisDropFifo512,
            _ => return None,
        })
    }

    /// The drop FIFO with a small depth (8 KiB: 1024, 256, 128 beats) for `data_bits`, so
    /// that jumbo frames overflow it.
    pub fn drop_fifo_small(data_bits: usize) -> Option<Model> {
        Some(match data_bits {
            64 => Model::AxisDropFifo64Small,
            256 => Model::AxisDropFifo256Small,
            512 => Model::AxisDropFifo512Small,
            _ => return None,
        })
    }

    /// The parameters of a drop FIFO model (its line in `hdl/configs.txt`, and the RTL's
    /// default depth, two jumbo frames rounded up to a power of two, where the line does not
    /// set one); `None` for other blocks.
    pub fn drop_fifo_config(self) -> Option<DropFifoConfig> {
        if self.top() != "roce_axis_drop_fifo" {
            return None;
        }
        let param = |k: &str| self.params().iter().find(|p| p.0 == k).and_then(|p| p.1.parse::<usize>().ok());
        let data_bits = param("DATA_W")?;
        let depth = param("DEPTH").unwrap_or((2 * 9216usize.div_ceil(data_bits / 8)).next_power_of_two());
        Some(DropFifoConfig { data_bits, depth, drop_when_full: param("DROP_WHEN_FULL") == Some(1) })
    }
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
        self.dut.model().drop_fifo_config()?;
        let c = |n: &str| self.dut.port(n).map_or(0, |p| self.dut.get_u64(p) as u32);
        Some(DropFifoCounters {
            good: c("good_count"),
            bad: c("drop_bad_count"),
            overflow: c("drop_overflow_count"),
            full: c("drop_full_count"),
        })
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
    /// `m_axis_tlen` (frame byte count) if the block has it, else 0.
    pub tlen: u64,
}

/// A handle to one top-level port of a [`Dut`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Port {
    index: i32,
    bits: u32,
    output: bool,
}

impl Port {
    /// Width in bits.
    pub fn bits(self) -> u32 {
        self.bits
    }
    /// 32-bit words a value of this port takes.
    pub fn words(self) -> usize {
        self.bits.div_ceil(32) as usize
    }
    /// Whether the port is an output.
    pub fn is_output(self) -> bool {
        self.output
    }
}

/// One instance of a Verilated model, every top-level port reachable by name.
///
/// Per cycle: drive inputs with [`Dut::set`], [`Dut::eval`] to settle, sample outputs with
/// [`Dut::get`] (the values the coming clock edge acts on), then [`Dut::tick`].
pub struct Dut {
    vt: &'static Vtable,
    h: NonNull<c_void>,
    model: Model,
    ports: Vec<(String, Port)>,
    cycle: u64,
}

// SAFETY: an instance owns its own VerilatedContext and model; nothing in it is shared with
// another instance, so moving it to another thread is sound (it is not Sync: one thread at a time).
unsafe impl Send for Dut {}

impl std::fmt::Debug for Dut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dut").field("model", &self.model).field("cycle", &self.cycle).finish()
    }
}

impl Dut {
    /// Instantiate `model`, optionally dumping an FST waveform to `fst` (needs the `fst`
    /// feature).
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
        // SAFETY: pure functions of the compiled model's port table.
        let n = unsafe { (vt.nports)() };
        let mut ports = Vec::with_capacity(n.max(0) as usize);
        for i in 0..n {
            // SAFETY: `i` is below the model's port count; the name is a static C string.
            let (name, bits, dir) = unsafe {
                let p = (vt.port_name)(i);
                let name = if p.is_null() {
                    String::new()
                } else {
                    std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
                };
                (name, (vt.port_bits)(i), (vt.port_dir)(i))
            };
            ports.push((name, Port { index: i, bits: bits.max(0) as u32, output: dir == 1 }));
        }
        Ok(Dut { vt, h, model, ports, cycle: 0 })
    }

    /// Which model this is.
    pub fn model(&self) -> Model {
        self.model
    }

    /// Cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.cycle
    }

    /// The port called `name`.
    pub fn port(&self, name: &str) -> Option<Port> {
        self.ports.iter().find(|(n, _)| n == name).map(|p| p.1)
    }

    /// Every port, in declaration order.
    pub fn ports(&self) -> impl Iterator<Item = (&str, Port)> {
        self.ports.iter().map(|(n, p)| (n.as_str(), *p))
    }

    /// Drive input `p` with `words` (little-endian 32-bit words; missing ones are zero).
    pub fn set(&mut self, p: Port, words: &[u32]) {
        let mut w = [0u32; 64];
        let n = p.words().min(64);
        w[..words.len().min(n)].copy_from_slice(&words[..words.len().min(n)]);
        debug_assert!(p.words() <= 64, "ports wider than 2048 bits are not supported");
        // SAFETY: `h` is live; `w` holds at least the port's words (ports <= 2048 bits).
        unsafe { (self.vt.set)(self.h.as_ptr(), p.index, w.as_ptr()) }
    }

    /// Drive input `p` with a value of at most 64 bits.
    pub fn set_u64(&mut self, p: Port, v: u64) {
        self.set(p, &[v as u32, (v >> 32) as u32]);
    }

    /// Read port `p` into `out` (which must hold `p.words()` words).
    pub fn get(&self, p: Port, out: &mut [u32]) {
        let mut w = [0u32; 64];
        // SAFETY: `h` is live; `w` holds at least the port's words (ports <= 2048 bits).
        unsafe { (self.vt.get)(self.h.as_ptr(), p.index, w.as_mut_ptr()) }
        let n = p.words().min(out.len());
        out[..n].copy_from_slice(&w[..n]);
    }

    /// Read a port of at most 64 bits.
    pub fn get_u64(&self, p: Port) -> u64 {
        let mut w = [0u32; 2];
        self.get(p, &mut w);
        let v = u64::from(w[0]) | (u64::from(w[1]) << 32);
        if p.bits < 64 {
            v & ((1u64 << p.bits) - 1)
        } else {
            v
        }
    }

    /// Read a port of at most 64 bits as a bool (non-zero).
    pub fn get_bool(&self, p: Port) -> bool {
        self.get_u64(p) != 0
    }

    /// Read a port that carries a packed-struct bundle (`roce_rec_pkg::<b>_t`).
    pub fn get_bundle<B: roce_model::contract::Bundle>(&self, p: Port) -> B {
        debug_assert_eq!(p.bits, B::DESC.width, "{} is not a {} port", p.index, B::DESC.name);
        let mut w = [0u32; 8];
        self.get(p, &mut w);
        B::from_words(&w)
    }

    /// Drive a port that carries a packed-struct bundle.
    pub fn set_bundle<B: roce_model::contract::Bundle>(&mut self, p: Port, v: &B) {
        debug_assert_eq!(p.bits, B::DESC.width, "{} is not a {} port", p.index, B::DESC.name);
        let mut w = [0u32; 8];
        v.to_words(&mut w);
        self.set(p, &w);
    }

    /// Settle combinational logic after inputs changed.
    pub fn eval(&mut self) {
        // SAFETY: `h` is live.
        unsafe { (self.vt.eval)(self.h.as_ptr()) }
    }

    /// One clock cycle.
    pub fn tick(&mut self) {
        // SAFETY: `h` is live.
        unsafe { (self.vt.tick)(self.h.as_ptr()) }
        self.cycle += 1;
    }

    /// Dump the waveform (if one is open) from the next tick on, or stop dumping: a window
    /// of a long run.
    pub fn trace_gate(&mut self, on: bool) {
        // SAFETY: `h` is live.
        unsafe { (self.vt.trace_gate)(self.h.as_ptr(), i32::from(on)) }
    }
}

impl Drop for Dut {
    fn drop(&mut self) {
        // SAFETY: `h` came from `new` and is freed exactly once, here.
        unsafe { (self.vt.free)(self.h.as_ptr()) }
    }
}

/// A Verilated block with the port set `clk, rst, s_axis_{tdata,tkeep,tvalid,tready,tlast,
/// tuser}, m_axis_{...}` (and optionally `m_axis_tlen`): the AXI4-Stream convenience over a
/// [`Dut`].
#[derive(Debug)]
pub struct AxisDut {
    dut: Dut,
    bytes: usize,
    p: AxisPorts,
}

#[derive(Debug, Clone, Copy)]
struct AxisPorts {
    rst: Port,
    s_data: Port,
    s_keep: Port,
    s_valid: Port,
    s_ready: Port,
    s_last: Port,
    s_user: Port,
    m_data: Port,
    m_keep: Port,
    m_valid: Port,
    m_ready: Port,
    m_last: Port,
    m_user: Port,
    m_tlen: Option<Port>,
}

impl AxisDut {
    /// Instantiate `model`, optionally dumping an FST waveform to `fst` (needs the `fst`
    /// feature). The model starts in reset; call [`AxisDut::reset`].
    pub fn new(model: Model, fst: Option<&Path>) -> Result<Self, SimError> {
        let dut = Dut::new(model, fst)?;
        let port = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("{} has no port {n}", model.name())));
        let p = AxisPorts {
            rst: port("rst")?,
            s_data: port("s_axis_tdata")?,
            s_keep: port("s_axis_tkeep")?,
            s_valid: port("s_axis_tvalid")?,
            s_ready: port("s_axis_tready")?,
            s_last: port("s_axis_tlast")?,
            s_user: port("s_axis_tuser")?,
            m_data: port("m_axis_tdata")?,
            m_keep: port("m_axis_tkeep")?,
            m_valid: port("m_axis_tvalid")?,
            m_ready: port("m_axis_tready")?,
            m_last: port("m_axis_tlast")?,
            m_user: port("m_axis_tuser")?,
            m_tlen: dut.port("m_axis_tlen"),
        };
        let bytes = (p.s_data.bits / 8) as usize;
        Ok(AxisDut { dut, bytes, p })
    }

    /// Which model this is.
    pub fn model(&self) -> Model {
        self.dut.model()
    }

    /// Datapath width in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Cycles simulated so far.
    pub fn cycles(&self) -> u64 {
        self.dut.cycles()
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
        pack_bytes(&inp.data[..inp.data.len().min(self.bytes)], &mut d);
        let p = self.p;
        let t = &mut self.dut;
        t.set_u64(p.rst, u64::from(inp.rst));
        t.set(p.s_data, &d);
        t.set_u64(p.s_keep, inp.keep);
        t.set_u64(p.s_valid, u64::from(inp.valid));
        t.set_u64(p.s_last, u64::from(inp.last));
        t.set_u64(p.s_user, u64::from(inp.user));
        t.set_u64(p.m_ready, u64::from(inp.ready));
        t.eval();
        let mut od = [0u32; 16];
        t.get(p.m_data, &mut od);
        let mut out = AxisOut {
            s_ready: t.get_bool(p.s_ready),
            valid: t.get_bool(p.m_valid),
            last: t.get_bool(p.m_last),
            user: t.get_u64(p.m_user) as u8,
            keep: t.get_u64(p.m_keep),
            data: [0; 64],
            tlen: p.m_tlen.map_or(0, |q| t.get_u64(q)),
        };
        t.tick();
        unpack_bytes(&od, &mut out.data[..self.bytes]);
        if self.bytes < 64 {
            out.keep &= (1u64 << self.bytes) - 1;
        }
        out
    }
}
