//! roce-driver's VFIO backend against the kernel's real VFIO stack, in a QEMU VM (q35, TCG)
//! with an emulated Intel IOMMU and QEMU's `edu` device bound to vfio-pci. The VM runs
//! `tests/rxevm/vfio/probe` (see `roce_tests::vfio_vm`). Needs qemu-system-x86_64, busybox,
//! kmod, cpio and the Debian kernel package (cached); runs only with `ROCE_RXEVM=1`:
//!
//!     ROCE_RXEVM=1 cargo test -p roce-tests --test vfio_vm -- --nocapture

use std::time::Instant;

use roce_tests::rxevm;
use roce_tests::vfio_vm::{self, VfioVmOptions};

/// Build the probe and the image once per test process (both tests need them).
fn image() -> std::path::PathBuf {
    static IMG: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    IMG.get_or_init(|| {
        let t = Instant::now();
        let probe = vfio_vm::build_probe().expect("build tests/rxevm/vfio/probe");
        let t_probe = t.elapsed();
        let img = vfio_vm::build_image(&probe).expect("build the VFIO VM image");
        eprintln!(
            "vfio_vm: probe build {:.1}s, image {:.1}s ({})",
            t_probe.as_secs_f64(),
            (t.elapsed() - t_probe).as_secs_f64(),
            img.display()
        );
        img
    })
    .clone()
}

#[test]
fn vm_vfio_edu_bar_dma_and_msi() {
    if !rxevm::enabled() {
        return;
    }
    let t = Instant::now();
    let img = image();
    let r = vfio_vm::run(&img, &VfioVmOptions { cmd: "vfio-probe $EDU_ADDRS".into(), ..Default::default() })
        .expect("run the VFIO VM");
    eprintln!(
        "vfio_vm: VM ready after {:.1}s, VM total {:.1}s, test total {:.1}s\n{}",
        r.ready_after.map_or(f64::NAN, |d| d.as_secs_f64()),
        r.total.as_secs_f64(),
        t.elapsed().as_secs_f64(),
        r.stdout_of_cmd
    );
    let out = &r.stdout_of_cmd;
    assert_eq!(r.exit_code, 0, "vfio-probe failed:\n{out}\nqemu stderr:\n{}", r.qemu_stderr);
    for check in [
        "open",
        "bus-master",
        "id",
        "liveness",
        "bar-bounds",
        "dma-roundtrip",
        "iommu-guard",
        "msi-raise",
        "msi-dma-done",
        "dma-free",
        "use-after-free-refused",
        "device-open",
        "reopen-default-window",
    ] {
        assert!(out.lines().any(|l| l.starts_with(&format!("ok {check} "))), "check {check} missing:\n{out}");
    }
    assert!(out.contains("vfio-probe: all 13 checks passed"), "{out}");
    // the guard-page read really went through the emulated IOMMU and faulted there
    assert!(r.qemu_stderr.contains("vtd_iommu_translate: detected translation failure"), "{}", r.qemu_stderr);
}

#[test]
fn vm_vfio_without_iommu_fails_clearly() {
    if !rxevm::enabled() {
        return;
    }
    let img = image();
    let r = vfio_vm::run(
        &img,
        &VfioVmOptions { cmd: "vfio-probe $EDU_ADDRS; echo probe-rc=$?".into(), iommu: false, ..Default::default() },
    )
    .expect("run the VFIO VM");
    let out = &r.stdout_of_cmd;
    eprintln!("vfio_vm (no IOMMU): VM total {:.1}s\n{out}", r.total.as_secs_f64());
    assert!(out.contains("probe-rc=1"), "the probe must fail, not crash:\n{out}");
    assert!(
        out.contains("has no IOMMU group") && out.contains("intel_iommu=on"),
        "the error names the missing IOMMU:\n{out}"
    );
    assert!(!out.contains("panicked"), "{out}");
}
