//! The simulated port's Ethernet side that is not RoCE: ARP. The engine needs the next
//! hop's MAC in each QP's address vector; a NIC's kernel driver resolves it from the
//! destination GID with the kernel's neighbour table (`ibv_modify_qp` to RTR). Here the
//! port answers ARP requests for its own address and resolves peers with ARP requests of its
//! own, so two processes on this library, or the library and a Linux VM, find each other.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

const ETH_ARP: u16 = 0x0806;

/// An ARP packet (Ethernet, IPv4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Arp {
    /// 1 = request, 2 = reply.
    pub oper: u16,
    /// Sender MAC.
    pub sha: [u8; 6],
    /// Sender IPv4.
    pub spa: Ipv4Addr,
    /// Target MAC.
    pub tha: [u8; 6],
    /// Target IPv4.
    pub tpa: Ipv4Addr,
}

impl Arp {
    /// Parse an Ethernet frame carrying ARP for IPv4 over Ethernet (None otherwise).
    pub fn parse(f: &[u8]) -> Option<Arp> {
        if f.len() < 42 || u16::from_be_bytes([f[12], f[13]]) != ETH_ARP {
            return None;
        }
        let a = &f[14..42];
        if a[0..6] != [0, 1, 8, 0, 6, 4] {
            return None;
        }
        let mac = |o: usize| -> [u8; 6] { [a[o], a[o + 1], a[o + 2], a[o + 3], a[o + 4], a[o + 5]] };
        let ip = |o: usize| Ipv4Addr::new(a[o], a[o + 1], a[o + 2], a[o + 3]);
        Some(Arp { oper: u16::from_be_bytes([a[6], a[7]]), sha: mac(8), spa: ip(14), tha: mac(18), tpa: ip(24) })
    }

    /// The Ethernet frame (padded to the 60-byte minimum), to `dst`.
    pub fn frame(&self, dst: [u8; 6]) -> Vec<u8> {
        let mut f = Vec::with_capacity(60);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&self.sha);
        f.extend_from_slice(&ETH_ARP.to_be_bytes());
        f.extend_from_slice(&[0, 1, 8, 0, 6, 4]);
        f.extend_from_slice(&self.oper.to_be_bytes());
        f.extend_from_slice(&self.sha);
        f.extend_from_slice(&self.spa.octets());
        f.extend_from_slice(&self.tha);
        f.extend_from_slice(&self.tpa.octets());
        f.resize(60, 0);
        f
    }

    /// A request for `target` from `mac`/`ip` (broadcast).
    pub fn request(mac: [u8; 6], ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
        Arp { oper: 1, sha: mac, spa: ip, tha: [0; 6], tpa: target }.frame([0xff; 6])
    }

    /// The reply of `mac`/`ip` to this request, if it asks for `ip`.
    pub fn reply_for(&self, mac: [u8; 6], ip: Ipv4Addr) -> Option<Vec<u8>> {
        (self.oper == 1 && self.tpa == ip)
            .then(|| Arp { oper: 2, sha: mac, spa: ip, tha: self.sha, tpa: self.spa }.frame(self.sha))
    }
}

/// The neighbour table: IPv4 to MAC, filled from the ARP packets the port receives.
#[derive(Debug, Default)]
pub struct Neighbours {
    table: Mutex<HashMap<Ipv4Addr, [u8; 6]>>,
    learned: Condvar,
}

impl Neighbours {
    /// Record `ip` at `mac`.
    pub fn learn(&self, ip: Ipv4Addr, mac: [u8; 6]) {
        if ip.is_unspecified() || mac == [0; 6] || mac[0] & 1 != 0 {
            return;
        }
        self.table.lock().unwrap_or_else(|p| p.into_inner()).insert(ip, mac);
        self.learned.notify_all();
    }

    /// The MAC of `ip`, if known.
    pub fn get(&self, ip: Ipv4Addr) -> Option<[u8; 6]> {
        self.table.lock().unwrap_or_else(|p| p.into_inner()).get(&ip).copied()
    }

    /// Wait until `ip` is known or `until` passes.
    pub fn wait(&self, ip: Ipv4Addr, until: Instant) -> Option<[u8; 6]> {
        let mut t = self.table.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(m) = t.get(&ip) {
                return Some(*m);
            }
            let now = Instant::now();
            if now >= until {
                return None;
            }
            let d = (until - now).min(Duration::from_millis(50));
            t = self.learned.wait_timeout(t, d).unwrap_or_else(|p| p.into_inner()).0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_reply_roundtrip() {
        let (a, b) = ([2, 0, 10, 0, 0, 1], [2, 0, 10, 0, 0, 2]);
        let (ia, ib) = (Ipv4Addr::new(10, 0, 0, 1), Ipv4Addr::new(10, 0, 0, 2));
        let req = Arp::request(a, ia, ib);
        assert_eq!(req.len(), 60);
        let p = Arp::parse(&req).unwrap();
        assert_eq!((p.oper, p.sha, p.spa, p.tpa), (1, a, ia, ib));
        assert!(p.reply_for(b, ia).is_none());
        let rep = Arp::parse(&p.reply_for(b, ib).unwrap()).unwrap();
        assert_eq!((rep.oper, rep.sha, rep.spa, rep.tha, rep.tpa), (2, b, ib, a, ia));
        assert!(Arp::parse(&req[..40]).is_none());
        let n = Neighbours::default();
        n.learn(rep.spa, rep.sha);
        n.learn(Ipv4Addr::new(10, 0, 0, 9), [0xff; 6]);
        assert_eq!(n.get(ib), Some(b));
        assert_eq!(n.wait(Ipv4Addr::new(10, 0, 0, 9), Instant::now() + Duration::from_millis(10)), None);
    }
}
