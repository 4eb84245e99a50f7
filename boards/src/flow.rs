//! Run Yosys over many configurations and flows in parallel.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::levels;
use crate::stat::{self, Class, Resources};
use crate::yosys::{self, Flow};
use roce_hdl::Config;

/// One Yosys run to do.
#[derive(Debug, Clone)]
pub struct Job {
    /// The configuration.
    pub config: Config,
    /// The flow.
    pub flow: Flow,
}

impl Job {
    /// `icrc_tx_512 (xc7)`.
    pub fn label(&self) -> String {
        format!("{} ({})", self.config.name, self.flow.label())
    }
}

/// Where and how to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// Directory the configuration file names are relative to (`hdl/rtl`, or its snapshot).
    pub rtl_dir: PathBuf,
    /// How to name `rtl_dir` in messages and the report (e.g. `hdl/rtl` for a snapshot).
    pub rtl_label: String,
    /// Scripts, logs and stat outputs go to `work_dir/<config>/<flow>.*`.
    pub work_dir: PathBuf,
    /// Yosys executable.
    pub yosys: String,
    /// Parallel Yosys processes.
    pub jobs: usize,
}

/// The outcome of one successful run.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// What ran.
    pub job: Job,
    /// Wall-clock time.
    pub wall: Duration,
    /// CPU time of Yosys and its ABC children.
    pub cpu: Duration,
    /// Peak memory, MiB.
    pub max_rss_mib: u64,
    /// Non-serious warnings with counts.
    pub warnings: Vec<(String, usize)>,
    /// Xilinx resources (Xilinx flows only).
    pub resources: Option<Resources>,
    /// Netlist size (generic flow only).
    pub generic: Option<stat::Generic>,
    /// Logic levels of the deepest path (Xilinx flows only).
    pub levels: Option<levels::Levels>,
    /// The Yosys log.
    pub log: PathBuf,
}

/// The jobs for `configs`: the generic flow, then one per family. Families empty = generic
/// only (`--check-only`). A board top level gets the elaboration flow only, whatever the
/// options.
pub fn jobs(configs: &[Config], families: &[String], generic: bool) -> Vec<Job> {
    let mut out = Vec::new();
    for c in configs {
        if c.is_board() {
            out.push(Job { config: c.clone(), flow: Flow::Elab });
            continue;
        }
        if generic || families.is_empty() {
            out.push(Job { config: c.clone(), flow: Flow::Generic });
        }
        for f in families {
            out.push(Job { config: c.clone(), flow: Flow::Xilinx { family: f.clone() } });
        }
    }
    out
}

/// Copy the files of `configs` from the workspace at `root` to `dest` (emptied first), each
/// under its item name (`dest/roce_x.sv`, `dest/boards/b/top.sv`), so that every run sees the
/// same HDL even while the tree is being edited. Returns a 64-bit FNV-1a hash of the file
/// names and contents, to tell whether two reports synthesized the same inputs.
pub fn snapshot(configs: &[Config], root: &Path, dest: &Path) -> Result<u64> {
    let _ = std::fs::remove_dir_all(dest);
    std::fs::create_dir_all(dest).map_err(|source| Error::Write { path: dest.into(), source })?;
    let mut files: Vec<&String> = configs.iter().flat_map(|c| c.files.iter()).collect();
    files.sort();
    files.dedup();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for f in files {
        let from = root.join(roce_hdl::workspace_path(root, f));
        let bytes = std::fs::read(&from).map_err(|source| Error::Read { path: from, source })?;
        for b in f.as_bytes().iter().chain([0u8].iter()).chain(bytes.iter()) {
            hash = (hash ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let to = dest.join(f);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|source| Error::Write { path: parent.into(), source })?;
        }
        std::fs::write(&to, &bytes).map_err(|source| Error::Write { path: to, source })?;
    }
    Ok(hash)
}

/// File of `config flow seconds` lines from the last run, used to start long jobs first.
const DURATIONS: &str = "durations.txt";

fn load_durations(work_dir: &Path) -> HashMap<(String, String), f64> {
    let text = std::fs::read_to_string(work_dir.join(DURATIONS)).unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (c, f, s) = (w.next()?, w.next()?, w.next()?.parse().ok()?);
            Some(((c.to_string(), f.to_string()), s))
        })
        .collect()
}

/// Order in which to start jobs, so that the workers finish together: jobs without a known
/// duration first, largest guess first, then the others longest first by their duration in
/// the last run. The guess for a job without a duration is the byte size of its HDL (`size`,
/// so the whole engine starts before its blocks on a fresh clone) scaled by its numeric
/// parameters such as widths, halved for the generic flow and a twentieth for elaboration.
pub fn schedule(jobs: &[Job], known: &HashMap<(String, String), f64>, size: impl Fn(&Config) -> u64) -> Vec<usize> {
    let key = |j: &Job| -> (bool, f64) {
        let name = (j.config.name.clone(), j.flow.label().to_string());
        if let Some(&s) = known.get(&name) {
            return (true, s);
        }
        let params: f64 = j.config.params.iter().filter_map(|(_, v)| v.parse::<f64>().ok()).sum();
        let kind = match j.flow {
            Flow::Xilinx { .. } => 1.0,
            Flow::Generic => 0.5,
            // elaboration only: seconds, whatever the size
            Flow::Elab => 0.05,
        };
        // Precision is irrelevant here: a guess for ordering.
        #[allow(clippy::cast_precision_loss)]
        let bytes = size(&j.config) as f64;
        (false, kind * (1.0 + bytes) * (1.0 + params / 512.0))
    };
    let mut order: Vec<usize> = (0..jobs.len()).collect();
    order.sort_by(|&a, &b| {
        let (ka, kb) = (key(&jobs[a]), key(&jobs[b]));
        ka.0.cmp(&kb.0).then(kb.1.total_cmp(&ka.1))
    });
    order
}

/// Byte size of a configuration's files under `dir` (0 for a file that cannot be read).
fn source_bytes(c: &Config, dir: &Path) -> u64 {
    c.files.iter().map(|f| std::fs::metadata(dir.join(f)).map_or(0, |m| m.len())).sum()
}

/// The configurations of `configs` that a larger one in the same list already synthesizes:
/// a `config` line at its default parameters whose files are all among the files of another
/// (non-board) configuration with more files, e.g. a block inside the whole engine. The
/// larger run flattens and synthesizes the same code (at the parameters it instantiates it
/// with), so CI can skip the per-block run; the full report still has every block.
pub fn covered(configs: &[Config]) -> Vec<String> {
    configs
        .iter()
        .filter(|c| {
            !c.is_board()
                && c.params.is_empty()
                && configs.iter().any(|d| {
                    !d.is_board()
                        && d.name != c.name
                        && d.files.len() > c.files.len()
                        && c.files.iter().all(|f| d.files.contains(f))
                })
        })
        .map(|c| c.name.clone())
        .collect()
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Write { path: path.to_path_buf(), source })
}

/// Do one run and check its log and result.
pub fn run_one(job: &Job, opts: &Options) -> Result<RunResult> {
    let label = job.label();
    let dir = opts.work_dir.join(&job.config.name);
    std::fs::create_dir_all(&dir).map_err(|source| Error::Write { path: dir.clone(), source })?;
    let base = dir.join(job.flow.label());
    let (ys, log, stat_path, out) = (
        base.with_extension("ys"),
        base.with_extension("log"),
        base.with_extension("stat"),
        base.with_extension("out"),
    );
    let files = job.config.paths(&opts.rtl_dir)?;
    for stale in [&log, &stat_path] {
        let _ = std::fs::remove_file(stale);
    }
    write(&ys, &yosys::script(&job.config, &files, &job.flow, &stat_path)?)?;
    let args: [&OsStr; 5] = ["-q".as_ref(), "-l".as_ref(), log.as_os_str(), "-s".as_ref(), ys.as_os_str()];
    let usage = yosys::run_measured(&opts.yosys, &args, &out)?;
    // Messages name the files as `rtl_label/FILE`, not by the snapshot's absolute path.
    let log_text = std::fs::read_to_string(&log).unwrap_or_default();
    // Items with a `/` are workspace paths (board files) and keep their own name.
    let log_text = match opts.rtl_dir.to_str() {
        Some(dir) => {
            let mut t = log_text;
            for f in job.config.files.iter().filter(|f| f.contains('/')) {
                t = t.replace(&format!("{dir}/{f}"), f);
            }
            t.replace(&format!("{dir}/"), &format!("{}/", opts.rtl_label))
        }
        None => log_text,
    };
    if !usage.status.success() {
        let message = yosys::error_line(&log_text)
            .or_else(|| {
                let o = std::fs::read_to_string(&out).unwrap_or_default();
                o.lines().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_string())
            })
            .unwrap_or_else(|| "no ERROR line in the log".to_string());
        return Err(Error::YosysFailed { job: label, status: usage.status.to_string(), message, log });
    }
    let all = yosys::warnings(&log_text);
    let serious: Vec<String> =
        all.iter().filter(|(w, _)| yosys::is_serious(w, &job.flow)).map(|(w, _)| w.clone()).collect();
    if !serious.is_empty() {
        return Err(Error::SeriousWarnings { job: label, warnings: serious, log });
    }
    let text = std::fs::read_to_string(&stat_path).map_err(|source| Error::Read { path: stat_path.clone(), source })?;
    let stat_err = |msg| Error::Stat { job: label.clone(), path: stat_path.clone(), msg };
    let (resources, generic, levels) = match job.flow {
        Flow::Generic | Flow::Elab => {
            let cells = stat::parse_design_cells(&text, &job.config.top).map_err(stat_err)?;
            let g = stat::Generic::from_cells(&cells);
            if g.latch > 0 {
                return Err(Error::Latches {
                    job: label,
                    count: g.latch,
                    cells: stat::Generic::latch_cells(&cells),
                    log,
                });
            }
            (None, Some(g), None)
        }
        Flow::Xilinx { .. } => {
            let cells = stat::parse_cells(&text, &job.config.top).map_err(stat_err)?;
            let r = Resources::from_cells(cells);
            if r.latch > 0 {
                return Err(Error::Latches {
                    job: label,
                    count: r.latch,
                    cells: r.cells_of(|c| c == Class::Latch),
                    log,
                });
            }
            let netlist = PathBuf::from(yosys::netlist_path(&stat_path.to_string_lossy()));
            let json =
                std::fs::read_to_string(&netlist).map_err(|source| Error::Read { path: netlist.clone(), source })?;
            let carry4_half = !matches!(&job.flow, Flow::Xilinx { family } if family == "xc7");
            let levels = levels::analyse(&json, &job.config.top, carry4_half).map_err(|msg| Error::Stat {
                job: label.clone(),
                path: netlist.clone(),
                msg,
            })?;
            // Hundreds of MB for the whole engine, and nothing reads it again.
            let _ = std::fs::remove_file(&netlist);
            (Some(r), None, Some(levels))
        }
    };
    Ok(RunResult {
        job: job.clone(),
        wall: usage.wall,
        cpu: usage.cpu,
        max_rss_mib: usage.max_rss_kib.div_ceil(1024),
        warnings: yosys::report_warnings(&all, &job.flow),
        resources,
        generic,
        levels,
        log,
    })
}

/// Run all jobs on `opts.jobs` workers, longest first. `progress` sees each finished run
/// (done count, total, result). Returns results in `jobs` order, or every failure.
pub fn run_all(
    jobs: &[Job],
    opts: &Options,
    progress: impl Fn(usize, usize, &Job, &Result<RunResult>) + Sync,
) -> Result<Vec<RunResult>> {
    std::fs::create_dir_all(&opts.work_dir).map_err(|source| Error::Write { path: opts.work_dir.clone(), source })?;
    let mut known = load_durations(&opts.work_dir);
    let order = schedule(jobs, &known, |c| source_bytes(c, &opts.rtl_dir));
    let next = AtomicUsize::new(0);
    let (tx, rx) = mpsc::channel::<(usize, Result<RunResult>)>();
    let mut slots: Vec<Option<Result<RunResult>>> = jobs.iter().map(|_| None).collect();
    std::thread::scope(|s| {
        for _ in 0..opts.jobs.clamp(1, jobs.len().max(1)) {
            let tx = tx.clone();
            let (next, order) = (&next, &order);
            s.spawn(move || loop {
                let k = next.fetch_add(1, Ordering::SeqCst);
                let Some(&i) = order.get(k) else { break };
                if tx.send((i, run_one(&jobs[i], opts))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (done, (i, r)) in rx.iter().enumerate() {
            progress(done + 1, jobs.len(), &jobs[i], &r);
            slots[i] = Some(r);
        }
    });
    let mut results = Vec::new();
    let mut errors = Vec::new();
    for r in slots.into_iter().flatten() {
        match r {
            Ok(r) => results.push(r),
            Err(e) => errors.push(e),
        }
    }
    for r in &results {
        let key = (r.job.config.name.clone(), r.job.flow.label().to_string());
        known.insert(key, r.wall.as_secs_f64());
    }
    let mut lines: Vec<String> = known.iter().map(|((c, f), s)| format!("{c} {f} {s:.1}\n")).collect();
    lines.sort();
    // Only a scheduling hint: losing it costs nothing.
    let _ = std::fs::write(opts.work_dir.join(DURATIONS), lines.concat());
    if errors.is_empty() {
        Ok(results)
    } else {
        Err(Error::Runs { total: jobs.len(), errors })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(name: &str, w: &str) -> Config {
        Config {
            name: name.into(),
            top: "t".into(),
            params: vec![("DATA_W".into(), w.into())],
            files: vec!["t.sv".into()],
            kind: roce_hdl::Kind::Config,
        }
    }

    #[test]
    fn longest_first() {
        let cs = [cfg("a64", "64"), cfg("a512", "512")];
        let js = jobs(&cs, &["xc7".to_string()], true);
        assert_eq!(js.len(), 4);
        let order = schedule(&js, &HashMap::new(), |_| 100);
        assert_eq!(js[order[0]].label(), "a512 (xc7)");
        assert_eq!(js[order[3]].label(), "a64 (generic)");
        let mut known = HashMap::new();
        known.insert(("a64".to_string(), "generic".to_string()), 1e6);
        known.insert(("a512".to_string(), "xc7".to_string()), 1.0);
        let order = schedule(&js, &known, |_| 100);
        let labels: Vec<String> = order.iter().map(|&i| js[i].label()).collect();
        // unknown durations first, larger guesses first; then known ones, longest first
        assert_eq!(labels, ["a64 (xc7)", "a512 (generic)", "a64 (generic)", "a512 (xc7)"]);
    }

    #[test]
    fn bigger_designs_first_without_durations() {
        let mut engine = cfg("engine", "1");
        engine.params.clear();
        engine.files = vec!["a.sv".into(), "b.sv".into(), "t.sv".into()];
        let cs = [cfg("a512", "512"), engine];
        let js = jobs(&cs, &["xcup".to_string()], false);
        let order = schedule(&js, &HashMap::new(), |c| 1000 * c.files.len() as u64);
        assert_eq!(js[order[0]].label(), "engine (xcup)");
    }

    #[test]
    fn blocks_of_a_larger_config_are_covered() {
        let mut block = cfg("block", "1");
        block.params.clear();
        let mut engine = block.clone();
        engine.name = "engine".into();
        engine.files.push("top.sv".into());
        let mut board = engine.clone();
        board.name = "board".into();
        board.files.push("board.sv".into());
        board.kind = roce_hdl::Kind::Board;
        // at non-default parameters a block is its own configuration
        let wide = cfg("wide", "512");
        assert_eq!(covered(&[block.clone(), engine.clone(), board.clone(), wide]), ["block"]);
        // a board top level covers nothing: it is only elaborated
        assert!(covered(&[engine, board]).is_empty());
        assert!(covered(&[block]).is_empty());
    }

    #[test]
    fn board_tops_are_only_elaborated() {
        let mut b = cfg("top", "1");
        b.kind = roce_hdl::Kind::Board;
        let cs = [cfg("a64", "64"), b];
        for (fams, generic) in [(vec!["xc7".to_string(), "xcup".to_string()], true), (vec![], false)] {
            let js = jobs(&cs, &fams, generic);
            let board: Vec<String> = js.iter().filter(|j| j.config.name == "top").map(Job::label).collect();
            assert_eq!(board, ["top (elab)"]);
        }
    }
}
