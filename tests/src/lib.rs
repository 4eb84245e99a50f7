//! Shared helpers for the integration tests: random RoCEv2 frames and paths to test data.

pub mod interop;
pub mod rxevm;
pub mod vfio_vm;

use rand::{Rng, RngCore};
use std::path::PathBuf;

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Linux Soft-RoCE captures, `tests/vectors/rxe/` (its README says how each was made).
pub fn rxe_vectors_dir() -> PathBuf {
    repo_root().join("tests/vectors/rxe")
}

/// Shape of a random frame.
#[derive(Clone, Copy, Debug)]
pub struct FrameShape {
    /// IPv6 instead of IPv4.
    pub ipv6: bool,
    /// RoCEv1 (Ethertype 0x8915 and a GRH) instead of RoCEv2.
    pub v1: bool,
    /// With an 802.1Q tag.
    pub vlan: bool,
    /// Bytes after the BTH up to the ICRC (extension headers + payload + pad).
    pub body: usize,
    /// Ethernet padding after the ICRC.
    pub eth_pad: usize,
}

/// A random RoCEv2 frame (random addresses, masked fields, BTH and body) with a zero ICRC
/// slot. Hand-assembled here so the tests do not depend on the codec under test.
pub fn random_frame(rng: &mut impl RngCore, s: FrameShape) -> Vec<u8> {
    let mut f = Vec::with_capacity(18 + 40 + 8 + 12 + s.body + 4 + s.eth_pad);
    let mut mac = [0u8; 12];
    rng.fill_bytes(&mut mac);
    f.extend_from_slice(&mac);
    if s.vlan {
        f.extend_from_slice(&[0x81, 0x00]);
        f.extend_from_slice(&rng.random::<u16>().to_be_bytes());
    }
    let l4 = 8 + 12 + s.body + 4;
    if s.v1 {
        f.extend_from_slice(&[0x89, 0x15]);
        let w0: u32 = (6 << 28) | (rng.random::<u32>() & 0x0FFF_FFFF);
        f.extend_from_slice(&w0.to_be_bytes());
        f.extend_from_slice(&((l4 - 8) as u16).to_be_bytes());
        f.extend_from_slice(&[0x1B, rng.random()]);
        let mut a = [0u8; 32];
        rng.fill_bytes(&mut a);
        f.extend_from_slice(&a);
    } else if s.ipv6 {
        f.extend_from_slice(&[0x86, 0xDD]);
        let w0: u32 = (6 << 28) | (rng.random::<u32>() & 0x0FFF_FFFF);
        f.extend_from_slice(&w0.to_be_bytes());
        f.extend_from_slice(&(l4 as u16).to_be_bytes());
        f.extend_from_slice(&[17, rng.random()]);
        let mut a = [0u8; 32];
        rng.fill_bytes(&mut a);
        f.extend_from_slice(&a);
    } else {
        f.extend_from_slice(&[0x08, 0x00]);
        f.extend_from_slice(&[0x45, rng.random()]);
        f.extend_from_slice(&((20 + l4) as u16).to_be_bytes());
        let mut r = [0u8; 16];
        rng.fill_bytes(&mut r);
        r[5] = 17; // protocol at IP byte 9
        f.extend_from_slice(&r);
    }
    if !s.v1 {
        f.extend_from_slice(&(0xC000u16 | rng.random::<u16>()).to_be_bytes());
        f.extend_from_slice(&4791u16.to_be_bytes());
        f.extend_from_slice(&(l4 as u16).to_be_bytes());
        f.extend_from_slice(&rng.random::<u16>().to_be_bytes());
    }
    let mut bth = [0u8; 12];
    rng.fill_bytes(&mut bth);
    f.extend_from_slice(&bth);
    let start = f.len();
    f.resize(start + s.body, 0);
    rng.fill_bytes(&mut f[start..]);
    f.extend_from_slice(&[0; 4]);
    f.extend(std::iter::repeat_n(0u8, s.eth_pad));
    f
}

/// A random shape: IPv4/IPv6 (RoCEv1 now and then), VLAN or not, body length in
/// `0..max_body`, padding rarely.
pub fn random_shape(rng: &mut impl RngCore, max_body: usize) -> FrameShape {
    FrameShape {
        ipv6: rng.random(),
        v1: rng.random_bool(0.15),
        vlan: rng.random_bool(0.25),
        body: rng.random_range(0..max_body),
        eth_pad: if rng.random_bool(0.1) { rng.random_range(1..70) } else { 0 },
    }
}

/// Whether `ROCE_SOAK` asks for the long randomized runs (set and not `0`): more seeds and
/// rounds, and the cases the default run leaves out (README, "Soak and fuzz").
pub fn soak() -> bool {
    std::env::var("ROCE_SOAK").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// Environment variable that lets a machine without the external oracles (python3 + scapy,
/// tshark) skip the tests that need them. CI never sets it: there, a missing oracle fails.
pub const SKIP_ORACLES: &str = "ROCE_SKIP_ORACLES";

/// Whether an external tool is missing and the run allows skipping (prints why).
pub fn oracle_missing(what: &str, ok: bool) -> bool {
    if ok {
        return false;
    }
    if std::env::var_os(SKIP_ORACLES).is_some() {
        eprintln!("SKIPPED: {what} is not available and {SKIP_ORACLES} is set");
        return true;
    }
    panic!("{what} is not available: run scripts/setup.sh (or set {SKIP_ORACLES}=1 to skip)");
}

/// Whether `python3 -c "import scapy.contrib.roce"` works.
pub fn have_scapy() -> bool {
    std::process::Command::new("python3")
        .args(["-c", "import scapy.contrib.roce"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Whether `tshark -v` runs.
pub fn have_tshark() -> bool {
    std::process::Command::new("tshark").arg("-v").output().is_ok_and(|o| o.status.success())
}

/// Generate (once per count/seed, cached under `dir`) the scapy vectors of
/// `tests/oracle/gen_scapy_vectors.py`; returns the pcap and JSON paths.
pub fn scapy_vectors(dir: &std::path::Path, count: usize, seed: u64) -> (PathBuf, PathBuf) {
    let pcap = dir.join(format!("scapy_{count}_{seed}.pcap"));
    let json = dir.join(format!("scapy_{count}_{seed}.json"));
    if pcap.exists() && json.exists() {
        return (pcap, json);
    }
    std::fs::create_dir_all(dir).expect("create vector dir");
    let tmp_p = dir.join(format!("scapy_{count}_{seed}.{}.pcap.tmp", std::process::id()));
    let tmp_j = dir.join(format!("scapy_{count}_{seed}.{}.json.tmp", std::process::id()));
    let st = std::process::Command::new("python3")
        .arg(repo_root().join("tests/oracle/gen_scapy_vectors.py"))
        .args(["--count", &count.to_string(), "--seed", &seed.to_string(), "--quiet", "--self-check"])
        .arg("--out-pcap")
        .arg(&tmp_p)
        .arg("--out-json")
        .arg(&tmp_j)
        .status()
        .expect("run gen_scapy_vectors.py");
    assert!(st.success(), "gen_scapy_vectors.py failed");
    std::fs::rename(&tmp_j, &json).expect("rename json");
    std::fs::rename(&tmp_p, &pcap).expect("rename pcap");
    (pcap, json)
}

/// A well-formed RoCE frame built with the wire codec's builder: opcode `op`, `ip` 0 = IPv4,
/// 1 = IPv6, 2 = RoCEv1 (GRH), optional VLAN tag, `plen` payload bytes (0 for opcodes
/// without payload), random header fields and extension header values, zero ICRC, Ethernet
/// padding to 60 bytes when `eth_pad`.
pub fn roce_frame(
    rng: &mut impl RngCore,
    op: roce_model::wire::Opcode,
    ip: u8,
    vlan: bool,
    plen: usize,
    eth_pad: bool,
) -> Vec<u8> {
    use roce_model::wire::*;
    let plen = if op.has_payload() { plen } else { 0 };
    let mut bth = BthFields::new(op, rng.random::<u32>() & MAX_U24, rng.random::<u32>() & MAX_U24);
    bth.ack_req = rng.random();
    bth.solicited = rng.random();
    bth.fecn = rng.random();
    bth.becn = rng.random();
    bth.pkey = rng.random();
    bth.pad_count = pad_for(plen) as u8;
    let mut x = ExtHeaders::NONE;
    for k in op.ext_headers() {
        match k {
            ExtHeaderKind::Deth => {
                x.deth = Some(DethFields { qkey: rng.random(), src_qp: rng.random::<u32>() & MAX_U24 })
            }
            ExtHeaderKind::Reth => {
                x.reth = Some(RethFields { va: rng.random(), rkey: rng.random(), dma_len: rng.random() })
            }
            ExtHeaderKind::AtomicEth => {
                x.atomic_eth = Some(AtomicEthFields {
                    va: rng.random(),
                    rkey: rng.random(),
                    swap_add: rng.random(),
                    compare: rng.random(),
                })
            }
            ExtHeaderKind::Aeth => {
                x.aeth = Some(AethFields { syndrome: rng.random(), msn: rng.random::<u32>() & MAX_U24 })
            }
            ExtHeaderKind::AtomicAckEth => {
                x.atomic_ack_eth = Some(AtomicAckEthFields { orig_remote_data: rng.random() })
            }
            ExtHeaderKind::ImmDt => x.immdt = Some(ImmDtFields { imm: rng.random() }),
            ExtHeaderKind::Ieth => x.ieth = Some(IethFields { rkey: rng.random() }),
            ExtHeaderKind::CnpPadding => {}
        }
    }
    let mut mac = [0u8; 12];
    rng.fill_bytes(&mut mac);
    let eth = EthernetFields {
        dst: mac[..6].try_into().unwrap_or_default(),
        src: mac[6..].try_into().unwrap_or_default(),
        vlan: vlan.then(|| Vlan { pcp: rng.random_range(0..8), dei: rng.random(), vid: rng.random_range(0..4095) }),
    };
    let v6 = |rng: &mut dyn RngCore| Ipv6Fields {
        src: std::net::Ipv6Addr::from(rng.random::<u128>()),
        dst: std::net::Ipv6Addr::from(rng.random::<u128>()),
        traffic_class: rng.random(),
        flow_label: rng.random::<u32>() & 0xF_FFFF,
        hop_limit: rng.random(),
    };
    let ipf = match ip {
        0 => IpFields::V4(Ipv4Fields {
            src: std::net::Ipv4Addr::from(rng.random::<u32>()),
            dst: std::net::Ipv4Addr::from(rng.random::<u32>()),
            dscp: rng.random_range(0..64),
            ecn: rng.random_range(0..4),
            ttl: rng.random(),
            identification: rng.random(),
            dont_fragment: rng.random(),
        }),
        1 => IpFields::V6(v6(rng)),
        _ => IpFields::Grh(v6(rng)),
    };
    let mut payload = vec![0u8; plen];
    rng.fill_bytes(&mut payload);
    let mut f = FrameBuilder::new(eth, ipf, bth)
        .with_ext(x)
        .with_udp_src_port(0xC000 | rng.random::<u16>())
        .build(&payload)
        .expect("a frame within the builder's ranges");
    if eth_pad && f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// Damage a frame the ways a link or a buggy peer would: truncate it, append bytes, change
/// a header byte, or nudge an IP/UDP length field.
pub fn mutate_frame(rng: &mut impl RngCore, f: &mut Vec<u8>) {
    match rng.random_range(0..6) {
        0 => {
            let n = rng.random_range(0..f.len() + 1);
            f.truncate(n);
        }
        1 => f.extend(std::iter::repeat_n(0u8, rng.random_range(1..20))),
        2 | 3 => {
            if !f.is_empty() {
                let i = rng.random_range(0..f.len().min(110));
                f[i] = if rng.random_bool(0.5) { rng.random() } else { f[i] ^ (1 << rng.random_range(0..8)) };
            }
        }
        _ => {
            let o = if f.len() > 14 && f[12..14] == [0x81, 0] { 18 } else { 14 };
            let at = [o + 2, o + 4, o + 24, o + 44][rng.random_range(0..4)];
            if at + 1 < f.len() {
                let v = u16::from_be_bytes([f[at], f[at + 1]]).wrapping_add(rng.random_range(0..9)).wrapping_sub(4);
                f[at..at + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
    }
}
