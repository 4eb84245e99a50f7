//! Harness for interop tests against a real Linux RoCEv2 stack: Soft-RoCE (`rdma_rxe`) in a
//! QEMU VM (TCG), built from Debian packages by `tests/rxevm/build-image.sh`.
//!
//! The VM's `eth0` is a QEMU `-netdev dgram` link to a unix datagram socket that this harness
//! binds: one Ethernet frame (no FCS) per datagram, read with [`RxeVm::recv_frame`] and written
//! with [`RxeVm::send_frame`]. That is where an engine under test plugs in. `eth1` is QEMU user
//! networking for the tools' TCP side channel (the out-of-band QP exchange):
//! - VM as client: the VM connects to `10.0.2.100:18515`, which QEMU's `guestfwd` pipes to
//!   `127.0.0.1:fwd_port` on the host. QEMU connects to that port *when it starts* (once), so
//!   the host listener must exist before [`RxeVm::boot`]: create it with [`side_listener`],
//!   pass its port as [`VmOptions::fwd_port`], then [`accept_timeout`] after boot.
//! - VM as server: the host connects to `127.0.0.1:hostfwd_port`, forwarded to the VM's
//!   port 18515; [`RxeVm::connect_hostfwd`] retries until the VM's server accepts.
//!
//! The out-of-band formats of `ibv_rc_pingpong` ([`PingpongPeerInfo`]) and of perftest's
//! `ib_write_bw` / `ib_read_bw` ([`PerftestDest`], [`PerftestConn`]) are implemented here so a
//! host-side engine can stand in for the remote tool. See `tests/rxevm/README.md`.
//!
//! Blocking std code; each VM has two reader threads (serial console, QEMU stderr).

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Environment variable that enables the VM tests (`ROCE_RXEVM=1`).
pub const ENABLE_ENV: &str = "ROCE_RXEVM";
/// Environment variable that overrides the image cache folder.
pub const CACHE_ENV: &str = "ROCE_RXEVM_CACHE";
/// Environment variable that picks QEMU's accelerator (`tcg` by default; `kvm` if you have it).
pub const ACCEL_ENV: &str = "ROCE_RXEVM_ACCEL";
/// TCP port the tools use in the VM (ibv_rc_pingpong and perftest default).
pub const TOOL_PORT: u16 = 18515;
/// Address the VM dials for the host side channel (QEMU `guestfwd`).
pub const GUESTFWD_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 100);
/// The VM's address on the user-networking side channel (`eth1`).
pub const VM_SIDE_ADDR: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 15);

/// Console markers printed by the VM's `/init` (see `tests/rxevm/build-image.sh`).
pub const MARK_READY: &str = "=== VM READY";
/// Printed just before the command starts.
pub const MARK_BEGIN: &str = "=== RUN BEGIN";
/// Followed by ` <exit code>`.
pub const MARK_EXIT: &str = "=== RUN EXIT ";
/// Printed just before the VM powers off.
pub const MARK_HALT: &str = "=== VM HALT";
/// How long [`RxeVm::wait`] lets QEMU power off after `=== VM HALT` before killing it.
pub const HALT_GRACE: Duration = Duration::from_secs(3);

/// Errors of the harness. Data from the VM is never trusted: every malformed message is one
/// of these, not a panic.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An I/O operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// `build-image.sh` failed.
    #[error("building the VM image failed ({status}): {output}")]
    Build {
        /// The script's exit status.
        status: String,
        /// Its stdout and stderr, tail.
        output: String,
    },
    /// A host tool is missing.
    #[error("{0} not found: run tests/rxevm/install-deps.sh")]
    Missing(String),
    /// Something did not happen in time.
    #[error("timed out after {after:?} waiting for {what}; console tail:\n{console_tail}")]
    Timeout {
        /// What was awaited.
        what: String,
        /// How long we waited.
        after: Duration,
        /// The last lines of the serial console.
        console_tail: String,
    },
    /// QEMU exited before something happened.
    #[error("the VM exited before {what}; qemu stderr: {stderr}; console tail:\n{console_tail}")]
    VmExited {
        /// What was awaited.
        what: String,
        /// QEMU's stderr.
        stderr: String,
        /// The last lines of the serial console.
        console_tail: String,
    },
    /// The console has no `=== RUN EXIT <rc>` marker (the VM crashed or was killed).
    #[error("no '{MARK_EXIT}<rc>' marker on the console; tail:\n{0}")]
    NoExitMarker(String),
    /// A peer's side-channel message could not be parsed.
    #[error("bad {what} message {got:?}: {why}")]
    BadMessage {
        /// Which message.
        what: &'static str,
        /// What arrived (lossy text).
        got: String,
        /// Why it was rejected.
        why: String,
    },
    /// The side-channel peer did something the real tool does not.
    #[error("side-channel protocol: {0}")]
    Protocol(String),
    /// This operation needs a VM whose eth0 is linked to the host socket.
    #[error("this VM's eth0 is not linked to the host")]
    NotHostLinked,
    /// Options that cannot work.
    #[error("invalid options: {0}")]
    Options(String),
}

/// Result type of this module.
pub type Result<T, E = Error> = std::result::Result<T, E>;

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> Error {
    let what = what.into();
    move |source| Error::Io { what, source }
}

/// Whether the VM tests are enabled (`ROCE_RXEVM=1`); prints the skip line if not.
pub fn enabled() -> bool {
    if std::env::var(ENABLE_ENV).is_ok_and(|v| v == "1") {
        return true;
    }
    eprintln!("SKIPPED: set {ENABLE_ENV}=1");
    false
}

/// `52:54:00:00:00:01` style.
pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// The RoCEv2 GID of an IPv4 address: `::ffff:a.b.c.d`.
pub fn gid_from_ipv4(ip: Ipv4Addr) -> [u8; 16] {
    ip.to_ipv6_mapped().octets()
}

/// How the VM's eth0 is linked.
#[derive(Clone, Debug, Default)]
pub enum Eth0Link {
    /// To a unix datagram socket the harness binds (the engine's side).
    #[default]
    Host,
    /// To another VM: QEMU binds `local`, sends to `remote` (see [`RxeVm::boot_pair`]).
    Sockets {
        /// Path QEMU binds.
        local: PathBuf,
        /// Path QEMU sends to.
        remote: PathBuf,
    },
}

/// How to boot a VM.
#[derive(Clone, Debug)]
pub struct VmOptions {
    /// Command run by busybox `sh` in the VM (a script: `;` and newlines are fine). busybox
    /// applets win over same-named binaries, so write iproute2 as `/usr/sbin/ip`.
    pub cmd: String,
    /// The VM's eth0 address (prefix /24).
    pub vm_ip: Ipv4Addr,
    /// The VM's eth0 MAC.
    pub vm_mac: [u8; 6],
    /// The engine's address; the VM gets a permanent neighbour entry for it.
    pub peer_ip: Ipv4Addr,
    /// The engine's MAC.
    pub peer_mac: [u8; 6],
    /// MTU of eth0 (None: 1500). rxe's active path MTU follows it (1024 at 1500).
    pub mtu: Option<u16>,
    /// Hard limit for the whole VM run; [`RxeVm::wait`] never waits past it.
    pub timeout: Duration,
    /// Write every eth0 frame (both directions, no FCS) to this pcap (QEMU filter-dump).
    pub pcap: Option<PathBuf>,
    /// Host port that the VM's `10.0.2.100:18515` reaches (QEMU connects at start).
    pub fwd_port: Option<u16>,
    /// More side channels for VM clients: the VM's `10.0.2.100:GUEST` reaches the host's
    /// `127.0.0.1:HOST` for each (GUEST, HOST) (each connects once, at start, like `fwd_port`).
    pub fwd_ports: Vec<(u16, u16)>,
    /// Host port `127.0.0.1:hostfwd_port` forwarded to the VM's port 18515.
    pub hostfwd_port: Option<u16>,
    /// eth0's link (default: the host socket).
    pub link: Eth0Link,
    /// Guest memory in MiB.
    pub mem_mib: u32,
}

impl Default for VmOptions {
    fn default() -> Self {
        VmOptions {
            cmd: String::new(),
            vm_ip: Ipv4Addr::new(192, 0, 2, 1),
            vm_mac: [0x52, 0x54, 0, 0, 0, 0x01],
            peer_ip: Ipv4Addr::new(192, 0, 2, 2),
            peer_mac: [0x52, 0x54, 0, 0, 0, 0x02],
            mtu: None,
            timeout: Duration::from_secs(90),
            pcap: None,
            fwd_port: None,
            fwd_ports: Vec::new(),
            hostfwd_port: None,
            link: Eth0Link::Host,
            mem_mib: 512,
        }
    }
}

/// What a finished VM run produced.
#[derive(Clone, Debug)]
pub struct VmOutcome {
    /// The command's exit code (from `=== RUN EXIT <rc>`).
    pub exit_code: i32,
    /// What the command printed (stdout and stderr, interleaved), `\r` removed.
    pub stdout_of_cmd: String,
    /// The whole serial console.
    pub console_log: String,
    /// QEMU's own exit status (None if it had to be killed).
    pub qemu_status: Option<ExitStatus>,
    /// From QEMU's start to `=== VM READY`.
    pub ready_after: Option<Duration>,
    /// From QEMU's start to its exit.
    pub total: Duration,
}

#[derive(Default)]
struct Console {
    text: Vec<u8>,
    eof: bool,
    ready_at: Option<Instant>,
}

type Shared<T> = Arc<(Mutex<T>, Condvar)>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn tail(text: &[u8], lines: usize) -> String {
    let s = String::from_utf8_lossy(text).replace('\r', "");
    let v: Vec<&str> = s.lines().collect();
    v[v.len().saturating_sub(lines)..].join("\n")
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    !needle.is_empty() && hay.windows(needle.len()).any(|w| w == needle)
}

/// A running Soft-RoCE VM. Dropping it kills QEMU and removes its socket folder.
pub struct RxeVm {
    child: Mutex<Child>,
    started: Instant,
    deadline: Instant,
    console: Shared<Console>,
    stderr: Arc<Mutex<Vec<u8>>>,
    dir: PathBuf,
    host_sock: Option<UnixDatagram>,
    vm_sock: PathBuf,
    opts: VmOptions,
    finished: Mutex<Option<Option<ExitStatus>>>,
    /// Another folder to remove on drop (the socket folder of a pair).
    extra_dir: Option<PathBuf>,
}

static COUNTER: AtomicU32 = AtomicU32::new(0);

fn new_run_dir() -> Result<PathBuf> {
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    // Short: unix socket paths are limited to 107 bytes.
    let d = PathBuf::from("/tmp").join(format!("rxevm-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).map_err(io(format!("create {}", d.display())))?;
    Ok(d)
}

/// The image cache folder: `$ROCE_RXEVM_CACHE`, else `<repo>/target/rxevm-cache`.
pub fn cache_dir() -> PathBuf {
    match std::env::var_os(CACHE_ENV) {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => crate::repo_root().join("target/rxevm-cache"),
    }
}

/// A TCP listener on `127.0.0.1:<ephemeral>` for the VM-as-client side channel: pass
/// `listener.local_addr()?.port()` as [`VmOptions::fwd_port`] before booting.
pub fn side_listener() -> Result<TcpListener> {
    TcpListener::bind("127.0.0.1:0").map_err(io("bind 127.0.0.1:0"))
}

/// A currently free local TCP port (for [`VmOptions::hostfwd_port`]; racy by nature).
pub fn free_local_port() -> Result<u16> {
    let l = side_listener()?;
    Ok(l.local_addr().map_err(io("local_addr"))?.port())
}

/// `accept()` with a timeout. The stream is returned in blocking mode with no timeouts.
pub fn accept_timeout(listener: &TcpListener, timeout: Duration) -> Result<TcpStream> {
    listener.set_nonblocking(true).map_err(io("set_nonblocking"))?;
    let end = Instant::now() + timeout;
    let r = loop {
        match listener.accept() {
            Ok((s, _)) => break Ok(s),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if Instant::now() >= end {
                    break Err(Error::Timeout {
                        what: "a side-channel connection".into(),
                        after: timeout,
                        console_tail: String::new(),
                    });
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => break Err(io("accept")(e)),
        }
    };
    let _ = listener.set_nonblocking(false);
    let s = r?;
    s.set_nonblocking(false).map_err(io("set_nonblocking"))?;
    let _ = s.set_nodelay(true);
    Ok(s)
}

impl RxeVm {
    /// Build (or reuse) the VM image with `tests/rxevm/build-image.sh` into [`cache_dir`].
    /// Returns the cache folder, which holds `vmlinuz` and `initramfs.gz`.
    pub fn build_image() -> Result<PathBuf> {
        let dir = cache_dir();
        let script = crate::repo_root().join("tests/rxevm/build-image.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .stdin(Stdio::null())
            .output()
            .map_err(io(format!("run {}", script.display())))?;
        if !out.status.success() {
            let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&out.stderr));
            return Err(Error::Build { status: out.status.to_string(), output: tail(text.as_bytes(), 30) });
        }
        for f in ["vmlinuz", "initramfs.gz"] {
            if !dir.join(f).is_file() {
                return Err(Error::Build { status: "ok".into(), output: format!("{f} missing in {}", dir.display()) });
            }
        }
        Ok(dir)
    }

    /// Boot a VM from the image in `image_dir` (see [`RxeVm::build_image`]). Returns at once;
    /// use [`RxeVm::wait_ready`] to wait for the `=== VM READY` marker.
    pub fn boot_from(image_dir: &Path, opts: VmOptions) -> Result<RxeVm> {
        let qemu = "qemu-system-x86_64";
        if Command::new(qemu).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_err() {
            return Err(Error::Missing(qemu.into()));
        }
        if opts.cmd.contains('\0') {
            return Err(Error::Options("cmd contains NUL".into()));
        }
        if let Some(m) = opts.mtu {
            if !(256..=9000).contains(&m) {
                return Err(Error::Options(format!("mtu {m} out of 256..=9000")));
            }
        }
        let dir = new_run_dir()?;
        let (host_sock, vm_sock, remote) = match &opts.link {
            Eth0Link::Host => {
                let hs = dir.join("host.sock");
                let vs = dir.join("vm.sock");
                let s = UnixDatagram::bind(&hs).map_err(io(format!("bind {}", hs.display())))?;
                (Some(s), vs, hs)
            }
            Eth0Link::Sockets { local, remote } => (None, local.clone(), remote.clone()),
        };
        let b64 = base64_encode(opts.cmd.as_bytes());
        let mut append = format!(
            "console=ttyS0 quiet panic=-1 ipaddr={}/24 peer={},{}",
            opts.vm_ip,
            opts.peer_ip,
            fmt_mac(&opts.peer_mac)
        );
        if !b64.is_empty() {
            let _ = write!(append, " runb64={b64}");
        }
        if let Some(m) = opts.mtu {
            let _ = write!(append, " mtu={m}");
        }
        if append.len() > 2000 {
            return Err(Error::Options(format!(
                "command too long for the kernel command line ({} bytes)",
                append.len()
            )));
        }
        let accel = std::env::var(ACCEL_ENV).unwrap_or_else(|_| "tcg".into());
        let mut c = Command::new(qemu);
        c.args(["-accel", &accel, "-m", &opts.mem_mib.to_string(), "-smp", "1"])
            .args(["-nographic", "-monitor", "none", "-serial", "stdio", "-no-reboot"])
            .arg("-kernel")
            .arg(image_dir.join("vmlinuz"))
            .arg("-initrd")
            .arg(image_dir.join("initramfs.gz"))
            .arg("-append")
            .arg(&append)
            .arg("-netdev")
            .arg(format!(
                "dgram,id=n0,local.type=unix,local.path={},remote.type=unix,remote.path={}",
                vm_sock.display(),
                remote.display()
            ))
            .arg("-device")
            .arg(format!("virtio-net-pci,netdev=n0,mac={},romfile=", fmt_mac(&opts.vm_mac)));
        if let Some(p) = &opts.pcap {
            c.arg("-object").arg(format!("filter-dump,id=f0,netdev=n0,file={}", p.display()));
        }
        let mut user = String::from("user,id=n1,net=10.0.2.0/24,restrict=on");
        if let Some(h) = opts.hostfwd_port {
            let _ = write!(user, ",hostfwd=tcp:127.0.0.1:{h}-{VM_SIDE_ADDR}:{TOOL_PORT}");
        }
        if let Some(f) = opts.fwd_port {
            let _ = write!(user, ",guestfwd=tcp:{GUESTFWD_ADDR}:{TOOL_PORT}-tcp:127.0.0.1:{f}");
        }
        for (g, h) in &opts.fwd_ports {
            let _ = write!(user, ",guestfwd=tcp:{GUESTFWD_ADDR}:{g}-tcp:127.0.0.1:{h}");
        }
        let side_mac = {
            let mut m = opts.vm_mac;
            m[4] ^= 0x01;
            m
        };
        c.arg("-netdev")
            .arg(user)
            .arg("-device")
            .arg(format!("virtio-net-pci,netdev=n1,mac={},romfile=", fmt_mac(&side_mac)));
        c.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = c.spawn().map_err(io("spawn qemu-system-x86_64"))?;
        let console: Shared<Console> = Arc::new((Mutex::new(Console::default()), Condvar::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        if let Some(mut out) = child.stdout.take() {
            let con = Arc::clone(&console);
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    let n = out.read(&mut buf).unwrap_or(0);
                    let (m, cv) = &*con;
                    let mut g = lock(m);
                    if n == 0 {
                        g.eof = true;
                        cv.notify_all();
                        break;
                    }
                    g.text.extend_from_slice(&buf[..n]);
                    if g.ready_at.is_none() && contains(&g.text, MARK_READY.as_bytes()) {
                        g.ready_at = Some(Instant::now());
                    }
                    cv.notify_all();
                }
            });
        }
        if let Some(mut err) = child.stderr.take() {
            let se = Arc::clone(&stderr);
            std::thread::spawn(move || {
                let mut buf = [0u8; 1024];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    lock(&se).extend_from_slice(&buf[..n]);
                }
            });
        }
        Ok(RxeVm {
            child: Mutex::new(child),
            started,
            deadline: started + opts.timeout,
            console,
            stderr,
            dir,
            host_sock,
            vm_sock,
            opts,
            finished: Mutex::new(None),
            extra_dir: None,
        })
    }

    /// [`RxeVm::build_image`] then [`RxeVm::boot_from`].
    pub fn boot(opts: VmOptions) -> Result<RxeVm> {
        let img = RxeVm::build_image()?;
        RxeVm::boot_from(&img, opts)
    }

    /// Boot two VMs whose eth0s are linked to each other (no host socket). `a` and `b` keep
    /// their addresses and commands; each one's peer is set to the other.
    pub fn boot_pair(mut a: VmOptions, mut b: VmOptions) -> Result<(RxeVm, RxeVm)> {
        let img = RxeVm::build_image()?;
        let d = new_run_dir()?;
        let (sa, sb) = (d.join("a.sock"), d.join("b.sock"));
        a.link = Eth0Link::Sockets { local: sa.clone(), remote: sb.clone() };
        b.link = Eth0Link::Sockets { local: sb, remote: sa };
        a.peer_ip = b.vm_ip;
        a.peer_mac = b.vm_mac;
        b.peer_ip = a.vm_ip;
        b.peer_mac = a.vm_mac;
        let mut va = RxeVm::boot_from(&img, a).inspect_err(|_| {
            let _ = std::fs::remove_dir_all(&d);
        })?;
        va.extra_dir = Some(d);
        let vb = RxeVm::boot_from(&img, b)?;
        Ok((va, vb))
    }

    /// The options this VM was booted with.
    pub fn options(&self) -> &VmOptions {
        &self.opts
    }

    /// Path of the host's unix datagram socket (None for VM-to-VM links).
    pub fn host_socket_path(&self) -> Option<PathBuf> {
        self.host_sock.as_ref().map(|_| self.dir.join("host.sock"))
    }

    /// Path QEMU binds for eth0 (the destination of [`RxeVm::send_frame`]).
    pub fn vm_socket_path(&self) -> &Path {
        &self.vm_sock
    }

    fn host(&self) -> Result<&UnixDatagram> {
        self.host_sock.as_ref().ok_or(Error::NotHostLinked)
    }

    /// The next frame the VM sent on eth0, or None after `timeout` (or on a socket error).
    pub fn recv_frame(&self, timeout: Duration) -> Option<Vec<u8>> {
        self.try_recv_frame(timeout).ok().flatten()
    }

    /// Like [`RxeVm::recv_frame`], with errors.
    pub fn try_recv_frame(&self, timeout: Duration) -> Result<Option<Vec<u8>>> {
        let s = self.host()?;
        // A zero timeout is a non-blocking look: SO_RCVTIMEO rounds up to a jiffy (4 ms), so
        // "1 us" would cost a simulator polling between slices 4 ms per empty look.
        s.set_nonblocking(timeout.is_zero()).map_err(io("set_nonblocking"))?;
        if !timeout.is_zero() {
            s.set_read_timeout(Some(timeout)).map_err(io("set_read_timeout"))?;
        }
        let mut buf = vec![0u8; 65536];
        let got = s.recv(&mut buf);
        if timeout.is_zero() {
            // sends stay blocking: the VM's socket queue is short, a full one must not drop
            s.set_nonblocking(false).map_err(io("set_nonblocking"))?;
        }
        match got {
            Ok(n) => {
                buf.truncate(n);
                Ok(Some(buf))
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => Ok(None),
            Err(e) => Err(io("recv frame")(e)),
        }
    }

    /// Send one Ethernet frame (no FCS) to the VM's eth0.
    pub fn send_frame(&self, frame: &[u8]) -> Result<()> {
        let s = self.host()?;
        let n = s.send_to(frame, &self.vm_sock).map_err(io(format!("send frame to {}", self.vm_sock.display())))?;
        if n != frame.len() {
            return Err(Error::Protocol(format!("short datagram send {n}/{}", frame.len())));
        }
        Ok(())
    }

    /// The serial console so far (`\r` removed).
    pub fn console(&self) -> String {
        String::from_utf8_lossy(&lock(&self.console.0).text).replace('\r', "")
    }

    fn console_tail(&self) -> String {
        tail(&lock(&self.console.0).text, 40)
    }

    fn stderr_text(&self) -> String {
        String::from_utf8_lossy(&lock(&self.stderr)).trim().to_string()
    }

    /// Wait until the console contains `needle` (bounded by the VM's own timeout too).
    pub fn wait_for_console(&self, needle: &str, timeout: Duration) -> Result<()> {
        self.wait_for_console_after("", needle, timeout)
    }

    /// Like [`RxeVm::wait_for_console`], for `needle` after the first `marker` (a command that
    /// runs a tool several times prints a marker before each).
    pub fn wait_for_console_after(&self, marker: &str, needle: &str, timeout: Duration) -> Result<()> {
        let end = (Instant::now() + timeout).min(self.deadline);
        let (m, cv) = &*self.console;
        let mut g = lock(m);
        loop {
            let from = if marker.is_empty() {
                Some(0)
            } else {
                g.text.windows(marker.len()).position(|w| w == marker.as_bytes()).map(|p| p + marker.len())
            };
            if from.is_some_and(|p| contains(&g.text[p..], needle.as_bytes())) {
                return Ok(());
            }
            if g.eof {
                drop(g);
                return Err(Error::VmExited {
                    what: format!("console showed {needle:?}"),
                    stderr: self.stderr_text(),
                    console_tail: self.console_tail(),
                });
            }
            let now = Instant::now();
            if now >= end {
                drop(g);
                return Err(Error::Timeout {
                    what: format!("console to show {needle:?}"),
                    after: timeout,
                    console_tail: self.console_tail(),
                });
            }
            g = cv.wait_timeout(g, end - now).unwrap_or_else(|p| p.into_inner()).0;
        }
    }

    /// Wait for `=== VM READY`; returns the time since QEMU started.
    pub fn wait_ready(&self, timeout: Duration) -> Result<Duration> {
        self.wait_for_console(MARK_READY, timeout)?;
        Ok(self.ready_after().unwrap_or_else(|| self.started.elapsed()))
    }

    /// Time from QEMU's start to `=== VM READY`, once seen.
    pub fn ready_after(&self) -> Option<Duration> {
        lock(&self.console.0).ready_at.map(|t| t - self.started)
    }

    /// Connect to the VM's port 18515 through `hostfwd_port`, retrying until the VM's server
    /// accepts. QEMU's user networking accepts the host connection at once and closes it when
    /// the guest refuses, so each attempt is kept only if it stays open for a short probe.
    pub fn connect_hostfwd(&self, timeout: Duration) -> Result<TcpStream> {
        let port = self.opts.hostfwd_port.ok_or_else(|| Error::Options("no hostfwd_port".into()))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let end = (Instant::now() + timeout).min(self.deadline);
        loop {
            if let Ok(s) = TcpStream::connect_timeout(&addr, Duration::from_secs(1)) {
                let _ = s.set_nodelay(true);
                s.set_read_timeout(Some(Duration::from_millis(400))).map_err(io("set_read_timeout"))?;
                let mut b = [0u8; 1];
                match s.peek(&mut b) {
                    Ok(0) => {} // refused by the guest: slirp closed it
                    Ok(_) => {
                        s.set_read_timeout(None).map_err(io("set_read_timeout"))?;
                        return Ok(s);
                    }
                    Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                        s.set_read_timeout(None).map_err(io("set_read_timeout"))?;
                        return Ok(s);
                    }
                    Err(_) => {}
                }
            }
            if self.has_exited() {
                return Err(Error::VmExited {
                    what: "the hostfwd connection".into(),
                    stderr: self.stderr_text(),
                    console_tail: self.console_tail(),
                });
            }
            if Instant::now() >= end {
                return Err(Error::Timeout {
                    what: format!("VM server behind 127.0.0.1:{port}"),
                    after: timeout,
                    console_tail: self.console_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn has_exited(&self) -> bool {
        if lock(&self.finished).is_some() {
            return true;
        }
        matches!(lock(&self.child).try_wait(), Ok(Some(_)))
    }

    /// Wait (at most `timeout`, and never past [`VmOptions::timeout`] from boot) for the
    /// command to finish and the VM to power off, then parse the console. On time-out QEMU is
    /// killed and [`Error::Timeout`] returned.
    pub fn wait(&self, timeout: Duration) -> Result<VmOutcome> {
        let end = (Instant::now() + timeout).min(self.deadline);
        let mut halt_seen: Option<Instant> = None;
        let status = loop {
            if let Some(st) = *lock(&self.finished) {
                break st;
            }
            let st = lock(&self.child).try_wait().map_err(io("wait for qemu"))?;
            if let Some(st) = st {
                *lock(&self.finished) = Some(Some(st));
                break Some(st);
            }
            // The kernel's power-off can hang (seen: rxe tearing down a QP that is still
            // retrying forever); the outcome is on the console already, so do not wait long.
            if halt_seen.is_none() && contains(&lock(&self.console.0).text, MARK_HALT.as_bytes()) {
                halt_seen = Some(Instant::now());
            }
            if halt_seen.is_some_and(|t| t.elapsed() >= HALT_GRACE) {
                self.kill();
                continue;
            }
            if Instant::now() >= end {
                self.kill();
                return Err(Error::Timeout {
                    what: "the VM command to finish".into(),
                    after: timeout,
                    console_tail: self.console_tail(),
                });
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let total = self.started.elapsed();
        // Let the reader thread drain the pipe.
        {
            let (m, cv) = &*self.console;
            let mut g = lock(m);
            let drain_end = Instant::now() + Duration::from_secs(2);
            while !g.eof {
                let now = Instant::now();
                if now >= drain_end {
                    break;
                }
                g = cv.wait_timeout(g, drain_end - now).unwrap_or_else(|p| p.into_inner()).0;
            }
        }
        let console_log = self.console();
        let (exit_code, stdout_of_cmd) =
            parse_run(&console_log).ok_or_else(|| Error::NoExitMarker(self.console_tail()))?;
        Ok(VmOutcome {
            exit_code,
            stdout_of_cmd,
            console_log,
            qemu_status: status,
            ready_after: self.ready_after(),
            total,
        })
    }

    /// Kill QEMU now (idempotent).
    pub fn kill(&self) {
        let mut g = lock(&self.child);
        let st = match g.try_wait() {
            Ok(Some(st)) => Some(st),
            _ => {
                let _ = g.kill();
                let _ = g.wait();
                None
            }
        };
        drop(g);
        let mut f = lock(&self.finished);
        if f.is_none() {
            *f = Some(st);
        }
    }
}

impl Drop for RxeVm {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(d) = &self.extra_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Parse `=== RUN BEGIN` … `=== RUN EXIT <rc>` out of a console log (`\r` already removed):
/// the exit code and the command's output.
pub fn parse_run(console: &str) -> Option<(i32, String)> {
    let console = console.replace('\r', "");
    let begin = console.find(&format!("{MARK_BEGIN}\n"))? + MARK_BEGIN.len() + 1;
    let rest = &console[begin..];
    let exit_at = rest.find(&format!("\n{MARK_EXIT}"))?;
    let out = &rest[..exit_at];
    let code_text = &rest[exit_at + 1 + MARK_EXIT.len()..];
    let code: i32 = code_text.split(|c: char| c.is_whitespace()).next()?.parse().ok()?;
    // /init prints one extra newline before the marker (so output without a final newline
    // cannot merge into it); the "\n" matched in front of the marker is that one.
    Some((code, out.to_string()))
}

/// Standard base64 (RFC 4648, with padding, no line breaks), as busybox `base64 -d` reads it.
pub fn base64_encode(data: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::with_capacity(data.len().div_ceil(3) * 4);
    for ch in data.chunks(3) {
        let b = [ch[0], *ch.get(1).unwrap_or(&0), *ch.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= ch.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// ARP

/// Answer an ARP request for `my_ip` with `my_mac` (Ethernet II, untagged). Returns the reply
/// frame (padded to the 60-byte Ethernet minimum), or None if `frame` is anything else.
pub fn arp_reply(frame: &[u8], my_ip: Ipv4Addr, my_mac: [u8; 6]) -> Option<Vec<u8>> {
    if frame.len() < 42 || frame[12..14] != [0x08, 0x06] {
        return None;
    }
    let a = &frame[14..42];
    // htype 1 (Ethernet), ptype IPv4, hlen 6, plen 4, oper 1 (request)
    if a[0..8] != [0, 1, 0x08, 0x00, 6, 4, 0, 1] || a[24..28] != my_ip.octets() {
        return None;
    }
    let sha = &a[8..14];
    let spa = &a[14..18];
    let mut r = Vec::with_capacity(60);
    r.extend_from_slice(sha);
    r.extend_from_slice(&my_mac);
    r.extend_from_slice(&[0x08, 0x06, 0, 1, 0x08, 0x00, 6, 4, 0, 2]);
    r.extend_from_slice(&my_mac);
    r.extend_from_slice(&my_ip.octets());
    r.extend_from_slice(sha);
    r.extend_from_slice(spa);
    r.resize(60, 0);
    Some(r)
}

// ---------------------------------------------------------------------------------------------
// ibv_rc_pingpong's out-of-band exchange (rdma-core libibverbs/examples/rc_pingpong.c)

/// Size of one ibv_rc_pingpong message: `sizeof "0000:000000:000000:" + 32 hex digits`.
pub const PINGPONG_MSG_LEN: usize = 52;
/// What the client writes after reading the server's message: `write(fd, "done", sizeof
/// "done")`, i.e. 5 bytes with the NUL (not a full 52-byte message).
pub const PINGPONG_DONE: &[u8; 5] = b"done\0";

/// One side's QP address as ibv_rc_pingpong exchanges it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PingpongPeerInfo {
    /// LID (0 on RoCE).
    pub lid: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// Initial PSN (24 bits).
    pub psn: u32,
    /// GID (`::ffff:a.b.c.d` for RoCEv2 over IPv4; all zero without `-g`).
    pub gid: [u8; 16],
}

impl PingpongPeerInfo {
    /// `sprintf(msg, "%04x:%06x:%06x:%s", lid, qpn, psn, gid)`, GID as 32 hex digits in
    /// wire (byte) order (`gid_to_wire_gid` prints `htonl` of each 32-bit word), NUL-padded to
    /// [`PINGPONG_MSG_LEN`]. QPN and PSN are masked to 24 bits.
    pub fn encode(&self) -> [u8; PINGPONG_MSG_LEN] {
        let mut s = format!("{:04x}:{:06x}:{:06x}:", self.lid, self.qpn & 0xFF_FFFF, self.psn & 0xFF_FFFF);
        for b in self.gid {
            let _ = write!(s, "{b:02x}");
        }
        let mut m = [0u8; PINGPONG_MSG_LEN];
        m[..s.len()].copy_from_slice(s.as_bytes());
        m
    }

    /// Parse a message (like the tool's `sscanf("%x:%x:%x:%s")` + `wire_gid_to_gid`, but
    /// strict: exact field widths, hex digits only, NUL padding).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        let bad = |why: &str| Error::BadMessage {
            what: "ibv_rc_pingpong",
            got: String::from_utf8_lossy(msg).into_owned(),
            why: why.to_string(),
        };
        if msg.len() != PINGPONG_MSG_LEN {
            return Err(bad(&format!("length {} != {PINGPONG_MSG_LEN}", msg.len())));
        }
        let text_len = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        if msg[text_len..].iter().any(|&b| b != 0) {
            return Err(bad("bytes after the NUL"));
        }
        let t = std::str::from_utf8(&msg[..text_len]).map_err(|_| bad("not ASCII"))?;
        let f: Vec<&str> = t.split(':').collect();
        if f.len() != 4 || f[0].len() != 4 || f[1].len() != 6 || f[2].len() != 6 || f[3].len() != 32 {
            return Err(bad("not LLLL:QQQQQQ:PPPPPP:<32 hex>"));
        }
        let lid = hex_u64(f[0]).ok_or_else(|| bad("LID"))? as u16;
        let qpn = hex_u64(f[1]).ok_or_else(|| bad("QPN"))? as u32;
        let psn = hex_u64(f[2]).ok_or_else(|| bad("PSN"))? as u32;
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = hex_u64(&f[3][2 * i..2 * i + 2]).ok_or_else(|| bad("GID"))? as u8;
        }
        Ok(PingpongPeerInfo { lid, qpn, psn, gid })
    }
}

fn hex_u64(s: &str) -> Option<u64> {
    if s.is_empty() || s.len() > 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn read_exact_what<S: Read>(s: &mut S, buf: &mut [u8], what: &str) -> Result<()> {
    s.read_exact(buf).map_err(io(format!("read {what}")))
}

fn write_all_what<S: Write>(s: &mut S, buf: &[u8], what: &str) -> Result<()> {
    s.write_all(buf).and_then(|_| s.flush()).map_err(io(format!("write {what}")))
}

/// The server side of ibv_rc_pingpong's exchange (`pp_server_exch_dest`): read the client's
/// message, call `on_remote` (the real tool moves its QP to RTR here, before answering), write
/// ours, read the client's `"done\0"`.
pub fn pingpong_server_exchange_with<S, F>(
    stream: &mut S,
    mine: &PingpongPeerInfo,
    on_remote: F,
) -> Result<PingpongPeerInfo>
where
    S: Read + Write,
    F: FnOnce(&PingpongPeerInfo) -> Result<()>,
{
    let mut m = [0u8; PINGPONG_MSG_LEN];
    read_exact_what(stream, &mut m, "ibv_rc_pingpong client message")?;
    let theirs = PingpongPeerInfo::parse(&m)?;
    on_remote(&theirs)?;
    write_all_what(stream, &mine.encode(), "ibv_rc_pingpong server message")?;
    let mut d = [0u8; PINGPONG_DONE.len()];
    read_exact_what(stream, &mut d, "ibv_rc_pingpong \"done\"")?;
    if &d != PINGPONG_DONE {
        return Err(Error::BadMessage {
            what: "ibv_rc_pingpong done",
            got: String::from_utf8_lossy(&d).into_owned(),
            why: "expected \"done\\0\"".into(),
        });
    }
    Ok(theirs)
}

/// [`pingpong_server_exchange_with`] without the callback.
pub fn pingpong_server_exchange<S: Read + Write>(stream: &mut S, mine: &PingpongPeerInfo) -> Result<PingpongPeerInfo> {
    pingpong_server_exchange_with(stream, mine, |_| Ok(()))
}

/// [`accept_timeout`] then [`pingpong_server_exchange`].
pub fn pingpong_server_accept(
    listener: &TcpListener,
    mine: &PingpongPeerInfo,
    timeout: Duration,
) -> Result<PingpongPeerInfo> {
    let mut s = accept_timeout(listener, timeout)?;
    s.set_read_timeout(Some(timeout)).map_err(io("set_read_timeout"))?;
    pingpong_server_exchange(&mut s, mine)
}

/// The client side (`pp_client_exch_dest`): write ours, read the server's, write `"done\0"`.
/// The server has its QP at RTR by then; the client moves its own QP to RTR/RTS afterwards and
/// sends the first SEND.
pub fn pingpong_client_exchange<S: Read + Write>(stream: &mut S, mine: &PingpongPeerInfo) -> Result<PingpongPeerInfo> {
    write_all_what(stream, &mine.encode(), "ibv_rc_pingpong client message")?;
    let mut m = [0u8; PINGPONG_MSG_LEN];
    read_exact_what(stream, &mut m, "ibv_rc_pingpong server message")?;
    let theirs = PingpongPeerInfo::parse(&m)?;
    write_all_what(stream, PINGPONG_DONE, "ibv_rc_pingpong \"done\"")?;
    Ok(theirs)
}

// ---------------------------------------------------------------------------------------------
// perftest's Ethernet (TCP socket) exchange, as ib_write_bw / ib_read_bw 4.5+0.17 (Debian
// bookworm) do it without rdma_cm. Source: perftest src/perftest_communication.{c,h}
// (ethernet_write_keys / ethernet_read_keys / ctx_xchg_data_ethernet / exchange_versions /
// check_sys_data / check_mtu / xchg_bw_reports / ctx_close_connection), checked byte for byte
// against the TCP stream in shared/vectors/rxe/rxevm_ib_{write,read}_bw_2500B_n5.pcap.

/// `KEY_MSG_SIZE_GID` (perftest_communication.h): one QP address with GID.
pub const PERFTEST_KEY_MSG_LEN: usize = 108;
/// `sizeof(user_param->version)`: the version exchange is this many bytes.
pub const PERFTEST_VERSION_LEN: usize = 16;
/// Version string of Debian's perftest 4.5+0.17 binaries (seen on the wire).
pub const PERFTEST_VERSION: &str = "6.06";
/// Handshakes ([`PerftestConn::hand_shake`]) ib_write_bw/ib_read_bw 4.5+0.17 make before the
/// traffic with one QP: the address exchange, the second one after `ctx_connect` (RTR/RTS),
/// and "an additional handshake ... after moving qp to RTR" (3 seen on the wire).
pub const PERFTEST_PRE_TRAFFIC_HANDSHAKES: usize = 3;

/// perftest's `struct pingpong_dest` as exchanged with a GID (`KEY_PRINT_FMT_GID`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PerftestDest {
    /// LID.
    pub lid: u16,
    /// Outstanding RDMA reads (`-o`, 0x80 for ib_read_bw on rxe, 1 for ib_write_bw).
    pub out_reads: u16,
    /// QP number (24 bits).
    pub qpn: u32,
    /// Initial PSN (24 bits).
    pub psn: u32,
    /// R_Key of the buffer.
    pub rkey: u32,
    /// Virtual address of the buffer.
    pub vaddr: u64,
    /// GID.
    pub gid: [u8; 16],
    /// SRQ number (XRC/DC only; 0).
    pub srqn: u32,
}

impl PerftestDest {
    /// `sprintf(msg, "%04x:%04x:%06x:%06x:%08x:%016llx:%02x:…(16 GID bytes, each followed by
    /// ':')…%08x:", lid, out_reads, qpn, psn, rkey, vaddr, gid[0..16], srqn)`: 107 characters
    /// and a NUL = [`PERFTEST_KEY_MSG_LEN`].
    pub fn encode(&self) -> [u8; PERFTEST_KEY_MSG_LEN] {
        let mut s = format!(
            "{:04x}:{:04x}:{:06x}:{:06x}:{:08x}:{:016x}:",
            self.lid,
            self.out_reads,
            self.qpn & 0xFF_FFFF,
            self.psn & 0xFF_FFFF,
            self.rkey,
            self.vaddr
        );
        for b in self.gid {
            let _ = write!(s, "{b:02x}:");
        }
        let _ = write!(s, "{:08x}:", self.srqn);
        let mut m = [0u8; PERFTEST_KEY_MSG_LEN];
        let n = s.len().min(PERFTEST_KEY_MSG_LEN - 1);
        m[..n].copy_from_slice(&s.as_bytes()[..n]);
        m
    }

    /// Parse a 108-byte message (strict widths; perftest itself splits on ':' and strtol's).
    pub fn parse(msg: &[u8]) -> Result<Self> {
        let bad = |why: &str| Error::BadMessage {
            what: "perftest key",
            got: String::from_utf8_lossy(msg).into_owned(),
            why: why.to_string(),
        };
        if msg.len() != PERFTEST_KEY_MSG_LEN {
            return Err(bad(&format!("length {} != {PERFTEST_KEY_MSG_LEN}", msg.len())));
        }
        let text_len = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        if msg[text_len..].iter().any(|&b| b != 0) {
            return Err(bad("bytes after the NUL"));
        }
        let t = std::str::from_utf8(&msg[..text_len]).map_err(|_| bad("not ASCII"))?;
        let t = t.strip_suffix(':').ok_or_else(|| bad("no trailing ':'"))?;
        let f: Vec<&str> = t.split(':').collect();
        let widths = [4, 4, 6, 6, 8, 16];
        if f.len() != 6 + 16 + 1 {
            return Err(bad(&format!("{} fields, expected 23", f.len())));
        }
        for (i, w) in widths.iter().enumerate() {
            if f[i].len() != *w {
                return Err(bad(&format!("field {i} has width {}, expected {w}", f[i].len())));
            }
        }
        if f[6..22].iter().any(|g| g.len() != 2) || f[22].len() != 8 {
            return Err(bad("GID bytes or SRQN width"));
        }
        let h = |i: usize| hex_u64(f[i]).ok_or_else(|| bad(&format!("field {i} not hex")));
        let mut gid = [0u8; 16];
        for (i, g) in gid.iter_mut().enumerate() {
            *g = h(6 + i)? as u8;
        }
        Ok(PerftestDest {
            lid: h(0)? as u16,
            out_reads: h(1)? as u16,
            qpn: h(2)? as u32,
            psn: h(3)? as u32,
            rkey: h(4)? as u32,
            vaddr: h(5)?,
            gid,
            srqn: h(22)? as u32,
        })
    }
}

/// Which side of a perftest connection we play. The client (the side given a server name)
/// writes first in every exchange; the server reads first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PerftestRole {
    /// `ib_write_bw SERVER` side: connects, writes first.
    Client,
    /// `ib_write_bw` without a server name: accepts, reads first.
    Server,
}

/// What perftest negotiated before the address exchange.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PerftestNegotiated {
    /// The peer's version string.
    pub remote_version: String,
    /// max(ours, theirs) of the cycle buffer (page size), as both sides then use it.
    pub cycle_buffer: u32,
    /// max(ours, theirs) of the cache line size.
    pub cache_line_size: u32,
    /// The peer's path MTU as an `ibv_mtu` enum (1=256 … 5=4096).
    pub remote_mtu_enum: u8,
}

/// The 5 values of `xchg_bw_reports` (each 8 bytes, big-endian; doubles as IEEE bits).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct BwReport {
    /// Message size.
    pub size: u64,
    /// Iterations (8 bytes when the peer's version >= 5.33).
    pub iters: u64,
    /// Peak bandwidth, MB/s.
    pub bw_peak: f64,
    /// Average bandwidth, MB/s.
    pub bw_avg: f64,
    /// Average message rate, Mpps.
    pub msg_rate_avg: f64,
}

/// A perftest side channel (one TCP connection) and the sequence of exchanges on it.
pub struct PerftestConn<S: Read + Write> {
    /// The stream (set timeouts on it as needed).
    pub stream: S,
    /// Our role.
    pub role: PerftestRole,
}

impl<S: Read + Write> PerftestConn<S> {
    /// Wrap a connected stream.
    pub fn new(stream: S, role: PerftestRole) -> Self {
        PerftestConn { stream, role }
    }

    /// `ctx_xchg_data_ethernet`: the client writes then reads; the server reads then writes.
    /// Both sides use the same size.
    pub fn xchg(&mut self, mine: &[u8], what: &str) -> Result<Vec<u8>> {
        let mut theirs = vec![0u8; mine.len()];
        match self.role {
            PerftestRole::Client => {
                write_all_what(&mut self.stream, mine, what)?;
                read_exact_what(&mut self.stream, &mut theirs, what)?;
            }
            PerftestRole::Server => {
                read_exact_what(&mut self.stream, &mut theirs, what)?;
                write_all_what(&mut self.stream, mine, what)?;
            }
        }
        Ok(theirs)
    }

    /// `exchange_versions`: 16 bytes, the version string NUL-padded.
    pub fn exchange_versions(&mut self, version: &str) -> Result<String> {
        let mut v = [0u8; PERFTEST_VERSION_LEN];
        let n = version.len().min(PERFTEST_VERSION_LEN - 1);
        v[..n].copy_from_slice(&version.as_bytes()[..n]);
        let r = self.xchg(&v, "perftest version")?;
        let end = r.iter().position(|&b| b == 0).unwrap_or(r.len());
        let s = std::str::from_utf8(&r[..end]).map_err(|_| Error::BadMessage {
            what: "perftest version",
            got: String::from_utf8_lossy(&r).into_owned(),
            why: "not text".into(),
        })?;
        Ok(s.to_string())
    }

    /// `check_sys_data` (peer version >= 5.32): cycle buffer then cache line size, each a
    /// 4-byte big-endian int. Returns the maxima.
    pub fn sys_data(&mut self, cycle_buffer: u32, cache_line_size: u32) -> Result<(u32, u32)> {
        let a = self.xchg(&cycle_buffer.to_be_bytes(), "perftest cycle buffer")?;
        let b = self.xchg(&cache_line_size.to_be_bytes(), "perftest cache line size")?;
        let ra = u32::from_be_bytes([a[0], a[1], a[2], a[3]]);
        let rb = u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        Ok((ra.max(cycle_buffer), rb.max(cache_line_size)))
    }

    /// `check_mtu` (peer version >= 5.31): `sprintf(cur, "%d", mtu_enum)` sent as 2 bytes
    /// (`sizeof(char[2])`), e.g. `"3\0"` for 1024. Returns the peer's enum.
    pub fn mtu(&mut self, mtu_enum: u8) -> Result<u8> {
        if !(1..=5).contains(&mtu_enum) {
            return Err(Error::Options(format!("ibv_mtu enum {mtu_enum} not in 1..=5")));
        }
        let r = self.xchg(&[b'0' + mtu_enum, 0], "perftest mtu")?;
        match r[0] {
            b'1'..=b'5' if r[1] == 0 => Ok(r[0] - b'0'),
            _ => Err(Error::BadMessage {
                what: "perftest mtu",
                got: String::from_utf8_lossy(&r).into_owned(),
                why: "expected one digit 1-5 and NUL".into(),
            }),
        }
    }

    /// `ctx_hand_shake` over Ethernet: one [`PerftestDest`] each way (client first).
    pub fn hand_shake(&mut self, mine: &PerftestDest) -> Result<PerftestDest> {
        let r = self.xchg(&mine.encode(), "perftest key")?;
        PerftestDest::parse(&r)
    }

    /// Everything before the traffic for one RC QP: versions, sys data, MTU, then
    /// [`PERFTEST_PRE_TRAFFIC_HANDSHAKES`] handshakes. Returns the peer's address (from the
    /// first handshake; the later ones repeat it) and what was negotiated. The real tool moves
    /// its QP to RTR/RTS between the first and second handshake: pass a callback for that.
    pub fn bw_connect_with<F>(
        &mut self,
        mine: &PerftestDest,
        mtu_enum: u8,
        on_remote: F,
    ) -> Result<(PerftestDest, PerftestNegotiated)>
    where
        F: FnOnce(&PerftestDest) -> Result<()>,
    {
        let remote_version = self.exchange_versions(PERFTEST_VERSION)?;
        let (cycle_buffer, cache_line_size) = self.sys_data(4096, 64)?;
        let remote_mtu_enum = self.mtu(mtu_enum)?;
        let theirs = self.hand_shake(mine)?;
        on_remote(&theirs)?;
        for _ in 1..PERFTEST_PRE_TRAFFIC_HANDSHAKES {
            let again = self.hand_shake(mine)?;
            if again != theirs {
                return Err(Error::Protocol(format!(
                    "peer changed its address between handshakes: {theirs:?} then {again:?}"
                )));
            }
        }
        Ok((theirs, PerftestNegotiated { remote_version, cycle_buffer, cache_line_size, remote_mtu_enum }))
    }

    /// [`PerftestConn::bw_connect_with`] without the callback.
    pub fn bw_connect(&mut self, mine: &PerftestDest, mtu_enum: u8) -> Result<(PerftestDest, PerftestNegotiated)> {
        self.bw_connect_with(mine, mtu_enum, |_| Ok(()))
    }

    /// `xchg_bw_reports` for a peer version >= 5.33: size, iters, bw_peak, bw_avg,
    /// msgRate_avg, each 8 bytes big-endian (no per-port values without `--report-per-port`).
    pub fn bw_reports(&mut self, mine: &BwReport) -> Result<BwReport> {
        let mut g = |v: u64, what: &str| -> Result<u64> {
            let r = self.xchg(&v.to_be_bytes(), what)?;
            let mut b = [0u8; 8];
            b.copy_from_slice(&r);
            Ok(u64::from_be_bytes(b))
        };
        Ok(BwReport {
            size: g(mine.size, "perftest report size")?,
            iters: g(mine.iters, "perftest report iters")?,
            bw_peak: f64::from_bits(g(mine.bw_peak.to_bits(), "perftest report bw_peak")?),
            bw_avg: f64::from_bits(g(mine.bw_avg.to_bits(), "perftest report bw_avg")?),
            msg_rate_avg: f64::from_bits(g(mine.msg_rate_avg.to_bits(), "perftest report msgRate")?),
        })
    }

    /// `ctx_close_connection`: one more handshake, then each side writes `"done\0"` (5 bytes)
    /// and closes without reading the other's.
    pub fn close(&mut self, mine: &PerftestDest) -> Result<()> {
        self.hand_shake(mine)?;
        write_all_what(&mut self.stream, PINGPONG_DONE, "perftest \"done\"")
    }

    /// After the traffic, for a half-duplex BW test (both roles do the same): handshake,
    /// report exchange, [`PerftestConn::close`]. Returns the peer's report.
    pub fn bw_finish(&mut self, mine: &PerftestDest, report: &BwReport) -> Result<BwReport> {
        self.hand_shake(mine)?;
        let theirs = self.bw_reports(report)?;
        self.close(mine)?;
        Ok(theirs)
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    fn unhex(s: &str) -> Vec<u8> {
        (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap()).collect()
    }

    /// The client message of shared/vectors/rxe/rxevm_rc_pingpong_send64_n5.pcap (frame 6).
    const PP_CLIENT: &str =
        "303030303a3030303031313a3031396564663a303030303030303030303030303030303030303066666666633030303032303200";
    /// ib_write_bw client key, rxevm_ib_write_bw_2500B_n5.pcap frame 17.
    const PT_CLIENT: &str = "303030303a303030313a3030303031313a6532616266303a30303030303264663a303030303536316631663138613030303a30303a30303a30303a30303a30303a30303a30303a30303a30303a30303a66663a66663a63303a30303a30323a30323a30303030303030303a00";

    #[test]
    fn pingpong_matches_capture() {
        let m = unhex(PP_CLIENT);
        let p = PingpongPeerInfo::parse(&m).unwrap();
        assert_eq!(
            p,
            PingpongPeerInfo { lid: 0, qpn: 0x11, psn: 0x019edf, gid: gid_from_ipv4(Ipv4Addr::new(192, 0, 2, 2)) }
        );
        assert_eq!(p.encode().as_slice(), m.as_slice());
        assert!(PingpongPeerInfo::parse(&m[..51]).is_err());
        let mut bad = m.clone();
        bad[5] = b'x';
        assert!(PingpongPeerInfo::parse(&bad).is_err());
    }

    #[test]
    fn perftest_matches_capture() {
        let m = unhex(PT_CLIENT);
        let d = PerftestDest::parse(&m).unwrap();
        assert_eq!(
            d,
            PerftestDest {
                lid: 0,
                out_reads: 1,
                qpn: 0x11,
                psn: 0xe2abf0,
                rkey: 0x2df,
                vaddr: 0x561f1f18a000,
                gid: gid_from_ipv4(Ipv4Addr::new(192, 0, 2, 2)),
                srqn: 0
            }
        );
        assert_eq!(d.encode().as_slice(), m.as_slice());
    }

    #[test]
    fn arp() {
        let mut req = vec![0xff; 6];
        req.extend_from_slice(&[0x52, 0x54, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 0x08, 0, 6, 4, 0, 1]);
        req.extend_from_slice(&[0x52, 0x54, 0, 0, 0, 1, 192, 0, 2, 1]);
        req.extend_from_slice(&[0; 6]);
        req.extend_from_slice(&[192, 0, 2, 2]);
        let me = [0x52, 0x54, 0, 0, 0, 2];
        let r = arp_reply(&req, Ipv4Addr::new(192, 0, 2, 2), me).unwrap();
        assert_eq!(r.len(), 60);
        assert_eq!(&r[0..6], &[0x52, 0x54, 0, 0, 0, 1]);
        assert_eq!(&r[6..12], &me);
        assert_eq!(&r[20..22], &[0, 2]);
        assert_eq!(&r[22..28], &me);
        assert_eq!(&r[28..32], &[192, 0, 2, 2]);
        assert_eq!(&r[38..42], &[192, 0, 2, 1]);
        assert!(arp_reply(&req, Ipv4Addr::new(192, 0, 2, 3), me).is_none());
        assert!(arp_reply(&r, Ipv4Addr::new(192, 0, 2, 1), me).is_none()); // a reply, not a request
    }

    #[test]
    fn run_markers() {
        let c =
            "junk\r\n=== VM READY mtu=1500\r\n=== RUN BEGIN\r\nhello\r\nworld\r\n\r\n=== RUN EXIT 3\r\n=== VM HALT\r\n";
        assert_eq!(parse_run(c), Some((3, "hello\nworld\n".to_string())));
        assert_eq!(parse_run("=== RUN BEGIN\n\n=== RUN EXIT 0\n"), Some((0, String::new())));
        assert_eq!(parse_run("=== RUN BEGIN\nx"), None);
    }

    #[test]
    fn handle_is_send_sync() {
        fn f<T: Send + Sync>() {}
        f::<RxeVm>();
        f::<PerftestConn<TcpStream>>();
    }

    #[test]
    fn b64() {
        assert_eq!(base64_encode(b""), "");
        assert_eq!(base64_encode(b"f"), "Zg==");
        assert_eq!(base64_encode(b"fo"), "Zm8=");
        assert_eq!(base64_encode(b"foo"), "Zm9v");
        assert_eq!(base64_encode(b"foob"), "Zm9vYg==");
    }

    #[test]
    fn exchanges_over_loopback() {
        let l = side_listener().unwrap();
        let port = l.local_addr().unwrap().port();
        let a = PingpongPeerInfo { lid: 0, qpn: 0x123, psn: 0xabcdef, gid: gid_from_ipv4(Ipv4Addr::new(192, 0, 2, 2)) };
        let b = PingpongPeerInfo { lid: 0, qpn: 0x11, psn: 0x42, gid: gid_from_ipv4(Ipv4Addr::new(192, 0, 2, 1)) };
        let t = std::thread::spawn(move || pingpong_server_accept(&l, &a, Duration::from_secs(5)).unwrap());
        let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        assert_eq!(pingpong_client_exchange(&mut s, &b).unwrap(), a);
        assert_eq!(t.join().unwrap(), b);

        let l = side_listener().unwrap();
        let port = l.local_addr().unwrap().port();
        let da = PerftestDest {
            qpn: 0x77,
            psn: 0x1234,
            rkey: 0x99,
            vaddr: 0x7f00_0000_1000,
            out_reads: 1,
            ..Default::default()
        };
        let db = PerftestDest {
            qpn: 0x11,
            psn: 0x55,
            rkey: 0x2df,
            vaddr: 0x5600_0000_0000,
            out_reads: 1,
            ..Default::default()
        };
        let t = std::thread::spawn(move || {
            let s = accept_timeout(&l, Duration::from_secs(5)).unwrap();
            let mut c = PerftestConn::new(s, PerftestRole::Server);
            let (theirs, n) = c.bw_connect(&da, 3).unwrap();
            let rep = c.bw_finish(&da, &BwReport::default()).unwrap();
            (theirs, n, rep)
        });
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut c = PerftestConn::new(s, PerftestRole::Client);
        let (theirs, n) = c.bw_connect(&db, 3).unwrap();
        assert_eq!(theirs, da);
        assert_eq!(n.remote_version, PERFTEST_VERSION);
        let rep = BwReport { size: 2500, iters: 5, bw_peak: 0.41, bw_avg: 0.41, msg_rate_avg: 0.000173 };
        c.bw_finish(&db, &rep).unwrap();
        let (t_theirs, _, t_rep) = t.join().unwrap();
        assert_eq!(t_theirs, db);
        assert_eq!(t_rep, rep);
    }
}
