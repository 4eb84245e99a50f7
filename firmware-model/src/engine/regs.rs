//! `roce_regs`: the BAR0 register file (AXI4-Lite on the HDL), the command interface and the
//! doorbells, exactly as `contract::regs` and `docs/register-map.md` define them.
//!
//! Commands execute in one step in the model (CMD_STATUS.BUSY reads 0 by the time software
//! can look); the HDL takes a few cycles per context word. Counter reads latch the high
//! half on a `*_LO` read.

use crate::contract::{regs, CmdErrorCode, CmdOpcode};

use super::mem::Dma;
use super::Engine;

/// Register words modelled (everything below the counters' end).
const WORDS: usize = 0x500 / 4;

/// IRQ_STATUS bits.
pub mod irq {
    use crate::contract::regs::irq_status;
    /// An armed CQ fired.
    pub const CQ_EVENT: u32 = irq_status::CQ_EVENT.mask();
    /// A command completed.
    pub const CMD_DONE: u32 = irq_status::CMD_DONE.mask();
    /// A QP entered ERR.
    pub const QP_ERROR: u32 = irq_status::QP_ERROR.mask();
    /// A CQ overran.
    pub const CQ_ERROR: u32 = irq_status::CQ_ERROR.mask();
}

/// The register file's state.
#[derive(Clone, Debug)]
pub struct RegFile {
    words: Vec<u32>,
    /// IRQ_STATUS.
    pub irq_status: u32,
    hi_latch: u32,
    /// CTRL.ENABLE.
    pub enabled: bool,
}

impl Default for RegFile {
    fn default() -> Self {
        let mut words = vec![0u32; WORDS];
        for r in regs::ALL {
            for i in 0..r.count {
                if let Some(w) = words.get_mut(((r.offset + 4 * i) / 4) as usize) {
                    *w = r.reset;
                }
            }
        }
        RegFile { words, irq_status: 0, hi_latch: 0, enabled: false }
    }
}

impl RegFile {
    /// Set a read-only information register (QP_ERR_INFO, CQ_ERR_INFO).
    pub(crate) fn set_info(&mut self, off: u32, v: u32) {
        if let Some(w) = self.words.get_mut((off / 4) as usize) {
            *w = v;
        }
    }
}

fn log2(n: usize) -> u32 {
    n.max(1).next_power_of_two().trailing_zeros()
}

impl Engine {
    fn reg(&self, off: u32) -> u32 {
        self.regs.words.get((off / 4) as usize).copied().unwrap_or(0)
    }

    fn counter(&self, off: u32) -> Option<u64> {
        let mut c = self.counters.clone();
        counter_field(&mut c, off).copied()
    }

    /// A 32-bit register read.
    pub fn mmio_read(&mut self, off: u32) -> u32 {
        if (0x400..0x500).contains(&off) {
            let Some(v) = self.counter(off) else { return 0 };
            if off & 4 == 0 {
                self.regs.hi_latch = (v >> 32) as u32;
                return v as u32;
            }
            return self.regs.hi_latch;
        }
        match off {
            regs::ID => regs::ID_VALUE,
            regs::VERSION => (regs::VERSION_MAJOR << 16) | regs::VERSION_MINOR,
            regs::CAPS => {
                use regs::caps::*;
                let f = |fld: crate::contract::Field, v: u32| fld.val(v.min(fld.max())).unwrap_or(0);
                f(LOG_MAX_QP, log2(self.cfg.max_qps))
                    | f(LOG_MAX_CQ, log2(self.cfg.max_cqs))
                    | f(LOG_MAX_RD_ATOMIC, 4)
                    | f(LOG_MAX_MR, log2(self.cfg.max_mrs))
                    | f(MAX_MTU, (self.cfg.max_mtu.trailing_zeros()).saturating_sub(7))
                    | f(LOG_DP_BYTES, 6)
                    | f(BF, 1)
            }
            regs::STATUS => regs::status::READY.mask() | regs::status::LINK_UP.mask(),
            regs::IRQ_STATUS => self.regs.irq_status,
            regs::CMD_STATUS => self.reg(off) & regs::cmd_status::ERROR.mask(),
            regs::CMD | regs::SQ_DB | regs::RQ_DB | regs::CQ_DB => 0,
            _ => self.reg(off),
        }
    }

    /// A 32-bit register write at cycle `now`.
    pub fn mmio_write(&mut self, now: u64, off: u32, val: u32, mem: &mut impl Dma) {
        match off {
            regs::IRQ_STATUS => {
                self.regs.irq_status &= !val;
                return;
            }
            regs::CMD => {
                let e = self.command(val, mem);
                let st = regs::cmd_status::ERROR.val(e as u32).unwrap_or(0);
                self.set_word(regs::CMD_STATUS, st);
                self.regs.irq_status |= irq::CMD_DONE;
                return;
            }
            regs::SQ_DB => {
                if self.regs.enabled {
                    self.sq_doorbell(now, regs::sq_db::QP.get(val), regs::sq_db::PI.get(val), mem);
                }
                return;
            }
            regs::RQ_DB => {
                if self.regs.enabled {
                    self.rq_doorbell(regs::rq_db::QP.get(val), regs::rq_db::PI.get(val), mem);
                }
                return;
            }
            regs::CQ_DB => {
                use regs::cq_db::*;
                self.cq_doorbell(CQ.get(val), CI.get(val), ARM.is_set(val), SOLICITED.is_set(val));
                return;
            }
            _ => {}
        }
        let Some(r) = regs::ALL.iter().find(|r| off >= r.offset && off < r.end() && (off - r.offset) % 4 == 0) else {
            return; // reserved: ignored
        };
        if r.access != crate::contract::Access::Rw {
            return;
        }
        let mut val = val & r.defined_mask();
        if off == regs::CTRL {
            if regs::ctrl::SOFT_RESET.is_set(val) {
                // the other bits of a soft-reset write are ignored
                self.soft_reset();
                return;
            }
            val &= !regs::ctrl::SOFT_RESET.mask();
        }
        self.set_word(off, val);
        self.apply_register(now, off, val);
    }

    fn set_word(&mut self, off: u32, v: u32) {
        if let Some(w) = self.regs.words.get_mut((off / 4) as usize) {
            *w = v;
        }
    }

    fn apply_register(&mut self, now: u64, off: u32, v: u32) {
        // DCQCN_*, CNP_INTERVAL, US_CYCLES: the timers run to `now` under the old values.
        let mut d = self.dcqcn;
        if d.write_register(off, v) && d != self.dcqcn {
            self.dcqcn_advance_all(now);
            self.dcqcn = d;
        }
        match off {
            regs::CTRL => {
                use regs::ctrl::*;
                self.regs.enabled = ENABLE.is_set(v);
                self.cfg.ecn_enable = ECN_ENABLE.is_set(v);
                self.cfg.cnp_enable = CNP_ENABLE.is_set(v);
                self.cfg.dcqcn_enable = DCQCN_ENABLE.is_set(v);
                self.cfg.pfc_enable = PFC_ENABLE.is_set(v);
            }
            regs::MAC_LO | regs::MAC_HI => {
                let lo = self.reg(regs::MAC_LO).to_be_bytes();
                let hi = (self.reg(regs::MAC_HI) as u16).to_be_bytes();
                self.cfg.mac = [hi[0], hi[1], lo[0], lo[1], lo[2], lo[3]];
            }
            regs::IPV4 => self.cfg.ipv4 = std::net::Ipv4Addr::from(v),
            o if (regs::GID..regs::GID + 16).contains(&o) => {
                let mut g = [0u8; 16];
                for i in 0..4 {
                    g[4 * i..4 * i + 4].copy_from_slice(&self.reg(regs::GID + 4 * i as u32).to_be_bytes());
                }
                self.cfg.gid = std::net::Ipv6Addr::from(g);
            }
            regs::VLAN => {
                use regs::vlan::*;
                self.cfg.port_vlan = ENABLE.is_set(v).then(|| (VID.get(v) as u16, PCP.get(v) as u8));
            }
            regs::TICK_CYCLES => self.cfg.tick_cycles = u64::from(v.max(1)),
            regs::US_CYCLES => self.cfg.clock_mhz = f64::from(v.max(1)),
            _ => {}
        }
    }

    /// CTRL.SOFT_RESET: contexts, counters, IRQ_STATUS, CMD_STATUS, the error info registers
    /// and CTRL.ENABLE clear; every other register keeps its value (as `roce_regs` does).
    fn soft_reset(&mut self) {
        let cfg = self.cfg.clone();
        let dcqcn = self.dcqcn;
        let mut words = std::mem::take(&mut self.regs.words);
        *self = Engine::new(cfg);
        self.dcqcn = dcqcn;
        for off in [regs::CMD_STATUS, regs::QP_ERR_INFO, regs::CQ_ERR_INFO] {
            words[(off / 4) as usize] = 0;
        }
        words[(regs::CTRL / 4) as usize] &= !regs::ctrl::ENABLE.mask();
        self.regs.words = words;
    }

    fn cmd_data(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        for i in 0..32 {
            b[4 * i..4 * i + 4].copy_from_slice(&self.reg(regs::CMD_DATA + 4 * i as u32).to_le_bytes());
        }
        b
    }

    fn set_cmd_data(&mut self, data: &[u8]) {
        let mut b = [0u8; 128];
        b[..data.len().min(128)].copy_from_slice(&data[..data.len().min(128)]);
        for i in 0..32 {
            let w = u32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
            self.set_word(regs::CMD_DATA + 4 * i as u32, w);
        }
    }

    /// Execute a CMD write.
    fn command(&mut self, val: u32, mem: &mut impl Dma) -> CmdErrorCode {
        let op = regs::cmd::OPCODE.get(val) as u8;
        let index = regs::cmd::INDEX.get(val);
        let Ok(op) = CmdOpcode::try_from(op) else { return CmdErrorCode::BadOpcode };
        let data = self.cmd_data();
        let r: Result<(), CmdErrorCode> = match op {
            CmdOpcode::Nop => Ok(()),
            CmdOpcode::QpWrite | CmdOpcode::QpRead | CmdOpcode::QpModify => {
                let arg = self.reg(regs::CMD_ARG);
                self.qp_command(op, index, arg, &data, mem).map(|img| {
                    if let Some(img) = img {
                        self.set_cmd_data(&img);
                    }
                })
            }
            CmdOpcode::CqWrite | CmdOpcode::CqRead => {
                super::cq::cq_command(&mut self.cqs, op, index, &data).map(|img| {
                    if let Some(img) = img {
                        self.set_cmd_data(&img);
                    }
                })
            }
            CmdOpcode::MrWrite | CmdOpcode::MrRead | CmdOpcode::MrInvalidate => {
                super::mr_check::mr_command(&mut self.mrs, op, index, &data).map(|img| {
                    if let Some(img) = img {
                        self.set_cmd_data(&img);
                    }
                })
            }
        };
        match r {
            Ok(()) => CmdErrorCode::Ok,
            Err(e) => e,
        }
    }
}

/// The `Counters` field a counter register (its *_LO or *_HI offset) shows; `None` for an
/// offset that is not a counter. The engine's register file and the Verilated engine's
/// harness (which reads the counters back into `Counters`) share it.
pub fn counter_field(c: &mut super::Counters, off: u32) -> Option<&mut u64> {
    Some(match off & !7 {
        regs::RX_FRAMES_LO => &mut c.rx_frames,
        regs::RX_BYTES_LO => &mut c.rx_bytes,
        regs::RX_ICRC_ERRORS_LO => &mut c.rx_icrc_errors,
        regs::RX_MALFORMED_LO => &mut c.rx_malformed,
        regs::RX_UNKNOWN_QP_LO => &mut c.rx_unknown_qp,
        regs::RX_DROPPED_LO => &mut c.rx_dropped,
        regs::TX_FRAMES_LO => &mut c.tx_frames,
        regs::TX_BYTES_LO => &mut c.tx_bytes,
        regs::RETRANSMITS_LO => &mut c.retransmits,
        regs::TIMEOUTS_LO => &mut c.timeouts,
        regs::NAK_SEQ_SENT_LO => &mut c.nak_seq_sent,
        regs::NAK_RNR_SENT_LO => &mut c.nak_rnr_sent,
        regs::NAK_INV_REQ_SENT_LO => &mut c.nak_inv_sent,
        regs::NAK_REM_ACC_SENT_LO => &mut c.nak_acc_sent,
        regs::NAKS_RCVD_LO => &mut c.naks_rcvd,
        regs::CNP_SENT_LO => &mut c.cnp_sent,
        regs::CNP_RCVD_LO => &mut c.cnp_rcvd,
        regs::ECN_MARKED_RCVD_LO => &mut c.ecn_marked,
        regs::PFC_PAUSE_RCVD_LO => &mut c.pfc_rcvd,
        regs::RNR_RETRIES_LO => &mut c.rnr_rcvd,
        regs::RX_NOT_ROCE_LO => &mut c.rx_not_roce,
        regs::NAK_REM_OP_SENT_LO => &mut c.nak_op_sent,
        regs::DUPLICATES_LO => &mut c.duplicates,
        regs::ACKS_SENT_LO => &mut c.acks_sent,
        regs::CQES_LO => &mut c.cqes,
        regs::DMA_ERRORS_LO => &mut c.dma_errors,
        _ => return None,
    })
}
