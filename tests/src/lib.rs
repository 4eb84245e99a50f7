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

/// `../shared` next to the repository, if present (tests that need it skip otherwise).
pub fn shared_dir() -> Option<PathBuf> {
    let p = repo_root().join("../shared");
    p.is_dir().then_some(p)
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
