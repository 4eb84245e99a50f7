//! Lockstep run of `roce_ack_q` against `roce_model::blocks::ack_q`: ACK/NAK requests
//! for many QPs under random offer gaps and random `m_desc_ready`, in phases separated by
//! drains, with clears (QP resets) between phases. The model applies each request when the
//! HDL takes it and each send when the HDL puts it on `m_desc` (the block reads the entry
//! then), so the sent ACKs (QPN, PSN, syndrome, MSN) must be equal in order. A cleared QP
//! is not requested again before the queue drained (its skipped FIFO place would be popped
//! at a time the model does not see); after a drain the model drops those places too.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use roce_model::blocks::ack_q::{AckSent, RoceAckQ};
use roce_model::contract::records::TxDesc;

use super::reset_until_init;
use crate::vl::{unpack_bytes, Dut, Model};
use crate::SimError;

/// One input of a phase.
#[derive(Clone, Copy, Debug)]
pub enum AckIn {
    /// Owe (QPN, PSN, syndrome, MSN).
    Req(u32, u32, u8, u32),
    /// Forget what a QP owes.
    Clear(u32),
    /// Take every owed ACK before going on.
    Drain,
}

/// What a run produced.
#[derive(Clone, Debug, Default)]
pub struct AckReport {
    /// ACKs sent (HDL).
    pub sent: Vec<AckSent>,
    /// Cycles.
    pub cycles: u64,
    /// Differences.
    pub divergences: Vec<String>,
}

/// Run `ins` with offer probability `offer_p` and `m_desc_ready` probability `ready_p`.
pub fn ack_q_lockstep(ins: &[AckIn], offer_p: f64, ready_p: f64, seed: u64) -> Result<AckReport, SimError> {
    let mut dut = Dut::new(Model::AckQ, None)?;
    let p = |n: &str| dut.port(n).ok_or_else(|| SimError::Config(format!("roce_ack_q has no port {n}")));
    let (rst, init_done) = (p("rst")?, p("init_done")?);
    let (av, ar, aq, ap, asy, am) =
        (p("s_ack_valid")?, p("s_ack_ready")?, p("s_ack_qpn")?, p("s_ack_psn")?, p("s_ack_syndrome")?, p("s_ack_msn")?);
    let (cv, cr, cq) = (p("s_clr_valid")?, p("s_clr_ready")?, p("s_clr_qpn")?);
    let (dv, dr, dd) = (p("m_desc_valid")?, p("m_desc_ready")?, p("m_desc")?);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for q in [av, cv, dr] {
        dut.set_u64(q, 0);
    }
    reset_until_init(&mut dut, rst, init_done, 3, |_, _| {})?;
    let mut model = RoceAckQ::new(10);
    let mut rep = AckReport::default();
    let mut want: Vec<AckSent> = Vec::new();
    let mut i = 0usize;
    let mut offered = false;
    let mut prev_valid = false;
    let mut idle = 0u64;
    let mut w = [0u32; 16];
    loop {
        let cur = ins.get(i).copied();
        let draining = matches!(cur, Some(AckIn::Drain));
        if !offered && !draining && cur.is_some() {
            offered = rng.random_bool(offer_p);
        }
        dut.set_u64(av, 0);
        dut.set_u64(cv, 0);
        match cur {
            Some(AckIn::Req(q, psn, syn, msn)) if offered => {
                dut.set_u64(av, 1);
                dut.set_u64(aq, u64::from(q));
                dut.set_u64(ap, u64::from(psn));
                dut.set_u64(asy, u64::from(syn));
                dut.set_u64(am, u64::from(msn));
            }
            Some(AckIn::Clear(q)) if offered => {
                dut.set_u64(cv, 1);
                dut.set_u64(cq, u64::from(q));
            }
            _ => {}
        }
        let rdy = rng.random_bool(ready_p);
        dut.set_u64(dr, u64::from(rdy));
        dut.eval();
        let valid = dut.get_bool(dv);
        if valid && !prev_valid {
            // the block read the entry it sends in the cycle before: so does the model
            match model.send() {
                Some(s) => want.push(s),
                None => {
                    rep.divergences.push(format!("cycle {}: the HDL sends an ACK the model does not owe", rep.cycles))
                }
            }
        }
        let mut moved = false;
        if valid && rdy {
            dut.get(dd, &mut w);
            let mut b = [0u8; 64];
            unpack_bytes(&w, &mut b);
            match TxDesc::decode(&b) {
                Ok(d) => {
                    if d.opcode != 0x11 || d.payload_len != 0 {
                        rep.divergences.push(format!("descriptor is not a plain Acknowledge: {d:?}"));
                    }
                    rep.sent.push((d.qpn, d.psn, d.aeth_syndrome, d.aeth_msn));
                }
                Err(e) => rep.divergences.push(format!("descriptor does not decode: {e}")),
            }
            moved = true;
        }
        prev_valid = valid && !rdy;
        if offered
            && (dut.get_bool(ar) && matches!(cur, Some(AckIn::Req(..)))
                || dut.get_bool(cr) && matches!(cur, Some(AckIn::Clear(_))))
        {
            match cur {
                Some(AckIn::Req(q, psn, syn, msn)) => model.request(q, psn, syn, msn),
                Some(AckIn::Clear(q)) => model.clear(q),
                _ => {}
            }
            offered = false;
            i += 1;
            moved = true;
        }
        dut.tick();
        rep.cycles += 1;
        idle = if moved { 0 } else { idle + 1 };
        // a drain ends when nothing is owed and the block had time to pop the places of
        // cleared QPs (4 cycles each)
        if draining && idle > 120 && !model.pending() {
            model.drop_stale();
            i += 1;
        }
        if i >= ins.len() && idle > 40 {
            break;
        }
        if idle > 5000 {
            return Err(SimError::Config(format!("roce_ack_q stalled at input {i} of {}", ins.len())));
        }
    }
    if let Some(k) = (0..want.len().max(rep.sent.len())).find(|&k| want.get(k) != rep.sent.get(k)) {
        rep.divergences.push(format!(
            "ACK {k}: hdl {:?} model {:?} ({} vs {})",
            rep.sent.get(k),
            want.get(k),
            rep.sent.len(),
            want.len()
        ));
    }
    if model.pending() {
        rep.divergences.push("the model still owes ACKs the HDL never sent".into());
    }
    Ok(rep)
}
