//! Debian's verbs programs on this library against the same programs on Linux's own RoCEv2
//! stack: Soft-RoCE (rdma_rxe) in a QEMU VM (`roce_tests::rxevm`), the VM's eth0 wired to the
//! library's engine by the unix datagram sockets of `ROCE_VERBS_DEVICE`. The tools' TCP
//! exchange goes over QEMU user networking. Both directions, the same programs: the VM's
//! tools as servers with ours as clients, and the VM's as clients with ours as servers
//! (ibv_rc_pingpong on the model and on the Verilated engine, then the six perftest programs
//! on the model).
//!
//! Gated like the other VM tests: `ROCE_RXEVM=1` (scripts/test.sh sets it when QEMU is
//! installed). Each direction is one boot running every program; `ROCE_VERBS_MATRIX=1` adds
//! 64 KiB runs.

mod common;

use std::net::Ipv4Addr;
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use roce_tests::rxevm::{self, Eth0Link, RxeVm, VmOptions, GUESTFWD_ADDR};

const VM_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
/// Path MTU of every run: rxe's active MTU with a 1500-byte eth0.
const MTU: &str = "1024";

fn image() -> Option<std::path::PathBuf> {
    if !rxevm::enabled() {
        eprintln!("SKIPPED: set ROCE_RXEVM=1");
        return None;
    }
    Some(RxeVm::build_image().unwrap_or_else(|e| panic!("{e}")))
}

fn matrix() -> bool {
    std::env::var("ROCE_VERBS_MATRIX").is_ok_and(|v| v == "1")
}

/// Boot a VM running `cmd`, its eth0 linked to `lib_sock` (our device binds it) through
/// `vm_sock`, its tools' port reached at `127.0.0.1:hostfwd`.
fn boot(img: &Path, cmd: &str, lib_sock: &Path, vm_sock: &Path, hostfwd: u16) -> RxeVm {
    let o = VmOptions {
        cmd: cmd.into(),
        vm_ip: VM_IP,
        peer_ip: HOST_IP,
        peer_mac: roce_verbs::config::mac_of(HOST_IP),
        link: Eth0Link::Sockets { local: vm_sock.to_path_buf(), remote: lib_sock.to_path_buf() },
        hostfwd_port: Some(hostfwd),
        timeout: Duration::from_secs(600),
        ..VmOptions::default()
    };
    RxeVm::boot_from(img, o).expect("boot the VM")
}

/// A Debian tool on our library, its device on `lib_sock` sending to `vm_sock`.
fn host_tool(kind: &str, prog: &str, args: &[&str], lib_sock: &Path, vm_sock: &Path) -> Child {
    Command::new("timeout")
        .arg("300")
        .arg(prog)
        .args(args)
        .env("LD_LIBRARY_PATH", libdir())
        .env("ROCE_VERBS_DEVICE", device(kind, lib_sock, vm_sock, &HOST_IP.to_string()))
        .env("ROCE_VERBS_MTU", MTU)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the host tool")
}

fn finish(c: Child) -> Side {
    let o = c.wait_with_output().expect("wait");
    let mut text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    Side { code: o.status.code(), text }
}

/// Wait until `needle` has appeared `n` times on the VM's console.
fn wait_count(vm: &RxeVm, needle: &str, n: usize, timeout: Duration) {
    let end = Instant::now() + timeout;
    while vm.console().matches(needle).count() < n {
        assert!(Instant::now() < end, "the VM's console did not show {needle:?} {n} times:\n{}", vm.console());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A program's arguments on both sides (the VM's with its rxe device and GID index 1).
struct Run {
    prog: &'static str,
    args: Vec<&'static str>,
    /// ibv_rc_pingpong (else perftest).
    pingpong: bool,
    /// The engine of our side.
    kind: &'static str,
}

impl Run {
    fn vm_cmd(&self) -> String {
        let dev = if self.pingpong { "-d rxe0 -g 1" } else { "-d rxe0 -x 1 -F" };
        format!("{} {dev} -m {MTU} {}", self.prog, self.args.join(" "))
    }

    fn host_args(&self) -> Vec<&'static str> {
        let mut a: Vec<&'static str> = if self.pingpong { vec!["-g", "0"] } else { vec!["-x", "0"] };
        a.extend(["-m", MTU]);
        a.extend(self.args.iter().copied());
        a
    }

    /// What a successful run of this program prints (`who` names the side: "... server"
    /// or "... client").
    fn check(&self, who: &str, text: &str) {
        if self.prog == "ib_read_lat" && who.ends_with("server") {
            // the passive side of an RDMA READ test reports no figures
            assert!(
                text.contains("RDMA_Read Latency Test") && !text.contains("Couldn't") && !text.contains("Failed"),
                "{} {who}:\n{text}",
                self.prog
            );
        } else if self.pingpong {
            let n =
                self.args.iter().position(|a| *a == "-n").and_then(|i| self.args.get(i + 1)).copied().unwrap_or("?");
            assert!(text.contains(&format!("{n} iters in")), "{} {who}:\n{text}", self.prog);
        } else {
            assert!(
                text.contains("#bytes") && !text.contains("Couldn't") && !text.contains("Failed"),
                "{} {who}:\n{text}",
                self.prog
            );
        }
    }
}

fn pingpong(kind: &'static str, size: &'static str, n: &'static str) -> Run {
    Run { prog: "ibv_rc_pingpong", args: vec!["-s", size, "-n", n], pingpong: true, kind }
}

fn perf(prog: &'static str, size: &'static str, n: &'static str) -> Run {
    Run { prog, args: vec!["-s", size, "-n", n], pingpong: false, kind: "sim" }
}

#[test]
fn vm_servers_host_clients() {
    let Some(img) = image() else { return };
    let runs = vec![
        pingpong("sim", "5000", "10"),
        pingpong("sim-hdl", "2000", "3"),
        perf("ib_write_bw", "4096", "20"),
        perf("ib_read_bw", "4096", "20"),
        perf("ib_send_bw", "4096", "20"),
        perf("ib_write_lat", "64", "20"),
        perf("ib_read_lat", "64", "20"),
        perf("ib_send_lat", "64", "20"),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let (lib_sock, vm_sock) = (dir.path().join("lib.sock"), dir.path().join("vm.sock"));
    let hostfwd = rxevm::free_local_port().expect("port");
    let cmd: Vec<String> = runs.iter().enumerate().map(|(k, r)| marked("SERVER", k, &r.vm_cmd())).collect();
    let t = Instant::now();
    let vm = boot(&img, &cmd.join("; "), &lib_sock, &vm_sock, hostfwd);
    let port = hostfwd.to_string();
    let (mut pp, mut pt) = (0, 0);
    for r in &runs {
        // the VM's server is up: it printed its banner (then listens)
        if r.pingpong {
            pp += 1;
            wait_count(&vm, "local address", pp, Duration::from_secs(300));
        } else {
            pt += 1;
            wait_count(&vm, "Waiting for client to connect", pt, Duration::from_secs(300));
        }
        std::thread::sleep(Duration::from_secs(1));
        let mut a = r.host_args();
        a.extend(["-p", &port, "127.0.0.1"]);
        let t1 = Instant::now();
        let s = finish(host_tool(r.kind, r.prog, &a, &lib_sock, &vm_sock));
        eprintln!("host {} on {} -> VM server: {:.1}s\n{}", r.prog, r.kind, t1.elapsed().as_secs_f64(), s.text.trim());
        assert!(s.ok(), "host {} ({:?}):\n{}\n--- VM console:\n{}", r.prog, s.code, s.text, vm.console());
        r.check("host client", &s.text);
    }
    let out = vm.wait(Duration::from_secs(300)).expect("VM run");
    eprintln!("VM servers, host clients: {:.1}s", t.elapsed().as_secs_f64());
    for (k, r) in runs.iter().enumerate() {
        r.check("VM server", &section(&out.stdout_of_cmd, "SERVER", k, r.prog));
    }
}

/// The VM's command for run `k` of a boot: `cmd` between two console markers, the second
/// with its exit code; each run happens whatever the previous did.
fn marked(tag: &str, k: usize, cmd: &str) -> String {
    format!("echo '=== {tag} {k}'; timeout 150 {cmd}; echo \"=== {tag} {k} rc $?\"")
}

/// What run `k` printed in the VM; it must have exited 0.
fn section(out: &str, tag: &str, k: usize, prog: &str) -> String {
    let (begin, end) = (format!("=== {tag} {k}\n"), format!("=== {tag} {k} rc "));
    let text = out.split(&begin).nth(1).and_then(|t| t.split(&end).next()).unwrap_or("");
    let rc = out.split(&end).nth(1).and_then(|t| t.split_whitespace().next());
    assert_eq!(rc, Some("0"), "VM {prog} ({k}) failed:\n{out}");
    text.to_string()
}

/// Pipe `a` and `b` into each other until both directions end (a relay of the tools' TCP
/// side channel).
fn splice(a: TcpStream, b: TcpStream) -> Vec<std::thread::JoinHandle<()>> {
    let mut v = Vec::new();
    for (from, to) in [(a.try_clone(), b.try_clone()), (b.try_clone(), a.try_clone())] {
        let (Ok(mut from), Ok(mut to)) = (from, to) else { continue };
        v.push(std::thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(std::net::Shutdown::Write);
        }));
    }
    v
}

/// The VM's tools as clients, ours as servers, one boot for all `runs`. QEMU's `guestfwd`
/// connects each of the VM's side-channel ports to a host listener once, when it starts, but
/// our servers run one after another (each owns the library's socket in turn): the test
/// accepts QEMU's connections at boot and relays connection `k` to server `k` once that
/// server listens.
fn vm_clients(img: &Path, runs: &[Run]) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lib_sock, vm_sock) = (dir.path().join("lib.sock"), dir.path().join("vm.sock"));
    let listeners: Vec<TcpListener> = runs.iter().map(|_| rxevm::side_listener().expect("listener")).collect();
    let guest_port = |k: usize| 18516 + k as u16;
    let fwd_ports = listeners
        .iter()
        .enumerate()
        .map(|(k, l)| (guest_port(k), l.local_addr().expect("local_addr").port()))
        .collect();
    let cmd: Vec<String> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| marked("CLIENT", k, &format!("{} -p {} {GUESTFWD_ADDR}", r.vm_cmd(), guest_port(k))))
        .collect();
    let t = Instant::now();
    let o = VmOptions {
        cmd: cmd.join("; "),
        vm_ip: VM_IP,
        peer_ip: HOST_IP,
        peer_mac: roce_verbs::config::mac_of(HOST_IP),
        link: Eth0Link::Sockets { local: vm_sock.clone(), remote: lib_sock.clone() },
        fwd_ports,
        timeout: Duration::from_secs(120 + 160 * runs.len() as u64),
        ..VmOptions::default()
    };
    let vm = RxeVm::boot_from(img, o).expect("boot the VM");
    let conns: Vec<TcpStream> = listeners
        .iter()
        .map(|l| rxevm::accept_timeout(l, Duration::from_secs(120)).expect("QEMU's guestfwd connection"))
        .collect();
    for (k, (r, vm_conn)) in runs.iter().zip(conns).enumerate() {
        let port = free_port();
        let p = port.to_string();
        let mut a = r.host_args();
        a.extend(["-p", &p]);
        let t1 = Instant::now();
        let srv = host_tool(r.kind, r.prog, &a, &lib_sock, &vm_sock);
        assert!(wait_listen(port, Duration::from_secs(30)), "{} never listened", r.prog);
        let to_srv = TcpStream::connect(("127.0.0.1", port)).expect("connect to our server");
        let relay = splice(vm_conn, to_srv);
        let s = finish(srv);
        // (the VM-to-server half ends when the VM closes its side; it need not be waited for)
        drop(relay);
        eprintln!(
            "VM {} client {k} -> host server on {}: {:.1}s\n{}",
            r.prog,
            r.kind,
            t1.elapsed().as_secs_f64(),
            s.text.trim()
        );
        assert!(s.ok(), "host {} ({:?}):\n{}\n--- VM console:\n{}", r.prog, s.code, s.text, vm.console());
        r.check("host server", &s.text);
    }
    let out = vm.wait(Duration::from_secs(300)).expect("VM run");
    eprintln!("VM clients, host servers: {:.1}s", t.elapsed().as_secs_f64());
    for (k, r) in runs.iter().enumerate() {
        r.check("VM client", &section(&out.stdout_of_cmd, "CLIENT", k, r.prog));
    }
}

#[test]
fn vm_clients_host_servers() {
    let Some(img) = image() else { return };
    let mut runs = vec![
        pingpong("sim", "5000", "10"),
        pingpong("sim-hdl", "2000", "3"),
        perf("ib_write_bw", "4096", "20"),
        perf("ib_read_bw", "4096", "20"),
        perf("ib_send_bw", "4096", "20"),
        perf("ib_write_lat", "64", "20"),
        perf("ib_read_lat", "64", "20"),
        perf("ib_send_lat", "64", "20"),
    ];
    if matrix() {
        runs.extend([
            pingpong("sim", "65536", "20"),
            perf("ib_write_bw", "65536", "50"),
            perf("ib_read_bw", "65536", "50"),
            perf("ib_send_bw", "65536", "50"),
        ]);
    }
    vm_clients(&img, &runs);
}
