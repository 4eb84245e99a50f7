//! Lockstep run of `roce_rd_rsp` against `roce_model::blocks::rd_rsp`: random READ
//! responses (lengths 0 to several MTUs, every MTU, PSNs across the wrap, DMA addresses
//! anywhere, some outside the IOMMU windows) and ATOMIC Acknowledges, with random DMA read
//! latency and backpressure on every port. Every descriptor and payload must equal the
//! model's, in order, and the failed reads must be counted.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::rd_rsp::packets;
use roce_model::contract::records::{DmaReq, RdRsp, TxDesc};
use roce_model::engine::{Dma, HostMem};

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct RdRspReport {
    /// Packets out (HDL).
    pub packets: usize,
    /// Payload beats out.
    pub beats: u64,
    /// Cycles.
    pub cycles: u64,
    /// Failed reads counted (HDL).
    pub dma_errors: u32,
    /// Differences.
    pub divergences: Vec<String>,
}

/// Run `rsps` against host memory `mem` with DMA latency in `lat` cycles and `ready_p`
/// backpressure on every output.
pub fn rd_rsp_lockstep(
    rsps: &[RdRsp],
    mem: &HostMem,
    lat: (u64, u64),
    ready_p: f64,
    seed: u64,
) -> Result<RdRspReport, SimError> {
    let mut dut = Dut::new(Model::RdRsp, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_rd_rsp has no port {n}")));
    let rst = p("rst")?;
    let (iv, ir, id) = (p("s_rsp_valid")?, p("s_rsp_ready")?, p("s_rsp_data")?);
    let (qv, qr, qreq) = (p("m_dma_rd_valid")?, p("m_dma_rd_ready")?, p("m_dma_rd")?);
    let (dd, dv, dl, du) = (p("s_dma_rd_tdata")?, p("s_dma_rd_tvalid")?, p("s_dma_rd_tlast")?, p("s_dma_rd_tuser")?);
    let (ov, or, od) = (p("m_desc_valid")?, p("m_desc_ready")?, p("m_desc")?);
    let (pd, pk, pv, pr, plast) = (
        p("m_axis_pay_tdata")?,
        p("m_axis_pay_tkeep")?,
        p("m_axis_pay_tvalid")?,
        p("m_axis_pay_tready")?,
        p("m_axis_pay_tlast")?,
    );
    let cnt = p("cnt_dma_err")?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut mem = mem.clone();
    for q in [iv, qr, dv, or, pr] {
        dut.set_u64(q, 0);
    }
    dut.set_u64(rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);
    let mut rep = RdRspReport::default();
    let mut want: Vec<(TxDesc, Vec<u8>)> = Vec::new();
    let mut want_err = 0u32;
    for r in rsps {
        let (v, e) = packets(r, |a, b| mem.dma_read(a, b).is_ok());
        want.extend(v);
        want_err += e;
    }
    let mut got: Vec<(TxDesc, Vec<u8>)> = Vec::new();
    // descriptors taken whose payload has not all passed, oldest first (the next descriptor
    // may be taken while a payload streams; the payloads follow in their order)
    let mut cur: VecDeque<(TxDesc, Vec<u8>)> = VecDeque::new();
    let mut next = 0usize;
    let mut beats: VecDeque<(u64, Vec<u8>, bool, bool)> = VecDeque::new();
    let mut w = [0u32; 16];
    let mut idle = 0u64;
    loop {
        let offer = next < rsps.len();
        dut.set_u64(iv, u64::from(offer));
        if offer {
            let b = rsps[next].encode();
            let mut ww = [0u32; 10];
            pack_bytes(&b, &mut ww);
            dut.set(id, &ww);
        }
        let now = rep.cycles;
        let dnow = beats.front().is_some_and(|b| b.0 <= now);
        dut.set_u64(dv, u64::from(dnow));
        if let Some((_, b, last, err)) = beats.front() {
            pack_bytes(b, &mut w);
            dut.set(dd, &w);
            dut.set_u64(dl, u64::from(*last));
            dut.set_u64(du, u64::from(*err));
        }
        let (r1, r2, r3) = (rng.random_bool(ready_p), rng.random_bool(ready_p), rng.random_bool(ready_p));
        dut.set_u64(qr, u64::from(r1));
        dut.set_u64(or, u64::from(r2));
        dut.set_u64(pr, u64::from(r3));
        dut.eval();
        let mut moved = false;
        if offer && dut.get_bool(ir) {
            next += 1;
            moved = true;
        }
        if dnow {
            beats.pop_front();
            moved = true;
        }
        if r1 && dut.get_bool(qv) {
            let r: DmaReq = dut.get_bundle(qreq);
            let (a, n) = (r.addr, usize::from(r.len));
            let mut buf = vec![0u8; n];
            let err = mem.dma_read(a, &mut buf).is_err();
            if err {
                buf.fill(0);
            }
            let start = beats.back().map_or(0, |b| b.0).max(now + rng.random_range(lat.0..=lat.1));
            let nb = n.div_ceil(64).max(1);
            for i in 0..nb {
                let c = buf.get(64 * i..(64 * i + 64).min(n)).unwrap_or(&[]).to_vec();
                beats.push_back((start + i as u64, c, i + 1 == nb, err));
            }
            moved = true;
        }
        if r2 && dut.get_bool(ov) {
            dut.get(od, &mut w);
            let mut b = [0u8; 64];
            unpack_bytes(&w, &mut b);
            match TxDesc::decode(&b) {
                Ok(d) => cur.push_back((d, Vec::new())),
                Err(e) => rep.divergences.push(format!("descriptor does not decode: {e}")),
            }
            moved = true;
        }
        if r3 && dut.get_bool(pv) {
            dut.get(pd, &mut w);
            let mut b = [0u8; 64];
            unpack_bytes(&w, &mut b);
            let n = dut.get_u64(pk).count_ones() as usize;
            rep.beats += 1;
            while cur.front().is_some_and(|c| c.0.payload_len == 0) {
                got.extend(cur.pop_front());
            }
            match cur.front_mut() {
                Some((_, data)) => data.extend_from_slice(&b[..n]),
                None => rep.divergences.push("payload beat without a descriptor".into()),
            }
            if dut.get_bool(plast) {
                got.extend(cur.pop_front());
            }
            moved = true;
        }
        while cur.front().is_some_and(|c| c.0.payload_len == 0) {
            got.extend(cur.pop_front());
        }
        if dut.get_bool(cnt) {
            rep.dma_errors += 1;
        }
        dut.tick();
        rep.cycles += 1;
        idle = if moved { 0 } else { idle + 1 };
        if next == rsps.len() && got.len() >= want.len() && idle > 50 {
            break;
        }
        if idle > 5000 {
            let first_bad = (0..got.len()).find(|&k| want.get(k) != got.get(k));
            if let Some(k) = first_bad {
                for j in k.saturating_sub(2)..k + 2 {
                    eprintln!(
                        "{j}: hdl {:?} / {:?}\n    model {:?} / {:?}",
                        got.get(j).map(|x| &x.0),
                        got.get(j).map(|x| x.1.len()),
                        want.get(j).map(|x| &x.0),
                        want.get(j).map(|x| x.1.len())
                    );
                }
            }
            return Err(SimError::Config(format!(
                "roce_rd_rsp stalled (first mismatch at {first_bad:?}): {} of {} packets, {next} of {} responses taken, next expected {:?}, {} DMA beats pending (desc valid {}, pay valid {}, dma req valid {}, rsp ready {})",
                got.len(),
                want.len(),
                rsps.len(),
                want.get(got.len()).map(|(d, p)| (d, p.len())),
                beats.len(),
                dut.get_bool(ov),
                dut.get_bool(pv),
                dut.get_bool(qv),
                dut.get_bool(ir)
            )));
        }
    }
    rep.packets = got.len();
    if let Some(k) = (0..want.len().max(got.len())).find(|&k| want.get(k) != got.get(k)) {
        let show = |x: Option<&(TxDesc, Vec<u8>)>| x.map(|(d, p)| format!("{d:?} + {} bytes", p.len()));
        rep.divergences.push(format!(
            "packet {k}: hdl {:?} model {:?} ({} vs {})",
            show(got.get(k)),
            show(want.get(k)),
            got.len(),
            want.len()
        ));
    }
    if rep.dma_errors != want_err {
        rep.divergences.push(format!("failed reads: hdl {} model {want_err}", rep.dma_errors));
    }
    Ok(rep)
}
