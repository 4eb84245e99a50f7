//! Runs the `parse_frame` fuzz body over files (or every file in directories) given on the
//! command line, e.g. a corpus or a crash artifact, without libFuzzer and on stable Rust:
//!
//! ```text
//! cargo run --release --bin replay -- corpus/parse_frame artifacts/parse_frame/crash-…
//! ```

use std::path::Path;
use std::process::ExitCode;

fn run(path: &Path, count: &mut usize) -> std::io::Result<()> {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?.collect::<Result<_, _>>()?;
        entries.sort_by_key(|e| e.path());
        for e in entries {
            run(&e.path(), count)?;
        }
    } else {
        let data = std::fs::read(path)?;
        let outcome = roce_model_fuzz::parse_frame_body(&data);
        println!("{}: {} bytes, {outcome:?}", path.display(), data.len());
        *count += 1;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    if args.is_empty() {
        eprintln!("usage: replay FILE_OR_DIR...");
        return ExitCode::from(2);
    }
    let mut count = 0;
    for a in &args {
        if let Err(e) = run(Path::new(a), &mut count) {
            eprintln!("{}: {e}", Path::new(a).display());
            return ExitCode::FAILURE;
        }
    }
    println!("{count} inputs replayed, no failure");
    ExitCode::SUCCESS
}
