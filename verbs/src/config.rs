//! Which engine the library drives: `ROCE_VERBS_DEVICE`.
//!
//! - `sim:LOCAL.sock:PEER.sock:IPV4` — the engine model in this process; its Ethernet port is
//!   the unix datagram socket bound at `LOCAL.sock` (one Ethernet frame, without FCS, per
//!   datagram, the framing of QEMU's `-netdev dgram` and the Soft-RoCE VM harness), sending
//!   to `PEER.sock` (another process's device, or a VM's NIC). `IPV4` is the port's address;
//!   its GID (index 0) is the IPv4-mapped one, its MAC `02:00:` and the four address bytes.
//! - `sim-hdl:LOCAL.sock:PEER.sock:IPV4` — the same with the Verilated engine.
//! - `vfio:DDDD:BB:DD.F` — a board bound to vfio-pci; `ROCE_VERBS_IPV4` gives the port's
//!   address (and `ROCE_VERBS_PEER_MAC`, `aa:bb:cc:dd:ee:ff`, the next hop's MAC: a board
//!   has no ARP of its own).
//!
//! `ROCE_VERBS_MTU` (256..4096, default 4096) sets the port's active MTU.

use std::net::Ipv4Addr;
use std::path::PathBuf;

/// The variable naming the device.
pub const DEVICE_ENV: &str = "ROCE_VERBS_DEVICE";
/// The port's active MTU.
pub const MTU_ENV: &str = "ROCE_VERBS_MTU";
/// A VFIO board's IPv4 address.
pub const VFIO_IPV4_ENV: &str = "ROCE_VERBS_IPV4";
/// A VFIO board's next-hop MAC.
pub const VFIO_PEER_MAC_ENV: &str = "ROCE_VERBS_PEER_MAC";

/// Which engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The Rust engine model.
    Model,
    /// The Verilated HDL engine.
    Hdl,
}

/// A device the library can open.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSpec {
    /// A simulated engine in this process on a unix datagram socket.
    Sim {
        /// Model or HDL.
        engine: Engine,
        /// Socket this device binds.
        local: PathBuf,
        /// Socket frames are sent to.
        peer: PathBuf,
        /// Port address.
        ip: Ipv4Addr,
    },
    /// A board through VFIO.
    Vfio {
        /// PCI address.
        bdf: String,
        /// Port address.
        ip: Ipv4Addr,
        /// Next-hop MAC.
        peer_mac: [u8; 6],
    },
}

/// A configuration error.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// The device string has no known prefix or the wrong number of fields.
    #[error(
        "{DEVICE_ENV}={0:?}: expected sim:LOCAL.sock:PEER.sock:IPV4, sim-hdl:LOCAL.sock:PEER.sock:IPV4 or vfio:BDF"
    )]
    Format(String),
    /// An IPv4 address did not parse.
    #[error("{what}: {value:?} is not an IPv4 address")]
    Ipv4 {
        /// Where.
        what: &'static str,
        /// The text.
        value: String,
    },
    /// A MAC address did not parse.
    #[error("{VFIO_PEER_MAC_ENV}: {0:?} is not a MAC address (aa:bb:cc:dd:ee:ff)")]
    Mac(String),
    /// The MTU is not one of the path MTUs.
    #[error("{MTU_ENV}: {0:?} is not one of 256, 512, 1024, 2048, 4096")]
    Mtu(String),
    /// A required variable is missing.
    #[error("{0} is not set")]
    Missing(&'static str),
}

fn ipv4(what: &'static str, s: &str) -> Result<Ipv4Addr, ConfigError> {
    s.parse().map_err(|_| ConfigError::Ipv4 { what, value: s.into() })
}

/// Parse a MAC address `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], ConfigError> {
    let parts: Vec<&str> = s.split(':').collect();
    let mut m = [0u8; 6];
    if parts.len() != 6 {
        return Err(ConfigError::Mac(s.into()));
    }
    for (d, p) in m.iter_mut().zip(parts) {
        *d = u8::from_str_radix(p, 16).map_err(|_| ConfigError::Mac(s.into()))?;
    }
    Ok(m)
}

/// Parse a device string; `env` looks up the variables a VFIO device also needs.
pub fn parse(s: &str, env: impl Fn(&str) -> Option<String>) -> Result<DeviceSpec, ConfigError> {
    if let Some(bdf) = s.strip_prefix("vfio:") {
        if bdf.is_empty() {
            return Err(ConfigError::Format(s.into()));
        }
        let ip = env(VFIO_IPV4_ENV).ok_or(ConfigError::Missing(VFIO_IPV4_ENV))?;
        let mac = env(VFIO_PEER_MAC_ENV).ok_or(ConfigError::Missing(VFIO_PEER_MAC_ENV))?;
        return Ok(DeviceSpec::Vfio { bdf: bdf.into(), ip: ipv4(VFIO_IPV4_ENV, &ip)?, peer_mac: parse_mac(&mac)? });
    }
    let parts: Vec<&str> = s.split(':').collect();
    let engine = match parts.first() {
        Some(&"sim") => Engine::Model,
        Some(&"sim-hdl") => Engine::Hdl,
        _ => return Err(ConfigError::Format(s.into())),
    };
    match parts[..] {
        [_, local, peer, ip] if !local.is_empty() && !peer.is_empty() => {
            Ok(DeviceSpec::Sim { engine, local: local.into(), peer: peer.into(), ip: ipv4(DEVICE_ENV, ip)? })
        }
        _ => Err(ConfigError::Format(s.into())),
    }
}

/// The device `ROCE_VERBS_DEVICE` names (None if it is not set).
pub fn from_env() -> Result<Option<DeviceSpec>, ConfigError> {
    match std::env::var(DEVICE_ENV) {
        Ok(s) if !s.is_empty() => parse(&s, |k| std::env::var(k).ok()).map(Some),
        _ => Ok(None),
    }
}

/// The port's active MTU in bytes (`ROCE_VERBS_MTU`, default 4096).
pub fn mtu_from_env() -> Result<u32, ConfigError> {
    match std::env::var(MTU_ENV) {
        Ok(s) if !s.is_empty() => match s.trim().parse::<u32>() {
            Ok(m @ (256 | 512 | 1024 | 2048 | 4096)) => Ok(m),
            _ => Err(ConfigError::Mtu(s)),
        },
        _ => Ok(4096),
    }
}

/// The station MAC of a simulated port: locally administered, `02:00:` and the address.
pub fn mac_of(ip: Ipv4Addr) -> [u8; 6] {
    let o = ip.octets();
    [0x02, 0x00, o[0], o[1], o[2], o[3]]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn device_strings() {
        assert_eq!(
            parse("sim:/tmp/a.sock:/tmp/b.sock:192.0.2.1", none),
            Ok(DeviceSpec::Sim {
                engine: Engine::Model,
                local: "/tmp/a.sock".into(),
                peer: "/tmp/b.sock".into(),
                ip: Ipv4Addr::new(192, 0, 2, 1)
            })
        );
        assert!(matches!(parse("sim-hdl:a:b:10.0.0.1", none), Ok(DeviceSpec::Sim { engine: Engine::Hdl, .. })));
        assert!(matches!(parse("sim:a:b", none), Err(ConfigError::Format(_))));
        assert!(matches!(parse("sim:a:b:c:10.0.0.1", none), Err(ConfigError::Format(_))));
        assert!(matches!(parse("sim:a:b:300.0.0.1", none), Err(ConfigError::Ipv4 { .. })));
        assert!(matches!(parse("mlx5:0", none), Err(ConfigError::Format(_))));
        assert_eq!(parse("vfio:0000:01:00.0", none), Err(ConfigError::Missing(VFIO_IPV4_ENV)));
        let env = |k: &str| match k {
            VFIO_IPV4_ENV => Some("10.1.1.1".to_string()),
            VFIO_PEER_MAC_ENV => Some("52:54:00:00:00:01".to_string()),
            _ => None,
        };
        assert_eq!(
            parse("vfio:0000:01:00.0", env),
            Ok(DeviceSpec::Vfio {
                bdf: "0000:01:00.0".into(),
                ip: Ipv4Addr::new(10, 1, 1, 1),
                peer_mac: [0x52, 0x54, 0, 0, 0, 1]
            })
        );
        assert_eq!(parse_mac("52:54:00:00:00"), Err(ConfigError::Mac("52:54:00:00:00".into())));
        assert_eq!(mac_of(Ipv4Addr::new(192, 0, 2, 7)), [2, 0, 192, 0, 2, 7]);
    }
}
