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
        // target/<profile>/deps/<test>-<hash>: the staticlib cargo built for this run is the
        // newest libroce_verbs*.a there or in target/<profile>/ (builds with other feature sets
        // have other hashes)
        let exe = std::env::current_exe().expect("current_exe");
        let deps = exe.parent().expect("deps");
        let profile = deps.parent().expect("profile dir");
        let newest = |dir: &Path| -> Vec<(std::time::SystemTime, PathBuf)> {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("libroce_verbs") && n.ends_with(".a"))
                })
                .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
                .collect()
        };
        let mut all = newest(deps);
        all.extend(newest(profile));
        all.sort();
        let archive = all.pop().map(|(_, p)| p).expect("no libroce_verbs.a: cargo builds the staticlib with the tests");
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

/// A free TCP port on 127.0.0.1 (racy by nature; the tools listen on it).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a free port")
}

/// Wait until something listens on 127.0.0.1:`port` (from /proc/net/tcp, without
/// connecting: the tools accept one connection only).
pub fn wait_listen(port: u16, timeout: std::time::Duration) -> bool {
    let end = std::time::Instant::now() + timeout;
    let needle = format!(":{port:04X} 00000000:0000 0A");
    while std::time::Instant::now() < end {
        if std::fs::read_to_string("/proc/net/tcp").is_ok_and(|t| t.contains(&needle)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// What one side of a two-process run printed.
#[derive(Debug)]
pub struct Side {
    /// Exit status code (None: killed by a signal).
    pub code: Option<i32>,
    /// stdout and stderr.
    pub text: String,
}

impl Side {
    /// Whether it exited 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// The bytes a side's engine moved by DMA straight from and into the application's
/// registered memory, from the figures it printed (`ROCE_VERBS_STATS=1`).
pub fn app_dma(text: &str) -> Option<(u64, u64)> {
    let l = text.lines().find(|l| l.starts_with("roce-verbs stats:"))?;
    let num = |key: &str| -> Option<u64> { l.split(key).nth(1)?.split_whitespace().next()?.parse().ok() };
    Some((num("DMA from app memory ")?, num("into app memory ")?))
}

/// The `ROCE_VERBS_DEVICE` value of an engine kind (`sim` or `sim-hdl`).
pub fn device(kind: &str, local: &Path, peer: &Path, ip: &str) -> String {
    format!("{kind}:{}:{}:{ip}", local.display(), peer.display())
}

/// Run `prog args` as a server on engine `kinds.0` (192.0.2.1) and as a client on `kinds.1`
/// (192.0.2.2) connecting to it, two processes on this run's library whose engines are
/// linked by unix datagram sockets; each is killed after `secs` seconds. Each engine prints
/// its figures at the end (`ROCE_VERBS_STATS=1`, see [`app_dma`]).
pub fn pair(prog: &str, args: &[&str], kinds: (&str, &str), secs: u32) -> (Side, Side) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a.sock"), dir.path().join("b.sock"));
    let port = free_port().to_string();
    let spawn = |dev: String, client: bool| {
        let mut c = Command::new("timeout");
        c.arg(secs.to_string()).arg(prog).args(args).args(["-p", &port]);
        if client {
            c.arg("127.0.0.1");
        }
        c.env("LD_LIBRARY_PATH", libdir()).env("ROCE_VERBS_DEVICE", dev).env("ROCE_VERBS_STATS", "1");
        c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
        c.spawn().expect("spawn")
    };
    let srv = spawn(device(kinds.0, &a, &b, "192.0.2.1"), false);
    let listening = wait_listen(port.parse().unwrap_or(0), std::time::Duration::from_secs(30));
    let cli = spawn(device(kinds.1, &b, &a, "192.0.2.2"), true);
    let done = |c: std::process::Child| {
        let o = c.wait_with_output().expect("wait");
        let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&o.stderr));
        Side { code: o.status.code(), text }
    };
    let (c, s) = (done(cli), done(srv));
    assert!(listening, "the server never listened on {port}:\n{}", s.text);
    (s, c)
}
