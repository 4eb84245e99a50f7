//! roce-driver's examples (`pingpong`, `write_bw`, `read_bw`) as two processes on this
//! machine, each with its own engine model on the sim device (`roce_sim::net::netdev`): the two
//! NetDevs' unix datagram sockets are wired to each other in a temp folder, the side channel
//! is TCP on 127.0.0.1. No VM needed.
//!
//! - pingpong at several sizes (one packet, exactly one MTU, multi-packet, 64 KiB at MTU
//!   4096): both sides finish and print ibv_rc_pingpong's result lines, no payload warning.
//! - write_bw and read_bw: both sides print perftest's table with the client's size and
//!   iterations; `--verify` checks the bytes landed; a server at `-m 1024` and a client at
//!   the default 4096 agree on 1024.
//!
//! The examples are built by the first test (`cargo build --examples -p roce-driver`).

#[path = "examples_util.rs"]
mod util;

use std::time::{Duration, Instant};

use util::*;

const T: Duration = Duration::from_secs(60);

/// Run `example` as server and client with the same `args`; returns both outputs.
fn pair(example: &str, args: &[&str]) -> (String, String) {
    let d = TempDir::new(example);
    let (a, b) = (d.join("srv.sock"), d.join("cli.sock"));
    let port = free_port().to_string();
    let mut common = strs(args);
    common.extend(strs(&["-p", &port, "--timeout", "50"]));
    let mut srv_args = strs(&["--device", &sim_dev(&a, &b), "--ip", "192.0.2.2", "--mac", "52:54:00:00:00:02"]);
    srv_args.extend(common.iter().cloned());
    let mut srv = Proc::spawn(example, &srv_args);
    // Both examples print this once their TCP listener is bound.
    let ready = if example == "pingpong" { "local address" } else { "Waiting for client" };
    srv.wait_for(ready, T);
    let mut cli_args = strs(&["--device", &sim_dev(&b, &a), "--ip", "192.0.2.3", "--mac", "52:54:00:00:00:03"]);
    cli_args.extend(common);
    cli_args.push("127.0.0.1".into());
    let mut cli = Proc::spawn(example, &cli_args);
    let (cok, cout, cerr) = cli.wait(T);
    let (sok, sout, serr) = srv.wait(T);
    assert!(cok && sok, "{example} {args:?}\n--- client:\n{cout}\n{cerr}\n--- server:\n{sout}\n{serr}");
    assert!(!a.exists() && !b.exists(), "the NetDevs remove their sockets");
    (format!("{cout}{cerr}"), format!("{sout}{serr}"))
}

#[test]
fn pingpong_several_sizes() {
    examples_dir();
    let n = 200u64;
    for (size, mtu) in [(1u64, 1024), (64, 1024), (1024, 1024), (5000, 1024), (65536, 4096)] {
        let t = Instant::now();
        let (c, s) =
            pair("pingpong", &["-s", &size.to_string(), "-n", &n.to_string(), "-m", &mtu.to_string(), "-g", "1"]);
        eprintln!("pingpong {size} B x {n} at MTU {mtu}: {:.2}s\n{c}", t.elapsed().as_secs_f64());
        for out in [&c, &s] {
            assert!(pingpong_done(out, size, n), "{out}");
            assert!(out.contains("  local address:  LID 0x0000, QPN 0x"), "{out}");
            assert!(out.contains("  remote address: LID 0x0000, QPN 0x"), "{out}");
            assert!(!out.contains("warning"), "{out}");
        }
        assert!(c.contains("GID ::ffff:192.0.2.3") && c.contains("GID ::ffff:192.0.2.2"), "{c}");
    }
}

fn check_bw(example: &str, out: &str, size: u64, iters: u64, mtu: u32) {
    let (s, n, peak, avg, rate) = bw_row(out).unwrap_or_else(|| panic!("{example}: no result table in\n{out}"));
    assert_eq!((s, n), (size, iters), "{out}");
    assert!(avg > 0.0 && peak >= avg * 0.99 && rate > 0.0, "{out}");
    assert!(out.contains(&format!(" Mtu             : {mtu}[B]")), "{out}");
    assert!(out.contains(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"), "{out}");
}

fn bw(example: &str, verified: &str) {
    examples_dir();
    for (size, iters) in [(65536u64, 300u64), (1000, 1000)] {
        let t = Instant::now();
        let (c, s) = pair(example, &["-s", &size.to_string(), "-n", &iters.to_string(), "-x", "1", "-F", "--verify"]);
        eprintln!("{example} {size} B x {iters}: {:.2}s\n{c}", t.elapsed().as_secs_f64());
        check_bw(example, &c, size, iters, 4096);
        check_bw(example, &s, size, iters, 4096);
        let checker = if example == "write_bw" { &s } else { &c };
        assert!(checker.contains(&format!(" verify: {size} bytes {verified}")), "{checker}");
    }
}

#[test]
fn write_bw_table() {
    bw("write_bw", "written by the client match");
}

#[test]
fn read_bw_table() {
    bw("read_bw", "read from the server match");
}

/// perftest's MTU check: the smaller of both sides' wins.
#[test]
fn write_bw_mtu_negotiation() {
    examples_dir();
    let d = TempDir::new("mtu");
    let (a, b) = (d.join("srv.sock"), d.join("cli.sock"));
    let port = free_port().to_string();
    let mut srv = Proc::spawn(
        "write_bw",
        &strs(&["--device", &sim_dev(&a, &b), "-m", "1024", "-s", "3000", "-n", "200", "-p", &port, "--timeout", "50"]),
    );
    srv.wait_for("Waiting for client", T);
    let mut cli = Proc::spawn(
        "write_bw",
        &strs(&["--device", &sim_dev(&b, &a), "-s", "3000", "-n", "200", "-p", &port, "--timeout", "50", "127.0.0.1"]),
    );
    let (cok, cout, cerr) = cli.wait(T);
    let (sok, sout, serr) = srv.wait(T);
    assert!(cok && sok, "{cout}\n{cerr}\n{sout}\n{serr}");
    check_bw("write_bw", &cout, 3000, 200, 1024);
    check_bw("write_bw", &sout, 3000, 200, 1024);
}
