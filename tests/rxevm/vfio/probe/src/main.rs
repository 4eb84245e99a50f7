//! vfio-probe: drives QEMU's `edu` PCI device (1234:11e8) through roce-driver's VFIO backend
//! inside the VFIO test VM (tests/rxevm/vfio/build-image.sh, tests/tests/vfio_vm.rs).
//!
//! Usage: `vfio-probe [PCI_ADDR]` (default: the first edu device in sysfs). Prints one line
//! per check (`ok NAME ...` / `FAIL NAME: ...`), then `vfio-probe: all N checks passed` and
//! exits 0, or `vfio-probe: K of N checks FAILED` and exits 1.
//!
//! edu (QEMU docs/specs/edu.rst): BAR0 is 1 MiB; 0x00 ID = 0x010000ed; 0x04 liveness (reads
//! back the bitwise inverse); 0x24 IRQ status, 0x60 raise, 0x64 acknowledge; DMA: 0x80 source,
//! 0x88 destination, 0x90 count, 0x98 command (1 start, 2 device->RAM, 4 IRQ 0x100 when done);
//! a 4 KiB buffer inside the device at 0x40000. Its DMA addresses are masked to 28 bits and a
//! 32-bit write of 0x80/0x88 sets the whole address, so the IOVA window is kept below 256 MiB.
//! QEMU 7.2's edu aborts QEMU ("hw_error: DMA range ... out of bounds") on a transfer that
//! ends exactly at the end of its buffer (an off-by-one fixed later), so transfers stay short
//! of 4096 bytes.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use roce_driver::vfio::{sysfs, VfioBackend, VfioConfig};
use roce_driver::{Backend, Device, DriverError};

const EDU_ID: u32 = 0x00;
const EDU_LIVE: u32 = 0x04;
const EDU_IRQ_STATUS: u32 = 0x24;
const EDU_IRQ_RAISE: u32 = 0x60;
const EDU_IRQ_ACK: u32 = 0x64;
const EDU_DMA_SRC: u32 = 0x80;
const EDU_DMA_DST: u32 = 0x88;
const EDU_DMA_CNT: u32 = 0x90;
const EDU_DMA_CMD: u32 = 0x98;
const EDU_BUF: u32 = 0x40000;
const DMA_START: u32 = 1;
const DMA_TO_RAM: u32 = 2;
const DMA_IRQ: u32 = 4;
const DMA_IRQ_BIT: u32 = 0x100;
/// Round-trip size: below 4096, see the module documentation.
const XFER: usize = 4000;

struct Checks {
    n: usize,
    failed: Vec<String>,
    t0: Instant,
}

impl Checks {
    fn check(&mut self, name: &str, ok: bool, detail: impl AsRef<str>) {
        self.n += 1;
        let at = self.t0.elapsed().as_secs_f64();
        if ok {
            println!("ok {name} {} [{at:.2}s]", detail.as_ref());
        } else {
            println!("FAIL {name}: {} [{at:.2}s]", detail.as_ref());
            self.failed.push(name.to_string());
        }
    }
}

fn edu_config() -> VfioConfig {
    VfioConfig { iova_base: 0x10_0000, iova_limit: 1 << 28, ..VfioConfig::default() }
}

/// Start an edu DMA and wait (polling the command register) until it is done.
fn edu_dma(b: &mut VfioBackend, src: u64, dst: u64, count: u32, cmd: u32) -> Result<Duration, String> {
    let (s, d) = (u32::try_from(src).map_err(|_| "src > 4 GiB")?, u32::try_from(dst).map_err(|_| "dst > 4 GiB")?);
    b.write32(EDU_DMA_SRC, s);
    b.write32(EDU_DMA_DST, d);
    b.write32(EDU_DMA_CNT, count);
    let t = Instant::now();
    b.write32(EDU_DMA_CMD, cmd | DMA_START);
    while b.read32(EDU_DMA_CMD) & DMA_START != 0 {
        if t.elapsed() > Duration::from_secs(10) {
            return Err(format!("DMA {src:#x} -> {dst:#x} still running after 10 s"));
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Ok(t.elapsed())
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed) ^ (i >> 8) as u8).collect()
}

fn run(addr: &str, c: &mut Checks) -> Result<(), DriverError> {
    let mut b = VfioBackend::open_with_config(addr, edu_config())?;
    let bar = b.bar0_info();
    c.check(
        "open",
        true,
        format!(
            "{addr}: group {}, BAR0 {} KiB at fd offset {:#x}, flags {:#x}",
            b.iommu_group(),
            bar.size >> 10,
            bar.offset,
            bar.flags
        ),
    );
    let mut cmd = [0u8; 2];
    b.config_read(4, &mut cmd)?;
    let cmd = u16::from_le_bytes(cmd);
    c.check("bus-master", cmd & 0x6 == 0x6, format!("PCI_COMMAND {cmd:#06x}"));

    let id = b.read32(EDU_ID);
    c.check("id", id == 0x010000ed, format!("BAR0[0x00] = {id:#010x}"));
    let mut live_ok = true;
    for v in [0x1234_5678u32, 0, 0xffff_ffff, 0xa5a5_0f0f] {
        b.write32(EDU_LIVE, v);
        let r = b.read32(EDU_LIVE);
        live_ok &= r == !v;
        if r != !v {
            println!("  liveness: wrote {v:#010x}, read {r:#010x}");
        }
    }
    c.check("liveness", live_ok, "BAR0[0x04] reads back the inverse of 4 values");
    let beyond = b.read32(bar.size as u32);
    let st = b.stats();
    c.check(
        "bar-bounds",
        beyond == u32::MAX && st.bad_mmio == 1,
        format!("read at BAR0 end = {beyond:#x}, bad_mmio {}", st.bad_mmio),
    );

    // DMA round trip: host buffer -> edu buffer -> another host buffer, through the IOMMU.
    let src = b.dma_alloc(4096)?;
    let dst = b.dma_alloc(8192)?;
    let pat = pattern(XFER, 0x5a);
    b.mem_write(&src, 0, &pat);
    let t1 = edu_dma(&mut b, src.iova, EDU_BUF.into(), XFER as u32, 0).map_err(DriverError::Invalid)?;
    let back_off = 0x100usize;
    let t2 = edu_dma(&mut b, EDU_BUF.into(), dst.iova + back_off as u64, XFER as u32, DMA_TO_RAM)
        .map_err(DriverError::Invalid)?;
    let mut got = vec![0u8; XFER];
    b.mem_read(&dst, back_off, &mut got);
    let mut head = [0xeeu8; 0x100];
    b.mem_read(&dst, 0, &mut head);
    let mismatch = got.iter().zip(&pat).position(|(a, b)| a != b);
    c.check(
        "dma-roundtrip",
        mismatch.is_none() && head.iter().all(|&x| x == 0),
        format!(
            "{XFER} B iova {:#x} -> edu 0x40000 ({:.0} ms) -> iova {:#x} ({:.0} ms); first mismatch {mismatch:?}",
            src.iova,
            t1.as_secs_f64() * 1e3,
            dst.iova + back_off as u64,
            t2.as_secs_f64() * 1e3
        ),
    );

    // The IOMMU enforces the mappings: the guard page after `src` is not mapped, so a device
    // read from it does not return host memory (QEMU's edu gets zeros on the fault).
    let guard = src.iova + 4096;
    edu_dma(&mut b, guard, EDU_BUF.into(), 64, 0).map_err(DriverError::Invalid)?;
    edu_dma(&mut b, EDU_BUF.into(), dst.iova + 0x1800, 64, DMA_TO_RAM).map_err(DriverError::Invalid)?;
    let mut g = [0u8; 64];
    b.mem_read(&dst, 0x1800, &mut g);
    c.check("iommu-guard", g != pat[..64], format!("device read of unmapped iova {guard:#x} gave {:02x?}...", &g[..8]));

    // MSI through an eventfd.
    match b.enable_msi_eventfd() {
        Ok(()) => {
            let none = b.wait_irq(Duration::from_millis(50))?;
            b.write32(EDU_IRQ_RAISE, 0x1);
            let got = b.wait_irq(Duration::from_secs(5))?;
            let status = b.read32(EDU_IRQ_STATUS);
            b.write32(EDU_IRQ_ACK, status);
            c.check(
                "msi-raise",
                none.is_none() && got.is_some() && status == 1,
                format!("before {none:?}, after raise {got:?}, IRQ status {status:#x}"),
            );
            b.mem_write(&src, 0, &pattern(4096, 0x11));
            let t = Instant::now();
            edu_dma(&mut b, src.iova, EDU_BUF.into(), 512, DMA_IRQ).map_err(DriverError::Invalid)?;
            let got = b.wait_irq(Duration::from_secs(5))?;
            let status = b.read32(EDU_IRQ_STATUS);
            b.write32(EDU_IRQ_ACK, status);
            c.check(
                "msi-dma-done",
                got.is_some() && status == DMA_IRQ_BIT,
                format!("{got:?} after {:.0} ms, IRQ status {status:#x}", t.elapsed().as_secs_f64() * 1e3),
            );
            b.disable_msi()?;
        }
        Err(e) => c.check("msi-raise", false, e.to_string()),
    }

    // Freeing a buffer unmaps it: the device can no longer reach it.
    b.dma_free(dst);
    let st = b.stats();
    c.check("dma-free", st.unmap_failures == 0 && b.dma_buffers() == 1, format!("{st:?}"));
    let mut z = [0u8; 4];
    b.mem_read(&dst, 0, &mut z);
    c.check("use-after-free-refused", b.stats().bad_mem == 1, "mem_read of a freed DmaBuf is refused");

    // The whole driver on top: the engine's Device::open refuses a device that is not one.
    match Device::open(b) {
        Err(DriverError::NotEngine(v)) => c.check("device-open", v == 0x010000ed, format!("NotEngine({v:#010x})")),
        Err(e) => c.check("device-open", false, e.to_string()),
        Ok(_) => c.check("device-open", false, "edu accepted as an engine"),
    }
    // (the backend was dropped by Device::open's error path: DMA unmapped, fds closed)

    // Reopen with the default configuration: the group was released, and the engine's IOVA
    // window (from 4 GiB) maps in the real IOMMU.
    let mut b = VfioBackend::open(addr)?;
    let x = b.dma_alloc(64 * 1024)?;
    let y = b.dma_alloc(1)?;
    c.check(
        "reopen-default-window",
        x.iova == 0x1_0000_0000 && y.iova == x.iova + 0x11000,
        format!("iovas {:#x}, {:#x}", x.iova, y.iova),
    );
    b.dma_free(x);
    drop(b);
    Ok(())
}

fn main() -> ExitCode {
    let mut c = Checks { n: 0, failed: Vec::new(), t0: Instant::now() };
    let addr = match std::env::args().nth(1) {
        Some(a) => a,
        None => match sysfs::find_devices("/sys".as_ref(), 0x1234, 0x11e8) {
            Ok(v) if !v.is_empty() => v[0].to_string(),
            other => {
                println!("FAIL find-edu: no 1234:11e8 device in /sys ({other:?})");
                return ExitCode::FAILURE;
            }
        },
    };
    if let Err(e) = run(&addr, &mut c) {
        c.check("run", false, format!("stopped by error: {e}"));
    }
    if c.failed.is_empty() {
        println!("vfio-probe: all {} checks passed in {:.2}s", c.n, c.t0.elapsed().as_secs_f64());
        ExitCode::SUCCESS
    } else {
        println!("vfio-probe: {} of {} checks FAILED: {}", c.failed.len(), c.n, c.failed.join(" "));
        ExitCode::FAILURE
    }
}
