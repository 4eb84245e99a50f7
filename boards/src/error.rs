//! The crate's one error type.

use std::io;
use std::path::PathBuf;

/// Everything that can go wrong in the synthesis flow.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The configuration list is unreadable or malformed, or names a missing file.
    #[error(transparent)]
    Hdl(#[from] roce_hdl::Error),
    /// A netlist is deeper than `--max-levels`.
    #[error("deeper than {max} logic levels: {deep}")]
    TooDeep {
        /// The limit.
        max: u32,
        /// `config (flow) levels`, comma-separated.
        deep: String,
    },
    /// A configuration named on the command line is not in the list.
    #[error("unknown config `{name}` (known: {known})")]
    UnknownConfig {
        /// The name given.
        name: String,
        /// Comma-separated known names.
        known: String,
    },
    /// Reading a file failed.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Writing a file or creating a directory failed.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// A path that cannot go into a Yosys script.
    #[error("path {} contains whitespace, quotes or `;`, which Yosys scripts cannot take; use --root/--work-dir without them", path.display())]
    UnusablePath {
        /// The path.
        path: PathBuf,
    },
    /// A tool could not be started or waited for.
    #[error("cannot run `{program}`: {source} (Debian: apt-get install yosys)")]
    Spawn {
        /// The program.
        program: String,
        /// The I/O error.
        #[source]
        source: io::Error,
    },
    /// Yosys exited with an error.
    #[error("{job}: Yosys failed ({status}): {message}\n    log: {}", log.display())]
    YosysFailed {
        /// `config (flow)`.
        job: String,
        /// Exit status as text.
        status: String,
        /// The `ERROR:` line of the log, or a note that there was none.
        message: String,
        /// The full log.
        log: PathBuf,
    },
    /// Yosys succeeded but warned about something that is a design bug.
    #[error("{job}: serious Yosys warning(s):\n{}\n    log: {}", indent(warnings), log.display())]
    SeriousWarnings {
        /// `config (flow)`.
        job: String,
        /// The warnings, deduplicated.
        warnings: Vec<String>,
        /// The full log.
        log: PathBuf,
    },
    /// The design contains latches (the RTL style has none on purpose).
    #[error("{job}: {count} latch cell(s) inferred ({cells}); look for incomplete always_comb assignments\n    log: {}", log.display())]
    Latches {
        /// `config (flow)`.
        job: String,
        /// Number of latch cells.
        count: u64,
        /// Latch cell types with counts.
        cells: String,
        /// The full log.
        log: PathBuf,
    },
    /// The `stat` output could not be understood.
    #[error("{job}: cannot parse Yosys `stat` output in {}: {msg}", path.display())]
    Stat {
        /// `config (flow)`.
        job: String,
        /// The stat output file.
        path: PathBuf,
        /// What is wrong.
        msg: String,
    },
    /// One or more runs failed; each error is listed.
    #[error("{} of {total} Yosys run(s) failed:\n{}", errors.len(), list(errors))]
    Runs {
        /// Number of runs attempted.
        total: usize,
        /// One error per failed run.
        errors: Vec<Error>,
    },
}

fn indent(lines: &[String]) -> String {
    const MAX: usize = 10;
    let mut out: Vec<String> = lines.iter().take(MAX).map(|l| format!("    {l}")).collect();
    if lines.len() > MAX {
        out.push(format!("    ... and {} more", lines.len() - MAX));
    }
    out.join("\n")
}

fn list(errors: &[Error]) -> String {
    errors.iter().map(|e| format!("  - {e}")).collect::<Vec<_>>().join("\n")
}

/// Result with [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
