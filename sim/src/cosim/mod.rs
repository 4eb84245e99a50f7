//! Lockstep harnesses: each Verilated block beside its model (`roce_model::blocks`), on
//! the same stimulus, every output compared. One module per block, named after it (the RTL
//! file without `roce_`); each runs its block's `config`/`model` lines of `hdl/configs.txt`
//! through `<block>_lockstep` and returns a report with every divergence. The stream blocks
//! (`icrc`, `axis_drop_fifo`, `rx_parse`, `tx_build`) compare every output beat ([`Divergence`]);
//! the others compare the transactions each side emits.
//!
//! Shared here: [`Divergence`], the beat comparison, port words to and from bytes
//! ([`words_of`], [`bytes_of`]) and the [`ports!`] macro that looks a block's ports up by name.

use std::collections::VecDeque;

use roce_model::blocks::axis::AxisBeat;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Port};
use crate::SimError;

pub mod ack_q;
pub mod axi_axil;
pub mod axis_async_fifo;
pub mod axis_drop_fifo;
pub mod axis_fifo;
pub mod axis_frame_gate;
pub mod comp;
pub mod cq;
pub mod ctrl;
pub mod dcqcn;
pub mod dma_axi;
pub mod icrc;
pub mod mr_check;
pub mod pay_scatter;
pub mod qp_ctx;
pub mod rd_rsp;
pub mod regs;
pub mod req;
pub mod resp;
pub mod rx_disp;
pub mod rx_parse;
pub mod tx_arb;
pub mod tx_build;

/// One output beat on which HDL and model differ.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Divergence {
    /// Frame index.
    pub frame: usize,
    /// Beat index within the frame.
    pub beat: usize,
    /// Cycle at which the HDL emitted the beat.
    pub cycle: u64,
    /// What differs, with both values.
    pub what: String,
}

impl std::fmt::Display for Divergence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "frame {} beat {} (cycle {}): {}", self.frame, self.beat, self.cycle, self.what)
    }
}

/// What differs between two beats (valid lanes, `tkeep`, `tlast`, `tuser`), if anything.
pub(crate) fn compare(a: &AxisBeat, b: &AxisBeat) -> Option<String> {
    if a.keep != b.keep {
        return Some(format!("tkeep hdl {:#x} model {:#x}", a.keep, b.keep));
    }
    if a.last != b.last {
        return Some(format!("tlast hdl {} model {}", a.last, b.last));
    }
    if a.user != b.user {
        return Some(format!("tuser hdl {:#04b} model {:#04b}", a.user, b.user));
    }
    let n = a.len();
    if a.data[..n] != b.data[..n] {
        let i = (0..n).find(|&i| a.data[i] != b.data[i]).unwrap_or(0);
        return Some(format!(
            "tdata lane {i}: hdl {:02x?} model {:02x?}",
            &a.data[i..n.min(i + 8)],
            &b.data[i..n.min(i + 8)]
        ));
    }
    None
}

/// Bytes into port words (byte 0 in the low bits of word 0), at least one word.
pub fn words_of(bytes: &[u8]) -> Vec<u32> {
    let mut w = vec![0u32; bytes.len().div_ceil(4).max(1)];
    pack_bytes(bytes, &mut w);
    w
}

/// The first `n` bytes of an output port's value.
pub fn bytes_of(dut: &Dut, p: Port, n: usize) -> Vec<u8> {
    let mut w = vec![0u32; n.div_ceil(4).max(1)];
    dut.get(p, &mut w);
    let mut b = vec![0u8; n];
    unpack_bytes(&w, &mut b);
    b
}

/// A set-up's timed events (cycle, qpn, PI), their cycles counted from `t0` (the end of a
/// block's reset sweep), in order.
pub fn events_from(t0: u64, v: Vec<(u64, u32, u32)>) -> std::collections::VecDeque<(u64, u32, u32)> {
    v.into_iter().map(|(t, q, pi)| (t + t0, q, pi)).collect()
}

/// Hold `rst` high for `cycles` cycles, release it and step until `init_done` rises (a table
/// block clears one entry per cycle after reset). `each` drives the inputs that change every
/// cycle (a time counter) before each evaluation of the wait, with the cycle count since reset
/// began. Returns that count at the cycle `init_done` is high (not yet ticked).
pub fn reset_until_init(
    dut: &mut Dut,
    rst: Port,
    init_done: Port,
    cycles: u64,
    mut each: impl FnMut(&mut Dut, u64),
) -> Result<u64, SimError> {
    dut.set_u64(rst, 1);
    for _ in 0..cycles {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);
    let mut cycle = cycles;
    loop {
        each(dut, cycle);
        dut.eval();
        if dut.get_bool(init_done) {
            return Ok(cycle);
        }
        dut.tick();
        cycle += 1;
        if cycle > 1 << 20 {
            return Err(SimError::Config(format!("{}: init_done never rose", dut.model().top())));
        }
    }
}

/// Compare the transactions both sides emitted, in order: the first difference (or a missing
/// one) goes into `out` with both values and both counts.
pub fn compare_seq<T: PartialEq + std::fmt::Debug>(out: &mut Vec<String>, what: &str, hdl: &[T], model: &[T]) {
    if let Some(i) = (0..hdl.len().max(model.len())).find(|&i| hdl.get(i) != model.get(i)) {
        out.push(format!(
            "{what} {i}: hdl {:?} model {:?} ({} vs {} in all)",
            hdl.get(i),
            model.get(i),
            hdl.len(),
            model.len()
        ));
    }
}

/// A queued beat of a read-data stream: (the cycle it may go, bytes, tlast, tuser = the read
/// failed).
pub(crate) type Beat = (u64, Vec<u8>, bool, bool);

/// Offer the head of `q` on a read-data stream (`tvalid`, `tdata`, `tlast`, `tuser`) once its
/// cycle has come; whether it is offered (valid) this cycle.
pub(crate) fn offer_beat(dut: &mut Dut, q: &VecDeque<Beat>, now: u64, [v, d, l, u]: [Port; 4]) -> bool {
    let on = q.front().is_some_and(|b| b.0 <= now);
    dut.set_u64(v, u64::from(on));
    if let Some((_, b, last, err)) = q.front() {
        dut.set(d, &words_of(b));
        dut.set_u64(l, u64::from(*last));
        dut.set_u64(u, u64::from(*err));
    }
    on
}

/// Drive each `ready` port high with probability `p` (one draw each, in order); the values.
pub(crate) fn random_ready<const N: usize>(
    dut: &mut Dut,
    rng: &mut impl rand::Rng,
    p: f64,
    ready: [Port; N],
) -> [bool; N] {
    let v: [bool; N] = std::array::from_fn(|_| rng.random_bool(p));
    for (r, on) in ready.iter().zip(v) {
        dut.set_u64(*r, u64::from(on));
    }
    v
}

/// `ports!(dut; field = "port_name", ...)`: a struct of the named ports of `dut`, or a
/// [`crate::SimError::Config`] naming the first one the model does not have.
macro_rules! ports {
    ($dut:expr; $($f:ident = $n:literal),* $(,)?) => {{
        struct P { $($f: $crate::vl::Port),* }
        let d = &$dut;
        P { $($f: d.port($n).ok_or_else(|| $crate::SimError::Config(format!("{} has no port {}", d.model().top(), $n)))?),* }
    }};
}
pub(crate) use ports;

#[cfg(test)]
mod tests {
    use crate::vl::Model;

    fn param(m: Model, k: &str) -> Option<&'static str> {
        m.params().iter().find(|p| p.0 == k).map(|p| p.1)
    }

    /// The harnesses' copies of the parameters agree with the lines the models were built from.
    #[test]
    fn harness_parameters_match_the_configuration_list() {
        use super::axis_async_fifo::AsyncFifoModel;
        for c in [AsyncFifoModel::FRAME, AsyncFifoModel::DROP, AsyncFifoModel::STREAM] {
            assert_eq!(param(c.model, "DATA_W"), Some((c.bytes * 8).to_string().as_str()), "{c:?}");
            assert_eq!(param(c.model, "DEPTH"), Some(c.depth.to_string().as_str()), "{c:?}");
            assert_eq!(param(c.model, "FRAME").unwrap_or("1") == "1", c.frame, "{c:?}");
            assert_eq!(param(c.model, "DROP_WHEN_FULL").unwrap_or("0") == "1", c.drop, "{c:?}");
        }
        use super::dma_axi::DmaAxiModel;
        assert!(DmaAxiModel::DEFAULT.model.params().is_empty());
        assert_eq!(param(DmaAxiModel::SMALL.model, "TAG_W"), Some(DmaAxiModel::SMALL.tag_w.to_string().as_str()));
        assert_eq!(
            param(DmaAxiModel::SMALL.model, "MAX_BURST"),
            Some(DmaAxiModel::SMALL.max_burst.to_string().as_str())
        );
        assert_eq!(param(Model::QpCtxMtu4, "MAX_MTU"), Some("4"));
        assert_eq!(super::qp_ctx::MAX_MTU, 256 << 3);
        assert_eq!(param(Model::AxisFifo16, "DEPTH"), Some("16"));
    }
}
