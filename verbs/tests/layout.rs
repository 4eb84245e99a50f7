//! The generated C types (`src/sys.rs`) against the installed libibverbs-dev headers: a C
//! program compiled against `<infiniband/verbs.h>` (and the kernel ABI headers) prints the
//! size and alignment of every struct and union of `sys` with a C name, and the offset and
//! size of each of their fields (through nested anonymous unions by their C member paths);
//! each must equal the Rust value. `build.rs` derives the list from `src/sys.rs` itself, so a
//! field added, removed or moved in either shows up here.

use std::process::Command;

use roce_verbs::sys;

include!(concat!(env!("OUT_DIR"), "/layout_table.rs"));

#[test]
fn sys_matches_the_installed_headers() {
    let table = layout_table();
    assert!(table.len() > 1000, "only {} checks: the generator missed the structs", table.len());
    for name in
        ["struct ibv_wc", "struct ibv_send_wr", "struct verbs_context", "struct ibv_qp_attr", "struct ibv_port_attr"]
    {
        assert!(table.iter().any(|(c, _)| c.contains(name)), "{name} is not checked");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let mut src = String::from(
        "#include <stdio.h>\n#include <stddef.h>\n#include <infiniband/verbs.h>\n#include <infiniband/sa.h>\n\
         #include <rdma/ib_user_verbs.h>\n#include <rdma/ib_user_sa.h>\nint main(void) {\n",
    );
    for (c, _) in &table {
        src.push_str(&format!("  printf(\"%zu\\n\", (size_t)({c}));\n"));
    }
    src.push_str("  return 0;\n}\n");
    let c = dir.path().join("layout.c");
    let exe = dir.path().join("layout");
    std::fs::write(&c, src).expect("write layout.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let out = Command::new(&cc).arg("-o").arg(&exe).arg(&c).output().expect("run the C compiler");
    assert!(
        out.status.success(),
        "compiling against the headers failed (apt-get install libibverbs-dev):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(&exe).output().expect("run the layout program");
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let c_values: Vec<usize> = text.lines().map(|l| l.parse().expect("a number")).collect();
    assert_eq!(c_values.len(), table.len());
    let bad: Vec<String> = table
        .iter()
        .zip(&c_values)
        .filter(|((_, r), c)| r != *c)
        .map(|((e, r), c)| format!("{e}: C {c}, Rust {r}"))
        .collect();
    assert!(bad.is_empty(), "{} of {} layout values differ:\n{}", bad.len(), table.len(), bad.join("\n"));
}
