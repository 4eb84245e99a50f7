//! Driver cost per work request and per completion, against a backend whose rings are plain
//! memory and whose doorbells are posted writes (the driver's own cost; a board's MMIO write
//! is posted too). `cargo bench -p roce-driver --bench verbs`
//!
//! - post_send: WQE encode + ring write, one SQ doorbell per call, batches of 1, 8, 32.
//! - poll_cq: CQE read + phase check + decode + queue bookkeeping, one CQ doorbell per call,
//!   batches of 1 and 16.

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use roce_driver::{AccessFlags, Backend, Device, DmaBuf, DriverError, RecvWr, SendWr, WorkCompletion, WrOp};
use roce_model::contract::{regs, Cqe, CqeOpcode, CqeOwner, CqeStatus};

/// Just enough of BAR0 for `Device::open` and the commands, with DMA memory in a Vec.
#[derive(Default)]
struct Rings {
    mem: Vec<u8>,
    /// Freed buffers, reused (already faulted in, as pinned DMA memory is).
    free: Vec<DmaBuf>,
}

impl Backend for Rings {
    fn read32(&mut self, off: u32) -> u32 {
        match off {
            regs::ID => regs::ID_VALUE,
            regs::VERSION => (regs::VERSION_MAJOR << 16) | regs::VERSION_MINOR,
            regs::STATUS => regs::status::READY.mask(),
            regs::CAPS => regs::caps::RESET,
            _ => 0,
        }
    }
    fn write32(&mut self, _off: u32, _val: u32) {}
    fn dma_alloc(&mut self, len: usize) -> Result<DmaBuf, DriverError> {
        if let Some(i) = self.free.iter().position(|b| b.len == len) {
            let b = self.free.swap_remove(i);
            self.mem[b.iova as usize..b.iova as usize + len].fill(0);
            return Ok(b);
        }
        let iova = self.mem.len() as u64;
        self.mem.resize(self.mem.len() + len.div_ceil(4096) * 4096, 0);
        Ok(DmaBuf { iova, len, id: 0 })
    }
    fn dma_free(&mut self, buf: DmaBuf) {
        self.free.push(buf);
    }
    fn mem_read(&self, b: &DmaBuf, off: usize, out: &mut [u8]) {
        let a = b.iova as usize + off;
        out.copy_from_slice(&self.mem[a..a + out.len()]);
    }
    fn mem_write(&mut self, b: &DmaBuf, off: usize, data: &[u8]) {
        let a = b.iova as usize + off;
        self.mem[a..a + data.len()].copy_from_slice(data);
    }
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("driver");
    let mut dev = Device::open(Rings::default()).expect("open");
    let pd = dev.alloc_pd();
    let buf = dev.alloc_buf(1 << 16).expect("buf");
    let mr = dev.reg_mr(pd, &buf, 0, buf.len, AccessFlags::LOCAL_WRITE).expect("mr");
    let cq = dev.create_cq(32768).expect("cq");
    let sge = [mr.sge(0, 64)];
    let wr = SendWr::new(0, WrOp::Write { remote_addr: 0x1000, rkey: 0x100 }, &sge);

    for batch in [1usize, 8, 32] {
        let wrs = vec![wr; batch];
        g.throughput(Throughput::Elements(batch as u64));
        g.bench_function(format!("post_send_batch{batch}"), |b| {
            b.iter_custom(|iters| {
                // a fresh QP whenever the 32768-deep SQ fills (outside the timed part)
                let mut qp = dev.create_qp(pd, cq, cq, 32768, 2).expect("qp");
                let mut room = 32768 / batch;
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    if room == 0 {
                        dev.destroy_qp(qp).expect("destroy");
                        qp = dev.create_qp(pd, cq, cq, 32768, 2).expect("qp");
                        room = 32768 / batch;
                    }
                    let s = Instant::now();
                    dev.post_send(qp, &wrs).expect("post");
                    t += s.elapsed();
                    room -= 1;
                }
                dev.destroy_qp(qp).expect("destroy");
                t
            })
        });
    }

    // poll_cq: the bench plays the device, writing CQEs (untimed) that the driver polls.
    let ring = dev.cq_ring(cq).expect("cq ring");
    let log = 15u32;
    let rq_qp = dev.create_qp(pd, cq, cq, 2, 32768).expect("qp");
    let mut ci = 0u32;
    for batch in [1usize, 16] {
        g.throughput(Throughput::Elements(batch as u64));
        let mut wcs = vec![
            WorkCompletion {
                wr_id: 0,
                status: CqeStatus::Success,
                opcode: CqeOpcode::Send,
                byte_len: 0,
                imm: None,
                invalidated: None,
                qpn: 0,
                src_qp: 0
            };
            batch
        ];
        g.bench_function(format!("poll_cq_batch{batch}"), |b| {
            b.iter_custom(|iters| {
                let mut t = Duration::ZERO;
                for _ in 0..iters {
                    // keep receives posted so the completions retire real WQEs
                    let recvs: Vec<RecvWr> = (0..batch).map(|k| RecvWr { wr_id: k as u64, sges: &sge }).collect();
                    if dev.post_recv(rq_qp, &recvs).is_err() {
                        break;
                    }
                    for k in 0..batch as u32 {
                        let i = ci.wrapping_add(k);
                        let phase = ((i >> log) & 1) ^ 1;
                        let e = Cqe {
                            wr_id: u64::from(i),
                            byte_len: 64,
                            qpn: rq_qp.qpn(),
                            opcode: CqeOpcode::Recv,
                            status: CqeStatus::Success,
                            owner: if phase == 1 { CqeOwner::PHASE } else { CqeOwner::EMPTY },
                            ..Cqe::default()
                        };
                        dev.write_buf(&ring, (i & ((1 << log) - 1)) as usize * Cqe::SIZE, &e.encode());
                    }
                    let s = Instant::now();
                    let n = dev.poll_cq(cq, &mut wcs).expect("poll");
                    t += s.elapsed();
                    assert_eq!(n, batch);
                    ci = ci.wrapping_add(batch as u32);
                }
                t
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
