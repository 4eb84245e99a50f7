//! Model of `hdl/rtl/roce_regs.sv`: the BAR0 register file (AXI4-Lite slave), the command
//! handshake toward the context tables, the doorbell stream and the counters, cycle for cycle.
//!
//! Unlike the stream blocks this one is modelled at the port level: [`RoceRegs::outputs`]
//! gives every output port from the state (the HDL has no input-to-output path) and
//! [`RoceRegs::tick`] is one rising clock edge with the inputs of that cycle. The HDL's header
//! comment states the semantics; addresses, reset values and field masks come from
//! [`contract::regs`](crate::contract::regs), so a register the contract adds or changes is
//! seen here and (through the generated `roce_regs_pkg`) in the HDL.
//!
//! Port values are given as little-endian 32-bit words (bit 0 of the port in bit 0 of word
//! 0), by port name, so a harness compares every port of the Verilated HDL without a list of
//! its own: [`RegsOut::ports`] and [`RegsIn::ports`].

use crate::contract::regs::{self, caps, irq_status as irqf, RegDesc};

/// Number of counters (`roce_regs_pkg::NUM_COUNTERS`).
pub fn num_counters() -> usize {
    regs::counters().count()
}

/// Width of each counter increment port (HDL parameter `CNT_ADD_W`).
pub const CNT_ADD_W: u32 = 16;

/// AXI response codes.
pub const RESP_OKAY: u32 = 0;
/// Slave error: a partial-strobe write to CMD or a doorbell.
pub const RESP_SLVERR: u32 = 2;

/// Doorbell kinds on `m_axis_db_tuser`.
pub const DB_SQ: u32 = 0;
/// RQ doorbell.
pub const DB_RQ: u32 = 1;
/// CQ doorbell.
pub const DB_CQ: u32 = 2;

/// The build's CAPS fields (HDL parameters).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegsParams {
    /// `LOG_MAX_QP`.
    pub log_max_qp: u32,
    /// `LOG_MAX_CQ`.
    pub log_max_cq: u32,
    /// `LOG_MAX_RD_ATOMIC`.
    pub log_max_rd_atomic: u32,
    /// `LOG_MAX_MR`.
    pub log_max_mr: u32,
    /// `MAX_MTU` (ibverbs code).
    pub max_mtu: u32,
    /// `LOG_DP_BYTES`.
    pub log_dp_bytes: u32,
    /// `BF` (the inline doorbell window is connected).
    pub bf: u32,
}

impl Default for RegsParams {
    /// The HDL's defaults: the contract's CAPS reset value.
    fn default() -> Self {
        let r = regs::caps::RESET;
        RegsParams {
            log_max_qp: caps::LOG_MAX_QP.get(r),
            log_max_cq: caps::LOG_MAX_CQ.get(r),
            log_max_rd_atomic: caps::LOG_MAX_RD_ATOMIC.get(r),
            log_max_mr: caps::LOG_MAX_MR.get(r),
            max_mtu: caps::MAX_MTU.get(r),
            log_dp_bytes: caps::LOG_DP_BYTES.get(r),
            bf: caps::BF.get(r),
        }
    }
}

impl RegsParams {
    /// The CAPS register value.
    pub fn caps(&self) -> u32 {
        let f = |fld: crate::contract::Field, v: u32| (v & fld.max()) << fld.lsb;
        f(caps::LOG_MAX_QP, self.log_max_qp)
            | f(caps::LOG_MAX_CQ, self.log_max_cq)
            | f(caps::LOG_MAX_RD_ATOMIC, self.log_max_rd_atomic)
            | f(caps::LOG_MAX_MR, self.log_max_mr)
            | f(caps::MAX_MTU, self.max_mtu)
            | f(caps::LOG_DP_BYTES, self.log_dp_bytes)
            | f(caps::BF, self.bf)
    }
}

/// The input ports in one cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegsIn {
    /// `s_axil_awaddr`.
    pub awaddr: u16,
    /// `s_axil_awvalid`.
    pub awvalid: bool,
    /// `s_axil_wdata`.
    pub wdata: u32,
    /// `s_axil_wstrb`.
    pub wstrb: u8,
    /// `s_axil_wvalid`.
    pub wvalid: bool,
    /// `s_axil_bready`.
    pub bready: bool,
    /// `s_axil_araddr`.
    pub araddr: u16,
    /// `s_axil_arvalid`.
    pub arvalid: bool,
    /// `s_axil_rready`.
    pub rready: bool,
    /// `status_ready`.
    pub status_ready: bool,
    /// `status_link_up`.
    pub status_link_up: bool,
    /// `cq_event` pulse.
    pub cq_event: bool,
    /// `fatal` pulse.
    pub fatal: bool,
    /// `qp_err_valid` pulse.
    pub qp_err_valid: bool,
    /// `qp_err_qpn` (24 bits).
    pub qp_err_qpn: u32,
    /// `qp_err_cause`.
    pub qp_err_cause: u8,
    /// `cq_err_valid` pulse.
    pub cq_err_valid: bool,
    /// `cq_err_cq` (14 bits).
    pub cq_err_cq: u16,
    /// `cq_err_cause`.
    pub cq_err_cause: u8,
    /// `cmd_ready`.
    pub cmd_ready: bool,
    /// `cmd_done` pulse.
    pub cmd_done: bool,
    /// `cmd_error`.
    pub cmd_error: u8,
    /// `cmd_rdata_we`.
    pub cmd_rdata_we: bool,
    /// `cmd_rdata`, word i = CMD_DATA[i].
    pub cmd_rdata: [u32; 32],
    /// `m_axis_db_tready`.
    pub db_tready: bool,
    /// `cnt_add`, one entry per counter (CNT_ADD_W bits each).
    pub cnt_add: Vec<u32>,
}

/// One port value as 32-bit words, bit 0 of the port in bit 0 of word 0.
pub type PortValue = Vec<u32>;

fn b(v: bool) -> PortValue {
    vec![u32::from(v)]
}

fn w(v: u32) -> PortValue {
    vec![v]
}

impl RegsIn {
    /// Every input port by its HDL name (`clk` and `rst` excluded).
    pub fn ports(&self) -> Vec<(&'static str, PortValue)> {
        let mut cnt = vec![0u32; (num_counters() * CNT_ADD_W as usize).div_ceil(32)];
        for (i, &a) in self.cnt_add.iter().enumerate().take(num_counters()) {
            let bit = i * CNT_ADD_W as usize;
            let a = u64::from(a & ((1 << CNT_ADD_W) - 1)) << (bit % 32);
            cnt[bit / 32] |= a as u32;
            if let Some(hi) = cnt.get_mut(bit / 32 + 1) {
                *hi |= (a >> 32) as u32;
            }
        }
        vec![
            ("s_axil_awaddr", w(self.awaddr.into())),
            ("s_axil_awvalid", b(self.awvalid)),
            ("s_axil_wdata", w(self.wdata)),
            ("s_axil_wstrb", w(u32::from(self.wstrb & 0xF))),
            ("s_axil_wvalid", b(self.wvalid)),
            ("s_axil_bready", b(self.bready)),
            ("s_axil_araddr", w(self.araddr.into())),
            ("s_axil_arvalid", b(self.arvalid)),
            ("s_axil_rready", b(self.rready)),
            ("status_ready", b(self.status_ready)),
            ("status_link_up", b(self.status_link_up)),
            ("cq_event", b(self.cq_event)),
            ("fatal", b(self.fatal)),
            ("qp_err_valid", b(self.qp_err_valid)),
            ("qp_err_qpn", w(self.qp_err_qpn & 0xFF_FFFF)),
            ("qp_err_cause", w(self.qp_err_cause.into())),
            ("cq_err_valid", b(self.cq_err_valid)),
            ("cq_err_cq", w(u32::from(self.cq_err_cq & 0x3FFF))),
            ("cq_err_cause", w(self.cq_err_cause.into())),
            ("cmd_ready", b(self.cmd_ready)),
            ("cmd_done", b(self.cmd_done)),
            ("cmd_error", w(self.cmd_error.into())),
            ("cmd_rdata_we", b(self.cmd_rdata_we)),
            ("cmd_rdata", self.cmd_rdata.to_vec()),
            ("m_axis_db_tready", b(self.db_tready)),
            ("cnt_add", cnt),
        ]
    }
}

/// The output ports in one cycle.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RegsOut {
    /// `s_axil_awready`.
    pub awready: bool,
    /// `s_axil_wready`.
    pub wready: bool,
    /// `s_axil_bresp`.
    pub bresp: u32,
    /// `s_axil_bvalid`.
    pub bvalid: bool,
    /// `s_axil_arready`.
    pub arready: bool,
    /// `s_axil_rdata`.
    pub rdata: u32,
    /// `s_axil_rvalid`.
    pub rvalid: bool,
    /// `irq`.
    pub irq: bool,
    /// `soft_reset` pulse.
    pub soft_reset: bool,
    /// `cmd_valid`.
    pub cmd_valid: bool,
    /// `cmd_opcode`.
    pub cmd_opcode: u32,
    /// `cmd_index`.
    pub cmd_index: u32,
    /// `m_axis_db_tvalid`.
    pub db_valid: bool,
    /// `m_axis_db_tdata`.
    pub db_data: u32,
    /// `m_axis_db_tuser`.
    pub db_kind: u32,
    /// The `cfg_*`, `cmd_arg` and `cmd_data` ports, by name.
    pub cfg: Vec<(&'static str, PortValue)>,
    /// Not a port: the address of the read answered at the coming clock edge (s_axil_rvalid
    /// rises with its data), if any.
    pub pending_read: Option<u16>,
}

impl RegsOut {
    /// Every output port by its HDL name.
    pub fn ports(&self) -> Vec<(&'static str, PortValue)> {
        let mut v = vec![
            ("s_axil_awready", b(self.awready)),
            ("s_axil_wready", b(self.wready)),
            ("s_axil_bresp", w(self.bresp)),
            ("s_axil_bvalid", b(self.bvalid)),
            ("s_axil_arready", b(self.arready)),
            ("s_axil_rdata", w(self.rdata)),
            ("s_axil_rresp", w(RESP_OKAY)),
            ("s_axil_rvalid", b(self.rvalid)),
            ("irq", b(self.irq)),
            ("soft_reset", b(self.soft_reset)),
            ("cmd_valid", b(self.cmd_valid)),
            ("cmd_opcode", w(self.cmd_opcode)),
            ("cmd_index", w(self.cmd_index)),
            ("m_axis_db_tvalid", b(self.db_valid)),
            ("m_axis_db_tdata", w(self.db_data)),
            ("m_axis_db_tuser", w(self.db_kind)),
        ];
        v.extend(self.cfg.iter().cloned());
        v
    }

    /// The value of port `name` as a u64 (its low 64 bits), if it exists.
    pub fn get(&self, name: &str) -> Option<u64> {
        self.ports()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| u64::from(v[0]) | (u64::from(v.get(1).copied().unwrap_or(0)) << 32))
    }
}

/// Word index of byte offset `off` in the register words (`off / 4`).
fn wi(off: u32) -> usize {
    (off / 4) as usize
}

/// Register words kept (the command and identity sections; counters are separate).
const WORDS: usize = 0x200 / 4;

/// The register file's state (the HDL's flip-flops).
#[derive(Clone, Debug)]
pub struct RoceRegs {
    params: RegsParams,
    /// RW register words (CTRL, IRQ_MASK, identity, timing, congestion, CMD_ARG, CMD_DATA),
    /// and QP_ERR_INFO / CQ_ERR_INFO, by word index.
    words: Vec<u32>,
    irq_status: u32,
    busy: bool,
    cmd_err: u32,
    counters: Vec<u64>,
    hi_latch: u32,
    aw: Option<u16>,
    wd: Option<(u32, u8)>,
    bvalid: bool,
    bresp: u32,
    ar: Option<u16>,
    /// The read in the second stage of the read pipeline: its address and the value it
    /// sampled (the HDL's `rd1_q` and `rd_part_q`).
    rd1: Option<(u16, u32)>,
    rvalid: bool,
    rdata: u32,
    db: Option<(u32, u32)>,
    db_last: (u32, u32),
    cmd_valid: bool,
    cmd: (u32, u32),
    soft_reset: bool,
}

impl RoceRegs {
    /// After reset, with the build's parameters.
    pub fn new(params: RegsParams) -> Self {
        let mut words = vec![0u32; WORDS];
        for r in regs::ALL.iter().filter(|r| r.offset < 0x200) {
            for i in 0..r.count {
                words[wi(r.offset + 4 * i)] = r.reset;
            }
        }
        RoceRegs {
            params,
            words,
            irq_status: regs::irq_status::RESET,
            busy: false,
            cmd_err: 0,
            counters: vec![0; num_counters()],
            hi_latch: 0,
            aw: None,
            wd: None,
            bvalid: false,
            bresp: RESP_OKAY,
            ar: None,
            rd1: None,
            rvalid: false,
            rdata: 0,
            db: None,
            db_last: (0, 0),
            cmd_valid: false,
            cmd: (0, 0),
            soft_reset: false,
        }
    }

    /// CMD_STATUS.BUSY.
    pub fn busy(&self) -> bool {
        self.busy
    }

    /// The counters' current values.
    pub fn counters(&self) -> &[u64] {
        &self.counters
    }

    fn word(&self, off: u32) -> u32 {
        self.words[wi(off)]
    }

    /// The register at `off` (bits 1:0 ignored) and whether it is writable by software as a
    /// plain RW register.
    fn rw_reg(off: u32) -> Option<&'static RegDesc> {
        regs::ALL.iter().find(|r| r.access == crate::contract::Access::Rw && off >= r.offset && off < r.end())
    }

    /// The value a read of `off` returns in the current state.
    fn read(&self, off: u32, i: &RegsIn) -> u32 {
        let cbase = regs::RX_FRAMES_LO;
        if off >= cbase && off < cbase + 8 * num_counters() as u32 {
            let c = self.counters[((off - cbase) / 8) as usize];
            return if off & 4 == 0 { c as u32 } else { self.hi_latch };
        }
        match off {
            regs::ID => regs::id::RESET,
            regs::VERSION => regs::version::RESET,
            regs::CAPS => self.params.caps(),
            regs::NEXT => regs::next::RESET,
            regs::STATUS => {
                (u32::from(i.status_ready) << regs::status::READY.lsb)
                    | (u32::from(i.status_link_up) << regs::status::LINK_UP.lsb)
            }
            regs::IRQ_STATUS => self.irq_status,
            regs::CMD_STATUS => {
                (u32::from(self.busy) << regs::cmd_status::BUSY.lsb) | (self.cmd_err << regs::cmd_status::ERROR.lsb)
            }
            regs::QP_ERR_INFO | regs::CQ_ERR_INFO => self.word(off),
            o if Self::rw_reg(o).is_some() => self.word(o),
            _ => 0,
        }
    }

    /// The output ports in the current state.
    pub fn outputs(&self) -> RegsOut {
        use regs::*;
        let c = self.word(CTRL);
        let bit = |f: crate::contract::Field| f.is_set(c);
        let mut gid = [0u32; 4];
        for (k, g) in gid.iter_mut().enumerate() {
            // cfg_gid: GID byte 0 in bits 127:120, so GID[0] is the top word.
            *g = self.word(GID + 4 * (3 - k as u32));
        }
        let vlan = self.word(VLAN);
        let alpha = self.word(DCQCN_ALPHA);
        let cnp = self.word(CNP_CFG);
        let mac = (u64::from(self.word(MAC_HI) & 0xFFFF) << 32) | u64::from(self.word(MAC_LO));
        let cmd_data: Vec<u32> = (0..32).map(|k| self.word(CMD_DATA + 4 * k)).collect();
        let cfg = vec![
            ("cfg_enable", b(bit(ctrl::ENABLE))),
            ("cfg_ecn_enable", b(bit(ctrl::ECN_ENABLE))),
            ("cfg_cnp_enable", b(bit(ctrl::CNP_ENABLE))),
            ("cfg_dcqcn_enable", b(bit(ctrl::DCQCN_ENABLE))),
            ("cfg_pfc_enable", b(bit(ctrl::PFC_ENABLE))),
            ("cfg_mac", vec![mac as u32, (mac >> 32) as u32]),
            ("cfg_ipv4", w(self.word(IPV4))),
            ("cfg_gid", gid.to_vec()),
            ("cfg_vlan_enable", b(vlan::ENABLE.is_set(vlan))),
            ("cfg_vlan_vid", w(vlan::VID.get(vlan))),
            ("cfg_vlan_pcp", w(vlan::PCP.get(vlan))),
            ("cfg_tick_cycles", w(tick_cycles::CYCLES.get(self.word(TICK_CYCLES)))),
            ("cfg_us_cycles", w(us_cycles::CYCLES.get(self.word(US_CYCLES)))),
            ("cfg_dcqcn_rate_ai", w(dcqcn_rate_ai::MBPS.get(self.word(DCQCN_RATE_AI)))),
            ("cfg_dcqcn_rate_hai", w(dcqcn_rate_hai::MBPS.get(self.word(DCQCN_RATE_HAI)))),
            ("cfg_dcqcn_rate_min", w(dcqcn_rate_min::MBPS.get(self.word(DCQCN_RATE_MIN)))),
            ("cfg_dcqcn_g", w(dcqcn_alpha::G.get(alpha))),
            ("cfg_dcqcn_alpha_init", w(dcqcn_alpha::INIT.get(alpha))),
            ("cfg_dcqcn_alpha_us", w(dcqcn_alpha_timer::US.get(self.word(DCQCN_ALPHA_TIMER)))),
            ("cfg_dcqcn_rate_us", w(dcqcn_rate_timer::US.get(self.word(DCQCN_RATE_TIMER)))),
            ("cfg_dcqcn_byte_counter", w(self.word(DCQCN_BYTE_COUNTER))),
            ("cfg_dcqcn_stages", w(dcqcn_stages::STAGES.get(self.word(DCQCN_STAGES)))),
            ("cfg_cnp_dscp", w(cnp_cfg::DSCP.get(cnp))),
            ("cfg_cnp_pcp", w(cnp_cfg::PCP.get(cnp))),
            ("cfg_cnp_interval_us", w(cnp_interval::US.get(self.word(CNP_INTERVAL)))),
            ("cmd_arg", w(self.word(CMD_ARG))),
            ("cmd_data", cmd_data),
        ];
        let (db_data, db_kind) = self.db.unwrap_or(self.db_last);
        RegsOut {
            awready: self.aw.is_none(),
            wready: self.wd.is_none(),
            bresp: self.bresp,
            bvalid: self.bvalid,
            arready: self.ar.is_none(),
            rdata: self.rdata,
            rvalid: self.rvalid,
            irq: self.irq_status & !self.word(IRQ_MASK) != 0,
            soft_reset: self.soft_reset,
            cmd_valid: self.cmd_valid,
            cmd_opcode: self.cmd.0,
            cmd_index: self.cmd.1,
            db_valid: self.db.is_some(),
            db_data,
            db_kind,
            cfg,
            pending_read: self.rd1.filter(|_| !self.rvalid).map(|(a, _)| a),
        }
    }

    /// One rising clock edge with the inputs `i` of this cycle (`rst` low).
    pub fn tick(&mut self, i: &RegsIn) {
        use regs::*;
        let pre = self.clone();
        self.soft_reset = false;
        if i.awvalid && pre.aw.is_none() {
            self.aw = Some(i.awaddr);
        }
        if i.wvalid && pre.wd.is_none() {
            self.wd = Some((i.wdata, i.wstrb & 0xF));
        }
        if pre.bvalid && i.bready {
            self.bvalid = false;
        }
        if pre.db.is_some() && i.db_tready {
            self.db = None;
        }
        if pre.cmd_valid && i.cmd_ready {
            self.cmd_valid = false;
        }

        // the write performed in this cycle, if any (its halves kept or accepted now): (word
        // address, data, strobe mask, strobes)
        let aw = pre.aw.or(i.awvalid.then_some(i.awaddr));
        let wd = pre.wd.or(i.wvalid.then_some((i.wdata, i.wstrb & 0xF)));
        let go = match (aw, wd) {
            (Some(a), Some((d, s))) if !pre.bvalid => {
                let wa = u32::from(a) & !3;
                let is_db = matches!(wa, SQ_DB | RQ_DB | CQ_DB);
                (!(is_db && pre.db.is_some())).then_some((wa, d, s, is_db))
            }
            _ => None,
        };
        let strb_mask = |s: u8| (0..4).fold(0u32, |m, k| if s >> k & 1 == 1 { m | (0xFF << (8 * k)) } else { m });

        let w1c = match go {
            Some((IRQ_STATUS, d, s, _)) => d & strb_mask(s),
            _ => 0,
        };
        let cmd_fin = i.cmd_done && pre.busy;
        let set = (u32::from(i.cq_event) << irqf::CQ_EVENT.lsb)
            | (u32::from(cmd_fin) << irqf::CMD_DONE.lsb)
            | (u32::from(i.qp_err_valid) << irqf::QP_ERROR.lsb)
            | (u32::from(i.fatal) << irqf::FATAL.lsb)
            | (u32::from(i.cq_err_valid) << irqf::CQ_ERROR.lsb);
        self.irq_status = ((pre.irq_status & !w1c) | set) & irq_status::DESC.defined_mask();
        if i.qp_err_valid && !irqf::QP_ERROR.is_set(pre.irq_status) {
            self.words[wi(QP_ERR_INFO)] =
                (u32::from(i.qp_err_cause) << 24 | (i.qp_err_qpn & 0xFF_FFFF)) & qp_err_info::DESC.defined_mask();
        }
        if i.cq_err_valid && !irqf::CQ_ERROR.is_set(pre.irq_status) {
            self.words[wi(CQ_ERR_INFO)] =
                (u32::from(i.cq_err_cause) << 24 | u32::from(i.cq_err_cq & 0x3FFF)) & cq_err_info::DESC.defined_mask();
        }
        if i.cmd_rdata_we && pre.busy {
            for (k, v) in i.cmd_rdata.iter().enumerate() {
                self.words[wi(CMD_DATA) + k] = *v;
            }
        }
        if cmd_fin {
            self.busy = false;
            self.cmd_err = u32::from(i.cmd_error);
        }
        for (c, a) in self.counters.iter_mut().zip(i.cnt_add.iter()) {
            *c = c.wrapping_add(u64::from(a & ((1 << CNT_ADD_W) - 1)));
        }

        let mut soft = false;
        if let Some((wa, d, s, is_db)) = go {
            self.aw = None;
            self.wd = None;
            self.bvalid = true;
            let full = s == 0xF;
            self.bresp = if (is_db || wa == CMD) && !full { RESP_SLVERR } else { RESP_OKAY };
            let m = strb_mask(s);
            let enabled = ctrl::ENABLE.is_set(pre.word(CTRL));
            match wa {
                CTRL if s & 1 == 1 && ctrl::SOFT_RESET.is_set(d) => soft = true,
                CMD => {
                    if full && !pre.busy {
                        self.busy = true;
                        self.cmd_valid = true;
                        self.cmd = (cmd::OPCODE.get(d), cmd::INDEX.get(d));
                    }
                }
                SQ_DB if full && enabled => self.db = Some((d, DB_SQ)),
                RQ_DB if full && enabled => self.db = Some((d, DB_RQ)),
                CQ_DB if full => self.db = Some((d, DB_CQ)),
                o => {
                    if let Some(r) = Self::rw_reg(o) {
                        let frozen = pre.busy && (o == CMD_ARG || (CMD_DATA..CMD_DATA + 128).contains(&o));
                        let mut fields = r.defined_mask();
                        if o == CTRL {
                            fields &= !ctrl::SOFT_RESET.mask();
                        }
                        if !frozen {
                            let old = pre.word(o);
                            self.words[wi(o)] = ((old & !m) | (d & m)) & fields;
                        }
                    }
                }
            }
            if let Some((d, k)) = self.db {
                self.db_last = (d, k);
            }
        }

        // The read leaving the address register samples the registers (stage 1) once the
        // second stage is free; the second stage answers once s_axil_rvalid is low.
        let rd_go = pre.ar.filter(|_| pre.rd1.is_none());
        if soft {
            self.soft_reset = true;
            self.words[wi(CTRL)] &= !ctrl::ENABLE.mask();
            self.irq_status = 0;
            self.words[wi(QP_ERR_INFO)] = 0;
            self.words[wi(CQ_ERR_INFO)] = 0;
            self.busy = false;
            self.cmd_valid = false;
            self.cmd_err = 0;
            self.counters.iter_mut().for_each(|c| *c = 0);
            self.hi_latch = 0;
        } else if let Some(ra) = rd_go.map(|a| u32::from(a) & !3) {
            let cbase = RX_FRAMES_LO;
            if ra >= cbase && ra < cbase + 8 * num_counters() as u32 && ra & 4 == 0 {
                self.hi_latch = (pre.counters[((ra - cbase) / 8) as usize] >> 32) as u32;
            }
        }

        if i.arvalid && pre.ar.is_none() {
            self.ar = Some(i.araddr);
        }
        if pre.rvalid && i.rready {
            self.rvalid = false;
        }
        if let Some((_, d)) = pre.rd1.filter(|_| !pre.rvalid) {
            self.rd1 = None;
            self.rvalid = true;
            self.rdata = d;
        }
        if let Some(a) = rd_go {
            self.ar = None;
            self.rd1 = Some((a, pre.read(u32::from(a) & !3, i)));
        }
    }
}

/// A blocking AXI4-Lite master over the model: one transaction at a time, driven to its
/// response with bready/rready high; the other inputs are `i` (idle, status ready and link
/// up, doorbells always taken, no counter increments unless set).
#[derive(Clone, Debug)]
pub struct Bus {
    /// The register file.
    pub r: RoceRegs,
    /// The inputs between transactions.
    pub i: RegsIn,
}

impl Default for Bus {
    fn default() -> Self {
        let i = RegsIn {
            cnt_add: vec![0; num_counters()],
            db_tready: true,
            status_ready: true,
            status_link_up: true,
            ..RegsIn::default()
        };
        Bus { r: RoceRegs::new(RegsParams::default()), i }
    }
}

impl Bus {
    /// A 32-bit write; returns BRESP.
    pub fn write(&mut self, off: u32, v: u32) -> u32 {
        self.write_strb(off, v, 0xF)
    }

    /// A write with byte strobes; returns BRESP.
    pub fn write_strb(&mut self, off: u32, v: u32, s: u8) -> u32 {
        self.i.awaddr = off as u16;
        self.i.awvalid = true;
        self.i.wdata = v;
        self.i.wstrb = s;
        self.i.wvalid = true;
        self.i.bready = true;
        loop {
            let o = self.r.outputs();
            self.r.tick(&self.i);
            // handshakes at this edge
            self.i.awvalid &= !o.awready;
            self.i.wvalid &= !o.wready;
            if o.bvalid {
                return o.bresp;
            }
        }
    }

    /// A 32-bit read.
    pub fn read(&mut self, off: u32) -> u32 {
        self.i.araddr = off as u16;
        self.i.arvalid = true;
        self.i.rready = true;
        loop {
            let o = self.r.outputs();
            self.r.tick(&self.i);
            self.i.arvalid &= !o.arready;
            if o.rvalid {
                return o.rdata;
            }
        }
    }

    /// One idle clock cycle.
    pub fn tick(&mut self) {
        self.r.tick(&self.i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reset_values_masks_and_reserved() {
        let mut bus = Bus::default();
        for r in regs::ALL.iter().filter(|r| r.access == crate::contract::Access::Rw) {
            for k in 0..r.count {
                let off = r.offset + 4 * k;
                assert_eq!(bus.read(off), r.reset, "{} reset", r.name);
                if off == regs::CTRL {
                    continue; // SOFT_RESET
                }
                assert_eq!(bus.write(off, 0xFFFF_FFFF), RESP_OKAY);
                assert_eq!(bus.read(off), r.defined_mask(), "{} mask", r.name);
            }
        }
        assert_eq!(bus.read(regs::ID), regs::ID_VALUE);
        assert_eq!(bus.read(regs::CAPS), regs::caps::RESET);
        assert_eq!(bus.write(0x0300, 5), RESP_OKAY);
        assert_eq!(bus.read(0x0300), 0);
        // partial strobe merges bytes
        bus.write(regs::IPV4, 0x1122_3344);
        bus.write_strb(regs::IPV4, 0xAABB_CCDD, 0b0101);
        assert_eq!(bus.read(regs::IPV4), 0x11BB_33DD);
    }

    #[test]
    fn command_handshake_and_counters() {
        let mut bus = Bus::default();
        bus.write(regs::CMD_ARG, 7);
        assert_eq!(bus.write(regs::CMD, 0x0000_0501), RESP_OKAY);
        assert_eq!(bus.read(regs::CMD_STATUS) & 1, 1, "busy");
        let o = bus.r.outputs();
        assert!(o.cmd_valid);
        assert_eq!((o.cmd_opcode, o.cmd_index), (1, 5));
        bus.write(regs::CMD_ARG, 9);
        assert_eq!(bus.read(regs::CMD_ARG), 7, "frozen while busy");
        bus.i.cmd_ready = true;
        bus.i.cmd_done = true;
        bus.i.cmd_error = 3;
        bus.tick();
        bus.i.cmd_done = false;
        assert_eq!(bus.read(regs::CMD_STATUS), 3 << 8);
        assert_eq!(bus.read(regs::IRQ_STATUS), irqf::CMD_DONE.mask());
        bus.write(regs::IRQ_STATUS, irqf::CMD_DONE.mask());
        assert_eq!(bus.read(regs::IRQ_STATUS), 0);
        // counter 1 (RX_BYTES) by 0xFFFF per cycle crosses 2^32
        bus.i.cnt_add[1] = 0xFFFF;
        for _ in 0..70_000 {
            bus.tick();
        }
        bus.i.cnt_add[1] = 0;
        let c = bus.r.counters()[1];
        assert!(c > 1 << 32);
        let lo = bus.read(regs::RX_BYTES_LO);
        let hi = bus.read(regs::RX_BYTES_HI);
        assert_eq!((u64::from(hi) << 32) | u64::from(lo), c);
        bus.write(regs::CTRL, regs::ctrl::SOFT_RESET.mask());
        assert_eq!(bus.read(regs::RX_BYTES_LO), 0);
    }
}
