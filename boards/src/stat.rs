//! Yosys `stat` output: cell counts, and Xilinx cells sorted into resource classes.

use std::collections::BTreeMap;

/// Cell counts of one module, by cell type.
pub type Cells = BTreeMap<String, u64>;

/// Parse the `stat` output and return the cell counts of module `top`.
///
/// The output has one `=== NAME ===` section per module; after `Number of cells:` each line
/// is `CELLTYPE COUNT` until a blank line. A flattened design has only the top module.
pub fn parse_cells(text: &str, top: &str) -> Result<Cells, String> {
    let mut sections: Vec<(String, Cells)> = Vec::new();
    let mut in_cells = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("=== ").and_then(|r| r.strip_suffix(" ===")) {
            sections.push((name.to_string(), Cells::new()));
            in_cells = false;
            continue;
        }
        let Some((_, cells)) = sections.last_mut() else { continue };
        if t.starts_with("Number of cells:") {
            in_cells = true;
            continue;
        }
        if !in_cells {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        match words.as_slice() {
            [cell, n] => {
                let n: u64 = n.parse().map_err(|_| format!("bad cell count in `{t}`"))?;
                *cells.entry((*cell).to_string()).or_insert(0) += n;
            }
            _ => in_cells = false,
        }
    }
    let mut found = sections.into_iter().filter(|(name, _)| name == top);
    match (found.next(), found.next()) {
        (Some((_, cells)), None) if !cells.is_empty() => Ok(cells),
        (Some(_), None) => Err(format!("module `{top}` has no cells")),
        (Some(_), Some(_)) => Err(format!("module `{top}` appears twice")),
        (None, _) => Err(format!("no `=== {top} ===` section")),
    }
}

/// Cell counts of the whole design: the `=== design hierarchy ===` totals of a hierarchical
/// design, else the top module's section.
pub fn parse_design_cells(text: &str, top: &str) -> Result<Cells, String> {
    parse_cells(text, "design hierarchy").or_else(|_| parse_cells(text, top))
}

/// Size of a technology-independent (`synth`) netlist.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Generic {
    /// All cells.
    pub cells: u64,
    /// Flip-flop cells: `$_DFF*`, `$_SDFF*`, ... one per bit after `synth`; word-level
    /// `$dff`, `$adff`, ... one per register after `proc` alone ([`crate::yosys::Flow::Elab`]).
    pub ff: u64,
    /// Latch cells (`$_DLATCH*`, `$_SR_*`).
    pub latch: u64,
    /// Memories left unmapped (`$mem_v2`, `$mem`).
    pub mem: u64,
}

fn is_generic_latch(c: &str) -> bool {
    c.contains("DLATCH") || c.starts_with("$_SR_") || c == "$dlatch" || c == "$sr"
}

impl Generic {
    /// Sum up generic cells.
    pub fn from_cells(cells: &Cells) -> Self {
        let mut g = Generic::default();
        for (c, &n) in cells {
            g.cells += n;
            if is_generic_latch(c) {
                g.latch += n;
            } else if c == "$mem_v2" || c == "$mem" {
                g.mem += n;
            } else if c.to_ascii_uppercase().contains("DFF") {
                g.ff += n;
            }
        }
        g
    }

    /// Latch cell types with counts, as `TYPE×N` text.
    pub fn latch_cells(cells: &Cells) -> String {
        cells
            .iter()
            .filter(|(c, _)| is_generic_latch(c))
            .map(|(c, n)| format!("{c}×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Resource class of a Xilinx primitive as Yosys `synth_xilinx` emits it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// LUT1..LUT6 (the index is the LUT size).
    Lut(usize),
    /// Flip-flops: FDRE, FDSE, FDCE, FDPE and variants.
    Ff,
    /// Latches: LDCE, LDPE.
    Latch,
    /// Shift-register LUTs: SRL16E, SRLC32E.
    Srl,
    /// Distributed RAM: RAM32M, RAM64X1D, ...
    LutRam,
    /// 36 Kb block RAM (RAMB36E1/E2, FIFO36).
    Ramb36,
    /// 18 Kb block RAM (RAMB18E1/E2, FIFO18, older families' BRAM).
    Ramb18,
    /// UltraRAM.
    Uram,
    /// DSP slices.
    Dsp,
    /// Carry chains: CARRY4, CARRY8, MUXCY/XORCY.
    Carry,
    /// Wide-function muxes MUXF5..MUXF9.
    Muxf,
    /// I/O and clock buffers (absent with -noiopad -noclkbuf).
    Buf,
    /// Anything else (INV, ...).
    Other,
}

/// Classify a cell type.
pub fn classify(cell: &str) -> Class {
    if let Some(n) = cell.strip_prefix("LUT") {
        if let Ok(k @ 1..=6) = n.parse::<usize>() {
            return Class::Lut(k);
        }
    }
    let p = |s: &str| cell.starts_with(s);
    if p("FD") {
        Class::Ff
    } else if p("LD") {
        Class::Latch
    } else if p("SRL") {
        Class::Srl
    } else if p("RAMB36") || p("FIFO36") {
        Class::Ramb36
    } else if p("RAMB") || p("FIFO18") {
        Class::Ramb18
    } else if p("RAM") {
        Class::LutRam
    } else if p("URAM") {
        Class::Uram
    } else if p("DSP") || p("MULT18X18") {
        Class::Dsp
    } else if p("CARRY") || cell == "MUXCY" || cell == "XORCY" {
        Class::Carry
    } else if p("MUXF") {
        Class::Muxf
    } else if p("IBUF") || p("OBUF") || p("IOBUF") || p("BUFG") || p("BUFH") {
        Class::Buf
    } else {
        Class::Other
    }
}

/// Xilinx resource counts of one synthesized configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// LUT1..LUT6 summed.
    pub lut: u64,
    /// `lut_by_size[k-1]` = number of LUTk.
    pub lut_by_size: [u64; 6],
    /// Flip-flops.
    pub ff: u64,
    /// Latches.
    pub latch: u64,
    /// Shift-register LUTs.
    pub srl: u64,
    /// Distributed-RAM primitives.
    pub lutram: u64,
    /// RAMB36-class block RAMs.
    pub ramb36: u64,
    /// RAMB18-class block RAMs.
    pub ramb18: u64,
    /// UltraRAMs.
    pub uram: u64,
    /// DSP slices.
    pub dsp: u64,
    /// Carry-chain primitives.
    pub carry: u64,
    /// MUXF7/8/9.
    pub muxf: u64,
    /// I/O and clock buffers.
    pub bufs: u64,
    /// Unclassified cells.
    pub other: u64,
    /// Every cell type with its count.
    pub cells: Cells,
}

impl Resources {
    /// Sort cells into classes.
    pub fn from_cells(cells: Cells) -> Self {
        let mut r = Resources::default();
        for (cell, &n) in &cells {
            match classify(cell) {
                Class::Lut(k) => {
                    r.lut += n;
                    r.lut_by_size[k - 1] += n;
                }
                Class::Ff => r.ff += n,
                Class::Latch => r.latch += n,
                Class::Srl => r.srl += n,
                Class::LutRam => r.lutram += n,
                Class::Ramb36 => r.ramb36 += n,
                Class::Ramb18 => r.ramb18 += n,
                Class::Uram => r.uram += n,
                Class::Dsp => r.dsp += n,
                Class::Carry => r.carry += n,
                Class::Muxf => r.muxf += n,
                Class::Buf => r.bufs += n,
                Class::Other => r.other += n,
            }
        }
        r.cells = cells;
        r
    }

    /// Cells of one class, as `TYPE×N` text.
    pub fn cells_of(&self, class: fn(Class) -> bool) -> String {
        self.cells
            .iter()
            .filter(|(c, _)| class(classify(c)))
            .map(|(c, n)| format!("{c}×{n}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "
6. Printing statistics.

=== roce_icrc ===

   Number of wires:               7852
   Number of memories:               0
   Number of cells:              12849
     CARRY4                         70
     FDRE                         2466
     FDSE                            4
     INV                            15
     LUT1                           65
     LUT2                         3006
     LUT6                         2983
     MUXF7                         254
     RAMB36E1                        1
     RAMB18E1                        3
     RAM64X1D                        2
     SRL16E                        597
     DSP48E1                         2

   Estimated number of LCs:       6074
";

    #[test]
    fn parses_and_classifies() {
        let cells = parse_cells(STAT, "roce_icrc").unwrap();
        assert_eq!(cells.get("FDRE"), Some(&2466));
        let r = Resources::from_cells(cells);
        assert_eq!(r.lut, 65 + 3006 + 2983);
        assert_eq!(r.lut_by_size, [65, 3006, 0, 0, 0, 2983]);
        assert_eq!(r.ff, 2470);
        assert_eq!((r.srl, r.lutram, r.ramb36, r.ramb18, r.dsp), (597, 2, 1, 3, 2));
        assert_eq!((r.carry, r.muxf, r.other, r.latch), (70, 254, 15, 0));
        assert_eq!(r.cells_of(|c| c == Class::Other), "INV×15");
    }

    #[test]
    fn picks_the_top_section() {
        let text = "=== sub ===\n Number of cells: 1\n  LUT2 1\n\n=== top ===\n Number of cells: 2\n  LUT3 2\n";
        let r = Resources::from_cells(parse_cells(text, "top").unwrap());
        assert_eq!(r.lut_by_size[2], 2);
        assert_eq!(r.lut, 2);
    }

    #[test]
    fn reports_missing_or_broken_sections() {
        assert!(parse_cells("=== a ===\n Number of cells: 1\n LUT2 1\n", "b").is_err());
        assert!(parse_cells("=== a ===\n Number of wires: 3\n", "a").is_err());
        assert!(parse_cells("", "a").is_err());
    }

    #[test]
    fn generic_totals() {
        let text = "=== sub ===\n Number of cells: 1\n  $_XOR_ 1\n\n=== top ===\n Number of cells: 3\n                      $_DFFE_PP_ 2\n  $_DLATCH_P_ 1\n  sub 1\n\n=== design hierarchy ===\n\n  top 1\n    sub 1\n\n                     Number of wires: 9\n Number of cells: 4\n  $_DFFE_PP_ 2\n  $_DLATCH_P_ 1\n  $_XOR_ 1\n";
        let cells = parse_design_cells(text, "top").unwrap();
        assert_eq!(Generic::from_cells(&cells), Generic { cells: 4, ff: 2, latch: 1, mem: 0 });
        assert_eq!(Generic::latch_cells(&cells), "$_DLATCH_P_×1");
        let flat = "=== top ===\n Number of cells: 2\n  $_SDFF_PP0_ 1\n  $mem_v2 1\n";
        let g = Generic::from_cells(&parse_design_cells(flat, "top").unwrap());
        assert_eq!((g.cells, g.ff, g.mem), (2, 1, 1));
    }

    #[test]
    fn classifies_families() {
        assert_eq!(classify("CARRY8"), Class::Carry);
        assert_eq!(classify("RAMB36E2"), Class::Ramb36);
        assert_eq!(classify("RAMB18E2"), Class::Ramb18);
        assert_eq!(classify("RAM32M16"), Class::LutRam);
        assert_eq!(classify("SRLC32E"), Class::Srl);
        assert_eq!(classify("DSP48E2"), Class::Dsp);
        assert_eq!(classify("LDCE"), Class::Latch);
        assert_eq!(classify("FDCE"), Class::Ff);
        assert_eq!(classify("LUT7"), Class::Other);
        assert_eq!(classify("URAM288"), Class::Uram);
        assert_eq!(classify("MUXF9"), Class::Muxf);
        assert_eq!(classify("OBUF"), Class::Buf);
    }
}
