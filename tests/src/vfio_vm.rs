//! Harness for the real-VFIO test: a QEMU VM (q35, TCG) with an emulated Intel IOMMU and
//! QEMU's `edu` PCI device bound to `vfio-pci`, running `vfio-probe`
//! (`tests/rxevm/vfio/probe`, roce-driver's VFIO backend against edu) — the kernel's real
//! VFIO stack (container, group, device fd, BAR mmap, `VFIO_IOMMU_MAP_DMA`, MSI eventfd)
//! under the driver's VFIO layer.
//!
//! The image comes from `tests/rxevm/vfio/build-image.sh` (Debian's kernel, busybox, the
//! probe), cached in `<rxevm cache>/vfio`; the serial console has the same markers as the
//! Soft-RoCE VM (see [`crate::rxevm`]), so [`crate::rxevm::parse_run`] reads it. Gated like
//! the other VM tests on `ROCE_RXEVM=1` ([`crate::rxevm::enabled`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::rxevm::{self, Error, Result, HALT_GRACE, MARK_HALT, MARK_READY};

/// Target triple the probe is built for (static glibc: `-C target-feature=+crt-static`).
pub const PROBE_TARGET: &str = "x86_64-unknown-linux-gnu";

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

fn tail(text: &str, lines: usize) -> String {
    let v: Vec<&str> = text.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

/// The probe's cargo package.
pub fn probe_dir() -> PathBuf {
    crate::repo_root().join("tests/rxevm/vfio/probe")
}

/// The image cache folder: `<rxevm cache>/vfio` (the Soft-RoCE image's kernel .deb in the
/// parent folder is reused).
pub fn cache_dir() -> PathBuf {
    rxevm::cache_dir().join("vfio")
}

/// Build the probe (its own workspace, target folder `<repo>/target/vfio-probe`) as a static
/// executable; returns its path. Incremental: about 12 s the first time, well under 1 s after.
pub fn build_probe() -> Result<PathBuf> {
    let target_dir = crate::repo_root().join("target/vfio-probe");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .arg("build")
        .arg("--manifest-path")
        .arg(probe_dir().join("Cargo.toml"))
        .args(["--target", PROBE_TARGET, "--target-dir"])
        .arg(&target_dir)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET")
        .stdin(Stdio::null())
        .output()
        .map_err(io("run cargo build for tests/rxevm/vfio/probe"))?;
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        return Err(Error::Build {
            status: format!("cargo build of the probe: {}", out.status),
            output: tail(&text, 30),
        });
    }
    let bin = target_dir.join(PROBE_TARGET).join("debug/vfio-probe");
    if !bin.is_file() {
        return Err(Error::Build { status: "ok".into(), output: format!("{} missing", bin.display()) });
    }
    Ok(bin)
}

/// Build (or reuse) the image with `probe` in it; returns the folder with `vmlinuz` and
/// `initramfs.gz`.
pub fn build_image(probe: &Path) -> Result<PathBuf> {
    let dir = cache_dir();
    let script = crate::repo_root().join("tests/rxevm/vfio/build-image.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .arg(probe)
        .stdin(Stdio::null())
        .output()
        .map_err(io(format!("run {}", script.display())))?;
    if !out.status.success() {
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        return Err(Error::Build { status: out.status.to_string(), output: tail(&text, 30) });
    }
    Ok(dir)
}

/// How to run the VM.
#[derive(Clone, Debug)]
pub struct VfioVmOptions {
    /// busybox-`sh` script run by `/init`; `$EDU_ADDRS` holds the edu devices' PCI addresses.
    pub cmd: String,
    /// With the emulated Intel IOMMU (`-device intel-iommu`, `intel_iommu=on`). Without it the
    /// device has no IOMMU group and VFIO cannot take it.
    pub iommu: bool,
    /// Hard limit for the whole run.
    pub timeout: Duration,
    /// Guest memory in MiB.
    pub mem_mib: u32,
}

impl Default for VfioVmOptions {
    fn default() -> Self {
        VfioVmOptions { cmd: String::new(), iommu: true, timeout: Duration::from_secs(120), mem_mib: 256 }
    }
}

/// What a VM run produced.
#[derive(Clone, Debug)]
pub struct VfioVmRun {
    /// The command's exit code.
    pub exit_code: i32,
    /// What it printed (stdout and stderr).
    pub stdout_of_cmd: String,
    /// The whole serial console (`\r` removed).
    pub console_log: String,
    /// QEMU's stderr (the emulated IOMMU reports DMA faults there).
    pub qemu_stderr: String,
    /// From QEMU's start to `=== VM READY`.
    pub ready_after: Option<Duration>,
    /// From QEMU's start to its exit.
    pub total: Duration,
}

#[derive(Default)]
struct Console {
    text: Vec<u8>,
    ready_at: Option<Instant>,
    halt_at: Option<Instant>,
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// Boot the VM from `image_dir`, run `opts.cmd`, wait for the power-off; blocking.
pub fn run(image_dir: &Path, opts: &VfioVmOptions) -> Result<VfioVmRun> {
    let qemu = "qemu-system-x86_64";
    let b64 = rxevm::base64_encode(opts.cmd.as_bytes());
    let mut append = String::from("console=ttyS0 quiet panic=-1");
    if opts.iommu {
        append.push_str(" intel_iommu=on");
    }
    if !b64.is_empty() {
        append.push_str(" runb64=");
        append.push_str(&b64);
    }
    if append.len() > 2000 {
        return Err(Error::Options(format!("command too long for the kernel command line ({} bytes)", append.len())));
    }
    let accel = std::env::var(rxevm::ACCEL_ENV).unwrap_or_else(|_| "tcg".into());
    let mut c = Command::new(qemu);
    c.args(["-M", "q35", "-accel", &accel, "-m", &opts.mem_mib.to_string(), "-smp", "1"]).args([
        "-nographic",
        "-monitor",
        "none",
        "-serial",
        "stdio",
        "-no-reboot",
        "-nic",
        "none",
    ]);
    if opts.iommu {
        // must come before the devices it translates for
        c.args(["-device", "intel-iommu"]);
    }
    c.args(["-device", "edu"])
        .arg("-kernel")
        .arg(image_dir.join("vmlinuz"))
        .arg("-initrd")
        .arg(image_dir.join("initramfs.gz"))
        .arg("-append")
        .arg(&append)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let started = Instant::now();
    let mut child = c.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::Missing(qemu.into())
        } else {
            Error::Io { what: format!("spawn {qemu}"), source: e }
        }
    })?;
    let console = Arc::new(Mutex::new(Console::default()));
    let stderr = Arc::new(Mutex::new(Vec::new()));
    let mut readers = Vec::new();
    if let Some(mut out) = child.stdout.take() {
        let con = Arc::clone(&console);
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = out.read(&mut buf) {
                if n == 0 {
                    break;
                }
                let mut g = con.lock().unwrap_or_else(|p| p.into_inner());
                g.text.extend_from_slice(&buf[..n]);
                if g.ready_at.is_none() && contains(&g.text, MARK_READY) {
                    g.ready_at = Some(Instant::now());
                }
                if g.halt_at.is_none() && contains(&g.text, MARK_HALT) {
                    g.halt_at = Some(Instant::now());
                }
            }
        }));
    }
    if let Some(mut err) = child.stderr.take() {
        let se = Arc::clone(&stderr);
        readers.push(std::thread::spawn(move || {
            let mut buf = [0u8; 1024];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                se.lock().unwrap_or_else(|p| p.into_inner()).extend_from_slice(&buf[..n]);
            }
        }));
    }
    let deadline = started + opts.timeout;
    let mut timed_out = false;
    loop {
        if child.try_wait().map_err(io("wait for qemu"))?.is_some() {
            break;
        }
        let halted = console.lock().unwrap_or_else(|p| p.into_inner()).halt_at;
        let now = Instant::now();
        if halted.is_some_and(|h| now > h + HALT_GRACE) || now > deadline {
            timed_out = halted.is_none();
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let total = started.elapsed();
    for r in readers {
        let _ = r.join();
    }
    let con = console.lock().unwrap_or_else(|p| p.into_inner());
    let console_log = String::from_utf8_lossy(&con.text).replace('\r', "");
    let qemu_stderr = String::from_utf8_lossy(&stderr.lock().unwrap_or_else(|p| p.into_inner())).into_owned();
    if timed_out {
        return Err(Error::Timeout {
            what: "the VFIO VM to finish".into(),
            after: opts.timeout,
            console_tail: tail(&console_log, 30),
        });
    }
    let Some((exit_code, stdout_of_cmd)) = rxevm::parse_run(&console_log) else {
        return Err(Error::NoExitMarker(format!(
            "{}\nqemu stderr: {}",
            tail(&console_log, 30),
            tail(&qemu_stderr, 10)
        )));
    };
    Ok(VfioVmRun {
        exit_code,
        stdout_of_cmd,
        console_log,
        qemu_stderr,
        ready_after: con.ready_at.map(|t| t - started),
        total,
    })
}
