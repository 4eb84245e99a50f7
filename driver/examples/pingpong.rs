//! `ibv_rc_pingpong` on roce-driver: the same command line (subset), the same TCP exchange
//! and the same algorithm, so it pairs with the real tool (rdma-core) on any RoCEv2 peer.
//!
//! ```text
//! # two processes on one machine, engine model on the sim device (the defaults)
//! cargo run -p roce-driver --example pingpong                      # server
//! cargo run -p roce-driver --example pingpong -- 127.0.0.1         # client
//! # a board
//! cargo run -p roce-driver --example pingpong -- --device vfio:0000:03:00.0 \
//!     --ip 192.168.1.2 --mac 02:00:00:00:00:02 -g 1 [server]
//! ```
//!
//! Algorithm (rc_pingpong.c): post `rx_depth` receives; the client sends first; whenever
//! neither a send nor a receive is pending and fewer than `iters` sends went out, send again;
//! refill the receives when at most one is left. Every message is `size` bytes of 0x7b
//! (rc_pingpong's fill); received ones are checked (a warning on stderr otherwise). Prints
//! the tool's two result lines.

mod common;

use std::net::Ipv6Addr;
use std::time::Instant;

use clap::Parser;
use common::oob::{pingpong_client_exchange, pingpong_server_exchange, PingpongDest};
use common::{App, ConnectParams, DevArgs, Link, Result};
use roce_driver::{AccessFlags, Backend, CqeOpcode, CqeStatus, Device, RecvWr, SendWr, WrOp};

/// ibv_rc_pingpong-compatible RC ping-pong over roce-driver (sim device or board).
#[derive(Parser, Debug)]
#[command(name = "pingpong", version)]
struct Args {
    /// Listen on / connect to port.
    #[arg(short = 'p', long = "port", default_value_t = 18515)]
    port: u16,
    /// IB device (accepted for compatibility; the device is --device).
    #[arg(short = 'd', long = "ib-dev")]
    ib_dev: Option<String>,
    /// Port of IB device (accepted, ignored).
    #[arg(short = 'i', long = "ib-port", default_value_t = 1)]
    ib_port: u32,
    /// Size of message to exchange.
    #[arg(short = 's', long = "size", default_value_t = 4096)]
    size: u32,
    /// Path MTU.
    #[arg(short = 'm', long = "mtu", default_value_t = 1024)]
    mtu: u32,
    /// Number of receives to post at a time.
    #[arg(short = 'r', long = "rx-depth", default_value_t = 500)]
    rx_depth: u32,
    /// Number of exchanges.
    #[arg(short = 'n', long = "iters", default_value_t = 1000)]
    iters: u32,
    /// Service level (accepted, ignored).
    #[arg(short = 'l', long = "sl", default_value_t = 0)]
    sl: u32,
    /// Sleep on CQ events (accepted; this tool polls).
    #[arg(short = 'e', long = "events")]
    events: bool,
    /// Local port GID index (accepted: the port has one GID, ::ffff:<ip>, always sent).
    #[arg(short = 'g', long = "gid-idx")]
    gid_idx: Option<i32>,
    /// Validate the received buffer (rc_pingpong's check: the first byte of each page is 0).
    #[arg(short = 'c', long = "chk")]
    chk: bool,
    #[command(flatten)]
    dev: DevArgs,
    /// Server to connect to (client mode); without it, wait for a client.
    servername: Option<String>,
}

const RECV_WRID: u64 = 1;
const SEND_WRID: u64 = 2;
const PAGE: usize = 4096;

struct PingPong(Args);

impl App for PingPong {
    fn run<B: Backend>(self, mut dev: Device<B>, link: &mut Link<'_>) -> Result<()> {
        let a = &self.0;
        let size = a.size as usize;
        if a.size == 0 || a.iters == 0 || a.rx_depth == 0 {
            return Err("size, iters and rx-depth must be positive".into());
        }
        common::path_mtu(a.mtu)?;
        link.setup(&mut dev);
        let pd = dev.alloc_pd();
        // [send buffer | receive buffer]; rc_pingpong uses one buffer for both.
        let area = size.div_ceil(PAGE) * PAGE;
        let buf = dev.alloc_buf(2 * area)?;
        let mr = dev.reg_mr(pd, &buf, 0, buf.len, AccessFlags::LOCAL_WRITE)?;
        let mut fill = vec![0x7bu8; size];
        if a.chk {
            for i in (0..size).step_by(PAGE) {
                fill[i] = 0; // rc_pingpong: buf[i] = i / page_size % sizeof(char)
            }
        }
        dev.write_buf(&buf, 0, &fill);
        let cq = dev.create_cq(a.rx_depth + 16)?;
        let qp = dev.create_qp(pd, cq, cq, 16, a.rx_depth)?;
        common::qp_init(&mut dev, qp, AccessFlags::EMPTY)?;

        let recv_sge = [mr.sge(area as u64, a.size)];
        let send_sge = [mr.sge(0, a.size)];
        let post_recv = |dev: &mut Device<B>, n: u32| -> Result<u32> {
            let wrs: Vec<RecvWr<'_>> = (0..n).map(|_| RecvWr { wr_id: RECV_WRID, sges: &recv_sge }).collect();
            dev.post_recv(qp, &wrs)?;
            Ok(n)
        };
        let mut routs = post_recv(&mut dev, a.rx_depth)?;

        let psn = common::random_psn();
        let mine = PingpongDest { lid: 0, qpn: qp.qpn(), psn, gid: link.gid() };
        let connect = |dev: &mut Device<B>, link: &Link<'_>, r: &PingpongDest| -> Result<()> {
            let ip = common::ipv4_of_gid(&r.gid)?;
            let mac = link.resolve(ip)?;
            let p = ConnectParams {
                sq_psn: psn,
                dest_qpn: r.qpn,
                rq_psn: r.psn,
                dest_ip: ip,
                dest_mac: mac,
                mtu: a.mtu,
                access: AccessFlags::EMPTY,
                max_rd_atomic: 1,
                max_dest_rd_atomic: 1,
            };
            common::qp_rtr_rts(dev, qp, &p)
        };
        let print_dest = |what: &str, d: &PingpongDest| {
            println!(
                "  {:<16}LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
                format!("{what} address:"),
                d.lid,
                d.qpn,
                d.psn,
                Ipv6Addr::from(d.gid)
            );
        };
        let remote = match &a.servername {
            None => {
                // listen before printing, so whoever waits for this line can connect
                let l = common::listen(a.port)?;
                print_dest("local", &mine);
                let mut s = common::accept(&l, link)?;
                pingpong_server_exchange(&mut s, &mine, |r| connect(&mut dev, link, r))?
            }
            Some(server) => {
                print_dest("local", &mine);
                let (_s, r) = common::client_exchange(server, a.port, link, |s| pingpong_client_exchange(s, &mine))?;
                connect(&mut dev, link, &r)?;
                r
            }
        };
        print_dest("remote", &remote);

        let mut pending = RECV_WRID;
        let send = |dev: &mut Device<B>| -> Result<()> {
            Ok(dev.post_send(qp, &[SendWr::new(SEND_WRID, WrOp::Send, &send_sge)])?)
        };
        if a.servername.is_some() {
            send(&mut dev)?;
            pending |= SEND_WRID;
        }
        let start = Instant::now();
        let (mut rcnt, mut scnt, mut bad) = (0u32, 0u32, 0u32);
        let mut wcs = [common::empty_wc(); 16];
        let mut got = vec![0u8; size];
        while rcnt < a.iters || scnt < a.iters {
            let n = dev.poll_cq(cq, &mut wcs)?;
            if n == 0 {
                link.check_deadline(&format!("after {scnt} sends and {rcnt} receives"))?;
                link.idle();
                continue;
            }
            for wc in &wcs[..n] {
                if wc.status != CqeStatus::Success {
                    return Err(format!("Failed status {:?} for wr_id {}", wc.status, wc.wr_id).into());
                }
                match wc.wr_id {
                    SEND_WRID => scnt += 1,
                    RECV_WRID => {
                        if wc.opcode != CqeOpcode::Recv && wc.opcode != CqeOpcode::RecvImm {
                            return Err(format!("unexpected completion {:?}", wc.opcode).into());
                        }
                        dev.read_buf(&buf, area, &mut got);
                        let ok = if a.chk {
                            (0..size).step_by(PAGE).all(|i| got[i] == 0)
                        } else {
                            wc.byte_len == a.size && got.iter().all(|&b| b == 0x7b)
                        };
                        if !ok {
                            if a.chk {
                                return Err(format!("failed to validate the received buffer (message {rcnt})").into());
                            }
                            bad += 1;
                        }
                        routs -= 1;
                        if routs <= 1 {
                            routs += post_recv(&mut dev, a.rx_depth - routs)?;
                        }
                        rcnt += 1;
                    }
                    id => return Err(format!("Completion for unknown wr_id {id}").into()),
                }
                pending &= !wc.wr_id;
                if scnt < a.iters && pending == 0 {
                    send(&mut dev)?;
                    pending = RECV_WRID | SEND_WRID;
                }
            }
        }
        let usec = start.elapsed().as_secs_f64() * 1e6;
        let bytes = u64::from(a.size) * u64::from(a.iters) * 2;
        println!("{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec", usec / 1e6, bytes as f64 * 8.0 / usec);
        println!("{} iters in {:.2} seconds = {:.2} usec/iter", a.iters, usec / 1e6, usec / f64::from(a.iters));
        if bad > 0 {
            eprintln!("warning: {bad} received messages were not {size} bytes of 0x7b (rc_pingpong's fill)");
        }
        Ok(())
    }
}

fn main() {
    let args = Args::parse();
    let client = args.servername.is_some();
    let dev = args.dev.clone();
    common::exit_on_error("pingpong", common::run_app(&dev, client, PingPong(args)));
}
