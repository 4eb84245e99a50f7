//! perftest's `ib_write_bw` / `ib_read_bw` (RC, one QP, half duplex, Ethernet out-of-band
//! exchange) on roce-driver.
//!
//! The client (given a server name) posts `iters` RDMA WRITEs (or READs) of `size` bytes to
//! the server's buffer, at most `tx_depth` outstanding, every `cq_mod`-th one (and the last)
//! signaled, and measures like perftest: per message the time it was posted and the time its
//! (moderated) completion was seen; peak = the best `(tcompleted[j] - tposted[i]) / (j-i+1)`,
//! average = all bytes over `tcompleted[last] - tposted[0]`. The server only exchanges
//! addresses and waits: its engine answers the traffic on its own. Both print perftest's
//! table; the server prints the client's numbers (sent in `xchg_bw_reports`), as perftest's
//! server does.

use std::time::Instant;

use roce_driver::{AccessFlags, Backend, CqeStatus, Device, SendWr, WrOp};

use super::oob::{BwReport, PerftestConn, PerftestDest, PERFTEST_PRE_TRAFFIC_HANDSHAKES};
use super::{App, ConnectParams, DevArgs, Link, Result};

/// Which RDMA operation the test moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// RDMA WRITE (`ib_write_bw`).
    Write,
    /// RDMA READ (`ib_read_bw`).
    Read,
}

/// The ib_write_bw / ib_read_bw command line (subset).
#[derive(clap::Args, Debug, Clone)]
pub struct BwArgs {
    /// Listen on / connect to port.
    #[arg(short = 'p', long = "port", default_value_t = 18515)]
    pub port: u16,
    /// Size of message to exchange.
    #[arg(short = 's', long = "size", default_value_t = 65536)]
    pub size: u32,
    /// Number of exchanges (default: 5000 for write, 1000 for read, like perftest).
    #[arg(short = 'n', long = "iters")]
    pub iters: Option<u32>,
    /// MTU (256..4096; default: the port's, 4096; the smaller of both sides' is used).
    #[arg(short = 'm', long = "mtu")]
    pub mtu: Option<u32>,
    /// GID index (accepted: the port has one GID, ::ffff:<ip>).
    #[arg(short = 'x', long = "gid-index")]
    pub gid_index: Option<u32>,
    /// Do not fail on CPU frequency differences (accepted; timing uses the monotonic clock).
    #[arg(short = 'F', long = "CPU-freq")]
    pub cpu_freq: bool,
    /// IB device (accepted for compatibility; the device is --device).
    #[arg(short = 'd', long = "ib-dev")]
    pub ib_dev: Option<String>,
    /// IB port (accepted, ignored).
    #[arg(short = 'i', long = "ib-port")]
    pub ib_port: Option<u32>,
    /// Size of the send queue (outstanding requests).
    #[arg(short = 't', long = "tx-depth", default_value_t = 128)]
    pub tx_depth: u32,
    /// Generate a completion every this many requests.
    #[arg(short = 'Q', long = "cq-mod", default_value_t = 100)]
    pub cq_mod: u32,
    /// Outstanding READs (read test; default and maximum: the engine's 16).
    #[arg(short = 'o', long = "outs")]
    pub outs: Option<u16>,
    /// Check the data (not in perftest): the side the data lands on (server for write,
    /// client for read) compares it with the pattern the other side's buffer holds.
    #[arg(long = "verify")]
    pub verify: bool,
    #[command(flatten)]
    pub dev: DevArgs,
    /// Server to connect to (client mode); without it, wait for a client.
    pub servername: Option<String>,
}

/// perftest's `RESULT_LINE`.
pub const RESULT_LINE: &str = "---------------------------------------------------------------------------------------";
/// perftest's `RESULT_FMT` (MB/s).
pub const RESULT_FMT: &str = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
const CYCLE_BUFFER: u32 = 4096;
const CACHE_LINE: u32 = 64;
/// The engine's responder resources / outstanding READs (`caps.LOG_MAX_RD_ATOMIC` = 4).
const ENGINE_RD_ATOMIC: u16 = 16;

/// perftest's `REPORT_FMT`.
pub fn report_line(r: &BwReport) -> String {
    format!(
        " {:<7}    {:<10}       {:<7.2}            {:<7.2}\t\t   {:<7.6}",
        r.size, r.iters, r.bw_peak, r.bw_avg, r.msg_rate_avg
    )
}

fn pattern(size: usize) -> Vec<u8> {
    (0..size).map(|i| (i * 13 + 5) as u8).collect()
}

/// Run the test (the `main` of write_bw and read_bw).
pub fn main(verb: Verb, args: BwArgs) {
    let client = args.servername.is_some();
    let dev = args.dev.clone();
    let prog = if verb == Verb::Write { "write_bw" } else { "read_bw" };
    super::exit_on_error(prog, super::run_app(&dev, client, Bw { verb, args }));
}

struct Bw {
    verb: Verb,
    args: BwArgs,
}

fn print_dest(verb: Verb, what: &str, d: &PerftestDest) {
    let out = if verb == Verb::Read { format!(" OUT {:#04x}", d.out_reads) } else { String::new() };
    println!(
        " {what} address: LID {:04x} QPN {:#06x} PSN {:#08x}{out} RKey {:#08x} VAddr {:#016x}",
        d.lid, d.qpn, d.psn, d.rkey, d.vaddr
    );
    let g: Vec<String> = d.gid.iter().map(|b| format!("{b:02}")).collect();
    println!(" GID: {}", g.join(":"));
}

impl App for Bw {
    fn run<B: Backend>(self, mut dev: Device<B>, link: &mut Link<'_>) -> Result<()> {
        let (verb, a) = (self.verb, &self.args);
        let client = a.servername.is_some();
        let size = a.size as usize;
        let iters = a.iters.unwrap_or(if verb == Verb::Write { 5000 } else { 1000 });
        let tx_depth = a.tx_depth.clamp(1, 8192);
        let cq_mod = a.cq_mod.clamp(1, tx_depth);
        let my_mtu = a.mtu.unwrap_or(4096);
        super::path_mtu(my_mtu)?;
        if size == 0 || iters == 0 {
            return Err("size and iters must be positive".into());
        }
        let outs = a.outs.unwrap_or(ENGINE_RD_ATOMIC).clamp(1, ENGINE_RD_ATOMIC);
        link.setup(&mut dev);
        let pd = dev.alloc_pd();
        // perftest: max(size, cycle buffer) * 2, so a peer that cycles its remote address
        // through the cycle buffer stays inside our MR.
        let buf_len = (size.div_ceil(CACHE_LINE as usize) * CACHE_LINE as usize).max(CYCLE_BUFFER as usize) * 2;
        let buf = dev.alloc_buf(buf_len)?;
        let access = AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ;
        let mr = dev.reg_mr(pd, &buf, 0, buf.len, access)?;
        // The side the data comes from holds the pattern.
        if (verb == Verb::Write) == client {
            dev.write_buf(&buf, 0, &pattern(size));
        }
        let cq = dev.create_cq(tx_depth + 16)?;
        let qp = dev.create_qp(pd, cq, cq, tx_depth, 16)?;
        let qp_access = if verb == Verb::Write { AccessFlags::REMOTE_WRITE } else { AccessFlags::REMOTE_READ };
        super::qp_init(&mut dev, qp, qp_access)?;
        let psn = super::random_psn();
        let mine = PerftestDest {
            lid: 0,
            out_reads: if verb == Verb::Read { outs } else { 1 },
            qpn: qp.qpn(),
            psn,
            rkey: mr.rkey,
            vaddr: mr.va,
            gid: link.gid(),
            srqn: 0,
        };

        let title = if verb == Verb::Write { "RDMA_Write BW Test" } else { "RDMA_Read BW Test" };
        // The client retries the first message if the peer closes at once (see
        // `common::client_exchange`); everything else runs on that one connection.
        let (mut conn, _version) = match &a.servername {
            None => {
                let l = super::listen(a.port)?;
                println!("\n************************************\n* Waiting for client to connect... *\n************************************");
                let mut conn = PerftestConn { stream: super::accept(&l, link)?, client: false };
                let v = conn.exchange_versions()?;
                (conn, v)
            }
            Some(server) => {
                let (s, v) = super::client_exchange(server, a.port, link, |s| {
                    PerftestConn { stream: s, client: true }.exchange_versions()
                })?;
                (PerftestConn { stream: s, client: true }, v)
            }
        };
        let (_cycle_buffer, _cache_line) = conn.sys_data(CYCLE_BUFFER, CACHE_LINE)?;
        let their_mtu = conn.mtu(super::mtu_enum(my_mtu))?;
        let mtu = super::mtu_of_enum(super::mtu_enum(my_mtu).min(their_mtu));

        println!("{RESULT_LINE}");
        println!("                    {title}");
        println!(" Dual-port       : OFF\t\tDevice         : {}", link.name);
        println!(" Number of qps   : 1\t\tTransport type : IB");
        println!(" Connection type : RC\t\tUsing SRQ      : OFF");
        println!(" TX depth        : {tx_depth}");
        if verb == Verb::Read {
            println!(" Outstand reads  : {outs}");
        }
        println!(" CQ Moderation   : {cq_mod}");
        println!(" Mtu             : {mtu}[B]");
        println!(" Link type       : Ethernet");
        println!(" GID index       : {}", a.gid_index.unwrap_or(0));
        println!(" Max inline data : 0[B]");
        println!(" rdma_cm QPs\t : OFF");
        println!(" Data ex. method : Ethernet");
        println!("{RESULT_LINE}");

        let theirs = conn.hand_shake(&mine)?;
        print_dest(verb, "local", &mine);
        print_dest(verb, "remote", &theirs);
        let ip = super::ipv4_of_gid(&theirs.gid)?;
        let mac = link.resolve(ip)?;
        let p = ConnectParams {
            sq_psn: psn,
            dest_qpn: theirs.qpn,
            rq_psn: theirs.psn,
            dest_ip: ip,
            dest_mac: mac,
            mtu,
            access: qp_access,
            max_rd_atomic: if verb == Verb::Read { theirs.out_reads.clamp(1, outs) as u8 } else { 1 },
            max_dest_rd_atomic: ENGINE_RD_ATOMIC as u8,
        };
        super::qp_rtr_rts(&mut dev, qp, &p)?;
        for _ in 1..PERFTEST_PRE_TRAFFIC_HANDSHAKES {
            let again = conn.hand_shake(&mine)?;
            if again != theirs {
                return Err(format!("peer changed its address between handshakes: {theirs:?} then {again:?}").into());
            }
        }
        println!("{RESULT_LINE}");
        println!("{RESULT_FMT}");

        if !client {
            // The engine serves the client's traffic; wait for its end of the exchange.
            let rem = conn.bw_finish(&mine, &BwReport::default())?;
            println!("{}", report_line(&rem));
            println!("{RESULT_LINE}");
            if a.verify && verb == Verb::Write {
                let mut got = vec![0u8; size];
                dev.read_buf(&buf, 0, &mut got);
                if got != pattern(size) {
                    return Err("verify: the written data differs from the client's pattern".into());
                }
                println!(" verify: {size} bytes written by the client match");
            }
            return Ok(());
        }

        // Client: the traffic.
        let sge = [mr.sge(0, a.size)];
        let op = match verb {
            Verb::Write => WrOp::Write { remote_addr: theirs.vaddr, rkey: theirs.rkey },
            Verb::Read => WrOp::Read { remote_addr: theirs.vaddr, rkey: theirs.rkey },
        };
        let n = iters as usize;
        let base = Instant::now();
        let mut tposted = vec![0u64; n];
        let mut tcompleted = vec![0u64; n];
        let (mut posted, mut completed) = (0usize, 0usize);
        let mut wcs = [super::empty_wc(); 16];
        let now_ns = || base.elapsed().as_nanos() as u64;
        while completed < n {
            let room = (tx_depth as usize - (posted - completed)).min(n - posted);
            if room > 0 {
                let wrs: Vec<SendWr<'_>> = (posted..posted + room)
                    .map(|i| {
                        let mut w = SendWr::new(i as u64, op, &sge);
                        w.signaled = (i + 1) % cq_mod as usize == 0 || i + 1 == n;
                        w
                    })
                    .collect();
                dev.post_send(qp, &wrs)?;
                let t = now_ns();
                tposted[posted..posted + room].fill(t);
                posted += room;
            }
            let k = dev.poll_cq(cq, &mut wcs)?;
            if k == 0 {
                link.check_deadline(&format!("after {completed} of {n} completions"))?;
                link.idle();
                continue;
            }
            let t = now_ns();
            for wc in &wcs[..k] {
                if wc.status != CqeStatus::Success {
                    return Err(format!(
                        "Completion with error at client: {:?}, wr_id {} (engine {:?})",
                        wc.status,
                        wc.wr_id,
                        link.engine_counters()
                    )
                    .into());
                }
                let upto = (wc.wr_id as usize + 1).min(n);
                if upto > completed {
                    tcompleted[completed..upto].fill(t);
                    completed = upto;
                }
            }
        }
        let report = measure(a.size, &tposted, &tcompleted);
        println!("{}", report_line(&report));
        println!("{RESULT_LINE}");
        conn.bw_finish(&mine, &report)?;
        if a.verify && verb == Verb::Read {
            let mut got = vec![0u8; size];
            dev.read_buf(&buf, 0, &mut got);
            if got != pattern(size) {
                return Err("verify: the data read differs from the server's pattern".into());
            }
            println!(" verify: {size} bytes read from the server match");
        }
        Ok(())
    }
}

/// perftest's `print_report_bw` arithmetic (MB = 2^20 bytes; times in ns).
fn measure(size: u32, tposted: &[u64], tcompleted: &[u64]) -> BwReport {
    let n = tposted.len();
    let total = (tcompleted[n - 1].saturating_sub(tposted[0])).max(1) as f64 / 1e9;
    let mb = f64::from(1u32 << 20);
    let bw_avg = f64::from(size) * n as f64 / total / mb;
    // Peak: the best average over any run of consecutive messages; O(n^2) like perftest,
    // which skips it for long runs too.
    let mut opt = f64::INFINITY;
    if n <= 20_000 {
        for (i, &p) in tposted.iter().enumerate() {
            for (k, &c) in tcompleted[i..].iter().enumerate() {
                opt = opt.min(c.saturating_sub(p) as f64 / (k + 1) as f64);
            }
        }
    }
    let bw_peak = if opt.is_finite() && opt > 0.0 { f64::from(size) / (opt / 1e9) / mb } else { bw_avg };
    BwReport { size: u64::from(size), iters: n as u64, bw_peak, bw_avg, msg_rate_avg: n as f64 / total / 1e6 }
}
