//! A simulated node: an engine (the Rust model, or the Verilated HDL engine) with its host
//! memory, and the driver backend that lets `roce-driver` program it exactly as it would
//! program hardware.

use std::cell::RefCell;
use std::rc::Rc;

use roce_driver::{Backend, DmaBuf, DriverError};
use roce_model::engine::{Counters, Engine, EngineConfig, HostMem};

use crate::hdl::{HdlConfig, HdlEngine};
use crate::SimError;

/// An engine and the host memory it reaches by DMA, at a simulated cycle.
#[derive(Debug)]
pub struct SimNode {
    /// The engine model (its configuration also describes an HDL node; an HDL node's
    /// model is not run).
    pub engine: Engine,
    /// The Verilated engine, when this node is HDL: it then does the node's work.
    pub hdl: Option<HdlEngine>,
    /// Host memory.
    pub mem: HostMem,
    /// Current cycle (the simulator advances it).
    pub now: u64,
    next_iova: u64,
}

impl SimNode {
    /// A node with an engine model of configuration `cfg`.
    pub fn new(cfg: EngineConfig) -> Self {
        // Only what the driver allocates is reachable by DMA.
        let mem = HostMem::with_iommu();
        SimNode { engine: Engine::new(cfg), hdl: None, mem, now: 0, next_iova: 0x1_0000_0000 }
    }

    /// A node with the Verilated engine (`cfg` gives its clock, line rate and DMA latency).
    pub fn new_hdl(cfg: EngineConfig) -> Result<Self, SimError> {
        let h = HdlEngine::new(HdlConfig {
            dma_read_latency: cfg.dma_read_latency,
            line_bytes_per_cycle: cfg.line_bytes_per_cycle(),
        })?;
        let mut n = Self::new(cfg);
        n.hdl = Some(h);
        Ok(n)
    }

    /// Whether the node runs the Verilated engine.
    pub fn is_hdl(&self) -> bool {
        self.hdl.is_some()
    }

    /// Advance to cycle `now` (the HDL engine runs the cycles in between).
    pub fn advance(&mut self, now: u64) {
        self.now = now;
        if let Some(h) = self.hdl.as_mut() {
            h.run_to(now, &mut self.mem);
        }
    }

    /// Deliver a received frame to the engine.
    pub fn rx(&mut self, frame: &[u8]) {
        let now = self.now;
        match self.hdl.as_mut() {
            Some(h) => h.rx(frame),
            None => self.engine.rx(now, frame, &mut self.mem),
        }
    }

    /// Take the next frame the engine transmits now.
    pub fn tx(&mut self) -> Option<Vec<u8>> {
        let now = self.now;
        match self.hdl.as_mut() {
            Some(h) => h.tx(),
            None => self.engine.tx(now, &mut self.mem),
        }
    }

    /// The next cycle at which the node has something to do (an HDL node: every cycle).
    pub fn next_event(&self) -> Option<u64> {
        match &self.hdl {
            Some(h) => Some(h.cycle.max(self.now) + 1),
            None => self.engine.next_event(),
        }
    }

    /// The engine's event counters (an HDL node's read through its registers).
    pub fn counters(&mut self) -> Counters {
        match self.hdl.as_mut() {
            Some(h) => h.counters(&mut self.mem).unwrap_or_default(),
            None => self.engine.counters.clone(),
        }
    }
}

/// A shared handle to a node.
pub type NodeRef = Rc<RefCell<SimNode>>;

/// `roce-driver` backend over a simulated node: MMIO goes to the engine's register file at
/// the node's current cycle, DMA buffers are windows of the node's host memory.
#[derive(Debug, Clone)]
pub struct ModelBackend(pub NodeRef);

impl Backend for ModelBackend {
    fn read32(&mut self, off: u32) -> u32 {
        let mut n = self.0.borrow_mut();
        let n = &mut *n;
        match n.hdl.as_mut() {
            // a register port that does not answer reads all ones, as a PCIe master abort
            Some(h) => h.read32(off, &mut n.mem).unwrap_or(u32::MAX),
            None => n.engine.mmio_read(off),
        }
    }

    fn write32(&mut self, off: u32, val: u32) {
        let mut n = self.0.borrow_mut();
        let n = &mut *n;
        match n.hdl.as_mut() {
            Some(h) => {
                let _ = h.write32(off, val, &mut n.mem);
            }
            None => n.engine.mmio_write(n.now, off, val, &mut n.mem),
        }
    }

    fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf, DriverError> {
        let mut n = self.0.borrow_mut();
        let len_pg = (len.max(1) as u64).div_ceil(4096) * 4096;
        let iova = n.next_iova;
        n.next_iova += len_pg + 4096; // a guard page between buffers
        n.mem.map_window(iova, len_pg);
        Ok(DmaBuf { iova, len, id: 0 })
    }

    fn dma_free(&mut self, buf: DmaBuf) {
        self.0.borrow_mut().mem.unmap_window(buf.iova);
    }

    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        self.0.borrow().mem.read(buf.iova + off as u64, out);
    }

    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        self.0.borrow_mut().mem.write(buf.iova + off as u64, data);
    }
}
