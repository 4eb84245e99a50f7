//! The body of the `engine_rx` fuzz target: arbitrary packets into a live engine.
//!
//! One engine with one RC QP in RTS, a 16 KiB memory region (every access right), a CQ and
//! posted receive WQEs, behind an IOMMU that maps only the MR, the rings and the CQ. The
//! input is a sequence of frames (`len: u16 LE`, then a flag byte, then the bytes); flag bits
//! steer a frame deeper: bit 0 aims it at the station MAC, bit 1 at the QP, bit 2 seals its
//! ICRC. After each frame the engine transmits whatever it wants to. Checks: no panic, no DMA
//! fault, and every DMA write inside the MR or the CQ ring. Shared with
//! `firmware-model/tests/engine_fuzz_smoke.rs` (`#[path]`), so it depends only on roce_model.

use roce_model::contract::{
    AccessFlags, CqCtx, CqFlags, Encap, MrCtx, PathMtu, QpAttrMask, QpCtx, QpState, QpType, RqWqe, Sge,
};
use roce_model::engine::{Engine, EngineConfig, HostMem};

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xB];
const QPN: u32 = 2;
const MR_VA: u64 = 0x10_0000;
const MR_LEN: u64 = 16 * 1024;
const RQ: u64 = 0x20_0000;
const SQ: u64 = 0x30_0000;
const CQ: u64 = 0x40_0000;
const CQ_LOG: u8 = 8;
const KEY: u32 = (1 << 8) | 0x5A;
const ALL: AccessFlags = AccessFlags::LOCAL_WRITE
    .union(AccessFlags::REMOTE_WRITE)
    .union(AccessFlags::REMOTE_READ)
    .union(AccessFlags::REMOTE_ATOMIC);

/// The QP's context (state INIT).
fn ctx() -> QpCtx {
    QpCtx {
        state: QpState::Init,
        qp_type: QpType::Rc,
        pd: 1,
        access: ALL,
        sq_base: SQ,
        rq_base: RQ,
        sq_log_size: 4,
        rq_log_size: 6,
        path_mtu: PathMtu::Mtu1024,
        encap: Encap::RoceV2Ipv4,
        dest_qpn: 7,
        rq_psn: 100,
        sq_psn: 200,
        dest_mac: [0x02, 0, 0, 0, 0, 0xA],
        dest_ip: "::ffff:192.0.2.1".parse::<std::net::Ipv6Addr>().map(|a| a.octets()).unwrap_or([0; 16]),
        timeout: 10,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 4,
        max_dest_rd_atomic: 4,
        min_rnr_timer: 1,
        ..QpCtx::default()
    }
}

/// A fresh engine set up for fuzzing, and its host memory.
pub fn rig() -> (Engine, HostMem) {
    let mut e = Engine::new(EngineConfig { mac: MAC, ipv4: [192, 0, 2, 2].into(), ..EngineConfig::default() });
    e.regs.enabled = true;
    let mut m = HostMem::with_iommu();
    m.map_window(MR_VA, MR_LEN);
    m.map_window(RQ, 64 * 64);
    m.map_window(SQ, 128 * 16);
    m.map_window(CQ, 32 << CQ_LOG);
    e.write_mr(1, &MrCtx { va: MR_VA, len: MR_LEN, iova: MR_VA, pd: 1, key: KEY, access: ALL, valid: true })
        .expect("MR");
    e.create_cq(0, &CqCtx { base: CQ, log_size: CQ_LOG, flags: CqFlags::IRQ_ENABLE, valid: true, ..CqCtx::default() })
        .expect("CQ");
    let mut c = ctx();
    e.create_qp(QPN, &c).expect("QP");
    connect(&mut e, &mut m, &mut c);
    m.track_writes = true;
    (e, m)
}

/// INIT -> RTR -> RTS, then 32 receive WQEs (each the first 4 KiB of the MR).
fn connect(e: &mut Engine, m: &mut HostMem, c: &mut QpCtx) {
    c.state = QpState::Rtr;
    let rtr = QpAttrMask::STATE
        | QpAttrMask::AV
        | QpAttrMask::PATH_MTU
        | QpAttrMask::DEST_QPN
        | QpAttrMask::RQ_PSN
        | QpAttrMask::MAX_DEST_RD_ATOMIC
        | QpAttrMask::MIN_RNR_TIMER;
    e.modify_qp(QPN, c, rtr, m).expect("RTR");
    c.state = QpState::Rts;
    let rts = QpAttrMask::STATE
        | QpAttrMask::SQ_PSN
        | QpAttrMask::TIMEOUT
        | QpAttrMask::RETRY_CNT
        | QpAttrMask::RNR_RETRY
        | QpAttrMask::MAX_QP_RD_ATOMIC;
    e.modify_qp(QPN, c, rts, m).expect("RTS");
    for i in 0..32u32 {
        let mut sge = [Sge::default(); 3];
        sge[0] = Sge { addr: MR_VA, len: 4096, lkey: KEY };
        let w = RqWqe { wr_id: u64::from(i), num_sge: 1, sge };
        m.write(RQ + u64::from(i) * 64, &w.encode());
    }
    e.rq_doorbell(QPN, 32, m);
}

/// A QP the fuzz input drove to ERR comes back (RESET, INIT, RTR, RTS), so one input can
/// reach execution again after an error.
fn revive(e: &mut Engine, m: &mut HostMem) {
    if e.qp(QPN).is_some_and(|q| q.state == QpState::Err) {
        let mut c = ctx();
        c.state = QpState::Reset;
        e.modify_qp(QPN, &c, QpAttrMask::STATE, m).expect("RESET");
        c.state = QpState::Init;
        e.modify_qp(QPN, &c, QpAttrMask::STATE | QpAttrMask::ACCESS_FLAGS, m).expect("INIT");
        connect(e, m, &mut c);
    }
}

/// What one run reached.
#[derive(Clone, Copy, Debug, Default)]
pub struct Reached {
    /// Frames fed.
    pub frames: usize,
    /// DMA writes into the MR (executed SENDs, WRITEs, atomics).
    pub mr_writes: usize,
    /// Frames the engine sent back (ACKs, NAKs, READ responses).
    pub replies: u64,
}

/// Runs the body on one input; panics on a violation.
pub fn engine_rx_body(data: &[u8]) -> Reached {
    let (mut e, mut m) = rig();
    let mut rest = data;
    let mut now = 0u64;
    let mut n = 0;
    let mut replies = 0;
    while rest.len() >= 3 {
        let len = usize::from(u16::from_le_bytes([rest[0], rest[1]]));
        let flags = rest[2];
        rest = &rest[3..];
        let take = len.min(rest.len());
        let mut f = rest[..take].to_vec();
        rest = &rest[take..];
        if flags & 1 != 0 && f.len() >= 6 {
            f[..6].copy_from_slice(&MAC);
        }
        if flags & 2 != 0 {
            if let Ok(l) = roce_model::icrc::locate(&f) {
                let b = l.bth_offset();
                let q = QPN.to_be_bytes();
                f[b + 5..b + 8].copy_from_slice(&q[1..]);
            }
        }
        if flags & 4 != 0 {
            let _ = roce_model::icrc::fill(&mut f);
        }
        now += 200;
        e.rx(now, &f, &mut m);
        for _ in 0..64 {
            now += 50;
            match e.tx(now, &mut m) {
                Some(_) => replies += 1,
                None if e.next_event().is_none_or(|t| t > now + 100_000) => break,
                None => {}
            }
        }
        n += 1;
        revive(&mut e, &mut m);
    }
    assert_eq!(e.counters.dma_errors, 0, "the engine tried DMA outside the IOMMU windows");
    for &(addr, len) in &m.writes {
        let end = addr + len as u64;
        let in_mr = addr >= MR_VA && end <= MR_VA + MR_LEN;
        let in_cq = addr >= CQ && end <= CQ + (32 << CQ_LOG);
        assert!(in_mr || in_cq, "DMA write [{addr:#x}, +{len}) outside the MR and the CQ ring");
    }
    let mr_writes = m.writes.iter().filter(|w| w.0 >= MR_VA && w.0 < MR_VA + MR_LEN).count();
    Reached { frames: n, mr_writes, replies }
}
