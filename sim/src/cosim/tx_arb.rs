//! Lockstep run of `roce_tx_arb` against `roce_model::blocks::tx_arb`: CNPs, ACKs, READ
//! responses and requests offered on the four inputs with random gaps, QPs with random
//! attributes (every encapsulation, own VLAN or the port's, DSCP, hop limit, flow label, UDP
//! port), a random port identity, PFC pauses, and random backpressure on the record and the
//! payload. The packets are taken one at a time; the k-th record (with its payload) must
//! make, through `roce_tx_build`'s model, the frame the engine model builds for the k-th
//! packet taken; a source is only taken when no higher one offers; no frame of a paused
//! priority starts.

use std::collections::VecDeque;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::tx_arb::RoceTxArb;
use roce_model::blocks::tx_build;
use roce_model::contract::records::{QpAttr, TxDesc, TxFlags, TxHdr};
use roce_model::engine::tx_arb::TxPort;

use crate::vl::{pack_bytes, unpack_bytes, Dut, Model};
use crate::SimError;

/// A packet offered on one of the inputs.
#[derive(Clone, Debug)]
pub enum ArbIn {
    /// A CNP for a QP.
    Cnp(u32),
    /// An ACK descriptor.
    Ack(TxDesc),
    /// A response descriptor and its payload.
    Rsp(TxDesc, Vec<u8>),
    /// A request descriptor and its payload.
    Req(TxDesc, Vec<u8>),
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct ArbReport {
    /// Frames out.
    pub frames: usize,
    /// Payload beats out.
    pub beats: u64,
    /// Cycles.
    pub cycles: u64,
    /// ACKs counted.
    pub acks: u64,
    /// Frames per source taken: CNP, ACK, response, request.
    pub taken: [usize; 4],
    /// Differences.
    pub divergences: Vec<String>,
}

fn desc_words(d: &TxDesc) -> [u32; 16] {
    let mut w = [0u32; 16];
    pack_bytes(&d.encode(), &mut w);
    w
}

/// Run: `ins` split per input (each input keeps its order), `attrs[qpn]` the QP table (1024
/// entries), `port` the port identity, `valid_p`/`ready_p` offer and backpressure
/// probabilities, `pause_p` the share of time a priority is paused.
pub fn tx_arb_lockstep(
    ins: &[ArbIn],
    attrs: &[QpAttr],
    port: &TxPort,
    valid_p: f64,
    ready_p: f64,
    pause_p: f64,
    seed: u64,
) -> Result<ArbReport, SimError> {
    let mut dut = Dut::new(Model::TxArb, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_tx_arb has no port {n}")));
    let rst = p("rst")?;
    let srcs = [
        (p("s_cnp_valid")?, p("s_cnp_ready")?, p("s_cnp_qpn")?, None),
        (p("s_ack_valid")?, p("s_ack_ready")?, p("s_ack_desc")?, None),
        (
            p("s_rsp_valid")?,
            p("s_rsp_ready")?,
            p("s_rsp_desc")?,
            Some([
                p("s_axis_rsp_tdata")?,
                p("s_axis_rsp_tkeep")?,
                p("s_axis_rsp_tvalid")?,
                p("s_axis_rsp_tready")?,
                p("s_axis_rsp_tlast")?,
            ]),
        ),
        (
            p("s_req_valid")?,
            p("s_req_ready")?,
            p("s_req_desc")?,
            Some([
                p("s_axis_req_tdata")?,
                p("s_axis_req_tkeep")?,
                p("s_axis_req_tvalid")?,
                p("s_axis_req_tready")?,
                p("s_axis_req_tlast")?,
            ]),
        ),
    ];
    let (av, aq, rv, rd) = (p("m_attr_valid")?, p("m_attr_qpn")?, p("s_attr_valid")?, p("s_attr_data")?);
    let (hv, hr, hd) = (p("m_hdr_valid")?, p("m_hdr_ready")?, p("m_hdr")?);
    let (pd, pk, pv, pr, pl) = (
        p("m_axis_pay_tdata")?,
        p("m_axis_pay_tkeep")?,
        p("m_axis_pay_tvalid")?,
        p("m_axis_pay_tready")?,
        p("m_axis_pay_tlast")?,
    );
    let (pause, cnt) = (p("pause")?, p("cnt_ack")?);
    let cfg = [
        p("cfg_mac")?,
        p("cfg_ipv4")?,
        p("cfg_gid")?,
        p("cfg_ecn_enable")?,
        p("cfg_vlan_enable")?,
        p("cfg_vlan_vid")?,
        p("cfg_vlan_pcp")?,
    ];
    let mac = port.mac.iter().fold(0u64, |a, &b| a << 8 | u64::from(b));
    dut.set_u64(cfg[0], mac);
    dut.set_u64(cfg[1], u64::from(u32::from(port.ipv4)));
    let g = u128::from(port.gid);
    dut.set(cfg[2], &[g as u32, (g >> 32) as u32, (g >> 64) as u32, (g >> 96) as u32]);
    dut.set_u64(cfg[3], u64::from(port.ecn));
    dut.set_u64(cfg[4], u64::from(port.vlan.is_some()));
    dut.set_u64(cfg[5], u64::from(port.vlan.map_or(0, |v| v.0)));
    dut.set_u64(cfg[6], u64::from(port.vlan.map_or(0, |v| v.1)));
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for s in &srcs {
        dut.set_u64(s.0, 0);
        if let Some(x) = s.3 {
            dut.set_u64(x[2], 0);
        }
    }
    dut.set_u64(rst, 1);
    for _ in 0..3 {
        dut.eval();
        dut.tick();
    }
    dut.set_u64(rst, 0);

    let mut qs: [VecDeque<&ArbIn>; 4] = Default::default();
    for i in ins {
        let k = match i {
            ArbIn::Cnp(_) => 0,
            ArbIn::Ack(_) => 1,
            ArbIn::Rsp(..) => 2,
            ArbIn::Req(..) => 3,
        };
        qs[k].push_back(i);
    }
    let mut offered = [false; 4];
    // payload beats of taken packets, per payload input
    let mut pay: [VecDeque<(Vec<u8>, bool)>; 2] = Default::default();
    let mut taken: VecDeque<&ArbIn> = VecDeque::new();
    let mut attr_q: VecDeque<(u64, u32)> = VecDeque::new();
    let mut rep = ArbReport::default();
    let mut model = RoceTxArb::new();
    // records out whose frames are not complete, oldest first (a record may go out while the
    // payload of the one before it still passes): the record, its payload so far, complete
    let mut cur: VecDeque<(TxHdr, Vec<u8>, bool)> = VecDeque::new();
    let mut pause_v = 0u64;
    let mut prev_hv = false;
    let mut prev_pause = 0u64;
    let mut w = [0u32; 40];
    let mut idle = 0u64;
    loop {
        let now = rep.cycles;
        for k in 0..4 {
            if !offered[k] && !qs[k].is_empty() {
                offered[k] = rng.random_bool(valid_p);
            }
            dut.set_u64(srcs[k].0, u64::from(offered[k]));
            match qs[k].front() {
                Some(ArbIn::Cnp(q)) => dut.set_u64(srcs[k].2, u64::from(*q)),
                Some(ArbIn::Ack(d) | ArbIn::Rsp(d, _) | ArbIn::Req(d, _)) => dut.set(srcs[k].2, &desc_words(d)),
                None => {}
            }
        }
        for (j, k) in [2usize, 3].into_iter().enumerate() {
            let x = srcs[k].3.ok_or_else(|| SimError::Config("payload ports".into()))?;
            let on = !pay[j].is_empty() && rng.random_bool(valid_p.max(0.5));
            dut.set_u64(x[2], u64::from(on));
            if let Some((b, last)) = pay[j].front() {
                let mut bw = [0u32; 16];
                pack_bytes(b, &mut bw);
                dut.set(x[0], &bw);
                dut.set_u64(x[1], if b.len() >= 64 { u64::MAX } else { (1u64 << b.len()) - 1 });
                dut.set_u64(x[4], u64::from(*last));
            }
        }
        if rng.random_bool(0.02) {
            pause_v = if rng.random_bool(pause_p) { u64::from(rng.random::<u8>()) } else { 0 };
        }
        dut.set_u64(pause, pause_v);
        let attr_now = attr_q.front().is_some_and(|a| a.0 <= now);
        dut.set_u64(rv, u64::from(attr_now));
        if let Some(&(_, q)) = attr_q.front() {
            let mut aw = [0u32; 20];
            pack_bytes(&attrs[q as usize % attrs.len()].encode(), &mut aw);
            dut.set(rd, &aw);
        }
        let (r1, r2) = (rng.random_bool(ready_p), rng.random_bool(ready_p));
        dut.set_u64(hr, u64::from(r1));
        dut.set_u64(pr, u64::from(r2));
        dut.eval();
        let mut moved = false;
        let valids: Vec<bool> = offered.to_vec();
        for k in 0..4 {
            if offered[k] && dut.get_bool(srcs[k].1) {
                if (0..k).any(|h| valids[h]) {
                    rep.divergences.push(format!("cycle {now}: input {k} taken while a higher one offers"));
                }
                let i = qs[k].pop_front().ok_or_else(|| SimError::Config("empty input".into()))?;
                if let ArbIn::Rsp(_, pl) | ArbIn::Req(_, pl) = i {
                    let n = pl.len().div_ceil(64);
                    for c in 0..n {
                        pay[k - 2].push_back((pl[64 * c..(64 * c + 64).min(pl.len())].to_vec(), c + 1 == n));
                    }
                }
                taken.push_back(i);
                rep.taken[k] += 1;
                offered[k] = false;
                moved = true;
            }
        }
        for (j, k) in [2usize, 3].into_iter().enumerate() {
            let x = srcs[k].3.ok_or_else(|| SimError::Config("payload ports".into()))?;
            if dut.get_bool(x[2]) && dut.get_bool(x[3]) {
                pay[j].pop_front();
            }
        }
        if attr_now {
            attr_q.pop_front();
        }
        if dut.get_bool(av) {
            attr_q.push_back((now + 2, dut.get_u64(aq) as u32));
        }
        let hvalid = dut.get_bool(hv);
        if hvalid && !prev_hv {
            dut.get(hd, &mut w);
            let mut b = [0u8; 136];
            unpack_bytes(&w, &mut b);
            if let Ok(h) = TxHdr::decode(&b) {
                let pcp = if h.flags.contains(TxFlags::VLAN) { h.vlan_tci >> 13 } else { 0 };
                if prev_pause >> pcp & 1 != 0 {
                    rep.divergences.push(format!("cycle {now}: a frame of paused priority {pcp} started"));
                }
            }
        }
        prev_hv = hvalid && !r1;
        prev_pause = pause_v;
        if hvalid && r1 {
            dut.get(hd, &mut w);
            let mut b = [0u8; 136];
            unpack_bytes(&w, &mut b);
            match TxHdr::decode(&b) {
                Ok(h) => {
                    let done = h.payload_len == 0;
                    cur.push_back((h, Vec::new(), done));
                }
                Err(e) => rep.divergences.push(format!("record does not decode: {e}")),
            }
            moved = true;
        }
        if r2 && dut.get_bool(pv) {
            dut.get(pd, &mut w);
            let mut b = [0u8; 64];
            unpack_bytes(&w[..16], &mut b);
            let n = dut.get_u64(pk).count_ones() as usize;
            rep.beats += 1;
            let last = dut.get_bool(pl);
            match cur.iter_mut().find(|c| !c.2) {
                Some(c) => {
                    c.1.extend_from_slice(&b[..n]);
                    c.2 = last;
                }
                None => rep.divergences.push("payload beat without a record".into()),
            }
            moved = true;
        }
        while cur.front().is_some_and(|c| c.2) {
            if let Some((h, pl, _)) = cur.pop_front() {
                finish(&mut rep, &mut taken, &mut model, attrs, port, h, pl);
            }
        }
        if dut.get_bool(cnt) {
            rep.acks += 1;
        }
        dut.tick();
        rep.cycles += 1;
        idle = if moved { 0 } else { idle + 1 };
        if qs.iter().all(VecDeque::is_empty) && taken.is_empty() && idle > 50 {
            break;
        }
        if idle > 5000 {
            return Err(SimError::Config(format!(
                "roce_tx_arb stalled: {} frames out, {} taken and not out",
                rep.frames,
                taken.len()
            )));
        }
    }
    Ok(rep)
}

fn finish(
    rep: &mut ArbReport,
    taken: &mut VecDeque<&ArbIn>,
    model: &mut RoceTxArb,
    attrs: &[QpAttr],
    port: &TxPort,
    h: TxHdr,
    pl: Vec<u8>,
) {
    rep.frames += 1;
    let Some(i) = taken.pop_front() else {
        rep.divergences.push("a frame out of nothing taken".into());
        return;
    };
    let (qpn, d, want_pl) = match i {
        ArbIn::Cnp(q) => (
            *q,
            TxDesc {
                qpn: *q,
                opcode: 0x81,
                flags: roce_model::contract::records::TxDescFlags::BECN,
                ..TxDesc::default()
            },
            Vec::new(),
        ),
        ArbIn::Ack(d) => (d.qpn, *d, Vec::new()),
        ArbIn::Rsp(d, p) | ArbIn::Req(d, p) => (d.qpn, *d, p.clone()),
    };
    if pl != want_pl {
        rep.divergences.push(format!(
            "frame {}: payload of {} bytes, offered {}",
            rep.frames - 1,
            pl.len(),
            want_pl.len()
        ));
    }
    let a = &attrs[qpn as usize % attrs.len()];
    let want = model.builder(port, a, &d).and_then(|b| b.build(&want_pl).ok());
    let got = tx_build::build(&h, &pl).ok();
    if got != want {
        rep.divergences.push(format!(
            "frame {} (QP {qpn}, opcode {:#x}): hdl {:02x?}\nmodel {:02x?}",
            rep.frames - 1,
            d.opcode,
            got.as_deref().map(|f| &f[..f.len().min(96)]),
            want.as_deref().map(|f| &f[..f.len().min(96)])
        ));
    }
}
