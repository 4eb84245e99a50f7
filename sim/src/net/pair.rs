//! Two connected engines: node A and node B, each an engine model with host memory,
//! programmed by `roce-driver` (one PD, one buffer registered for every access, one CQ,
//! [`PairConfig::qps`] RC QPs, QP `k` of A connected to QP `k` of B), joined by two
//! simulated links. The transfer workload and the protocol tests build on it.

use std::cell::RefCell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::rc::Rc;

use roce_driver::device::Features;
use roce_driver::{
    masks, AccessFlags, CompletionQueue, Device, DmaBuf, Encap, MemoryRegion, PathMtu, QpAttr, QpState, QueuePair,
};
use roce_model::engine::{EngineConfig, HostMemBudget, Profile};

use crate::net::fabric::{Link, LinkConfig};
use crate::net::hdl::HdlConfig;
use crate::net::node::{ModelBackend, NodeRef, SimNode};
use crate::SimError;

/// How the pair is set up.
#[derive(Clone, Debug)]
pub struct PairConfig {
    /// Path MTU in bytes.
    pub mtu: u32,
    /// Send and receive queue depth (of each QP).
    pub depth: u32,
    /// RC QPs on each node (1 ..= the engine's QPs less the two reserved QPNs 0 and 1).
    pub qps: u32,
    /// Bytes of the registered buffer on each side.
    pub buf_len: usize,
    /// RoCEv2 over IPv6.
    pub ipv6: bool,
    /// Local ACK timeout code.
    pub timeout: u8,
    /// RNR retries (7 = infinite).
    pub rnr_retry: u8,
    /// Transport retries.
    pub retry_cnt: u8,
    /// Link impairments.
    pub link: LinkConfig,
    /// Seed of the links and the initial PSNs.
    pub seed: u64,
    /// Engine features.
    pub features: Features,
    /// 802.1Q tag (VID, PCP) of both QPs' frames (None = untagged).
    pub vlan: Option<(u16, u8)>,
    /// RoCEv1 (Ethertype 0x8915 + GRH) instead of RoCEv2 (the GIDs are the IPv6 addresses,
    /// or the IPv4-mapped ones).
    pub rocev1: bool,
    /// Which nodes run the Verilated engine instead of the model: [A, B].
    pub hdl: [bool; 2],
    /// `--engine cosim`: the HDL nodes also run the model beside the Verilated engine and
    /// compare what both emit ([`crate::net::shadow`]); the harness configuration (FST window).
    pub cosim: Option<HdlConfig>,
    /// Random backpressure on every MAC and DMA port of the HDL nodes (probability per
    /// cycle and port; see [`HdlConfig::stall`]).
    pub stall: f64,
    /// Whose choices the nodes that run the model alone make ([`Profile::Rxe`]: a stand-in
    /// for Linux Soft-RoCE); the Verilated engine and the model beside it are the engine's.
    pub peer: Profile,
    /// Host memory of both nodes (the model's and the Verilated engine's harness alike).
    pub host_mem: HostMemBudget,
}

impl Default for PairConfig {
    fn default() -> Self {
        PairConfig {
            mtu: 4096,
            depth: 64,
            qps: 1,
            buf_len: 1 << 20,
            ipv6: false,
            timeout: 8,
            rnr_retry: 7,
            retry_cnt: 7,
            link: LinkConfig::default(),
            seed: 1,
            features: Features { ecn: true, cnp: true, dcqcn: true, pfc: true },
            vlan: None,
            rocev1: false,
            hdl: [false, false],
            cosim: None,
            stall: 0.0,
            peer: Profile::Engine,
            host_mem: HostMemBudget::default(),
        }
    }
}

/// One side of the pair.
#[derive(Debug)]
pub struct Endpoint {
    /// The node.
    pub node: NodeRef,
    /// Its driver.
    pub dev: Device<ModelBackend>,
    /// The CQ (send and receive completions of every QP).
    pub cq: CompletionQueue,
    /// The first QP (`qps[0]`).
    pub qp: QueuePair,
    /// Every QP, [`PairConfig::qps`] of them.
    pub qps: Vec<QueuePair>,
    /// The registered buffer.
    pub buf: DmaBuf,
    /// Its memory region.
    pub mr: MemoryRegion,
    /// Station MAC.
    pub mac: [u8; 6],
    /// Station IP (IPv4 or IPv6 GID).
    pub ip: IpAddr,
    /// First PSN this side sends on its first QP (QP `k` starts at [`qp_psn`]`(psn, k)`).
    pub psn: u32,
}

/// The first PSN a side sends on its QP `k`, from that of its first QP.
pub fn qp_psn(psn: u32, k: u32) -> u32 {
    psn.wrapping_add(k.wrapping_mul(0x9E_3779)) & 0xFF_FFFF
}

/// The CQ entries an endpoint asks for: four per send queue entry of a single QP; with more
/// QPs, room for every QP's queue (four per entry while that fits the driver's largest CQ,
/// 2^15 entries).
pub fn cq_entries(depth: u32, qps: u32) -> u32 {
    let want = u64::from(depth) * u64::from(qps) * 4 + 16;
    want.min(1 << 15) as u32
}

/// A driver error as a simulator error.
pub fn drv(e: roce_driver::DriverError) -> SimError {
    SimError::Config(format!("driver: {e}"))
}

fn path_mtu(m: u32) -> Result<PathMtu, SimError> {
    Ok(match m {
        256 => PathMtu::Mtu256,
        512 => PathMtu::Mtu512,
        1024 => PathMtu::Mtu1024,
        2048 => PathMtu::Mtu2048,
        4096 => PathMtu::Mtu4096,
        m => return Err(SimError::Config(format!("MTU {m} is not one of 256, 512, 1024, 2048, 4096"))),
    })
}

/// Every access right (what the pair's buffers and QPs allow).
pub const ALL_ACCESS: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

/// A node with its driver, a PD, a registered buffer, a CQ and [`PairConfig::qps`] QPs (in
/// RESET), all completing into that CQ. More QPs than the engine has for RC, or more work
/// requests than one CQ holds, is [`SimError::Capacity`].
pub fn endpoint(cfg: &PairConfig, mac: [u8; 6], ip4: Ipv4Addr, gid: Ipv6Addr, psn: u32) -> Result<Endpoint, SimError> {
    endpoint_on(cfg, false, mac, ip4, gid, psn)
}

/// [`endpoint`] on a node running the model or (`hdl`) the Verilated engine.
pub fn endpoint_on(
    cfg: &PairConfig,
    hdl: bool,
    mac: [u8; 6],
    ip4: Ipv4Addr,
    gid: Ipv6Addr,
    psn: u32,
) -> Result<Endpoint, SimError> {
    let base = match (hdl, cfg.peer) {
        (false, Profile::Rxe) => EngineConfig::rxe(),
        _ => EngineConfig::default(),
    };
    let ecfg = EngineConfig { mac, ipv4: ip4, gid, host_mem: cfg.host_mem, ..base };
    let h = HdlConfig {
        stall: cfg.stall,
        stall_seed: cfg.seed ^ u64::from(mac[5]) << 32,
        ..cfg.cosim.clone().unwrap_or_default()
    };
    let node = match (hdl, cfg.cosim.is_some()) {
        (true, true) => SimNode::new_cosim(ecfg, h)?,
        (true, false) => SimNode::new_hdl_with(ecfg, h)?,
        (false, _) => SimNode::new(ecfg),
    };
    let node = Rc::new(RefCell::new(node));
    let mut dev = Device::open(ModelBackend(node.clone())).map_err(drv)?;
    let engine = if hdl { "the Verilated engine" } else { "the engine model" };
    // QPNs 0 and 1 are reserved (QP0/QP1 of InfiniBand), never RC
    let max_rc = dev.max_qps().saturating_sub(2);
    if cfg.qps == 0 || cfg.qps > max_rc {
        return Err(SimError::Capacity {
            engine,
            what: "RC QPs",
            asked: u64::from(cfg.qps),
            max: u64::from(max_rc),
            why: format!(
                "CAPS.LOG_MAX_QP {} gives {} QPs, QPNs 0 and 1 reserved",
                dev.max_qps().trailing_zeros(),
                dev.max_qps()
            ),
        });
    }
    let cqe = cq_entries(cfg.depth, cfg.qps);
    if u64::from(cfg.depth) * u64::from(cfg.qps) > u64::from(cqe) {
        return Err(SimError::Capacity {
            engine,
            what: "outstanding work requests (QPs x depth) on one CQ",
            asked: u64::from(cfg.depth) * u64::from(cfg.qps),
            max: u64::from(cqe),
            why: "a CQ has at most 2^15 entries".into(),
        });
    }
    dev.configure_port(mac, ip4, gid);
    dev.enable(cfg.features);
    let pd = dev.alloc_pd();
    let buf = dev.alloc_buf(cfg.buf_len.max(8)).map_err(drv)?;
    let mr = dev.reg_mr(pd, &buf, 0, buf.len, ALL_ACCESS).map_err(drv)?;
    let cq = dev.create_cq(cqe).map_err(drv)?;
    let qps = (0..cfg.qps)
        .map(|_| dev.create_qp(pd, cq, cq, cfg.depth, cfg.depth))
        .collect::<Result<Vec<_>, _>>()
        .map_err(drv)?;
    let qp = qps[0];
    let ip = if cfg.ipv6 { IpAddr::V6(gid) } else { IpAddr::V4(ip4) };
    Ok(Endpoint { node, dev, cq, qp, qps, buf, mr, mac, ip, psn })
}

/// Bring `me`'s first QP to RTS towards a peer (the usual INIT / RTR / RTS sequence).
pub fn connect(
    cfg: &PairConfig,
    me: &mut Endpoint,
    peer_qpn: u32,
    peer_mac: [u8; 6],
    peer_ip: IpAddr,
    peer_psn: u32,
) -> Result<(), SimError> {
    let (qp, psn) = (me.qp, me.psn);
    connect_qp(cfg, me, qp, psn, peer_qpn, peer_mac, peer_ip, peer_psn)
}

/// Bring `qp` of `me` to RTS towards a peer QP, sending from PSN `psn`.
#[allow(clippy::too_many_arguments)]
pub fn connect_qp(
    cfg: &PairConfig,
    me: &mut Endpoint,
    qp: QueuePair,
    psn: u32,
    peer_qpn: u32,
    peer_mac: [u8; 6],
    peer_ip: IpAddr,
    peer_psn: u32,
) -> Result<(), SimError> {
    let mut a = QpAttr {
        state: QpState::Init,
        access: ALL_ACCESS,
        path_mtu: path_mtu(cfg.mtu)?,
        dest_qpn: peer_qpn,
        rq_psn: peer_psn,
        sq_psn: psn,
        encap: if cfg.rocev1 {
            Encap::RoceV1
        } else if peer_ip.is_ipv6() {
            Encap::RoceV2Ipv6
        } else {
            Encap::RoceV2Ipv4
        },
        dest_mac: peer_mac,
        dest_ip: peer_ip,
        vlan: cfg.vlan,
        timeout: cfg.timeout,
        retry_cnt: cfg.retry_cnt,
        rnr_retry: cfg.rnr_retry,
        min_rnr_timer: 1,
        ..QpAttr::default()
    };
    me.dev.modify_qp(qp, &a, masks::INIT).map_err(drv)?;
    a.state = QpState::Rtr;
    me.dev.modify_qp(qp, &a, masks::RTR).map_err(drv)?;
    a.state = QpState::Rts;
    me.dev.modify_qp(qp, &a, masks::RTS).map_err(drv)?;
    Ok(())
}

/// Two connected endpoints and the links between them.
#[derive(Debug)]
pub struct Pair {
    /// Node A.
    pub a: Endpoint,
    /// Node B.
    pub b: Endpoint,
    /// Link A -> B.
    pub ab: Link,
    /// Link B -> A.
    pub ba: Link,
    /// Current cycle.
    pub now: u64,
    /// Record every frame as (cycle, direction 0 = A->B, frame).
    pub capture: Option<Vec<(u64, u8, Vec<u8>)>>,
}

impl Pair {
    /// Create the pair and connect QP `k` of A to QP `k` of B, for every `k`.
    pub fn new(cfg: &PairConfig) -> Result<Self, SimError> {
        let psn_a = (cfg.seed as u32).wrapping_mul(2_654_435_761) & 0xFF_FFFF;
        let psn_b = (cfg.seed as u32 ^ 0x5A_5A5A).wrapping_mul(40_503) & 0xFF_FFFF;
        let gid_a = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xa);
        let gid_b = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xb);
        let mut a = endpoint_on(cfg, cfg.hdl[0], [0x02, 0, 0, 0, 0, 0xA], Ipv4Addr::new(192, 0, 2, 1), gid_a, psn_a)?;
        let mut b = endpoint_on(cfg, cfg.hdl[1], [0x02, 0, 0, 0, 0, 0xB], Ipv4Addr::new(192, 0, 2, 2), gid_b, psn_b)?;
        let (ma, mb, ia, ib) = (a.mac, b.mac, a.ip, b.ip);
        for k in 0..cfg.qps as usize {
            let (qa, qb) = (a.qps[k], b.qps[k]);
            let (pa, pb) = (qp_psn(psn_a, k as u32), qp_psn(psn_b, k as u32));
            connect_qp(cfg, &mut a, qa, pa, qb.qpn(), mb, ib, pb)?;
            connect_qp(cfg, &mut b, qb, pb, qa.qpn(), ma, ia, pa)?;
        }
        let ab = Link::new(cfg.link, cfg.seed.wrapping_mul(31).wrapping_add(1));
        let ba = Link::new(cfg.link, cfg.seed.wrapping_mul(31).wrapping_add(2));
        // the pair's time starts where the nodes' clocks are after setting up (a Verilated
        // engine runs its reset sweeps and every register access)
        let now = a.node.borrow().clock().max(b.node.borrow().clock());
        Ok(Pair { a, b, ab, ba, now, capture: None })
    }

    /// Move frames at the current cycle: deliver what arrived, send what the engines emit.
    pub fn exchange(&mut self) {
        let now = self.now;
        for (node, link) in [(&self.a.node, &mut self.ba), (&self.b.node, &mut self.ab)] {
            let mut n = node.borrow_mut();
            n.advance(now);
            while let Some(f) = link.recv(now) {
                n.rx(&f);
            }
        }
        for (dir, (node, link)) in [(&self.a.node, &mut self.ab), (&self.b.node, &mut self.ba)].into_iter().enumerate()
        {
            let mut n = node.borrow_mut();
            n.advance(now);
            while let Some(f) = n.tx() {
                if let Some(c) = &mut self.capture {
                    c.push((now, dir as u8, f.clone()));
                }
                link.send(now, f);
            }
        }
    }

    /// The next cycle at which anything is scheduled.
    pub fn next_event(&self) -> Option<u64> {
        [
            self.a.node.borrow().next_event(),
            self.b.node.borrow().next_event(),
            self.ab.next_arrival(),
            self.ba.next_arrival(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Exchange frames, then advance to the next event (at least one cycle). Returns false
    /// when nothing is scheduled any more.
    pub fn step(&mut self) -> bool {
        self.exchange();
        match self.next_event() {
            Some(t) => {
                self.now = t.max(self.now + 1);
                for n in [&self.a.node, &self.b.node] {
                    n.borrow_mut().advance(self.now);
                }
                true
            }
            None => false,
        }
    }

    /// Step until nothing is scheduled or `max` cycles have passed.
    pub fn settle(&mut self, max: u64) {
        let end = self.now + max;
        while self.now < end && self.step() {}
        self.exchange();
    }
}
