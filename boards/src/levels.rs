//! Logic levels of a Xilinx netlist: the longest chain of LUTs, wide-function muxes and
//! carry cells between two timing boundaries (flip-flops, block RAM, DSP, SRL, ports).
//!
//! Yosys has no timing model for UltraScale+ (its `sta` pass only knows 7-series cell
//! delays, and nothing of CARRY8, RAMB36E2 or DSP48E2), and this repository has no Vivado,
//! so the engine's 250 MHz target cannot be proven here. What can be counted exactly on the
//! synthesized netlist is the number of logic levels, the figure Vivado's timing reports
//! give beside each path and the usual first check against a clock: at 250 MHz (4 ns) on
//! UltraScale+ -2, paths of up to about 8 levels with moderate fan-out usually close, and
//! deeper ones are where pipelining goes. Routing and fan-out are not counted; the figure
//! is a lower bound on a path's difficulty, not a timing result.
//!
//! Counted as one level: `LUT1`..`LUT6`, `MUXF7/8/9`, each `CARRY4`/`CARRY8` (a carry chain
//! of k cells is k levels, as Vivado counts it), and the asynchronous read of a LUT RAM
//! (`RAM32M`, `RAM64X1D`, ...). `INV` cells cost nothing (Vivado folds them into the next
//! LUT). Every other cell (flip-flops, block/ultra RAM, DSP, SRL) starts and ends paths, as
//! do the module's ports.
//!
//! Input: the netlist as `write_json` writes it (cells with `port_directions`).

use std::collections::HashMap;

use serde::Deserialize;

#[derive(Deserialize)]
struct Netlist {
    modules: HashMap<String, Module>,
}

#[derive(Deserialize)]
struct Module {
    #[serde(default)]
    ports: HashMap<String, Port>,
    #[serde(default)]
    cells: HashMap<String, Cell>,
    #[serde(default)]
    netnames: HashMap<String, NetName>,
}

#[derive(Deserialize)]
struct NetName {
    #[serde(default)]
    hide_name: u8,
    bits: Vec<Bit>,
}

#[derive(Deserialize)]
struct Port {
    direction: String,
    bits: Vec<Bit>,
}

#[derive(Deserialize)]
struct Cell {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    port_directions: HashMap<String, String>,
    #[serde(default)]
    connections: HashMap<String, Vec<Bit>>,
    #[serde(default)]
    attributes: HashMap<String, serde_json::Value>,
}

/// A net bit, or a constant (`"0"`, `"1"`, `"x"`, `"z"`).
#[derive(Deserialize, Clone, Copy)]
#[serde(untagged)]
enum Bit {
    Net(u64),
    Const(#[allow(dead_code)] Konst),
}

impl Bit {
    fn net(&self) -> Option<u64> {
        match self {
            Bit::Net(n) => Some(*n),
            Bit::Const(_) => None,
        }
    }
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum Konst {
    #[serde(rename = "0")]
    Zero,
    #[serde(rename = "1")]
    One,
    X,
    Z,
}

/// The deepest path of a netlist and how many endpoints are deep.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Levels {
    /// Logic levels of the deepest path.
    pub max: u32,
    /// Where it starts: the RTL name of the launching net and its cell, `st[2] (FDRE)`, or
    /// `input PORT`.
    pub from: String,
    /// Where it ends: the register it loads and the pin, `pl_len[7] (FDRE.D)`; for a cell
    /// with several outputs (block RAM) the pin and the net into it, `RAMB36E2.ADDRARDADDR
    /// <- rd_addr[3]`; or `output PORT[i]`.
    pub to: String,
    /// The cells on it.
    pub path: PathCells,
    /// The RTL names of the nets on it that kept one through synthesis, start to end (most
    /// LUT outputs have none after ABC).
    pub through: Vec<String>,
    /// Endpoints (bits into a boundary cell or an output port) by depth: `hist[d]` = the
    /// number of endpoints `d` levels deep, for d in 0..=max.
    pub hist: Vec<u64>,
}

/// Cells on a path by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathCells {
    /// LUT1..LUT6.
    pub lut: u32,
    /// MUXF7/8/9.
    pub muxf: u32,
    /// CARRY4/CARRY8.
    pub carry: u32,
    /// LUT RAM reads.
    pub lutram: u32,
}

impl std::fmt::Display for PathCells {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        for (n, what) in [(self.lut, "LUT"), (self.muxf, "MUXF"), (self.carry, "CARRY"), (self.lutram, "LUTRAM")] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if parts.is_empty() {
            f.write_str("no logic")
        } else {
            f.write_str(&parts.join(" + "))
        }
    }
}

impl Levels {
    /// Endpoints deeper than `d` levels.
    pub fn deeper_than(&self, d: u32) -> u64 {
        self.hist.iter().skip(d as usize + 1).sum()
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A logic level: LUT, wide mux, LUT RAM read.
    Logic,
    /// A carry cell.
    Carry,
    /// No level (inverter).
    Free,
    /// Starts and ends paths.
    Boundary,
}

fn kind(cell_type: &str) -> Kind {
    let t = cell_type.trim_start_matches('\\');
    let lutram = t.starts_with("RAM") && !t.starts_with("RAMB") && (t.contains('M') || t.contains('X'));
    if t.starts_with("LUT") || t.starts_with("MUXF") || lutram {
        Kind::Logic
    } else if t.starts_with("CARRY") {
        Kind::Carry
    } else if t == "INV" {
        Kind::Free
    } else {
        Kind::Boundary
    }
}

/// Cost of a cell in half levels. `carry4_half`: the netlist's CARRY4 cells stand for half
/// a CARRY8 (Yosys 0.23 maps carry chains to CARRY4 for UltraScale+ too, where Vivado
/// builds them of CARRY8: 8 bits per level).
fn half_levels(cell_type: &str, carry4_half: bool) -> u32 {
    match kind(cell_type) {
        Kind::Logic => 2,
        Kind::Carry if carry4_half && cell_type.trim_start_matches('\\') == "CARRY4" => 1,
        Kind::Carry => 2,
        Kind::Free | Kind::Boundary => 0,
    }
}

/// Whether input `port` of a LUT RAM is the read address of its output `out` (None: any
/// read output): not the write side (`WE`, `WCLK`, data inputs), and not another port's
/// address. RAM32M/RAM64M/RAM32M16/RAM64M8: DOx reads at ADDRx (the last port's address is
/// also the write address, and counts only for that port's own output); RAMnXmD: DPO reads
/// at DPRA, SPO at A (which is also the write address); RAMnXmS: O at A.
fn lutram_read_input(out: Option<&str>, port: &str) -> bool {
    let addr = |p: &str| p.starts_with("ADDR");
    let a = |p: &str| p.starts_with('A') && !p.starts_with("ADDR");
    match out {
        Some(o) if o.len() == 3 && o.starts_with("DO") => port == format!("ADDR{}", &o[2..]),
        Some("DPO") => port.starts_with("DPRA"),
        Some("SPO" | "O") => a(port),
        _ => addr(port) || port.starts_with("DPRA") || a(port),
    }
}

fn type_of(c: &Cell) -> &str {
    c.kind.trim_start_matches('\\')
}

/// The RTL name of each named net bit (`st[2]`, `u_comp.pl_len[7]`): the shortest
/// non-generated name that holds it.
fn bit_names(m: &Module) -> HashMap<u64, String> {
    let mut out: HashMap<u64, String> = HashMap::new();
    for (name, nn) in &m.netnames {
        if nn.hide_name != 0 {
            continue;
        }
        let name = name.trim_start_matches('\\');
        for (i, b) in nn.bits.iter().enumerate() {
            let Bit::Net(n) = b else { continue };
            let text = if nn.bits.len() == 1 { name.to_string() } else { format!("{name}[{i}]") };
            match out.get(n) {
                Some(old) if old.len() <= text.len() => {}
                _ => {
                    out.insert(*n, text);
                }
            }
        }
    }
    out
}

/// Count the logic levels of module `top` in a `write_json` netlist; `carry4_half` for
/// UltraScale(+) netlists ([`half_levels`]).
pub fn analyse(json: &str, top: &str, carry4_half: bool) -> Result<Levels, String> {
    let net: Netlist = serde_json::from_str(json).map_err(|e| format!("netlist JSON: {e}"))?;
    let m = net.modules.get(top).ok_or_else(|| format!("no module `{top}` in the netlist"))?;
    // Driver of each net bit: (cell index, kind) or a primary input.
    let cells: Vec<(&String, &Cell)> = m.cells.iter().collect();
    let mut driver: HashMap<u64, usize> = HashMap::new();
    for (i, (_, c)) in cells.iter().enumerate() {
        for (p, bits) in &c.connections {
            if c.port_directions.get(p).map(String::as_str) == Some("output") {
                for b in bits {
                    if let Bit::Net(n) = b {
                        driver.insert(*n, i);
                    }
                }
            }
        }
    }
    // Depth of a net bit in half levels from the nearest boundary, memoized; iterative DFS.
    // depth[n] = 0 for a boundary output, a primary input or an undriven net.
    let mut depth: HashMap<u64, u32> = HashMap::new();
    // For the path: the input bit that set a logic cell's output depth.
    let mut via: HashMap<u64, u64> = HashMap::new();
    // The inputs the output bit `out` of logic cell `c` depends on; for a LUT RAM only the
    // address of the read port that drives it.
    let logic_inputs = |c: &Cell, out: u64| -> Vec<u64> {
        let lutram = kind(&c.kind) == Kind::Logic && type_of(c).starts_with("RAM");
        let out_port = if lutram {
            c.connections
                .iter()
                .find(|(p, bits)| {
                    c.port_directions.get(*p).map(String::as_str) == Some("output")
                        && bits.iter().any(|b| matches!(b, Bit::Net(x) if *x == out))
                })
                .map(|(p, _)| p.as_str())
        } else {
            None
        };
        let mut v = Vec::new();
        for (p, bits) in &c.connections {
            if c.port_directions.get(p).map(String::as_str) != Some("input") {
                continue;
            }
            if lutram && !lutram_read_input(out_port, p) {
                continue;
            }
            v.extend(bits.iter().filter_map(Bit::net));
        }
        v
    };
    let depth_of = |root: u64, depth: &mut HashMap<u64, u32>, via: &mut HashMap<u64, u64>| -> Result<u32, String> {
        if let Some(&d) = depth.get(&root) {
            return Ok(d);
        }
        // (net, its inputs, visited-marker)
        let mut stack: Vec<(u64, bool)> = vec![(root, false)];
        let mut on_stack: std::collections::HashSet<u64> = std::collections::HashSet::new();
        while let Some((n, expanded)) = stack.pop() {
            if depth.contains_key(&n) {
                continue;
            }
            let Some(&ci) = driver.get(&n) else {
                depth.insert(n, 0);
                continue;
            };
            let c = cells[ci].1;
            if kind(&c.kind) == Kind::Boundary {
                depth.insert(n, 0);
                continue;
            }
            let ins = logic_inputs(c, n);
            if expanded {
                let (mut best, mut best_in) = (0u32, None);
                for i in &ins {
                    let d = depth.get(i).copied().unwrap_or(0);
                    if best_in.is_none() || d > best {
                        best = d;
                        best_in = Some(*i);
                    }
                }
                depth.insert(n, best + half_levels(&c.kind, carry4_half));
                if let Some(i) = best_in {
                    via.insert(n, i);
                }
                on_stack.remove(&n);
                continue;
            }
            if !on_stack.insert(n) {
                return Err(format!("combinational loop through a {}", type_of(c)));
            }
            stack.push((n, true));
            for i in ins {
                if !depth.contains_key(&i) {
                    if on_stack.contains(&i) {
                        return Err(format!("combinational loop through a {}", type_of(c)));
                    }
                    stack.push((i, false));
                }
            }
        }
        Ok(depth.get(&root).copied().unwrap_or(0))
    };
    let names = bit_names(m);
    let name = |n: u64| names.get(&n).cloned().unwrap_or_else(|| format!("net {n}"));
    // Endpoints: output ports, inputs of boundary cells. Each is (depth, bit, how to name it).
    let mut best: Option<(u32, u64, String)> = None;
    let mut hist: Vec<u64> = Vec::new();
    // ROCE_LEVELS_TRACE: every endpoint deeper than 8 levels, for the per-register summary
    // (a value from 2 to 8 lists the endpoints of at least that many levels instead: the
    // marginal paths).
    let trace_env = std::env::var("ROCE_LEVELS_TRACE").ok();
    let trace = trace_env.is_some();
    let trace_min = trace_env.and_then(|v| v.parse::<u32>().ok()).filter(|d| (2..=8).contains(d)).unwrap_or(9);
    let mut deep: Vec<(u32, u64, String)> = Vec::new();
    let mut record = |d: u32, bit: u64, to: &dyn Fn() -> String| {
        let d = d.div_ceil(2);
        let d_us = d as usize;
        if hist.len() <= d_us {
            hist.resize(d_us + 1, 0);
        }
        hist[d_us] += 1;
        if trace && d >= trace_min {
            deep.push((d, bit, to()));
        }
        if best.as_ref().is_none_or(|(b, _, _)| d > *b) {
            best = Some((d, bit, to()));
        }
    };
    let mut ports: Vec<&String> = m.ports.keys().collect();
    ports.sort();
    for port in ports {
        let p = &m.ports[port];
        if p.direction != "output" {
            continue;
        }
        for (i, b) in p.bits.iter().enumerate() {
            if let Bit::Net(n) = b {
                let d = depth_of(*n, &mut depth, &mut via)?;
                let wide = p.bits.len() > 1;
                record(d, *n, &|| if wide { format!("output {port}[{i}]") } else { format!("output {port}") });
            }
        }
    }
    let mut order: Vec<usize> = (0..cells.len()).collect();
    order.sort_by_key(|&i| cells[i].0);
    for i in order {
        let c = cells[i].1;
        if kind(&c.kind) != Kind::Boundary {
            continue;
        }
        // A flip-flop is named by its output (the register); other cells by the net in.
        let outs: Vec<u64> = c
            .connections
            .iter()
            .filter(|(p, _)| c.port_directions.get(*p).map(String::as_str) == Some("output"))
            .flat_map(|(_, bits)| bits.iter())
            .filter_map(Bit::net)
            .collect();
        let mut ports: Vec<&String> = c.connections.keys().collect();
        ports.sort();
        for p in ports {
            if c.port_directions.get(p).map(String::as_str) != Some("input") {
                continue;
            }
            for b in &c.connections[p] {
                if let Bit::Net(n) = b {
                    let d = depth_of(*n, &mut depth, &mut via)?;
                    record(d, *n, &|| match outs.as_slice() {
                        [q] => format!("{} ({}.{p})", name(*q), type_of(c)),
                        _ => format!("{}.{p} <- {}", type_of(c), name(*n)),
                    });
                }
            }
        }
    }
    let Some((max, bit, to)) = best else {
        return Ok(Levels::default());
    };
    // The start of the path into `n` (a register output, an input port or a constant).
    let start_of = |mut n: u64| {
        while let Some(&i) = via.get(&n) {
            n = i;
        }
        n
    };
    if trace && !deep.is_empty() {
        // Deep endpoints grouped by register (the name without its bit index), deepest
        // first, each with the start of its deepest path: what to pipeline next.
        let base = |s: &str| -> String {
            let s = s.split(" (").next().unwrap_or(s);
            match s.rfind('[') {
                Some(i) if s.ends_with(']') => s[..i].to_string(),
                _ => s.to_string(),
            }
        };
        let mut groups: HashMap<String, (u32, u64, usize)> = HashMap::new();
        for (d, b, to) in &deep {
            let g = groups.entry(base(to)).or_insert((*d, *b, 0));
            if *d > g.0 {
                (g.0, g.1) = (*d, *b);
            }
            g.2 += 1;
        }
        let mut groups: Vec<(String, (u32, u64, usize))> = groups.into_iter().collect();
        groups.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(&b.0)));
        eprintln!("  endpoints of {trace_min}+ levels by register (levels, bits, from):");
        for (g, (d, b, count)) in groups {
            eprintln!("    {d:>3}  {count:>5}  {g:<40} <- {}", name(start_of(b)));
        }
    }
    // Walk back to the start of the deepest path, counting its cells. ROCE_LEVELS_TRACE=1
    // prints each cell with its RTL source (a developer aid for finding what to pipeline).
    let mut n = bit;
    let mut path = PathCells::default();
    let mut through = Vec::new();
    loop {
        if n != bit && via.contains_key(&n) {
            if let Some(name) = names.get(&n) {
                through.push(name.clone());
            }
        }
        if let Some(&ci) = driver.get(&n) {
            let t = type_of(cells[ci].1);
            if trace {
                let src = cells[ci].1.attributes.get("src").and_then(|v| v.as_str()).unwrap_or("");
                let cell = cells[ci].0;
                let cell = if cell.len() > 60 { &cell[cell.len() - 60..] } else { cell.as_str() };
                eprintln!("  {t:<8} depth {:>3}  {:<28} {cell}  {src}", depth.get(&n).copied().unwrap_or(0), name(n));
            }
            match kind(t) {
                Kind::Logic if t.starts_with("LUT") => path.lut += 1,
                Kind::Logic if t.starts_with("MUXF") => path.muxf += 1,
                Kind::Logic => path.lutram += 1,
                Kind::Carry => path.carry += 1,
                Kind::Free | Kind::Boundary => {}
            }
        }
        match via.get(&n) {
            Some(&i) => n = i,
            None => break,
        }
    }
    let from = match driver.get(&n) {
        Some(&ci) => format!("{} ({})", name(n), type_of(cells[ci].1)),
        None => {
            let port = m
                .ports
                .iter()
                .find(|(_, p)| p.direction == "input" && p.bits.iter().any(|b| matches!(b, Bit::Net(x) if *x == n)));
            port.map_or_else(|| "constant or undriven".to_string(), |(name, _)| format!("input {name}"))
        }
    };
    through.reverse();
    Ok(Levels { max, from, to, path, through, hist })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// in -> LUT a -> MUXF7 m (with LUT b) -> INV -> FDRE.D; FDRE.Q -> CARRY4 -> out.
    /// `q` names the register's output (shorter than `state[1]`, and not generated).
    const NET: &str = r#"{
      "modules": {
        "top": {
          "ports": {
            "in":  {"direction": "input",  "bits": [2]},
            "clk": {"direction": "input",  "bits": [3]},
            "out": {"direction": "output", "bits": [9]}
          },
          "netnames": {
            "q":     {"hide_name": 0, "bits": [8]},
            "$abc$1": {"hide_name": 1, "bits": [8]},
            "state": {"hide_name": 0, "bits": [7, 8]},
            "in":    {"hide_name": 0, "bits": [2]}
          },
          "cells": {
            "a": {"type": "LUT2", "port_directions": {"I0": "input", "I1": "input", "O": "output"},
                  "connections": {"I0": [2], "I1": ["0"], "O": [4]}, "attributes": {"src": "x.sv:1.1-1.9"}},
            "b": {"type": "LUT1", "port_directions": {"I0": "input", "O": "output"},
                  "connections": {"I0": [4], "O": [5]}, "attributes": {}},
            "m": {"type": "MUXF7", "port_directions": {"I0": "input", "I1": "input", "S": "input", "O": "output"},
                  "connections": {"I0": [4], "I1": [5], "S": [2], "O": [6]}, "attributes": {}},
            "i": {"type": "INV", "port_directions": {"I": "input", "O": "output"},
                  "connections": {"I": [6], "O": [7]}, "attributes": {}},
            "f": {"type": "FDRE", "port_directions": {"C": "input", "CE": "input", "D": "input", "R": "input", "Q": "output"},
                  "connections": {"C": [3], "CE": ["1"], "D": [7], "R": ["0"], "Q": [8]}, "attributes": {"src": "y.sv:5.3-5.20"}},
            "c": {"type": "CARRY4", "port_directions": {"CI": "input", "S": "input", "O": "output"},
                  "connections": {"CI": [8], "S": [8, 2, "0", "0"], "O": [9, 10, 11, 12]}, "attributes": {}}
          }
        }
      }
    }"#;

    #[test]
    fn counts_levels_and_finds_the_deepest_path() {
        let l = analyse(NET, "top", false).expect("analyse");
        // in -> a (1) -> b (2) -> m (3) -> INV (3) -> FDRE.D
        assert_eq!(l.max, 3);
        assert_eq!(l.from, "input in");
        assert_eq!(l.to, "q (FDRE.D)");
        // endpoints: out (1 level: CARRY4), FDRE.C (0), FDRE.D (3)
        assert_eq!(l.hist, vec![1, 1, 0, 1]);
        assert_eq!(l.deeper_than(2), 1);
        assert_eq!(l.deeper_than(0), 2);
        assert_eq!(l.path, PathCells { lut: 2, muxf: 1, carry: 0, lutram: 0 });
        assert_eq!(l.path.to_string(), "2 LUT + 1 MUXF");
        assert!(l.through.is_empty(), "{:?}", l.through);
        // a CARRY4 is half a level on UltraScale+: out is then 1 level (rounded up) either way
        let l = analyse(NET, "top", true).expect("analyse");
        assert_eq!((l.max, l.hist.clone()), (3, vec![1, 1, 0, 1]));
    }

    #[test]
    fn loops_and_missing_modules_are_errors() {
        let looped = NET.replace(r#""I1": [5], "S": [2], "O": [6]"#, r#""I1": [6], "S": [2], "O": [6]"#);
        assert!(analyse(&looped, "top", false).unwrap_err().contains("loop through a MUXF7"));
        assert!(analyse(NET, "other", false).unwrap_err().contains("no module"));
        assert!(analyse("{", "top", false).is_err());
    }

    #[test]
    fn cell_kinds() {
        for t in ["LUT6", "MUXF9", "RAM64M", "RAM32X1D", "RAM128X1D"] {
            assert!(kind(t) == Kind::Logic, "{t}");
            assert_eq!(half_levels(t, true), 2);
        }
        assert!(kind("CARRY8") == Kind::Carry && kind("CARRY4") == Kind::Carry);
        assert_eq!([half_levels("CARRY4", true), half_levels("CARRY4", false), half_levels("CARRY8", true)], [1, 2, 2]);
        for t in ["FDRE", "RAMB36E2", "RAMB18E2", "DSP48E2", "SRLC32E", "URAM288"] {
            assert!(kind(t) == Kind::Boundary, "{t}");
        }
        assert!(kind("INV") == Kind::Free);
        // a read port's output depends on its own address only (RAM64M8: ADDRH is the
        // write address, and the read address of DOH alone)
        assert!(lutram_read_input(Some("DOA"), "ADDRA") && !lutram_read_input(Some("DOA"), "ADDRH"));
        assert!(lutram_read_input(Some("DOH"), "ADDRH") && !lutram_read_input(Some("DOB"), "ADDRA"));
        assert!(lutram_read_input(Some("DPO"), "DPRA") && !lutram_read_input(Some("DPO"), "A"));
        assert!(lutram_read_input(Some("SPO"), "A") && lutram_read_input(Some("O"), "A0"));
        for o in [None, Some("DOA"), Some("DPO"), Some("SPO")] {
            assert!(!lutram_read_input(o, "DIA") && !lutram_read_input(o, "WE") && !lutram_read_input(o, "WCLK"));
        }
    }
}
