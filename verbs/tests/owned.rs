//! roce-driver's owned API (`roce_driver::context`) on the in-process engine model: regions
//! over borrowed and owned memory written in place by the engine, objects freed on drop or
//! refused while in use, handles of another context refused, and posting and polling from
//! different threads. Two QPs of one engine talk through its own socket.

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use roce_driver::device::Features;
use roce_driver::{
    masks, AccessFlags, Context, Cq, CqeOpcode, CqeStatus, Device, DriverError, QpAttr, QpState, RecvWr, SendWr,
    WorkCompletion, WrOp,
};
use roce_verbs::config::{mac_of, Engine};
use roce_verbs::sim::{Shared, SimBackend, SimConfig};

const IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 50);
const ALL: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

fn context(dir: &std::path::Path, ip: Ipv4Addr) -> Context<SimBackend> {
    context_and_stats(dir, ip).0
}

/// A context and its engine's shared state (counters).
fn context_and_stats(dir: &std::path::Path, ip: Ipv4Addr) -> (Context<SimBackend>, Arc<Shared>) {
    let sock = dir.join(format!("{ip}.sock"));
    let b =
        SimBackend::start(SimConfig { engine: Engine::Model, local: sock.clone(), peer: sock, ip, mac: mac_of(ip) })
            .expect("start the engine");
    let shared = Arc::clone(b.shared());
    let mut d = Device::open(b).expect("open");
    d.configure_port(mac_of(ip), ip, ip.to_ipv6_mapped());
    d.enable(Features::default());
    (Context::new(d), shared)
}

fn connect(qp: &roce_driver::Qp<SimBackend>, dest: u32) {
    let mut a = QpAttr {
        state: QpState::Init,
        access: ALL,
        dest_qpn: dest,
        rq_psn: 7,
        sq_psn: 7,
        dest_mac: mac_of(IP),
        dest_ip: IpAddr::V4(IP),
        ..QpAttr::default()
    };
    qp.modify(&a, masks::INIT).expect("INIT");
    a.state = QpState::Rtr;
    qp.modify(&a, masks::RTR).expect("RTR");
    a.state = QpState::Rts;
    qp.modify(&a, masks::RTS).expect("RTS");
}

fn poll_one(cq: &Cq<SimBackend>) -> WorkCompletion {
    let end = Instant::now() + Duration::from_secs(5);
    let mut w = [WorkCompletion::EMPTY];
    while Instant::now() < end {
        if cq.poll(&mut w).expect("poll") == 1 {
            return w[0];
        }
        std::thread::yield_now();
    }
    panic!("no completion in 5 s");
}

#[test]
fn owned_objects_zero_copy_and_lifetimes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ctx, engine) = context_and_stats(dir.path(), IP);
    let pd = ctx.alloc_pd();
    let cq = ctx.create_cq(64).expect("cq");
    let mut lent = vec![0u8; 8192];
    let src = pd.reg_mr_owned((0..8192).map(|i| (i * 5) as u8).collect::<Vec<u8>>().into(), ALL).expect("owned mr");
    {
        let dst = pd.reg_mr(&mut lent, ALL).expect("borrowed mr");
        let (a, b) = (pd.create_qp(&cq, &cq, 16, 16).expect("qp"), pd.create_qp(&cq, &cq, 16, 16).expect("qp"));
        connect(&a, b.qpn());
        connect(&b, a.qpn());
        // in use: the PD by regions and QPs, the CQ by QPs
        let (pd, e) = pd.dealloc().expect_err("PD in use");
        assert!(matches!(e, DriverError::Busy("PD")), "{e}");
        let (cq2, e) = cq.destroy().expect_err("CQ in use");
        assert!(matches!(e, DriverError::Busy("CQ")), "{e}");
        let cq = cq2;
        // an SGE outside its region is refused before it reaches the engine
        let e = src.sge(8000, 500).expect_err("SGE beyond the region");
        assert!(matches!(e, DriverError::OutOfBounds { what: "SGE", off: 8000, len: 500, size: 8192 }), "{e}");
        let e = src.read(8190, &mut [0u8; 4]).expect_err("read beyond the region");
        assert!(matches!(e, DriverError::OutOfBounds { .. }), "{e}");
        // WRITE from the owned region into the lent one: the engine's DMA reads and writes
        // the two buffers themselves
        let sge = [src.sge(0, 8192).expect("sge")];
        let w = SendWr::new(1, WrOp::Write { remote_addr: dst.va(), rkey: dst.rkey() }, &sge);
        a.post_send(&[w]).expect("post");
        let c = poll_one(&cq);
        assert_eq!((c.wr_id, c.status, c.opcode), (1, CqeStatus::Success, CqeOpcode::Write));
        let mut got = vec![0u8; 8192];
        dst.read(0, &mut got).expect("read");
        assert!(got.iter().enumerate().all(|(i, &v)| v == (i * 5) as u8), "WRITE did not land");
        // zero copy: the engine's DMA read the 8 KiB from the source region's memory and
        // wrote them into the lent Vec (no bounce buffer of the driver's in between)
        // (the engine thread publishes its counters after the step that wrote the CQE)
        let counts = || (engine.stats.user_dma_read.load(Relaxed), engine.stats.user_dma_written.load(Relaxed));
        let end = Instant::now() + Duration::from_secs(2);
        while counts().1 < 8192 && Instant::now() < end {
            std::thread::yield_now();
        }
        let (rd, wr) = counts();
        assert!(rd >= 8192 && wr >= 8192, "DMA from/to the application's memory: {rd} / {wr} B");
        // a CQ of another context is refused
        let other = context(dir.path(), Ipv4Addr::new(192, 0, 2, 51));
        let ocq = other.create_cq(4).expect("cq");
        let e = pd.create_qp(&ocq, &cq, 4, 4).expect_err("foreign CQ");
        assert!(matches!(e, DriverError::ForeignHandle("CQ")), "{e}");
        drop((a, b, dst));
        // QPs and regions gone: the CQ and the PD can go
        cq.destroy().expect("destroy the CQ");
        let mem = src.into_inner().expect("the owned memory back");
        assert_eq!(mem[5], 25);
        pd.dealloc().expect("dealloc the PD");
    }
    // the lent memory is the caller's again, with what the engine wrote
    assert_eq!(lent[3], 15);
}

#[test]
fn posting_and_polling_from_different_threads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ctx = context(dir.path(), IP);
    let pd = ctx.alloc_pd();
    let cq = Arc::new(ctx.create_cq(256).expect("cq"));
    let src = Arc::new(pd.reg_mr_owned(vec![0x42u8; 4096].into(), ALL).expect("mr"));
    let dst = Arc::new(pd.reg_mr_owned(vec![0u8; 64 * 64].into(), ALL).expect("mr"));
    let (a, b) = (pd.create_qp(&cq, &cq, 64, 64).expect("qp"), pd.create_qp(&cq, &cq, 64, 64).expect("qp"));
    connect(&a, b.qpn());
    connect(&b, a.qpn());
    const N: u64 = 200;
    let b = Arc::new(b);
    // receives refilled by the poller thread, SENDs posted by this one
    for i in 0..32 {
        let s = [dst.sge((i % 64) as usize * 64, 64).expect("sge")];
        b.post_recv(&[RecvWr { wr_id: 1000 + i, sges: &s }]).expect("recv");
    }
    let poller = {
        let (cq, b, dst) = (Arc::clone(&cq), Arc::clone(&b), Arc::clone(&dst));
        std::thread::spawn(move || {
            let (mut sent, mut recvd, mut posted) = (0u64, 0u64, 32u64);
            let mut w = [WorkCompletion::EMPTY; 16];
            let end = Instant::now() + Duration::from_secs(30);
            while (sent < N || recvd < N) && Instant::now() < end {
                let n = cq.poll(&mut w).expect("poll");
                for c in &w[..n] {
                    assert_eq!(c.status, CqeStatus::Success, "{c:?}");
                    if c.opcode == CqeOpcode::Recv {
                        assert_eq!(c.byte_len, 64);
                        recvd += 1;
                        let s = [dst.sge((posted % 64) as usize * 64, 64).expect("sge")];
                        b.post_recv(&[RecvWr { wr_id: 1000 + posted, sges: &s }]).expect("recv");
                        posted += 1;
                    } else {
                        sent += 1;
                    }
                }
                if n == 0 {
                    std::thread::yield_now();
                }
            }
            (sent, recvd)
        })
    };
    let sge = [src.sge(0, 64).expect("sge")];
    let mut i = 0;
    while i < N {
        match a.post_send(&[SendWr::new(i, WrOp::Send, &sge)]) {
            Ok(()) => i += 1,
            // the send queue is full until the poller's polling retires entries
            Err(DriverError::QueueFull(_)) => std::thread::yield_now(),
            Err(e) => panic!("{e}"),
        }
        // do not run ahead of the receives the poller keeps posted (RNR retries would do, but
        // slowly)
        while i > 0 && a.space().expect("space").0 < 32 {
            std::thread::yield_now();
        }
    }
    let (sent, recvd) = poller.join().expect("poller");
    assert_eq!((sent, recvd), (N, N));
    let mut got = [0u8; 64];
    dst.read(64, &mut got).expect("read");
    assert_eq!(got, [0x42; 64]);
}
