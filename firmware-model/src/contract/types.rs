//! Enumerations and flag sets used by the descriptors and the command interface. Codes
//! follow libibverbs (`enum ibv_wc_status`, `ibv_qp_state`, `ibv_qp_type`, `ibv_mtu`,
//! `IBV_ACCESS_*`, `IBV_QP_*` attribute mask bits) wherever ibverbs defines the concept,
//! so the driver maps them one to one.

use super::{BitDesc, BitsDesc, ContractError, FieldKind, Wire};

code_enum! {
    /// Operation of a send queue WQE (engine numbering; the driver translates
    /// `ibv_wr_opcode`).
    pub enum SqOpcode: "SQ_OP" {
        /// SEND.
        Send = 0,
        /// SEND with immediate data (`imm_or_inv`).
        SendImm = 1,
        /// SEND with invalidate: the responder invalidates the R_Key in `imm_or_inv`.
        SendInv = 2,
        /// RDMA WRITE to `remote_addr`/`rkey`.
        Write = 3,
        /// RDMA WRITE with immediate data (`imm_or_inv`), consumes a receive WQE at the
        /// responder.
        WriteImm = 4,
        /// RDMA READ of `total_len` bytes from `remote_addr`/`rkey` into the SGEs.
        Read = 5,
        /// 64-bit compare-and-swap at `remote_addr` (8-byte aligned): compare
        /// `compare_add`, swap in `swap`; the original value lands in the first SGE.
        AtomicCas = 6,
        /// 64-bit fetch-and-add of `compare_add` at `remote_addr`; the original value lands
        /// in the first SGE.
        AtomicFaa = 7,
    }
}

code_enum! {
    /// Operation a CQE completes. Values 0..=4 and 0x80/0x81 are `enum ibv_wc_opcode`
    /// (`IBV_WC_SEND` .. `IBV_WC_FETCH_ADD`, `IBV_WC_RECV`, `IBV_WC_RECV_RDMA_WITH_IMM`);
    /// bit 7 set means a receive completion. `RecvImm` and `RecvInv` report to ibverbs as
    /// `IBV_WC_RECV` with `IBV_WC_WITH_IMM` / `IBV_WC_WITH_INV` (see the CQE flags).
    pub enum CqeOpcode: "CQE_OP" {
        /// A SEND, SEND with immediate or SEND with invalidate completed (requester).
        Send = 0x00,
        /// An RDMA WRITE (with or without immediate) completed (requester).
        Write = 0x01,
        /// An RDMA READ completed (requester).
        Read = 0x02,
        /// A compare-and-swap completed (requester).
        AtomicCas = 0x03,
        /// A fetch-and-add completed (requester).
        AtomicFaa = 0x04,
        /// A SEND was received into a receive WQE.
        Recv = 0x80,
        /// An RDMA WRITE with immediate consumed a receive WQE (`IBV_WC_RECV_RDMA_WITH_IMM`).
        RecvWriteImm = 0x81,
        /// A SEND with immediate was received.
        RecvImm = 0x82,
        /// A SEND with invalidate was received; the R_Key in `imm_or_inv` was invalidated.
        RecvInv = 0x83,
    }
}

code_enum! {
    /// Completion status, the numeric values of libibverbs `enum ibv_wc_status`.
    pub enum CqeStatus: "WC_STATUS" {
        /// `IBV_WC_SUCCESS`.
        Success = 0,
        /// `IBV_WC_LOC_LEN_ERR`: a message is longer than the receive buffers, or SGE
        /// lengths do not add up.
        LocLenErr = 1,
        /// `IBV_WC_LOC_QP_OP_ERR`: malformed WQE (bad opcode, `num_sge` out of range,
        /// inline data over 64 bytes).
        LocQpOpErr = 2,
        /// `IBV_WC_LOC_EEC_OP_ERR` (never produced: no EE contexts).
        LocEecOpErr = 3,
        /// `IBV_WC_LOC_PROT_ERR`: an L_Key check failed (invalid key, PD mismatch, out of
        /// bounds, missing LOCAL_WRITE).
        LocProtErr = 4,
        /// `IBV_WC_WR_FLUSH_ERR`: the WQE was flushed because the QP is in the error state.
        WrFlushErr = 5,
        /// `IBV_WC_MW_BIND_ERR` (never produced: no memory windows).
        MwBindErr = 6,
        /// `IBV_WC_BAD_RESP_ERR`: unexpected response opcode or length.
        BadRespErr = 7,
        /// `IBV_WC_LOC_ACCESS_ERR`: a protection error on an incoming RDMA WRITE with
        /// immediate or SEND, reported at the responder.
        LocAccessErr = 8,
        /// `IBV_WC_REM_INV_REQ_ERR`: the responder returned NAK Invalid Request.
        RemInvReqErr = 9,
        /// `IBV_WC_REM_ACCESS_ERR`: the responder returned NAK Remote Access Error.
        RemAccessErr = 10,
        /// `IBV_WC_REM_OP_ERR`: the responder returned NAK Remote Operational Error.
        RemOpErr = 11,
        /// `IBV_WC_RETRY_EXC_ERR`: transport retries (timeouts, sequence NAKs) exhausted.
        RetryExcErr = 12,
        /// `IBV_WC_RNR_RETRY_EXC_ERR`: RNR NAK retries exhausted.
        RnrRetryExcErr = 13,
        /// `IBV_WC_LOC_RDD_VIOL_ERR` (never produced).
        LocRddViolErr = 14,
        /// `IBV_WC_REM_INV_RD_REQ_ERR` (never produced).
        RemInvRdReqErr = 15,
        /// `IBV_WC_REM_ABORT_ERR`: the responder aborted the operation.
        RemAbortErr = 16,
        /// `IBV_WC_INV_EECN_ERR` (never produced).
        InvEecnErr = 17,
        /// `IBV_WC_INV_EEC_STATE_ERR` (never produced).
        InvEecStateErr = 18,
        /// `IBV_WC_FATAL_ERR`: internal engine error (DMA failure); see `IRQ_STATUS.FATAL`.
        FatalErr = 19,
        /// `IBV_WC_RESP_TIMEOUT_ERR` (never produced for RC: timeouts retry, then
        /// `RetryExcErr`).
        RespTimeoutErr = 20,
        /// `IBV_WC_GENERAL_ERR`: any other error.
        GeneralErr = 21,
    }
}

code_enum! {
    /// QP state, the values of libibverbs `enum ibv_qp_state`.
    pub enum QpState: "QP_STATE" {
        /// `IBV_QPS_RESET`: the QP does nothing; the only state in which QP_WRITE is accepted.
        Reset = 0,
        /// `IBV_QPS_INIT`: receive WQEs may be posted, nothing is processed.
        Init = 1,
        /// `IBV_QPS_RTR`: ready to receive (responder active).
        Rtr = 2,
        /// `IBV_QPS_RTS`: ready to send (requester active).
        Rts = 3,
        /// `IBV_QPS_SQD`: send queue drained: no new send WQE is started.
        Sqd = 4,
        /// `IBV_QPS_SQE`: send queue error (not entered by RC QPs, which go to `Err`).
        Sqe = 5,
        /// `IBV_QPS_ERR`: every outstanding and newly posted WQE completes with
        /// `WrFlushErr`.
        Err = 6,
    }
}

code_enum! {
    /// QP transport service, the values of libibverbs `enum ibv_qp_type`. Only RC is
    /// implemented; QP_WRITE with another type fails with `BAD_ATTR`.
    pub enum QpType: "QP_TYPE" {
        /// `IBV_QPT_RC`: reliable connected.
        Rc = 2,
        /// `IBV_QPT_UC`: unreliable connected (reserved for a later version).
        Uc = 3,
        /// `IBV_QPT_UD`: unreliable datagram (reserved for a later version).
        Ud = 4,
    }
}

code_enum! {
    /// Path MTU, the values of libibverbs `enum ibv_mtu` (payload bytes per packet).
    pub enum PathMtu: "MTU" {
        /// `IBV_MTU_256`.
        Mtu256 = 1,
        /// `IBV_MTU_512`.
        Mtu512 = 2,
        /// `IBV_MTU_1024`.
        Mtu1024 = 3,
        /// `IBV_MTU_2048`.
        Mtu2048 = 4,
        /// `IBV_MTU_4096`.
        Mtu4096 = 5,
    }
}

impl PathMtu {
    /// Payload bytes per packet (256..=4096).
    pub const fn bytes(self) -> u32 {
        128 << (self as u32)
    }
}

code_enum! {
    /// Encapsulation of a QP's packets.
    pub enum Encap: "ENCAP" {
        /// RoCEv2 over IPv4 (UDP port 4791); the destination is the last 4 bytes of
        /// `dest_ip`.
        RoceV2Ipv4 = 0,
        /// RoCEv2 over IPv6 (UDP port 4791).
        RoceV2Ipv6 = 1,
        /// RoCEv1: Ethertype 0x8915 and an InfiniBand GRH (SGID = the port GID, DGID =
        /// `dest_ip`, next header 0x1B), no IP/UDP; the QP's frames are not routable.
        RoceV1 = 2,
    }
}

code_enum! {
    /// `CMD.OPCODE`: the context commands.
    pub enum CmdOpcode: "CMD_OP" {
        /// Do nothing; completes with `OK` (tests the command path).
        Nop = 0,
        /// Write the QpCtx in CMD_DATA to QP `INDEX`. Accepted only while the QP is in
        /// Reset; the new state must be Reset or Init. Zeroes the engine state fields.
        QpWrite = 1,
        /// Read QP `INDEX` into CMD_DATA, engine state fields included.
        QpRead = 2,
        /// Write the CqCtx in CMD_DATA to CQ `INDEX`; zeroes its producer/consumer state.
        CqWrite = 3,
        /// Read CQ `INDEX` into CMD_DATA.
        CqRead = 4,
        /// Write the MrCtx in CMD_DATA to MR `INDEX` (`INDEX` must equal `key >> 8`).
        MrWrite = 5,
        /// Read MR `INDEX` into CMD_DATA.
        MrRead = 6,
        /// Clear the `valid` flag of MR `INDEX` (CMD_DATA unused).
        MrInvalidate = 7,
        /// Apply the attributes selected by CMD_ARG (a QpAttrMask) from the QpCtx in
        /// CMD_DATA to QP `INDEX`, checking the state transition.
        QpModify = 8,
    }
}

code_enum! {
    /// `CMD_STATUS.ERROR`: the outcome of the last command.
    pub enum CmdErrorCode: "CMD_ERR" {
        /// Success.
        Ok = 0,
        /// `CMD.OPCODE` is not a defined command.
        BadOpcode = 1,
        /// `CMD.INDEX` is not below the number of QPs, CQs or MRs (CAPS), or is a
        /// reserved QP index (0 or 1), or an MR index that does not match `key >> 8`.
        BadIndex = 2,
        /// The QP state transition is not allowed (QP_WRITE outside Reset, QP_MODIFY
        /// from/to a state pair the IB spec does not allow).
        BadState = 3,
        /// A context field is out of range or unsupported (an undefined enum code, a
        /// reserved bit or byte set, a ring larger than 2^15 entries, a CQ index out of
        /// range, a path MTU above CAPS.MAX_MTU), or a QP_MODIFY mask lacks a required
        /// attribute or has one the transition does not accept.
        BadAttr = 4,
    }
}

flags! {
    /// `SqWqe.flags`.
    pub struct SqFlags(u8): "SQ_FLAG" {
        /// Write a CQE when the WQE completes successfully (errors always complete).
        SIGNALED = 0,
        /// Set the Solicited Event bit in the last packet of a SEND / WRITE with immediate.
        SOLICITED = 1,
        /// The payload is inline in the WQE (bytes 64..64+total_len) instead of SGEs; not
        /// allowed with Read or atomics (LocQpOpErr). The Rust encoder sets it from
        /// `SqWqe.data`.
        INLINE = 2,
        /// Do not start this WQE until every earlier RDMA READ and atomic has completed.
        FENCE = 3,
    }
}

flags! {
    /// `Cqe.flags`.
    pub struct CqeFlags(u8): "CQE_FLAG" {
        /// `imm_or_inv` holds immediate data (`IBV_WC_WITH_IMM`).
        IMM_VALID = 0,
        /// `imm_or_inv` holds the R_Key that was invalidated (`IBV_WC_WITH_INV`).
        INV_VALID = 1,
        /// The received packet had the Solicited Event bit set.
        SOLICITED = 2,
    }
}

flags! {
    /// `Cqe.owner`.
    pub struct CqeOwner(u8): "CQE_OWNER" {
        /// The CQ ring's phase when the engine wrote the entry: 1 on the first pass over
        /// the ring, flipping on every wrap (see the queue protocol).
        PHASE = 0,
    }
}

flags! {
    /// Access rights, the libibverbs `IBV_ACCESS_*` bits (`QpCtx.access`, `MrCtx.access`).
    pub struct AccessFlags(u32): "ACCESS" {
        /// `IBV_ACCESS_LOCAL_WRITE`: the engine may write the memory (receive buffers,
        /// READ responses, atomic results).
        LOCAL_WRITE = 0,
        /// `IBV_ACCESS_REMOTE_WRITE`: remote RDMA WRITE allowed.
        REMOTE_WRITE = 1,
        /// `IBV_ACCESS_REMOTE_READ`: remote RDMA READ allowed.
        REMOTE_READ = 2,
        /// `IBV_ACCESS_REMOTE_ATOMIC`: remote atomics allowed.
        REMOTE_ATOMIC = 3,
    }
}

flags! {
    /// `CqCtx.flags`.
    pub struct CqFlags(u8): "CQ_FLAG" {
        /// A fired arm sets `IRQ_STATUS.CQ_EVENT`; without it arming has no effect.
        IRQ_ENABLE = 0,
    }
}

flags! {
    /// `CqCtx.state`, engine state reported by CQ_READ (ignored by CQ_WRITE).
    pub struct CqState(u8): "CQ_STATE" {
        /// Armed by a CQ_DB with ARM=1 that has not fired yet.
        ARMED = 0,
        /// The arm fires only on a solicited or error completion.
        ARMED_SOLICITED = 1,
        /// The engine found the ring full and dropped a CQE; the CQ is unusable until
        /// rewritten (`IRQ_STATUS.CQ_ERROR`).
        OVERRUN = 2,
    }
}

flags! {
    /// `CMD_ARG` for QP_MODIFY: which attributes to apply, the libibverbs
    /// `enum ibv_qp_attr_mask` bit positions. Bits not listed (CUR_STATE, PKEY_INDEX,
    /// PORT, QKEY, ALT_PATH, PATH_MIG_STATE, CAP, ...) have no engine state: the driver
    /// clears them, and the engine fails a command that sets one with `BAD_ATTR`.
    pub struct QpAttrMask(u32): "QP_ATTR" {
        /// `IBV_QP_STATE`: go to `state` (required in every QP_MODIFY).
        STATE = 0,
        /// `IBV_QP_ACCESS_FLAGS`: `access`.
        ACCESS_FLAGS = 3,
        /// `IBV_QP_AV`: the address vector: `encap`, `dest_mac`, `vlan`, `dscp`,
        /// `hop_limit`, `flow_label`, `udp_sport`, `dest_ip`.
        AV = 7,
        /// `IBV_QP_PATH_MTU`: `path_mtu`.
        PATH_MTU = 8,
        /// `IBV_QP_TIMEOUT`: `timeout`.
        TIMEOUT = 9,
        /// `IBV_QP_RETRY_CNT`: `retry_cnt`.
        RETRY_CNT = 10,
        /// `IBV_QP_RNR_RETRY`: `rnr_retry`.
        RNR_RETRY = 11,
        /// `IBV_QP_RQ_PSN`: `rq_psn`.
        RQ_PSN = 12,
        /// `IBV_QP_MAX_QP_RD_ATOMIC`: `max_rd_atomic`.
        MAX_QP_RD_ATOMIC = 13,
        /// `IBV_QP_MIN_RNR_TIMER`: `min_rnr_timer`.
        MIN_RNR_TIMER = 15,
        /// `IBV_QP_SQ_PSN`: `sq_psn`.
        SQ_PSN = 16,
        /// `IBV_QP_MAX_DEST_RD_ATOMIC`: `max_dest_rd_atomic`.
        MAX_DEST_RD_ATOMIC = 17,
        /// `IBV_QP_DEST_QPN`: `dest_qpn`.
        DEST_QPN = 20,
    }
}

/// `QpCtx.vlan`: the QP's 802.1Q tag. The layout is the tag's TCI with the DEI bit
/// (always transmitted as 0) reused as VALID.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct VlanTag {
    /// VLAN ID, 0..=4095.
    pub vid: u16,
    /// Priority code point, 0..=7 (also selects the PFC priority).
    pub pcp: u8,
    /// Tag the QP's frames with `vid`/`pcp`. When clear, the port's VLAN register
    /// applies (tagged if `VLAN.ENABLE`).
    pub valid: bool,
}

impl VlanTag {
    /// The table the generators walk.
    pub const DESC: BitsDesc = BitsDesc {
        name: "VlanTag",
        sv_prefix: "VLAN_TAG",
        width: 16,
        desc: "The QP's 802.1Q tag: the TCI layout with the DEI bit reused as VALID.",
        bits: &[
            BitDesc { name: "VID", lsb: 0, width: 12, desc: "VLAN ID." },
            BitDesc {
                name: "VALID",
                lsb: 12,
                width: 1,
                desc: "Tag the QP's frames with VID/PCP (DEI is transmitted as 0). When clear, the \
                       port's VLAN register applies.",
            },
            BitDesc { name: "PCP", lsb: 13, width: 3, desc: "Priority code point (and PFC priority)." },
        ],
    };

    /// The 16-bit value (VID, VALID at 12, PCP at 15:13); out-of-range values are cut.
    pub const fn bits(self) -> u16 {
        (self.vid & 0xfff) | ((self.valid as u16) << 12) | (((self.pcp & 7) as u16) << 13)
    }

    /// The tag from its 16-bit value (every value is valid).
    pub const fn from_bits(v: u16) -> Self {
        Self { vid: v & 0xfff, pcp: (v >> 13) as u8, valid: v & 0x1000 != 0 }
    }
}

impl Wire for VlanTag {
    const SIZE: usize = 2;
    const KIND: FieldKind = FieldKind::Bits(&VlanTag::DESC);
    fn put(&self, buf: &mut [u8], off: usize) {
        self.bits().put(buf, off)
    }
    fn take(buf: &[u8], off: usize, field: &'static str) -> Result<Self, ContractError> {
        Ok(Self::from_bits(u16::take(buf, off, field)?))
    }
    fn to_u64(&self) -> u64 {
        self.bits().into()
    }
    fn check(&self, field: &'static str) -> Result<(), ContractError> {
        if self.vid > 0xfff {
            return Err(ContractError::Overflow { field, value: self.vid.into(), width: 12 });
        }
        if self.pcp > 7 {
            return Err(ContractError::Overflow { field, value: self.pcp.into(), width: 3 });
        }
        Ok(())
    }
}
