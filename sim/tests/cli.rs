//! The `roce-sim` command line: output format, exit codes, and bad input.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use roce_sim::pcapio;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_roce-sim"))
}

/// A capture of tests/vectors/rxe (its README says how each was made).
fn rxe(name: &str) -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors/rxe").join(name);
    assert!(p.is_file(), "{} is missing", p.display());
    p
}

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&d).expect("tmp dir");
    d.join(name)
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

#[test]
fn icrc_on_rxe_capture() {
    let p = rxe("rxevm_ib_read_bw_2500B_n5.pcap");
    let o = bin().args(["icrc", "--pcap"]).arg(&p).output().expect("run");
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}\n{err}");
    let last = out.lines().last().unwrap_or_default();
    assert_eq!(last, "20 packets, 20 ok, 0 bad, 0 disagreements (43 non-RoCE frames skipped)");
    // one line per RoCE packet: index, verdict, opcode, dest QP, PSN
    let lines: Vec<&str> = out.lines().filter(|l| l.contains(" opcode ")).collect();
    assert_eq!(lines.len(), 20);
    assert!(lines.iter().any(|l| l.contains("opcode 0x0c RC_RDMA_READ_REQUEST")), "{out}");
    assert!(lines.iter().all(|l| l.split_whitespace().nth(1) == Some("ok")));
}

#[test]
fn icrc_flags_corruption_and_fix_reseals() {
    let p = rxe("rxevm_ib_write_bw_2500B_n5.pcap");
    let mut caps = pcapio::read(&p).expect("read");
    let mut corrupted = Vec::new();
    for (i, c) in caps.iter_mut().enumerate() {
        if roce_model::icrc::locate(&c.data).is_ok() && corrupted.len() < 3 {
            let n = c.data.len();
            c.data[n - 10] ^= 0x40; // payload byte
            corrupted.push(i);
        }
    }
    let bad = tmp("corrupted.pcap");
    pcapio::write(&bad, &caps).expect("write");
    let fixed = tmp("fixed.pcap");
    for w in ["64", "256", "512"] {
        let o = bin()
            .args(["icrc", "--data-width", w, "--valid-p", "0.7", "--ready-p", "0.8", "--pcap"])
            .arg(&bad)
            .arg("--fix")
            .arg(&fixed)
            .output()
            .expect("run");
        let (out, err) = text(&o);
        assert!(o.status.success(), "a bad ICRC is a finding, not a failure: {out}{err}");
        for i in &corrupted {
            let line = out.lines().find(|l| l.split_whitespace().next() == Some(&i.to_string()));
            assert_eq!(line.and_then(|l| l.split_whitespace().nth(1)), Some("bad"), "{out}");
        }
        assert!(out.ends_with("20 packets, 17 ok, 3 bad, 0 disagreements (43 non-RoCE frames skipped)\n"), "{out}");
        // the fixed capture checks clean and differs only in the re-sealed ICRCs
        let o = bin().args(["icrc", "--pcap"]).arg(&fixed).output().expect("run");
        let (out, _) = text(&o);
        assert!(out.ends_with("20 packets, 20 ok, 0 bad, 0 disagreements (43 non-RoCE frames skipped)\n"), "{out}");
        let f = pcapio::read(&fixed).expect("read fixed");
        assert_eq!(f.len(), caps.len());
        for (i, (a, b)) in f.iter().zip(&caps).enumerate() {
            assert_eq!(a.ts, b.ts);
            let n = a.data.len();
            assert_eq!(a.data[..n - 4], b.data[..n - 4], "frame {i}");
            assert_eq!(a.data[n - 4..] != b.data[n - 4..], corrupted.contains(&i), "frame {i}");
        }
    }
}

#[test]
fn bad_input_is_a_clear_error() {
    let missing = bin().args(["icrc", "--pcap", "/nonexistent/x.pcap"]).output().expect("run");
    let (_, err) = text(&missing);
    assert_eq!(missing.status.code(), Some(2));
    assert!(err.contains("/nonexistent/x.pcap") && !err.contains("panicked"), "{err}");

    let junk = tmp("junk.pcap");
    std::fs::write(&junk, b"this is not a capture file at all").expect("write");
    let o = bin().args(["icrc", "--pcap"]).arg(&junk).output().expect("run");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2));
    assert!(err.contains("not a pcap file") && !err.contains("panicked"), "{err}");

    // a capture cut in the middle of a record
    let bytes = std::fs::read(rxe("rxevm_rc_pingpong_send64_n5.pcap")).expect("read");
    let cut = tmp("cut.pcap");
    std::fs::write(&cut, &bytes[..bytes.len() - 7]).expect("write");
    let o = bin().args(["icrc", "--pcap"]).arg(&cut).output().expect("run");
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("bad record after") && !err.contains("panicked"), "{err}");

    for args in [
        &["icrc"][..],
        &["icrc", "--pcap", "x", "--data-width", "128"],
        &["icrc", "--pcap", "x", "--ready-p", "0"],
        &["frobnicate"],
    ] {
        let o = bin().args(args).output().expect("run");
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("error") && !err.contains("panicked"), "{args:?}: {err}");
    }
}

/// Every transfer and latency figure states the host memory budget it was measured under,
/// and a budget that cannot be is a clear error.
#[test]
fn host_memory_budget_in_the_header() {
    let run = |extra: &[&str]| {
        let o = bin()
            .args(["transfer", "--size", "4096", "--messages", "4", "--op", "read"])
            .args(extra)
            .output()
            .expect("run");
        let (out, err) = text(&o);
        assert!(o.status.success(), "{extra:?}: {out}\n{err}");
        out.lines().find(|l| l.contains("host memory:")).unwrap_or_default().trim().to_string()
    };
    assert_eq!(
        run(&[]),
        "host memory: PCIe 13.0 GB/s per direction (52 B per cycle at 250 MHz), read latency 250 cycles, 32 read tags"
    );
    assert_eq!(
        run(&["--pcie-gbps", "0"]),
        "host memory: no PCIe bandwidth limit (the ports' 64 B per cycle), read latency 250 cycles, no read tag limit"
    );
    assert_eq!(
        run(&["--pcie-gbps", "4", "--dma-latency", "500", "--read-tags", "2"]),
        "host memory: PCIe 4.0 GB/s per direction (16 B per cycle at 250 MHz), read latency 500 cycles, 2 read tags"
    );
    let o = bin().args(["latency", "--engine", "model", "--sizes", "64", "--samples", "1"]).output().expect("run");
    let (out, err) = text(&o);
    assert!(o.status.success() && out.contains("host memory: PCIe 13.0 GB/s"), "{out}\n{err}");

    for (args, msg) in [
        (&["--pcie-gbps=-1"][..], "is not a number of GB/s"),
        (&["--pcie-gbps", "0.1"], "less than one byte per cycle"),
        (&["--pcie-gbps", "fast"], "error"),
        (&["--read-tags", "-2"], "error"),
    ] {
        let o = bin().args(["transfer", "--messages", "1"]).args(args).output().expect("run");
        let (_, err) = text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(msg) && !err.contains("panicked"), "{args:?}: {err}");
    }
}
