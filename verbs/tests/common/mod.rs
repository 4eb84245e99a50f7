//! Shared by the tests that run programs on the built library: link `libibverbs.so.1` from
//! the staticlib cargo built for this test run, with `scripts/build-verbs.sh --link` (the
//! same link as the release build).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("repo").to_path_buf()
}

/// The folder holding this run's `libibverbs.so.1` (linked once per test binary).
pub fn libdir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        // target/<profile>/deps/<test>-<hash> -> target/<profile>/libroce_verbs.a
        let exe = std::env::current_exe().expect("current_exe");
        let deps = exe.parent().expect("deps");
        let profile = deps.parent().expect("profile dir");
        let archive = profile.join("libroce_verbs.a");
        assert!(archive.is_file(), "{} missing (cargo builds the staticlib with the tests)", archive.display());
        let name = exe.file_name().and_then(|n| n.to_str()).unwrap_or("verbs").to_string();
        let out = profile.join("verbs-test").join(name);
        let st = Command::new("bash")
            .arg(repo().join("scripts/build-verbs.sh"))
            .arg("--link")
            .arg(&archive)
            .arg(&out)
            .status()
            .expect("run scripts/build-verbs.sh");
        assert!(st.success(), "linking libibverbs.so.1 failed");
        out
    })
}

/// Debian's own library.
pub const DEBIAN_LIB: &str = "/usr/lib/x86_64-linux-gnu/libibverbs.so.1";

/// A command for a Debian binary with our library first on its search path.
pub fn tool(name: &str) -> Command {
    let mut c = Command::new(name);
    c.env("LD_LIBRARY_PATH", libdir());
    c
}

/// Exported (name, version, default) of a shared library, from `objdump -T`.
pub fn dynamic_symbols(lib: &Path) -> Vec<(String, String, bool)> {
    let out = Command::new("objdump").arg("-T").arg(lib).output().expect("run objdump (binutils)");
    assert!(out.status.success(), "objdump -T {}", lib.display());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let mut v: Vec<(String, String, bool)> = text
        .lines()
        .filter(|l| l.contains("IBVERBS") && !l.contains("*UND*") && !l.contains("*ABS*"))
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (ver, name) = (f.get(f.len().checked_sub(2)?)?, f.last()?);
            let default = !ver.starts_with('(');
            Some((name.to_string(), ver.trim_matches(|c| c == '(' || c == ')').to_string(), default))
        })
        .collect();
    v.sort();
    v.dedup();
    v
}
