//! `roce-sim`: run the RoCEv2 engine's HDL (Verilated) and model side by side.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use roce_model::engine::{HostMemBudget, Profile};
use roce_sim::cosim::icrc::icrc_lockstep;
use roce_sim::stream::Traffic;
use roce_sim::{pcapio, SimError};

#[derive(Parser)]
#[command(
    name = "roce-sim",
    version,
    about = "Cosimulation of the RoCEv2 offload engine: Verilated HDL and Rust model on the same stimulus"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check the ICRC of every RoCEv2 packet of a capture in the model and the HDL.
    Icrc(IcrcArgs),
    /// A short RC exchange (SEND, WRITE, READ; IPv4 and IPv6+VLAN) sealed by the HDL TX ICRC
    /// block, corrupted on the link, and checked by the HDL RX block and the model.
    Demo(DemoArgs),
    /// Two engines over an impaired link run a workload; every byte is verified.
    Transfer(TransferArgs),
    /// Goodput against message size (and message rate against QP count) over a clean
    /// 100 Gb/s link, per engine and MTU, from simulated cycles: a table, and optionally CSV
    /// and an SVG plot.
    Sweep(SweepArgs),
    /// Latency of an idle engine in cycles: doorbell to the request's first byte on the wire,
    /// and a packet's first byte in to its payload's DMA write, for the model (its estimate)
    /// and the Verilated engine (measured at its ports); or (`--op pingpong`) post to
    /// completion both ways and half the round trip.
    Latency(LatencyArgs),
}

/// Host memory behind both nodes' DMA (the engine model and the Verilated engine's harness
/// enforce the same budget).
#[derive(Args)]
struct HostMemArgs {
    /// PCIe bandwidth per direction in GB/s (gigabytes per second; 13 = Gen3 x16 as measured
    /// on Alveo boards, 52 bytes per 250 MHz cycle). 0: no bandwidth limit (the DMA ports'
    /// 64 bytes per cycle) and, unless --read-tags is given, no read tag limit.
    #[arg(long, default_value_t = HostMemBudget::PCIE_GEN3_X16_GBYTES)]
    pcie_gbps: f64,
    /// Cycles from a DMA read request to its first data.
    #[arg(long, default_value_t = HostMemBudget::READ_LATENCY)]
    dma_latency: u64,
    /// DMA reads outstanding at most, 0 for no limit [default: 32, what the Alveo U250
    /// build's XDMA AXI slave bridge takes; none with --pcie-gbps 0].
    #[arg(long)]
    read_tags: Option<u32>,
}

impl HostMemArgs {
    /// The budget at the engines' 250 MHz.
    fn budget(&self) -> Result<HostMemBudget, SimError> {
        let tags = self.read_tags.unwrap_or(if self.pcie_gbps == 0.0 { 0 } else { HostMemBudget::READ_TAGS });
        Ok(HostMemBudget::pcie(self.pcie_gbps, 250.0, self.dma_latency, tags)?)
    }
}

#[derive(Args)]
struct LatencyArgs {
    /// Operation (read: wire to DMA is the completer placing the first READ response;
    /// pingpong: SEND from A, B answers, post to completion on each side).
    #[arg(long, value_enum, default_value = "write")]
    op: LatOpArg,
    /// Engines (each on both nodes): model, hdl.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "model,hdl")]
    engine: Vec<EngineArg>,
    /// Path MTU.
    #[arg(long, default_value_t = 4096)]
    mtu: u32,
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,1024,4096")]
    sizes: Vec<usize>,
    /// Messages per size (min / median / max are reported).
    #[arg(long, default_value_t = 8)]
    samples: u32,
    /// One-way link latency in nanoseconds (pingpong).
    #[arg(long, default_value_t = 1000)]
    link_ns: u64,
    /// Post the data inline through the inline doorbell (the BlueFlame window): SEND, WRITE
    /// and pingpong, sizes up to 64 bytes.
    #[arg(long)]
    inline: bool,
    #[command(flatten)]
    host: HostMemArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum LatOpArg {
    Send,
    Write,
    Read,
    Pingpong,
}

#[derive(Args)]
struct SweepArgs {
    /// Operation.
    #[arg(long, value_enum, default_value = "write")]
    op: OpArg,
    /// Engines to measure: model, hdl (node B, the responder, Verilated), hdl2 (both nodes).
    #[arg(long, value_enum, value_delimiter = ',', default_value = "model,hdl")]
    engine: Vec<EngineArg>,
    /// Path MTUs.
    #[arg(long, value_delimiter = ',', default_value = "1024,4096")]
    mtu: Vec<u32>,
    /// Message sizes in bytes.
    #[arg(long, value_delimiter = ',', default_value = "64,256,1024,4096,16384,65536,262144,1048576")]
    sizes: Vec<usize>,
    /// QP counts (messages round robin over the QPs, as `transfer --qps`).
    #[arg(long, value_delimiter = ',', default_value = "1")]
    qps: Vec<usize>,
    /// Bytes moved per point (messages = bytes / size, 8 to 4096; with more than one QP at
    /// least 64 per QP).
    #[arg(long, default_value_t = 8 << 20)]
    bytes: u64,
    /// Messages in flight on each QP.
    #[arg(long, default_value_t = 16)]
    depth: usize,
    /// Write the points as CSV.
    #[arg(long, value_name = "OUT.csv")]
    csv: Option<PathBuf>,
    /// Plot as SVG: goodput against size, or with more than one QP count, the message rate
    /// against the QP count.
    #[arg(long, value_name = "OUT.svg")]
    svg: Option<PathBuf>,
    #[command(flatten)]
    host: HostMemArgs,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum OpArg {
    Send,
    Write,
    Read,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum EngineArg {
    /// Both nodes run the engine model.
    Model,
    /// Node B (the target of the requests: responder, READ source, SEND receiver) runs the
    /// Verilated HDL engine; node A (the requester) runs the model.
    Hdl,
    /// Both nodes run the Verilated HDL engine: A as the requester (roce_req, roce_comp),
    /// B as the responder.
    Hdl2,
    /// Node B runs the Verilated engine and the model side by side on identical stimulus;
    /// every emitted frame, DMA write and CQE is compared and the run stops at the first
    /// divergence (exit status 1), reported with cycle, block and both values.
    Cosim,
    /// As `cosim`, on both nodes: A (the HDL requester) and B each run the model beside
    /// the Verilated engine. (A requester's packets depend on when responses arrive, so
    /// over lossy links a divergence at A can be timing rather than a defect.)
    Cosim2,
    /// Node A (the requester: roce_req, roce_comp) runs the Verilated engine, node B the
    /// model (with --peer rxe: the requester against Soft-RoCE's responder).
    HdlReq,
    /// As `hdl-req`, with the model beside the Verilated engine on node A (cosim).
    CosimReq,
}

/// Whose choices the model makes where the specification leaves room.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum PeerArg {
    /// This engine's (the HDL's).
    Engine,
    /// Linux Soft-RoCE's (rdma_rxe): AckReq every 65 packets and on a message's last, 129
    /// packets outstanding, one ACK per AckReq packet and per duplicate (no coalescing).
    Rxe,
}

#[derive(Args)]
struct TransferArgs {
    /// Operation.
    #[arg(long, value_enum, default_value = "write")]
    op: OpArg,
    /// Which engine the nodes run.
    #[arg(long, value_enum, default_value = "model")]
    engine: EngineArg,
    /// Message size in bytes.
    #[arg(long, default_value_t = 65536)]
    size: usize,
    /// Number of messages.
    #[arg(long, default_value_t = 256)]
    messages: u64,
    /// Path MTU: 256, 512, 1024, 2048 or 4096.
    #[arg(long, default_value_t = 4096)]
    mtu: u32,
    /// Messages in flight on each QP (its send and receive queue size).
    #[arg(long, default_value_t = 16)]
    depth: usize,
    /// QPs connected between A and B: message i goes on QP i mod N, each QP with its own
    /// buffers (at most the engine's QPs less QPNs 0 and 1: 1022 on the engine as built).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    qps: u16,
    /// Frame loss probability on each link direction.
    #[arg(long, default_value_t = 0.0, value_parser = probability0)]
    loss: f64,
    /// Probability a frame is delayed (reordered).
    #[arg(long, default_value_t = 0.0, value_parser = probability0)]
    reorder: f64,
    /// Probability a frame is duplicated.
    #[arg(long, default_value_t = 0.0, value_parser = probability0)]
    dup: f64,
    /// Probability a frame has a bit flipped.
    #[arg(long, default_value_t = 0.0, value_parser = probability0)]
    corrupt: f64,
    /// Probability an ECN-capable frame is CE-marked.
    #[arg(long, default_value_t = 0.0, value_parser = probability0)]
    ecn: f64,
    /// One-way link latency in nanoseconds.
    #[arg(long, default_value_t = 1000)]
    latency_ns: u64,
    /// RoCEv2 over IPv6.
    #[arg(long)]
    ipv6: bool,
    /// RoCEv1 (Ethertype 0x8915 with a GRH) instead of RoCEv2.
    #[arg(long)]
    rocev1: bool,
    /// With --engine cosim: on a divergence, run again and write an FST waveform of the
    /// cycles around it here (needs `--features fst`).
    #[arg(long, value_name = "OUT.fst")]
    fst: Option<PathBuf>,
    /// Cycles before and after the divergence in the FST window.
    #[arg(long, default_value_t = 2000)]
    fst_window: u64,
    /// HDL nodes: probability per cycle that each MAC and DMA port of the engine's harness
    /// stalls (tvalid/tready/ready low): random backpressure on every port.
    #[arg(long, default_value_t = 0.0, value_parser = probability0)]
    stall: f64,
    /// Cosim self-check (--op read --engine cosim): flip a bit of the model's copy of byte
    /// OFFSET of B's READ source, so the run must report a divergence at roce_rd_rsp.
    #[arg(long, value_name = "OFFSET")]
    cosim_self_check: Option<u64>,
    /// Seed of the data and the link impairments.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write every frame on the link to a pcap.
    #[arg(long, value_name = "OUT.pcap")]
    pcap: Option<PathBuf>,
    /// Whose choices the nodes that run the model alone make: `rxe` makes them a stand-in
    /// for Linux Soft-RoCE (the Verilated engine, and the model beside it, stay the engine).
    #[arg(long, value_enum, default_value = "engine")]
    peer: PeerArg,
    /// Local ACK timeout of both QPs (4.096 us x 2^N, 1..31).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u8).range(1..32))]
    timeout: u8,
    /// Post the data inline in the WQE (SEND and WRITE of at most 64 bytes): each post goes
    /// through the inline doorbell, and the engine reads neither WQE nor payload.
    #[arg(long)]
    inline: bool,
    /// Selective signaling: every N-th message of a QP (and its last) asks for a completion,
    /// as perftest's --cq-mod (1..=depth).
    #[arg(long, default_value_t = 1)]
    signal_every: u64,
    #[command(flatten)]
    host: HostMemArgs,
}

#[derive(Args)]
struct DemoArgs {
    /// HDL datapath width in bits.
    #[arg(long, default_value_t = 512, value_parser = data_width)]
    data_width: usize,
    /// Frames the link corrupts (one flipped bit each).
    #[arg(long, default_value_t = 2)]
    corrupt: usize,
    /// Seed choosing the corrupted frames and bits.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Write the frames as they crossed the link.
    #[arg(long, value_name = "OUT.pcap")]
    pcap: Option<std::path::PathBuf>,
}

#[derive(Args)]
struct HandshakeArgs {
    /// Probability per cycle that the source offers its next beat (1 = back to back).
    #[arg(long, default_value_t = 1.0, value_parser = probability)]
    valid_p: f64,
    /// Probability per cycle that the sink is ready (1 = no backpressure).
    #[arg(long, default_value_t = 1.0, value_parser = probability)]
    ready_p: f64,
    /// Seed of the handshake randomness.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

impl HandshakeArgs {
    fn traffic(&self) -> Traffic {
        Traffic { valid_p: self.valid_p, ready_p: self.ready_p, seed: self.seed }
    }
}

#[derive(Args)]
struct IcrcArgs {
    /// Capture to read (classic pcap, Ethernet, no FCS).
    #[arg(long)]
    pcap: PathBuf,
    /// Also write the capture with every RoCEv2 ICRC recomputed by the HDL (insert mode).
    #[arg(long, value_name = "OUT.pcap")]
    fix: Option<PathBuf>,
    /// HDL datapath width in bits.
    #[arg(long, default_value_t = 512, value_parser = data_width)]
    data_width: usize,
    /// Dump an FST waveform of the check run (needs the `fst` build feature).
    #[arg(long, value_name = "FILE.fst")]
    fst: Option<PathBuf>,
    #[command(flatten)]
    hs: HandshakeArgs,
}

fn data_width(s: &str) -> Result<usize, String> {
    match s {
        "64" | "256" | "512" => Ok(s.parse().unwrap_or(512)),
        _ => Err(format!("{s} is not one of the HDL's datapath widths 64, 256, 512")),
    }
}

fn probability0(s: &str) -> Result<f64, String> {
    let p: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{p} is not a probability in [0, 1]"))
    }
}

fn probability(s: &str) -> Result<f64, String> {
    let p: f64 = s.parse().map_err(|_| format!("`{s}` is not a number"))?;
    if p > 0.0 && p <= 1.0 {
        Ok(p)
    } else {
        Err(format!("{p} is not a probability in (0, 1]"))
    }
}

/// Opcode, destination QP and PSN of a frame's BTH, when the frame has one (read straight
/// from the bytes, so packets with a bad ICRC or an unknown opcode are shown too).
fn bth_fields(frame: &[u8]) -> Option<(u8, u32, u32)> {
    let l = roce_model::icrc::locate(frame).ok()?;
    let b = frame.get(l.bth_offset()..l.bth_offset() + 12)?;
    let be24 = |x: &[u8]| u32::from(x[0]) << 16 | u32::from(x[1]) << 8 | u32::from(x[2]);
    Some((b[0], be24(&b[5..8]), be24(&b[9..12])))
}

fn opcode_name(op: u8) -> &'static str {
    roce_model::wire::Opcode::from_u8(op).map_or("UNKNOWN", |o| o.name())
}

fn run_icrc(a: &IcrcArgs, out: &mut impl Write) -> Result<u64, SimError> {
    let io = |e| SimError::Io("stdout".into(), e);
    let caps = pcapio::read(&a.pcap)?;
    let frames: Vec<(Vec<u8>, bool)> = caps.iter().map(|c| (c.data.clone(), false)).collect();
    let t = a.hs.traffic();
    let rep = icrc_lockstep(a.data_width, false, &frames, &t, a.fst.as_deref())?;
    let (mut n, mut good, mut bad, mut skipped) = (0u64, 0u64, 0u64, 0u64);
    let mut disagree = rep.divergences.len() as u64;
    for (i, r) in rep.frames.iter().enumerate() {
        if !r.hdl.roce && !r.model.roce {
            skipped += 1;
            continue;
        }
        n += 1;
        let verdict = if r.hdl.error { "bad" } else { "ok" };
        if r.hdl.error {
            bad += 1;
        } else {
            good += 1;
        }
        let fields = match bth_fields(&caps[i].data) {
            Some((op, qp, psn)) => {
                format!("opcode {op:#04x} {:<28} dqp {qp:#08x} psn {psn}", opcode_name(op))
            }
            None => "opcode - dqp - psn - (malformed)".to_string(),
        };
        let note = if r.agree { "" } else { "  HDL/model DISAGREE" };
        writeln!(out, "{i:6} {verdict:3}  {fields}{note}").map_err(io)?;
    }
    if let Some(out) = &a.fix {
        let fixed = icrc_lockstep(a.data_width, true, &frames, &t, None)?;
        disagree += fixed.divergences.len() as u64;
        for d in fixed.divergences.iter().take(5) {
            eprintln!("insert divergence: {d}");
        }
        let caps_out: Vec<pcapio::Captured> = caps
            .iter()
            .zip(&fixed.frames)
            .map(|(c, f)| pcapio::Captured { data: f.hdl_frame.clone(), ..c.clone() })
            .collect();
        pcapio::write(out, &caps_out)?;
    }
    for d in rep.divergences.iter().take(5) {
        eprintln!("check divergence: {d}");
    }
    writeln!(out, "{n} packets, {good} ok, {bad} bad, {disagree} disagreements ({skipped} non-RoCE frames skipped)")
        .map_err(io)?;
    Ok(disagree)
}

fn run_demo(a: &DemoArgs, out: &mut impl Write) -> Result<u64, SimError> {
    let io = |e| SimError::Io("stdout".into(), e);
    let r = roce_sim::cmd::demo::run(a.data_width, a.corrupt, a.seed)?;
    writeln!(out, "RoCEv2 RC exchange through roce_icrc at DATA_W={} (TX insert -> link -> RX check):", a.data_width)
        .map_err(io)?;
    for (i, (dir, op, psn, len, ok)) in r.lines.iter().enumerate() {
        let mark = if r.corrupted.contains(&i) { "  <- corrupted on the link" } else { "" };
        let v = if *ok { "ok" } else { "bad" };
        writeln!(out, "{i:4} {dir} {op:<28} psn {psn:#08x} {len:5} B  {v}{mark}").map_err(io)?;
    }
    let flagged: Vec<usize> = r.lines.iter().enumerate().filter(|(_, l)| !l.4).map(|(i, _)| i).collect();
    let missed = usize::from(flagged != r.corrupted);
    writeln!(
        out,
        "{} frames, {} bytes, {} ok, {} bad ({} corrupted), {} disagreements, RX {} cycles ({:.1} bytes/cycle)",
        r.frames,
        r.bytes,
        r.ok,
        r.bad,
        r.corrupted.len(),
        r.disagreements,
        r.rx_cycles,
        r.bytes as f64 / r.rx_cycles.max(1) as f64
    )
    .map_err(io)?;
    if let Some(p) = &a.pcap {
        let caps: Vec<pcapio::Captured> = r
            .wire
            .iter()
            .enumerate()
            .map(|(i, f)| pcapio::Captured {
                ts: std::time::Duration::from_micros(i as u64),
                orig_len: f.len() as u32,
                data: f.clone(),
            })
            .collect();
        pcapio::write(p, &caps)?;
    }
    if missed != 0 {
        eprintln!("roce-sim: the RX check flagged {flagged:?} but the link corrupted {:?}", r.corrupted);
    }
    Ok(r.disagreements as u64 + missed as u64)
}

fn run_transfer(a: &TransferArgs, out: &mut impl Write) -> Result<u64, SimError> {
    use roce_sim::cmd::transfer::{self, Op, TransferConfig};
    use roce_sim::net::fabric::LinkConfig;
    use roce_sim::net::hdl::HdlConfig;
    let io = |e| SimError::Io("stdout".into(), e);
    let clock_mhz = 250.0;
    let cfg = TransferConfig {
        op: match a.op {
            OpArg::Send => Op::Send,
            OpArg::Write => Op::Write,
            OpArg::Read => Op::Read,
        },
        size: a.size,
        messages: a.messages,
        mtu: a.mtu,
        depth: a.depth,
        qps: usize::from(a.qps),
        link: LinkConfig {
            latency: (a.latency_ns as f64 * clock_mhz / 1000.0) as u64,
            loss: a.loss,
            reorder: a.reorder,
            dup: a.dup,
            corrupt: a.corrupt,
            ecn: a.ecn,
            ..LinkConfig::default()
        },
        seed: a.seed,
        ipv6: a.ipv6,
        rocev1: a.rocev1,
        capture: a.pcap.is_some(),
        hdl: match a.engine {
            EngineArg::Model => [false, false],
            EngineArg::Hdl | EngineArg::Cosim => [false, true],
            EngineArg::Hdl2 | EngineArg::Cosim2 => [true, true],
            EngineArg::HdlReq | EngineArg::CosimReq => [true, false],
        },
        cosim: matches!(a.engine, EngineArg::Cosim | EngineArg::Cosim2 | EngineArg::CosimReq).then(HdlConfig::default),
        peer: match a.peer {
            PeerArg::Engine => Profile::Engine,
            PeerArg::Rxe => Profile::Rxe,
        },
        timeout: a.timeout,
        model_fault: a.cosim_self_check,
        stall: a.stall,
        host_mem: a.host.budget()?,
        inline: a.inline,
        signal_every: a.signal_every,
        ..TransferConfig::default()
    };
    if a.fst.is_some() && !matches!(a.engine, EngineArg::Cosim | EngineArg::Cosim2 | EngineArg::CosimReq) {
        return Err(SimError::Config("--fst is for --engine cosim (the window around a divergence)".into()));
    }
    let bar = indicatif::ProgressBar::new(a.messages);
    bar.set_style(
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} messages ({elapsed})")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let r = transfer::run(&cfg, |done, _| bar.set_position(done))?;
    bar.finish_and_clear();
    let c = &r.counters;
    let naks = |f: fn(&roce_model::engine::Counters) -> u64| f(&c[0]) + f(&c[1]);
    writeln!(
        out,
        "transfer: op {:?}, {} x {} B, MTU {}, depth {}, loss {} reorder {} dup {} corrupt {} ecn {}, seed {}",
        cfg.op, a.messages, a.size, a.mtu, a.depth, a.loss, a.reorder, a.dup, a.corrupt, a.ecn, a.seed
    )
    .map_err(io)?;
    if a.qps > 1 {
        writeln!(out, "  QPs              {} (message i on QP i mod {}, depth {} each)", a.qps, a.qps, a.depth)
            .map_err(io)?;
    }
    writeln!(out, "  {}", cfg.host_mem.describe(r.clock_mhz)).map_err(io)?;
    let kind = |h: bool| match (h, cfg.cosim.is_some()) {
        (false, _) if cfg.peer == Profile::Rxe => "model (rxe profile)",
        (false, _) => "model",
        (true, false) => "Verilated HDL",
        (true, true) => "Verilated HDL + model (cosim)",
    };
    writeln!(out, "  engines          A (requester) {}, B (responder) {}", kind(cfg.hdl[0]), kind(cfg.hdl[1]))
        .map_err(io)?;
    writeln!(out, "  completions      {} of {}", r.completed, a.messages).map_err(io)?;
    writeln!(out, "  bytes verified   {}", r.bytes_verified).map_err(io)?;
    writeln!(out, "  mismatches       {}", r.mismatches).map_err(io)?;
    writeln!(out, "  lost             {}", r.lost).map_err(io)?;
    if let Some(c) = r.stalled {
        writeln!(out, "  stalled          nothing completed for {c} cycles; the run stopped").map_err(io)?;
    }
    writeln!(out, "  duplicated       {}", r.duplicated).map_err(io)?;
    if a.qps > 1 || r.out_of_order > 0 {
        writeln!(out, "  out of order     {}", r.out_of_order).map_err(io)?;
    }
    writeln!(
        out,
        "  error completions {}{}",
        r.errors,
        r.first_error.map(|e| format!(" (first: {e:?})")).unwrap_or_default()
    )
    .map_err(io)?;
    writeln!(out, "  retransmissions  {} (timeouts {})", naks(|c| c.retransmits), naks(|c| c.timeouts)).map_err(io)?;
    writeln!(
        out,
        "  NAKs sent        seq {} rnr {} inv-req {} rem-access {} rem-op {}",
        naks(|c| c.nak_seq_sent),
        naks(|c| c.nak_rnr_sent),
        naks(|c| c.nak_inv_sent),
        naks(|c| c.nak_acc_sent),
        naks(|c| c.nak_op_sent)
    )
    .map_err(io)?;
    writeln!(
        out,
        "  duplicates seen  {}   CNPs sent {}   ICRC drops {}   RX dropped (not ours) {}",
        naks(|c| c.duplicates),
        naks(|c| c.cnp_sent),
        naks(|c| c.rx_icrc_errors),
        naks(|c| c.rx_dropped)
    )
    .map_err(io)?;
    writeln!(
        out,
        "  ACKs sent        {}   CQEs {}   not RoCE {}   DMA errors {}",
        naks(|c| c.acks_sent),
        naks(|c| c.cqes),
        naks(|c| c.rx_not_roce),
        naks(|c| c.dma_errors)
    )
    .map_err(io)?;
    let l = &r.links;
    writeln!(
        out,
        "  link             {} frames, lost {} reordered {} duplicated {} corrupted {} CE-marked {}",
        l[0].sent + l[1].sent,
        l[0].lost + l[1].lost,
        l[0].reordered + l[1].reordered,
        l[0].duplicated + l[1].duplicated,
        l[0].corrupted + l[1].corrupted,
        l[0].ecn_marked + l[1].ecn_marked
    )
    .map_err(io)?;
    writeln!(out, "  simulated cycles {} ({:.1} us at {} MHz)", r.cycles, r.cycles as f64 / r.clock_mhz, r.clock_mhz)
        .map_err(io)?;
    writeln!(out, "  goodput          {:.2} bytes/cycle = {:.2} Gb/s", r.bytes_per_cycle(), r.gbps()).map_err(io)?;
    writeln!(
        out,
        "  DMA reads        at most {} / {} outstanding (A / B); waited for a tag {} / {}",
        r.peak_reads[0], r.peak_reads[1], r.tag_waits[0], r.tag_waits[1]
    )
    .map_err(io)?;
    if let Some(g) = r.steady_gbps(a.messages, a.size) {
        writeln!(out, "  steady state     {g:.2} Gb/s (between a quarter and three quarters of the completions)")
            .map_err(io)?;
    }
    writeln!(out, "  message rate     {:.2} M messages/s", r.msg_rate() / 1e6).map_err(io)?;
    if let Some(j) = r.fairness() {
        writeln!(
            out,
            "  fairness         Jain {j:.3} over {} QPs ({})",
            a.qps,
            if r.qp_steady.is_some() {
                "bytes each QP completed in the steady state"
            } else {
                "bytes each QP completed"
            }
        )
        .map_err(io)?;
    }
    if let Some(p) = &a.pcap {
        let caps: Vec<pcapio::Captured> = r
            .capture
            .iter()
            .map(|(t, _, f)| pcapio::Captured {
                ts: std::time::Duration::from_nanos((*t as f64 * 1000.0 / r.clock_mhz) as u64),
                orig_len: f.len() as u32,
                data: f.clone(),
            })
            .collect();
        pcapio::write(p, &caps)?;
    }
    for (i, s) in r.cosim.iter().enumerate() {
        if let Some(s) = s {
            writeln!(
                out,
                "  cosim node {}     {} frames, {} DMA-written bytes compared; ACKs hdl {} model {} (coalesced by timing); CNPs hdl {} model {}",
                ["A", "B"][i],
                s.frames,
                s.dma_bytes,
                s.acks[0],
                s.acks[1],
                s.cnps[0],
                s.cnps[1]
            )
            .map_err(io)?;
        }
    }
    if let Some((i, d)) = &r.divergence {
        writeln!(out, "DIVERGED at node {}: {d}", ["A", "B"][*i]).map_err(io)?;
        if let Some(p) = &a.fst {
            let from = d.cycle.saturating_sub(a.fst_window);
            let to = d.cycle + a.fst_window;
            let again = TransferConfig {
                cosim: Some(HdlConfig { fst: Some(p.clone()), fst_window: from..to, ..HdlConfig::default() }),
                max_cycles: to,
                capture: false,
                ..cfg.clone()
            };
            transfer::run(&again, |_, _| {})?;
            writeln!(out, "  FST window       {} (cycles {from}..{to})", p.display()).map_err(io)?;
        }
        writeln!(out, "FAILED: the HDL and the model diverged").map_err(io)?;
        return Ok(1);
    }
    let ok = r.clean(a.messages);
    writeln!(
        out,
        "{}",
        if ok { "OK: every byte landed exactly once" } else { "FAILED: data lost, duplicated or corrupted" }
    )
    .map_err(io)?;
    Ok(u64::from(!ok))
}

fn run_sweep(a: &SweepArgs, out: &mut impl Write) -> Result<u64, SimError> {
    use roce_sim::cmd::transfer::Op;
    let io = |e| SimError::Io("stdout".into(), e);
    if a.engine.iter().any(|e| !matches!(e, EngineArg::Model | EngineArg::Hdl | EngineArg::Hdl2)) {
        return Err(SimError::Config(
            "sweep measures goodput of model, hdl (node B) and hdl2 (both nodes); cosim, cosim2, hdl-req and \
             cosim-req are transfer modes"
                .into(),
        ));
    }
    if a.sizes.contains(&0) || a.mtu.iter().any(|&m| !matches!(m, 256 | 512 | 1024 | 2048 | 4096)) {
        return Err(SimError::Config("sizes must be positive and MTUs one of 256, 512, 1024, 2048, 4096".into()));
    }
    if a.qps.iter().any(|&q| !(1..=1024).contains(&q)) {
        return Err(SimError::Config("QP counts must be in 1..=1024".into()));
    }
    let by_qps = a.qps != [1];
    let op = match a.op {
        OpArg::Send => Op::Send,
        OpArg::Write => Op::Write,
        OpArg::Read => Op::Read,
    };
    let cfg = roce_sim::cmd::sweep::SweepConfig {
        op,
        engines: a
            .engine
            .iter()
            .map(|e| [matches!(e, EngineArg::Hdl2), matches!(e, EngineArg::Hdl | EngineArg::Hdl2)])
            .collect(),
        mtus: a.mtu.clone(),
        sizes: a.sizes.clone(),
        qps: a.qps.clone(),
        bytes: a.bytes,
        depth: a.depth,
        host_mem: a.host.budget()?,
    };
    let per_qp = if by_qps { " on each QP" } else { "" };
    writeln!(out, "sweep: {op:?}, depth {}{per_qp}, clean 100 Gb/s link, 250 MHz; model: both nodes the model, hdl: node B (responder) Verilated, hdl2: both", a.depth).map_err(io)?;
    writeln!(out, "{}", cfg.host_mem.describe(250.0)).map_err(io)?;
    if by_qps {
        writeln!(
            out,
            "{:>6} {:>5} {:>8} {:>5} {:>8} {:>10} {:>8} {:>6} {:>12} {:>12} {:>6}",
            "engine", "mtu", "size", "qps", "msgs", "cycles", "Gb/s", "line", "msg/s", "steady msg/s", "Jain"
        )
    } else {
        writeln!(
            out,
            "{:>6} {:>5} {:>8} {:>8} {:>10} {:>8} {:>6} {:>12} {:>8}",
            "engine", "mtu", "size", "msgs", "cycles", "Gb/s", "line", "msg/s", "steady"
        )
    }
    .map_err(io)?;
    let mut err = None;
    let pts = roce_sim::cmd::sweep::sweep(&cfg, |p| {
        let w = if by_qps {
            writeln!(
                out,
                "{:>6} {:>5} {:>8} {:>5} {:>8} {:>10} {:>8.2} {:>5.1}% {:>12.0} {:>12.0} {:>6.3}",
                p.engine,
                p.mtu,
                p.size,
                p.qps,
                p.messages,
                p.cycles,
                p.gbps,
                p.gbps,
                p.msg_rate,
                p.steady_msg_rate,
                p.fairness
            )
        } else {
            writeln!(
                out,
                "{:>6} {:>5} {:>8} {:>8} {:>10} {:>8.2} {:>5.1}% {:>12.0} {:>8.2}",
                p.engine, p.mtu, p.size, p.messages, p.cycles, p.gbps, p.gbps, p.msg_rate, p.steady_gbps
            )
        };
        if let Err(e) = w {
            err = Some(e);
        }
    })?;
    if let Some(e) = err {
        return Err(io(e));
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, roce_sim::cmd::sweep::csv(&pts))
            .map_err(|e| SimError::Io(path.display().to_string(), e))?;
    }
    if let Some(path) = &a.svg {
        if a.qps.len() > 1 {
            roce_sim::cmd::sweep::plot_qps(
                &pts,
                &format!("RDMA {op:?} message rate against QPs, depth {} per QP, 250 MHz (simulated cycles)", a.depth),
                path,
            )?;
        } else {
            roce_sim::cmd::sweep::plot(
                &pts,
                &format!("RDMA {op:?} goodput, 100 Gb/s at 250 MHz (simulated cycles)"),
                path,
            )?;
        }
    }
    Ok(0)
}

fn run_latency(a: &LatencyArgs, out: &mut impl Write) -> Result<u64, SimError> {
    use roce_sim::cmd::transfer::Op;
    let io = |e| SimError::Io("stdout".into(), e);
    if a.engine.iter().any(|e| !matches!(e, EngineArg::Model | EngineArg::Hdl)) {
        return Err(SimError::Config(
            "latency runs --engine model and/or hdl (the Verilated engine on both nodes)".into(),
        ));
    }
    if a.inline && (matches!(a.op, LatOpArg::Read) || a.sizes.iter().any(|&s| s > roce_model::contract::MAX_INLINE)) {
        return Err(SimError::Config(format!(
            "--inline takes SEND, WRITE or pingpong of at most {} bytes",
            roce_model::contract::MAX_INLINE
        )));
    }
    if a.sizes.contains(&0) || !matches!(a.mtu, 256 | 512 | 1024 | 2048 | 4096) || a.samples == 0 {
        return Err(SimError::Config(
            "sizes and samples must be positive, the MTU one of 256, 512, 1024, 2048, 4096".into(),
        ));
    }
    use roce_sim::cmd::latency as lat;
    let cfg = lat::LatencyConfig {
        op: match a.op {
            LatOpArg::Send | LatOpArg::Pingpong => Op::Send,
            LatOpArg::Write => Op::Write,
            LatOpArg::Read => Op::Read,
        },
        sizes: a.sizes.clone(),
        mtu: a.mtu,
        samples: a.samples,
        engines: a.engine.iter().map(|e| matches!(e, EngineArg::Hdl)).collect(),
        link_latency: a.link_ns * 250 / 1000,
        host_mem: a.host.budget()?,
        inline: a.inline,
    };
    let table = if matches!(a.op, LatOpArg::Pingpong) {
        lat::pingpong_table(&cfg, &lat::measure_pingpong(&cfg, |_| {})?)
    } else {
        lat::table(&cfg, &lat::measure(&cfg, |_| {})?)
    };
    write!(out, "{table}").map_err(io)?;
    Ok(0)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut out = std::io::stdout().lock();
    let r = match &cli.cmd {
        Cmd::Icrc(a) => run_icrc(a, &mut out),
        Cmd::Demo(a) => run_demo(a, &mut out),
        Cmd::Transfer(a) => run_transfer(a, &mut out),
        Cmd::Sweep(a) => run_sweep(a, &mut out),
        Cmd::Latency(a) => run_latency(a, &mut out),
    };
    match r {
        Ok(0) => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(1),
        // `roce-sim ... | head` closing the pipe is not an error worth a message
        Err(SimError::Io(_, e)) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roce-sim: {e}");
            ExitCode::from(2)
        }
    }
}
