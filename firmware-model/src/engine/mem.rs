//! Host memory as the engine reaches it: only through a DMA interface.
//!
//! [`Dma`] is the boundary the HDL will have (a read/write interface a board wires to a PCIe
//! DMA IP). [`HostMem`] is a sparse model of host memory (4 KiB pages allocated on first
//! touch) that the simulator and the driver's simulator backend share.
//!
//! [`HostMemBudget`] is what the link to host memory allows the engine's DMA: a read
//! latency, a bandwidth per direction and a number of reads outstanding (PCIe Gen3 x16 as
//! measured on Alveo boards by default). The engine model enforces it with a
//! [`HostMemTimer`]; the simulator's harness around the Verilated engine enforces the same
//! description cycle by cycle at the engine's DMA ports.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

/// Bytes one beat of the engine's DMA ports carries (512 bits): the most either direction
/// moves in a cycle, whatever the budget.
pub const DMA_BEAT_BYTES: u64 = 64;

/// A host memory budget that cannot be built.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum BudgetError {
    /// The bandwidth is not a finite number of GB/s at least 0.
    #[error("PCIe bandwidth {0} GB/s is not a number of GB/s >= 0")]
    Bandwidth(f64),
    /// The bandwidth is below one byte per engine cycle.
    #[error("PCIe bandwidth {gbytes} GB/s is less than one byte per cycle at {clock_mhz} MHz")]
    BelowOneByte {
        /// GB/s asked for.
        gbytes: f64,
        /// Engine clock.
        clock_mhz: f64,
    },
    /// The clock is not a positive number of MHz.
    #[error("engine clock {0} MHz is not positive")]
    Clock(f64),
}

/// What host memory gives the engine's DMA (one description for the engine model and the
/// simulator's harness around the Verilated engine):
///
/// - reads: a read's first data comes `read_latency` cycles after its request at the
///   earliest; the read-completion direction is shared by all reads and a read of `len`
///   bytes occupies it for `ceil(len / rd_bytes_per_cycle)` cycles, in the order the reads
///   were issued; at most `read_tags` reads are outstanding (issued, data not all returned):
///   further reads wait for one to finish;
/// - writes: a write of `len` bytes occupies the write direction for
///   `ceil(len / wr_bytes_per_cycle)` cycles, in order.
///
/// Bandwidths are at most [`DMA_BEAT_BYTES`] per cycle (the ports' width).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostMemBudget {
    /// Cycles from a read request to its first data.
    pub read_latency: u64,
    /// Read-completion bandwidth (host to engine), bytes per cycle, 1..=64.
    pub rd_bytes_per_cycle: u64,
    /// Write bandwidth (engine to host), bytes per cycle, 1..=64.
    pub wr_bytes_per_cycle: u64,
    /// Reads outstanding at most (0: no limit).
    pub read_tags: u32,
}

impl HostMemBudget {
    /// PCIe Gen3 x16 as measured on Alveo boards, GB/s per direction.
    pub const PCIE_GEN3_X16_GBYTES: f64 = 13.0;
    /// Read latency of host memory over PCIe, in cycles at 250 MHz (1 µs).
    pub const READ_LATENCY: u64 = 250;
    /// Reads outstanding at most: the Alveo U250 build's DMA path (`roce_dma_axi` into the
    /// XDMA IP's AXI slave bridge, which takes up to 32 AXI reads with completions
    /// pending). The engine itself issues more: up to 16 RQ WQE reads (`roce_resp`), 16
    /// READ-response reads (`roce_rd_rsp`), 16 SQ WQE reads and 64 payload pieces
    /// (`roce_req`), 1 (`roce_comp`).
    pub const READ_TAGS: u32 = 32;

    /// A PCIe link of `gbytes` GB/s per direction (0: no bandwidth limit beyond the ports'
    /// 64 bytes per cycle) for an engine clocked at `clock_mhz`.
    pub fn pcie(gbytes: f64, clock_mhz: f64, read_latency: u64, read_tags: u32) -> Result<Self, BudgetError> {
        if !(gbytes.is_finite() && gbytes >= 0.0) {
            return Err(BudgetError::Bandwidth(gbytes));
        }
        if !(clock_mhz.is_finite() && clock_mhz > 0.0) {
            return Err(BudgetError::Clock(clock_mhz));
        }
        let bpc = if gbytes == 0.0 {
            DMA_BEAT_BYTES
        } else {
            let b = (gbytes * 1000.0 / clock_mhz).round();
            if b < 1.0 {
                return Err(BudgetError::BelowOneByte { gbytes, clock_mhz });
            }
            (b as u64).min(DMA_BEAT_BYTES)
        };
        Ok(HostMemBudget { read_latency, rd_bytes_per_cycle: bpc, wr_bytes_per_cycle: bpc, read_tags })
    }

    /// No limit but the ports' width and the read latency: reads and writes at 64 bytes
    /// per cycle, any number of reads outstanding.
    pub fn unlimited(read_latency: u64) -> Self {
        HostMemBudget {
            read_latency,
            rd_bytes_per_cycle: DMA_BEAT_BYTES,
            wr_bytes_per_cycle: DMA_BEAT_BYTES,
            read_tags: 0,
        }
    }

    /// Whether anything beyond the ports' width and the latency is limited.
    pub fn is_limited(&self) -> bool {
        self.rd_bytes_per_cycle < DMA_BEAT_BYTES || self.wr_bytes_per_cycle < DMA_BEAT_BYTES || self.read_tags > 0
    }

    /// Cycles a read of `len` bytes occupies the read-completion direction (at least 1).
    pub fn read_cycles(&self, len: u64) -> u64 {
        len.div_ceil(self.rd_bytes_per_cycle.clamp(1, DMA_BEAT_BYTES)).max(1)
    }

    /// Cycles a write of `len` bytes occupies the write direction (at least 1).
    pub fn write_cycles(&self, len: u64) -> u64 {
        len.div_ceil(self.wr_bytes_per_cycle.clamp(1, DMA_BEAT_BYTES)).max(1)
    }

    /// One line for a run's header, e.g. "host memory: PCIe 13.0 GB/s per direction (52 B
    /// per cycle at 250 MHz), read latency 250 cycles, 32 read tags".
    pub fn describe(&self, clock_mhz: f64) -> String {
        let gb = |b: u64| b as f64 * clock_mhz / 1000.0;
        let bw = if self.rd_bytes_per_cycle >= DMA_BEAT_BYTES && self.wr_bytes_per_cycle >= DMA_BEAT_BYTES {
            format!("no PCIe bandwidth limit (the ports' {DMA_BEAT_BYTES} B per cycle)")
        } else if self.rd_bytes_per_cycle == self.wr_bytes_per_cycle {
            format!(
                "PCIe {:.1} GB/s per direction ({} B per cycle at {clock_mhz} MHz)",
                gb(self.rd_bytes_per_cycle),
                self.rd_bytes_per_cycle
            )
        } else {
            format!(
                "PCIe reads {:.1} GB/s ({} B per cycle), writes {:.1} GB/s ({} B per cycle) at {clock_mhz} MHz",
                gb(self.rd_bytes_per_cycle),
                self.rd_bytes_per_cycle,
                gb(self.wr_bytes_per_cycle),
                self.wr_bytes_per_cycle
            )
        };
        let tags = match self.read_tags {
            0 => "no read tag limit".to_string(),
            n => format!("{n} read tags"),
        };
        format!("host memory: {bw}, read latency {} cycles, {tags}", self.read_latency)
    }
}

impl Default for HostMemBudget {
    /// PCIe Gen3 x16 at 250 MHz: 13 GB/s (52 bytes per cycle) per direction, 250 cycles of
    /// read latency, [`HostMemBudget::READ_TAGS`] reads outstanding.
    fn default() -> Self {
        HostMemBudget {
            read_latency: Self::READ_LATENCY,
            rd_bytes_per_cycle: 52,
            wr_bytes_per_cycle: 52,
            read_tags: Self::READ_TAGS,
        }
    }
}

/// The engine model's use of a [`HostMemBudget`]: when each read and write it issues
/// completes. Requests are taken in the order the model makes them (it makes them at
/// nondecreasing cycles but for a few cycles of pipeline latency).
#[derive(Clone, Debug)]
pub struct HostMemTimer {
    budget: HostMemBudget,
    /// The first cycle the read-completion direction is free.
    rd_free: u64,
    /// The first cycle the write direction is free.
    wr_free: u64,
    /// When each outstanding read's data is all in.
    outstanding: BinaryHeap<Reverse<u64>>,
    /// Most reads outstanding at once so far.
    pub peak_reads: usize,
    /// Reads that waited for a tag.
    pub tag_waits: u64,
}

impl HostMemTimer {
    /// A timer enforcing `budget`, idle.
    pub fn new(budget: HostMemBudget) -> Self {
        HostMemTimer { budget, rd_free: 0, wr_free: 0, outstanding: BinaryHeap::new(), peak_reads: 0, tag_waits: 0 }
    }

    /// The budget enforced.
    pub fn budget(&self) -> &HostMemBudget {
        &self.budget
    }

    /// Forget the reads whose data is all in by `now` (their tags are free).
    fn retire(&mut self, now: u64) {
        while self.outstanding.peek().is_some_and(|r| r.0 <= now) {
            self.outstanding.pop();
        }
    }

    /// Whether a read requested at `now` gets a tag at once (the Verilated engine's harness
    /// holds its read request port not ready while it would not).
    pub fn tag_free(&mut self, now: u64) -> bool {
        self.retire(now);
        let tags = self.budget.read_tags as usize;
        tags == 0 || self.outstanding.len() < tags
    }

    /// A read of `len` bytes requested at `now`: the cycle after its last data beat (its
    /// data is in from then on). It is issued at `now`, or when a tag frees if all are
    /// taken; its first data comes `read_latency` after issue, or when the earlier reads'
    /// data has passed.
    pub fn read(&mut self, now: u64, len: u64) -> u64 {
        let mut issue = now;
        self.retire(issue);
        let tags = self.budget.read_tags as usize;
        if tags > 0 && self.outstanding.len() >= tags {
            if let Some(Reverse(t)) = self.outstanding.pop() {
                issue = t;
                self.tag_waits += 1;
            }
        }
        let start = (issue + self.budget.read_latency).max(self.rd_free);
        let done = start + self.budget.read_cycles(len);
        self.rd_free = done;
        self.outstanding.push(Reverse(done));
        self.peak_reads = self.peak_reads.max(self.outstanding.len());
        done
    }

    /// A write of `len` bytes whose data is ready at `at`: the cycle after it has passed.
    pub fn write(&mut self, at: u64, len: u64) -> u64 {
        let start = at.max(self.wr_free);
        self.wr_free = start + self.budget.write_cycles(len);
        self.wr_free
    }
}

/// A DMA access that host memory refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DmaError {
    /// The address range is not mapped for device access (an IOMMU fault on real hardware).
    #[error("DMA {op} of {len} bytes at {addr:#x} is outside the mapped windows")]
    Unmapped {
        /// "read" or "write".
        op: &'static str,
        /// Start address.
        addr: u64,
        /// Length.
        len: usize,
    },
}

/// The engine's view of host memory.
pub trait Dma {
    /// Read `buf.len()` bytes at `addr`.
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError>;
    /// Write `data` at `addr`.
    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError>;
}

const PAGE: u64 = 4096;

/// Sparse host memory, optionally behind an IOMMU: then DMA reaches only the mapped windows.
#[derive(Clone, Debug, Default)]
pub struct HostMem {
    pages: HashMap<u64, Box<[u8; PAGE as usize]>>,
    iommu: bool,
    windows: Vec<(u64, u64)>,
    /// Bytes read by DMA.
    pub dma_read_bytes: u64,
    /// Bytes written by DMA.
    pub dma_write_bytes: u64,
    /// Record every DMA write's range in `writes` (for tests that bound where the engine
    /// may write).
    pub track_writes: bool,
    /// DMA write ranges, when tracked.
    pub writes: Vec<(u64, usize)>,
}

impl HostMem {
    /// Empty memory; DMA reaches every address.
    pub fn new() -> Self {
        Self::default()
    }

    /// Empty memory behind an IOMMU: DMA reaches only windows mapped with
    /// [`HostMem::map_window`].
    pub fn with_iommu() -> Self {
        HostMem { iommu: true, ..Self::default() }
    }

    /// Allow device access to `[addr, addr+len)`.
    pub fn map_window(&mut self, addr: u64, len: u64) {
        self.windows.push((addr, addr.saturating_add(len)));
    }

    /// Remove a window previously mapped at `addr`.
    pub fn unmap_window(&mut self, addr: u64) {
        self.windows.retain(|w| w.0 != addr);
    }

    fn allowed(&self, addr: u64, len: usize) -> bool {
        if !self.iommu {
            return true;
        }
        let end = addr.saturating_add(len as u64);
        self.windows.iter().any(|&(s, e)| addr >= s && end <= e)
    }

    /// CPU-side read (no window check).
    pub fn read(&self, addr: u64, buf: &mut [u8]) {
        let mut off = 0usize;
        while off < buf.len() {
            let a = addr + off as u64;
            let (pg, po) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - po).min(buf.len() - off);
            match self.pages.get(&pg) {
                Some(p) => buf[off..off + n].copy_from_slice(&p[po..po + n]),
                None => buf[off..off + n].fill(0),
            }
            off += n;
        }
    }

    /// CPU-side write (no window check).
    pub fn write(&mut self, addr: u64, data: &[u8]) {
        let mut off = 0usize;
        while off < data.len() {
            let a = addr + off as u64;
            let (pg, po) = (a / PAGE, (a % PAGE) as usize);
            let n = (PAGE as usize - po).min(data.len() - off);
            let p = self.pages.entry(pg).or_insert_with(|| Box::new([0u8; PAGE as usize]));
            p[po..po + n].copy_from_slice(&data[off..off + n]);
            off += n;
        }
    }

    /// CPU-side read into a new vector.
    pub fn read_vec(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut v = vec![0u8; len];
        self.read(addr, &mut v);
        v
    }

    /// Read a little-endian u64.
    pub fn read_u64(&self, addr: u64) -> u64 {
        let mut b = [0u8; 8];
        self.read(addr, &mut b);
        u64::from_le_bytes(b)
    }
}

impl Dma for HostMem {
    fn dma_read(&mut self, addr: u64, buf: &mut [u8]) -> Result<(), DmaError> {
        if !self.allowed(addr, buf.len()) {
            return Err(DmaError::Unmapped { op: "read", addr, len: buf.len() });
        }
        self.read(addr, buf);
        self.dma_read_bytes += buf.len() as u64;
        Ok(())
    }

    fn dma_write(&mut self, addr: u64, data: &[u8]) -> Result<(), DmaError> {
        if !self.allowed(addr, data.len()) {
            return Err(DmaError::Unmapped { op: "write", addr, len: data.len() });
        }
        self.write(addr, data);
        self.dma_write_bytes += data.len() as u64;
        if self.track_writes {
            self.writes.push((addr, data.len()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_read_write_across_pages() {
        let mut m = HostMem::new();
        let data: Vec<u8> = (0..10000).map(|i| i as u8).collect();
        m.write(4090, &data);
        assert_eq!(m.read_vec(4090, 10000), data);
        assert_eq!(m.read_vec(0, 4), vec![0; 4]);
    }

    /// 64 KiB of reads at 52 bytes per cycle: not before 65536 / 52 cycles after the
    /// latency, whatever the tags and the read sizes.
    #[test]
    fn reads_share_the_read_bandwidth() {
        let b = HostMemBudget::default();
        assert_eq!((b.rd_bytes_per_cycle, b.read_latency), (52, 250));
        for (size, tags) in [(4096u64, 32u32), (1024, 32), (65536, 0), (64, 1024)] {
            let mut t = HostMemTimer::new(HostMemBudget { read_tags: tags, ..b });
            let last = (0..65536 / size).map(|_| t.read(0, size)).max().unwrap_or(0);
            assert!(last >= 250 + 65536u64.div_ceil(52), "{size} B reads: 64 KiB in by {last}");
            // and no slower than the bandwidth with enough tags: each read costs its own
            // rounded-up cycles, back to back
            assert_eq!(last, 250 + (65536 / size) * size.div_ceil(52), "{size} B reads");
        }
        let mut off = HostMemTimer::new(HostMemBudget::unlimited(250));
        assert_eq!(off.read(0, 65536), 250 + 1024);
    }

    /// With two tags the third read is issued only when the first has all its data.
    #[test]
    fn the_third_read_waits_for_a_tag() {
        let b = HostMemBudget { read_tags: 2, ..HostMemBudget::default() };
        let mut t = HostMemTimer::new(b);
        let r1 = t.read(0, 64);
        let r2 = t.read(0, 64);
        assert_eq!((r1, r2), (252, 254));
        let r3 = t.read(0, 64);
        assert_eq!(r3, r1 + 250 + 2, "issued when read 1 is in, then the latency");
        assert_eq!((t.peak_reads, t.tag_waits), (2, 1));
        // without the limit it would have followed read 2 at once
        let mut u = HostMemTimer::new(HostMemBudget { read_tags: 0, ..b });
        assert_eq!([u.read(0, 64), u.read(0, 64), u.read(0, 64)], [252, 254, 256]);
        assert_eq!(u.peak_reads, 3);
    }

    /// Writes take the write direction in turn at its bandwidth; reads do not slow them.
    #[test]
    fn writes_share_the_write_bandwidth() {
        let mut t = HostMemTimer::new(HostMemBudget::default());
        let done = (0..16).map(|_| t.write(0, 4096)).max().unwrap_or(0);
        assert_eq!(done, 16 * 4096u64.div_ceil(52));
        assert!(done >= 65536 / 52);
        t.read(0, 65536);
        assert_eq!(t.write(0, 32), done + 1);
        let mut u = HostMemTimer::new(HostMemBudget::unlimited(250));
        assert_eq!((0..16).map(|_| u.write(0, 4096)).max(), Some(1024));
    }

    #[test]
    fn budget_from_gbytes() {
        assert_eq!(HostMemBudget::pcie(13.0, 250.0, 250, 32), Ok(HostMemBudget::default()));
        assert_eq!(HostMemBudget::pcie(0.0, 250.0, 250, 0), Ok(HostMemBudget::unlimited(250)));
        assert!(!HostMemBudget::unlimited(250).is_limited());
        assert!(HostMemBudget::default().is_limited());
        // more than the ports carry is the ports' width
        assert_eq!(HostMemBudget::pcie(32.0, 250.0, 250, 0).map(|b| b.rd_bytes_per_cycle), Ok(64));
        assert!(matches!(HostMemBudget::pcie(0.1, 250.0, 250, 0), Err(BudgetError::BelowOneByte { .. })));
        assert!(matches!(HostMemBudget::pcie(-1.0, 250.0, 250, 0), Err(BudgetError::Bandwidth(_))));
        assert!(matches!(HostMemBudget::pcie(f64::NAN, 250.0, 250, 0), Err(BudgetError::Bandwidth(_))));
        assert_eq!(
            HostMemBudget::default().describe(250.0),
            "host memory: PCIe 13.0 GB/s per direction (52 B per cycle at 250 MHz), read latency 250 cycles, 32 read tags"
        );
    }

    #[test]
    fn windows_fault_outside() {
        let mut m = HostMem::with_iommu();
        m.map_window(0x1000, 0x1000);
        assert!(m.dma_write(0x1000, &[1; 16]).is_ok());
        assert!(m.dma_write(0x1FF8, &[1; 16]).is_err());
        let mut b = [0u8; 4];
        assert!(m.dma_read(0x3000, &mut b).is_err());
    }
}
