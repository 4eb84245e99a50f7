//! Goodput against message size, and message rate against QP count:
//! [`crate::cmd::transfer`] runs over a clean 100 Gb/s link for a range of sizes, MTUs, QP
//! counts and engines (the model; the Verilated HDL engine on node B, the responder; or on
//! both nodes, requester and responder), measured in simulated cycles. Written as a table,
//! CSV and an SVG plot ([`plot`]: goodput against size; [`plot_qps`]: message rate against
//! QPs).

use std::path::Path;

use plotters::prelude::*;

use roce_model::engine::HostMemBudget;

use crate::cmd::transfer::{run, Op, TransferConfig};
use crate::net::fabric::LinkConfig;
use crate::SimError;

/// One measured point.
#[derive(Clone, Debug)]
pub struct Point {
    /// "model", "hdl" (node B Verilated) or "hdl2" (both).
    pub engine: &'static str,
    /// Path MTU.
    pub mtu: u32,
    /// Message size in bytes.
    pub size: usize,
    /// QPs the messages went over (round robin).
    pub qps: usize,
    /// Messages run.
    pub messages: u64,
    /// Simulated cycles.
    pub cycles: u64,
    /// Goodput in Gb/s at the engine clock.
    pub gbps: f64,
    /// Messages per second.
    pub msg_rate: f64,
    /// Messages per second between the first and third quartile of completions (the
    /// whole-run figure when too few messages).
    pub steady_msg_rate: f64,
    /// Jain's fairness index over the QPs (see [`crate::cmd::transfer::TransferReport::fairness`]).
    pub fairness: f64,
    /// Goodput in Gb/s between the first and third quartile of completions (without the
    /// start and the tail; the whole-run figure when too few messages).
    pub steady_gbps: f64,
}

/// What to sweep.
#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Operation.
    pub op: Op,
    /// Engines: which nodes run the Verilated engine, [A, B] ([false, false]: the model,
    /// [false, true]: "hdl", [true, true]: "hdl2").
    pub engines: Vec<[bool; 2]>,
    /// MTUs.
    pub mtus: Vec<u32>,
    /// Message sizes.
    pub sizes: Vec<usize>,
    /// QP counts.
    pub qps: Vec<usize>,
    /// Bytes to move per point (the message count is this / size, within 8..=4096, and with
    /// more than one QP at least [`MSGS_PER_QP`] per QP).
    pub bytes: u64,
    /// Messages in flight on each QP.
    pub depth: usize,
    /// Host memory of both nodes.
    pub host_mem: HostMemBudget,
}

/// The fewest messages a sweep point runs per QP, so that every QP refills its queue a few
/// times and the steady state is more than the start-up.
pub const MSGS_PER_QP: u64 = 64;

/// Run every point; `progress` is told each finished one.
pub fn sweep(c: &SweepConfig, mut progress: impl FnMut(&Point)) -> Result<Vec<Point>, SimError> {
    let mut out = Vec::new();
    for &hdl in &c.engines {
        let name = engine_name(hdl);
        for &mtu in &c.mtus {
            for &size in &c.sizes {
                for &qps in &c.qps {
                    let floor = if qps > 1 { MSGS_PER_QP * qps as u64 } else { 0 };
                    let messages = (c.bytes / size.max(1) as u64).clamp(8, 4096).max(floor);
                    let cfg = TransferConfig {
                        op: c.op,
                        size,
                        messages,
                        mtu,
                        depth: c.depth,
                        qps,
                        link: LinkConfig::default(),
                        hdl,
                        host_mem: c.host_mem,
                        ..TransferConfig::default()
                    };
                    let r = run(&cfg, |_, _| {})?;
                    if !r.clean(messages) {
                        return Err(SimError::Config(format!(
                            "{name} size {size} mtu {mtu} qps {qps}: the transfer was not clean ({} of {messages} completed, {} mismatches)",
                            r.completed,
                            r.mismatches
                        )));
                    }
                    let secs = r.cycles as f64 / (r.clock_mhz * 1e6);
                    let msg_rate = messages as f64 / secs.max(1e-12);
                    let p = Point {
                        engine: name,
                        mtu,
                        size,
                        qps,
                        messages,
                        cycles: r.cycles,
                        gbps: r.gbps(),
                        msg_rate,
                        steady_msg_rate: r.steady_msg_rate(messages).unwrap_or(msg_rate),
                        fairness: r.fairness().unwrap_or(0.0),
                        steady_gbps: r.steady_gbps(messages, size).unwrap_or(r.gbps()),
                    };
                    progress(&p);
                    out.push(p);
                }
            }
        }
    }
    Ok(out)
}

/// The name of an engine choice (which nodes are Verilated, [A, B]).
pub fn engine_name(hdl: [bool; 2]) -> &'static str {
    match hdl {
        [false, false] => "model",
        [false, true] => "hdl",
        [true, true] => "hdl2",
        [true, false] => "hdl-a",
    }
}

/// The points as CSV.
pub fn csv(points: &[Point]) -> String {
    let mut s = String::from(
        "engine,mtu,size,messages,cycles,gbps,line_fraction,msg_per_s,steady_gbps,qps,steady_msg_per_s,jain\n",
    );
    for p in points {
        s.push_str(&format!(
            "{},{},{},{},{},{:.3},{:.4},{:.0},{:.3},{},{:.0},{:.4}\n",
            p.engine,
            p.mtu,
            p.size,
            p.messages,
            p.cycles,
            p.gbps,
            p.gbps / 100.0,
            p.msg_rate,
            p.steady_gbps,
            p.qps,
            p.steady_msg_rate,
            p.fairness
        ));
    }
    s
}

/// Plot the message rate (millions per second, whole run solid, steady state dashed)
/// against the QP count (log scale), one line per engine, message size and MTU.
pub fn plot_qps(points: &[Point], title: &str, path: &Path) -> Result<(), SimError> {
    let err = |e: String| SimError::Config(format!("plot {}: {e}", path.display()));
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let (lo, hi) = points.iter().fold((u64::MAX, 1u64), |(lo, hi), p| (lo.min(p.qps as u64), hi.max(p.qps as u64)));
    let top = points.iter().map(|p| p.msg_rate.max(p.steady_msg_rate) / 1e6).fold(1.0f64, f64::max) * 1.15;
    let mut ch = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(56)
        .build_cartesian_2d((lo.max(1)..hi.max(2)).log_scale(), 0.0f64..top)
        .map_err(|e| err(e.to_string()))?;
    ch.configure_mesh()
        .x_desc("QPs (messages round robin over them)")
        .y_desc("message rate (M messages/s)")
        .draw()
        .map_err(|e| err(e.to_string()))?;
    let mut series: Vec<(&str, usize, u32)> = Vec::new();
    for p in points {
        if !series.contains(&(p.engine, p.size, p.mtu)) {
            series.push((p.engine, p.size, p.mtu));
        }
    }
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, (eng, size, mtu)) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        let mine = || points.iter().filter(|p| p.engine == *eng && p.size == *size && p.mtu == *mtu);
        let pts: Vec<(u64, f64)> = mine().map(|p| (p.qps as u64, p.msg_rate / 1e6)).collect();
        let steady: Vec<(u64, f64)> = mine().map(|p| (p.qps as u64, p.steady_msg_rate / 1e6)).collect();
        let style = c.stroke_width(2);
        ch.draw_series(LineSeries::new(pts.clone(), style))
            .map_err(|e| err(e.to_string()))?
            .label(format!("{eng}, {size} B, MTU {mtu}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        ch.draw_series(pts.into_iter().map(|(x, y)| Circle::new((x, y), 3, c.filled())))
            .map_err(|e| err(e.to_string()))?;
        ch.draw_series(DashedLineSeries::new(steady, 6, 4, c.mix(0.6).stroke_width(1)))
            .map_err(|e| err(e.to_string()))?;
    }
    ch.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}

/// Plot goodput (Gb/s, the 100 Gb/s line) against message size (log scale), one line per
/// engine and MTU.
pub fn plot(points: &[Point], title: &str, path: &Path) -> Result<(), SimError> {
    let err = |e: String| SimError::Config(format!("plot {}: {e}", path.display()));
    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let (lo, hi) = points.iter().fold((u64::MAX, 1u64), |(lo, hi), p| (lo.min(p.size as u64), hi.max(p.size as u64)));
    let mut ch = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(56)
        .build_cartesian_2d((lo.max(1)..hi.max(2)).log_scale(), 0.0f64..110.0)
        .map_err(|e| err(e.to_string()))?;
    ch.configure_mesh()
        .x_desc("message size (bytes)")
        .y_desc("goodput (Gb/s)")
        .x_label_formatter(&|v| {
            if *v >= 1 << 20 {
                format!("{}Mi", v >> 20)
            } else if *v >= 1024 {
                format!("{}Ki", v >> 10)
            } else {
                v.to_string()
            }
        })
        .draw()
        .map_err(|e| err(e.to_string()))?;
    ch.draw_series(LineSeries::new(vec![(lo.max(1), 100.0), (hi.max(2), 100.0)], BLACK.mix(0.4)))
        .map_err(|e| err(e.to_string()))?
        .label("100 Gb/s line")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK.mix(0.4)));
    let mut series: Vec<(&str, u32)> = Vec::new();
    for p in points {
        if !series.contains(&(p.engine, p.mtu)) {
            series.push((p.engine, p.mtu));
        }
    }
    let colors = [RED, BLUE, GREEN, MAGENTA, CYAN, BLACK];
    for (i, (eng, mtu)) in series.iter().enumerate() {
        let c = colors[i % colors.len()];
        let style = if *eng == "model" { c.mix(0.6).stroke_width(1) } else { c.stroke_width(2) };
        let pts: Vec<(u64, f64)> =
            points.iter().filter(|p| p.engine == *eng && p.mtu == *mtu).map(|p| (p.size as u64, p.gbps)).collect();
        ch.draw_series(LineSeries::new(pts.clone(), style))
            .map_err(|e| err(e.to_string()))?
            .label(format!("{eng}, MTU {mtu}"))
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        ch.draw_series(pts.into_iter().map(|(x, y)| Circle::new((x, y), 3, c.filled())))
            .map_err(|e| err(e.to_string()))?;
    }
    ch.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(e.to_string()))?;
    root.present().map_err(|e| err(e.to_string()))?;
    Ok(())
}
