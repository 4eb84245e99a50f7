//! What the examples share: the device argument (`sim:` = the engine model on a datagram
//! socket, `vfio:` = a board), port setup, QP connection, and the tools' out-of-band formats.
//!
//! Device selection, common to every example:
//! - `--device sim:<local.sock>:<remote.sock>`: a `roce_sim::net::netdev::NetDev` (the engine
//!   model running in real time in this process) bound at `local.sock`, sending its Ethernet
//!   frames to `remote.sock` (another example's NetDev, or the Soft-RoCE VM's `-netdev dgram`
//!   socket). Default: `sim:/tmp/roce-sim-server.sock:/tmp/roce-sim-client.sock` for a
//!   server, the reverse for a client, so two examples on one machine find each other.
//! - `--device vfio:<pci-addr>`: the engine on a board, through `roce_driver::vfio` (Linux).
//! - `--ip`, `--mac`: the port's address (sim defaults: 192.0.2.2 / 52:54:00:00:00:02 for a
//!   server, 192.0.2.3 / 52:54:00:00:00:03 for a client; required with vfio).
//! - `--peer-mac`: the peer's MAC (sim: learned by ARP otherwise; vfio: from the kernel's
//!   neighbour table `/proc/net/arp` otherwise).
//! - `--timeout SECONDS`: give up (exit 1) after this long; the real tools wait forever.
#![allow(dead_code)]

pub mod bw;
pub mod oob;

use std::hash::{BuildHasher, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use roce_driver::device::Features;
use roce_driver::{masks, AccessFlags, Backend, Device, Encap, PathMtu, QpAttr, QpState, QueuePair, WorkCompletion};
use roce_sim::net::netdev::{NetDev, NetDevConfig};

/// Errors of the examples (printed by `main`).
pub type Error = Box<dyn std::error::Error + Send + Sync>;
/// Result alias.
pub type Result<T> = std::result::Result<T, Error>;

/// The device arguments every example takes.
#[derive(clap::Args, Debug, Clone)]
pub struct DevArgs {
    /// Device: `sim:<local.sock>:<remote.sock>` (engine model on a unix datagram socket) or
    /// `vfio:<pci-addr>` (a board). Default: a sim device on /tmp/roce-sim-{server,client}.sock.
    #[arg(long = "device", value_name = "DEV")]
    pub device: Option<String>,
    /// IPv4 address of our port (sim default: 192.0.2.2 as server, 192.0.2.3 as client).
    #[arg(long = "ip", value_name = "IPV4")]
    pub ip: Option<Ipv4Addr>,
    /// MAC of our port (sim default: 52:54:00:00:00:02 as server, ...:03 as client).
    #[arg(long = "mac", value_name = "MAC")]
    pub mac: Option<String>,
    /// MAC of the peer (default: ARP on sim, /proc/net/arp on vfio).
    #[arg(long = "peer-mac", value_name = "MAC")]
    pub peer_mac: Option<String>,
    /// Engine clock of the sim device, MHz (wall time maps to cycles at this rate).
    #[arg(long = "clock-mhz", default_value_t = 250.0, value_name = "MHZ")]
    pub clock_mhz: f64,
    /// Give up after this many seconds (default: wait forever, like the real tools).
    #[arg(long = "timeout", value_name = "SECONDS")]
    pub timeout: Option<f64>,
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6]> {
    let p: Vec<&str> = s.split(':').collect();
    let mut m = [0u8; 6];
    if p.len() != 6 {
        return Err(format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)").into());
    }
    for (d, x) in m.iter_mut().zip(&p) {
        *d = u8::from_str_radix(x, 16).map_err(|_| format!("{s:?} is not a MAC address"))?;
    }
    Ok(m)
}

/// `aa:bb:cc:dd:ee:ff` of a MAC.
pub fn fmt_mac(m: &[u8; 6]) -> String {
    m.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(":")
}

/// What the application sees of the port besides the driver: its address, neighbour
/// resolution, how to wait when the CQ is empty, and the deadline.
pub struct Link<'a> {
    /// Our MAC.
    pub mac: [u8; 6],
    /// Our IPv4 address.
    pub ip: Ipv4Addr,
    /// Device label for the banners (`sim` or the PCI address).
    pub name: String,
    net: Option<&'a NetDev>,
    peer_mac: Option<[u8; 6]>,
    seen: u64,
    deadline: Option<Instant>,
}

impl Link<'_> {
    /// Our RoCEv2 GID: `::ffff:<ip>`.
    pub fn gid(&self) -> [u8; 16] {
        self.ip.to_ipv6_mapped().octets()
    }

    /// Configure and enable the port.
    pub fn setup<B: Backend>(&self, dev: &mut Device<B>) {
        dev.configure_port(self.mac, self.ip, self.ip.to_ipv6_mapped());
        dev.enable(Features { ecn: true, cnp: true, dcqcn: true, pfc: true });
    }

    /// The MAC of `ip`.
    pub fn resolve(&self, ip: Ipv4Addr) -> Result<[u8; 6]> {
        if let Some(m) = self.peer_mac {
            return Ok(m);
        }
        match self.net {
            Some(n) => n
                .resolve(ip, Duration::from_secs(5))
                .ok_or_else(|| format!("no ARP answer from {ip} (pass --peer-mac)").into()),
            None => proc_net_arp(ip).ok_or_else(|| format!("{ip} is not in /proc/net/arp: pass --peer-mac").into()),
        }
    }

    /// Called when a poll found nothing: on the sim device, sleep until the engine moved
    /// something (at most 1 ms); on hardware, spin.
    pub fn idle(&mut self) {
        match self.net {
            Some(n) => {
                n.wait_activity(&mut self.seen, Duration::from_millis(1));
            }
            None => std::hint::spin_loop(),
        }
    }

    /// Error out once the `--timeout` deadline passed.
    pub fn check_deadline(&self, what: &str) -> Result<()> {
        match self.deadline {
            Some(d) if Instant::now() >= d => Err(format!("timed out {what}").into()),
            _ => Ok(()),
        }
    }

    /// Time left before the deadline (None: no deadline).
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(|d| d.saturating_duration_since(Instant::now()).max(Duration::from_millis(1)))
    }

    /// Apply the deadline to a side-channel stream's reads.
    pub fn stream_timeout(&self, s: &TcpStream) -> Result<()> {
        s.set_read_timeout(self.remaining())?;
        Ok(())
    }

    /// Engine counters (sim only), for diagnostics.
    pub fn engine_counters(&self) -> Option<roce_model::engine::Counters> {
        self.net.map(|n| n.engine_counters())
    }
}

fn proc_net_arp(ip: Ipv4Addr) -> Option<[u8; 6]> {
    let t = std::fs::read_to_string("/proc/net/arp").ok()?;
    t.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.len() >= 4 && f[0] == ip.to_string()).then(|| parse_mac(f[3]).ok()).flatten()
    })
}

/// An example's main work, generic over the backend.
pub trait App {
    /// Run on an opened device.
    fn run<B: Backend>(self, dev: Device<B>, link: &mut Link<'_>) -> Result<()>;
}

enum DevSpec {
    Sim { local: PathBuf, remote: PathBuf },
    Vfio(String),
}

fn parse_device(s: &str) -> Result<DevSpec> {
    if let Some(rest) = s.strip_prefix("sim:") {
        let (l, r) = rest.split_once(':').ok_or("sim device: expected sim:<local.sock>:<remote.sock>")?;
        if l.is_empty() || r.is_empty() {
            return Err("sim device: expected sim:<local.sock>:<remote.sock>".into());
        }
        return Ok(DevSpec::Sim { local: l.into(), remote: r.into() });
    }
    if let Some(a) = s.strip_prefix("vfio:") {
        return Ok(DevSpec::Vfio(a.to_string()));
    }
    Err(format!("unknown device {s:?}: expected sim:<local.sock>:<remote.sock> or vfio:<pci-addr>").into())
}

/// Open the device of `args` and run `app` on it. `client`: which side we are (picks the
/// sim defaults). On the sim device, the link stays up for a moment afterwards so the last
/// ACKs reach the peer.
pub fn run_app<A: App>(args: &DevArgs, client: bool, app: A) -> Result<()> {
    let default_dev = if client {
        "sim:/tmp/roce-sim-client.sock:/tmp/roce-sim-server.sock"
    } else {
        "sim:/tmp/roce-sim-server.sock:/tmp/roce-sim-client.sock"
    };
    let spec = parse_device(args.device.as_deref().unwrap_or(default_dev))?;
    let peer_mac = args.peer_mac.as_deref().map(parse_mac).transpose()?;
    let mac = args.mac.as_deref().map(parse_mac).transpose()?;
    let deadline = args.timeout.map(|s| Instant::now() + Duration::from_secs_f64(s.max(0.0)));
    match spec {
        DevSpec::Sim { local, remote } => {
            let last = if client { 3 } else { 2 };
            let mut cfg = NetDevConfig::new(local, remote);
            cfg.ipv4 = args.ip.unwrap_or(Ipv4Addr::new(192, 0, 2, last));
            cfg.gid = cfg.ipv4.to_ipv6_mapped();
            cfg.mac = mac.unwrap_or([0x52, 0x54, 0, 0, 0, last]);
            cfg.clock_mhz = args.clock_mhz;
            let (mac, ip) = (cfg.mac, cfg.ipv4);
            let nd = NetDev::open(cfg)?;
            let dev = Device::open(nd.backend())?;
            let mut link = Link { mac, ip, name: "sim".into(), net: Some(&nd), peer_mac, seen: 0, deadline };
            let r = app.run(dev, &mut link);
            nd.linger(Duration::from_millis(100), Duration::from_secs(2));
            r
        }
        DevSpec::Vfio(addr) => run_vfio(&addr, args, mac, peer_mac, deadline, app),
    }
}

#[cfg(target_os = "linux")]
fn run_vfio<A: App>(
    addr: &str,
    args: &DevArgs,
    mac: Option<[u8; 6]>,
    peer_mac: Option<[u8; 6]>,
    deadline: Option<Instant>,
    app: A,
) -> Result<()> {
    let (Some(mac), Some(ip)) = (mac, args.ip) else {
        return Err("a vfio device needs --mac and --ip (the port's address)".into());
    };
    let b = roce_driver::vfio::VfioBackend::open(addr)?;
    let dev = Device::open(b)?;
    let mut link = Link { mac, ip, name: addr.to_string(), net: None, peer_mac, seen: 0, deadline };
    app.run(dev, &mut link)
}

#[cfg(not(target_os = "linux"))]
fn run_vfio<A: App>(
    _: &str,
    _: &DevArgs,
    _: Option<[u8; 6]>,
    _: Option<[u8; 6]>,
    _: Option<Instant>,
    _: A,
) -> Result<()> {
    Err("VFIO backend not built: it exists on Linux only".into())
}

/// A random 24-bit PSN (like the tools' `lrand48() & 0xffffff`).
pub fn random_psn() -> u32 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos()));
    h.write_u32(std::process::id());
    (h.finish() as u32) & 0xFF_FFFF
}

/// A path MTU in bytes as the driver's enum.
pub fn path_mtu(m: u32) -> Result<PathMtu> {
    Ok(match m {
        256 => PathMtu::Mtu256,
        512 => PathMtu::Mtu512,
        1024 => PathMtu::Mtu1024,
        2048 => PathMtu::Mtu2048,
        4096 => PathMtu::Mtu4096,
        m => return Err(format!("MTU {m} is not one of 256, 512, 1024, 2048, 4096").into()),
    })
}

/// `ibv_mtu` enum (1 = 256 ... 5 = 4096) of an MTU in bytes.
pub fn mtu_enum(m: u32) -> u8 {
    (m.trailing_zeros().saturating_sub(7)) as u8
}

/// Bytes of an `ibv_mtu` enum.
pub fn mtu_of_enum(e: u8) -> u32 {
    128 << e.clamp(1, 5)
}

/// The peer's IPv4 address from its GID (`::ffff:a.b.c.d`).
pub fn ipv4_of_gid(gid: &[u8; 16]) -> Result<Ipv4Addr> {
    if gid.iter().all(|&b| b == 0) {
        return Err("the peer sent no GID: run it with a RoCEv2 IPv4 GID index (-g / -x)".into());
    }
    Ipv6Addr::from(*gid).to_ipv4_mapped().ok_or_else(|| {
        format!("peer GID {} is not IPv4-mapped: only RoCEv2 over IPv4 is supported", Ipv6Addr::from(*gid)).into()
    })
}

/// How to connect a QP (what the tools pass to `ibv_modify_qp`).
pub struct ConnectParams {
    /// Our first PSN.
    pub sq_psn: u32,
    /// Remote QPN.
    pub dest_qpn: u32,
    /// Remote first PSN.
    pub rq_psn: u32,
    /// Remote IPv4.
    pub dest_ip: Ipv4Addr,
    /// Remote MAC.
    pub dest_mac: [u8; 6],
    /// Path MTU, bytes.
    pub mtu: u32,
    /// Remote access the QP allows.
    pub access: AccessFlags,
    /// Outstanding READs/atomics as requester.
    pub max_rd_atomic: u8,
    /// Responder resources.
    pub max_dest_rd_atomic: u8,
}

/// RESET -> INIT with `access`.
pub fn qp_init<B: Backend>(dev: &mut Device<B>, qp: QueuePair, access: AccessFlags) -> Result<()> {
    let a = QpAttr { state: QpState::Init, access, ..QpAttr::default() };
    dev.modify_qp(qp, &a, masks::INIT)?;
    Ok(())
}

/// INIT -> RTR -> RTS (timeout 14, retry_cnt 7, rnr_retry 7, min_rnr_timer 12, as the tools).
pub fn qp_rtr_rts<B: Backend>(dev: &mut Device<B>, qp: QueuePair, p: &ConnectParams) -> Result<()> {
    let mut a = QpAttr {
        state: QpState::Rtr,
        access: p.access,
        path_mtu: path_mtu(p.mtu)?,
        dest_qpn: p.dest_qpn,
        rq_psn: p.rq_psn,
        sq_psn: p.sq_psn,
        encap: Encap::RoceV2Ipv4,
        dest_mac: p.dest_mac,
        dest_ip: IpAddr::V4(p.dest_ip),
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        min_rnr_timer: 12,
        max_rd_atomic: p.max_rd_atomic,
        max_dest_rd_atomic: p.max_dest_rd_atomic,
        ..QpAttr::default()
    };
    dev.modify_qp(qp, &a, masks::RTR)?;
    a.state = QpState::Rts;
    dev.modify_qp(qp, &a, masks::RTS)?;
    Ok(())
}

/// An empty work completion (for poll arrays).
pub fn empty_wc() -> WorkCompletion {
    WorkCompletion {
        wr_id: 0,
        status: roce_driver::CqeStatus::Success,
        opcode: roce_driver::CqeOpcode::Send,
        byte_len: 0,
        imm: None,
        invalidated: None,
        qpn: 0,
        src_qp: 0,
    }
}

/// The server side of the side channel: listen on `port` (all addresses, like the tools).
pub fn listen(port: u16) -> Result<TcpListener> {
    TcpListener::bind(("0.0.0.0", port)).map_err(|e| format!("couldn't listen to port {port}: {e}").into())
}

/// Accept one connection (within the deadline, if any).
pub fn accept(l: &TcpListener, link: &Link<'_>) -> Result<TcpStream> {
    l.set_nonblocking(true)?;
    let s = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                link.check_deadline("waiting for a client to connect")?;
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(format!("accept: {e}").into()),
        }
    };
    s.set_nonblocking(false)?;
    let _ = s.set_nodelay(true);
    link.stream_timeout(&s)?;
    Ok(s)
}

/// Connect to `server:port`, retrying while the server is not up yet (the real tools try
/// once; retrying also covers QEMU's user networking, which accepts at once and closes when
/// nothing listens in the guest). Keeps retrying for 30 s or until the deadline.
pub fn connect(server: &str, port: u16, link: &Link<'_>) -> Result<TcpStream> {
    let addrs: Vec<SocketAddr> =
        (server, port).to_socket_addrs().map_err(|e| format!("{server}:{port}: {e}"))?.collect();
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        for a in &addrs {
            if let Ok(s) = TcpStream::connect_timeout(a, Duration::from_secs(2)) {
                let _ = s.set_nodelay(true);
                link.stream_timeout(&s)?;
                return Ok(s);
            }
        }
        link.check_deadline("connecting")?;
        if Instant::now() >= end {
            return Err(format!("couldn't connect to {server}:{port}").into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Run `exchange` on a fresh connection to `server:port`, retrying (for up to 30 s) when the
/// peer closes before answering: QEMU's user networking accepts a host connection even when
/// nothing listens in the guest yet, then closes it.
pub fn client_exchange<T>(
    server: &str,
    port: u16,
    link: &Link<'_>,
    mut exchange: impl FnMut(&mut TcpStream) -> Result<T>,
) -> Result<(TcpStream, T)> {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        let mut s = connect(server, port, link)?;
        match exchange(&mut s) {
            Ok(v) => return Ok((s, v)),
            // an I/O error before the peer answered: it was not listening yet
            Err(e) if Instant::now() < end && is_io(&*e) => {}
            Err(e) => return Err(e),
        }
        link.check_deadline("connecting")?;
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn is_io(e: &(dyn std::error::Error + Send + Sync)) -> bool {
    let m = e.to_string();
    m.starts_with("read ") || m.starts_with("write ")
}

/// Print `prog: error` and exit 1.
pub fn exit_on_error(prog: &str, r: Result<()>) {
    if let Err(e) = r {
        eprintln!("{prog}: {e}");
        std::process::exit(1);
    }
}
