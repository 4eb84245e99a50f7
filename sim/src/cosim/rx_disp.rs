//! Lockstep run of `roce_rx_disp` against `roce_model::blocks::rx_disp` (the engine's
//! RX decision): frames of every kind through `roce_rx_parse`'s model into the block, QP
//! states from a table on the attribute port, random gaps and backpressure on every
//! output. Each record's outcome (forwarded to the responder or the completer with its
//! attributes and payload, CNP, CE event, or the counter of its drop) must equal the
//! model's, in order.

use std::collections::VecDeque;
use std::net::{Ipv4Addr, Ipv6Addr};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::rx_disp::verdict;
use roce_model::blocks::rx_parse;
use roce_model::contract::records::{QpAttr, RxFlags, RxHdr};
use roce_model::engine::rx_disp::RxVerdict;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// What came out for one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispOut {
    /// Forwarded to the responder: (QPN, payload).
    Req(u32, Vec<u8>),
    /// Forwarded to the completer.
    Rsp(u32, Vec<u8>),
    /// A CNP for a QP.
    Cnp(u32),
    /// Dropped and counted: 0 malformed, 1 dropped, 2 not RoCE, 3 unknown QP.
    Drop(u8),
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct DispReport {
    /// Outcomes (HDL).
    pub outs: Vec<DispOut>,
    /// CE events (HDL).
    pub ce: Vec<u32>,
    /// Cycles.
    pub cycles: u64,
    /// Differences.
    pub divergences: Vec<String>,
}

/// The port identity and switches.
#[derive(Clone, Copy, Debug)]
pub struct DispCfg {
    /// CTRL.ENABLE.
    pub enable: bool,
    /// CTRL.ECN_ENABLE.
    pub ecn: bool,
    /// MAC.
    pub mac: [u8; 6],
    /// IPv4.
    pub ipv4: Ipv4Addr,
    /// GID.
    pub gid: Ipv6Addr,
}

/// Run `frames` with QP states `states[qpn]` (QpState codes, 1024 entries).
pub fn rx_disp_lockstep(
    frames: &[Vec<u8>],
    states: &[u8],
    cfg: &DispCfg,
    valid_p: f64,
    ready_p: f64,
    seed: u64,
) -> Result<DispReport, SimError> {
    let mut dut = Dut::new(Model::RxDisp, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_rx_disp has no port {n}")));
    let rst = p("rst")?;
    let c = [p("cfg_enable")?, p("cfg_ecn_enable")?, p("cfg_mac")?, p("cfg_ipv4")?, p("cfg_gid")?];
    let (sv, sr, sd) = (p("s_rec_valid")?, p("s_rec_ready")?, p("s_rec")?);
    let (pd, pk, pv, pr, pl) = (
        p("s_axis_pay_tdata")?,
        p("s_axis_pay_tkeep")?,
        p("s_axis_pay_tvalid")?,
        p("s_axis_pay_tready")?,
        p("s_axis_pay_tlast")?,
    );
    let (av, aq, rv, rd, rs) =
        (p("m_attr_valid")?, p("m_attr_qpn")?, p("s_attr_valid")?, p("s_attr_data")?, p("s_attr_state")?);
    let (qv, qr, xv, xr, mh) =
        (p("m_req_valid")?, p("m_req_ready")?, p("m_rsp_valid")?, p("m_rsp_ready")?, p("m_hdr")?);
    let mattr = p("m_attr")?;
    let outs_pay = [
        [
            p("m_axis_req_tdata")?,
            p("m_axis_req_tkeep")?,
            p("m_axis_req_tvalid")?,
            p("m_axis_req_tready")?,
            p("m_axis_req_tlast")?,
        ],
        [
            p("m_axis_rsp_tdata")?,
            p("m_axis_rsp_tkeep")?,
            p("m_axis_rsp_tvalid")?,
            p("m_axis_rsp_tready")?,
            p("m_axis_rsp_tlast")?,
        ],
    ];
    let (cv, cr, cq, ev, er, eq) =
        (p("m_cnp_valid")?, p("m_cnp_ready")?, p("m_cnp_qpn")?, p("m_ce_valid")?, p("m_ce_ready")?, p("m_ce_qpn")?);
    let cnts = [
        p("cnt_malformed")?,
        p("cnt_dropped")?,
        p("cnt_not_roce")?,
        p("cnt_unknown_qp")?,
        p("cnt_ecn")?,
        p("cnt_cnp")?,
    ];
    dut.set_u64(c[0], u64::from(cfg.enable));
    dut.set_u64(c[1], u64::from(cfg.ecn));
    dut.set_u64(c[2], cfg.mac.iter().fold(0u64, |a, &b| a << 8 | u64::from(b)));
    dut.set_u64(c[3], u64::from(u32::from(cfg.ipv4)));
    let g = u128::from(cfg.gid);
    dut.set(c[4], &[g as u32, (g >> 32) as u32, (g >> 64) as u32, (g >> 96) as u32]);
    dut.set_u64(sv, 0);
    dut.set_u64(pv, 0);
    dut.set_u64(rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);

    let recs: Vec<(RxHdr, Vec<u8>)> = frames
        .iter()
        .map(|f| {
            let h = rx_parse::parse(f);
            let (o, n) = (usize::from(h.payload_off), usize::from(h.payload_len));
            let pl =
                if h.flags.contains(RxFlags::PAYLOAD) { f.get(o..o + n).unwrap_or(&[]).to_vec() } else { Vec::new() };
            (h, pl)
        })
        .collect();
    let mut beats: VecDeque<(Vec<u8>, bool)> = VecDeque::new();
    let mut next = 0usize;
    let mut offered = false;
    let mut beat_on = false;
    let mut attr_q: VecDeque<(u64, u32)> = VecDeque::new();
    let mut rep = DispReport::default();
    // forwarded records whose payload is still to come: (index in outs, to the responder)
    let mut pending: VecDeque<(usize, bool)> = VecDeque::new();
    let mut w = [0u32; 40];
    let mut idle = 0u64;
    let mut ecn_count = 0u64;
    loop {
        let now = rep.cycles;
        if !offered && next < recs.len() {
            offered = rng.random_bool(valid_p);
        }
        dut.set_u64(sv, u64::from(offered));
        if let Some((h, _)) = recs.get(next) {
            pack_bytes(&h.encode(), &mut w);
            dut.set(sd, &w);
        }
        if !beat_on && !beats.is_empty() && rng.random_bool(valid_p) {
            beat_on = true;
        }
        dut.set_u64(pv, u64::from(beat_on));
        if let Some((b, last)) = beats.front() {
            let mut bw = [0u32; 16];
            pack_bytes(b, &mut bw);
            dut.set(pd, &bw);
            dut.set_u64(pk, if b.len() >= 64 { u64::MAX } else { (1u64 << b.len()) - 1 });
            dut.set_u64(pl, u64::from(*last));
        }
        let attr_now = attr_q.front().is_some_and(|a| a.0 <= now);
        dut.set_u64(rv, u64::from(attr_now));
        if let Some(&(_, q)) = attr_q.front() {
            let a = QpAttr { dest_qpn: q ^ 0x55, ..QpAttr::default() };
            let mut aw = [0u32; 20];
            pack_bytes(&a.encode(), &mut aw);
            dut.set(rd, &aw);
            dut.set_u64(rs, u64::from(states[q as usize % states.len()]));
        }
        let rdy: Vec<bool> = (0..6).map(|_| rng.random_bool(ready_p)).collect();
        dut.set_u64(qr, u64::from(rdy[0]));
        dut.set_u64(xr, u64::from(rdy[1]));
        dut.set_u64(outs_pay[0][3], u64::from(rdy[2]));
        dut.set_u64(outs_pay[1][3], u64::from(rdy[3]));
        dut.set_u64(cr, u64::from(rdy[4]));
        dut.set_u64(er, u64::from(rdy[5]));
        dut.eval();
        let mut moved = false;
        if offered && dut.get_bool(sr) {
            let (h, pl) = &recs[next];
            if h.flags.contains(RxFlags::PAYLOAD) {
                let n = pl.len().div_ceil(64).max(1);
                for i in 0..n {
                    beats.push_back((pl.get(64 * i..(64 * i + 64).min(pl.len())).unwrap_or(&[]).to_vec(), i + 1 == n));
                }
            }
            next += 1;
            offered = false;
            moved = true;
        }
        if beat_on && dut.get_bool(pr) {
            beats.pop_front();
            beat_on = false;
            moved = true;
        }
        if attr_now {
            attr_q.pop_front();
        }
        if dut.get_bool(av) {
            attr_q.push_back((now + 2, dut.get_u64(aq) as u32));
        }
        for (k, (v, r)) in [(qv, rdy[0]), (xv, rdy[1])].into_iter().enumerate() {
            if r && dut.get_bool(v) {
                dut.get(mh, &mut w);
                let mut b = [0u8; 136];
                unpack_bytes(&w, &mut b);
                let h = RxHdr::decode(&b).map_err(|e| SimError::Config(format!("forwarded record: {e}")))?;
                let mut aw = [0u32; 20];
                dut.get(mattr, &mut aw);
                let mut ab = [0u8; 80];
                unpack_bytes(&aw, &mut ab);
                if QpAttr::decode(&ab).map(|a| a.dest_qpn) != Ok(h.dest_qp ^ 0x55) {
                    rep.divergences.push(format!("record of QP {} forwarded with another QP's attributes", h.dest_qp));
                }
                if h.flags.contains(RxFlags::PAYLOAD) {
                    pending.push_back((rep.outs.len(), k == 0));
                }
                rep.outs.push(if k == 0 {
                    DispOut::Req(h.dest_qp, Vec::new())
                } else {
                    DispOut::Rsp(h.dest_qp, Vec::new())
                });
                moved = true;
            }
        }
        for (k, x) in outs_pay.iter().enumerate() {
            if rdy[2 + k] && dut.get_bool(x[2]) {
                let mut bw = [0u32; 16];
                dut.get(x[0], &mut bw);
                let mut b = [0u8; 64];
                unpack_bytes(&bw, &mut b);
                let n = dut.get_u64(x[1]).count_ones() as usize;
                match pending.front() {
                    Some(&(i, is_req)) if is_req == (k == 0) => {
                        if let Some(DispOut::Req(_, data) | DispOut::Rsp(_, data)) = rep.outs.get_mut(i) {
                            data.extend_from_slice(&b[..n]);
                        }
                    }
                    _ => rep.divergences.push("payload on the wrong output, or before its record".into()),
                }
                if dut.get_bool(x[4]) {
                    pending.pop_front();
                }
                moved = true;
            }
        }
        if rdy[4] && dut.get_bool(cv) {
            rep.outs.push(DispOut::Cnp(dut.get_u64(cq) as u32));
            moved = true;
        }
        if rdy[5] && dut.get_bool(ev) {
            rep.ce.push(dut.get_u64(eq) as u32);
            moved = true;
        }
        for (k, cp) in cnts.iter().enumerate().take(4) {
            if dut.get_bool(*cp) {
                rep.outs.push(DispOut::Drop(k as u8));
            }
        }
        if dut.get_bool(cnts[4]) {
            ecn_count += 1;
        }
        dut.tick();
        rep.cycles += 1;
        idle = if moved { 0 } else { idle + 1 };
        if next == recs.len() && beats.is_empty() && pending.is_empty() && idle > 50 {
            break;
        }
        if idle > 5000 {
            return Err(SimError::Config(format!("roce_rx_disp stalled at record {next} of {}", recs.len())));
        }
    }
    // the model
    let mut want = Vec::new();
    let mut want_ce = Vec::new();
    let can = |q: u32| (q as usize) < states.len() && matches!(states[q as usize], 2..=4);
    for (h, pl) in &recs {
        match verdict(h, cfg.enable, cfg.mac, cfg.ipv4, cfg.gid, can) {
            None => want.push(DispOut::Drop(1)),
            Some(RxVerdict::Malformed) => want.push(DispOut::Drop(0)),
            Some(RxVerdict::NotOurs) => want.push(DispOut::Drop(1)),
            Some(RxVerdict::NotRoce) => want.push(DispOut::Drop(2)),
            Some(RxVerdict::UnknownQp) => want.push(DispOut::Drop(3)),
            Some(RxVerdict::Cnp(q)) => want.push(DispOut::Cnp(q)),
            Some(RxVerdict::Request { qpn, ce }) | Some(RxVerdict::Response { qpn, ce }) => {
                if ce && cfg.ecn {
                    want_ce.push(qpn);
                }
                let req =
                    matches!(verdict(h, cfg.enable, cfg.mac, cfg.ipv4, cfg.gid, can), Some(RxVerdict::Request { .. }));
                want.push(if req { DispOut::Req(qpn, pl.clone()) } else { DispOut::Rsp(qpn, pl.clone()) });
            }
        }
    }
    if let Some(k) = (0..want.len().max(rep.outs.len())).find(|&k| want.get(k) != rep.outs.get(k)) {
        let show = |x: Option<&DispOut>| match x {
            Some(DispOut::Req(q, p)) => format!("Req({q}, {} bytes)", p.len()),
            Some(DispOut::Rsp(q, p)) => format!("Rsp({q}, {} bytes)", p.len()),
            o => format!("{o:?}"),
        };
        rep.divergences.push(format!(
            "outcome {k}: hdl {} model {} ({} vs {})",
            show(rep.outs.get(k)),
            show(want.get(k)),
            rep.outs.len(),
            want.len()
        ));
    }
    if rep.ce != want_ce {
        rep.divergences.push(format!("CE events: hdl {} model {}", rep.ce.len(), want_ce.len()));
    }
    if ecn_count != want_ce.len() as u64 {
        rep.divergences.push(format!("ECN counter: hdl {ecn_count} model {}", want_ce.len()));
    }
    Ok(rep)
}
