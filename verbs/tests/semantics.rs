//! `tests/c/semantics.c`, a verbs program compiled against Debian's libibverbs-dev headers and
//! linked with this library: two RC QPs of one engine (model and Verilated) connected to each
//! other, each send opcode with the fields of its completions, and bad use (state transitions,
//! posting in RESET, MR bounds, another PD's lkey, objects in use) getting libibverbs' errors.

mod common;

use std::process::Command;

use common::*;

fn run(kind: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = dir.path().join("semantics");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(cc)
        .arg("-O1")
        .arg("-o")
        .arg(&exe)
        .arg(repo().join("verbs/tests/c/semantics.c"))
        .arg("-L")
        .arg(libdir())
        .arg("-libverbs")
        .status()
        .expect("cc");
    assert!(st.success(), "compiling semantics.c failed");
    // the device's socket sends to itself: both QPs on one engine
    let sock = dir.path().join("self.sock");
    let out = Command::new("timeout")
        .arg("300")
        .arg(&exe)
        .env("LD_LIBRARY_PATH", libdir())
        .env("ROCE_VERBS_DEVICE", device(kind, &sock, &sock, "192.0.2.9"))
        .env("ROCE_VERBS_DEBUG", "1")
        .output()
        .expect("run semantics");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    eprintln!("{kind}:\n{text}");
    assert!(text.contains("done 0"), "{text}");
    assert!(!text.contains("FAIL"), "{text}");
    assert!(out.status.success(), "{text}");
}

#[test]
fn verbs_semantics_on_the_model() {
    run("sim");
}

#[test]
fn verbs_semantics_on_the_verilated_engine() {
    run("sim-hdl");
}
