//! Interop with the Linux kernel's own RoCEv2 stack: Soft-RoCE (rdma_rxe) and rdma-core's
//! and perftest's tools in a QEMU VM, against the engine on the host (the engine model, or
//! the Verilated engine), each side programmed through its own verbs (rdma-core there,
//! roce-driver here).
//!
//! A run is a matrix of cases: a tool, a path MTU, a message size, an iteration count. One VM
//! boot runs a list of cases in order (a shell loop in the VM; each case's exit status and
//! rxe's counters are printed after it); the host runs a fresh engine for each, in the same
//! order. Tools:
//! - `ping-vm-client`: the VM's ibv_rc_pingpong dials the host (the engine is the server);
//! - `ping-vm-server`: the VM's ibv_rc_pingpong listens, the engine is the client;
//! - `write`, `read`, `send`: the VM's ib_write_bw / ib_read_bw / ib_send_bw writes into,
//!   reads from, sends to the engine's memory.
//!
//! Every message must complete, the VM's tool must exit 0, and every payload is checked:
//! ping-pong's 0x7b fill both ways; WRITE and SEND data in the engine's memory against the
//! packets the VM sent; READ responses against the engine's memory. Each case reports
//! retransmissions and duplicates on both sides (the engine's counters and the frames it
//! saw twice; rxe's hw_counters). With `ROCE_INTEROP_COSIM=1` the Verilated engine runs
//! with the model beside it and a divergence fails the case.
//!
//! Gated: `ROCE_RXEVM=1` (scripts/test.sh sets it when QEMU is installed). The default
//! tests are a short matrix (`interop_short_*`); `ROCE_INTEROP_FULL=1` runs the whole matrix
//! (`interop_full_matrix`: tools x MTU 256/1024/4096 x sizes 1, MTU-1, MTU+1, 4 MTU+1,
//! 16 MTU, clean and with netem loss 1 % / 5 %, for the model and the Verilated engine) and
//! writes its table to `target/interop-matrix.md`. `scripts/interop.sh` runs chosen cases
//! (`ROCE_INTEROP_CASES`, see [`custom`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use roce_driver::{CqeOpcode, CqeStatus, RecvWr, WorkCompletion};
use roce_tests::interop::{gid_of, pingpong, EngineKind, HostEngine};
use roce_tests::rxevm::*;

const VM_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
const HOST_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);
const VM_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x01];
const HOST_MAC: [u8; 6] = [0x52, 0x54, 0, 0, 0, 0x02];
/// The VM kills a tool after this long (busybox `timeout`).
const TOOL_TIMEOUT_S: u64 = 150;
/// Netem settings of the matrix: (name, tc netem arguments).
const NETEM_LOSS1: &str = "loss 1% reorder 2% delay 50us";
const NETEM_LOSS5: &str = "loss 5% reorder 2% delay 50us";

/// What a case runs in the VM.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    PingVmClient,
    PingVmServer,
    Write,
    Read,
    Send,
}

impl Tool {
    fn name(self) -> &'static str {
        match self {
            Tool::PingVmClient => "ping-vm-client",
            Tool::PingVmServer => "ping-vm-server",
            Tool::Write => "write",
            Tool::Read => "read",
            Tool::Send => "send",
        }
    }

    fn parse(s: &str) -> Option<Tool> {
        [Tool::PingVmClient, Tool::PingVmServer, Tool::Write, Tool::Read, Tool::Send]
            .into_iter()
            .find(|t| t.name() == s)
    }

    /// The letter the VM's script uses.
    fn letter(self) -> char {
        match self {
            Tool::PingVmClient => 'P',
            Tool::PingVmServer => 'S',
            Tool::Write => 'W',
            Tool::Read => 'R',
            Tool::Send => 'X',
        }
    }

    /// The VM dials the host (a guestfwd side channel of its own).
    fn vm_dials(self) -> bool {
        self != Tool::PingVmServer
    }
}

#[derive(Clone, Copy, Debug)]
struct Case {
    tool: Tool,
    mtu: u32,
    size: usize,
    iters: u32,
    /// Cosim READ: the model's copy of the source differs in one bit (the case must fail).
    model_fault: bool,
}

/// What a case did.
#[derive(Debug, Default)]
struct Outcome {
    /// Empty: passed.
    failure: String,
    /// The VM tool's exit status.
    vm_rc: Option<i32>,
    secs: f64,
    /// Payload bytes checked.
    checked: u64,
    /// Engine: frames in, frames out, frames received more than once, retransmissions,
    /// duplicates its responder answered.
    frames: (u64, u64),
    dup_in: u64,
    eng_retx: u64,
    eng_dups: u64,
    /// rxe's counters over the case (after - before).
    rxe: BTreeMap<String, i64>,
    /// Ping-pong: the engine's last SEND ended in RetryExcErr after every other message went
    /// both ways: its ACK was lost and the VM's tool, done, destroyed its QP. The case passes
    /// only if the VM's tool then reports every iteration received and exits 0.
    last_ack_lost: bool,
    /// Said beside a passing case.
    note: String,
}

impl Outcome {
    fn fail(&mut self, why: impl Into<String>) {
        if self.failure.is_empty() {
            self.failure = why.into();
        }
    }

    fn rxe(&self, k: &str) -> i64 {
        self.rxe.get(k).copied().unwrap_or(0)
    }
}

fn image() -> Option<PathBuf> {
    if !enabled() {
        return None;
    }
    Some(RxeVm::build_image().unwrap_or_else(|e| panic!("{e}")))
}

/// ibv_mtu enum of a path MTU.
fn mtu_enum(m: u32) -> u8 {
    (m.trailing_zeros() - 7) as u8
}

/// The engine of a run: the model, or the Verilated engine (`ROCE_INTEROP_COSIM=1`: with the
/// model beside it, compared).
fn kind(hdl: bool) -> EngineKind {
    match (hdl, std::env::var("ROCE_INTEROP_COSIM").is_ok_and(|v| v == "1")) {
        (false, _) => EngineKind::Model,
        (true, false) => EngineKind::Hdl,
        (true, true) => EngineKind::Cosim,
    }
}

fn engine_for(kind: EngineKind, c: &Case) -> HostEngine {
    // ping-pong's receive slots (depth / 2 = 32) after as many send slots; ib_send_bw's receives
    let buf = (c.size * 64).max(c.size * (c.iters as usize + 2)).max(1 << 16);
    let mut h = HostEngine::new_on(kind, HOST_MAC, HOST_IP, c.mtu, buf, 64);
    h.capture_frames = true;
    h.drop_out = frame_numbers("ROCE_INTEROP_DROP_OUT");
    h.drop_in = frame_numbers("ROCE_INTEROP_DROP_IN");
    h
}

/// `ROCE_INTEROP_DROP_OUT="3,7"` / `ROCE_INTEROP_DROP_IN`: frames (numbered from 1 in each
/// case) that the link between the engine and the VM loses, to the VM / from it.
fn frame_numbers(var: &str) -> Vec<u64> {
    let v = std::env::var(var).unwrap_or_default();
    v.split(',')
        .filter(|w| !w.trim().is_empty())
        .map(|w| w.trim().parse().unwrap_or_else(|_| panic!("{var}: {w:?} is not a frame number")))
        .collect()
}

/// With `ROCE_INTEROP_PCAP=DIR`: the engine's capture of case `i` (cycle timestamps for the
/// Verilated engine) to `DIR/case<i>.engine.pcap`, beside the VM's `DIR/boot.pcap`.
fn save_engine_capture(h: &HostEngine, tag: &str, i: usize) {
    if let Some(d) = std::env::var_os("ROCE_INTEROP_PCAP") {
        let p = Path::new(&d).join(format!("{tag}-case{i}.engine.pcap"));
        h.save_capture(&p).expect("engine capture");
    }
}

/// The VM's script: the cases as `letter mtu size iters` words, run in order by a loop; each
/// case prints `=== CASE i BEGIN`, the tool's output, `=== CASE i END rc=N` and rxe's
/// counters as `rxe_cnt NAME VALUE` lines. VM clients dial 10.0.2.100:(18516 + i).
fn vm_script(cases: &[Case], netem: Option<&str>) -> String {
    let list: Vec<String> =
        cases.iter().map(|c| format!("{}{}:{}:{}", c.tool.letter(), c.mtu, c.size, c.iters)).collect();
    let mut s = String::new();
    if let Some(n) = netem {
        let _ = write!(s, "/usr/sbin/tc qdisc add dev eth0 root netem {n};");
    }
    let _ = write!(
        s,
        "C=/sys/class/infiniband/rxe0/ports/1/hw_counters;i=0;for c in {};do \
         t=${{c%%[0-9]*}};r=${{c#?}};m=${{r%%:*}};r=${{r#*:}};z=${{r%%:*}};n=${{r#*:}};\
         echo \"=== CASE $i BEGIN\";p=$((18516+i));A=\"-d rxe0 -x 1 -m $m -s $z -n $n -F -p $p {g}\";\
         case $t in P)timeout {T} ibv_rc_pingpong -g 1 -m $m -n $n -s $z -p $p {g};;\
         S)timeout {T} ibv_rc_pingpong -g 1 -m $m -n $n -s $z;;W)timeout {T} ib_write_bw $A;;\
         R)timeout {T} ib_read_bw $A;;X)timeout {T} ib_send_bw $A;;esac;\
         echo \"=== CASE $i END rc=$?\";for f in $C/*;do echo \"rxe_cnt ${{f##*/}} $(cat $f)\";done;i=$((i+1));done",
        list.join(" "),
        g = GUESTFWD_ADDR,
        T = TOOL_TIMEOUT_S,
    );
    s
}

/// rxe's counters after case `i`'s END marker, and its exit status.
fn vm_case_report(stdout: &str, i: usize) -> (Option<i32>, BTreeMap<String, i64>) {
    let mark = format!("=== CASE {i} END rc=");
    let Some(p) = stdout.find(&mark) else { return (None, BTreeMap::new()) };
    let rest = &stdout[p + mark.len()..];
    let rc = rest.split_whitespace().next().and_then(|x| x.parse().ok());
    let mut m = BTreeMap::new();
    for l in rest.lines().skip(1) {
        let mut w = l.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some("rxe_cnt"), Some(k), Some(v)) => {
                m.insert(k.to_string(), v.parse().unwrap_or(0));
            }
            _ => break,
        }
    }
    (rc, m)
}

/// Frames the engine received more than once (same opcode and PSN).
fn duplicates_in(h: &HostEngine) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let mut d = 0;
    for c in &h.capture {
        let Ok(f) = roce_model::wire::parse_frame(&c.data) else { continue };
        let Some(r) = f.roce() else { continue };
        if f.eth().src() != HOST_MAC && !seen.insert((r.opcode().as_u8(), r.bth().psn())) {
            d += 1;
        }
    }
    d
}

fn engine_stats(h: &mut HostEngine, o: &mut Outcome) {
    h.finish_cosim();
    let c = h.counters();
    o.frames = (h.frames_in, h.frames_out);
    o.dup_in = duplicates_in(h);
    o.eng_retx = c.retransmits;
    o.eng_dups = c.duplicates;
    if c.nak_inv_sent + c.nak_acc_sent + c.nak_op_sent + c.rx_icrc_errors + c.rx_malformed > 0 {
        o.fail(format!("engine error counters: {c:?}"));
    }
    if let Some(d) = h.divergence() {
        o.fail(format!("cosim divergence: {d}"));
    }
}

/// The engine's side of a ping-pong case.
fn run_ping(h: &mut HostEngine, vm: &RxeVm, c: &Case, vm_client: bool, o: &mut Outcome) {
    let r = pingpong(h, vm, !vm_client, c.size, c.iters, Duration::from_secs(TOOL_TIMEOUT_S));
    // rc_pingpong exits once its own messages are acknowledged and the peer's have arrived;
    // if the ACK of the engine's last SEND is lost then, nothing answers the retransmissions.
    let last = u64::from(c.iters - 1);
    o.last_ack_lost = r.received == c.iters
        && r.sent + 1 == c.iters
        && r.errors.first() == Some(&CqeStatus::RetryExcErr)
        && r.error_wr_ids.first() == Some(&last);
    if o.last_ack_lost {
        o.checked = u64::from(r.received) * c.size as u64;
        return;
    }
    if !r.errors.is_empty() {
        o.fail(format!("completion errors {:?}", r.errors));
    }
    if (r.sent, r.received, r.bad_payload) != (c.iters, c.iters, 0) {
        o.fail(format!("sent {} received {} bad payloads {}", r.sent, r.received, r.bad_payload));
    }
    o.checked = (r.received as u64) * c.size as u64;
}

/// The engine's side of a perftest case: the server (`ib_*_bw` without a server name).
fn run_perftest(h: &mut HostEngine, vm: &RxeVm, s: std::net::TcpStream, c: &Case, o: &mut Outcome) {
    let _ = s.set_read_timeout(Some(Duration::from_secs(TOOL_TIMEOUT_S)));
    // The memory the VM reads: a pattern we can recognise.
    let pattern: Vec<u8> = (0..h.ep.buf.len).map(|i| (i * 13 + 5) as u8).collect();
    h.ep.dev.write_buf(&h.ep.buf, 0, &pattern);
    if c.model_fault {
        h.fault_model_memory(c.size as u64 / 2);
    }
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
    let posted = if c.tool == Tool::Send { c.iters as usize } else { 0 };
    let connected = conn.bw_connect_with(&mine, mtu_enum(c.mtu), |r| {
        h.connect(r.qpn, r.psn, VM_MAC, VM_IP);
        // ib_send_bw's messages land in receives posted before the traffic
        for k in 0..posted {
            let sge = [h.ep.mr.sge((k * c.size) as u64, c.size as u32)];
            h.ep.dev
                .post_recv(h.ep.qp, &[RecvWr { wr_id: k as u64, sges: &sge }])
                .map_err(|e| Error::Protocol(e.to_string()))?;
        }
        Ok(())
    });
    if let Err(e) = connected {
        o.fail(format!("perftest exchange: {e}"));
        return;
    }
    // ib_send_bw makes one more handshake once its receives are posted, right before the
    // traffic, and goes from the traffic straight to closing: no handshake and report
    // exchange in between (perftest send_bw.c, RUN_REGULAR)
    let send = c.tool == Tool::Send;
    let fin = std::thread::spawn(move || {
        if send {
            conn.hand_shake(&mine)?;
            conn.close(&mine).map(|()| None)
        } else {
            conn.bw_finish(&mine, &BwReport::default()).map(Some)
        }
    });
    let end = Instant::now() + Duration::from_secs(TOOL_TIMEOUT_S);
    let mut recvs: Vec<WorkCompletion> = Vec::new();
    let mut wcs = [WorkCompletion::EMPTY; 8];
    let mut poll = |h: &mut HostEngine, recvs: &mut Vec<WorkCompletion>| {
        let k = h.ep.dev.poll_cq(h.ep.cq, &mut wcs).unwrap_or(0);
        recvs.extend_from_slice(&wcs[..k]);
    };
    while !fin.is_finished() && Instant::now() < end {
        h.pump(vm, Duration::from_millis(1));
        poll(h, &mut recvs);
    }
    let tail = Instant::now() + Duration::from_millis(300);
    while Instant::now() < tail {
        h.pump(vm, Duration::from_millis(5));
        poll(h, &mut recvs);
    }
    match fin.join() {
        Ok(Ok(None)) => {}
        Ok(Ok(Some(rem))) => {
            if (rem.size as usize, rem.iters) != (c.size, u64::from(c.iters)) {
                o.fail(format!("the VM's report says {} B x {}", rem.size, rem.iters));
            }
        }
        Ok(Err(e)) => o.fail(format!("perftest post-traffic exchange: {e}")),
        Err(_) => o.fail("perftest exchange thread panicked"),
    }
    let r = match c.tool {
        Tool::Write => h.verify_writes(),
        Tool::Read => h.verify_read_responses(&pattern).and_then(|n| {
            let mut back = vec![0u8; pattern.len()];
            h.ep.dev.read_buf(&h.ep.buf, 0, &mut back);
            if back == pattern {
                Ok(n)
            } else {
                Err("READs changed the memory they read".into())
            }
        }),
        _ => verify_sends(h, c, &recvs),
    };
    // (WRITEs to the same address: only the last one's bytes can be checked)
    let least = if c.tool == Tool::Write { c.size } else { c.size * c.iters as usize };
    match r {
        Ok(n) if n >= least as u64 => o.checked = n,
        Ok(n) => o.fail(format!("only {n} payload bytes checked for {} x {} B", c.iters, c.size)),
        Err(e) => o.fail(e),
    }
}

/// ib_send_bw: every receive completed in order with its message's bytes.
fn verify_sends(h: &HostEngine, c: &Case, recvs: &[WorkCompletion]) -> Result<u64, String> {
    let msgs = h.sent_messages();
    let ok: Vec<&WorkCompletion> = recvs.iter().filter(|w| w.opcode == CqeOpcode::Recv).collect();
    if let Some(w) = recvs.iter().find(|w| w.status != CqeStatus::Success) {
        return Err(format!("completion {w:?}"));
    }
    if ok.len() != c.iters as usize || msgs.len() < ok.len() {
        return Err(format!(
            "{} receives completed ({} CQEs written), {} messages seen, {} sent",
            ok.len(),
            h.counters().cqes,
            msgs.len(),
            c.iters
        ));
    }
    let mut n = 0;
    for (k, w) in ok.iter().enumerate() {
        if w.wr_id != k as u64 || w.byte_len as usize != c.size || msgs[k].len() != c.size {
            return Err(format!("receive {k}: {w:?}, message of {} bytes", msgs[k].len()));
        }
        let mut got = vec![0u8; c.size];
        h.ep.dev.read_buf(&h.ep.buf, k * c.size, &mut got);
        if got != msgs[k] {
            return Err(format!("receive {k} does not hold message {k}'s bytes"));
        }
        n += c.size as u64;
    }
    Ok(n)
}

/// One VM boot running `cases` against the engine `kind`, with `netem` on the VM's eth0.
fn run_boot(img: &Path, kind: EngineKind, netem: Option<&str>, cases: &[Case], tag: &str) -> Vec<Outcome> {
    let max_mtu = cases.iter().map(|c| c.mtu).max().unwrap_or(1024);
    let listeners: Vec<Option<TcpListener>> =
        cases.iter().map(|c| c.tool.vm_dials().then(|| side_listener().expect("listener"))).collect();
    let fwd_ports = listeners
        .iter()
        .enumerate()
        .filter_map(|(i, l)| Some((18516 + i as u16, l.as_ref()?.local_addr().ok()?.port())))
        .collect();
    let per_case = TOOL_TIMEOUT_S + 30;
    let o = VmOptions {
        cmd: vm_script(cases, netem),
        vm_ip: VM_IP,
        vm_mac: VM_MAC,
        peer_ip: HOST_IP,
        peer_mac: HOST_MAC,
        // eth0 must carry a full packet of the path MTU (rxe derives its active MTU from it)
        mtu: Some((max_mtu + 200).max(1500) as u16),
        timeout: Duration::from_secs(60 + per_case * cases.len() as u64),
        pcap: std::env::var_os("ROCE_INTEROP_PCAP").map(|d| Path::new(&d).join(format!("{tag}.boot.pcap"))),
        fwd_ports,
        hostfwd_port: cases.iter().any(|c| !c.tool.vm_dials()).then(|| free_local_port().expect("port")),
        ..VmOptions::default()
    };
    let vm = RxeVm::boot_from(img, o).expect("boot");
    let mut out = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let t = Instant::now();
        let mut o = Outcome::default();
        // frames of the previous case's QPs still on the way are not this case's
        while vm.recv_frame(Duration::from_millis(20)).is_some() {}
        let mut h = engine_for(kind, c);
        match c.tool {
            Tool::PingVmServer => {
                let marker = format!("=== CASE {i} BEGIN");
                let up = vm.wait_for_console_after(&marker, "local address", Duration::from_secs(per_case));
                let s = up.and_then(|()| vm.connect_hostfwd(Duration::from_secs(60)));
                match s.and_then(|mut s| {
                    s.set_read_timeout(Some(Duration::from_secs(60))).map_err(|e| Error::Protocol(e.to_string()))?;
                    let mine = PingpongPeerInfo { lid: 0, qpn: h.ep.qp.qpn(), psn: h.ep.psn, gid: gid_of(HOST_IP) };
                    pingpong_client_exchange(&mut s, &mine)
                }) {
                    Ok(theirs) => {
                        h.connect(theirs.qpn, theirs.psn, VM_MAC, VM_IP);
                        run_ping(&mut h, &vm, c, false, &mut o);
                    }
                    Err(e) => o.fail(format!("side channel: {e}")),
                }
            }
            _ => {
                let l = listeners[i].as_ref().expect("a VM client has a listener");
                match accept_timeout(l, Duration::from_secs(per_case)) {
                    Err(e) => o.fail(format!("the VM's tool does not connect: {e}")),
                    Ok(mut s) if c.tool == Tool::PingVmClient => {
                        let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
                        let mine = PingpongPeerInfo { lid: 0, qpn: h.ep.qp.qpn(), psn: h.ep.psn, gid: gid_of(HOST_IP) };
                        match pingpong_server_exchange_with(&mut s, &mine, |r| {
                            h.connect(r.qpn, r.psn, VM_MAC, VM_IP);
                            Ok(())
                        }) {
                            Ok(_) => run_ping(&mut h, &vm, c, true, &mut o),
                            Err(e) => o.fail(format!("pingpong exchange: {e}")),
                        }
                    }
                    Ok(s) => run_perftest(&mut h, &vm, s, c, &mut o),
                }
            }
        }
        engine_stats(&mut h, &mut o);
        save_engine_capture(&h, tag, i);
        o.secs = t.elapsed().as_secs_f64();
        out.push(o);
    }
    let vo = vm.wait(Duration::from_secs(per_case));
    let stdout = match &vo {
        Ok(v) => v.stdout_of_cmd.clone(),
        Err(_) => vm.console(),
    };
    let mut before: BTreeMap<String, i64> = BTreeMap::new();
    for (i, o) in out.iter_mut().enumerate() {
        let (rc, after) = vm_case_report(&stdout, i);
        o.vm_rc = rc;
        o.rxe = after.iter().map(|(k, v)| (k.clone(), v - before.get(k).copied().unwrap_or(0))).collect();
        before = after;
        match rc {
            Some(0) => {}
            Some(r) => o.fail(format!("the VM's tool exited {r}")),
            None => o.fail("the VM's tool did not finish"),
        }
        let b = stdout.find(&format!("=== CASE {i} BEGIN")).unwrap_or(stdout.len());
        let e = stdout.find(&format!("=== CASE {i} END")).unwrap_or(stdout.len()).max(b);
        let said = &stdout[b..e];
        // perftest reports a failed exchange (e.g. its closing handshake) and still exits 0
        if let Some(l) = said.lines().find(|l| ["Failed", "Couldn't", "Unable", "error"].iter().any(|w| l.contains(w)))
        {
            o.fail(format!("the VM's tool said: {}", l.trim()));
        }
        if o.last_ack_lost {
            if rc == Some(0) && said.contains(&format!("{} iters in", cases[i].iters)) {
                o.note = "the ACK of the engine's last SEND was lost after the VM's tool, done, destroyed its QP (the \
                          tool received every message and exited 0)"
                    .into();
            } else {
                o.fail("the engine's last SEND ended in RetryExcErr");
            }
        }
        if !o.failure.is_empty() {
            eprintln!("--- {tag} case {i} ({:?}): {}\n--- the VM's output:\n{}", cases[i], o.failure, &stdout[b..e]);
        }
    }
    out
}

/// "loss 1%" of "loss 1% reorder 2% delay 50us"; "-" for a clean link.
fn netem_name(netem: Option<&str>) -> String {
    netem.map_or("-".into(), |n| n.split(' ').take(2).collect::<Vec<_>>().join(" "))
}

/// One line per case: the table rows of the README's matrix.
fn report(kind: EngineKind, netem: Option<&str>, cases: &[Case], out: &[Outcome]) -> String {
    let mut s = String::new();
    for (c, o) in cases.iter().zip(out) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} x {} | {} | {:.1} | {}/{} | {} | {} | {} | {} | {} | {} |",
            kind.name(),
            netem_name(netem),
            c.tool.name(),
            c.mtu,
            c.size,
            c.iters,
            match (o.failure.is_empty(), o.note.is_empty()) {
                (false, _) => "FAIL",
                (true, true) => "pass",
                (true, false) => "pass (note)",
            },
            o.secs,
            o.frames.0,
            o.frames.1,
            o.dup_in,
            o.eng_retx,
            o.rxe("duplicate_request"),
            o.rxe("completer_retry_err"),
            o.rxe("rcvd_seq_err") + o.rxe("out_of_seq_request"),
            if o.failure.is_empty() { o.note.clone() } else { o.failure.replace('|', "/") },
        );
    }
    s
}

/// Table header of [`report`].
const TABLE_HEAD: &str = "| engine | netem | tool | MTU | size x iters | result | s | frames in/out | engine saw twice | engine retx | rxe duplicate_request | rxe completer_retry_err | rxe seq err (rcvd + out of seq) | failure |\n|---|---|---|--:|--:|---|--:|--:|--:|--:|--:|--:|--:|---|\n";

/// Run the cases on each engine in `kinds` (one boot per engine), print the table, assert.
fn run_matrix(kinds: &[EngineKind], netem: Option<&str>, cases: &[Case], tag: &str) -> String {
    let Some(img) = image() else { return String::new() };
    let mut table = String::new();
    let mut failed = Vec::new();
    for &k in kinds {
        let t = format!("{tag}-{}", k.name());
        let out = run_boot(&img, k, netem, cases, &t);
        let rows = report(k, netem, cases, &out);
        eprint!("{TABLE_HEAD}{rows}");
        table.push_str(&rows);
        failed.extend(out.iter().filter(|o| !o.failure.is_empty()).map(|o| o.failure.clone()));
    }
    assert!(failed.is_empty(), "{} case(s) failed:\n{TABLE_HEAD}{table}", failed.len());
    table
}

fn case(tool: Tool, mtu: u32, size: usize, iters: u32) -> Case {
    Case { tool, mtu, size, iters, model_fault: false }
}

/// The short matrix of the default suite: every tool, both directions of ping-pong, the
/// three MTUs, sizes at and around the packet boundaries.
fn short_cases() -> Vec<Case> {
    vec![
        case(Tool::PingVmClient, 256, 4095, 10),
        case(Tool::PingVmServer, 1024, 1025, 10),
        case(Tool::Write, 4096, 4097, 10),
        case(Tool::Read, 1024, 4 * 1024 + 1, 10),
        case(Tool::Send, 256, 255, 10),
        case(Tool::PingVmClient, 1024, 16 * 1024, 5),
    ]
}

#[test]
fn interop_short_model() {
    run_matrix(&[EngineKind::Model], None, &short_cases(), "short");
}

#[test]
fn interop_short_hdl_engine() {
    run_matrix(&[kind(true)], None, &short_cases(), "short");
}

/// Loss, reordering and delay on the VM's side: both engines recover what rxe loses.
#[test]
fn interop_short_lossy_link() {
    let cases = [case(Tool::PingVmClient, 1024, 5000, 30), case(Tool::Write, 1024, 3 * 1024 + 1, 20)];
    run_matrix(&[EngineKind::Model, kind(true)], Some(NETEM_LOSS1), &cases, "lossy");
}

/// The comparison against the real peer can fail: a READ served by the Verilated engine while
/// the model beside it reads one flipped bit must end in a divergence.
#[test]
fn interop_cosim_catches_a_model_fault() {
    let Some(img) = image() else { return };
    let c = Case { model_fault: true, ..case(Tool::Read, 1024, 3000, 8) };
    let out = run_boot(&img, EngineKind::Cosim, None, &[c], "cosim-fault");
    eprint!("{TABLE_HEAD}{}", report(EngineKind::Cosim, None, &[c], &out));
    assert!(out[0].failure.contains("cosim divergence"), "{:?}", out[0]);
}

/// `ROCE_INTEROP_ENGINE=model|hdl|both` (default both; hdl is cosim with `ROCE_INTEROP_COSIM=1`).
fn engines() -> Vec<EngineKind> {
    match std::env::var("ROCE_INTEROP_ENGINE").as_deref() {
        Ok("model") => vec![EngineKind::Model],
        Ok("hdl") => vec![kind(true)],
        _ => vec![EngineKind::Model, kind(true)],
    }
}

/// Sizes of the full matrix at path MTU `m`.
fn sizes(m: usize) -> [usize; 5] {
    [1, m - 1, m + 1, 4 * m + 1, 16 * m]
}

/// `ROCE_INTEROP_FULL=1`: tools x MTU x sizes, clean and with 1 % and 5 % loss, on the model
/// and the Verilated engine; the table goes to `target/interop-matrix.md`.
#[test]
fn interop_full_matrix() {
    if std::env::var("ROCE_INTEROP_FULL").map_or(true, |v| v != "1") {
        eprintln!("SKIPPED: set ROCE_INTEROP_FULL=1 (and ROCE_RXEVM=1) for the whole matrix");
        return;
    }
    let tools = [Tool::PingVmClient, Tool::PingVmServer, Tool::Write, Tool::Read, Tool::Send];
    let mut table = String::from(TABLE_HEAD);
    let mut failed = 0;
    for netem in [None, Some(NETEM_LOSS1), Some(NETEM_LOSS5)] {
        for mtu in [256u32, 1024, 4096] {
            let cases: Vec<Case> = sizes(mtu as usize)
                .into_iter()
                .flat_map(|s| tools.map(|t| case(t, mtu, s, if s > 4 * mtu as usize { 5 } else { 10 })))
                .collect();
            for k in engines() {
                let Some(img) = image() else { return };
                let tag = format!(
                    "full-{}-{mtu}-{}",
                    netem.map_or("clean".into(), |n| netem_name(Some(n)).replace([' ', '%'], "")),
                    k.name()
                );
                let out = run_boot(&img, k, netem, &cases, &tag);
                let rows = report(k, netem, &cases, &out);
                eprint!("{rows}");
                table.push_str(&rows);
                failed += out.iter().filter(|o| !o.failure.is_empty()).count();
                let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/interop-matrix.md");
                std::fs::write(&p, &table).expect("write the matrix table");
            }
        }
    }
    assert_eq!(failed, 0, "{failed} case(s) failed:\n{table}");
}

fn bad_case(w: &str) -> ! {
    panic!("ROCE_INTEROP_CASES: {w:?} is not tool:mtu:size:iters")
}

/// `ROCE_INTEROP_CASES="tool:mtu:size:iters ..."` (tools: ping-vm-client, ping-vm-server,
/// write, read, send), `ROCE_INTEROP_ENGINE=model|hdl|both` (default both),
/// `ROCE_INTEROP_NETEM="tc netem arguments"`: the cases `scripts/interop.sh` asks for.
#[test]
fn custom() {
    let Ok(spec) = std::env::var("ROCE_INTEROP_CASES") else {
        eprintln!("SKIPPED: no ROCE_INTEROP_CASES (scripts/interop.sh sets it)");
        return;
    };
    let cases: Vec<Case> = spec
        .split_whitespace()
        .map(|w| {
            let p: Vec<&str> = w.split(':').collect();
            if p.len() != 4 {
                bad_case(w);
            }
            let tool = Tool::parse(p[0]).unwrap_or_else(|| bad_case(w));
            let mtu: u32 = p[1].parse().unwrap_or_else(|_| bad_case(w));
            assert!(matches!(mtu, 256 | 512 | 1024 | 2048 | 4096), "MTU {mtu} is not 256..4096");
            case(tool, mtu, p[2].parse().unwrap_or_else(|_| bad_case(w)), p[3].parse().unwrap_or_else(|_| bad_case(w)))
        })
        .collect();
    let kinds = engines();
    let netem = std::env::var("ROCE_INTEROP_NETEM").ok().filter(|n| !n.trim().is_empty());
    run_matrix(&kinds, netem.as_deref(), &cases, "custom");
}
