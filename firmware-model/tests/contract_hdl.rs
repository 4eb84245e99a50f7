//! The generated SystemVerilog packages against the tools and against the Rust contract.
//!
//! - `verilator --lint-only -Wall` with no waiver: a wrapper module `contract_top` (written
//!   to the test's temp dir) uses every localparam and every struct type of both packages,
//!   so -Wall has nothing unused to report and every other warning counts. (The repository
//!   lint, `scripts/lint-hdl.sh`, lints the packages too, with its one UNUSEDPARAM waiver
//!   for `*_pkg.sv`; this test is stricter.)
//! - `yosys -p 'read_verilog -sv ...; hierarchy -check'` on the same files.
//! - Elaboration-time checks in the same wrapper: every address, reset value, field
//!   position, byte offset, width, enum code and `$bits` of every struct equals the Rust
//!   table, and random descriptors encoded by the Rust code, cast to the packed structs, give
//!   back every Rust field value by its SystemVerilog member name. A mismatch instantiates
//!   an undefined module named after it, which both tools reject; a test with a planted
//!   mismatch proves the checks bite.

#[path = "contract_strategies.rs"]
mod strategies;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRng, TestRunner};
use roce_model::contract::sv::{bit_names, enum_code_name};
use roce_model::contract::*;

// ---- the files --------------------------------------------------------------------------

fn tmp_dir(test: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("contract_hdl").join(test);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Write the freshly generated packages (file names = package names, as -Wall wants).
fn write_pkgs(dir: &Path) -> Vec<PathBuf> {
    let regs = dir.join("roce_regs_pkg.sv");
    let desc = dir.join("roce_desc_pkg.sv");
    std::fs::write(&regs, sv::regs_pkg()).unwrap();
    std::fs::write(&desc, sv::desc_pkg()).unwrap();
    vec![regs, desc]
}

/// `localparam` names of a package text, in order.
fn localparams(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.trim_start().strip_prefix("localparam "))
        .map(|l| l.split('=').next().unwrap().split_whitespace().last().unwrap().to_string())
        .collect()
}

/// `(struct name, member names)` of every `typedef struct packed` in a package text.
fn structs(text: &str) -> Vec<(String, Vec<String>)> {
    let mut out = Vec::new();
    let mut members: Option<Vec<String>> = None;
    for l in text.lines().map(str::trim) {
        if l.starts_with("typedef struct packed {") {
            members = Some(Vec::new());
        } else if let Some(name) = l.strip_prefix("} ").and_then(|r| r.strip_suffix(';')) {
            out.push((name.to_string(), members.take().expect("struct body")));
        } else if let Some(m) = members.as_mut() {
            let decl = l.split(';').next().unwrap();
            m.push(decl.split_whitespace().last().unwrap().to_string());
        }
    }
    out
}

// ---- expected values --------------------------------------------------------------------

/// A member path of a struct constant and its expected value (little-endian bytes).
struct Check {
    path: String,
    width: u32,
    le: Vec<u8>,
}

fn u(path: &str, width: u32, v: u64) -> Check {
    Check { path: path.to_string(), width, le: v.to_le_bytes().to_vec() }
}

fn b(path: &str, bytes: &[u8]) -> Check {
    Check { path: path.to_string(), width: 8 * bytes.len() as u32, le: bytes.to_vec() }
}

/// A SystemVerilog literal of `width` bits.
fn lit(width: u32, le: &[u8]) -> String {
    if width <= 64 {
        let mut v = 0u64;
        for (i, x) in le.iter().take(8).enumerate() {
            v |= u64::from(*x) << (8 * i);
        }
        if width < 64 {
            v &= (1 << width) - 1;
        }
        format!("{width}'d{v}")
    } else {
        assert_eq!(width % 8, 0);
        let hex: String = le[..(width / 8) as usize].iter().rev().map(|x| format!("{x:02x}")).collect();
        format!("{width}'h{hex}")
    }
}

fn sge_checks(prefix: &str, s: &Sge) -> Vec<Check> {
    vec![
        u(&format!("{prefix}addr"), 64, s.addr),
        u(&format!("{prefix}len"), 32, s.len.into()),
        u(&format!("{prefix}lkey"), 32, s.lkey.into()),
    ]
}

fn sq_checks(w: &SqWqe) -> Vec<Check> {
    let img = w.encode();
    let mut c = vec![
        u("wr_id", 64, w.wr_id),
        u("opcode", 8, w.opcode.code().into()),
        u("flags", 8, w.flags.bits().into()),
        u("num_sge", 8, w.num_sge.into()),
        u("imm_or_inv", 32, w.imm_or_inv.into()),
        u("remote_addr", 64, w.remote_addr),
        u("rkey", 32, w.rkey.into()),
        u("total_len", 32, w.total_len.into()),
        u("compare_add", 64, w.compare_add),
        u("swap", 64, w.swap),
        u("bf_db", 32, u64::from(w.bf_db)),
        b("data", &img[64..128]),
    ];
    if let SqData::Inline(d) = &w.data {
        c.push(b("data", d));
    }
    c
}

/// Checks on `sq_wqe_data_sge_t'(data)` of an SGE-list WQE.
fn sq_sge_checks(w: &SqWqe) -> Vec<Check> {
    match &w.data {
        SqData::Sge(s) => s.iter().enumerate().flat_map(|(i, s)| sge_checks(&format!("sge_{i}."), s)).collect(),
        SqData::Inline(_) => Vec::new(),
    }
}

fn rq_checks(w: &RqWqe) -> Vec<Check> {
    let mut c = vec![u("wr_id", 64, w.wr_id), u("num_sge", 8, w.num_sge.into())];
    for (i, s) in w.sge.iter().enumerate() {
        c.extend(sge_checks(&format!("sge_{i}."), s));
    }
    c
}

fn cqe_checks(q: &Cqe) -> Vec<Check> {
    vec![
        u("wr_id", 64, q.wr_id),
        u("byte_len", 32, q.byte_len.into()),
        u("imm_or_inv", 32, q.imm_or_inv.into()),
        u("qpn", 24, q.qpn.into()),
        u("opcode", 8, q.opcode.code().into()),
        u("status", 8, q.status.code().into()),
        u("flags", 8, q.flags.bits().into()),
        u("owner", 8, q.owner.bits().into()),
        u("src_qp", 24, q.src_qp.into()),
    ]
}

fn qp_checks(q: &QpCtx) -> Vec<Check> {
    vec![
        u("state", 8, q.state.code().into()),
        u("qp_type", 8, q.qp_type.code().into()),
        u("path_mtu", 8, q.path_mtu.code().into()),
        u("encap", 8, q.encap.code().into()),
        u("pd", 32, q.pd.into()),
        u("access", 32, q.access.bits().into()),
        u("dest_qpn", 24, q.dest_qpn.into()),
        u("sq_psn", 24, q.sq_psn.into()),
        u("rq_psn", 24, q.rq_psn.into()),
        u("sq_base", 64, q.sq_base),
        u("rq_base", 64, q.rq_base),
        u("sq_log_size", 4, q.sq_log_size.into()),
        u("rq_log_size", 4, q.rq_log_size.into()),
        u("send_cq", 14, q.send_cq.into()),
        u("recv_cq", 14, q.recv_cq.into()),
        u("timeout", 5, q.timeout.into()),
        u("retry_cnt", 3, q.retry_cnt.into()),
        u("rnr_retry", 3, q.rnr_retry.into()),
        u("min_rnr_timer", 5, q.min_rnr_timer.into()),
        u("max_rd_atomic", 8, q.max_rd_atomic.into()),
        u("max_dest_rd_atomic", 8, q.max_dest_rd_atomic.into()),
        b("dest_mac", &q.dest_mac),
        u("vlan", 16, q.vlan.bits().into()),
        u("dscp", 6, q.dscp.into()),
        u("hop_limit", 8, q.hop_limit.into()),
        u("udp_sport", 16, q.udp_sport.into()),
        b("dest_ip", &q.dest_ip),
        u("sq_pi", 16, q.sq_pi.into()),
        u("sq_ci", 16, q.sq_ci.into()),
        u("rq_pi", 16, q.rq_pi.into()),
        u("rq_ci", 16, q.rq_ci.into()),
        u("flow_label", 20, q.flow_label.into()),
        u("sq_win_shift", 3, q.sq_win_shift.into()),
        u("sq_win_base", 16, q.sq_win_base.into()),
    ]
}

fn cq_checks(c: &CqCtx) -> Vec<Check> {
    vec![
        u("base", 64, c.base),
        u("log_size", 4, c.log_size.into()),
        u("flags", 8, c.flags.bits().into()),
        u("valid", 1, c.valid.into()),
        u("pi", 16, c.pi.into()),
        u("ci", 16, c.ci.into()),
        u("state", 8, c.state.bits().into()),
    ]
}

fn mr_checks(m: &MrCtx) -> Vec<Check> {
    vec![
        u("va", 64, m.va),
        u("len", 64, m.len),
        u("iova", 64, m.iova),
        u("pd", 32, m.pd.into()),
        u("key", 32, m.key.into()),
        u("access", 32, m.access.bits().into()),
        u("valid", 1, m.valid.into()),
    ]
}

/// `n` values from a strategy, deterministic for `seed`.
fn sample<S: Strategy>(s: S, n: usize, seed: u8) -> Vec<S::Value> {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(proptest::test_runner::RngAlgorithm::ChaCha, &[seed; 32]),
    );
    (0..n).map(|_| s.new_tree(&mut runner).expect("value").current()).collect()
}

// ---- the wrapper ------------------------------------------------------------------------

struct Top {
    body: String,
    checks: usize,
}

impl Top {
    /// `if (expr != want) <undefined module named after what>`.
    fn check(&mut self, what: &str, expr: &str, want: &str) {
        // Verilator reserves `__` in identifiers: collapse runs of separators.
        let what = what.strip_prefix("roce_desc_pkg::").unwrap_or(what);
        let mut tag = String::new();
        for c in what.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }) {
            if !(c == '_' && tag.ends_with('_')) {
                tag.push(c);
            }
        }
        let n = self.checks;
        let _ = writeln!(
            self.body,
            "  if ({expr} != {want}) begin : g_chk_{n}\n    CONTRACT_MISMATCH_{tag} u_mismatch ();\n  end"
        );
        self.checks += 1;
    }

    /// A struct constant `name` of type `ty` holding image `img`, and its member checks;
    /// `members` (from the package text) must all be checked or reserved (then zero).
    fn instance(&mut self, name: &str, ty: &str, img: &[u8], checks: &[Check], members: &[String]) {
        let _ = writeln!(self.body, "  localparam roce_desc_pkg::{ty} {name} = {};", lit(8 * img.len() as u32, img));
        // The struct is exactly as wide as the descriptor (Yosys has no $bits of a type).
        self.check(&format!("bits_{name}"), &format!("$bits({name})"), &(8 * img.len()).to_string());
        for c in checks {
            self.check(&format!("{name}.{}", c.path), &format!("{name}.{}", c.path), &lit(c.width, &c.le));
        }
        for m in members {
            let checked = checks.iter().any(|c| c.path == *m || c.path.starts_with(&format!("{m}.")));
            if m.starts_with("rsvd_") || m.ends_with("_rsvd") {
                assert!(!checked, "{ty}.{m}");
                self.check(&format!("{name}.{m}"), &format!("{name}.{m}"), "'0");
            } else {
                assert!(checked, "{ty}.{m}: member not checked (add it to the test's list)");
            }
        }
    }
}

/// The wrapper: uses everything, checks everything. `plant` adds one wrong expectation.
fn top_sv(plant: bool) -> (String, usize) {
    let regs_text = sv::regs_pkg();
    let desc_text = sv::desc_pkg();
    let structs = structs(&desc_text);
    let members = |ty: &str| structs.iter().find(|(n, _)| n == ty).map(|(_, m)| m.clone()).expect(ty);
    let mut top = Top { body: String::new(), checks: 0 };

    // Register map.
    for r in regs::ALL {
        top.check(
            &format!("{}_ADDR", r.name),
            &format!("roce_regs_pkg::{}_ADDR", r.name),
            &format!("16'h{:04x}", r.offset),
        );
        top.check(
            &format!("{}_RESET", r.name),
            &format!("roce_regs_pkg::{}_RESET", r.name),
            &format!("32'h{:08x}", r.reset),
        );
        if r.count > 1 {
            top.check(
                &format!("{}_COUNT", r.name),
                &format!("roce_regs_pkg::{}_COUNT", r.name),
                &format!("{}", r.count),
            );
        }
        for f in r.fields {
            let p = format!("roce_regs_pkg::{}_{}", r.name, f.name);
            top.check(&format!("{}_{}_LSB", r.name, f.name), &format!("{p}_LSB"), &f.field.lsb.to_string());
            top.check(&format!("{}_{}_W", r.name, f.name), &format!("{p}_W"), &f.field.width.to_string());
        }
    }
    top.check("BAR0_BYTES", "roce_regs_pkg::BAR0_BYTES", &regs::BAR0_BYTES.to_string());
    for (pkg, e) in [
        ("roce_regs_pkg", &CmdOpcode::DESC),
        ("roce_regs_pkg", &CmdErrorCode::DESC),
        ("roce_desc_pkg", &SqOpcode::DESC),
        ("roce_desc_pkg", &CqeOpcode::DESC),
        ("roce_desc_pkg", &CqeStatus::DESC),
        ("roce_desc_pkg", &QpState::DESC),
        ("roce_desc_pkg", &QpType::DESC),
        ("roce_desc_pkg", &PathMtu::DESC),
        ("roce_desc_pkg", &Encap::DESC),
    ] {
        for v in e.variants {
            let n = enum_code_name(e, v.name);
            top.check(&n, &format!("{pkg}::{n}"), &format!("8'h{:02x}", v.code));
        }
    }
    for (pkg, bd) in [
        ("roce_regs_pkg", &QpAttrMask::DESC),
        ("roce_desc_pkg", &SqFlags::DESC),
        ("roce_desc_pkg", &CqeFlags::DESC),
        ("roce_desc_pkg", &CqeOwner::DESC),
        ("roce_desc_pkg", &AccessFlags::DESC),
        ("roce_desc_pkg", &CqFlags::DESC),
        ("roce_desc_pkg", &CqState::DESC),
        ("roce_desc_pkg", &VlanTag::DESC),
    ] {
        for bit in bd.bits {
            let names = bit_names(bd, bit.name, bit.width);
            top.check(&names[0], &format!("{pkg}::{}", names[0]), &bit.lsb.to_string());
            if let Some(w) = names.get(1) {
                top.check(w, &format!("{pkg}::{w}"), &bit.width.to_string());
            }
        }
    }

    // Layout constants and struct sizes.
    for l in LAYOUTS {
        let up = l.sv.to_ascii_uppercase();
        top.check(&format!("{up}_BYTES"), &format!("roce_desc_pkg::{up}_BYTES"), &l.size.to_string());
        for f in l.fields {
            let p = format!("roce_desc_pkg::{up}_{}", f.name.to_ascii_uppercase());
            top.check(&format!("{p}_OFF"), &format!("{p}_OFF"), &f.offset.to_string());
            top.check(&format!("{p}_W"), &format!("{p}_W"), &f.bits.to_string());
            if let FieldKind::Array(_, n) = f.kind {
                top.check(&format!("{p}_COUNT"), &format!("{p}_COUNT"), &n.to_string());
            }
        }
    }

    // Descriptor images.
    for (i, w) in sample(strategies::sq_wqe(), 6, 1).iter().enumerate() {
        let name = format!("SQ_{i}");
        top.instance(&name, "sq_wqe_t", &w.encode(), &sq_checks(w), &members("sq_wqe_t"));
        if matches!(w.data, SqData::Sge(_)) {
            let alt = format!("{name}_SGE");
            let _ = writeln!(top.body, "  localparam roce_desc_pkg::sq_wqe_data_sge_t {alt} = {name}.data;");
            top.check(&format!("bits_{alt}"), &format!("$bits({alt})"), "512");
            for c in sq_sge_checks(w) {
                top.check(&format!("{alt}.{}", c.path), &format!("{alt}.{}", c.path), &lit(c.width, &c.le));
            }
        }
    }
    for (i, w) in sample(strategies::rq_wqe(), 4, 2).iter().enumerate() {
        top.instance(&format!("RQ_{i}"), "rq_wqe_t", &w.encode(), &rq_checks(w), &members("rq_wqe_t"));
    }
    for (i, s) in sample(strategies::sge(), 2, 3).iter().enumerate() {
        top.instance(&format!("SGE_{i}"), "sge_t", &s.encode(), &sge_checks("", s), &members("sge_t"));
    }
    let cqes = sample(strategies::cqe(), 4, 4);
    for (i, c) in cqes.iter().enumerate() {
        top.instance(&format!("CQE_{i}"), "cqe_t", &c.encode(), &cqe_checks(c), &members("cqe_t"));
    }
    for (i, q) in sample(strategies::qp_ctx(), 4, 5).iter().enumerate() {
        top.instance(&format!("QP_{i}"), "qp_ctx_t", &q.encode(), &qp_checks(q), &members("qp_ctx_t"));
    }
    for (i, c) in sample(strategies::cq_ctx(), 4, 6).iter().enumerate() {
        top.instance(&format!("CQ_{i}"), "cq_ctx_t", &c.encode(), &cq_checks(c), &members("cq_ctx_t"));
    }
    for (i, m) in sample(strategies::mr_ctx(), 4, 7).iter().enumerate() {
        top.instance(&format!("MR_{i}"), "mr_ctx_t", &m.encode(), &mr_checks(m), &members("mr_ctx_t"));
    }
    if plant {
        let c = &cqes[0];
        top.check("PLANTED_cqe_src_qp", "CQE_0.src_qp", &lit(24, &(c.src_qp ^ 1).to_le_bytes()));
    }

    // Use every localparam and struct type, so -Wall has nothing unused to report.
    let mut ports = Vec::new();
    let mut uses = Vec::new();
    for (pkg, text) in [("roce_regs_pkg", &regs_text), ("roce_desc_pkg", &desc_text)] {
        for p in localparams(text) {
            uses.push(format!("{pkg}::{p}"));
        }
    }
    for (i, (ty, _)) in structs.iter().enumerate() {
        ports.push(format!("  input  roce_desc_pkg::{ty} s{i}_i,"));
        uses.push(format!("s{i}_i"));
    }
    let mut o = String::new();
    let _ = writeln!(o, "// Written by firmware-model/tests/contract_hdl.rs: uses and checks the contract packages.");
    let _ = writeln!(o, "module contract_top (\n{}\n  output logic o\n);", ports.join("\n"));
    let _ = writeln!(o, "  assign o = ^{{\n    {}\n  }};\n", uses.join(",\n    "));
    o.push_str(&top.body);
    o.push_str("endmodule\n");
    (o, top.checks)
}

// ---- running the tools ------------------------------------------------------------------

fn run(cmd: &mut Command, what: &str) -> (bool, String) {
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run {what}: {e} (Debian: apt-get install {what})"));
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success() && !text.contains("%Warning"), text)
}

fn verilator(files: &[PathBuf], top: &str) -> (bool, String) {
    let mut c = Command::new("verilator");
    c.args(["--lint-only", "-Wall", "--top-module", top]).args(files);
    run(&mut c, "verilator")
}

fn yosys(files: &[PathBuf], top: &str) -> (bool, String) {
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let script = format!("read_verilog -sv {}; hierarchy -check -top {top}; proc; opt_clean", names.join(" "));
    let mut c = Command::new("yosys");
    c.args(["-q", "-p", &script]);
    run(&mut c, "yosys")
}

fn setup(test: &str, plant: bool) -> (Vec<PathBuf>, usize) {
    let dir = tmp_dir(test);
    let mut files = write_pkgs(&dir);
    let (top, checks) = top_sv(plant);
    let t = dir.join("contract_top.sv");
    std::fs::write(&t, top).unwrap();
    files.push(t);
    (files, checks)
}

#[test]
fn packages_lint_clean_and_match_the_contract_in_verilator() {
    let (files, checks) = setup("verilator", false);
    assert!(checks > 1000, "{checks} checks");
    let (ok, log) = verilator(&files, "contract_top");
    assert!(ok, "verilator --lint-only -Wall failed:\n{log}");
}

#[test]
fn packages_parse_and_match_the_contract_in_yosys() {
    let (files, _) = setup("yosys", false);
    let (ok, log) = yosys(&files, "contract_top");
    assert!(ok, "yosys failed:\n{log}");
    // The packages on their own, as the brief's one-liner.
    let (ok, log) = {
        let names: Vec<String> = files[..2].iter().map(|f| f.display().to_string()).collect();
        let mut c = Command::new("yosys");
        c.args(["-q", "-p", &format!("read_verilog -sv {}", names.join(" "))]);
        run(&mut c, "yosys")
    };
    assert!(ok, "yosys read_verilog -sv of the packages failed:\n{log}");
}

#[test]
fn a_planted_mismatch_fails_in_both_tools() {
    let (files, _) = setup("planted", true);
    let (ok, log) = verilator(&files, "contract_top");
    assert!(!ok && log.contains("CONTRACT_MISMATCH_PLANTED_cqe_src_qp"), "verilator did not catch it:\n{log}");
    assert!(!log.contains("CONTRACT_MISMATCH_CQE"), "only the planted check may fail:\n{log}");
    let (ok, log) = yosys(&files, "contract_top");
    assert!(!ok && log.contains("CONTRACT_MISMATCH_PLANTED_cqe_src_qp"), "yosys did not catch it:\n{log}");
}

#[test]
fn localparam_names_are_unique_per_package() {
    for text in [sv::regs_pkg(), sv::desc_pkg()] {
        let names = localparams(&text);
        let mut seen = std::collections::HashSet::new();
        for n in &names {
            assert!(seen.insert(n.clone()), "duplicate localparam {n}");
        }
        assert!(names.len() > 100);
    }
    let s = structs(&sv::desc_pkg());
    let names: Vec<&str> = s.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["sge_t", "sq_wqe_data_sge_t", "sq_wqe_t", "rq_wqe_t", "cqe_t", "qp_ctx_t", "cq_ctx_t", "mr_ctx_t"]
    );
}

#[test]
fn packages_use_only_the_common_subset() {
    // toolchain-notes.md: Yosys 0.23 rejects these; keep them out of generated code.
    for text in [sv::regs_pkg(), sv::desc_pkg()] {
        let code: String = text.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
        for bad in ["import ", "return", " inside ", "assert", "][", "union", "interface"] {
            assert!(!code.contains(bad), "generated SV contains `{bad}`");
        }
        assert!(text.lines().all(|l| l.len() <= 100 || !l.trim_start().starts_with("//")), "comment over 100 columns");
    }
}
