//! Helpers for the tests of roce-driver's examples (`examples_sim.rs`, `examples_rxe.rs`
//! include this file with `#[path]`; on its own it is an empty test target): build the
//! examples once, run them as child processes with their output captured, temp folders,
//! free ports, and perftest's result table.
#![allow(dead_code)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// `cargo build --examples -p roce-driver` (once per test binary), into the target folder
/// this test binary lives in; returns `<target>/<profile>/examples`.
pub fn examples_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        // <target>/<profile>/deps/<this test>
        let profile_dir = exe.parent().and_then(Path::parent).expect("target profile folder").to_path_buf();
        let release = profile_dir.file_name().is_some_and(|n| n == "release");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
        let t = Instant::now();
        let mut c = Command::new(cargo);
        c.args(["build", "--examples", "-p", "roce-driver", "--manifest-path"]).arg(&manifest);
        if release {
            c.arg("--release");
        }
        if let Some(target) = profile_dir.parent() {
            c.env("CARGO_TARGET_DIR", target);
        }
        let out = c.output().expect("run cargo build --examples");
        assert!(
            out.status.success(),
            "cargo build --examples -p roce-driver failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        eprintln!("examples built in {:.1}s", t.elapsed().as_secs_f64());
        profile_dir.join("examples")
    })
}

/// A currently free TCP port on this machine (racy by nature).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// A short folder under /tmp (unix socket paths are limited to 107 bytes), removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    /// A fresh folder.
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let d = PathBuf::from("/tmp").join(format!(
            "rex-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("create temp dir");
        TempDir(d)
    }

    /// A path inside.
    pub fn join(&self, p: &str) -> PathBuf {
        self.0.join(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A running example, its stdout and stderr collected by two threads. Killed on drop.
pub struct Proc {
    /// What it is (for messages).
    pub name: String,
    child: Child,
    out: Arc<Mutex<String>>,
    err: Arc<Mutex<String>>,
    status: Option<ExitStatus>,
}

fn collect(mut r: impl Read + Send + 'static, into: Arc<Mutex<String>>) {
    std::thread::spawn(move || {
        let mut b = [0u8; 4096];
        while let Ok(n) = r.read(&mut b) {
            if n == 0 {
                break;
            }
            into.lock().unwrap_or_else(|p| p.into_inner()).push_str(&String::from_utf8_lossy(&b[..n]));
        }
    });
}

impl Proc {
    /// Start example `name` with `args`.
    pub fn spawn(name: &str, args: &[String]) -> Proc {
        let exe = examples_dir().join(name);
        let mut child = Command::new(&exe)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", exe.display()));
        let (out, err) = (Arc::new(Mutex::new(String::new())), Arc::new(Mutex::new(String::new())));
        collect(child.stdout.take().expect("stdout"), Arc::clone(&out));
        collect(child.stderr.take().expect("stderr"), Arc::clone(&err));
        Proc { name: format!("{name} {}", args.join(" ")), child, out, err, status: None }
    }

    /// Stdout so far.
    pub fn stdout(&self) -> String {
        self.out.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Stderr so far.
    pub fn stderr(&self) -> String {
        self.err.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Wait until stdout contains `needle` (panics on exit or time-out).
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) {
        let end = Instant::now() + timeout;
        while !self.stdout().contains(needle) {
            if let Ok(Some(st)) = self.child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                panic!("{} exited ({st}) before printing {needle:?}:\n{}\n{}", self.name, self.stdout(), self.stderr());
            }
            assert!(
                Instant::now() < end,
                "{} did not print {needle:?} in {timeout:?}:\n{}\n{}",
                self.name,
                self.stdout(),
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Wait for the exit (killing it after `timeout`); returns (success, stdout, stderr).
    pub fn wait(&mut self, timeout: Duration) -> (bool, String, String) {
        let end = Instant::now() + timeout;
        let st = loop {
            if let Some(st) = self.child.try_wait().expect("try_wait") {
                break Some(st);
            }
            if Instant::now() >= end {
                let _ = self.child.kill();
                let _ = self.child.wait();
                break None;
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        self.status = st;
        // let the reader threads drain the pipes
        std::thread::sleep(Duration::from_millis(50));
        let (o, e) = (self.stdout(), self.stderr());
        match st {
            Some(st) => (st.success(), o, e),
            None => (false, o, format!("{e}\n[killed after {timeout:?}]")),
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// The `--device` argument of a sim device on `local` sending to `remote`.
pub fn sim_dev(local: &Path, remote: &Path) -> String {
    format!("sim:{}:{}", local.display(), remote.display())
}

/// `["a", "b"]` as owned strings.
pub fn strs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// perftest's table line under `#bytes #iterations ...`: (size, iters, peak, avg, Mpps).
pub fn bw_row(out: &str) -> Option<(u64, u64, f64, f64, f64)> {
    let mut lines = out.lines().skip_while(|l| !l.contains("#bytes     #iterations"));
    lines.next()?;
    let f: Vec<&str> = lines.next()?.split_whitespace().collect();
    if f.len() != 5 {
        return None;
    }
    Some((f[0].parse().ok()?, f[1].parse().ok()?, f[2].parse().ok()?, f[3].parse().ok()?, f[4].parse().ok()?))
}

/// ibv_rc_pingpong's two result lines for `size` × `iters`.
pub fn pingpong_done(out: &str, size: u64, iters: u64) -> bool {
    out.contains(&format!("{} bytes in ", size * iters * 2)) && out.contains(&format!("{iters} iters in "))
}

#[test]
fn bw_row_parses_perftest_output() {
    let t = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 65536      2000             459.52             445.59 \t\t   0.007129\n";
    assert_eq!(bw_row(t), Some((65536, 2000, 459.52, 445.59, 0.007129)));
}
