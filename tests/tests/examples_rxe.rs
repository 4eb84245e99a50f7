//! roce-driver's examples on the sim device against the real tools in the Soft-RoCE VM
//! (tests/rxevm): the example's NetDev binds its own socket and sends to the VM's eth0
//! socket (`Eth0Link::Sockets`, the VM sends back to ours), the side channel is QEMU user
//! networking (VM client -> 10.0.2.100:18515 -> guestfwd -> the example's port; VM server
//! reached through hostfwd).
//!
//! - `pingpong` as server, the VM's `ibv_rc_pingpong` as client (5000 B: multi-packet).
//! - `pingpong` as client, the VM's `ibv_rc_pingpong` as server (64 B and 5000 B, one VM).
//! - `write_bw` / `read_bw` as server, the VM's `ib_write_bw` / `ib_read_bw` as client: the
//!   VM writes into / reads from the engine model's memory; our server prints the client's
//!   numbers, exchanged in perftest's report exchange.
//!
//! Gated: `ROCE_RXEVM=1` (like interop_rxe.rs). Every test boots one VM (7-25 s under TCG).

#[path = "examples_util.rs"]
mod util;

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use roce_tests::rxevm::*;
use util::*;

const VM_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const VM_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x01];
const EX_IP: &str = "192.0.2.2";
const EX_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x02];

fn image() -> Option<std::path::PathBuf> {
    if !enabled() {
        return None;
    }
    examples_dir();
    Some(RxeVm::build_image().unwrap_or_else(|e| panic!("{e}")))
}

/// VM options with eth0 linked to `d/vm.sock` <-> `d/ex.sock` (the example's NetDev).
fn opts(d: &TempDir, cmd: &str) -> VmOptions {
    VmOptions {
        cmd: cmd.into(),
        vm_ip: VM_IP,
        vm_mac: VM_MAC,
        peer_ip: EX_IP.parse().expect("ip"),
        peer_mac: EX_MAC,
        mtu: Some(1500),
        timeout: Duration::from_secs(150),
        link: Eth0Link::Sockets { local: d.join("vm.sock"), remote: d.join("ex.sock") },
        ..VmOptions::default()
    }
}

/// The example's device arguments towards the VM.
fn ex_args(d: &TempDir, port: u16, rest: &[&str]) -> Vec<String> {
    let mut v = strs(&[
        "--device",
        &sim_dev(&d.join("ex.sock"), &d.join("vm.sock")),
        "--ip",
        EX_IP,
        "--mac",
        "52:54:00:00:00:02",
    ]);
    v.extend(strs(&["-p", &port.to_string(), "--timeout", "120"]));
    v.extend(strs(rest));
    v
}

#[test]
fn pingpong_example_server_vm_client() {
    let Some(img) = image() else { return };
    let (size, n) = (5000u64, 20u64);
    let t = Instant::now();
    let d = TempDir::new("ppsrv");
    let port = free_port();
    let mut ex = Proc::spawn(
        "pingpong",
        &ex_args(&d, port, &["-g", "1", "-m", "1024", "-s", &size.to_string(), "-n", &n.to_string()]),
    );
    // listening: QEMU's guestfwd connects when it starts
    ex.wait_for("local address", Duration::from_secs(30));
    let mut o = opts(&d, &format!("ibv_rc_pingpong -g 1 -m 1024 -s {size} -n {n} {GUESTFWD_ADDR}"));
    o.fwd_port = Some(port);
    let vm = RxeVm::boot_from(&img, o).expect("boot");
    let (ok, out, err) = ex.wait(Duration::from_secs(130));
    let vo = vm.wait(Duration::from_secs(60)).expect("VM run");
    eprintln!(
        "pingpong example server / VM client {size} B x {n}: {:.1}s\n{out}{err}\n--- VM:\n{}",
        t.elapsed().as_secs_f64(),
        vo.stdout_of_cmd
    );
    assert!(ok, "{out}\n{err}\n--- VM:\n{}", vo.console_log);
    assert!(pingpong_done(&out, size, n) && !err.contains("warning"), "{out}\n{err}");
    assert!(out.contains("GID ::ffff:192.0.2.1"), "{out}");
    assert_eq!(vo.exit_code, 0, "{}", vo.stdout_of_cmd);
    assert!(pingpong_done(&vo.stdout_of_cmd, size, n), "{}", vo.stdout_of_cmd);
}

#[test]
fn pingpong_example_client_vm_server() {
    let Some(img) = image() else { return };
    let n = 20u64;
    let sizes = [64u64, 5000];
    let t = Instant::now();
    let d = TempDir::new("ppcli");
    let cmd: Vec<String> = sizes.iter().map(|s| format!("ibv_rc_pingpong -g 1 -m 1024 -s {s} -n {n}")).collect();
    let mut o = opts(&d, &cmd.join(" && "));
    o.hostfwd_port = Some(free_port());
    let port = o.hostfwd_port.unwrap_or_default();
    let vm = RxeVm::boot_from(&img, o).expect("boot");
    for size in sizes {
        vm.wait_for_console("local address", Duration::from_secs(120)).expect("VM server up");
        // The example retries while QEMU's slirp accepts but the guest does not listen yet.
        let mut args = ex_args(&d, port, &["-g", "1", "-m", "1024", "-s", &size.to_string(), "-n", &n.to_string()]);
        args.push("127.0.0.1".into());
        let mut ex = Proc::spawn("pingpong", &args);
        let (ok, out, err) = ex.wait(Duration::from_secs(130));
        eprintln!("pingpong example client / VM server {size} B x {n}: {:.1}s\n{out}{err}", t.elapsed().as_secs_f64());
        assert!(
            ok && pingpong_done(&out, size, n) && !err.contains("warning"),
            "{out}\n{err}\n--- VM:\n{}",
            vm.console()
        );
    }
    let vo = vm.wait(Duration::from_secs(60)).expect("VM run");
    eprintln!("--- VM:\n{}", vo.stdout_of_cmd);
    assert_eq!(vo.exit_code, 0, "{}", vo.stdout_of_cmd);
    for size in sizes {
        assert!(pingpong_done(&vo.stdout_of_cmd, size, n), "{}", vo.stdout_of_cmd);
    }
}

/// `example` (write_bw / read_bw) as server, the VM's perftest `tool` as client.
fn perftest_server(example: &str, tool: &str, size: u64, n: u64) {
    let Some(img) = image() else { return };
    let t = Instant::now();
    let d = TempDir::new(example);
    let port = free_port();
    let mut ex = Proc::spawn(example, &ex_args(&d, port, &["-x", "1", "-F"]));
    ex.wait_for("Waiting for client", Duration::from_secs(30));
    let mut o = opts(&d, &format!("timeout 100 {tool} -d rxe0 -x 1 -m 1024 -s {size} -n {n} -F {GUESTFWD_ADDR}"));
    o.fwd_port = Some(port);
    let vm = RxeVm::boot_from(&img, o).expect("boot");
    let (ok, out, err) = ex.wait(Duration::from_secs(130));
    let vo = vm.wait(Duration::from_secs(60)).expect("VM run");
    eprintln!(
        "{example} server / VM {tool} client {size} B x {n}: {:.1}s\n{out}{err}\n--- VM:\n{}",
        t.elapsed().as_secs_f64(),
        vo.stdout_of_cmd
    );
    assert!(ok, "{out}\n{err}\n--- VM:\n{}", vo.console_log);
    assert_eq!(vo.exit_code, 0, "{}", vo.stdout_of_cmd);
    // our server prints the VM client's numbers (perftest's report exchange)
    let (s, it, _, avg, _) = bw_row(&out).unwrap_or_else(|| panic!("no table in\n{out}"));
    assert_eq!((s, it), (size, n), "{out}");
    assert!(avg > 0.0, "{out}");
    assert!(out.contains(" Mtu             : 1024[B]"), "negotiated down to the VM's MTU:\n{out}");
    let (vs, vi, _, _, _) =
        bw_row(&vo.stdout_of_cmd).unwrap_or_else(|| panic!("no table from the VM in\n{}", vo.stdout_of_cmd));
    assert_eq!((vs, vi), (size, n), "{}", vo.stdout_of_cmd);
}

#[test]
fn write_bw_example_server_vm_client() {
    perftest_server("write_bw", "ib_write_bw", 3000, 20);
}

#[test]
fn read_bw_example_server_vm_client() {
    perftest_server("read_bw", "ib_read_bw", 5000, 20);
}
