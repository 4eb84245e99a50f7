//! Records inside the engine: the interfaces between the HDL blocks (docs/engine-hdl.md),
//! defined once here so the model and the HDL share them. `hdl/rtl/gen/roce_rec_pkg.sv` is
//! generated from these layouts (same conventions as `roce_desc_pkg`: byte b of a record is
//! bits [8b+7:8b], little-endian integers, byte arrays in memory order), and the lockstep
//! tests decode the HDL's port values with these Rust types.

use super::{AccessFlags, BitDesc, BitsDesc, CqeStatus, Encap, EnumDesc, PathMtu, SqFlags, SqOpcode, VlanTag};

flags! {
    /// `RxHdr.flags`: what the frame is.
    pub struct RxFlags(u8): "RX_FLAG" {
        /// The frame is a well-formed RoCE packet (v2 over IPv4/IPv6, or v1); the other
        /// fields are meaningful. Clear (and every other field zero) for a well-formed frame
        /// that is not RoCE (ARP, TCP, another UDP port, an IPv4 fragment, MAC control, ...).
        ROCE = 0,
        /// The frame is malformed (`wire::parse_frame` fails; `error` says how): drop it and
        /// count it. Only `error` is set besides this flag; every other field is zero.
        ERROR = 1,
        /// It carried an 802.1Q tag (`vlan_tci`).
        VLAN = 2,
        /// RoCEv2 over IPv6.
        IPV6 = 3,
        /// RoCEv1 (GRH).
        ROCEV1 = 4,
        /// The IP header carried ECN CE.
        CE = 5,
        /// A payload packet of `payload_len` bytes follows on `roce_rx_parse`'s payload
        /// stream (ROCE set and `payload_len` > 0).
        PAYLOAD = 6,
    }
}

flags! {
    /// `RxHdr.ext`: the extension headers present (bit order of `wire::ExtHeaderKind`).
    pub struct ExtBits(u8): "RX_EXT" {
        /// DETH.
        DETH = 0,
        /// RETH.
        RETH = 1,
        /// AtomicETH.
        ATOMIC_ETH = 2,
        /// AETH.
        AETH = 3,
        /// AtomicAckETH.
        ATOMIC_ACK_ETH = 4,
        /// ImmDt.
        IMMDT = 5,
        /// IETH.
        IETH = 6,
        /// CNP padding.
        CNP = 7,
    }
}

code_enum! {
    /// `RxHdr.error`: why a RoCE frame is malformed (the classes of `wire::WireError`).
    pub enum RxError: "RX_ERR" {
        /// Not malformed.
        None = 0,
        /// A layer is truncated, or the IP length runs past the frame.
        Truncated = 1,
        /// IP version, IHL or GRH next header not acceptable.
        BadIpHeader = 2,
        /// UDP length does not match the IP payload length.
        UdpLen = 3,
        /// Unknown or unsupported BTH opcode.
        UnknownOpcode = 4,
        /// BTH transport header version is not 0.
        Tver = 5,
        /// Shorter than the opcode's headers plus the ICRC.
        TooShort = 6,
        /// Payload on an opcode that carries none.
        UnexpectedPayload = 7,
        /// Pad count larger than the payload, or payload+pad not a multiple of 4.
        Pad = 8,
        /// IPv4 header with options (IHL > 5): not parsed by the HDL (the ICRC block rejects
        /// RoCE frames with options before they get here; `wire::parse_frame` accepts them).
        IpOptions = 9,
    }
}

layout! {
    /// The RX header record `roce_rx_parse` emits per frame (1088 bits): every field the
    /// responder and completer need, the payload's place in the frame, and the verdict.
    pub struct RxHdr: "rx_hdr", 136 bytes {
        /// ROCE, ERROR, VLAN, IPV6, ROCEV1, CE, PAYLOAD.
        flags: RxFlags, at 0;
        /// RxError code when flags.ERROR.
        error: RxError, at 1;
        /// BTH opcode.
        opcode: u8, at 2;
        /// BTH byte 1: SE (bit 7), M (bit 6), PadCnt (bits 5:4), TVer (bits 3:0).
        bth_se_m_pad_tver: u8, at 3;
        /// BTH P_Key.
        pkey: u16, at 4;
        /// BTH byte 4: FECN (bit 7), BECN (bit 6), reserved.
        bth_fecn_becn: u8, at 6;
        /// BTH AckReq.
        ack_req: bool, at 7;
        /// BTH destination QP.
        dest_qp: u32, at 8, bits 24;
        /// BTH PSN.
        psn: u32, at 12, bits 24;
        /// UDP source port (0 for RoCEv1).
        udp_sport: u16, at 16;
        /// 802.1Q TCI when flags.VLAN.
        vlan_tci: u16, at 18;
        /// Payload bytes (without pad and ICRC).
        payload_len: u16, at 20;
        /// Offset of the first payload byte in the frame.
        payload_off: u16, at 22;
        /// Ethernet source MAC.
        src_mac: [u8; 6], at 24;
        /// Ethernet destination MAC.
        dst_mac: [u8; 6], at 30;
        /// IP DSCP (RoCEv2) or GRH traffic class bits 7:2.
        dscp: u8, at 36, bits 6;
        /// IP ECN.
        ecn: u8, at 37, bits 2;
        /// The extension headers present.
        ext: ExtBits, at 38;
        /// Source IP (IPv4 as ::ffff:a.b.c.d) or SGID.
        src_ip: [u8; 16], at 40;
        /// Destination IP (IPv4 as ::ffff:a.b.c.d) or DGID.
        dst_ip: [u8; 16], at 56;
        /// RETH or AtomicETH virtual address.
        va: u64, at 72;
        /// RETH or AtomicETH R_Key.
        rkey: u32, at 80;
        /// RETH DMA length.
        dma_len: u32, at 84;
        /// AtomicETH swap (CmpSwap) or add (FetchAdd) data.
        swap_add: u64, at 88;
        /// AtomicETH compare data.
        compare: u64, at 96;
        /// AETH syndrome.
        aeth_syndrome: u8, at 104;
        /// AETH MSN.
        aeth_msn: u32, at 108, bits 24;
        /// ImmDt, or the IETH R_Key.
        imm_or_inv: u32, at 112;
        /// DETH Q_Key.
        deth_qkey: u32, at 116;
        /// DETH source QP.
        deth_src_qp: u32, at 120, bits 24;
        /// AtomicAckETH original remote data.
        atomic_orig: u64, at 128;
    }
}

flags! {
    /// `TxHdr.flags`: the encapsulation `roce_tx_build` writes.
    pub struct TxFlags(u8): "TX_FLAG" {
        /// Insert an 802.1Q tag (`vlan_tci`).
        VLAN = 0,
        /// RoCEv2 over IPv6 (else IPv4), unless ROCEV1.
        IPV6 = 1,
        /// RoCEv1: ethertype 0x8915 and a GRH, no UDP.
        ROCEV1 = 2,
        /// IPv4 Don't Fragment.
        DF = 3,
    }
}

layout! {
    /// The TX packet record `roce_tx_build` turns into a frame (1088 bits): every header
    /// field; lengths, the IPv4 checksum, the BTH pad count, the extension headers the
    /// opcode carries and the ICRC slot are derived. The payload (`payload_len` bytes) comes
    /// on the builder's payload stream.
    pub struct TxHdr: "tx_hdr", 136 bytes {
        /// VLAN, IPV6, ROCEV1, DF.
        flags: TxFlags, at 0;
        /// BTH opcode.
        opcode: u8, at 1;
        /// BTH byte 1 without the pad count: SE (bit 7), M (bit 6), TVer (bits 3:0).
        bth_se_m_tver: u8, at 2;
        /// BTH byte 4: FECN (bit 7), BECN (bit 6), reserved.
        bth_fecn_becn: u8, at 3;
        /// BTH P_Key.
        pkey: u16, at 4;
        /// BTH AckReq.
        ack_req: bool, at 6;
        /// IPv4 TTL or IPv6/GRH hop limit.
        ttl: u8, at 7;
        /// BTH destination QP.
        dest_qp: u32, at 8, bits 24;
        /// BTH PSN.
        psn: u32, at 12, bits 24;
        /// UDP source port (RoCEv2).
        udp_sport: u16, at 16;
        /// 802.1Q TCI when flags.VLAN.
        vlan_tci: u16, at 18;
        /// Payload bytes (without pad and ICRC).
        payload_len: u16, at 20;
        /// IPv4 identification.
        ip_id: u16, at 22;
        /// Ethernet source MAC.
        src_mac: [u8; 6], at 24;
        /// Ethernet destination MAC.
        dst_mac: [u8; 6], at 30;
        /// IPv4 TOS / IPv6 traffic class byte: DSCP (bits 7:2), ECN (bits 1:0).
        tclass: u8, at 36;
        /// Source IP (IPv4 as ::ffff:a.b.c.d) or SGID.
        src_ip: [u8; 16], at 40;
        /// Destination IP (IPv4 as ::ffff:a.b.c.d) or DGID.
        dst_ip: [u8; 16], at 56;
        /// RETH or AtomicETH virtual address.
        va: u64, at 72;
        /// RETH or AtomicETH R_Key.
        rkey: u32, at 80;
        /// RETH DMA length.
        dma_len: u32, at 84;
        /// AtomicETH swap (CmpSwap) or add (FetchAdd) data.
        swap_add: u64, at 88;
        /// AtomicETH compare data.
        compare: u64, at 96;
        /// AETH syndrome.
        aeth_syndrome: u8, at 104;
        /// AETH MSN.
        aeth_msn: u32, at 108, bits 24;
        /// ImmDt, or the IETH R_Key.
        imm_or_inv: u32, at 112;
        /// DETH Q_Key.
        deth_qkey: u32, at 116;
        /// DETH source QP.
        deth_src_qp: u32, at 120, bits 24;
        /// IPv6/GRH flow label.
        flow_label: u32, at 124, bits 20;
        /// AtomicAckETH original remote data.
        atomic_orig: u64, at 128;
    }
}

layout! {
    /// A QP's attributes as `roce_qp_ctx` stores them (one BRAM word per QP, replicated per
    /// reader): the QpCtx fields the transport reads, without the engine state and the
    /// state itself (kept in their owners' tables). `udp_sport` is resolved (never 0: a
    /// QpCtx value of 0 becomes the QPN-derived port). Written by QP_WRITE and QP_MODIFY.
    pub struct QpAttr: "qp_attr", 80 bytes {
        /// PathMtu code (1 = 256 .. 5 = 4096).
        path_mtu: PathMtu, at 0;
        /// Encapsulation.
        encap: Encap, at 1;
        /// Local ACK timeout code (0 = infinite).
        timeout: u8, at 2, bits 5;
        /// Transport retry count.
        retry_cnt: u8, at 3, bits 3;
        /// RNR retry count (7 = infinite).
        rnr_retry: u8, at 4, bits 3;
        /// RNR NAK timer code this QP advertises.
        min_rnr_timer: u8, at 5, bits 5;
        /// READ/atomic requests outstanding as requester.
        max_rd_atomic: u8, at 6;
        /// READ/atomic requests accepted as responder.
        max_dest_rd_atomic: u8, at 7;
        /// Protection domain.
        pd: u32, at 8;
        /// Responder access flags.
        access: AccessFlags, at 12;
        /// Remote QP number.
        dest_qpn: u32, at 16, bits 24;
        /// CQ of send completions.
        send_cq: u16, at 20, bits 14;
        /// CQ of receive completions.
        recv_cq: u16, at 22, bits 14;
        /// SQ ring base (DMA address).
        sq_base: u64, at 24;
        /// RQ ring base (DMA address).
        rq_base: u64, at 32;
        /// log2 of the SQ ring's entries.
        sq_log_size: u8, at 40, bits 4;
        /// log2 of the RQ ring's entries.
        rq_log_size: u8, at 41, bits 4;
        /// DSCP of sent packets.
        dscp: u8, at 42, bits 6;
        /// IPv4 TTL / IPv6 hop limit.
        hop_limit: u8, at 43;
        /// UDP source port (resolved, never 0).
        udp_sport: u16, at 44;
        /// 802.1Q tag of the QP's frames (VALID clear: the port's VLAN register).
        vlan: VlanTag, at 46;
        /// Destination MAC.
        dest_mac: [u8; 6], at 48;
        /// IPv6 flow label.
        flow_label: u32, at 56, bits 20;
        /// log2 of the send window over 16 WQEs (QpCtx.sq_win_shift).
        sq_win_shift: u8, at 60, bits 3;
        /// First block of the window in the deep-window pool (QpCtx.sq_win_base).
        sq_win_base: u16, at 62;
        /// Destination IP (IPv4-mapped for RoCEv2 over IPv4).
        dest_ip: [u8; 16], at 64;
    }
}

layout! {
    /// A response `roce_resp` asks the TX side to send (`rd_rsp_t`): the READ responses of a
    /// READ request (new or duplicate), or the ATOMIC Acknowledge of an atomic request. The
    /// READ response generator splits `len` bytes at `dma` into path-MTU packets
    /// (FIRST/MIDDLE/LAST or ONLY, at least one) with PSNs from `psn`, each FIRST/LAST/ONLY
    /// with an AETH of MSN `msn`.
    pub struct RdRsp: "rd_rsp", 40 bytes {
        /// Local QP number.
        qpn: u32, at 0, bits 24;
        /// PSN of the first response packet.
        psn: u32, at 4, bits 24;
        /// MSN the AETHs carry.
        msn: u32, at 8, bits 24;
        /// An ATOMIC Acknowledge (else READ responses).
        atomic: bool, at 12;
        /// The QP's path MTU (the response packets' size).
        path_mtu: PathMtu, at 13;
        /// READ: bytes to send (the RETH DMA length; 0 gives one empty ONLY packet).
        len: u32, at 16;
        /// READ: DMA address of the first byte (the R_Key check's translation).
        dma: u64, at 24;
        /// ATOMIC Acknowledge: the original remote data.
        orig: u64, at 32;
    }
}

flags! {
    /// `TxDesc.flags`.
    pub struct TxDescFlags(u8): "TX_DESC_FLAG" {
        /// BTH SE (solicited event).
        SE = 0,
        /// BTH AckReq.
        ACK_REQ = 1,
        /// BTH BECN (set on CNPs).
        BECN = 2,
    }
}

layout! {
    /// A packet to send, as a transport block (requester, READ response generator, ACK
    /// queue, CNP generator) hands it to the TX arbiter (`tx_desc_t`): the BTH and extension
    /// fields the opcode carries. The arbiter adds the addressing (the QP's attributes: dest
    /// QPN, MAC, IP, VLAN, DSCP, hop limit, UDP port; the port's MAC/IP/GID) to make the
    /// `tx_hdr_t` for `roce_tx_build`. `payload_len` bytes follow on the source's payload
    /// stream.
    pub struct TxDesc: "tx_desc", 64 bytes {
        /// Local QP (whose attributes address the packet).
        qpn: u32, at 0, bits 24;
        /// BTH opcode.
        opcode: u8, at 4;
        /// SE, ACK_REQ, BECN.
        flags: TxDescFlags, at 5;
        /// Payload bytes.
        payload_len: u16, at 6;
        /// BTH PSN.
        psn: u32, at 8, bits 24;
        /// AETH MSN.
        aeth_msn: u32, at 12, bits 24;
        /// ImmDt, or the IETH R_Key.
        imm_or_inv: u32, at 16;
        /// RETH or AtomicETH R_Key.
        rkey: u32, at 20;
        /// RETH or AtomicETH virtual address.
        va: u64, at 24;
        /// RETH DMA length.
        dma_len: u32, at 32;
        /// AETH syndrome.
        aeth_syndrome: u8, at 36;
        /// AtomicETH swap (CmpSwap) or add (FetchAdd) data.
        swap_add: u64, at 40;
        /// AtomicETH compare data.
        compare: u64, at 48;
        /// AtomicAckETH original remote data.
        atomic_orig: u64, at 56;
    }
}

layout! {
    /// `roce_comp`'s state of a QP as `roce_req` reads it at the start of a visit
    /// (`comp_rd_t`, model `engine::req::CompView`): what limits sending and the last rewind
    /// requested. SQ indices are free-running 32-bit; times are cycles of the engine clock.
    pub struct CompRd: "comp_rd", 32 bytes {
        /// Oldest unacknowledged PSN.
        una: u32, at 0, bits 24;
        /// Rewind request: the PSN to send again from.
        rw_psn: u32, at 4, bits 24;
        /// SQ consumer index (the oldest WQE not completed).
        sq_ci: u32, at 8;
        /// Rewind request: SQ index of the WQE that carries `rw_psn`.
        rw_idx: u32, at 12;
        /// Rewind request: packet index of `rw_psn` in that WQE.
        rw_pkt: u32, at 16, bits 24;
        /// RNR back-off: no request before this cycle (low 32 bits, compared by difference).
        rnr_until: u32, at 20;
        /// READ/atomic WQEs completed (wrapping).
        rd_done: u8, at 24;
        /// Rewind request generation (wrapping; the requester applies a request whose
        /// generation differs from the one it applied last).
        rw_gen: u8, at 25;
    }
}

layout! {
    /// `roce_req`'s state of a QP as `roce_comp` reads it at the start of an operation and
    /// its timer scanner reads it (`req_rd_t`, model `engine::comp::ReqView`).
    pub struct ReqRd: "req_rd", 32 bytes {
        /// One past the highest PSN sent.
        max_sent: u32, at 0, bits 24;
        /// The next PSN the requester sends.
        next_psn: u32, at 4, bits 24;
        /// SQ index one past the last WQE started (PSNs assigned).
        started: u32, at 8;
        /// SQ index one past the last WQE fetched into the send window.
        fetched: u32, at 12;
        /// SQ producer index.
        sq_pi: u32, at 16;
        /// The requester's local ACK timer deadline (IB timer ticks) when `busy`.
        busy_deadline: u32, at 20;
        /// The rewind generation the requester applied last.
        gen: u8, at 24;
        /// `busy_deadline` is set (a packet went out with nothing outstanding, timeout not 0).
        busy: bool, at 25;
    }
}

layout! {
    /// One entry of the send window (`sq_win_t`, model `engine::qp_ctx::SqEntry`): a WQE
    /// `roce_req` fetched and `roce_comp` has not completed, at entry `SQ index mod
    /// window` of its QP's window (its own 16 entries or its blocks of the deep-window pool,
    /// QpCtx.sq_win_shift). Written by the requester when the WQE arrives (all but the
    /// PSNs) and when it starts it (`first_psn`, `npkts`); read by the completer.
    pub struct SqWin: "sq_win", 24 bytes {
        /// The WQE's wr_id.
        wr_id: u64, at 0;
        /// First PSN (valid once started).
        first_psn: u32, at 8, bits 24;
        /// PSNs it spans (valid once started).
        npkts: u32, at 12, bits 24;
        /// Message length in bytes (SqWqe.total_len; 8 for atomics; 0 if malformed).
        len: u32, at 16;
        /// Operation (SEND for a malformed WQE).
        opcode: SqOpcode, at 20;
        /// SIGNALED, SOLICITED, INLINE, FENCE.
        flags: SqFlags, at 21;
        /// SUCCESS, or the status a malformed WQE completes with (LOC_QP_OP_ERR, LOC_LEN_ERR).
        status: CqeStatus, at 22;
    }
}

/// All internal records, for the generator.
pub const RECORDS: &[super::LayoutDesc] = &[
    RxHdr::LAYOUT,
    TxHdr::LAYOUT,
    QpAttr::LAYOUT,
    RdRsp::LAYOUT,
    TxDesc::LAYOUT,
    CompRd::LAYOUT,
    ReqRd::LAYOUT,
    SqWin::LAYOUT,
];

code_enum! {
    /// `roce_qp_ctx`'s context-op port (`CtxOpReq.code`): the changes QP_WRITE, QP_MODIFY and
    /// transport errors make to a QP's engine state, sent to the blocks that own that state
    /// (docs/engine-hdl.md, "The transport"). Each owner applies the op to its own tables
    /// and acknowledges it. A command's ops go out in the order of the codes, each at most
    /// once. Model: `engine::qp_ctx::CtxOp`, applied by `Qp::ctx_op`.
    pub enum CtxOpCode: "CTX_OP" {
        /// Zero the QP's engine state: PSNs, requester and responder state, ring indices
        /// (QP_WRITE; QP_MODIFY to Reset). Argument 0.
        Reset = 0,
        /// Set the responder's expected PSN to the argument (QP_WRITE; QP_MODIFY with
        /// RQ_PSN).
        SetRqPsn = 1,
        /// Set the requester's next, oldest unacknowledged and highest sent PSN to the
        /// argument (QP_WRITE; QP_MODIFY with SQ_PSN).
        SetSqPsn = 2,
        /// Rtr -> Rts: load the retry counters and the send window; the argument is a
        /// CtxRtsArg (RETRY_CNT, RNR_RETRY, WIN_SHIFT, WIN_BASE).
        EnterRts = 3,
        /// The QP entered Err (QP_MODIFY to Err from another state, or a transport error):
        /// flush its outstanding work with WrFlushErr completions. Argument 0.
        EnterErr = 4,
    }
}

/// The argument of `CtxOpCode::EnterRts`.
pub const CTX_RTS_ARG: BitsDesc = BitsDesc {
    name: "CtxRtsArg",
    sv_prefix: "CTX_RTS",
    width: 32,
    desc: "The argument of CTX_OP_ENTER_RTS: the QP's retry counts, loaded into the completer's \
           counters of retries left, and its send window, which the requester keeps.",
    bits: &[
        BitDesc { name: "RETRY_CNT", lsb: 0, width: 3, desc: "Transport retries (QpAttr.retry_cnt)." },
        BitDesc { name: "RNR_RETRY", lsb: 8, width: 3, desc: "RNR retries, 7 = infinite (QpAttr.rnr_retry)." },
        BitDesc {
            name: "WIN_SHIFT",
            lsb: 12,
            width: 3,
            desc: "Send window 16 << WIN_SHIFT WQEs (QpAttr.sq_win_shift).",
        },
        BitDesc {
            name: "WIN_BASE",
            lsb: 16,
            width: 16,
            desc: "Its first deep-window pool block (QpAttr.sq_win_base).",
        },
    ],
};

/// Enumerations of the block interfaces that are not record fields, for the generator.
pub const PORT_ENUMS: &[EnumDesc] = &[CtxOpCode::DESC];

/// Bit fields of the block interfaces that are not record fields, for the generator.
pub const PORT_BITS: &[BitsDesc] = &[CTX_RTS_ARG];

bundle! {
    /// A DMA request (`dma_req_t`): read `len` bytes of host memory at `addr` (the data comes
    /// back on the requester's read-data stream), or write the next `len` bytes of the
    /// requester's write-data stream there. The payload of the DMA read and write request
    /// ports (`m_dma_rd`, `m_wqe_rd`, `m_dma_wr`; the arbiters' `s_req` / `m_req`).
    pub struct DmaReq: "dma_req" {
        /// Host (bus) address of the first byte.
        addr: u64, bits 64;
        /// Bytes (1 to 65535).
        len: u16, bits 16;
    }
}

bundle! {
    /// An MR check request to `roce_mr_check` (`mr_req_t`, the `m_mr` / `s_axis_req` ports):
    /// op 0 checks that `key` names a valid region of `pd` allowing every access bit in `need`
    /// and containing `[va, va + len)`; op 1 invalidates the region of `key`. The requester's
    /// user bits travel beside it (their width is the port's).
    pub struct MrReq: "mr_req" {
        /// Access bits the region must allow (engine::mr_check's `need`).
        need: u8, bits 4;
        /// Bytes (0 passes the bounds check).
        len: u32, bits 32;
        /// First virtual address.
        va: u64, bits 64;
        /// Protection domain of the QP.
        pd: u32, bits 32;
        /// L_Key or R_Key.
        key: u32, bits 32;
        /// 0 check, 1 invalidate.
        op: bool, bits 1;
    }
}

bundle! {
    /// The result of an MR check (`mr_res_t`, the `s_mr` / `m_axis_res` ports), in request
    /// order, with the request's user bits beside it.
    pub struct MrRes: "mr_res" {
        /// DMA address of `va` (status 0).
        dma: u64, bits 64;
        /// 0 passed, else the first failure: 1 key, 2 PD, 3 access, 4 bounds.
        status: u8, bits 3;
    }
}

bundle! {
    /// A context op (`ctx_op_req_t`): `roce_qp_ctx`'s `ctx_op` port and the owners' `s_ctx`
    /// ports. Each owner applies `code` (a `CtxOpCode`) with `arg` to QP `qpn`.
    pub struct CtxOpReq: "ctx_op_req" {
        /// Argument (a PSN, a `CtxRtsArg` or 0).
        arg: u32, bits 32;
        /// Local QP number.
        qpn: u32, bits 24;
        /// Op code.
        code: u8, bits 8;
    }
}

/// The port bundles, for the generator.
pub const BUNDLES: &[super::BundleDesc] = {
    use super::Bundle;
    &[DmaReq::DESC, MrReq::DESC, MrRes::DESC, CtxOpReq::DESC]
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Bundle;

    /// Fields are laid end to end from bit 0, the widths add up, and a bundle survives packing.
    #[test]
    fn bundles_pack_and_unpack() {
        for b in BUNDLES {
            let mut at = 0;
            for f in b.fields {
                assert_eq!(f.lsb, at, "{}.{}", b.name, f.name);
                assert!((1..=64).contains(&f.width), "{}.{}", b.name, f.name);
                at += f.width;
            }
            assert_eq!(at, b.width, "{}", b.name);
        }
        let m = MrReq { need: 0xA, len: 0x8765_4321, va: 0x0123_4567_89AB_CDEF, pd: 7, key: 0xDEAD_BEEF, op: true };
        let mut w = [0u32; 8];
        m.to_words(&mut w);
        assert_eq!(w[0] & 0xF, 0xA);
        assert_eq!(w[0] >> 4, 0x0765_4321, "len from bit 4");
        assert_eq!(w[5] >> 4 & 1, 1, "op is bit 164");
        assert_eq!(MrReq::from_words(&w), m);
        let d = DmaReq { addr: u64::MAX - 5, len: 0xBEEF };
        d.to_words(&mut w);
        assert_eq!(&w[..3], &[u32::MAX - 5, u32::MAX, 0xBEEF]);
        assert_eq!(DmaReq::from_words(&w), d);
        let c = CtxOpReq { arg: 0x1234_5678, qpn: 0xAB_CDEF, code: 3 };
        c.to_words(&mut w);
        assert_eq!(&w[..2], &[0x1234_5678, 0x03AB_CDEF]);
        assert_eq!(CtxOpReq::from_words(&w), c);
        let r = MrRes { dma: 0x1000, status: 4 };
        r.to_words(&mut w);
        assert_eq!(&w[..3], &[0x1000, 0, 4]);
        assert_eq!(MrRes::from_words(&w), r);
    }
}
