//! A simulated node: an engine (the Rust model) with its host memory, and the driver
//! backend that lets `roce-driver` program it exactly as it would program hardware.

use std::cell::RefCell;
use std::rc::Rc;

use roce_driver::{Backend, DmaBuf, DriverError};
use roce_model::engine::{Engine, EngineConfig, HostMem};

/// An engine and the host memory it reaches by DMA, at a simulated cycle.
#[derive(Debug)]
pub struct SimNode {
    /// The engine model.
    pub engine: Engine,
    /// Host memory.
    pub mem: HostMem,
    /// Current cycle (the simulator advances it).
    pub now: u64,
    next_iova: u64,
}

impl SimNode {
    /// A node with an engine of configuration `cfg`.
    pub fn new(cfg: EngineConfig) -> Self {
        // Only what the driver allocates is reachable by DMA.
        let mem = HostMem::with_iommu();
        SimNode { engine: Engine::new(cfg), mem, now: 0, next_iova: 0x1_0000_0000 }
    }

    /// Deliver a received frame to the engine.
    pub fn rx(&mut self, frame: &[u8]) {
        let now = self.now;
        self.engine.rx(now, frame, &mut self.mem);
    }

    /// Take the next frame the engine transmits now.
    pub fn tx(&mut self) -> Option<Vec<u8>> {
        let now = self.now;
        self.engine.tx(now, &mut self.mem)
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
        self.0.borrow_mut().engine.mmio_read(off)
    }

    fn write32(&mut self, off: u32, val: u32) {
        let mut n = self.0.borrow_mut();
        let n = &mut *n;
        n.engine.mmio_write(n.now, off, val, &mut n.mem);
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
