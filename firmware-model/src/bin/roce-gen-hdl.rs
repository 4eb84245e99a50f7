//! Regenerate the SystemVerilog files derived from the model (`--check`: only compare).

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let check = std::env::args().any(|a| a == "--check");
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut stale = 0;
    for (rel, text) in roce_model::hdlgen::generated_files() {
        let path = root.join(rel);
        let current = std::fs::read_to_string(&path).unwrap_or_default();
        if current == text {
            continue;
        }
        if check {
            eprintln!("stale: {rel}");
            stale += 1;
        } else if let Err(e) = std::fs::write(&path, &text) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        } else {
            println!("wrote {rel}");
        }
    }
    if stale > 0 {
        eprintln!("{stale} generated file(s) out of date: run `cargo run -p roce-model --bin roce-gen-hdl`");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
