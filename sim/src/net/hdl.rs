//! The Verilated engine (`hdl/rtl/roce_engine.sv`) as a node of the simulator: its MAC
//! ports fed from and drained to frame queues at the line rate, its DMA ports served from
//! host memory (any [`Dma`]: the [`roce_model::engine::HostMem`] the engine model uses, or
//! an application's own memory) within a [`HostMemBudget`] (read latency, bandwidth per
//! direction, reads outstanding: the engine model enforces the same description), and its
//! AXI4-Lite register port driven by blocking MMIO reads and writes, so `roce-driver`
//! programs it exactly as it programs the model or a board.

use std::collections::VecDeque;
use std::path::PathBuf;

use roce_model::contract::records::DmaReq;
use roce_model::engine::regs::counter_field;
use roce_model::engine::{Counters, Dma, HostMemBudget, HostMemTimer, DMA_BEAT_BYTES};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model, Port};
use crate::SimError;

/// How the harness around the engine behaves.
#[derive(Clone, Debug)]
pub struct HdlConfig {
    /// Host memory behind the DMA ports: a read's first data beat comes `read_latency`
    /// cycles after its request at the earliest, read data beats are spread at
    /// `rd_bytes_per_cycle` over all tags, the read request port is not ready while
    /// `read_tags` reads are outstanding (their data not all in from host memory), and
    /// write data is taken at `wr_bytes_per_cycle`.
    pub host_mem: HostMemBudget,
    /// MAC line rate in bytes per cycle (100 Gb/s at 250 MHz: 50).
    pub line_bytes_per_cycle: f64,
    /// Dump an FST waveform here (needs the `fst` feature) ...
    pub fst: Option<PathBuf>,
    /// ... of the cycles in this range only.
    pub fst_window: std::ops::Range<u64>,
    /// Random backpressure: each cycle, each of MAC RX tvalid, MAC TX tready, DMA read
    /// request ready, DMA read data tvalid, DMA write request ready and DMA write data
    /// tready is held low with this probability (0: none; the MAC TX still paces frames at
    /// the line rate).
    pub stall: f64,
    /// Seed of the backpressure pattern.
    pub stall_seed: u64,
}

impl Default for HdlConfig {
    fn default() -> Self {
        HdlConfig {
            host_mem: HostMemBudget::default(),
            line_bytes_per_cycle: 50.0,
            fst: None,
            fst_window: 0..u64::MAX,
            stall: 0.0,
            stall_seed: 1,
        }
    }
}

/// A DMA read data beat waiting in the harness: (ready cycle, bytes, on the last beat the
/// read's sequence number ([`DmaReadTime`]), error).
type RdBeat = (u64, Vec<u8>, Option<u64>, bool);

struct P {
    rst: Port,
    axil: [Port; 16],
    rx: [Port; 6],
    tx: [Port; 6],
    rd_req: [Port; 4],
    rd_dat: [Port; 6],
    wr_req: [Port; 3],
    wr_dat: [Port; 5],
    link_up: Port,
    bf: [Port; 4],
}

/// When things happened at the engine's ports (cycles), for latency measurements
/// (`roce-sim latency`).
#[derive(Clone, Debug, Default)]
pub struct PortTimes {
    /// The last AXI4-Lite register write: (offset, the cycle both its address and data
    /// were taken).
    pub axil_write: Option<(u32, u64)>,
    /// The last inline doorbell: the cycle its first beat was taken.
    pub bf_write: Option<u64>,
    /// The last frame received: the cycles its first and last beats were taken.
    pub rx: Option<(u64, u64)>,
    /// The last frame transmitted: the cycles of its first and last beats.
    pub tx: Option<(u64, u64)>,
    /// Every DMA write since the log was last taken: address, bytes, the cycles of its
    /// first and last data beats.
    pub dma_writes: Vec<(u64, usize, u64, u64)>,
    /// Every DMA read since the log was last taken, in request order: the cycle its
    /// request was taken and the cycle its last data beat was (`None` while it is out).
    pub dma_reads: Vec<DmaReadTime>,
}

/// One DMA read's timing at the engine's ports ([`PortTimes::dma_reads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DmaReadTime {
    /// The cycle the request was taken.
    pub request: u64,
    /// The cycle its last data beat was taken.
    pub done: Option<u64>,
    seq: u64,
}

/// The Verilated engine with its surroundings.
pub struct HdlEngine {
    dut: Dut,
    p: P,
    cfg: HdlConfig,
    /// Cycles simulated.
    pub cycle: u64,
    rx_q: VecDeque<Vec<u8>>,
    rx_pos: usize,
    tx_cur: Vec<u8>,
    tx_start: Option<u64>,
    mac_free_at: u64,
    tx_out: VecDeque<Vec<u8>>,
    /// DMA read data per tag (the engine's clients), in request order: (ready cycle, beat,
    /// last, error).
    rd_q: Vec<VecDeque<RdBeat>>,
    /// The tag whose data is offered (kept while it is taken, else the next tag with data).
    rd_tag: usize,
    /// Host memory's read timing under `cfg.host_mem` (the engine model's own timer): the
    /// read-completion direction, and the reads outstanding. A read tag is free again once
    /// the read's data is all in from host memory, whether or not the engine has taken it
    /// (as a PCIe tag frees when its completion arrives; the harness keeps the data per tag
    /// until the engine takes it). `host.peak_reads`: most reads outstanding at once.
    pub host: HostMemTimer,
    /// Cycles the read request port was held not ready because every read tag was taken
    /// while the engine offered a request.
    pub rd_tag_stalls: u64,
    /// When the write direction is free, in byte-times (a cycle is `wr_bytes_per_cycle`
    /// of them): write data beats are taken while this is within the current cycle.
    wr_free_bt: u64,
    wr_reqs: VecDeque<(u64, usize)>,
    wr_data: Vec<u8>,
    wr_done: VecDeque<Vec<u8>>,
    /// DMA writes refused by host memory (a board's DMA engine reports them as FATAL).
    pub dma_write_errors: u64,
    /// Keep every DMA write (address, data) for [`HdlEngine::take_writes`] (cosim).
    pub log_writes: bool,
    writes: Vec<(u64, Vec<u8>)>,
    /// Port timing (see [`PortTimes`]; DMA writes and reads are logged while `log_times` is
    /// set).
    pub times: PortTimes,
    /// Log every DMA write's and read's timing in `times.dma_writes` and `times.dma_reads`.
    pub log_times: bool,
    /// The last DMA read's sequence number (every read has one, logged or not).
    rd_seq: u64,
    rx_first: u64,
    wr_first: Option<u64>,
    wr_beats: VecDeque<(u64, u64)>,
    tracing: bool,
    rng: ChaCha8Rng,
    w: Vec<u32>,
    /// The host-side handshakes as the clock edge of the last [`HdlEngine::cycle`] saw them.
    seen: HostSeen,
}

/// The engine's host-side handshake outputs, sampled in [`HdlEngine::cycle`] after every
/// input of the cycle is set: some depend combinationally on inputs the cycle sets (the
/// inline doorbell's `tready` on the DMA read data, through `roce_req`'s arrival test), so a
/// value read before them would not be what the clock edge sees.
#[derive(Clone, Copy, Debug, Default)]
struct HostSeen {
    bf_ready: bool,
    aw_ready: bool,
    w_ready: bool,
    b_valid: bool,
    ar_ready: bool,
    r_valid: bool,
    r_data: u32,
}

impl std::fmt::Debug for HdlEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HdlEngine").field("cycle", &self.cycle).finish()
    }
}

fn ports(d: &Dut) -> Result<P, SimError> {
    let p = |n: &str| d.port(n).ok_or_else(|| SimError::Config(format!("roce_engine has no port {n}")));
    Ok(P {
        rst: p("rst")?,
        axil: [
            p("s_axil_awaddr")?,
            p("s_axil_awvalid")?,
            p("s_axil_awready")?,
            p("s_axil_wdata")?,
            p("s_axil_wstrb")?,
            p("s_axil_wvalid")?,
            p("s_axil_wready")?,
            p("s_axil_bresp")?,
            p("s_axil_bvalid")?,
            p("s_axil_bready")?,
            p("s_axil_araddr")?,
            p("s_axil_arvalid")?,
            p("s_axil_arready")?,
            p("s_axil_rdata")?,
            p("s_axil_rvalid")?,
            p("s_axil_rready")?,
        ],
        rx: [
            p("s_axis_rx_tdata")?,
            p("s_axis_rx_tkeep")?,
            p("s_axis_rx_tvalid")?,
            p("s_axis_rx_tready")?,
            p("s_axis_rx_tlast")?,
            p("s_axis_rx_tuser")?,
        ],
        tx: [
            p("m_axis_tx_tdata")?,
            p("m_axis_tx_tkeep")?,
            p("m_axis_tx_tvalid")?,
            p("m_axis_tx_tready")?,
            p("m_axis_tx_tlast")?,
            p("m_axis_tx_tuser")?,
        ],
        rd_req: [p("m_dma_rd_valid")?, p("m_dma_rd_ready")?, p("m_dma_rd")?, p("m_dma_rd_tag")?],
        rd_dat: [
            p("s_dma_rd_tdata")?,
            p("s_dma_rd_tvalid")?,
            p("s_dma_rd_tready")?,
            p("s_dma_rd_tlast")?,
            p("s_dma_rd_tuser")?,
            p("s_dma_rd_tid")?,
        ],
        wr_req: [p("m_dma_wr_valid")?, p("m_dma_wr_ready")?, p("m_dma_wr")?],
        wr_dat: [
            p("m_axis_dma_wr_tdata")?,
            p("m_axis_dma_wr_tkeep")?,
            p("m_axis_dma_wr_tvalid")?,
            p("m_axis_dma_wr_tready")?,
            p("m_axis_dma_wr_tlast")?,
        ],
        link_up: p("status_link_up")?,
        bf: [p("s_axis_bf_tdata")?, p("s_axis_bf_tvalid")?, p("s_axis_bf_tready")?, p("s_axis_bf_tlast")?],
    })
}

impl HdlEngine {
    /// Instantiate and reset the engine.
    pub fn new(cfg: HdlConfig) -> Result<Self, SimError> {
        let mut dut = Dut::new(Model::Engine, cfg.fst.as_deref())?;
        let tracing = cfg.fst.is_none() || cfg.fst_window.contains(&0);
        let rng = ChaCha8Rng::seed_from_u64(cfg.stall_seed);
        if !tracing {
            dut.trace_gate(false);
        }
        let p = ports(&dut)?;
        let host = HostMemTimer::new(cfg.host_mem);
        let mut e = HdlEngine {
            dut,
            p,
            cfg,
            cycle: 0,
            rx_q: VecDeque::new(),
            rx_pos: 0,
            tx_cur: Vec::new(),
            tx_start: None,
            mac_free_at: 0,
            tx_out: VecDeque::new(),
            rd_q: Vec::new(),
            rd_tag: 0,
            host,
            rd_tag_stalls: 0,
            wr_free_bt: 0,
            wr_reqs: VecDeque::new(),
            wr_data: Vec::new(),
            wr_done: VecDeque::new(),
            dma_write_errors: 0,
            log_writes: false,
            writes: Vec::new(),
            times: PortTimes::default(),
            log_times: false,
            rd_seq: 0,
            rx_first: 0,
            wr_first: None,
            wr_beats: VecDeque::new(),
            tracing,
            rng,
            w: vec![0; 16],
            seen: HostSeen::default(),
        };
        for q in [e.p.axil[1], e.p.axil[5], e.p.axil[11], e.p.rx[2], e.p.rd_dat[1], e.p.bf[1]] {
            e.dut.set_u64(q, 0);
        }
        e.dut.set_u64(e.p.axil[4], 0xF);
        e.dut.set_u64(e.p.axil[9], 1);
        e.dut.set_u64(e.p.axil[15], 1);
        e.dut.set_u64(e.p.link_up, 1);
        e.dut.set_u64(e.p.rst, 1);
        for _ in 0..4 {
            e.dut.eval();
            e.dut.tick();
        }
        e.dut.set_u64(e.p.rst, 0);
        Ok(e)
    }

    /// Queue a frame for the MAC RX port.
    pub fn rx(&mut self, frame: &[u8]) {
        self.rx_q.push_back(frame.to_vec());
    }

    /// A frame the engine transmitted, if one is complete.
    pub fn tx(&mut self) -> Option<Vec<u8>> {
        self.tx_out.pop_front()
    }

    /// Whether the engine has frames, DMA reads or writes in progress in the harness.
    pub fn busy(&self) -> bool {
        !self.rx_q.is_empty()
            || self.rd_q.iter().any(|q| !q.is_empty())
            || !self.wr_reqs.is_empty()
            || !self.tx_cur.is_empty()
    }

    /// The DMA writes since the last call (with [`HdlEngine::log_writes`]).
    pub fn take_writes(&mut self) -> Vec<(u64, Vec<u8>)> {
        std::mem::take(&mut self.writes)
    }

    /// One clock cycle with every port serviced, host memory `mem` behind the DMA ports
    /// (AXI4-Lite inputs as set by the caller).
    pub fn cycle(&mut self, mem: &mut impl Dma) {
        let now = self.cycle;
        if self.cfg.fst.is_some() && self.tracing != self.cfg.fst_window.contains(&now) {
            self.tracing = !self.tracing;
            self.dut.trace_gate(self.tracing);
        }
        let stall = self.cfg.stall;
        let mut go = [true; 6];
        if stall > 0.0 {
            for g in &mut go {
                *g = !self.rng.random_bool(stall);
            }
        }
        let [rx_go, tx_go, rdq_go, rdd_go, wrq_go, wrd_go] = go;
        let p = &self.p;
        // MAC RX: the next beat of the frame at the head of the queue
        let rx_valid = !self.rx_q.is_empty() && rx_go;
        self.dut.set_u64(p.rx[2], u64::from(rx_valid));
        if let Some(f) = self.rx_q.front() {
            let end = (self.rx_pos + 64).min(f.len());
            let beat = &f[self.rx_pos..end];
            pack_bytes(beat, &mut self.w);
            self.dut.set(p.rx[0], &self.w);
            let n = beat.len();
            self.dut.set_u64(p.rx[1], if n >= 64 { u64::MAX } else { (1u64 << n) - 1 });
            self.dut.set_u64(p.rx[4], u64::from(end == f.len()));
            self.dut.set_u64(p.rx[5], 0);
        }
        // MAC TX: busy while the previous frame is on the wire
        let tx_ready = (self.tx_start.is_some() || now >= self.mac_free_at) && tx_go;
        self.dut.set_u64(p.tx[3], u64::from(tx_ready));
        // DMA read data: per tag in request order, one beat per cycle; a tag whose client
        // does not take its beat lets the others pass (as a DMA engine's per-tag completions)
        let due = |q: &VecDeque<RdBeat>| q.front().is_some_and(|b| b.0 <= now);
        let nt = self.rd_q.len();
        if nt > 0 && !due(&self.rd_q[self.rd_tag % nt]) {
            if let Some(k) = (1..=nt).map(|k| (self.rd_tag + k) % nt).find(|&t| due(&self.rd_q[t])) {
                self.rd_tag = k;
            }
        }
        let rd_now = nt > 0 && due(&self.rd_q[self.rd_tag % nt]) && rdd_go;
        self.dut.set_u64(p.rd_dat[1], u64::from(rd_now));
        if rd_now {
            let tag = self.rd_tag % nt;
            if let Some((_, b, last, err)) = self.rd_q[tag].front() {
                pack_bytes(b, &mut self.w);
                self.dut.set(p.rd_dat[0], &self.w);
                self.dut.set_u64(p.rd_dat[3], u64::from(last.is_some()));
                self.dut.set_u64(p.rd_dat[4], u64::from(*err));
                self.dut.set_u64(p.rd_dat[5], tag as u64);
            }
        }
        // host memory's budget: a read tag free, the write direction free this cycle
        let hm = self.cfg.host_mem;
        let tag_free = self.host.tag_free(now);
        let rdq_ready = rdq_go && tag_free;
        let wbpc = hm.wr_bytes_per_cycle.clamp(1, DMA_BEAT_BYTES);
        let wrd_ready = wrd_go && self.wr_free_bt < (now + 1) * wbpc;
        self.dut.set_u64(p.rd_req[1], u64::from(rdq_ready));
        self.dut.set_u64(p.wr_req[1], u64::from(wrq_go));
        self.dut.set_u64(p.wr_dat[3], u64::from(wrd_ready));
        self.dut.eval();
        let a = &p.axil;
        self.seen = HostSeen {
            bf_ready: self.dut.get_bool(p.bf[2]),
            aw_ready: self.dut.get_bool(a[2]),
            w_ready: self.dut.get_bool(a[6]),
            b_valid: self.dut.get_bool(a[8]),
            ar_ready: self.dut.get_bool(a[12]),
            r_valid: self.dut.get_bool(a[14]),
            r_data: self.dut.get_u64(a[13]) as u32,
        };

        if rx_valid && self.dut.get_bool(p.rx[3]) {
            let len = self.rx_q.front().map_or(0, Vec::len);
            if self.rx_pos == 0 {
                self.rx_first = now;
            }
            self.rx_pos += 64;
            if self.rx_pos >= len {
                self.times.rx = Some((self.rx_first, now));
                self.rx_pos = 0;
                self.rx_q.pop_front();
            }
        }
        if tx_ready && self.dut.get_bool(p.tx[2]) {
            if self.tx_start.is_none() {
                self.tx_start = Some(now);
            }
            self.dut.get(p.tx[0], &mut self.w);
            let mut b = [0u8; 64];
            unpack_bytes(&self.w, &mut b);
            let n = self.dut.get_u64(p.tx[1]).count_ones() as usize;
            self.tx_cur.extend_from_slice(&b[..n]);
            if self.dut.get_bool(p.tx[4]) {
                let f = std::mem::take(&mut self.tx_cur);
                let start = self.tx_start.take().unwrap_or(now);
                self.times.tx = Some((start, now));
                self.mac_free_at = start + ((f.len() + 24) as f64 / self.cfg.line_bytes_per_cycle).ceil() as u64;
                if !self.dut.get_bool(p.tx[5]) {
                    self.tx_out.push_back(f);
                }
            }
        }
        if rd_now {
            let tag = self.rd_tag % nt;
            if self.dut.get_bool(p.rd_dat[2]) {
                if let Some(seq) = self.rd_q[tag].pop_front().and_then(|b| b.2) {
                    if let Some(r) = self.times.dma_reads.iter_mut().rev().find(|r| r.seq == seq) {
                        r.done = Some(now);
                    }
                }
            } else {
                // not taken: offer another tag's data next cycle
                self.rd_tag = tag + 1;
            }
        }
        if rdq_go && !tag_free && self.dut.get_bool(p.rd_req[0]) {
            self.rd_tag_stalls += 1;
        }
        if rdq_ready && self.dut.get_bool(p.rd_req[0]) {
            let r: DmaReq = self.dut.get_bundle(p.rd_req[2]);
            let (addr, len) = (r.addr, usize::from(r.len));
            let tag = self.dut.get_u64(p.rd_req[3]);
            let mut buf = vec![0u8; len];
            let err = mem.dma_read(addr, &mut buf).is_err();
            if err {
                buf.fill(0);
            }
            // the read occupies the read-completion direction for its cycles at the
            // budget's bandwidth, its beats spread over them (the last in the last cycle)
            let done = self.host.read(now, len as u64);
            let nb = len.div_ceil(64).max(1);
            let occ = hm.read_cycles(len as u64);
            let start = done - occ;
            let rbpc = hm.rd_bytes_per_cycle.clamp(1, DMA_BEAT_BYTES);
            let tag = tag as usize;
            if self.rd_q.len() <= tag {
                self.rd_q.resize_with(tag + 1, VecDeque::new);
            }
            // (the last beat carries the read's number: a logged read finds its own entry
            // even when the log was taken while it was out)
            self.rd_seq += 1;
            if self.log_times {
                self.times.dma_reads.push(DmaReadTime { request: now, done: None, seq: self.rd_seq });
            }
            for i in 0..nb {
                let c = buf.get(64 * i..(64 * i + 64).min(len)).unwrap_or(&[]).to_vec();
                let at = if i + 1 == nb { start + occ - 1 } else { start + 64 * i as u64 / rbpc };
                self.rd_q[tag].push_back((at, c, (i + 1 == nb).then_some(self.rd_seq), err));
            }
        }
        if wrq_go && self.dut.get_bool(p.wr_req[0]) {
            let w: DmaReq = self.dut.get_bundle(p.wr_req[2]);
            self.wr_reqs.push_back((w.addr, usize::from(w.len)));
        }
        if wrd_ready && self.dut.get_bool(p.wr_dat[2]) {
            self.dut.get(p.wr_dat[0], &mut self.w);
            let mut b = [0u8; 64];
            unpack_bytes(&self.w, &mut b);
            let n = self.dut.get_u64(p.wr_dat[1]).count_ones() as usize;
            self.wr_data.extend_from_slice(&b[..n]);
            let first = *self.wr_first.get_or_insert(now);
            // the beat's bytes take the write direction; a write ends on a whole cycle
            self.wr_free_bt = self.wr_free_bt.max(now * wbpc) + n as u64;
            if self.dut.get_bool(p.wr_dat[4]) {
                self.wr_free_bt = self.wr_free_bt.div_ceil(wbpc) * wbpc;
                self.wr_done.push_back(std::mem::take(&mut self.wr_data));
                self.wr_beats.push_back((first, now));
                self.wr_first = None;
            }
        }
        while !self.wr_reqs.is_empty() && !self.wr_done.is_empty() {
            let (Some((addr, len)), Some(d)) = (self.wr_reqs.pop_front(), self.wr_done.pop_front()) else { break };
            let d = &d[..len.min(d.len())];
            let (first, last) = self.wr_beats.pop_front().unwrap_or((now, now));
            if self.log_times {
                self.times.dma_writes.push((addr, d.len(), first, last));
            }
            if mem.dma_write(addr, d).is_err() {
                self.dma_write_errors += 1;
            } else if self.log_writes {
                self.writes.push((addr, d.to_vec()));
            }
        }
        self.dut.tick();
        self.cycle += 1;
    }

    /// Run until cycle `t`.
    pub fn run_to(&mut self, t: u64, mem: &mut impl Dma) {
        while self.cycle < t {
            self.cycle(mem);
        }
    }

    /// The event counters, read back through their registers.
    pub fn counters(&mut self, mem: &mut impl Dma) -> Result<Counters, SimError> {
        let mut c = Counters::default();
        for off in (0x400u32..0x500).step_by(8) {
            let lo = self.read32(off, mem)?;
            let hi = self.read32(off + 4, mem)?;
            if let Some(f) = counter_field(&mut c, off) {
                *f = u64::from(hi) << 32 | u64::from(lo);
            }
        }
        Ok(c)
    }

    /// A blocking 32-bit register write (AXI4-Lite), the engine running meanwhile.
    pub fn write32(&mut self, off: u32, val: u32, mem: &mut impl Dma) -> Result<(), SimError> {
        let a = self.p.axil;
        self.dut.set_u64(a[0], u64::from(off));
        self.dut.set_u64(a[3], u64::from(val));
        let (mut aw, mut w) = (false, false);
        for _ in 0..1000 {
            self.dut.set_u64(a[1], u64::from(!aw));
            self.dut.set_u64(a[5], u64::from(!w));
            self.cycle(mem);
            let (awr, wr, b) = (self.seen.aw_ready, self.seen.w_ready, self.seen.b_valid);
            if (aw || awr) && (w || wr) && !(aw && w) {
                self.times.axil_write = Some((off, self.cycle - 1));
            }
            aw |= awr;
            w |= wr;
            if b {
                self.dut.set_u64(a[1], 0);
                self.dut.set_u64(a[5], 0);
                return Ok(());
            }
        }
        Err(SimError::Config(format!("roce_engine: register write at {off:#x} not answered")))
    }

    /// A blocking write of one SQ WQE image (with its `bf_db`) to the BlueFlame window: its
    /// two 64-byte halves on `s_axis_bf`, the engine running meanwhile.
    pub fn bf_write(&mut self, wqe: &[u8; 128], mem: &mut impl Dma) -> Result<(), SimError> {
        let b = self.p.bf;
        for half in 0..2 {
            self.dut.set(b[0], &crate::cosim::words_of(&wqe[64 * half..64 * half + 64]));
            self.dut.set_u64(b[3], u64::from(half == 1));
            self.dut.set_u64(b[1], 1);
            let mut taken = false;
            for _ in 0..1000 {
                self.cycle(mem);
                taken = self.seen.bf_ready;
                if taken && half == 0 {
                    self.times.bf_write = Some(self.cycle - 1);
                }
                if taken {
                    break;
                }
            }
            self.dut.set_u64(b[1], 0);
            if !taken {
                return Err(SimError::Config("roce_engine: inline doorbell not taken".into()));
            }
        }
        Ok(())
    }

    /// A blocking 32-bit register read (AXI4-Lite), the engine running meanwhile.
    pub fn read32(&mut self, off: u32, mem: &mut impl Dma) -> Result<u32, SimError> {
        let a = self.p.axil;
        self.dut.set_u64(a[10], u64::from(off));
        let mut ar = false;
        for _ in 0..1000 {
            self.dut.set_u64(a[11], u64::from(!ar));
            self.cycle(mem);
            ar |= self.seen.ar_ready;
            let (rv, data) = (self.seen.r_valid, self.seen.r_data);
            if rv {
                self.dut.set_u64(a[11], 0);
                return Ok(data);
            }
        }
        Err(SimError::Config(format!("roce_engine: register read at {off:#x} not answered")))
    }
}
