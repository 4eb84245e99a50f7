//! VFIO backend without VFIO: PCI address parsing, sysfs look-ups against a fake tree in a
//! temporary folder, and the errors `VfioBackend::open` gives on a machine without
//! `/dev/vfio` (like this one and CI).
#![cfg(target_os = "linux")]

use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use roce_driver::vfio::{sysfs, LinuxVfio, PciAddr, VfioBackend, VfioConfig, VfioError};
use roce_driver::DriverError;

fn addr(s: &str) -> PciAddr {
    s.parse().unwrap()
}

#[test]
fn pci_addresses_parse_and_print_canonically() {
    let a = addr("0000:03:00.0");
    assert_eq!((a.domain, a.bus, a.device, a.function), (0, 3, 0, 0));
    assert_eq!(a.to_string(), "0000:03:00.0");
    assert_eq!(addr("03:1f.7").to_string(), "0000:03:1f.7", "short form is domain 0");
    assert_eq!(addr("ABCD:EF:1F.7").to_string(), "abcd:ef:1f.7", "either case");
    for bad in [
        "",
        "0000:03:00",
        "0000:03:20.0",
        "0000:03:00.8",
        "00000:03:00.0",
        "0000:003:00.0",
        "0000:03:00.0.0",
        "x000:03:00.0",
        "0000:03:00.-1",
        "0000::00.0",
        "1:2:3:4.0",
        "0000:03:00.0 ",
    ] {
        match bad.parse::<PciAddr>() {
            Err(VfioError::BadPciAddress(s)) => assert_eq!(s, bad),
            other => panic!("{bad:?} parsed as {other:?}"),
        }
    }
}

/// One device of a fake sysfs: (address, vendor, device, IOMMU group, bound driver).
type FakeDev<'a> = (&'a str, u16, u16, Option<&'a str>, Option<&'a str>);

/// A fake `/sys` holding `devices`.
fn fake_sysfs(root: &Path, devices: &[FakeDev<'_>]) {
    let devs = root.join("bus/pci/devices");
    fs::create_dir_all(&devs).unwrap();
    fs::create_dir_all(root.join("kernel/iommu_groups")).unwrap();
    fs::create_dir_all(root.join("bus/pci/drivers")).unwrap();
    for (a, v, d, group, driver) in devices {
        // real sysfs: devices/<addr> is a link into /sys/devices/pci0000:00/...
        let real = root.join("devices/pci0000:00").join(a);
        fs::create_dir_all(&real).unwrap();
        fs::write(real.join("vendor"), format!("{v:#06x}\n")).unwrap();
        fs::write(real.join("device"), format!("{d:#06x}\n")).unwrap();
        if let Some(g) = group {
            fs::create_dir_all(root.join("kernel/iommu_groups").join(g)).unwrap();
            symlink(format!("../../../kernel/iommu_groups/{g}"), real.join("iommu_group")).unwrap();
        }
        if let Some(drv) = driver {
            fs::create_dir_all(root.join("bus/pci/drivers").join(drv)).unwrap();
            symlink(format!("../../../bus/pci/drivers/{drv}"), real.join("driver")).unwrap();
        }
        symlink(format!("../../../devices/pci0000:00/{a}"), devs.join(a)).unwrap();
    }
}

#[test]
fn iommu_group_and_driver_from_sysfs() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path();
    fake_sysfs(
        root,
        &[
            ("0000:03:00.0", 0x1234, 0x11e8, Some("7"), Some("vfio-pci")),
            ("0000:04:00.0", 0x8086, 0x10d3, Some("12"), Some("e1000e")),
            ("0000:05:00.0", 0x1234, 0x11e8, None, None),
            ("0000:06:00.0", 0x1234, 0x11e8, Some("not-a-number"), None),
        ],
    );
    assert_eq!(sysfs::iommu_group(root, &addr("0000:03:00.0")).unwrap(), 7);
    assert_eq!(sysfs::iommu_group(root, &addr("04:00.0")).unwrap(), 12);
    assert_eq!(sysfs::bound_driver(root, &addr("0000:03:00.0")).unwrap().as_deref(), Some("vfio-pci"));
    assert_eq!(sysfs::bound_driver(root, &addr("0000:04:00.0")).unwrap().as_deref(), Some("e1000e"));
    assert_eq!(sysfs::bound_driver(root, &addr("0000:05:00.0")).unwrap(), None);

    let e = sysfs::iommu_group(root, &addr("0000:05:00.0")).unwrap_err();
    assert!(matches!(e, VfioError::NoIommuGroup { .. }), "{e:?}");
    assert!(e.is_unavailable());
    assert!(e.to_string().contains("intel_iommu=on"), "{e}");
    let e = sysfs::iommu_group(root, &addr("0000:06:00.0")).unwrap_err();
    assert!(matches!(e, VfioError::BadIommuGroup { .. }), "{e:?}");
    let e = sysfs::iommu_group(root, &addr("0000:07:00.0")).unwrap_err();
    assert!(matches!(e, VfioError::NoDevice { .. }) && e.is_unavailable(), "{e:?}");

    fs::create_dir_all(root.join("bus/pci/devices/not-an-address")).unwrap();
    let edu = sysfs::find_devices(root, 0x1234, 0x11e8).unwrap();
    assert_eq!(edu, vec![addr("0000:03:00.0"), addr("0000:05:00.0"), addr("0000:06:00.0")]);
    assert_eq!(sysfs::find_devices(root, 0x8086, 0x10d3).unwrap(), vec![addr("0000:04:00.0")]);
    assert!(sysfs::find_devices(root, 0xdead, 0xbeef).unwrap().is_empty());
    assert!(matches!(sysfs::find_devices(&root.join("nope"), 1, 2), Err(VfioError::Sysfs(..))));
}

fn vfio_err(r: Result<VfioBackend, DriverError>) -> VfioError {
    match r {
        Err(DriverError::Vfio(e)) => e,
        Err(e) => panic!("not a VFIO error: {e:?}"),
        Ok(_) => panic!("opened a VFIO device on a machine without one"),
    }
}

#[test]
fn open_checks_sysfs_before_touching_dev_vfio() {
    let t = tempfile::tempdir().unwrap();
    fake_sysfs(
        t.path(),
        &[
            ("0000:04:00.0", 0x8086, 0x10d3, Some("12"), Some("e1000e")),
            ("0000:05:00.0", 0x1234, 0x11e8, Some("13"), None),
        ],
    );
    let cfg = VfioConfig { sysfs_root: t.path().to_path_buf(), ..VfioConfig::default() };
    let e = vfio_err(VfioBackend::open_with_config("0000:04:00.0", cfg.clone()));
    match &e {
        VfioError::NotBoundToVfio { driver, .. } => assert_eq!(driver.as_deref(), Some("e1000e")),
        other => panic!("{other:?}"),
    }
    assert!(e.to_string().contains("driver_override"), "the message says how to bind: {e}");
    let e = vfio_err(VfioBackend::open_with_config("0000:05:00.0", cfg.clone()));
    assert!(matches!(e, VfioError::NotBoundToVfio { driver: None, .. }), "{e:?}");
    let e = vfio_err(VfioBackend::open_with_config("0000:09:00.0", cfg.clone()));
    assert!(matches!(e, VfioError::NoDevice { .. }), "{e:?}");
    let e = vfio_err(VfioBackend::open_with_config("bogus", cfg));
    assert!(matches!(e, VfioError::BadPciAddress(_)), "{e:?}");
}

#[test]
fn without_dev_vfio_open_fails_with_a_clear_error() {
    // A device that sysfs shows bound to vfio-pci, but no VFIO device nodes.
    let t = tempfile::tempdir().unwrap();
    fake_sysfs(t.path(), &[("0000:03:00.0", 0x1234, 0x11e8, Some("7"), Some("vfio-pci"))]);
    let cfg = VfioConfig { sysfs_root: t.path().to_path_buf(), ..VfioConfig::default() };
    if !Path::new("/dev/vfio").exists() {
        let e = vfio_err(VfioBackend::open_with_config("0000:03:00.0", cfg.clone()));
        assert!(matches!(&e, VfioError::OpenContainer(io, _) if io.kind() == std::io::ErrorKind::NotFound), "{e:?}");
        assert!(e.is_unavailable());
        let msg = DriverError::from(e).to_string();
        assert!(msg.contains("/dev/vfio/vfio") && msg.contains("IOMMU"), "{msg}");
    }
    // The same with the device nodes looked for in an empty folder, whatever the machine.
    let dir = t.path().join("dev-vfio");
    let r = VfioBackend::with_sys(LinuxVfio::with_dir(&dir), "0000:03:00.0", 7, cfg.clone());
    let e = match r {
        Err(DriverError::Vfio(e)) => e,
        other => panic!("{other:?}"),
    };
    assert!(matches!(&e, VfioError::OpenContainer(_, p) if p == &dir.join("vfio")), "{e:?}");
    // A container that exists but is not a VFIO container: the first ioctl fails cleanly.
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("vfio"), b"").unwrap();
    let e = match VfioBackend::with_sys(LinuxVfio::with_dir(&dir), "0000:03:00.0", 7, cfg) {
        Err(DriverError::Vfio(e)) => e,
        other => panic!("{other:?}"),
    };
    assert!(matches!(e, VfioError::Container("VFIO_GET_API_VERSION", _)), "{e:?}");
}

#[test]
fn real_sysfs_lookup_does_not_panic() {
    // Whatever this machine has at that address, opening it must be an error, not a panic
    // (there is no /dev/vfio here; on a machine with VFIO this may find a real device).
    if Path::new("/dev/vfio/vfio").exists() {
        return;
    }
    let e = vfio_err(VfioBackend::open("0000:03:00.0"));
    assert!(!e.to_string().is_empty());
}
