//! The built `libibverbs.so.1` exports exactly what Debian's does: every `name@VERSION`,
//! with the same default (`@@`) or compatibility (`@`) binding, and nothing else; a program
//! that asks for a versioned symbol with `dlvsym` (as NCCL does) gets ours, and an
//! IBVERBS_1.0 compatibility entry fails cleanly.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

#[test]
fn exports_every_symbol_version_of_debians_library() {
    let ours = dynamic_symbols(&libdir().join("libibverbs.so.1"));
    let debian = dynamic_symbols(Path::new(DEBIAN_LIB));
    assert!(debian.len() > 170, "only {} symbols in {DEBIAN_LIB}?", debian.len());
    let missing: Vec<_> = debian.iter().filter(|s| !ours.contains(s)).collect();
    let extra: Vec<_> = ours.iter().filter(|s| !debian.contains(s)).collect();
    assert!(missing.is_empty(), "missing from ours: {missing:?}");
    assert!(extra.is_empty(), "exported by ours only: {extra:?}");
    // and nothing else is exported (Rust's own symbols stay local)
    let out = Command::new("objdump").arg("-T").arg(libdir().join("libibverbs.so.1")).output().expect("objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    let unversioned: Vec<&str> =
        text.lines().filter(|l| l.contains(" DF ") && !l.contains("*UND*") && !l.contains("IBVERBS")).collect();
    assert!(unversioned.is_empty(), "exported without a version: {unversioned:?}");
}

#[test]
fn dlvsym_finds_each_version_and_old_abi_fails_cleanly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("dl.c");
    std::fs::write(
        &src,
        r#"
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
int main(int argc, char **argv) {
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) { printf("dlopen: %s\n", dlerror()); return 1; }
    const char *v11[] = {"ibv_get_device_list", "ibv_open_device", "ibv_reg_mr", "ibv_create_qp", "ibv_wc_status_str"};
    for (int i = 0; i < 5; i++)
        if (!dlvsym(h, v11[i], "IBVERBS_1.1")) { printf("no %s@IBVERBS_1.1\n", v11[i]); return 1; }
    if (!dlvsym(h, "ibv_reg_mr_iova2", "IBVERBS_1.8")) { printf("no ibv_reg_mr_iova2@IBVERBS_1.8\n"); return 1; }
    if (!dlvsym(h, "verbs_register_driver_34", "IBVERBS_PRIVATE_34")) { printf("no private\n"); return 1; }
    void *(*old)(int *) = (void *(*)(int *))dlvsym(h, "ibv_get_device_list", "IBVERBS_1.0");
    if (!old) { printf("no ibv_get_device_list@IBVERBS_1.0\n"); return 1; }
    if (old == dlvsym(h, "ibv_get_device_list", "IBVERBS_1.1")) { printf("1.0 is 1.1\n"); return 1; }
    errno = 0;
    int n = -1;
    void *l = old(&n);
    printf("old=%p errno=%d\n", l, errno);
    return l == NULL && errno == EOPNOTSUPP ? 0 : 1;
}
"#,
    )
    .expect("write dl.c");
    let exe = dir.path().join("dl");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let st = Command::new(cc).arg("-o").arg(&exe).arg(&src).arg("-ldl").status().expect("cc");
    assert!(st.success());
    let out = Command::new(&exe).arg(libdir().join("libibverbs.so.1")).output().expect("run dl");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("errno=95"), "{text}");
}
