//! Interop with the Linux kernel's own RoCEv2 stack: Soft-RoCE (rdma_rxe) and rdma-core's
//! tools in a QEMU VM, against the engine model on the host, each programmed through its
//! own verbs (rdma-core there, roce-driver here).
//!
//! - ibv_rc_pingpong with the VM as client and as server, several sizes (one packet and
//!   multi-packet messages at MTU 1024); the engine checks rc_pingpong's 0x7b payload.
//! - perftest ib_write_bw and ib_read_bw (the VM writes into / reads from the engine's memory).
//!
//! Each runs against the engine model and against the Verilated HDL engine (`*_hdl_engine_*`:
//! its responder, and in ping-pong its requester and completer too).
//!
//! Gated: `ROCE_RXEVM=1` (scripts/test.sh sets it when QEMU is installed; scripts/setup.sh
//! installs QEMU and the VM's packages). Parameters (`scripts/interop.sh` sets them):
//! `ROCE_INTEROP_SIZES` (comma list, default 64,5000), `ROCE_INTEROP_ITERS` (default 5),
//! `ROCE_INTEROP_MTU` (256..4096, default 1024).

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use roce_tests::interop::{gid_of, pingpong, EngineKind, HostEngine};
use roce_tests::rxevm::*;

const VM_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const VM_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x01];
const HOST_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x02];

fn image() -> Option<std::path::PathBuf> {
    if !enabled() {
        return None;
    }
    Some(RxeVm::build_image().unwrap_or_else(|e| panic!("{e}")))
}

fn opts(cmd: &str) -> VmOptions {
    // eth0 must carry a full packet of the path MTU (rxe derives its active MTU from it)
    let eth_mtu = (mtu() + 200).max(1500) as u16;
    // ROCE_INTEROP_NETEM="loss 3% reorder 2% delay 50us": impair the VM's side of the link
    let cmd = match std::env::var("ROCE_INTEROP_NETEM") {
        Ok(n) if !n.trim().is_empty() => format!("/usr/sbin/tc qdisc add dev eth0 root netem {n} && {cmd}"),
        _ => cmd.to_string(),
    };
    VmOptions {
        cmd,
        vm_ip: VM_IP,
        vm_mac: VM_MAC,
        peer_ip: HOST_IP,
        peer_mac: HOST_MAC,
        mtu: Some(eth_mtu),
        timeout: Duration::from_secs(120),
        pcap: std::env::var_os("ROCE_INTEROP_PCAP").map(std::path::PathBuf::from),
        ..VmOptions::default()
    }
}

fn sizes() -> Vec<usize> {
    std::env::var("ROCE_INTEROP_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![64, 5000])
}

fn mtu() -> u32 {
    let m = std::env::var("ROCE_INTEROP_MTU").ok().and_then(|s| s.parse().ok()).unwrap_or(1024);
    assert!(matches!(m, 256 | 512 | 1024 | 2048 | 4096), "ROCE_INTEROP_MTU {m} is not 256..4096");
    m
}

/// ibv_mtu enum of a path MTU.
fn mtu_enum(m: u32) -> u8 {
    (m.trailing_zeros() - 7) as u8
}

fn iters() -> u32 {
    std::env::var("ROCE_INTEROP_ITERS").ok().and_then(|s| s.parse().ok()).unwrap_or(5)
}

/// The engine of a test: the model, or the Verilated engine (`ROCE_INTEROP_COSIM=1`: with the
/// model beside it, compared).
fn kind(hdl: bool) -> EngineKind {
    match (hdl, std::env::var("ROCE_INTEROP_COSIM").is_ok_and(|v| v == "1")) {
        (false, _) => EngineKind::Model,
        (true, false) => EngineKind::Hdl,
        (true, true) => EngineKind::Cosim,
    }
}

fn engine_on(hdl: bool, size: usize) -> HostEngine {
    let mut h = HostEngine::new_on(kind(hdl), HOST_MAC, HOST_IP, mtu(), (size * 64).max(1 << 16), 64);
    h.capture_frames = std::env::var_os("ROCE_INTEROP_PCAP").is_some();
    h
}

/// With `ROCE_INTEROP_PCAP=F`: the engine's own capture (cycle timestamps) to `F.<what>.engine.pcap`
/// beside the VM's (wall-clock) `F`.
fn save_engine_capture(h: &HostEngine, what: &str) {
    if let Some(p) = std::env::var_os("ROCE_INTEROP_PCAP") {
        let mut p = std::path::PathBuf::from(p).into_os_string();
        p.push(format!(".{what}.engine.pcap"));
        h.save_capture(std::path::Path::new(&p)).expect("engine capture");
    }
}

#[test]
fn pingpong_vm_client_engine_server() {
    pingpong_vm_client(false);
}

#[test]
fn pingpong_vm_client_hdl_engine_server() {
    pingpong_vm_client(true);
}

#[test]
fn pingpong_vm_server_engine_client() {
    pingpong_vm_server(false);
}

#[test]
fn pingpong_vm_server_hdl_engine_client() {
    pingpong_vm_server(true);
}

/// ibv_rc_pingpong in the VM as the client; the engine (`hdl`: the Verilated engine, its
/// requester sending the replies) as the server.
fn pingpong_vm_client(hdl: bool) {
    let Some(img) = image() else { return };
    let n = iters();
    for size in sizes() {
        let t = Instant::now();
        let listener = side_listener().expect("listener");
        let mut o = opts(&format!("ibv_rc_pingpong -g 1 -m {} -n {n} -s {size} {GUESTFWD_ADDR}", mtu()));
        o.fwd_port = Some(listener.local_addr().expect("addr").port());
        let vm = RxeVm::boot_from(&img, o).expect("boot");
        let mut s = accept_timeout(&listener, Duration::from_secs(90)).expect("the VM's ibv_rc_pingpong connects");
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut h = engine_on(hdl, size);
        let mine = PingpongPeerInfo { lid: 0, qpn: h.ep.qp.qpn(), psn: h.ep.psn, gid: gid_of(HOST_IP) };
        let theirs = pingpong_server_exchange_with(&mut s, &mine, |r| {
            h.connect(r.qpn, r.psn, VM_MAC, VM_IP);
            Ok(())
        })
        .expect("pingpong exchange");
        assert_eq!(theirs.gid, gid_of(VM_IP));
        let r = pingpong(&mut h, &vm, false, size, n, Duration::from_secs(90));
        save_engine_capture(&h, &format!("client{size}"));
        let out = vm.wait(Duration::from_secs(60)).expect("VM run");
        eprintln!(
            "interop pingpong VM client, {} engine, {size} B x {n}: {r:?}, {:.1}s",
            kind(hdl).name(),
            t.elapsed().as_secs_f64()
        );
        assert!(r.errors.is_empty(), "{r:?}\n{}", out.stdout_of_cmd);
        assert_eq!((r.sent, r.received, r.bad_payload), (n, n, 0), "{r:?}\n{}", out.stdout_of_cmd);
        assert_eq!(out.exit_code, 0, "{}", out.stdout_of_cmd);
        assert!(out.stdout_of_cmd.contains(&format!("{n} iters in")), "{}", out.stdout_of_cmd);
    }
}

/// ibv_rc_pingpong in the VM as the server; the engine (`hdl`: the Verilated engine) as the
/// client, sending first.
fn pingpong_vm_server(hdl: bool) {
    let Some(img) = image() else { return };
    let n = iters();
    let sizes = sizes();
    let t = Instant::now();
    let cmd: Vec<String> = sizes.iter().map(|s| format!("ibv_rc_pingpong -g 1 -m {} -n {n} -s {s}", mtu())).collect();
    let mut o = opts(&cmd.join(" && "));
    o.hostfwd_port = Some(free_local_port().expect("port"));
    let vm = RxeVm::boot_from(&img, o).expect("boot");
    for &size in &sizes {
        vm.wait_for_console("local address", Duration::from_secs(90)).expect("VM server up");
        let mut s = vm.connect_hostfwd(Duration::from_secs(60)).expect("connect through hostfwd");
        s.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut h = engine_on(hdl, size);
        let mine = PingpongPeerInfo { lid: 0, qpn: h.ep.qp.qpn(), psn: h.ep.psn, gid: gid_of(HOST_IP) };
        let theirs = pingpong_client_exchange(&mut s, &mine).expect("pingpong exchange");
        h.connect(theirs.qpn, theirs.psn, VM_MAC, VM_IP);
        let r = pingpong(&mut h, &vm, true, size, n, Duration::from_secs(90));
        save_engine_capture(&h, &format!("server{size}"));
        eprintln!("interop pingpong VM server, {} engine, {size} B x {n}: {r:?}", kind(hdl).name());
        assert!(r.errors.is_empty(), "{r:?}\n{}", vm.console());
        assert_eq!((r.sent, r.received, r.bad_payload), (n, n, 0), "{r:?}");
    }
    let out = vm.wait(Duration::from_secs(60)).expect("VM run");
    eprintln!("interop pingpong VM server, {} engine: {:.1}s", kind(hdl).name(), t.elapsed().as_secs_f64());
    assert_eq!(out.exit_code, 0, "{}", out.stdout_of_cmd);
    assert_eq!(out.stdout_of_cmd.matches(&format!("{n} iters in")).count(), sizes.len(), "{}", out.stdout_of_cmd);
}

/// perftest as the VM client, the engine (`hdl`: the Verilated engine) as server: `op` is
/// "write" or "read".
fn perftest(op: &str, size: usize, hdl: bool) {
    let Some(img) = image() else { return };
    let n = 20 * iters() / 5;
    let t = Instant::now();
    let listener = side_listener().expect("listener");
    let mut o = opts(&format!("timeout 90 ib_{op}_bw -d rxe0 -x 1 -m {} -s {size} -n {n} -F {GUESTFWD_ADDR}", mtu()));
    o.fwd_port = Some(listener.local_addr().expect("addr").port());
    let vm = RxeVm::boot_from(&img, o).expect("boot");
    let s = accept_timeout(&listener, Duration::from_secs(90)).expect("the VM's perftest connects");
    s.set_read_timeout(Some(Duration::from_secs(90))).expect("timeout");
    let mut h = engine_on(hdl, size);
    // The memory the VM reads: a pattern we can recognise.
    let pattern: Vec<u8> = (0..size).map(|i| (i * 13 + 5) as u8).collect();
    h.ep.dev.write_buf(&h.ep.buf, 0, &pattern);
    let mut conn = PerftestConn::new(s, PerftestRole::Server);
    let mine = PerftestDest {
        lid: 0,
        out_reads: 16,
        qpn: h.ep.qp.qpn(),
        psn: h.ep.psn,
        rkey: h.ep.mr.rkey,
        vaddr: h.ep.mr.va,
        gid: gid_of(HOST_IP),
        srqn: 0,
    };
    let (theirs, _neg) = conn
        .bw_connect_with(&mine, mtu_enum(mtu()), |r| {
            h.connect(r.qpn, r.psn, VM_MAC, VM_IP);
            Ok(())
        })
        .expect("perftest exchange");
    assert_eq!(theirs.gid, gid_of(VM_IP));
    let fin = std::thread::spawn(move || conn.bw_finish(&mine, &BwReport::default()));
    let end = Instant::now() + Duration::from_secs(120);
    while !fin.is_finished() && Instant::now() < end {
        h.pump(&vm, Duration::from_millis(1));
    }
    for _ in 0..100 {
        h.pump(&vm, Duration::from_millis(2));
    }
    let rem = fin.join().expect("exchange thread").expect("perftest post-traffic exchange");
    save_engine_capture(&h, op);
    let out = vm.wait(Duration::from_secs(60)).expect("VM run");
    let c = h.counters();
    let kind = kind(hdl).name();
    eprintln!("interop ib_{op}_bw {size} B x {n} ({kind}): {rem:?} in {:.1}s, engine {c:?}", t.elapsed().as_secs_f64());
    assert_eq!(out.exit_code, 0, "{}", out.stdout_of_cmd);
    assert_eq!((rem.size as usize, rem.iters), (size, u64::from(n)), "{}", out.stdout_of_cmd);
    assert_eq!(c.nak_inv_sent + c.nak_acc_sent + c.nak_op_sent + c.rx_icrc_errors + c.rx_malformed, 0, "{c:?}");
    if op == "write" {
        assert!(c.rx_frames >= u64::from(n) * size.div_ceil(mtu() as usize) as u64, "{c:?}");
    } else {
        assert!(c.tx_frames >= u64::from(n) * size.div_ceil(mtu() as usize) as u64, "{c:?}");
        let mut back = vec![0u8; size];
        h.ep.dev.read_buf(&h.ep.buf, 0, &mut back);
        assert_eq!(back, pattern, "READs must not change the memory they read");
    }
}

fn perftest_size(default: usize) -> usize {
    std::env::var("ROCE_INTEROP_SIZES")
        .ok()
        .and_then(|s| s.split(',').next_back()?.trim().parse().ok())
        .unwrap_or(default)
}

#[test]
fn perftest_write_bw_vm_writes_engine_memory() {
    perftest("write", perftest_size(3000), false);
}

#[test]
fn perftest_write_bw_vm_writes_hdl_engine_memory() {
    perftest("write", perftest_size(3000), true);
}

#[test]
fn perftest_read_bw_vm_reads_hdl_engine_memory() {
    perftest("read", perftest_size(3000), true);
}

#[test]
fn perftest_read_bw_vm_reads_engine_memory() {
    perftest("read", perftest_size(5000), false);
}
