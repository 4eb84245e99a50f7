//! Debian's verbs programs on this library against the same programs on Linux's own RoCEv2
//! stack: Soft-RoCE (rdma_rxe) in a QEMU VM (`roce_tests::rxevm`), the VM's eth0 wired to the
//! library's engine by the unix datagram sockets of `ROCE_VERBS_DEVICE`. The tools' TCP
//! exchange goes over QEMU user networking. Both directions: the VM's tools as servers with
//! ours as clients (one boot runs ibv_rc_pingpong on the model and on the Verilated engine,
//! then the six perftest programs), and the VM's as clients with ours as servers.
//!
//! Gated like the other VM tests: `ROCE_RXEVM=1` (scripts/test.sh sets it when QEMU is
//! installed). `ROCE_VERBS_MATRIX=1` runs every perftest program with the VM as client too.

mod common;

use std::net::Ipv4Addr;
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
/// `vm_sock`.
fn boot(img: &Path, cmd: &str, lib_sock: &Path, vm_sock: &Path, fwd: Option<u16>, hostfwd: Option<u16>) -> RxeVm {
    let o = VmOptions {
        cmd: cmd.into(),
        vm_ip: VM_IP,
        peer_ip: HOST_IP,
        peer_mac: roce_verbs::config::mac_of(HOST_IP),
        link: Eth0Link::Sockets { local: vm_sock.to_path_buf(), remote: lib_sock.to_path_buf() },
        fwd_port: fwd,
        hostfwd_port: hostfwd,
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

    /// What a successful run of this program prints.
    fn check(&self, who: &str, text: &str) {
        if self.pingpong {
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
    let cmd: Vec<String> = runs.iter().map(|r| format!("timeout 240 {}", r.vm_cmd())).collect();
    let t = Instant::now();
    let vm = boot(&img, &cmd.join(" && "), &lib_sock, &vm_sock, None, Some(hostfwd));
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
    assert_eq!(out.exit_code, 0, "{}", out.stdout_of_cmd);
    for r in &runs {
        r.check("VM server", &out.stdout_of_cmd);
    }
}

/// One program with the VM's copy as client and ours as server.
fn vm_client(img: &Path, r: &Run) {
    let dir = tempfile::tempdir().expect("tempdir");
    let (lib_sock, vm_sock) = (dir.path().join("lib.sock"), dir.path().join("vm.sock"));
    let port = free_port();
    let p = port.to_string();
    let mut a = r.host_args();
    a.extend(["-p", &p]);
    let t = Instant::now();
    let srv = host_tool(r.kind, r.prog, &a, &lib_sock, &vm_sock);
    assert!(wait_listen(port, Duration::from_secs(30)), "{} never listened", r.prog);
    // QEMU connects the guest's 10.0.2.100:18515 to our server when it starts
    let vm = boot(img, &format!("timeout 240 {} {GUESTFWD_ADDR}", r.vm_cmd()), &lib_sock, &vm_sock, Some(port), None);
    let s = finish(srv);
    let out = vm.wait(Duration::from_secs(300)).expect("VM run");
    eprintln!(
        "VM {} client -> host server on {}: {:.1}s\n{}",
        r.prog,
        r.kind,
        t.elapsed().as_secs_f64(),
        s.text.trim()
    );
    assert!(s.ok(), "host {} ({:?}):\n{}\n--- VM:\n{}", r.prog, s.code, s.text, out.stdout_of_cmd);
    assert_eq!(out.exit_code, 0, "{}", out.stdout_of_cmd);
    r.check("host server", &s.text);
    r.check("VM client", &out.stdout_of_cmd);
}

#[test]
fn vm_clients_host_servers() {
    let Some(img) = image() else { return };
    vm_client(&img, &pingpong("sim", "5000", "10"));
    vm_client(&img, &perf("ib_write_bw", "4096", "20"));
    if matrix() {
        vm_client(&img, &pingpong("sim-hdl", "2000", "3"));
        for p in ["ib_read_bw", "ib_send_bw"] {
            vm_client(&img, &perf(p, "4096", "20"));
        }
        for p in ["ib_write_lat", "ib_read_lat", "ib_send_lat"] {
            vm_client(&img, &perf(p, "64", "20"));
        }
    }
}
