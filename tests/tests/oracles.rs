//! The ICRC model and HDL against oracles nobody here wrote: scapy's RoCE layer (thousands of
//! random packets, every RC opcode, IPv4/IPv6, VLAN, random masked fields, corrupted copies),
//! Linux rxe captures, and tshark's InfiniBand dissector on what the HDL writes.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use roce_model::blocks::icrc::IcrcVerdict;
use roce_model::icrc;
use roce_sim::cosim::icrc::icrc_lockstep;
use roce_sim::pcapio;
use roce_sim::stream::Traffic;
use roce_tests::{have_scapy, have_tshark, oracle_missing, rxe_vectors_dir, scapy_vectors};
use serde_json::Value;

struct Vectors {
    pcap: PathBuf,
    frames: Vec<Vec<u8>>,
    json: Vec<Value>,
}

fn vectors() -> Option<&'static Vectors> {
    static V: OnceLock<Option<Vectors>> = OnceLock::new();
    V.get_or_init(|| {
        if oracle_missing("python3 with scapy", have_scapy()) {
            return None;
        }
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oracle");
        let (pcap, json) = scapy_vectors(&dir, 3000, 1);
        let frames = pcapio::read(&pcap).expect("read scapy pcap").into_iter().map(|c| c.data).collect();
        let json: Vec<Value> =
            serde_json::from_str(&std::fs::read_to_string(&json).expect("read json")).expect("parse json");
        Some(Vectors { pcap, frames, json })
    })
    .as_ref()
}

fn hex32(v: &Value) -> Option<u32> {
    u32::from_str_radix(v.as_str()?.trim_start_matches("0x"), 16).ok()
}

#[test]
fn scapy_vectors_software_icrc() {
    let Some(v) = vectors() else { return };
    assert_eq!(v.frames.len(), v.json.len());
    let (mut valid, mut corrupt, mut masked) = (0, 0, 0);
    for (f, j) in v.frames.iter().zip(&v.json) {
        let roce = j["roce"].as_bool().unwrap_or(false);
        let loc = icrc::locate(f);
        if j["kind"] == "rocev1" {
            // RoCEv1 is RoCE to the engine; scapy cannot compute its ICRC (no oracle here)
            assert!(loc.is_ok(), "frame {}: a RoCEv1 frame ({:?})", j["index"], loc.err());
            continue;
        }
        assert_eq!(loc.is_ok(), roce, "frame {}: roce classification ({:?})", j["index"], loc.err());
        if !roce {
            continue;
        }
        let ok = j["icrc_ok"].as_bool().expect("icrc_ok");
        assert_eq!(icrc::check(f), Ok(ok), "frame {} ({})", j["index"], j["corruption"]);
        assert_eq!(icrc::check_residue(f), Ok(ok), "frame {} residue", j["index"]);
        if ok {
            // the value itself, not just the verdict
            assert_eq!(icrc::icrc(f).ok(), hex32(&j["icrc"]), "frame {}", j["index"]);
            if j["corruption"].as_str().is_some_and(|c| c.starts_with("masked")) {
                masked += 1;
            } else {
                valid += 1;
            }
        } else {
            corrupt += 1;
        }
    }
    assert!(valid >= 3000 && corrupt > 500 && masked > 300, "{valid} {corrupt} {masked}");
}

fn hdl_check_width(w: usize, t: Traffic) {
    let Some(v) = vectors() else { return };
    let frames: Vec<(Vec<u8>, bool)> = v.frames.iter().map(|f| (f.clone(), false)).collect();
    let rep = icrc_lockstep(w, false, &frames, &t, None).expect("cosim");
    assert!(rep.divergences.is_empty(), "first divergence: {}", rep.divergences[0]);
    for ((r, j), f) in rep.frames.iter().zip(&v.json).zip(&v.frames) {
        if j["kind"] == "rocev1" {
            // no independent ICRC for RoCEv1: the model's verdict (checked against the HDL above)
            assert_eq!(r.hdl, IcrcVerdict { roce: true, error: icrc::check(f) != Ok(true) });
            continue;
        }
        let roce = j["roce"].as_bool().unwrap_or(false);
        let ok = j["icrc_ok"].as_bool().unwrap_or(true);
        assert_eq!(r.hdl, IcrcVerdict { roce, error: roce && !ok }, "frame {} ({})", j["index"], j["corruption"]);
    }
    // Insert mode: every uncorrupted frame comes out with exactly scapy's ICRC (the input
    // already carries it, so first zero the slot: the block must ignore what is there).
    let zeroed: Vec<(Vec<u8>, bool)> = v
        .frames
        .iter()
        .map(|f| {
            let mut f = f.clone();
            if let Ok(l) = icrc::locate(&f) {
                f[l.icrc_offset()..l.ip_end].fill(0xA5);
            }
            (f, false)
        })
        .collect();
    let ins = icrc_lockstep(w, true, &zeroed, &t, None).expect("cosim insert");
    assert!(ins.divergences.is_empty(), "first divergence: {}", ins.divergences[0]);
    for ((r, j), orig) in ins.frames.iter().zip(&v.json).zip(&v.frames) {
        if j["roce"].as_bool() == Some(true) && j["icrc_ok"].as_bool() == Some(true) {
            assert_eq!(&r.hdl_frame, orig, "frame {}: HDL-inserted ICRC differs from scapy's", j["index"]);
        }
    }
}

#[test]
fn scapy_vectors_hdl_64() {
    hdl_check_width(64, Traffic { valid_p: 0.9, ready_p: 0.8, seed: 3 });
}

#[test]
fn scapy_vectors_hdl_256() {
    hdl_check_width(256, Traffic { valid_p: 0.8, ready_p: 0.9, seed: 4 });
}

#[test]
fn scapy_vectors_hdl_512() {
    hdl_check_width(512, Traffic::FULL);
}

/// What the HDL writes in insert mode must decode in tshark with the right fields, and scapy
/// must accept every ICRC in it (including the corrupted inputs, now re-sealed).
#[test]
fn hdl_insert_output_decodes_in_tshark_and_scapy() {
    let Some(v) = vectors() else { return };
    if oracle_missing("tshark", have_tshark()) {
        return;
    }
    let caps = pcapio::read(&v.pcap).expect("read");
    let frames: Vec<(Vec<u8>, bool)> = caps.iter().map(|c| (c.data.clone(), false)).collect();
    let ins = icrc_lockstep(512, true, &frames, &Traffic::FULL, None).expect("cosim insert");
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("oracle");
    let out = dir.join("hdl_sealed.pcap");
    let caps_out: Vec<_> = caps
        .iter()
        .zip(&ins.frames)
        .map(|(c, f)| pcapio::Captured { data: f.hdl_frame.clone(), ..c.clone() })
        .collect();
    pcapio::write(&out, &caps_out).expect("write");

    // tshark on the frames that were not corrupted (their JSON fields are the truth).
    let subset: Vec<&Value> = v.json.iter().filter(|j| j["corruption"] == "none").collect();
    let sub_json = dir.join("hdl_sealed_subset.json");
    std::fs::write(&sub_json, serde_json::to_string(&subset).expect("json")).expect("write json");
    let o = std::process::Command::new("python3")
        .arg(roce_tests::repo_root().join("tests/oracle/tshark_check.py"))
        .arg("--pcap")
        .arg(&out)
        .arg("--json")
        .arg(&sub_json)
        .output()
        .expect("run tshark_check.py");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "tshark_check failed:\n{text}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(text.contains(" 0 mismatches"), "{text}");

    // scapy re-verifies every ICRC the HDL wrote.
    let o = std::process::Command::new("python3")
        .arg(roce_tests::repo_root().join("tests/oracle/gen_scapy_vectors.py"))
        .arg("--verify-pcap")
        .arg(&out)
        .output()
        .expect("run --verify-pcap");
    let text = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{text}");
    assert!(text.contains(", 0 with a bad/disagreeing ICRC"), "{text}");
}

/// Real Linux rxe traffic: every RoCEv2 frame passes the HDL check at every width, and the
/// insert path reproduces every ICRC rxe wrote, byte for byte.
#[test]
fn rxe_captures() {
    let dir = rxe_vectors_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("vectors dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "pcap"))
        .collect();
    files.sort();
    assert!(files.len() >= 3);
    let mut roce = 0;
    for p in files {
        let caps = pcapio::read(&p).expect("read");
        let frames: Vec<(Vec<u8>, bool)> = caps.iter().map(|c| (c.data.clone(), false)).collect();
        for w in [64, 256, 512] {
            let t = Traffic { valid_p: 0.8, ready_p: 0.7, seed: w as u64 };
            let rep = icrc_lockstep(w, false, &frames, &t, None).expect("cosim");
            assert!(rep.divergences.is_empty(), "{}: {}", p.display(), rep.divergences[0]);
            for (i, r) in rep.frames.iter().enumerate() {
                assert!(!r.hdl.error, "{} frame {i}: flagged", p.display());
                if w == 512 && r.hdl.roce {
                    roce += 1;
                }
            }
            let ins = icrc_lockstep(w, true, &frames, &t, None).expect("cosim");
            for (i, (r, c)) in ins.frames.iter().zip(&caps).enumerate() {
                assert_eq!(r.hdl_frame, c.data, "{} frame {i}: insert changed the frame", p.display());
            }
        }
    }
    assert!(roce >= 300, "only {roce} RoCE frames");
}
