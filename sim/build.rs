//! Verilate the HDL under `hdl/rtl/` and compile it, with a C ABI shim, into static libraries.
//!
//! One Verilated model per (top module, parameter set) in [`MODELS`]; each gets its own class
//! prefix so all of them link into one binary. The generic shim (`csrc/port_shim.cpp`) gives
//! C ABI access to every top-level port by index; the port list comes from the Verilated
//! header, so a new block needs only a `MODELS` entry. The Verilator runtime is compiled once into its
//! own library. `--features fst` adds FST waveform support (`--trace-fst`, zlib).
//!
//! Recipe and pitfalls: ../shared/docs/toolchain-notes.md (clear obj_dir first, opt_level 2
//! even in dev builds, verilated_threads.cpp is needed even for one thread).

use std::path::{Path, PathBuf};
use std::process::Command;

struct Model {
    /// Rust-side name and symbol prefix of the shim functions.
    name: &'static str,
    top: &'static str,
    files: &'static [&'static str],
    params: &'static [(&'static str, &'static str)],
}

const ICRC_FILES: &[&str] = &["roce_crc32_pkg.sv", "roce_icrc_pkg.sv", "roce_crc32_update.sv", "roce_icrc.sv"];

macro_rules! icrc {
    ($name:literal, $w:literal, $ins:literal) => {
        Model {
            name: $name,
            top: "roce_icrc",
            files: ICRC_FILES,
            params: &[("DATA_W", stringify!($w)), ("INSERT", $ins)],
        }
    };
}

// ---- roce_axis_drop_fifo -------------------------------------------------------------
// Depths and DROP_WHEN_FULL must match `Model::drop_fifo_config` in src/vl.rs.
const DROP_FIFO_FILES: &[&str] = &["roce_axis_drop_fifo.sv"];

macro_rules! drop_fifo {
    ($name:literal, $w:literal $(, $k:literal = $v:literal)*) => {
        Model {
            name: $name,
            top: "roce_axis_drop_fifo",
            files: DROP_FIFO_FILES,
            params: &[("DATA_W", stringify!($w)) $(, ($k, $v))*],
        }
    };
}
// ---- end roce_axis_drop_fifo ---------------------------------------------------------

const MODELS: &[Model] = &[
    icrc!("icrc64_ins", 64, "1"),
    icrc!("icrc64_chk", 64, "0"),
    icrc!("icrc256_ins", 256, "1"),
    icrc!("icrc256_chk", 256, "0"),
    icrc!("icrc512_ins", 512, "1"),
    icrc!("icrc512_chk", 512, "0"),
    // ---- roce_axis_drop_fifo: default depth, 8 KiB depth, DROP_WHEN_FULL=1 ----
    drop_fifo!("dropfifo64", 64),
    drop_fifo!("dropfifo256", 256),
    drop_fifo!("dropfifo512", 512),
    drop_fifo!("dropfifo64_small", 64, "DEPTH" = "1024"),
    drop_fifo!("dropfifo256_small", 256, "DEPTH" = "256"),
    drop_fifo!("dropfifo512_small", 512, "DEPTH" = "128"),
    drop_fifo!("dropfifo64_dwf", 64, "DEPTH" = "256", "DROP_WHEN_FULL" = "1"),
    // ---- end roce_axis_drop_fifo ----
    Model {
        name: "rxparse512",
        top: "roce_rx_parse",
        files: &["roce_rec_pkg.sv", "roce_opcode_pkg.sv", "roce_rx_parse.sv"],
        params: &[],
    },
    Model {
        name: "ctrl",
        top: "roce_ctrl",
        files: &[
            "roce_regs_pkg.sv",
            "roce_desc_pkg.sv",
            "roce_rec_pkg.sv",
            "roce_regs.sv",
            "roce_cq.sv",
            "roce_mr_check.sv",
            "roce_qp_ctx.sv",
            "roce_ctrl.sv",
        ],
        params: &[],
    },
    Model { name: "cq", top: "roce_cq", files: &["roce_regs_pkg.sv", "roce_desc_pkg.sv", "roce_cq.sv"], params: &[] },
    Model { name: "dcqcn", top: "roce_dcqcn", files: &["roce_dcqcn.sv"], params: &[] },
    Model {
        name: "qpctx",
        top: "roce_qp_ctx",
        files: &["roce_regs_pkg.sv", "roce_desc_pkg.sv", "roce_rec_pkg.sv", "roce_qp_ctx.sv"],
        // MAX_MTU below the largest code, so QP_MODIFY's MTU limit is exercised; must match
        // `cosim_qp_ctx::MAX_MTU`
        params: &[("MAX_MTU", "4")],
    },
    Model {
        name: "mrcheck",
        top: "roce_mr_check",
        files: &["roce_regs_pkg.sv", "roce_desc_pkg.sv", "roce_mr_check.sv"],
        params: &[],
    },
    Model { name: "regs", top: "roce_regs", files: &["roce_regs_pkg.sv", "roce_regs.sv"], params: &[] },
    Model { name: "payscatter", top: "roce_pay_scatter", files: &["roce_pay_scatter.sv"], params: &[] },
    Model {
        name: "resp",
        top: "roce_resp",
        files: &["roce_rec_pkg.sv", "roce_opcode_pkg.sv", "roce_desc_pkg.sv", "roce_pay_scatter.sv", "roce_resp.sv"],
        params: &[],
    },
    Model { name: "req", top: "roce_req", files: &["roce_desc_pkg.sv", "roce_rec_pkg.sv", "roce_req.sv"], params: &[] },
    Model {
        name: "comp",
        top: "roce_comp",
        files: &["roce_desc_pkg.sv", "roce_rec_pkg.sv", "roce_pay_scatter.sv", "roce_comp.sv"],
        params: &[],
    },
    Model { name: "ackq", top: "roce_ack_q", files: &["roce_rec_pkg.sv", "roce_ack_q.sv"], params: &[] },
    Model { name: "rdrsp", top: "roce_rd_rsp", files: &["roce_rec_pkg.sv", "roce_rd_rsp.sv"], params: &[] },
    Model {
        name: "txarb",
        top: "roce_tx_arb",
        files: &["roce_rec_pkg.sv", "roce_desc_pkg.sv", "roce_tx_arb.sv"],
        params: &[],
    },
    Model {
        name: "rxdisp",
        top: "roce_rx_disp",
        files: &["roce_rec_pkg.sv", "roce_opcode_pkg.sv", "roce_rx_disp.sv"],
        params: &[],
    },
    Model {
        name: "engine",
        top: "roce_engine",
        files: &[
            "roce_regs_pkg.sv",
            "roce_desc_pkg.sv",
            "roce_rec_pkg.sv",
            "roce_opcode_pkg.sv",
            "roce_crc32_pkg.sv",
            "roce_icrc_pkg.sv",
            "roce_crc32_update.sv",
            "roce_icrc.sv",
            "roce_axis_drop_fifo.sv",
            "roce_rx_parse.sv",
            "roce_axis_fifo.sv",
            "roce_tx_build.sv",
            "roce_regs.sv",
            "roce_cq.sv",
            "roce_mr_check.sv",
            "roce_qp_ctx.sv",
            "roce_ctrl.sv",
            "roce_pay_scatter.sv",
            "roce_resp.sv",
            "roce_ack_q.sv",
            "roce_rd_rsp.sv",
            "roce_dcqcn.sv",
            "roce_tx_arb.sv",
            "roce_rx_disp.sv",
            "roce_dma_rd_arb.sv",
            "roce_dma_wr_arb.sv",
            "roce_mr_arb.sv",
            "roce_req.sv",
            "roce_comp.sv",
            "roce_engine.sv",
        ],
        params: &[],
    },
    // roce_dma_axi: must match boards/synth/configs.txt dma_axi / dma_axi_small and
    // `cosim_dma_axi::DmaAxiModel`
    Model { name: "dmaaxi", top: "roce_dma_axi", files: &["roce_dma_axi.sv"], params: &[] },
    Model {
        name: "dmaaxi_small",
        top: "roce_dma_axi",
        files: &["roce_dma_axi.sv"],
        params: &[("TAG_W", "2"), ("ID_W", "3"), ("MAX_BURST", "4"), ("RD_QUEUE", "2"), ("WR_QUEUE", "2")],
    },
    // roce_axis_async_fifo (see `cosim_async_fifo::AsyncFifoModel`) and roce_axi_axil
    Model {
        name: "asyncfifo_frame",
        top: "roce_axis_async_fifo",
        files: &["roce_axis_async_fifo.sv"],
        params: &[("DATA_W", "64"), ("DEPTH", "16")],
    },
    Model {
        name: "asyncfifo_drop",
        top: "roce_axis_async_fifo",
        files: &["roce_axis_async_fifo.sv"],
        params: &[("DATA_W", "64"), ("DEPTH", "16"), ("DROP_WHEN_FULL", "1")],
    },
    Model {
        name: "asyncfifo_stream",
        top: "roce_axis_async_fifo",
        files: &["roce_axis_async_fifo.sv"],
        params: &[("DATA_W", "64"), ("DEPTH", "8"), ("FRAME", "0")],
    },
    Model { name: "axiaxil", top: "roce_axi_axil", files: &["roce_axi_axil.sv"], params: &[] },
    Model { name: "framegate", top: "roce_axis_frame_gate", files: &["roce_axis_frame_gate.sv"], params: &[] },
    Model { name: "axisfifo", top: "roce_axis_fifo", files: &["roce_axis_fifo.sv"], params: &[("DEPTH", "16")] },
    Model {
        name: "txbuild512",
        top: "roce_tx_build",
        files: &["roce_rec_pkg.sv", "roce_opcode_pkg.sv", "roce_tx_build.sv"],
        params: &[],
    },
];

fn verilator_root() -> PathBuf {
    if let Ok(r) = std::env::var("VERILATOR_ROOT") {
        return PathBuf::from(r);
    }
    let out = Command::new("verilator").arg("--getenv").arg("VERILATOR_ROOT").output();
    match out {
        Ok(o) if o.status.success() => PathBuf::from(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        _ => panic!("verilator not found: install it with scripts/setup.sh (Debian: apt-get install verilator)"),
    }
}

fn verilate(m: &Model, rtl: &Path, mdir: &Path, fst: bool) {
    let _ = std::fs::remove_dir_all(mdir);
    std::fs::create_dir_all(mdir).expect("create obj dir");
    // The one waiver scripts/lint-hdl.sh also has: a package's constants serve many modules.
    let waivers = mdir.join("waivers.vlt");
    std::fs::write(&waivers, "`verilator_config\nlint_off -rule UNUSEDPARAM -file \"*_pkg.sv\"\n")
        .expect("write waivers");
    let mut cmd = Command::new("verilator");
    cmd.args(["--cc", "-Wall", "-O3", "--x-assign", "fast", "--x-initial", "fast"])
        .arg(&waivers)
        .arg("--Mdir")
        .arg(mdir)
        .arg("--prefix")
        .arg(format!("V{}", m.name))
        .arg("--top-module")
        .arg(m.top);
    if fst {
        cmd.arg("--trace-fst");
    }
    for (k, v) in m.params {
        cmd.arg(format!("-G{k}={v}"));
    }
    for f in m.files {
        cmd.arg(rtl.join(f));
    }
    let st = cmd.status().expect("run verilator");
    assert!(st.success(), "verilator failed for {}", m.name);
}

/// The top-level ports Verilator declared in a model's header: `VL_IN8(&clk,0,0);`,
/// `VL_OUTW(&m_axis_tdata,511,0,16);` ... as (name, bits, is_output).
fn ports_of(header: &Path) -> Vec<(String, u32, bool)> {
    let text = std::fs::read_to_string(header).expect("Verilated header");
    let mut v = Vec::new();
    for line in text.lines() {
        let l = line.trim();
        let (out, rest) = if let Some(r) = l.strip_prefix("VL_IN") {
            (false, r)
        } else if let Some(r) = l.strip_prefix("VL_OUT") {
            (true, r)
        } else {
            continue;
        };
        let Some(args) = rest.split_once("(&").map(|x| x.1) else { continue };
        let args = args.trim_end_matches(");");
        let mut it = args.split(',');
        let (Some(name), Some(msb), Some(lsb)) = (it.next(), it.next(), it.next()) else { continue };
        let (Ok(msb), Ok(lsb)) = (msb.trim().parse::<u32>(), lsb.trim().parse::<u32>()) else { continue };
        v.push((name.trim().to_string(), msb - lsb + 1, out));
    }
    v
}

fn base_build(root: &Path) -> cc::Build {
    let inc = root.join("include");
    let mut b = cc::Build::new();
    b.cpp(true)
        .std("c++17")
        .opt_level(2)
        .debug(false)
        .warnings(false)
        .include(&inc)
        .include(inc.join("vltstd"))
        .define("VM_COVERAGE", "0")
        .define("VM_SC", "0")
        .flag_if_supported("-faligned-new")
        .flag_if_supported("-fcf-protection=none")
        .flag_if_supported("-Wno-unused-parameter");
    b
}

/// A digest of everything a model's library is built from (FNV-1a over the contents).
fn input_key(m: &Model, rtl: &Path, fst: bool, extra: &[&[u8]]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h = (h ^ u64::from(x)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        h = (h ^ 0xff).wrapping_mul(0x0000_0100_0000_01b3);
    };
    eat(m.top.as_bytes());
    eat(&[u8::from(fst)]);
    for (k, v) in m.params {
        eat(k.as_bytes());
        eat(v.as_bytes());
    }
    for f in m.files {
        eat(f.as_bytes());
        eat(&std::fs::read(rtl.join(f)).unwrap_or_default());
    }
    for x in extra {
        eat(x);
    }
    format!("{h:016x}")
}

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let rtl = manifest.join("../hdl/rtl").canonicalize().expect("hdl/rtl exists");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let fst = std::env::var_os("CARGO_FEATURE_FST").is_some();
    println!("cargo:rerun-if-changed={}", rtl.display());
    println!("cargo:rerun-if-changed={}", manifest.join("csrc").display());
    println!("cargo:rerun-if-env-changed=VERILATOR_ROOT");
    println!("cargo:rerun-if-env-changed=ROCE_SIM_ONLY");
    let root = verilator_root();
    let trace = if fst { "1" } else { "0" };

    // Verilator runtime, once (cached across HDL edits).
    let rt_stamp = out.join(format!("vlrt-{}.stamp", trace));
    if !rt_stamp.exists() {
        let mut b = base_build(&root);
        b.cargo_metadata(false);
        b.define("VM_TRACE", trace).define("VM_TRACE_FST", trace);
        b.file(root.join("include/verilated.cpp"));
        b.file(root.join("include/verilated_threads.cpp"));
        if fst {
            b.file(root.join("include/verilated_fst_c.cpp"));
        }
        b.compile("vlrt");
        std::fs::write(&rt_stamp, b"").ok();
    }

    // A model whose inputs (its files, parameters, the trace flag, this script) are unchanged
    // since its library was built is not verilated or compiled again: editing one block does
    // not rebuild the others.
    let script = std::fs::read(manifest.join("build.rs")).unwrap_or_default();
    let shim = std::fs::read(manifest.join("csrc/port_shim.cpp")).unwrap_or_default();
    // ROCE_SIM_ONLY=a,b (developer switch): rebuild only stale models whose name contains one
    // of these; other stale models that were built before keep their old library, so editing
    // a block does not recompile the whole-engine model on every test run. Never set in CI.
    let only: Vec<String> = std::env::var("ROCE_SIM_ONLY")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
        .collect();
    let stale: Vec<(&Model, String)> = MODELS
        .iter()
        .filter_map(|m| {
            let key = input_key(m, &rtl, fst, &[&script, &shim, root.as_os_str().as_encoded_bytes()]);
            let stamp = out.join(format!("vl_{}.key", m.name));
            let lib = out.join(format!("libvl_{}.a", m.name));
            let fresh = lib.exists() && std::fs::read_to_string(&stamp).is_ok_and(|k| k == key);
            if !fresh && lib.exists() && !only.is_empty() && !only.iter().any(|o| m.name.contains(o.as_str())) {
                // Iterating on one block: keep this model's previous library (its stamp stays
                // stale, so the next build without ROCE_SIM_ONLY rebuilds it).
                println!("cargo:warning=ROCE_SIM_ONLY: {} is stale and kept as it was", m.name);
                return None;
            }
            (!fresh).then_some((m, key))
        })
        .collect();

    // Verilate the stale models in parallel (verilator itself is quick), then compile each.
    std::thread::scope(|s| {
        for (m, _) in &stale {
            let mdir = out.join(format!("obj_{}", m.name));
            let rtl = &rtl;
            s.spawn(move || verilate(m, rtl, &mdir, fst));
        }
    });
    for (m, key) in &stale {
        let mdir = out.join(format!("obj_{}", m.name));
        let class = format!("V{}", m.name);
        // The model's ports, from the Verilated header, for the generic shim.
        let inc = mdir.join(format!("ports_{}.inc", m.name));
        let ports = ports_of(&mdir.join(format!("{class}.h")));
        assert!(ports.iter().any(|p| p.0 == "clk"), "{}: the top module needs a clk port", m.name);
        let text: String = ports
            .iter()
            .map(|(n, bits, out)| format!("PORT_{}({n}, {bits})\n", if *out { "OUT" } else { "IN" }))
            .collect();
        std::fs::write(&inc, text).expect("write ports file");
        let mut b = base_build(&root);
        b.include(&mdir)
            .define("VM_TRACE", trace)
            .define("VM_TRACE_FST", trace)
            .define("VTOP", class.as_str())
            .define("VHEADER", format!("\"{class}.h\"").as_str())
            .define("PORTS_INC", format!("\"ports_{}.inc\"", m.name).as_str())
            .define("SHIM(x)", format!("{}_##x", m.name).as_str())
            .file(manifest.join("csrc/port_shim.cpp"));
        let mut cpps: Vec<PathBuf> = std::fs::read_dir(&mdir)
            .expect("obj dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
            .collect();
        cpps.sort();
        b.files(cpps).cargo_metadata(false);
        b.compile(&format!("vl_{}", m.name));
        std::fs::write(out.join(format!("vl_{}.key", m.name)), key).expect("write model stamp");
    }

    // Link order matters for static libraries: the models first, then the runtime they use.
    println!("cargo:rustc-link-search=native={}", out.display());
    for m in MODELS {
        println!("cargo:rustc-link-lib=static=vl_{}", m.name);
    }
    println!("cargo:rustc-link-lib=static=vlrt");
    if fst {
        println!("cargo:rustc-link-lib=z");
    }
    println!("cargo:rustc-link-lib=stdc++");
    println!("cargo:rustc-link-lib=pthread");
}
