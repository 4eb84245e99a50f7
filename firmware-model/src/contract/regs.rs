//! The BAR0 register map: 64 KiB, 32-bit registers at 4-byte aligned offsets,
//! little-endian, accessed 32 bits at a time.
//!
//! For each register `NAME` there is a constant `regs::NAME` (its byte offset) and a module
//! `regs::name` with its fields as [`Field`]s (`regs::ctrl::ENABLE`), `OFFSET`, `COUNT`,
//! `RESET` and `DESC`. [`ALL`] lists every register; [`SECTIONS`] names the address ranges.
//!
//! ```
//! use roce_model::contract::regs;
//! let v = regs::ctrl::ENABLE.set(0, 1).unwrap();
//! let v = regs::ctrl::ECN_ENABLE.set(v, 1).unwrap();
//! assert_eq!(regs::CTRL, 0x0010);
//! assert!(regs::ctrl::ENABLE.is_set(v));
//! assert!(regs::ctrl::ENABLE.set(v, 2).is_err());
//! let cmd = regs::cmd::OPCODE.val(1).unwrap() | regs::cmd::INDEX.val(5).unwrap();
//! assert_eq!(cmd, 0x0000_0501);
//! ```

pub use super::{Access, Field, FieldDesc, RegDesc, Section};

/// Size of BAR0 in bytes.
pub const BAR0_BYTES: u32 = 0x1_0000;

/// `ID` value: ASCII "ROCE" (0x52 'R' in bits 31:24).
pub const ID_VALUE: u32 = 0x524F_4345;

/// Contract version in `VERSION`: major (incompatible changes).
pub const VERSION_MAJOR: u32 = 0;
/// Contract version in `VERSION`: minor (compatible additions).
pub const VERSION_MINOR: u32 = 1;

/// `CQ_ERR_INFO.CAUSE`: the ring was full and a CQE was dropped.
pub const CQ_ERR_OVERRUN: u32 = 1;
/// `CQ_ERR_INFO.CAUSE`: a completion was directed to a CQ that is not valid.
pub const CQ_ERR_INVALID: u32 = 2;

/// The address ranges of BAR0, in order. Offsets not covered by a register are reserved:
/// reads return 0, writes are ignored.
pub const SECTIONS: &[Section] = &[
    Section {
        name: "Block header",
        base: 0x0000,
        end: 0x0010,
        desc: "Corundum-style discovery header: type (ID), version, capabilities, and a pointer \
               to the next register block (none yet).",
    },
    Section {
        name: "Control and status",
        base: 0x0010,
        end: 0x0020,
        desc: "Global enable, soft reset, feature enables, status and the interrupt registers.",
    },
    Section {
        name: "Port identity",
        base: 0x0020,
        end: 0x0050,
        desc: "The port's own addresses, used as the source of every transmitted packet and to \
               accept received ones.",
    },
    Section {
        name: "Timing",
        base: 0x0050,
        end: 0x0060,
        desc: "Prescalers from the engine clock to the IB timer tick (4.096 us) and to 1 us.",
    },
    Section {
        name: "Congestion control",
        base: 0x0060,
        end: 0x0100,
        desc: "DCQCN reaction point parameters (applied when CTRL.DCQCN_ENABLE) and CNP \
               generation (notification point, CTRL.CNP_ENABLE). Rates in Mb/s, times in us. \
               The reset values are the DCQCN paper's (Zhu et al., SIGCOMM 2015); tune them on \
               hardware. The engine keeps rates in Mb/s with 8 fractional bits and alpha in \
               1/65536; a QP is limited from its first CNP until its rate is back at the line \
               rate. The timers are checked by a scanner that visits each QP every \
               2 x 2^LOG_MAX_QP cycles: a period ends at the first visit at or after its \
               deadline (jitter up to one scan), the next deadline is one period later. A change \
               of these registers applies from then on.",
    },
    Section {
        name: "Command interface",
        base: 0x0100,
        end: 0x0200,
        desc: "Indirect access to the QP, CQ and MR context tables, and error reporting. See \
               the command protocol.",
    },
    Section {
        name: "Doorbells",
        base: 0x0200,
        end: 0x0300,
        desc: "Write-only doorbells that publish producer (SQ/RQ) and consumer (CQ) indices. See \
               the queue protocol.",
    },
    Section {
        name: "Counters",
        base: 0x0400,
        end: 0x0500,
        desc: "64-bit event counters as LO/HI pairs (LO at +0, HI at +4). Read LO first: it \
               returns bits 31:0 and latches bits 63:32 into a single latch shared by all \
               counters, which the next read of any *_HI register returns. They count from 0 \
               after reset and soft reset, wrap at 2^64, and are never cleared by reading.",
    },
];

registers! {
    /// Block type: ASCII "ROCE" (0x524F4345).
    ID / id @ 0x0000 : Ro {
        /// Block type.
        ID[31:0] = 0x524F_4345,
    }
    /// Contract version: software checks MAJOR and refuses a different one.
    VERSION / version @ 0x0004 : Ro {
        /// Minor version: compatible additions.
        MINOR[15:0] = 1,
        /// Major version: incompatible changes (0 while the contract is being built).
        MAJOR[31:16] = 0,
    }
    /// Capabilities of this build; the reset column shows the default build.
    CAPS / caps @ 0x0008 : Ro {
        /// log2 of the number of QPs (at most 16: doorbells carry a 16-bit QP index).
        LOG_MAX_QP[4:0] = 10,
        /// log2 of the number of CQs (at most 14: CQ_DB carries a 14-bit CQ index).
        LOG_MAX_CQ[12:8] = 8,
        /// log2 of the RDMA READ / atomic requests a QP may have outstanding (limits
        /// max_rd_atomic and max_dest_rd_atomic).
        LOG_MAX_RD_ATOMIC[15:13] = 4,
        /// log2 of the number of MRs (at most 24: the MR index is `key >> 8`).
        LOG_MAX_MR[20:16] = 10,
        /// Largest path MTU, ibverbs code (1 = 256 .. 5 = 4096).
        MAX_MTU[26:24] = 5,
        /// Inline doorbells: the BlueFlame window (BAR2) takes whole SQ WQEs.
        BF[27] = 1,
        /// log2 of the datapath width in bytes: 3 = 64-bit, 5 = 256-bit, 6 = 512-bit.
        LOG_DP_BYTES[31:28] = 6,
    }
    /// Byte offset of the next register block in BAR0; 0 = this is the last block.
    NEXT / next @ 0x000C : Ro {
        /// Offset of the next block, 0 = none.
        NEXT[31:0] = 0,
    }

    /// Global control.
    CTRL / ctrl @ 0x0010 : Rw {
        /// Process traffic and doorbells. While 0 the engine drops received RoCE frames
        /// (RX_DROPPED), transmits nothing and ignores doorbells; commands still work, so
        /// contexts are set up before enabling.
        ENABLE[0] = 0,
        /// Soft reset: every QP returns to Reset, every CQ and MR becomes invalid, counters,
        /// IRQ_STATUS, CMD_STATUS and the error info registers clear, CTRL.ENABLE clears.
        /// Other registers keep their values. STATUS.READY is 0 until it completes.
        SOFT_RESET[1] : RwSc = 0,
        /// Transmit RoCE packets as ECN-capable (ECT(0)) and count CE-marked ones.
        ECN_ENABLE[8] = 0,
        /// Notification point: send a CNP to the sender of a CE-marked packet, at most one
        /// per QP every CNP_INTERVAL.
        CNP_ENABLE[9] = 0,
        /// Reaction point: rate-limit each QP with DCQCN when it receives CNPs.
        DCQCN_ENABLE[10] = 0,
        /// Honour received PFC pause frames for the priority (VLAN PCP) of each QP.
        PFC_ENABLE[11] = 0,
    }
    /// Global status.
    STATUS / status @ 0x0014 : Ro {
        /// The engine is out of reset and its context memories are initialised; software
        /// waits for 1 after power-up and after a soft reset.
        READY[0] = 0,
        /// The Ethernet link is up.
        LINK_UP[1] = 0,
    }
    /// Interrupt causes. The interrupt line is the OR of IRQ_STATUS & ~IRQ_MASK; an MSI is
    /// sent when that goes from 0 to 1. Causes set while masked stay pending.
    IRQ_STATUS / irq_status @ 0x0018 : W1c {
        /// An armed CQ with CqFlags.IRQ_ENABLE fired (software scans the CQs it armed).
        CQ_EVENT[0] = 0,
        /// A command completed (CMD_STATUS.BUSY fell).
        CMD_DONE[1] = 0,
        /// The engine moved a QP to the error state (QP_MODIFY to Err does not count);
        /// QP_ERR_INFO holds the first one since this bit was last cleared.
        QP_ERROR[2] = 0,
        /// Internal error (DMA error, context memory fault): the engine stops; soft reset
        /// required.
        FATAL[3] = 0,
        /// A CQ overran or a completion went to an invalid CQ; CQ_ERR_INFO holds the first
        /// one since this bit was last cleared.
        CQ_ERROR[4] = 0,
    }
    /// Interrupt mask, same bits as IRQ_STATUS: 1 = the cause does not drive the interrupt
    /// line. All masked after reset.
    IRQ_MASK / irq_mask @ 0x001C : Rw {
        /// Mask CQ_EVENT.
        CQ_EVENT[0] = 1,
        /// Mask CMD_DONE.
        CMD_DONE[1] = 1,
        /// Mask QP_ERROR.
        QP_ERROR[2] = 1,
        /// Mask FATAL.
        FATAL[3] = 1,
        /// Mask CQ_ERROR.
        CQ_ERROR[4] = 1,
    }

    /// Port MAC address, bytes 2..5 (for 02:11:22:33:44:55 the value 0x22334455).
    MAC_LO / mac_lo @ 0x0020 : Rw {
        /// MAC byte 2 in bits 31:24 .. byte 5 in bits 7:0.
        MAC[31:0] = 0,
    }
    /// Port MAC address, bytes 0..1 (for 02:11:22:33:44:55 the value 0x0211).
    MAC_HI / mac_hi @ 0x0024 : Rw {
        /// MAC byte 0 in bits 15:8, byte 1 in bits 7:0.
        MAC[15:0] = 0,
    }
    /// Port IPv4 address, source of RoCEv2-over-IPv4 packets (192.168.1.2 is 0xC0A80102).
    IPV4 / ipv4 @ 0x0028 : Rw {
        /// First octet in bits 31:24.
        IP[31:0] = 0,
    }
    /// Port GID (IPv6 address), source of RoCEv2-over-IPv6 packets: `GID[i]` holds GID bytes
    /// 4i..4i+3 as a big-endian word (`GID[0]` = the first four bytes).
    GID / gid @ 0x0030 [4] : Rw {
        /// GID byte 4i in bits 31:24 .. byte 4i+3 in bits 7:0.
        WORD[31:0] = 0,
    }
    /// Port VLAN: tags the frames of QPs whose QpCtx.vlan is not VALID.
    VLAN / vlan @ 0x0040 : Rw {
        /// VLAN ID.
        VID[11:0] = 0,
        /// Priority code point (and PFC priority).
        PCP[15:13] = 0,
        /// Tag with VID/PCP; when 0 such QPs send untagged frames.
        ENABLE[16] = 0,
    }

    /// Engine clock cycles per IB timer tick of 4.096 us (1024 at 250 MHz). The tick times
    /// QpCtx.timeout and the RNR timer.
    TICK_CYCLES / tick_cycles @ 0x0050 : Rw {
        /// Cycles per tick.
        CYCLES[15:0] = 1024,
    }
    /// Engine clock cycles per microsecond (250 at 250 MHz), for the congestion timers.
    US_CYCLES / us_cycles @ 0x0054 : Rw {
        /// Cycles per microsecond.
        CYCLES[11:0] = 250,
    }

    /// DCQCN additive increase step (R_AI).
    DCQCN_RATE_AI / dcqcn_rate_ai @ 0x0060 : Rw {
        /// Rate step in Mb/s.
        MBPS[19:0] = 40,
    }
    /// DCQCN hyper increase step (R_HAI), used once both the rate timer and the byte counter
    /// have each counted more than STAGES rate increase events since the last cut.
    DCQCN_RATE_HAI / dcqcn_rate_hai @ 0x0064 : Rw {
        /// Rate step in Mb/s.
        MBPS[19:0] = 400,
    }
    /// DCQCN minimum rate: a QP is never slowed below it (nor below 1 Mb/s).
    DCQCN_RATE_MIN / dcqcn_rate_min @ 0x0068 : Rw {
        /// Rate in Mb/s.
        MBPS[19:0] = 10,
    }
    /// DCQCN congestion estimate alpha: alpha = (1 - g) * alpha + g * (CNP seen), with g and
    /// alpha in units of 1/1024.
    DCQCN_ALPHA / dcqcn_alpha @ 0x006C : Rw {
        /// g * 1024 (4 = 1/256).
        G[9:0] = 4,
        /// Initial alpha * 1024 (1023 = 1.0).
        INIT[25:16] = 1023,
    }
    /// DCQCN alpha update period (K).
    DCQCN_ALPHA_TIMER / dcqcn_alpha_timer @ 0x0070 : Rw {
        /// Period in us.
        US[15:0] = 55,
    }
    /// DCQCN rate increase timer period (T).
    DCQCN_RATE_TIMER / dcqcn_rate_timer @ 0x0074 : Rw {
        /// Period in us.
        US[15:0] = 55,
    }
    /// DCQCN byte counter (B): a rate increase event every this many bytes a rate-limited QP
    /// sends (counted from its last cut or byte counter event).
    DCQCN_BYTE_COUNTER / dcqcn_byte_counter @ 0x0078 : Rw {
        /// Bytes (10 MiB).
        BYTES[31:0] = 0x00A0_0000,
    }
    /// DCQCN fast recovery length (F).
    DCQCN_STAGES / dcqcn_stages @ 0x007C : Rw {
        /// Rate increase events of fast recovery before additive increase (of the rate timer
        /// or the byte counter, whichever has counted more).
        STAGES[4:0] = 5,
    }
    /// Header fields of generated CNPs.
    CNP_CFG / cnp_cfg @ 0x0080 : Rw {
        /// DSCP of the CNP's IP header (48 = CS6).
        DSCP[5:0] = 48,
        /// VLAN PCP of the CNP when the QP's frames are tagged.
        PCP[10:8] = 6,
    }
    /// Minimum time between two CNPs for the same QP (N); a change applies to the CNPs sent
    /// after it.
    CNP_INTERVAL / cnp_interval @ 0x0084 : Rw {
        /// Interval in us.
        US[15:0] = 50,
    }

    /// Start a command (write while CMD_STATUS.BUSY = 0; a write while busy is ignored).
    CMD / cmd @ 0x0100 : Wo {
        /// CmdOpcode.
        OPCODE[7:0] = 0,
        /// QP, CQ or MR index the command applies to.
        INDEX[31:8] = 0,
    }
    /// State of the last command.
    CMD_STATUS / cmd_status @ 0x0104 : Ro {
        /// 1 from the CMD write until the command completes.
        BUSY[0] = 0,
        /// CmdErrorCode of the last completed command (valid when BUSY = 0).
        ERROR[15:8] = 0,
    }
    /// Command argument: QP_MODIFY's attribute mask (QpAttrMask, ibverbs IBV_QP_* bits).
    /// Ignored by the other commands. Writes while CMD_STATUS.BUSY = 1 are ignored.
    CMD_ARG / cmd_arg @ 0x0108 : Rw {
        /// The argument.
        ARG[31:0] = 0,
    }
    /// The first QP to enter the error state since IRQ_STATUS.QP_ERROR was last clear.
    QP_ERR_INFO / qp_err_info @ 0x010C : Ro {
        /// QP number (= index).
        QPN[23:0] = 0,
        /// CqeStatus of the error that moved it (e.g. RetryExcErr).
        CAUSE[31:24] = 0,
    }
    /// The first CQ error since IRQ_STATUS.CQ_ERROR was last clear.
    CQ_ERR_INFO / cq_err_info @ 0x0110 : Ro {
        /// CQ index.
        CQ[13:0] = 0,
        /// 1 = overrun (ring full, CQE dropped), 2 = completion for an invalid CQ.
        CAUSE[31:24] = 0,
    }
    /// Command staging buffer, 128 bytes: the context a command writes or reads, in its
    /// descriptor layout, byte b in `CMD_DATA[b / 4]` bits 8*(b % 4)+7 .. 8*(b % 4).
    /// Writes while CMD_STATUS.BUSY = 1 are ignored (the command is using it).
    CMD_DATA / cmd_data @ 0x0140 [32] : Rw {
        /// Descriptor bytes 4i..4i+3, little-endian.
        WORD[31:0] = 0,
    }

    /// Send queue doorbell: new WQEs were written up to (not including) PI.
    SQ_DB / sq_db @ 0x0200 : Wo {
        /// SQ producer index (free-running, wraps at 2^16).
        PI[15:0] = 0,
        /// QP index.
        QP[31:16] = 0,
    }
    /// Receive queue doorbell: new WQEs were written up to (not including) PI.
    RQ_DB / rq_db @ 0x0204 : Wo {
        /// RQ producer index (free-running, wraps at 2^16).
        PI[15:0] = 0,
        /// QP index.
        QP[31:16] = 0,
    }
    /// Completion queue doorbell: entries before CI are consumed; optionally arm.
    CQ_DB / cq_db @ 0x0208 : Wo {
        /// CQ consumer index (free-running, wraps at 2^16).
        CI[15:0] = 0,
        /// CQ index.
        CQ[29:16] = 0,
        /// With ARM: fire only for a CQE with CqeFlags.SOLICITED or an error status
        /// (ibv_req_notify_cq solicited_only).
        SOLICITED[30] = 0,
        /// Request one event: fires at the next CQE, or at once if CQEs beyond CI exist.
        ARM[31] = 0,
    }

    /// Counter rx_frames, bits 31:0; the read latches bits 63:32 for the next *_HI read. Frames the
    /// engine received from the MAC (every ethertype), before any drop.
    RX_FRAMES_LO / rx_frames_lo @ 0x0400 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_frames, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_FRAMES_LO first).
    RX_FRAMES_HI / rx_frames_hi @ 0x0404 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_bytes, bits 31:0; the read latches bits 63:32 for the next *_HI read. Bytes of
    /// the frames counted by RX_FRAMES, from the destination MAC to the end of the frame, FCS
    /// excluded.
    RX_BYTES_LO / rx_bytes_lo @ 0x0408 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_bytes, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_BYTES_LO first).
    RX_BYTES_HI / rx_bytes_hi @ 0x040C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_icrc_errors, bits 31:0; the read latches bits 63:32 for the next *_HI read. RoCE
    /// packets dropped because the ICRC did not match.
    RX_ICRC_ERRORS_LO / rx_icrc_errors_lo @ 0x0410 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_icrc_errors, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_ICRC_ERRORS_LO first).
    RX_ICRC_ERRORS_HI / rx_icrc_errors_hi @ 0x0414 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_malformed, bits 31:0; the read latches bits 63:32 for the next *_HI read. RoCE
    /// packets dropped because a header was malformed (lengths, BTH version, unsupported opcode or
    /// transport).
    RX_MALFORMED_LO / rx_malformed_lo @ 0x0418 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_malformed, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_MALFORMED_LO first).
    RX_MALFORMED_HI / rx_malformed_hi @ 0x041C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_unknown_qp, bits 31:0; the read latches bits 63:32 for the next *_HI read. RoCE
    /// packets dropped because the destination QP is out of range or not in a state that receives.
    RX_UNKNOWN_QP_LO / rx_unknown_qp_lo @ 0x0420 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_unknown_qp, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_UNKNOWN_QP_LO first).
    RX_UNKNOWN_QP_HI / rx_unknown_qp_hi @ 0x0424 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_dropped, bits 31:0; the read latches bits 63:32 for the next *_HI read. Frames
    /// dropped for any other reason: engine disabled (CTRL.ENABLE = 0), RX buffer full, not
    /// addressed to the port's MAC/IP.
    RX_DROPPED_LO / rx_dropped_lo @ 0x0428 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_dropped, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_DROPPED_LO first).
    RX_DROPPED_HI / rx_dropped_hi @ 0x042C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter tx_frames, bits 31:0; the read latches bits 63:32 for the next *_HI read. Frames the
    /// engine transmitted, ACKs, NAKs, CNPs and retransmissions included.
    TX_FRAMES_LO / tx_frames_lo @ 0x0430 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter tx_frames, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// TX_FRAMES_LO first).
    TX_FRAMES_HI / tx_frames_hi @ 0x0434 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter tx_bytes, bits 31:0; the read latches bits 63:32 for the next *_HI read. Bytes of
    /// the frames counted by TX_FRAMES, FCS excluded.
    TX_BYTES_LO / tx_bytes_lo @ 0x0438 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter tx_bytes, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// TX_BYTES_LO first).
    TX_BYTES_HI / tx_bytes_hi @ 0x043C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter retransmits, bits 31:0; the read latches bits 63:32 for the next *_HI read. Request
    /// packets transmitted again (go-back-N after a timeout or sequence NAK).
    RETRANSMITS_LO / retransmits_lo @ 0x0440 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter retransmits, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RETRANSMITS_LO first).
    RETRANSMITS_HI / retransmits_hi @ 0x0444 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter timeouts, bits 31:0; the read latches bits 63:32 for the next *_HI read. Local ACK
    /// timeouts (QpCtx.timeout expired with requests outstanding).
    TIMEOUTS_LO / timeouts_lo @ 0x0448 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter timeouts, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// TIMEOUTS_LO first).
    TIMEOUTS_HI / timeouts_hi @ 0x044C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_seq_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read. NAKs
    /// sent with code PSN sequence error.
    NAK_SEQ_SENT_LO / nak_seq_sent_lo @ 0x0450 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_seq_sent, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// NAK_SEQ_SENT_LO first).
    NAK_SEQ_SENT_HI / nak_seq_sent_hi @ 0x0454 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_rnr_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read. RNR
    /// NAKs sent (a request needed a receive WQE and the RQ was empty).
    NAK_RNR_SENT_LO / nak_rnr_sent_lo @ 0x0458 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_rnr_sent, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// NAK_RNR_SENT_LO first).
    NAK_RNR_SENT_HI / nak_rnr_sent_hi @ 0x045C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_inv_req_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read.
    /// NAKs sent with code invalid request.
    NAK_INV_REQ_SENT_LO / nak_inv_req_sent_lo @ 0x0460 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_inv_req_sent, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// NAK_INV_REQ_SENT_LO first).
    NAK_INV_REQ_SENT_HI / nak_inv_req_sent_hi @ 0x0464 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_rem_acc_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read.
    /// NAKs sent with code remote access error.
    NAK_REM_ACC_SENT_LO / nak_rem_acc_sent_lo @ 0x0468 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_rem_acc_sent, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// NAK_REM_ACC_SENT_LO first).
    NAK_REM_ACC_SENT_HI / nak_rem_acc_sent_hi @ 0x046C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter naks_rcvd, bits 31:0; the read latches bits 63:32 for the next *_HI read. NAKs
    /// received, every code (RNR NAKs included).
    NAKS_RCVD_LO / naks_rcvd_lo @ 0x0470 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter naks_rcvd, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// NAKS_RCVD_LO first).
    NAKS_RCVD_HI / naks_rcvd_hi @ 0x0474 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter cnp_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read. Congestion
    /// notification packets sent (CTRL.CNP_ENABLE).
    CNP_SENT_LO / cnp_sent_lo @ 0x0478 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter cnp_sent, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// CNP_SENT_LO first).
    CNP_SENT_HI / cnp_sent_hi @ 0x047C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter cnp_rcvd, bits 31:0; the read latches bits 63:32 for the next *_HI read. Congestion
    /// notification packets received.
    CNP_RCVD_LO / cnp_rcvd_lo @ 0x0480 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter cnp_rcvd, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// CNP_RCVD_LO first).
    CNP_RCVD_HI / cnp_rcvd_hi @ 0x0484 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter ecn_marked_rcvd, bits 31:0; the read latches bits 63:32 for the next *_HI read. RoCE
    /// packets received with ECN = CE (11).
    ECN_MARKED_RCVD_LO / ecn_marked_rcvd_lo @ 0x0488 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter ecn_marked_rcvd, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// ECN_MARKED_RCVD_LO first).
    ECN_MARKED_RCVD_HI / ecn_marked_rcvd_hi @ 0x048C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter pfc_pause_rcvd, bits 31:0; the read latches bits 63:32 for the next *_HI read. PFC
    /// frames received that pause at least one priority.
    PFC_PAUSE_RCVD_LO / pfc_pause_rcvd_lo @ 0x0490 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter pfc_pause_rcvd, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// PFC_PAUSE_RCVD_LO first).
    PFC_PAUSE_RCVD_HI / pfc_pause_rcvd_hi @ 0x0494 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rnr_retries, bits 31:0; the read latches bits 63:32 for the next *_HI read. Requests
    /// sent again after an RNR NAK.
    RNR_RETRIES_LO / rnr_retries_lo @ 0x0498 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rnr_retries, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RNR_RETRIES_LO first).
    RNR_RETRIES_HI / rnr_retries_hi @ 0x049C : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_not_roce, bits 31:0; the read latches bits 63:32 for the next *_HI read.
    /// Frames for the port's MAC address (or a group address) dropped because they are not RoCE
    /// (another ethertype, IP protocol or UDP port: ARP, LLDP, ...), and MAC control frames
    /// that are not a PFC pause the engine acts on (another opcode, or CTRL.PFC_ENABLE = 0).
    RX_NOT_ROCE_LO / rx_not_roce_lo @ 0x04A0 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter rx_not_roce, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// RX_NOT_ROCE_LO first).
    RX_NOT_ROCE_HI / rx_not_roce_hi @ 0x04A4 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_rem_op_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read.
    /// NAKs sent with code remote operational error: a receive WQE that could not be read or
    /// used (malformed, an L_Key check of its SGEs failed), or a host memory access of the
    /// responder failed.
    NAK_REM_OP_SENT_LO / nak_rem_op_sent_lo @ 0x04A8 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter nak_rem_op_sent, bits 63:32: returns the latch loaded by the last *_LO read
    /// (read NAK_REM_OP_SENT_LO first).
    NAK_REM_OP_SENT_HI / nak_rem_op_sent_hi @ 0x04AC : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter duplicates, bits 31:0; the read latches bits 63:32 for the next *_HI read.
    /// Duplicate requests received: PSN behind the expected PSN (a request already executed,
    /// sent again). SEND/WRITE are acknowledged again, READ and atomic requests answered again.
    DUPLICATES_LO / duplicates_lo @ 0x04B0 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter duplicates, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// DUPLICATES_LO first).
    DUPLICATES_HI / duplicates_hi @ 0x04B4 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter acks_sent, bits 31:0; the read latches bits 63:32 for the next *_HI read.
    /// Acknowledge frames sent by the responder, NAKs included, after coalescing (one per frame
    /// on the wire; ATOMIC Acknowledges and READ responses are not counted).
    ACKS_SENT_LO / acks_sent_lo @ 0x04B8 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter acks_sent, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// ACKS_SENT_LO first).
    ACKS_SENT_HI / acks_sent_hi @ 0x04BC : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter cqes, bits 31:0; the read latches bits 63:32 for the next *_HI read. Completion
    /// queue entries written to host memory (not those dropped for an invalid or overrun CQ).
    CQES_LO / cqes_lo @ 0x04C0 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter cqes, bits 63:32: returns the latch loaded by the last *_LO read (read CQES_LO
    /// first).
    CQES_HI / cqes_hi @ 0x04C4 : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter dma_errors, bits 31:0; the read latches bits 63:32 for the next *_HI read. Host
    /// memory accesses that failed: DMA reads answered with an error (send and receive WQEs,
    /// request payload, READ response data, atomic operands), and DMA writes refused where the
    /// engine learns of it (the HDL engine's DMA writes are posted: it does not see their
    /// outcome, and counts failed reads only).
    DMA_ERRORS_LO / dma_errors_lo @ 0x04C8 : Ro {
        /// Bits 31:0 of the count.
        VALUE[31:0] = 0,
    }
    /// Counter dma_errors, bits 63:32: returns the latch loaded by the last *_LO read (read
    /// DMA_ERRORS_LO first).
    DMA_ERRORS_HI / dma_errors_hi @ 0x04CC : Ro {
        /// Bits 63:32 of the count.
        VALUE[31:0] = 0,
    }
}

/// The counters as `(name, LO offset)`, in address order (`HI` is at `LO + 4`).
pub fn counters() -> impl Iterator<Item = (&'static str, u32)> {
    ALL.iter()
        .filter(|r| r.offset >= 0x0400 && r.offset < 0x0500)
        .filter_map(|r| r.name.strip_suffix("_LO").map(|n| (n, r.offset)))
}

/// The register whose name is `name`.
pub fn by_name(name: &str) -> Option<&'static RegDesc> {
    ALL.iter().find(|r| r.name == name)
}

/// The register (or array) covering byte offset `offset`.
pub fn at_offset(offset: u32) -> Option<&'static RegDesc> {
    ALL.iter().find(|r| r.offset <= offset && offset < r.end())
}
