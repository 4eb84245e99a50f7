//! The flow against real Yosys on tiny designs: the serious-warning list must match what
//! Yosys 0.23 actually prints. Skipped (with a note) when `yosys` is not installed.

use std::path::{Path, PathBuf};

use roce_boards::flow::{self, Options};
use roce_boards::yosys::Flow;
use roce_boards::Error;
use roce_hdl::Config;

fn have_yosys() -> bool {
    let ok = std::process::Command::new("yosys").arg("-V").output().is_ok();
    if !ok {
        eprintln!("yosys not installed: skipping");
    }
    ok
}

fn setup(name: &str, files: &[(&str, &str)]) -> Options {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    let rtl = dir.join("rtl");
    std::fs::create_dir_all(&rtl).unwrap();
    for (f, text) in files {
        std::fs::write(rtl.join(f), text).unwrap();
    }
    Options { rtl_dir: rtl, rtl_label: "rtl".into(), work_dir: dir.join("work"), yosys: "yosys".into(), jobs: 2 }
}

fn cfg(name: &str, top: &str, params: &[(&str, &str)], files: &[&str]) -> Config {
    Config {
        name: name.into(),
        top: top.into(),
        params: params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        files: files.iter().map(|f| f.to_string()).collect(),
        kind: roce_hdl::Kind::Config,
    }
}

const GOOD: &str = "module good #(parameter int W = 4) (input logic clk, input logic [W-1:0] a, \
                    output logic [W-1:0] q);\n  always_ff @(posedge clk) q <= a + 1'b1;\nendmodule\n";

fn one(opts: &Options, c: Config, flow: Flow) -> Result<flow::RunResult, Error> {
    flow::run_one(&flow::Job { config: c, flow }, opts)
}

#[test]
fn good_design_passes_with_resources() {
    if !have_yosys() {
        return;
    }
    let opts = setup("good", &[("good.sv", GOOD)]);
    let c = cfg("good8", "good", &[("W", "8")], &["good.sv"]);
    let jobs = flow::jobs(std::slice::from_ref(&c), &["xc7".to_string()], true);
    let results = flow::run_all(&jobs, &opts, |_, _, _, _| {}).unwrap();
    assert_eq!(results.len(), 2);
    let g = results[0].generic.unwrap();
    assert_eq!(g.ff, 8, "W=8 took effect");
    let x = results[1].resources.as_ref().unwrap();
    assert_eq!(x.ff, 8);
    assert!(x.lut + x.carry > 0, "{x:?}");
    assert!(Path::new(&results[1].log).is_file());
}

#[test]
fn serious_warnings_latches_and_errors_fail() {
    if !have_yosys() {
        return;
    }
    let opts = setup(
        "bad",
        &[
            ("good.sv", GOOD),
            (
                "multi.sv",
                "module multi (input logic a, b, output logic y);\n  assign y = a;\n  \
                 assign y = b;\nendmodule\n",
            ),
            (
                "nodrv.sv",
                "module nodrv (input logic a, output logic y);\n  logic z;\n  assign y = a ^ z;\n\
                 endmodule\n",
            ),
            ("syn.sv", "module syn (input logic a, output logic y);\n  assign y = a\nendmodule\n"),
            (
                "latch.sv",
                "module latch (input logic a, en, output logic y);\n  always_latch if (en) y = a;\n\
                 endmodule\n",
            ),
        ],
    );
    let serious = |e: &Error, what: &str| match e {
        Error::SeriousWarnings { warnings, .. } => {
            assert!(warnings.iter().any(|w| w.contains(what)), "{warnings:?}")
        }
        other => panic!("expected serious warnings, got {other}"),
    };
    let e = one(&opts, cfg("m", "multi", &[], &["multi.sv"]), Flow::Generic).unwrap_err();
    serious(&e, "multiple conflicting drivers");
    let e = one(&opts, cfg("n", "nodrv", &[], &["nodrv.sv"]), Flow::Generic).unwrap_err();
    serious(&e, "is used but has no driver");
    // Messages name files by the label, not the absolute directory.
    let e = one(&opts, cfg("s", "syn", &[], &["syn.sv"]), Flow::Generic).unwrap_err();
    assert!(matches!(&e, Error::YosysFailed { message, .. } if message.starts_with("rtl/syn.sv:3: ERROR")), "{e}");
    let e = one(&opts, cfg("l", "latch", &[], &["latch.sv"]), Flow::Generic).unwrap_err();
    assert!(matches!(e, Error::Latches { .. }), "{e}");
    let xc7 = Flow::Xilinx { family: "xc7".into() };
    let e = one(&opts, cfg("l", "latch", &[], &["latch.sv"]), xc7).unwrap_err();
    assert!(matches!(e, Error::Latches { .. }), "{e}");
    let e = one(&opts, cfg("p", "good", &[("NOPE", "1")], &["good.sv"]), Flow::Generic).unwrap_err();
    assert!(matches!(&e, Error::YosysFailed { message, .. } if message.contains("NOPE")), "{e}");
    let e = one(&opts, cfg("f", "good", &[], &["missing.sv"]), Flow::Generic).unwrap_err();
    assert!(matches!(e, Error::Hdl(roce_hdl::Error::MissingFile { .. })), "{e}");
}

const RAM: &str = "module ram (input logic clk, we, input logic [9:0] wa, ra, \
                   input logic [71:0] d, output logic [71:0] q);\n  \
                   logic [71:0] mem [1024];\n  \
                   always_ff @(posedge clk) begin\n    if (we) mem[wa] <= d;\n    q <= mem[ra];\n  end\n\
                   endmodule\n";

#[test]
fn memories_stay_unmapped_in_generic_and_map_to_bram() {
    if !have_yosys() {
        return;
    }
    let opts = setup("ram", &[("ram.sv", RAM)]);
    let c = cfg("ram", "ram", &[], &["ram.sv"]);
    let g = one(&opts, c.clone(), Flow::Generic).unwrap().generic.unwrap();
    assert_eq!(g.mem, 1, "{g:?}");
    assert!(g.ff < 200, "memory_map must not turn the RAM into flip-flops: {g:?}");
    for family in ["xc7", "xcup"] {
        let r = one(&opts, c.clone(), Flow::Xilinx { family: family.into() }).unwrap();
        let x = r.resources.unwrap();
        assert!(x.ramb36 + x.ramb18 > 0, "{family}: {x:?}");
    }
}

#[test]
fn user_port_width_mismatch_is_serious() {
    if !have_yosys() {
        return;
    }
    let opts = setup(
        "resize",
        &[
            ("sub.sv", "module sub (input logic [7:0] a, output logic [7:0] y);\n  assign y = a;\nendmodule\n"),
            ("top.sv", "module top (input logic [3:0] a, output logic [7:0] y);\n  sub u (.a(a), .y(y));\nendmodule\n"),
        ],
    );
    let e = one(&opts, cfg("r", "top", &[], &["sub.sv", "top.sv"]), Flow::Generic).unwrap_err();
    assert!(
        matches!(&e, Error::SeriousWarnings { warnings, .. }
            if warnings.iter().any(|w| w.contains("Resizing cell port top.u.a"))),
        "{e}"
    );
}

#[test]
fn elaboration_checks_board_tops_against_black_boxes() {
    if !have_yosys() {
        return;
    }
    let stub = "(* blackbox *)\nmodule ip (input logic clk, input logic [7:0] d, output logic [7:0] q);\n  \
                assign q = '0;\nendmodule\n";
    let top = |port: &str, width: u32| {
        format!(
            "module top (input logic clk, input logic [{w}:0] d, output logic [7:0] q);\n  \
             logic [7:0] r;\n  ip u_ip (.clk(clk), .{port}(d), .q(r));\n  \
             always_ff @(posedge clk) q <= r;\nendmodule\n",
            w = width - 1
        )
    };
    let opts = setup(
        "elab",
        &[
            ("stub.sv", stub),
            ("ok.sv", &top("d", 8)),
            ("port.sv", &top("dd", 8)),
            ("width.sv", &top("d", 4)),
            ("latch.sv", "module top (input logic a, en, output logic y);\n  always_latch if (en) y = a;\nendmodule\n"),
        ],
    );
    let mut c = cfg("b", "top", &[], &["stub.sv", "ok.sv"]);
    c.kind = roce_hdl::Kind::Board;
    let jobs = flow::jobs(std::slice::from_ref(&c), &["xc7".to_string()], true);
    assert_eq!(jobs.len(), 1);
    let r = flow::run_all(&jobs, &opts, |_, _, _, _| {}).unwrap();
    let g = r[0].generic.unwrap();
    assert_eq!((g.ff, g.latch), (1, 0), "one 8-bit register after proc: {g:?}");
    let e = one(&opts, cfg("p", "top", &[], &["stub.sv", "port.sv"]), Flow::Elab).unwrap_err();
    assert!(matches!(&e, Error::YosysFailed { message, .. } if message.contains("dd")), "{e}");
    let e = one(&opts, cfg("w", "top", &[], &["stub.sv", "width.sv"]), Flow::Elab).unwrap_err();
    assert!(matches!(&e, Error::SeriousWarnings { .. }), "{e}");
    let e = one(&opts, cfg("l", "top", &[], &["latch.sv"]), Flow::Elab).unwrap_err();
    assert!(matches!(e, Error::Latches { .. }), "{e}");
}
