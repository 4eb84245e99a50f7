//! Debian's own, unmodified verbs programs (ibverbs-utils, perftest) on this library: device
//! listing and attributes, and two processes talking RoCEv2 through their engines (the model
//! or the Verilated engine), each engine's Ethernet on a unix datagram socket.
//!
//! The default set is short (CI); `ROCE_VERBS_MATRIX=1` runs more sizes, MTUs and the
//! perftest programs on the Verilated engine too (README "Run a verbs program on the engine").

mod common;

use common::*;

fn matrix() -> bool {
    std::env::var("ROCE_VERBS_MATRIX").is_ok_and(|v| v == "1")
}

fn have(prog: &str) {
    let ok = std::process::Command::new("sh")
        .args(["-c", &format!("command -v {prog}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(ok, "{prog} not found: scripts/setup.sh installs ibverbs-utils and perftest");
}

#[test]
fn ibv_devices_lists_roce0_only_when_configured() {
    have("ibv_devices");
    let out = tool("ibv_devices").env_remove("ROCE_VERBS_DEVICE").output().expect("ibv_devices");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && !text.contains("roce0"), "{text}");
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = device("sim", &dir.path().join("a.sock"), &dir.path().join("b.sock"), "192.0.2.7");
    let out = tool("ibv_devices").env("ROCE_VERBS_DEVICE", &dev).output().expect("ibv_devices");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    // the node GUID is the EUI-64 of the port MAC 02:00:c0:00:02:07
    assert!(text.lines().any(|l| l.contains("roce0") && l.contains("0000c0fffe000207")), "{text}");
    // a device string that does not parse: libibverbs' failure, not a crash
    let out = tool("ibv_devices").env("ROCE_VERBS_DEVICE", "sim:only-one-field").output().expect("ibv_devices");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Failed to get IB devices list"), "{err}");
}

#[test]
fn ibv_devinfo_shows_the_engine_port() {
    have("ibv_devinfo");
    let dir = tempfile::tempdir().expect("tempdir");
    let dev = device("sim", &dir.path().join("a.sock"), &dir.path().join("b.sock"), "192.0.2.7");
    let out = tool("ibv_devinfo")
        .arg("-v")
        .env("ROCE_VERBS_DEVICE", &dev)
        .env("ROCE_VERBS_MTU", "2048")
        .output()
        .expect("ibv_devinfo");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let want = [
        "hca_id:\troce0",
        "vendor_id:\t\t\t0x10ee",
        "max_qp:\t\t\t\t1022",
        "max_qp_wr:\t\t\t32768",
        "max_qp_rd_atom:\t\t\t16",
        "atomic_cap:\t\t\tATOMIC_HCA (1)",
        "state:\t\t\tPORT_ACTIVE (4)",
        "max_mtu:\t\t4096 (5)",
        "active_mtu:\t\t2048 (4)",
        "link_layer:\t\tEthernet",
        "GID[  0]:\t\t::ffff:192.0.2.7, RoCE v2",
    ];
    for w in want {
        assert!(text.contains(w), "missing {w:?} in:\n{text}");
    }
}

/// ibv_rc_pingpong as server and client on engines `kinds`; both must report `n` iterations.
fn pingpong(kinds: (&str, &str), args: &[&str], n: u32, secs: u32) {
    have("ibv_rc_pingpong");
    let n_s = n.to_string();
    let mut a = vec!["-g", "0", "-n", &n_s];
    a.extend_from_slice(args);
    let t = std::time::Instant::now();
    let (s, c) = pair("ibv_rc_pingpong", &a, kinds, secs);
    eprintln!("ibv_rc_pingpong {a:?} on {kinds:?}: {:.1}s\n{}", t.elapsed().as_secs_f64(), c.text.trim());
    for (who, side) in [("server", &s), ("client", &c)] {
        assert!(
            side.ok(),
            "{who} failed ({:?}):\n{}\n--- other side:\n{}",
            side.code,
            side.text,
            if who == "server" { &c.text } else { &s.text }
        );
        assert!(side.text.contains(&format!("{n} iters in")), "{who}:\n{}", side.text);
        assert!(side.text.contains("GID ::ffff:192.0.2."), "{who}:\n{}", side.text);
    }
}

#[test]
fn rc_pingpong_two_processes_on_the_model() {
    // 64 B goes inline (rc_pingpong inlines up to the QP's max_inline_data); 5000 B at MTU 256
    // is 20 packets and waits with completion events (-e); 64 KiB at MTU 4096
    pingpong(("sim", "sim"), &["-s", "64", "-m", "1024"], 50, 60);
    pingpong(("sim", "sim"), &["-s", "5000", "-m", "256", "-e"], 20, 60);
    pingpong(("sim", "sim"), &["-s", "65536", "-m", "4096"], 10, 60);
    if matrix() {
        for (s, m) in [("1", "256"), ("4096", "512"), ("100000", "2048"), ("1048576", "4096")] {
            pingpong(("sim", "sim"), &["-s", s, "-m", m], 20, 120);
            pingpong(("sim", "sim"), &["-s", s, "-m", m, "-e"], 20, 120);
        }
    }
}

#[test]
fn rc_pingpong_two_processes_on_the_verilated_engine() {
    // both sides HDL: its requester, completer and responder, 2 packets per message
    pingpong(("sim-hdl", "sim-hdl"), &["-s", "2000", "-m", "1024"], 3, 120);
    // 20 packets per message at MTU 256, waiting with completion events (the HDL's CQ arm
    // and interrupt)
    pingpong(("sim-hdl", "sim-hdl"), &["-s", "5000", "-m", "256", "-e"], 3, 120);
    if matrix() {
        pingpong(("sim-hdl", "sim"), &["-s", "4096", "-m", "256", "-e"], 5, 300);
        pingpong(("sim", "sim-hdl"), &["-s", "65536", "-m", "4096"], 3, 300);
    }
}

/// A perftest program as server and client; the client's result line must show `n`
/// iterations of `size` bytes.
fn perftest(prog: &str, kinds: (&str, &str), size: u32, n: u32, secs: u32) {
    have(prog);
    let (s_s, n_s) = (size.to_string(), n.to_string());
    let a = ["-x", "0", "-s", &s_s, "-n", &n_s];
    let t = std::time::Instant::now();
    let (s, c) = pair(prog, &a, kinds, secs);
    let result =
        c.text.lines().find(|l| l.split_whitespace().take(2).eq([s_s.as_str(), n_s.as_str()])).map(str::to_string);
    eprintln!("{prog} {a:?} on {kinds:?}: {:.1}s: {}", t.elapsed().as_secs_f64(), result.as_deref().unwrap_or("?"));
    for (who, side) in [("server", &s), ("client", &c)] {
        assert!(
            side.ok(),
            "{prog} {who} failed ({:?}):\n{}\n--- other side:\n{}",
            side.code,
            side.text,
            if who == "server" { &c.text } else { &s.text }
        );
    }
    assert!(result.is_some(), "no result line for {size} B x {n}:\n{}", c.text);
    // zero copy: the engines' DMA moved every message straight from the sender's registered
    // buffer and into the receiver's (the library adds no bounce buffer; perftest turns
    // inline off on a device it does not know, so the latency programs' 64 B go by DMA too)
    {
        let (cs, ss) = (app_dma(&c.text), app_dma(&s.text));
        let (from, into) = match prog {
            "ib_read_bw" | "ib_read_lat" => (ss.map(|d| d.0), cs.map(|d| d.1)),
            _ => (cs.map(|d| d.0), ss.map(|d| d.1)),
        };
        let want = u64::from(size) * u64::from(n);
        assert!(
            from.is_some_and(|b| b >= want) && into.is_some_and(|b| b >= want),
            "{prog}: DMA from the sender's memory {from:?} B, into the receiver's {into:?} B, want >= {want}:\n{}\n{}",
            c.text,
            s.text
        );
    }
    assert!(c.text.contains("Link type       : Ethernet") && c.text.contains("GID index       : 0"), "{}", c.text);
}

#[test]
fn perftest_two_processes_on_the_model() {
    for p in ["ib_write_bw", "ib_read_bw", "ib_send_bw"] {
        perftest(p, ("sim", "sim"), 4096, 20, 60);
    }
    for p in ["ib_write_lat", "ib_read_lat", "ib_send_lat"] {
        perftest(p, ("sim", "sim"), 64, 20, 60);
    }
    if matrix() {
        for p in ["ib_write_bw", "ib_read_bw", "ib_send_bw"] {
            perftest(p, ("sim", "sim"), 65536, 200, 120);
        }
    }
}

#[test]
fn perftest_on_the_verilated_engine() {
    // its requester: 30 READs of 64 KiB, 16 outstanding, 480 response frames. With blocking
    // socket sends both engines ended up waiting for each other's full socket queue and
    // this hung (now the engines queue what the peer cannot take yet and keep reading)
    perftest("ib_read_bw", ("sim", "sim-hdl"), 65536, 30, 180);
    if !matrix() {
        // the responder side of each bandwidth test on the HDL, one short run
        perftest("ib_write_bw", ("sim-hdl", "sim"), 4096, 5, 180);
        return;
    }
    for p in ["ib_write_bw", "ib_read_bw", "ib_send_bw"] {
        perftest(p, ("sim-hdl", "sim"), 4096, 10, 300);
    }
    for p in ["ib_write_lat", "ib_read_lat", "ib_send_lat"] {
        perftest(p, ("sim-hdl", "sim"), 64, 10, 300);
    }
}

#[test]
fn a_missing_vfio_board_fails_cleanly() {
    // no board here: the device is listed (as libibverbs lists a kernel device) and opening
    // it fails with the reason, the program's own error path, no crash
    have("ibv_rc_pingpong");
    let out = tool("ibv_rc_pingpong")
        .args(["-g", "0"])
        .env("ROCE_VERBS_DEVICE", "vfio:0000:00:1f.7")
        .env("ROCE_VERBS_IPV4", "192.0.2.5")
        .env("ROCE_VERBS_PEER_MAC", "02:00:c0:00:02:06")
        .output()
        .expect("ibv_rc_pingpong");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("no PCI device 0000:00:1f.7") && err.contains("Couldn't get context for roce0"), "{err}");
}
