//! `roce-synth`: Yosys synthesis of every top-level HDL configuration, with a resource report.
//!
//! ```text
//! cargo run --release -p roce-boards --bin roce-synth                 # all, writes the report
//! cargo run --release -p roce-boards --bin roce-synth -- --check-only # generic synth only
//! cargo run --release -p roce-boards --bin roce-synth -- icrc_tx_512 --family xc7
//! cargo run -p roce-boards --bin roce-synth -- --skip-covered --no-generic --family xcup --max-levels 8 # CI
//! ```

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Instant, SystemTime};

use clap::Parser;
use roce_boards::flow::{self, Options};
use roce_boards::report::{self, Provenance};
use roce_boards::yosys;
use roce_boards::{Error, Result};
use roce_hdl::{self as config, Config};

#[derive(Parser)]
#[command(
    name = "roce-synth",
    version,
    about = "Synthesize the HDL configurations of hdl/configs.txt (config, synth and board lines) with Yosys and report resources",
    after_help = "Without config names, all configurations run and boards/synth/REPORT.md and \
                  report.json are rewritten (not with --check-only or --no-report). With names, \
                  results go to stdout only unless --report is given."
)]
struct Cli {
    /// Configurations to run (default: all).
    configs: Vec<String>,
    /// Only the generic `synth -top` of each configuration (fast CI check).
    #[arg(long)]
    check_only: bool,
    /// Skip the generic `synth -top` run of configurations that get a Xilinx run (it
    /// checks nothing synth_xilinx does not; CI saves its time).
    #[arg(long)]
    no_generic: bool,
    /// Xilinx families for synth_xilinx (repeatable): xc7, xcu, xcup.
    #[arg(long = "family", value_name = "FAMILY", default_values_t = ["xc7".to_string(), "xcup".to_string()], value_parser = family)]
    families: Vec<String>,
    /// Parallel Yosys processes.
    #[arg(short, long, default_value_t = 2)]
    jobs: usize,
    /// Workspace root (default: the one this binary was built from).
    #[arg(long)]
    root: Option<PathBuf>,
    /// Directory for Yosys scripts, logs and stat outputs (default: ROOT/target/roce-synth).
    #[arg(long)]
    work_dir: Option<PathBuf>,
    /// Yosys executable (default: $YOSYS, else `yosys` on PATH).
    #[arg(long)]
    yosys: Option<String>,
    /// Skip the configurations a larger selected one already synthesizes (a block at its
    /// default parameters inside the whole engine): CI's check. The report then covers a
    /// subset, so it goes to stdout unless --report is given.
    #[arg(long)]
    skip_covered: bool,
    /// Write the report even for a subset of configurations.
    #[arg(long, conflicts_with = "no_report")]
    report: bool,
    /// Never write the report.
    #[arg(long)]
    no_report: bool,
    /// List the configurations and exit.
    #[arg(long)]
    list: bool,
    /// Fail if a Xilinx netlist has a path deeper than this many logic levels (the report
    /// is written first). CI: 8.
    #[arg(long, value_name = "N")]
    max_levels: Option<u32>,
}

fn family(s: &str) -> std::result::Result<String, String> {
    if yosys::FAMILIES.contains(&s) {
        Ok(s.to_string())
    } else {
        Err(format!("expected one of {}", yosys::FAMILIES.join(", ")))
    }
}

fn select(all: Vec<Config>, names: &[String]) -> Result<Vec<Config>> {
    if names.is_empty() {
        return Ok(all);
    }
    names
        .iter()
        .map(|n| {
            all.iter().find(|c| &c.name == n).cloned().ok_or_else(|| Error::UnknownConfig {
                name: n.clone(),
                known: all.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
            })
        })
        .collect()
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|source| Error::Write { path: path.to_path_buf(), source })
}

fn run(cli: Cli) -> Result<()> {
    let root = cli.root.clone().unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
    let root = std::fs::canonicalize(&root).map_err(|source| Error::Read { path: root, source })?;
    let configs_path = root.join(config::CONFIGS_PATH);
    let mut all = config::load(&configs_path)?;
    // `model` lines are test variants for the simulator only.
    all.retain(|c| c.synthesized() || c.is_board());
    if cli.list {
        for c in &all {
            println!("{:<16} {:<16} {:<24} {}", c.name, c.top, c.params_text(), c.files.join(" "));
        }
        return Ok(());
    }
    let full_set = cli.configs.is_empty() && !cli.skip_covered;
    let mut configs = select(all, &cli.configs)?;
    if cli.skip_covered {
        let skip = flow::covered(&configs);
        if !skip.is_empty() {
            eprintln!(
                "roce-synth: skipping {} configuration(s) a larger one synthesizes: {}",
                skip.len(),
                skip.join(" ")
            );
        }
        configs.retain(|c| !skip.contains(&c.name));
    }
    for c in &configs {
        c.source_paths(&root)?;
    }
    let work_dir = cli.work_dir.clone().unwrap_or_else(|| root.join("target/roce-synth"));
    // Provenance of what is about to be copied, then the copy that all runs read.
    let mut inputs: Vec<String> = configs
        .iter()
        .flat_map(|c| c.files.iter().map(|f| config::workspace_path(&root, f).to_string_lossy().into_owned()))
        .collect();
    inputs.sort();
    inputs.dedup();
    inputs.push(config::CONFIGS_PATH.to_string());
    let (commit, dirty) = report::git_state(&root, &inputs);
    let inputs_hash = flow::snapshot(&configs, &root, &work_dir.join("rtl.snapshot"))?;
    let opts = Options {
        rtl_dir: work_dir.join("rtl.snapshot"),
        rtl_label: config::RTL_DIR.to_string(),
        work_dir,
        yosys: cli.yosys.clone().or_else(|| std::env::var("YOSYS").ok()).unwrap_or_else(|| "yosys".to_string()),
        jobs: cli.jobs,
    };
    let version = yosys::version(&opts.yosys)?;
    if !version.starts_with("Yosys 0.23 ") {
        eprintln!("roce-synth: note: expected Yosys 0.23, found `{version}`; numbers may differ");
    }
    let families = if cli.check_only { Vec::new() } else { cli.families.clone() };
    let jobs = flow::jobs(&configs, &families, !cli.no_generic);
    eprintln!(
        "roce-synth: {} run(s) of {} config(s) on {} worker(s); logs in {}",
        jobs.len(),
        configs.len(),
        opts.jobs,
        opts.work_dir.display()
    );
    let date = report::utc_text(SystemTime::now());
    let start = Instant::now();
    let results = flow::run_all(&jobs, &opts, |done, total, job, r| match r {
        Ok(r) => {
            let mut res = r
                .resources
                .as_ref()
                .map_or(String::new(), |x| format!("  {} LUT, {} FF, {} SRL, {} CARRY", x.lut, x.ff, x.srl, x.carry));
            if let Some(l) = &r.levels {
                res.push_str(&format!(", {} levels ({}): {} -> {}", l.max, l.path, l.from, l.to));
                if !l.through.is_empty() {
                    res.push_str(&format!("\n       via {}", l.through.join(" > ")));
                }
            }
            eprintln!(
                "[{done:>2}/{total}] ok   {:<24} {:>7.1} s wall {:>7.1} s CPU {:>5} MiB{res}",
                job.label(),
                r.wall.as_secs_f64(),
                r.cpu.as_secs_f64(),
                r.max_rss_mib
            );
        }
        Err(_) => eprintln!("[{done:>2}/{total}] FAIL {}", job.label()),
    })?;
    let prov =
        Provenance { commit, dirty, inputs_hash, date, yosys: version, jobs: opts.jobs, total_wall: start.elapsed() };
    let md = report::markdown(&results, &prov);
    let write_report = !cli.no_report && !cli.check_only && (full_set || cli.report);
    if write_report {
        write(&root.join(report::REPORT_MD), &md)?;
        write(&root.join(report::REPORT_JSON), &report::json(&results, &prov))?;
        eprintln!("roce-synth: wrote {} and {}", report::REPORT_MD, report::REPORT_JSON);
    } else {
        println!("{md}");
    }
    if let Some(max) = cli.max_levels {
        let deep: Vec<String> = results
            .iter()
            .filter_map(|r| r.levels.as_ref().filter(|l| l.max > max).map(|l| format!("{} {}", r.job.label(), l.max)))
            .collect();
        if !deep.is_empty() {
            return Err(Error::TooDeep { max, deep: deep.join(", ") });
        }
    }
    eprintln!("roce-synth: all {} run(s) passed in {:.1} s", results.len(), prov.total_wall.as_secs_f64());
    Ok(())
}

fn main() -> ExitCode {
    match run(Cli::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roce-synth: error: {e}");
            ExitCode::FAILURE
        }
    }
}
