//! `roce_axi_axil` (a wide AXI4 BAR master to the engine's 32-bit AXI4-Lite port) against
//! the conversion its header states: AXI4 writes and reads of every size, burst length,
//! strobe pattern and ID, one at a time, the AXI4-Lite side played by a register file with
//! random READY/latency and error responses on part of the address space. Every AXI4-Lite
//! access (address, data, strobes, order) and every B/R (ID, response, data, RLAST) is
//! compared with what the header says should happen.

use std::collections::HashMap;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model, Port};
use crate::SimError;

/// Bytes per AXI4 beat of the Verilated model (DATA_W 512).
pub const BEAT: usize = 64;
/// Register addresses with this bit set may answer an error (an AXI4-Lite error to
/// propagate): see [`slave_resp`].
pub const ERR_BIT: u16 = 0x8000;

/// The register file's response to an access at `a`: with [`ERR_BIT`] set, words 0, 3, 6 ...
/// (by address) answer SLVERR, words 1, 4, 7 ... DECERR, the others OKAY, so the words of
/// one wide beat or burst answer differently and the worst one must win.
pub fn slave_resp(a: u16) -> u8 {
    if a & ERR_BIT == 0 {
        return 0;
    }
    match (a >> 2) % 3 {
        0 => 2,
        1 => 3,
        _ => 0,
    }
}

/// One AXI4 access.
#[derive(Clone, Debug)]
pub enum AxiOp {
    /// A write burst: ID, address, AWSIZE, one (data, strobes) per beat.
    Write {
        /// AWID.
        id: u8,
        /// AWADDR.
        addr: u64,
        /// AWSIZE.
        size: u8,
        /// Beats.
        beats: Vec<([u8; BEAT], u64)>,
    },
    /// A read burst: ID, address, ARSIZE, beats.
    Read {
        /// ARID.
        id: u8,
        /// ARADDR.
        addr: u64,
        /// ARSIZE.
        size: u8,
        /// Beats (ARLEN + 1).
        beats: usize,
    },
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct AxilReport {
    /// AXI4-Lite accesses made.
    pub accesses: u64,
    /// Cycles.
    pub cycles: u64,
    /// Differences from the stated conversion.
    pub divergences: Vec<String>,
}

fn next_beat(a: u64, size: u8) -> u64 {
    let step = 1u64 << size;
    (a & !(step - 1)) + step
}

/// The AXI4-Lite accesses an op should make: (write?, address, data, strobes), in order.
fn expected(op: &AxiOp) -> Vec<(bool, u16, u32, u8)> {
    let mut v = Vec::new();
    match op {
        AxiOp::Write { addr, size, beats, .. } => {
            let mut a = *addr;
            for (data, strb) in beats {
                for w in 0..BEAT / 4 {
                    let s = (strb >> (4 * w) & 0xF) as u8;
                    if s != 0 {
                        let d = u32::from_le_bytes([data[4 * w], data[4 * w + 1], data[4 * w + 2], data[4 * w + 3]]);
                        v.push((true, ((a as u16) & !63) | (4 * w) as u16, d, s));
                    }
                }
                a = next_beat(a, *size);
            }
        }
        AxiOp::Read { addr, size, beats, .. } => {
            let mut a = *addr;
            for _ in 0..*beats {
                let n = if *size <= 2 { 1 } else { (1usize << (size - 2)).min(BEAT / 4) };
                let first = (((a as usize) & 63) / 4) & !(n - 1);
                for w in first..first + n {
                    v.push((false, ((a as u16) & !63) | (4 * w) as u16, 0, 0xF));
                }
                a = next_beat(a, *size);
            }
        }
    }
    v
}

/// Run `ops` one at a time. Every READY the test drives (AXI4-Lite AW/W/AR on the register
/// side, B/R on the AXI4 side) is high with probability `ready_p`, and so is each W beat's
/// VALID (offered independently of AW: a master may send W first); AXI4-Lite responses come
/// after 0..=`max_lat` cycles. A B or R held while its READY is low must not change.
pub fn axi_axil_lockstep(ops: &[AxiOp], ready_p: f64, max_lat: u64, seed: u64) -> Result<AxilReport, SimError> {
    let mut dut = Dut::new(Model::AxiAxil, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_axi_axil has no port {n}")));
    let names = [
        "rst",
        "s_axi_awid",
        "s_axi_awaddr",
        "s_axi_awlen",
        "s_axi_awsize",
        "s_axi_awburst",
        "s_axi_awvalid",
        "s_axi_awready",
        "s_axi_wdata",
        "s_axi_wstrb",
        "s_axi_wlast",
        "s_axi_wvalid",
        "s_axi_wready",
        "s_axi_bid",
        "s_axi_bresp",
        "s_axi_bvalid",
        "s_axi_bready",
        "s_axi_arid",
        "s_axi_araddr",
        "s_axi_arlen",
        "s_axi_arsize",
        "s_axi_arburst",
        "s_axi_arvalid",
        "s_axi_arready",
        "s_axi_rid",
        "s_axi_rdata",
        "s_axi_rresp",
        "s_axi_rlast",
        "s_axi_rvalid",
        "s_axi_rready",
        "m_axil_awaddr",
        "m_axil_awvalid",
        "m_axil_awready",
        "m_axil_wdata",
        "m_axil_wstrb",
        "m_axil_wvalid",
        "m_axil_wready",
        "m_axil_bresp",
        "m_axil_bvalid",
        "m_axil_bready",
        "m_axil_araddr",
        "m_axil_arvalid",
        "m_axil_arready",
        "m_axil_rdata",
        "m_axil_rresp",
        "m_axil_rvalid",
        "m_axil_rready",
    ];
    let mut ports: HashMap<&str, Port> = HashMap::new();
    for n in names {
        ports.insert(n, p(n)?);
    }
    let q = |n: &str| ports[n];
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut rep = AxilReport::default();
    let mut regs: HashMap<u16, u32> = HashMap::new();
    let mut w16 = [0u32; 16];
    for n in ["s_axi_awvalid", "s_axi_wvalid", "s_axi_arvalid", "m_axil_bvalid", "m_axil_rvalid"] {
        dut.set_u64(q(n), 0);
    }
    dut.set_u64(q("s_axi_awburst"), 1);
    dut.set_u64(q("s_axi_arburst"), 1);
    dut.set_u64(q("rst"), 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(q("rst"), 0);

    for (n, op) in ops.iter().enumerate() {
        let want = expected(op);
        let mut seen: Vec<(bool, u16, u32, u8)> = Vec::new();
        // the response the register file will give, per access
        let mut worst = 0u8;
        let (is_write, nbeats) = match op {
            AxiOp::Write { id, addr, size, beats } => {
                dut.set_u64(q("s_axi_awid"), u64::from(*id));
                dut.set_u64(q("s_axi_awaddr"), *addr);
                dut.set_u64(q("s_axi_awlen"), beats.len() as u64 - 1);
                dut.set_u64(q("s_axi_awsize"), u64::from(*size));
                (true, beats.len())
            }
            AxiOp::Read { id, addr, size, beats } => {
                dut.set_u64(q("s_axi_arid"), u64::from(*id));
                dut.set_u64(q("s_axi_araddr"), *addr);
                dut.set_u64(q("s_axi_arlen"), *beats as u64 - 1);
                dut.set_u64(q("s_axi_arsize"), u64::from(*size));
                (false, *beats)
            }
        };
        let (mut a_on, mut beat, mut w_on) = (true, 0usize, false);
        let mut r_beats = 0usize;
        // B / R as first seen while waiting for READY: (id, resp) / (id, resp, last, data)
        let mut b_held: Option<(u64, u8)> = None;
        let mut r_held: Option<(u64, u8, bool, [u8; BEAT])> = None;
        let mut cur_rd = [0u8; BEAT];
        // AXI4-Lite slave state: a write address / data captured, a read address, a pending response
        let (mut la, mut lw): (Option<u16>, Option<(u32, u8)>) = (None, None);
        let mut b_at: Option<(u64, u8)> = None;
        let mut r_at: Option<(u64, u32, u8)> = None;
        let mut done = false;
        let start = rep.cycles;
        while !done {
            let now = rep.cycles;
            if now - start > 10_000 {
                return Err(SimError::Config(format!("op {n}: roce_axi_axil stalled")));
            }
            // AXI4 master side
            dut.set_u64(q(if is_write { "s_axi_awvalid" } else { "s_axi_arvalid" }), u64::from(a_on));
            if let AxiOp::Write { beats, .. } = op {
                if !w_on && beat < beats.len() && rng.random_bool(ready_p) {
                    w_on = true;
                    pack_bytes(&beats[beat].0, &mut w16);
                    dut.set(q("s_axi_wdata"), &w16);
                    dut.set_u64(q("s_axi_wstrb"), beats[beat].1);
                    dut.set_u64(q("s_axi_wlast"), u64::from(beat + 1 == beats.len()));
                }
            }
            dut.set_u64(q("s_axi_wvalid"), u64::from(w_on));
            // AXI4-Lite slave side
            let (awr, wr, arr) = (rng.random_bool(ready_p), rng.random_bool(ready_p), rng.random_bool(ready_p));
            let (br, rr) = (rng.random_bool(ready_p), rng.random_bool(ready_p));
            dut.set_u64(q("s_axi_bready"), u64::from(br));
            dut.set_u64(q("s_axi_rready"), u64::from(rr));
            dut.set_u64(q("m_axil_awready"), u64::from(awr && la.is_none()));
            dut.set_u64(q("m_axil_wready"), u64::from(wr && lw.is_none()));
            dut.set_u64(q("m_axil_arready"), u64::from(arr && r_at.is_none()));
            let b_now = b_at.filter(|b| b.0 <= now);
            dut.set_u64(q("m_axil_bvalid"), u64::from(b_now.is_some()));
            dut.set_u64(q("m_axil_bresp"), u64::from(b_now.map_or(0, |b| b.1)));
            let r_now = r_at.filter(|r| r.0 <= now);
            dut.set_u64(q("m_axil_rvalid"), u64::from(r_now.is_some()));
            dut.set_u64(q("m_axil_rdata"), u64::from(r_now.map_or(0, |r| r.1)));
            dut.set_u64(q("m_axil_rresp"), u64::from(r_now.map_or(0, |r| r.2)));
            dut.eval();

            if a_on && dut.get_bool(q(if is_write { "s_axi_awready" } else { "s_axi_arready" })) {
                a_on = false;
            }
            if w_on && dut.get_bool(q("s_axi_wready")) {
                w_on = false;
                beat += 1;
            }
            if awr && la.is_none() && dut.get_bool(q("m_axil_awvalid")) {
                la = Some(dut.get_u64(q("m_axil_awaddr")) as u16);
            }
            if wr && lw.is_none() && dut.get_bool(q("m_axil_wvalid")) {
                lw = Some((dut.get_u64(q("m_axil_wdata")) as u32, dut.get_u64(q("m_axil_wstrb")) as u8));
            }
            if let (Some(a), Some((d, s))) = (la, lw) {
                if b_at.is_none() {
                    seen.push((true, a, d, s));
                    let resp = slave_resp(a);
                    if resp == 0 {
                        let old = regs.get(&a).copied().unwrap_or(0);
                        let mut m = 0u32;
                        for i in 0..4 {
                            if s >> i & 1 == 1 {
                                m |= 0xFF << (8 * i);
                            }
                        }
                        regs.insert(a, (old & !m) | (d & m));
                    }
                    worst = worst.max(resp);
                    b_at = Some((now + 1 + rng.random_range(0..=max_lat), resp));
                    rep.accesses += 1;
                }
            }
            if b_now.is_some() && dut.get_bool(q("m_axil_bready")) {
                b_at = None;
                la = None;
                lw = None;
            }
            if arr && r_at.is_none() && dut.get_bool(q("m_axil_arvalid")) {
                let a = dut.get_u64(q("m_axil_araddr")) as u16;
                seen.push((false, a, 0, 0xF));
                let resp = slave_resp(a);
                let d = regs.get(&a).copied().unwrap_or(0);
                worst = worst.max(resp);
                let w = usize::from(a & 63) / 4;
                cur_rd[4 * w..4 * w + 4].copy_from_slice(&d.to_le_bytes());
                r_at = Some((now + 1 + rng.random_range(0..=max_lat), d, resp));
                rep.accesses += 1;
            }
            if r_now.is_some() && dut.get_bool(q("m_axil_rready")) {
                r_at = None;
            }
            // responses to the AXI4 master: checked at the handshake; while READY is low
            // they must stay up and unchanged
            let want_id = u64::from(match op {
                AxiOp::Write { id, .. } | AxiOp::Read { id, .. } => *id,
            });
            let bvalid = is_write && dut.get_bool(q("s_axi_bvalid"));
            if bvalid {
                let b = (dut.get_u64(q("s_axi_bid")), dut.get_u64(q("s_axi_bresp")) as u8);
                if b_held.is_some_and(|h| h != b) {
                    rep.divergences.push(format!("op {n}: B changed while BREADY was low"));
                }
                b_held = Some(b);
                if br {
                    let (id, resp) = b;
                    if id != want_id || resp != worst {
                        rep.divergences.push(format!("op {n}: B id {id} resp {resp}, want id {want_id} resp {worst}"));
                    }
                    done = true;
                }
            } else if b_held.is_some() {
                rep.divergences.push(format!("op {n}: BVALID fell before the handshake"));
                b_held = None;
            }
            let rvalid = !is_write && dut.get_bool(q("s_axi_rvalid"));
            if rvalid {
                dut.get(q("s_axi_rdata"), &mut w16);
                let mut data = [0u8; BEAT];
                unpack_bytes(&w16, &mut data);
                let (id, resp, last) =
                    (dut.get_u64(q("s_axi_rid")), dut.get_u64(q("s_axi_rresp")) as u8, dut.get_bool(q("s_axi_rlast")));
                if r_held.is_some_and(|h| h != (id, resp, last, data)) {
                    rep.divergences.push(format!("op {n} beat {r_beats}: R changed while RREADY was low"));
                }
                r_held = Some((id, resp, last, data));
                if rr {
                    r_held = None;
                    if id != want_id || resp != worst || last != (r_beats + 1 == nbeats) || data != cur_rd {
                        rep.divergences.push(format!(
                            "op {n} beat {r_beats}: R id {id} resp {resp} last {last}, want id {want_id} resp {worst}{}",
                            if data != cur_rd { ", data differs" } else { "" }
                        ));
                    }
                    cur_rd = [0u8; BEAT];
                    worst = 0;
                    r_beats += 1;
                    done = r_beats == nbeats;
                }
            } else if r_held.is_some() {
                rep.divergences.push(format!("op {n} beat {r_beats}: RVALID fell before the handshake"));
                r_held = None;
            }
            dut.tick();
            rep.cycles += 1;
        }
        if seen != want {
            rep.divergences.push(format!("op {n}: AXI4-Lite accesses {seen:x?}, want {want:x?}"));
        }
    }
    Ok(rep)
}
