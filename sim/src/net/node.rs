//! A simulated node: an engine (the Rust model, or the Verilated HDL engine) with its host
//! memory, and the driver backend that lets `roce-driver` program it exactly as it would
//! program hardware.

use std::cell::RefCell;
use std::rc::Rc;

use roce_driver::{Backend, DmaBuf, DriverError};
use roce_model::engine::{Counters, Engine, EngineConfig, EngineEvent, HostMem};

use crate::net::hdl::{HdlConfig, HdlEngine};
use crate::net::shadow::{Shadow, Side};
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
    /// `--engine cosim`: the engine model runs beside the HDL on the same stimulus with
    /// its own copy of host memory, and what both emit is compared (`engine` is that model).
    pub shadow: Option<Box<Shadow>>,
    next_iova: u64,
}

impl SimNode {
    /// A node with an engine model of configuration `cfg`.
    pub fn new(cfg: EngineConfig) -> Self {
        // Only what the driver allocates is reachable by DMA.
        let mem = HostMem::with_iommu();
        SimNode { engine: Engine::new(cfg), hdl: None, mem, now: 0, shadow: None, next_iova: 0x1_0000_0000 }
    }

    /// A node with the Verilated engine (`cfg` gives its clock, line rate and host memory
    /// budget).
    pub fn new_hdl(cfg: EngineConfig) -> Result<Self, SimError> {
        Self::new_hdl_with(cfg, HdlConfig::default())
    }

    /// [`SimNode::new_hdl`] with the harness configured by `hcfg` (backpressure, FST); its
    /// host memory budget and line rate come from `cfg`.
    pub fn new_hdl_with(cfg: EngineConfig, hcfg: HdlConfig) -> Result<Self, SimError> {
        let h = HdlEngine::new(HdlConfig {
            host_mem: cfg.host_mem,
            line_bytes_per_cycle: cfg.line_bytes_per_cycle(),
            ..hcfg
        })?;
        let mut n = Self::new(cfg);
        n.hdl = Some(h);
        Ok(n)
    }

    /// A cosim node: the Verilated engine (configured by `hcfg`, e.g. with an FST window)
    /// does the work, the engine model runs beside it on the same stimulus, and the
    /// [`Shadow`] compares what both emit.
    pub fn new_cosim(cfg: EngineConfig, hcfg: HdlConfig) -> Result<Self, SimError> {
        let mut n = Self::new_hdl_with(cfg, hcfg)?;
        if let Some(h) = n.hdl.as_mut() {
            h.log_writes = true;
        }
        n.shadow = Some(Box::new(Shadow::new()));
        Ok(n)
    }

    /// The HDL's DMA writes and the model's frames since the last call, into the comparison.
    fn shadow_step(&mut self) {
        let (Some(h), Some(s)) = (self.hdl.as_mut(), self.shadow.as_mut()) else { return };
        for (a, d) in h.take_writes() {
            s.push_write(Side::Hdl, a, &d);
        }
        // (set on every step: a soft reset through the registers renews the model)
        self.engine.trace_events = true;
        for e in std::mem::take(&mut self.engine.events) {
            if let EngineEvent::Ack { qpn, psn, syndrome, msn } = e {
                let dest = self.engine.qp(qpn).map_or(u32::MAX, |q| q.dest_qpn);
                s.push_ack_request(dest, psn, syndrome, msn);
            }
        }
        // The model sends at its own pace up to now: every frame it has ready by then, each
        // at the cycle its MAC is free.
        let mut t = self.engine.next_event().map_or(self.now, |e| e.min(self.now));
        loop {
            if let Some(f) = self.engine.tx(t, &mut s.dma()) {
                s.push_frame(Side::Model, h.cycle, &f);
                continue;
            }
            match self.engine.next_event() {
                Some(e) if e > t && e <= self.now => t = e,
                _ if t < self.now => t = self.now,
                _ => break,
            }
        }
        s.compare(h.cycle);
    }

    /// Cosim: the end of the run. Both engines finish what they still have queued (the
    /// frames go nowhere: they are only compared), then what one side emitted and the
    /// other did not is a divergence.
    pub fn shadow_finish(&mut self) {
        if self.shadow.is_none() {
            return;
        }
        let mut quiet = 0u64;
        let mut now = self.now;
        while quiet < 20_000 && now < self.now + 50_000_000 {
            now += 1000;
            self.advance(now);
            let mut out = false;
            while self.tx().is_some() {
                out = true;
            }
            let busy = self.hdl.as_ref().is_some_and(HdlEngine::busy);
            quiet = if out || busy { 0 } else { quiet + 1000 };
        }
        self.shadow_step();
        let cycle = self.hdl.as_ref().map_or(self.now, |h| h.cycle);
        if let Some(s) = self.shadow.as_mut() {
            s.finish(cycle);
        }
    }

    /// Whether the node runs the Verilated engine.
    pub fn is_hdl(&self) -> bool {
        self.hdl.is_some()
    }

    /// The node's clock: `now`, or a Verilated engine's cycle where register accesses (each
    /// runs the engine's clock until it is answered) took it further.
    pub fn clock(&self) -> u64 {
        self.hdl.as_ref().map_or(self.now, |h| h.cycle.max(self.now))
    }

    /// Advance to cycle `now` (the HDL engine runs the cycles in between).
    pub fn advance(&mut self, now: u64) {
        self.now = now;
        if let Some(h) = self.hdl.as_mut() {
            h.run_to(now, &mut self.mem);
        }
        self.shadow_step();
    }

    /// Deliver a received frame to the engine.
    pub fn rx(&mut self, frame: &[u8]) {
        let now = self.now;
        match self.hdl.as_mut() {
            Some(h) => {
                h.rx(frame);
                if let Some(s) = self.shadow.as_mut() {
                    self.engine.rx(now, frame, &mut s.dma());
                }
            }
            None => self.engine.rx(now, frame, &mut self.mem),
        }
    }

    /// Take the next frame the engine transmits now.
    pub fn tx(&mut self) -> Option<Vec<u8>> {
        let now = self.now;
        match self.hdl.as_mut() {
            Some(h) => {
                let f = h.tx()?;
                if let Some(s) = self.shadow.as_mut() {
                    s.push_frame(Side::Hdl, h.cycle, &f);
                }
                Some(f)
            }
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
            Some(h) => {
                if n.shadow.is_some() {
                    // the model's read side effects, its value not compared (timing)
                    n.engine.mmio_read(off);
                }
                h.read32(off, &mut n.mem).unwrap_or(u32::MAX)
            }
            None => n.engine.mmio_read(off),
        }
    }

    fn write32(&mut self, off: u32, val: u32) {
        let mut n = self.0.borrow_mut();
        let n = &mut *n;
        match n.hdl.as_mut() {
            Some(h) => {
                let _ = h.write32(off, val, &mut n.mem);
                if let Some(s) = n.shadow.as_mut() {
                    n.engine.mmio_write(n.now, off, val, &mut s.dma());
                }
            }
            None => n.engine.mmio_write(n.now, off, val, &mut n.mem),
        }
    }

    fn bf_write(&mut self, _qpn: u32, wqe: &[u8; 128]) -> bool {
        let mut n = self.0.borrow_mut();
        let n = &mut *n;
        match n.hdl.as_mut() {
            Some(h) => {
                let _ = h.bf_write(wqe, &mut n.mem);
                if let Some(s) = n.shadow.as_mut() {
                    n.engine.bf_write(n.now, wqe, &mut s.dma());
                }
            }
            None => {
                n.engine.bf_write(n.now, wqe, &mut n.mem);
            }
        }
        true
    }

    fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf, DriverError> {
        let mut n = self.0.borrow_mut();
        let len_pg = (len.max(1) as u64).div_ceil(4096) * 4096;
        let iova = n.next_iova;
        n.next_iova += len_pg + 4096; // a guard page between buffers
        n.mem.map_window(iova, len_pg);
        if let Some(s) = n.shadow.as_mut() {
            s.map_window(iova, len_pg);
        }
        Ok(DmaBuf { iova, len, id: 0 })
    }

    fn dma_free(&mut self, buf: DmaBuf) {
        let mut n = self.0.borrow_mut();
        n.mem.unmap_window(buf.iova);
        if let Some(s) = n.shadow.as_mut() {
            s.unmap_window(buf.iova);
        }
    }

    fn mem_read(&self, buf: &DmaBuf, off: usize, out: &mut [u8]) {
        self.0.borrow().mem.read(buf.iova + off as u64, out);
    }

    fn mem_write(&mut self, buf: &DmaBuf, off: usize, data: &[u8]) {
        let mut n = self.0.borrow_mut();
        n.mem.write(buf.iova + off as u64, data);
        if let Some(s) = n.shadow.as_mut() {
            s.mem.write(buf.iova + off as u64, data);
        }
    }
}
