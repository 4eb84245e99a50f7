//! The VFIO backend's logic against the fake system layer (`vfio::fake::FakeVfio`): open
//! sequence and its errors, BAR0 bounds, DMA buffers and their IOMMU mappings, MSI through
//! an eventfd, and teardown. No kernel VFIO needed.
#![cfg(target_os = "linux")]

use std::time::{Duration, Instant};

use roce_driver::vfio::fake::{FakeOp, FakeVfio};
use roce_driver::vfio::{VfioBackend, VfioConfig, VfioError, VfioStats};
use roce_driver::{Backend, Device, DriverError};
use roce_model::contract::regs;
use vfio_bindings::bindings::vfio::VFIO_TYPE1v2_IOMMU;

const ADDR: &str = "0000:03:00.0";
const GROUP: u32 = 7;
const BAR: usize = regs::BAR0_BYTES as usize;

fn fake() -> FakeVfio {
    FakeVfio::new(GROUP, ADDR, BAR)
}

fn cfg() -> VfioConfig {
    VfioConfig::default()
}

fn open(f: &FakeVfio) -> VfioBackend<FakeVfio> {
    VfioBackend::with_sys(f.clone(), ADDR, GROUP, cfg()).expect("open on the fake")
}

fn open_err(f: &FakeVfio, c: VfioConfig) -> VfioError {
    match VfioBackend::with_sys(f.clone(), ADDR, GROUP, c) {
        Err(DriverError::Vfio(e)) => e,
        Err(e) => panic!("not a VFIO error: {e:?}"),
        Ok(_) => panic!("open succeeded"),
    }
}

#[test]
fn backends_can_move_between_threads() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<VfioBackend>();
    send_sync::<VfioBackend<FakeVfio>>();
}

#[test]
fn open_sets_up_container_group_device_and_bus_mastering() {
    let f = fake();
    let b = open(&f);
    {
        let s = f.state();
        assert_eq!(s.iommu_set, Some(VFIO_TYPE1v2_IOMMU));
        assert!(s.container_attached);
        assert_eq!(s.open_handles, 3, "container, group, device");
        let cmd = u16::from_le_bytes([s.config[4], s.config[5]]);
        assert_eq!(cmd & 0x6, 0x6, "memory space + bus master enabled");
    }
    assert_eq!(b.pci_addr().to_string(), ADDR);
    assert_eq!(b.iommu_group(), GROUP);
    assert_eq!(b.bar0_info().size, BAR as u64);
    let mut id = [0u8; 4];
    b.config_read(0, &mut id).unwrap();
    assert_eq!(u32::from_le_bytes(id), 0x11e8_1234);
    assert!(b.config_read(255, &mut [0u8; 2]).is_err(), "config space is bounds checked");
    drop(b);
    let s = f.state();
    assert_eq!(s.open_handles, 0, "everything closed on drop");
    assert!(!s.container_attached);
}

#[test]
fn registers_are_32_bit_and_bounds_checked() {
    let f = fake();
    let mut b = open(&f);
    f.set_reg(0, 0x010000ed);
    assert_eq!(b.read32(0), 0x010000ed);
    b.write32(0x1000, 0xdead_beef);
    assert_eq!(f.reg(0x1000), 0xdead_beef);
    let last = (BAR - 4) as u32;
    b.write32(last, 7);
    assert_eq!(b.read32(last), 7);
    assert_eq!(b.stats(), VfioStats::default());

    // outside BAR0 or misaligned: all-ones, write dropped, counted, no panic
    for off in [BAR as u32, BAR as u32 - 2, 2, 0x1001, u32::MAX, u32::MAX - 3] {
        assert_eq!(b.read32(off), u32::MAX, "read at {off:#x}");
        b.write32(off, 1);
    }
    assert_eq!(b.stats().bad_mmio, 12);
    assert_eq!(f.reg(0), 0x010000ed, "misaligned write at 2 did not touch word 0");
}

#[test]
fn the_driver_opens_an_engine_behind_the_fake() {
    let f = fake();
    f.set_reg(regs::ID as usize, regs::ID_VALUE);
    f.set_reg(regs::VERSION as usize, regs::VERSION_MAJOR << 16 | regs::VERSION_MINOR);
    f.set_reg(regs::STATUS as usize, regs::status::READY.mask());
    f.set_reg(regs::CAPS as usize, 8);
    let mut dev = Device::open(open(&f)).expect("Device::open through VfioBackend");
    assert_eq!(dev.max_qps(), 256);
    assert!(regs::ctrl::SOFT_RESET.is_set(f.reg(regs::CTRL as usize)), "soft reset written to BAR0");
    assert_eq!(dev.backend().stats(), VfioStats::default());

    let g = fake();
    let e = Device::open(open(&g)).unwrap_err();
    assert!(matches!(e, DriverError::NotEngine(0)), "{e:?}");
}

#[test]
fn dma_buffers_are_mapped_zeroed_and_bounds_checked() {
    let f = fake();
    let mut b = open(&f);
    let a = b.dma_alloc(100).unwrap();
    let c = b.dma_alloc(3 * 4096).unwrap();
    assert_eq!(a.iova, 0x1_0000_0000, "first IOVA is the window base");
    assert_eq!(a.len, 100);
    assert_eq!(c.iova, a.iova + 2 * 4096, "one page + a guard page");
    assert_ne!(a.id, c.id);
    {
        let s = f.state();
        assert_eq!(s.map_log, vec![(a.iova, 4096), (c.iova, 3 * 4096)]);
        let (sz, vaddr) = s.maps[&c.iova];
        assert_eq!(sz, 3 * 4096);
        assert_eq!(vaddr % 4096, 0, "page-aligned host memory");
    }

    let mut z = vec![0xffu8; 100];
    b.mem_read(&a, 0, &mut z);
    assert!(z.iter().all(|&x| x == 0), "new buffers are zeroed");
    let data: Vec<u8> = (0..=255u8).cycle().take(3 * 4096 - 5).collect();
    b.mem_write(&c, 5, &data);
    let mut back = vec![0u8; data.len()];
    b.mem_read(&c, 5, &mut back);
    assert_eq!(back, data);
    b.mem_write(&a, 96, &[1, 2, 3, 4]);
    let mut four = [0u8; 4];
    b.mem_read(&a, 96, &mut four);
    assert_eq!(four, [1, 2, 3, 4]);
    assert_eq!(b.stats(), VfioStats::default());

    // beyond the buffer's length (even inside its page), overflowing offsets, forged buffers
    b.mem_write(&a, 97, &[9; 4]);
    b.mem_write(&a, usize::MAX, &[9]);
    let mut out = [0xaau8; 8];
    b.mem_read(&a, 100, &mut out[..1]);
    assert_eq!(out[0], 0, "a refused read fills with zeros");
    let forged = roce_driver::DmaBuf { iova: a.iova, len: 4096, id: a.id };
    b.mem_read(&forged, 200, &mut out);
    let other = roce_driver::DmaBuf { iova: 0x1234_0000, len: 8, id: 999 };
    b.mem_write(&other, 0, &[1]);
    assert_eq!(b.stats().bad_mem, 5);
    b.mem_read(&a, 96, &mut four);
    assert_eq!(four, [1, 2, 3, 4], "refused writes changed nothing");

    b.dma_free(a);
    assert_eq!(f.state().unmap_log, vec![(a.iova, 4096)]);
    b.mem_read(&a, 0, &mut four);
    b.dma_free(a);
    assert_eq!(b.stats().bad_mem, 7, "use after free and double free are refused");
    assert_eq!(b.dma_buffers(), 1);
    let again = b.dma_alloc(4096).unwrap();
    assert_eq!(again.iova, a.iova, "freed IOVA space is reused");
    assert_ne!(again.id, a.id, "ids are never reused");
    b.mem_read(&again, 0, &mut four);
    assert_eq!(four, [0; 4], "reused IOVA, fresh zeroed memory");

    drop(b);
    let s = f.state();
    assert!(s.maps.is_empty(), "drop unmapped every buffer: {:?}", s.maps);
    assert_eq!(s.unmap_log.len(), 3);
    assert_eq!(s.open_handles, 0);
}

#[test]
fn iova_window_is_configurable_and_exhaustion_is_an_error() {
    let f = fake();
    let c = VfioConfig { iova_base: 0x10_0000, iova_limit: 0x10_0000 + 4 * 4096, guard_bytes: 0, ..cfg() };
    let mut b = VfioBackend::with_sys(f.clone(), ADDR, GROUP, c).unwrap();
    let x = b.dma_alloc(2 * 4096).unwrap();
    assert_eq!(x.iova, 0x10_0000);
    let y = b.dma_alloc(2 * 4096).unwrap();
    assert_eq!(y.iova, 0x10_2000, "no guard gap when guard_bytes = 0");
    match b.dma_alloc(1) {
        Err(DriverError::Vfio(VfioError::IovaExhausted { len: 1, base: 0x10_0000, .. })) => {}
        other => panic!("{other:?}"),
    }
    b.dma_free(x);
    assert!(b.dma_alloc(2 * 4096).is_ok());

    for bad in [
        VfioConfig { iova_base: 0, ..cfg() },
        VfioConfig { iova_base: 0x1001, ..cfg() },
        VfioConfig { iova_base: 0x2000, iova_limit: 0x2000, ..cfg() },
    ] {
        assert!(matches!(open_err(&f, bad), VfioError::Config(_)));
    }
}

#[test]
fn dma_map_failure_releases_the_iova() {
    let f = fake();
    let mut b = open(&f);
    f.fail(FakeOp::DmaMap);
    match b.dma_alloc(4096) {
        Err(DriverError::Vfio(e @ VfioError::DmaMap { .. })) => {
            assert!(e.to_string().contains("VFIO_IOMMU_MAP_DMA"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(b.dma_buffers(), 0);
    f.state().fail.clear();
    assert_eq!(b.dma_alloc(4096).unwrap().iova, 0x1_0000_0000, "the failed IOVA went back");
}

#[test]
fn unmap_failure_is_counted_and_the_iova_never_reused() {
    let f = fake();
    let mut b = open(&f);
    let a = b.dma_alloc(4096).unwrap();
    f.fail(FakeOp::DmaUnmap);
    b.dma_free(a);
    assert_eq!(b.stats().unmap_failures, 1);
    assert_eq!(b.dma_buffers(), 0);
    f.state().fail.clear();
    let n = b.dma_alloc(4096).unwrap();
    assert_ne!(n.iova, a.iova, "a range the device may still reach is not handed out again");
}

#[test]
fn open_errors_are_typed_and_leak_nothing() {
    type Setup = fn(&FakeVfio);
    type Check = fn(&VfioError) -> bool;
    let cases: Vec<(&str, Setup, Check)> = vec![
        (
            "no container",
            |f| {
                f.fail(FakeOp::OpenContainer);
            },
            |e| matches!(e, VfioError::OpenContainer(..)) && e.is_unavailable(),
        ),
        ("api version", |f| f.state().api_version = 1, |e| matches!(e, VfioError::ApiVersion(1))),
        ("no type1v2", |f| f.state().type1v2 = false, |e| matches!(e, VfioError::NoType1v2)),
        (
            "no group",
            |f| {
                f.fail(FakeOp::OpenGroup);
            },
            |e| matches!(e, VfioError::OpenGroup(_, p) if p.ends_with("7")) && e.is_unavailable(),
        ),
        ("other group", |f| f.state().group = 8, |e| matches!(e, VfioError::OpenGroup(..))),
        ("not viable", |f| f.state().group_flags = 0, |e| matches!(e, VfioError::GroupNotViable(7))),
        (
            "busy",
            |f| {
                f.fail(FakeOp::SetContainer);
            },
            |e| matches!(e, VfioError::Group(7, "VFIO_GROUP_SET_CONTAINER", io) if io.raw_os_error() == Some(libc::EBUSY)),
        ),
        (
            "set iommu",
            |f| {
                f.fail(FakeOp::SetIommu);
            },
            |e| matches!(e, VfioError::Container(..)),
        ),
        (
            "no device",
            |f| {
                f.fail(FakeOp::GetDevice);
            },
            |e| matches!(e, VfioError::GetDevice(..)),
        ),
        (
            "wrong device",
            |f| f.state().device_name = "0000:04:00.0".into(),
            |e| matches!(e, VfioError::GetDevice(n, _) if n == ADDR),
        ),
        (
            "small bar",
            |f| f.state().bar0_info.size = 4096,
            |e| matches!(e, VfioError::Bar0TooSmall { size: 4096, need: 65536, .. }),
        ),
        ("no bar", |f| f.state().bar0_info.size = 0, |e| matches!(e, VfioError::Bar0NotMappable { .. })),
        (
            "bar not mmap",
            |f| f.state().bar0_info.flags = 3,
            |e| matches!(e, VfioError::Bar0NotMappable { flags: 3, .. }),
        ),
        (
            "mmap fails",
            |f| {
                f.fail(FakeOp::MapRegion);
            },
            |e| matches!(e, VfioError::Device(_, "mmap(BAR0)", _)),
        ),
    ];
    for (what, setup, check) in cases {
        let f = fake();
        setup(&f);
        let e = open_err(&f, cfg());
        assert!(check(&e), "{what}: {e:?}");
        assert!(!e.to_string().is_empty());
        let s = f.state();
        assert_eq!(s.open_handles, 0, "{what}: handles leaked");
    }
    assert!(matches!(
        open_err(&fake(), VfioConfig { min_bar0_bytes: 1 << 20, ..cfg() }),
        VfioError::Bar0TooSmall { .. }
    ));
    let e = match VfioBackend::with_sys(fake(), "03:00", GROUP, cfg()) {
        Err(DriverError::Vfio(e)) => e,
        other => panic!("{other:?}"),
    };
    assert!(matches!(e, VfioError::BadPciAddress(_)));
    // the short form names the same device
    assert!(VfioBackend::with_sys(fake(), "03:00.0", GROUP, cfg()).is_ok());
}

#[test]
fn msi_through_an_eventfd() {
    let f = fake();
    let mut b = open(&f);
    assert!(matches!(b.wait_irq(Duration::ZERO), Err(DriverError::Vfio(VfioError::IrqNotEnabled))));
    assert!(b.irq_eventfd().is_none());
    b.enable_msi_eventfd().unwrap();
    assert!(b.irq_eventfd().is_some());
    let t = Instant::now();
    assert_eq!(b.wait_irq(Duration::from_millis(20)).unwrap(), None);
    assert!(t.elapsed() >= Duration::from_millis(20));
    assert!(f.fire_msi());
    assert!(f.fire_msi());
    assert_eq!(b.wait_irq(Duration::from_secs(5)).unwrap(), Some(2), "two interrupts since the last wait");
    // an interrupt from another thread wakes a waiter
    let g = f.clone();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        g.fire_msi()
    });
    assert_eq!(b.wait_irq(Duration::from_secs(5)).unwrap(), Some(1));
    assert!(h.join().unwrap());
    b.disable_msi().unwrap();
    assert!(f.state().msi_eventfd.is_none());
    assert!(!f.fire_msi());

    let n = fake();
    n.state().msi_count = 0;
    let mut nb = open(&n);
    assert!(matches!(nb.enable_msi_eventfd(), Err(DriverError::Vfio(VfioError::NoMsi(_)))));
    let s = fake();
    let mut sb = open(&s);
    s.fail(FakeOp::SetIrqs);
    assert!(matches!(sb.enable_msi_eventfd(), Err(DriverError::Vfio(VfioError::Device(_, _, _)))));
    assert!(sb.irq_eventfd().is_none());
}
