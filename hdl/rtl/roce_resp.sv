// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_resp: the RC responder. Owns the per-QP responder state in BRAM (expected PSN, MSN,
// the message in progress with its receive WQE, RQ indices, responder resources) and processes
// one request packet at a time, in arrival order, as the engine model's responder
// (engine::resp): PSN check and duplicates, opcode sequence / access / length, RNR, R_Key and
// L_Key checks, SEND scatter over the WQE's SGEs, WRITE, READ response and atomic requests,
// receive completions, NAKs, QP errors, RQ doorbells, flushes; receive WQEs read ahead for one
// QP at a time. A packet's ACK, response request, completion and error wait until its DMA
// writes are out. The behaviour step by step: docs/engine-hdl.md.
// Ports: s_req (rx_hdr_t, qp_attr_t, state) + s_axis_pay, s_db (RQ doorbells), s_ctx / s_strd,
//   m_attr (flushes), m_mr / s_mr, DMA read and write, m_ack (to roce_ack_q), m_rsp (rd_rsp_t
//   to roce_rd_rsp), m_cpl (CQEs), m_err, counters.
// Latency (MR check 4 cycles, DMA read latency L): a WRITE packet's first DMA write request 13
//   cycles after its record is taken; a SEND FIRST/ONLY 2 more when its WQE was read ahead,
//   else L + 3; its ACK 3 cycles after its last DMA data beat.
// Throughput: a packet costs max(about 15 cycles of header work, its payload beats + 1);
//   duplicates scan the resources at 3 cycles each; atomics wait for their DMA read.
// Model blocks::resp.
//
// Parameters:
//   LOG_N     log2 of the number of QPs (default 10 = 1024).
//   LOG_RSRC  log2 of the responder resources per QP (CAPS.LOG_MAX_RD_ATOMIC, default 4).

`resetall
`default_nettype none

module roce_resp #(
  parameter int LOG_N = 10,
  parameter int LOG_RSRC = 4,
  localparam int HDR_W = 8 * roce_rec_pkg::RX_HDR_BYTES,
  localparam int ATTR_W = 8 * roce_rec_pkg::QP_ATTR_BYTES,
  localparam int RSP_W = 8 * roce_rec_pkg::RD_RSP_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,
  input  wire logic              soft_reset,
  output      logic              init_done,

  // request packets (from the RX dispatch) and their payload (roce_rx_parse's stream)
  input  wire logic              s_req_valid,
  output      logic              s_req_ready,
  input  wire logic [HDR_W-1:0]  s_req_hdr,
  input  wire logic [ATTR_W-1:0] s_req_attr,
  input  wire logic [511:0]      s_axis_pay_tdata,
  input  wire logic [63:0]       s_axis_pay_tkeep,
  input  wire logic              s_axis_pay_tvalid,
  output      logic              s_axis_pay_tready,
  input  wire logic              s_axis_pay_tlast,

  // RQ doorbells
  input  wire logic              s_db_valid,
  output      logic              s_db_ready,
  input  wire logic [23:0]       s_db_qpn,
  input  wire logic [15:0]       s_db_pi,

  // context ops (roce_qp_ctx)
  input  wire logic              s_ctx_valid,
  output      logic              s_ctx_ready,
  input  wire roce_rec_pkg::ctx_op_req_t s_ctx,
  output      logic              ctx_done,

  // state reads (QP_READ)
  input  wire logic              s_strd_valid,
  output      logic              s_strd_ready,
  input  wire logic [23:0]       s_strd_qpn,
  output      logic              strd_done,
  output      logic [23:0]       strd_rq_psn,
  output      logic [15:0]       strd_rq_pi,
  output      logic [15:0]       strd_rq_ci,

  // attribute lookup (flush)
  output      logic              m_attr_valid,
  input  wire logic              m_attr_ready,
  output      logic [23:0]       m_attr_qpn,
  input  wire logic              s_attr_valid,
  input  wire logic [ATTR_W-1:0] s_attr_data,

  // key checks (roce_mr_check)
  output      logic              m_mr_valid,
  input  wire logic              m_mr_ready,
  output      roce_rec_pkg::mr_req_t m_mr,
  output      logic [1:0]        m_mr_user,
  input  wire logic              s_mr_valid,
  output      logic              s_mr_ready,
  input  wire roce_rec_pkg::mr_res_t s_mr,
  input  wire logic [1:0]        s_mr_user,

  // DMA reads (RQ WQEs, atomics): data lane-0 aligned, tuser = the read failed
  output      logic              m_dma_rd_valid,
  input  wire logic              m_dma_rd_ready,
  output      roce_rec_pkg::dma_req_t m_dma_rd,
  input  wire logic [511:0]      s_dma_rd_tdata,
  input  wire logic              s_dma_rd_tvalid,
  output      logic              s_dma_rd_tready,
  input  wire logic              s_dma_rd_tlast,
  input  wire logic              s_dma_rd_tuser,

  // DMA writes (payload, atomic results): request, then lane-0 aligned data
  output      logic              m_dma_wr_valid,
  input  wire logic              m_dma_wr_ready,
  output      roce_rec_pkg::dma_req_t m_dma_wr,
  output      logic [511:0]      m_axis_dma_wr_tdata,
  output      logic [63:0]       m_axis_dma_wr_tkeep,
  output      logic              m_axis_dma_wr_tvalid,
  input  wire logic              m_axis_dma_wr_tready,
  output      logic              m_axis_dma_wr_tlast,

  // ACK/NAK requests (before coalescing)
  output      logic              m_ack_valid,
  input  wire logic              m_ack_ready,
  output      logic [23:0]       m_ack_qpn,
  output      logic [23:0]       m_ack_psn,
  output      logic [7:0]        m_ack_syndrome,
  output      logic [23:0]       m_ack_msn,

  // READ responses / atomic ACKs to send
  output      logic              m_rsp_valid,
  input  wire logic              m_rsp_ready,
  output      logic [RSP_W-1:0]  m_rsp_data,

  // receive completions (CQE image, CQ index): roce_cq's s_axis_cpl
  output      logic              m_cpl_valid,
  input  wire logic              m_cpl_ready,
  output      logic [255:0]      m_cpl_tdata,
  output      logic [15:0]       m_cpl_tuser,

  // QP errors (to roce_qp_ctx): cause = the CQE status code
  output      logic              m_err_valid,
  input  wire logic              m_err_ready,
  output      logic [23:0]       m_err_qpn,
  output      logic [7:0]        m_err_cause,

  // counters: one-cycle pulses
  output      logic              cnt_dup,
  output      logic              cnt_nak_seq,
  output      logic              cnt_nak_rnr,
  output      logic              cnt_nak_inv,
  output      logic              cnt_nak_acc,
  output      logic              cnt_nak_op,
  output      logic              cnt_dma_err,
  output      logic              cnt_drop
);

  localparam int N = 1 << LOG_N;
  localparam int R = 1 << LOG_RSRC;

  // ---------------------------------------------------------------- constants
  localparam logic [7:0] SYN_ACK = 8'h1F;
  localparam logic [7:0] NAK_SEQ = 8'h60;
  localparam logic [7:0] NAK_INV = 8'h61;
  localparam logic [7:0] NAK_ACC = 8'h62;
  localparam logic [7:0] NAK_OP = 8'h63;

  localparam logic [1:0] CUR_NONE = 2'd0;
  localparam logic [1:0] CUR_SEND = 2'd1;
  localparam logic [1:0] CUR_WRITE = 2'd2;

  localparam logic [2:0] MR_OK = 3'd0;

  localparam logic [3:0] ACC_LOCAL_WRITE = 4'b0001;
  localparam logic [3:0] ACC_REMOTE_WRITE = 4'b0010;
  localparam logic [3:0] ACC_REMOTE_READ = 4'b0100;
  localparam logic [3:0] ACC_REMOTE_ATOMIC = 4'b1000;

  // ---------------------------------------------------------------- per-QP state
  typedef struct packed {
    logic [23:0]  epsn;
    logic [23:0]  msn;
    logic         nak_sent;
    logic         dead;       // a fatal error or ENTER_ERR: drop packets until RESET
    logic [1:0]   cur;        // message in progress
    logic [31:0]  rq_pi;
    logic [31:0]  rq_ci;
    logic [LOG_RSRC-1:0] rs_head;
    logic [LOG_RSRC:0]   rs_cnt;
    logic [31:0]  off;        // bytes of the message placed so far
    logic [63:0]  va;         // WRITE: RETH VA
    logic [31:0]  rkey;       // WRITE: RETH R_Key
    logic [31:0]  dma_len;    // WRITE: RETH length
    logic [63:0]  wr_id;      // SEND: the receive WQE
    logic [1:0]   nsge;
    logic [383:0] sge;        // SEND: the WQE's SGEs, RqWqe byte order
  } ctx_t;
  localparam int CTX_W = 727 + 2 * LOG_RSRC;  // $bits(ctx_t) (Yosys 0.23 has no $bits of a type)

  // resource entry: {atomic, psn, end psn (psn + response packets), orig}
  localparam int RS_W = 1 + 24 + 24 + 64;

  (* ram_style = "block" *) logic [CTX_W-1:0] ctx_mem [N];
  (* ram_style = "block" *) logic [RS_W-1:0] rs_mem [N * R];

  logic [LOG_N:0] init_idx;
  assign init_done = init_idx[LOG_N];

  // PSN order and CQE images: roce_util_pkg

  // ---------------------------------------------------------------- FSM
  typedef enum logic [5:0] {
    S_IDLE, S_RD0, S_RD1, S_DISPATCH,
    S_DECIDE, S_EXEC,
    S_RS_ADDR, S_RS_WAIT, S_RS_CMP,
    S_WALK,
    S_MR_ISSUE, S_MR_WAIT, S_MR_DONE,
    S_DMA_REQ, S_DMA_DATA, S_DMA_DONE,
    S_AT_WR,
    S_SCAT, S_SCAT_ACC, S_AT_WAIT,
    S_FIN, S_SEND_CPL,
    S_OUT, S_WB,
    S_FL_ATTR, S_FL_ATTR_WAIT, S_FL_NEXT, S_FL_CPL,
    S_PF_HIT, S_PF_ATTR, S_PF_ATTR_WAIT, S_PF_SET,
    S_DMA_PRE, S_DB_PF, S_WALK_TAKE
  } state_t;
  // one-hot asked of Yosys: its fsm_recode makes FSMs of 32 states or more binary (st has
  // 35), whose next-state logic mapped to 3 chained LUT6+MUXF7/8/9 (14 levels on xcup)
  (* fsm_encoding = "one-hot" *) state_t st;

  typedef enum logic [1:0] { K_PKT, K_DB, K_CTX, K_STRD } kind_t;
  kind_t kind;

  // what a DMA read is for
  typedef enum logic [1:0] { RD_SEND_WQE, RD_IMM_WQE, RD_ATOMIC, RD_FLUSH_WQE } rd_for_t;
  rd_for_t rd_for;

  logic [LOG_N-1:0] qpn;
  logic [23:0]      qpn24;
  ctx_t             c;     // the QP's state, modified in place, written back in S_WB

  // the packet (the records carry fields other blocks use)
  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::rx_hdr_t  h;
  roce_rec_pkg::qp_attr_t a;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0]            info;  // op_info of the opcode

  logic i_send, i_write, i_read, i_atomic, i_imm, i_inv, i_start, i_end, i_cas, i_pay, i_se;
  assign i_send = info[roce_opcode_pkg::OPI_SEND];
  assign i_write = info[roce_opcode_pkg::OPI_WRITE];
  assign i_read = info[roce_opcode_pkg::OPI_READ_REQ];
  assign i_atomic = info[roce_opcode_pkg::OPI_ATOMIC];
  assign i_imm = info[roce_opcode_pkg::OPI_IMM];
  assign i_inv = info[roce_opcode_pkg::OPI_INV];
  assign i_start = info[roce_opcode_pkg::OPI_START];
  assign i_end = info[roce_opcode_pkg::OPI_END];
  assign i_cas = h.opcode == 8'h13;
  assign i_pay = h.flags[roce_rec_pkg::RX_FLAG_PAYLOAD_BIT];
  assign i_se = h.bth_se_m_pad_tver[7];

  logic [15:0] plen;
  assign plen = h.payload_len;
  // registered: a is loaded as a packet is taken (or by the flush/prefetch paths, which do
  // not use these), at least two cycles before S_EXEC reads them
  logic [3:0] log_mtu;
  logic [15:0] mtu;
  always_ff @(posedge clk) begin
    log_mtu <= 4'd7 + a.path_mtu[3:0];
    mtu <= 16'd1 << (4'd7 + a.path_mtu[3:0]);
  end

  // doorbell / context-op inputs
  logic [7:0]  k_op;
  logic [23:0] k_arg;
  logic        unused_arg;
  assign unused_arg = ^s_ctx.arg[31:24];  // PSN-sized arguments only
  logic [15:0] k_pi;

  logic rq_empty;
  assign rq_empty = c.rq_ci == c.rq_pi;

  // ---------------------------------------------------------------- the packet's plan
  logic        exec_ack;   // executed a SEND/WRITE packet: ACK it if AckReq
  logic        fatal;      // NAK err_syn, QP to error
  logic [7:0]  err_syn;
  logic        fin_send;   // S_FIN: a SEND packet's data was placed
  logic        fin_wend;   // S_FIN: a WRITE message ended
  logic        len_err, prot_err;  // SEND: SGEs too short / a failed L_Key check
  logic        o_ack, o_rsp, o_cpl;
  logic [23:0] ack_psn;
  logic [7:0]  ack_syn;
  logic [255:0] cpl_img;
  logic [15:0] cpl_cq;
  roce_rec_pkg::rd_rsp_t rsp;

  // MR checks (up to 3 for a SEND's SGE pieces; 1 otherwise)
  logic [1:0]  mr_n, mr_i, mr_got;
  logic        mr_inv;     // an invalidate request (SEND with invalidate)
  logic [3:0]  mr_need_r;
  logic [3*32-1:0] mr_key, mr_len;
  logic [3*64-1:0] mr_va, mr_dma;
  logic [2:0]  mr_ok;

  // SGE walk
  // the SEND's SGE walk (S_WALK skips c.off bytes, S_WALK_TAKE places plen), one SGE per
  // cycle on registers: the SGE at wk_i in wk_len/wk_key/wk_lo/wk_hi, the next one loaded as
  // the walk moves on
  logic [1:0]  wk_i, wk_nchunk;
  logic [31:0] wk_skip;        // S_WALK: bytes still to skip
  logic [15:0] wk_rest;        // bytes still to place
  logic [31:0] wk_len;         // S_WALK: the SGE's length; S_WALK_TAKE: what it has left
  logic [31:0] wk_key;
  logic [32:0] wk_lo;          // the SGE's address (+ the skip, carry in bit 32)
  logic [31:0] wk_hi, wk_hi1;  // its high half, + 1
  logic [3*16-1:0] wk_clen;

  // scatter command
  logic         sc_valid, sc_ready, sc_pay;
  logic [2:0]   sc_we;
  logic [47:0]  sc_len;
  logic [191:0] sc_addr;

  // duplicate scan
  logic [LOG_RSRC:0]   rs_i;
  logic [LOG_RSRC-1:0] rs_slot;
  logic [RS_W-1:0]     rs_q;

  // DMA read data (first beat) and failure (the WQE's reserved bytes are tested as it loads)
  /* verilator lint_off UNUSEDSIGNAL */
  logic [511:0] rd_data;
  /* verilator lint_on UNUSEDSIGNAL */
  logic         rd_err, rd_first;

  // ---------------------------------------------------------------- RQ WQE prefetch
  // One QP at a time (pf_qpn) has its next receive WQEs read ahead: from its rq ci up to
  // PF_D of them while ci + issued != pi, into a ring of PF_D bodies indexed by the WQE
  // index mod PF_D. Reads go out on the block's DMA read port between the FSM's own reads;
  // the port answers in request order, so the first pf_out read results are the
  // prefetcher's. The FSM takes a SEND's (or WRITE with immediate's) receive WQE from the
  // ring when the prefetcher follows its QP and the head is the QP's rq ci (waiting for the
  // head's read if it is still in flight); otherwise it reads the WQE itself as before and
  // points the prefetcher at the QP (once no prefetch read is in flight). A doorbell points
  // an idle prefetcher at its QP. RESET, ENTER_ERR and the flush stop the prefetcher if it
  // follows the QP; its reads still in flight are then dropped as they land.
  localparam int PF_LD = 4;
  localparam int PF_D = 1 << PF_LD;
  (* ram_style = "distributed" *) logic [511:0] pf_body [PF_D];
  logic [PF_D-1:0]  pf_berr;   // the body's read failed
  logic             pf_act;
  logic [LOG_N-1:0] pf_qpn;
  logic [31:0]      pf_head, pf_nxt, pf_pi;  // WQE indices: ring head, next to read, RQ PI
  logic [63:0]      pf_base;
  logic [PF_LD:0]   pf_out;    // prefetch reads in flight
  logic [511:0]     pf_q;      // the head's body (registered read)
  logic             pf_eq;
  // WQEs read or being read, from the head: pf_nxt - pf_head (at most PF_D), kept as a count
  // beside them (+1 by an issue, -1 by a pop, 0 by a (re)start), not a 32-bit subtraction
  logic [PF_LD:0]   pf_alloc;
  logic             pf_none;
  assign pf_none = pf_alloc == '0;
  logic             pf_beat;   // a read-data beat that is the prefetcher's
  assign pf_beat = s_dma_rd_tvalid && pf_out != '0;
  logic             fsm_beat;
  assign fsm_beat = s_dma_rd_tvalid && pf_out == '0;
  logic [PF_LD-1:0] pf_land;   // the ring slot of the read landing now
  assign pf_land = pf_nxt[PF_LD-1:0] - pf_out[PF_LD-1:0];
  logic [14:0]      pf_mask;   // 2^(RQ log size) - 1, set with the prefetcher's QP
  // the QP's WQE at its rq ci is (or will be) in the ring head
  logic             pf_mine, pf_ready;
  logic             dq_mine, dq_ready;  // registered in S_DMA_PRE for S_DMA_REQ
  // (pf_at: its compares registered for S_DMA_PRE: the states before it (S_EXEC, S_FIN,
  // S_FL_NEXT, S_MR_DONE, S_DMA_REQ waiting) move neither pf_qpn, pf_head, qpn nor c.rq_ci)
  logic             pf_at;
  always_ff @(posedge clk) pf_at <= pf_qpn == qpn && pf_head == c.rq_ci;
  assign pf_mine = pf_act && pf_at && !pf_none;
  assign pf_ready = {1'b0, pf_alloc[PF_LD:0]} > {1'b0, pf_out};
  // The address of the WQE at pf_nxt, registered (the 64-bit add behind the issue decision
  // was 24 logic levels): it follows pf_nxt/pf_base/pf_mask a cycle late, which is never
  // seen: an issue raises m_dma_rd_valid, so the next one is at least two cycles later, and
  // a (re)start of the prefetcher clears pf_fresh for the cycle after it.
  // pf_room (a WQE to read and a free ring slot) is registered the same way: it only lags
  // by that cycle, or by one after a doorbell or a consumed head (which only add room).
  logic [63:0]      pf_addr;
  logic [21:0]      pf_lo;
  assign pf_lo = {1'b0, pf_base[20:0]} + {1'b0, pf_nxt[14:0] & pf_mask, 6'd0};
  logic             pf_fresh;
  logic             pf_room;
  logic [31:0]      pf_nxt1, pf_head1, rq_ci1;
  logic             pf_issue;
  assign pf_issue = pf_act && pf_fresh && pf_room &&
                    !m_dma_rd_valid && st != S_DMA_REQ && st != S_DMA_DATA && st != S_PF_SET;
  logic [31:0]      db_pi;     // a doorbell's PI extended against the free-running one
  // = c.rq_pi + (k_pi - rq_pi[15:0]) mod 2^16: the low half is k_pi, the high half carries
  // when k_pi is below the low half (a compare beside an increment, not two chained adds)
  assign db_pi = {k_pi < c.rq_pi[15:0] ? c.rq_pi[31:16] + 16'd1 : c.rq_pi[31:16], k_pi};
  always_ff @(posedge clk) begin
    // (pf_mask < 2^15: rq_log_size is 4 bits; the add carry-selected as for rq_slot_addr)
    pf_addr <= {pf_lo[21] ? pf_base[63:21] + 43'd1 : pf_base[63:21], pf_lo[20:0]};
    pf_room <= pf_nxt != pf_pi && !pf_alloc[PF_LD];
    // the increments, registered the same way: pf_nxt1 is read by an issue (pf_nxt moved
    // only by an issue or a start in the cycle before, both of which forbid one), rq_ci1 and
    // pf_head1 in S_DMA_REQ (S_DMA_PRE before it moves neither)
    pf_nxt1 <= pf_nxt + 32'd1;
    pf_head1 <= pf_head + 32'd1;
    rq_ci1 <= c.rq_ci + 32'd1;
    pf_q <= pf_body[pf_head[PF_LD-1:0]];
    pf_eq <= pf_berr[pf_head[PF_LD-1:0]];
    if (pf_beat && s_dma_rd_tlast) pf_body[pf_land] <= s_dma_rd_tdata;
    // (decoded: a variable-index bit write becomes a shift in Yosys)
    for (int i = 0; i < PF_D; i++)
      if (pf_beat && s_dma_rd_tlast && pf_land == PF_LD'(i)) pf_berr[i] <= s_dma_rd_tuser;
  end

  // atomic
  logic [63:0] at_orig, at_new;
  logic        aw_req, aw_data;

  // ---------------------------------------------------------------- output queue
  // A packet's ACK/NAK, response request, completion and QP error wait here until the DMA
  // writes issued for it (and before it) are out on m_dma_wr/m_axis_dma_wr, so the FSM can
  // take the next packet while the previous payload still streams.
  typedef struct packed {
    logic [15:0]      need;     // DMA writes that must be out first (count, wraps)
    logic             ack_v;
    logic [23:0]      ack_qpn;
    logic [23:0]      ack_psn;
    logic [7:0]       ack_syn;
    logic [23:0]      ack_msn;
    logic             rsp_v;
    logic [RSP_W-1:0] rsp;
    logic             cpl_v;
    logic [255:0]     cpl;
    logic [15:0]      cpl_cq;
    logic             err_v;
    logic [7:0]       err_cause;
  } oq_t;
  oq_t        oq0, oq1, oq2, oq3;
  oq_t        oq_in;
  logic       oq_we;
  logic [2:0] oq_wp, oq_rp;
  logic       oq_full, presenting;
  logic [15:0] wr_issued, wr_done;  // DMA writes issued / out
  // entries queued or staged (oq_wp - oq_rp + oq_we), counted beside the pointers: S_OUT's
  // test is then one register bit
  logic [2:0] oq_used;
  logic       oq_push, oq_pop;
  assign oq_full = oq_used[2];
  assign oq_push = st == S_OUT && !oq_full;
  assign oq_pop = presenting && !m_ack_valid && !m_rsp_valid && !m_cpl_valid && !m_err_valid;
  oq_t        oq_head;
  always_comb begin
    case (oq_rp[1:0])
      2'd0: oq_head = oq0;
      2'd1: oq_head = oq1;
      2'd2: oq_head = oq2;
      default: oq_head = oq3;
    endcase
  end
  logic [15:0] oq_wait;
  assign oq_wait = wr_done - oq_head.need;  // >= 0 (as signed): its writes are out
  logic       oq_release;
  assign oq_release = oq_rp != oq_wp && !presenting && !oq_wait[15];
  logic       unused_wait;
  assign unused_wait = ^oq_wait[14:0];

  function automatic logic [15:0] nwrites(input logic [2:0] we, input logic [47:0] len);
    nwrites = '0;
    for (int i = 0; i < 3; i++) nwrites = nwrites + {15'd0, we[i] && len[16*i +: 16] != 16'd0};
  endfunction

  // ---------------------------------------------------------------- memories
  // one write port: the clearing sweep, or the write-back as the operation ends (S_WB), so
  // the read of the next one sees it
  logic wb;
  assign wb = st == S_WB;
  logic [LOG_N-1:0] ctx_raddr;
  logic [CTX_W-1:0] ctx_q;
  always_ff @(posedge clk) begin
    ctx_q <= ctx_mem[ctx_raddr];
    if (!init_done) ctx_mem[init_idx[LOG_N-1:0]] <= '0;
    else if (wb) ctx_mem[qpn] <= c;
  end

  logic             rs_we;
  logic [LOG_N+LOG_RSRC-1:0] rs_waddr;
  logic [RS_W-1:0]  rs_wdata;
  always_ff @(posedge clk) begin
    rs_q <= rs_mem[{qpn, rs_slot}];
    if (rs_we) rs_mem[rs_waddr] <= rs_wdata;
  end

  // ---------------------------------------------------------------- the payload scatter
  logic         sc_wr_valid, sc_wr_ready, sc_axis_valid, sc_axis_ready, sc_axis_last;
  roce_rec_pkg::dma_req_t sc_wr;
  logic [511:0] sc_axis_data;
  logic [63:0]  sc_axis_keep;
  roce_pay_scatter #(.NSEG(3)) u_scatter (
    .clk, .rst,
    .s_cmd_valid(sc_valid), .s_cmd_ready(sc_ready), .s_cmd_pay(sc_pay), .s_cmd_we(sc_we),
    .s_cmd_len(sc_len), .s_cmd_addr(sc_addr),
    .s_axis_pay_tdata, .s_axis_pay_tkeep, .s_axis_pay_tvalid, .s_axis_pay_tready,
    .s_axis_pay_tlast,
    .m_dma_wr_valid(sc_wr_valid), .m_dma_wr_ready(sc_wr_ready), .m_dma_wr(sc_wr),
    .m_axis_dma_wr_tdata(sc_axis_data), .m_axis_dma_wr_tkeep(sc_axis_keep),
    .m_axis_dma_wr_tvalid(sc_axis_valid), .m_axis_dma_wr_tready(sc_axis_ready),
    .m_axis_dma_wr_tlast(sc_axis_last)
  );

  // the DMA write port: the scatter's writes, or an atomic's result (never both)
  always_comb begin
    m_dma_wr_valid = sc_wr_valid;
    m_dma_wr = sc_wr;
    m_axis_dma_wr_tvalid = sc_axis_valid;
    m_axis_dma_wr_tdata = sc_axis_data;
    m_axis_dma_wr_tkeep = sc_axis_keep;
    m_axis_dma_wr_tlast = sc_axis_last;
    sc_wr_ready = m_dma_wr_ready;
    sc_axis_ready = m_axis_dma_wr_tready;
    if (aw_req || aw_data) begin
      m_dma_wr_valid = aw_req;
      m_dma_wr.addr = mr_dma[63:0];
      m_dma_wr.len = 16'd8;
      m_axis_dma_wr_tvalid = aw_data;
      m_axis_dma_wr_tdata = {448'd0, at_new};
      m_axis_dma_wr_tkeep = 64'h0000_0000_0000_00FF;
      m_axis_dma_wr_tlast = 1'b1;
      sc_wr_ready = 1'b0;
      sc_axis_ready = 1'b0;
    end
  end

  // ---------------------------------------------------------------- input handshakes
  logic idle, quiet;
  assign idle = st == S_IDLE && init_done;
  // context ops, state reads and doorbells wait until every packet before them is out
  assign quiet = oq_rp == oq_wp && !oq_we && !presenting && sc_idle && !aw_req && !aw_data;
  assign s_ctx_ready = idle && quiet;
  assign s_strd_ready = idle && quiet && !s_ctx_valid;
  assign s_db_ready = idle && quiet && !s_ctx_valid && !s_strd_valid;
  assign s_req_ready = idle && !s_ctx_valid && !s_strd_valid && !s_db_valid;

  always_comb begin
    ctx_raddr = qpn;
    if (idle) begin
      if (s_ctx_valid) ctx_raddr = s_ctx.qpn[LOG_N-1:0];
      else if (s_strd_valid) ctx_raddr = s_strd_qpn[LOG_N-1:0];
      else if (s_db_valid) ctx_raddr = s_db_qpn[LOG_N-1:0];
      else ctx_raddr = s_req_hdr[8*roce_rec_pkg::RX_HDR_DEST_QP_OFF +: LOG_N];
    end
  end

  assign s_mr_ready = 1'b1;
  assign s_dma_rd_tready = 1'b1;

  // MR request port: request mr_i of mr_n
  always_comb begin
    m_mr.op = mr_inv;
    m_mr.pd = a.pd;
    m_mr.need = mr_need_r;
    m_mr_user = mr_i;
    m_mr.key = mr_key[31:0];
    m_mr.va = mr_va[63:0];
    m_mr.len = mr_len[31:0];
    for (int i = 1; i < 3; i++) begin
      if (mr_i == 2'(i)) begin
        m_mr.key = mr_key[32*i +: 32];
        m_mr.va = mr_va[64*i +: 64];
        m_mr.len = mr_len[32*i +: 32];
      end
    end
  end

  // ---------------------------------------------------------------- decisions
  // h.psn against c.epsn: its sign for S_DECIDE, registered as S_DECIDE is entered: from S_RD1 (c is being loaded
  // from ctx_q) or S_DISPATCH (c loaded and not changed on the way); h holds still
  /* verilator lint_off UNUSEDSIGNAL */
  ctx_t ctx_qt;
  /* verilator lint_on UNUSEDSIGNAL */
  assign ctx_qt = ctx_q;
  logic pd_pos, pd_neg;  // h.psn after, before c.epsn in S_DECIDE (and after it: c.epsn holds)
  logic x_dead, x_pos, x_neg, x_nak_sent, x_bad, x_rnr;  // S_DECIDE's, for S_EXEC
  always_ff @(posedge clk) begin
    logic [23:0] ep;
    ep = st == S_RD1 ? ctx_qt.epsn : c.epsn;
    pd_pos <= roce_util_pkg::psn_gt(h.psn, ep);
    pd_neg <= roce_util_pkg::psn_lt(h.psn, ep);
  end
  logic       seq_ok, acc_ok, len_ok;
  logic       len_ok_r;
  logic [3:0] need;
  always_comb begin
    if (!i_start) seq_ok = (i_send && c.cur == CUR_SEND) || (i_write && c.cur == CUR_WRITE);
    else seq_ok = c.cur == CUR_NONE;
    need = 4'd0;
    if (i_write) need = ACC_REMOTE_WRITE;
    else if (i_read) need = ACC_REMOTE_READ;
    else if (i_atomic) need = ACC_REMOTE_ATOMIC;
    acc_ok = (a.access[3:0] & need) == need;
    len_ok = len_ok_r;
  end
  // (from info, h and mtu, which hold still from S_RD1 on: registered for S_EXEC)
  always_ff @(posedge clk) len_ok_r <= !(i_send || i_write) || (i_end ? plen <= mtu : plen == mtu);

  // WRITE: the packet against the RETH length (c.off/c.dma_len as set for this message)
  // registered in two steps (the end, then its compares): read in S_MR_DONE, and c (set in
  // S_EXEC) and h hold still through the two or more S_MR_WAIT cycles before it
  // (m_mr_valid is high in the first, the answer counts in the cycle after it comes)
  logic [32:0] w_end;
  logic        w_len_bad;
  always_ff @(posedge clk) begin
    w_end <= {1'b0, c.off} + {17'd0, plen};
    w_len_bad <= w_end > {1'b0, c.dma_len} || (i_end && w_end != {1'b0, c.dma_len});
  end

  // READ: response packets = max(1, ceil(len / mtu))
  // in two registered steps (the 33-bit add, then the shift): h and mtu hold still from
  // S_RD1 on, rd_np_s is the sum from S_DECIDE on, rd_np the count from S_EXEC on (read in
  // S_MR_DONE)
  logic [32:0] rd_np_s;
  logic        rd_np_z;
  logic [32:0] rd_np_x;  // below 2^25; kept modulo 2^24 like every PSN count
  assign rd_np_x = rd_np_s >> log_mtu;
  logic [23:0] rd_np;
  always_ff @(posedge clk) begin
    rd_np_s <= {1'b0, h.dma_len} + {17'd0, mtu} - 33'd1;
    rd_np_z <= h.dma_len == 32'd0;
    rd_np <= rd_np_z ? 24'd1 : rd_np_x[23:0];
  end
  logic unused_np;
  assign unused_np = ^rd_np_x[32:24];

  // resources kept: max(1, min(max_dest_rd_atomic, R))
  logic [LOG_RSRC:0] rs_lim;
  assign rs_lim = a.max_dest_rd_atomic == 8'd0 ? (LOG_RSRC + 1)'(1) :
                  a.max_dest_rd_atomic >= 8'(R) ? (LOG_RSRC + 1)'(R) :
                  a.max_dest_rd_atomic[LOG_RSRC:0];
  // remembering one more: its slot, and the ring after it
  logic [LOG_RSRC-1:0] rs_new_slot, rs_new_head;
  logic [LOG_RSRC:0]   rs_new_cnt;
  always_comb begin
    rs_new_slot = c.rs_head + c.rs_cnt[LOG_RSRC-1:0];
    rs_new_head = c.rs_head;
    rs_new_cnt = c.rs_cnt + 1'b1;
    if (c.rs_cnt + 1'b1 > rs_lim) begin
      rs_new_head = c.rs_head + LOG_RSRC'(c.rs_cnt + 1'b1 - rs_lim);
      rs_new_cnt = rs_lim;
    end
  end
  // the scanned entry
  logic        e_atomic;
  logic [23:0] e_psn, e_end;  // its first PSN and the PSN after its responses
  logic [63:0] e_orig;
  assign {e_atomic, e_psn, e_end, e_orig} = rs_q;
  // S_RS_CMP's tests of the entry, registered: rs_q is read at rs_slot every cycle and rs_slot
  // holds from S_RS_ADDR to S_RS_CMP, so these are the entry's in S_RS_CMP
  logic rs_in, rs_at;  // a READ in the served range; the entry's first PSN
  always_ff @(posedge clk) begin
    rs_in <= !e_atomic && !roce_util_pkg::psn_lt(h.psn, e_psn) && roce_util_pkg::psn_lt(h.psn, e_end);
    rs_at <= e_psn == h.psn;
  end

  // the SGE after wk_i, and the walk's tests
  logic [127:0] sg_nx;
  assign sg_nx = wk_i == 2'd0 ? c.sge[255:128] : c.sge[383:256];
  logic wk_stop, wk_lt;
  assign wk_stop = wk_i == c.nsge || wk_rest == 16'd0;
  assign wk_lt = wk_len[31:16] == 16'd0 && wk_len[15:0] < wk_rest;  // the SGE ends first

  // DMA read result (first beat, failure over all beats)
  logic         rd_bad;
  assign rd_bad = s_dma_rd_tuser || (!rd_first && rd_err);
  // (read in S_DMA_DONE only, where the first beat is in rd_data: S_DMA_DATA and S_PF_HIT,
  // the states before it, have cleared rd_first)
  logic wqe_bad;  // the receive WQE is malformed (LocQpOpErr): registered with rd_data
  function automatic logic wqe_bad_of(input logic [511:0] d);
    wqe_bad_of = roce_desc_pkg::rq_wqe_bad(d) || d[8*roce_desc_pkg::RQ_WQE_NUM_SGE_OFF +: 8] > 8'd3;
  endfunction

  // the atomic's result in two registered steps, as the FSM moves S_DMA_DONE (rd_data
  // holds the original) -> S_AT_WAIT -> S_AT_WR (at_new is presented from there on): the
  // halves' sums and the compare, then the high half's carry and the pick. rd_data and h
  // hold still until the write is out.
  logic [32:0] at_lo;
  logic [31:0] at_hi;
  logic        at_eq;
  always_ff @(posedge clk) begin
    at_lo <= {1'b0, rd_data[31:0]} + {1'b0, h.swap_add[31:0]};
    at_hi <= rd_data[63:32] + h.swap_add[63:32];
    at_eq <= rd_data[63:0] == h.compare;
    at_new <= i_cas ? (at_eq ? h.swap_add : rd_data[63:0]) :
                      {at_hi + {31'd0, at_lo[32]}, at_lo[31:0]};
  end

  // the scatter is done: command taken, idle again, its last write handed over
  logic sc_idle;
  assign sc_idle = !sc_valid && sc_ready && !sc_wr_valid && !sc_axis_valid;

  logic [7:0] err_cause;  // QP error cause of a fatal NAK
  always_comb begin
    case (err_syn)
      NAK_ACC: err_cause = roce_desc_pkg::WC_STATUS_REM_ACCESS_ERR;
      NAK_OP: err_cause = roce_desc_pkg::WC_STATUS_REM_OP_ERR;
      default: err_cause = roce_desc_pkg::WC_STATUS_REM_INV_REQ_ERR;
    endcase
  end

  // a WRITE's next VA, c.va + c.off, registered for S_EXEC (c holds from S_RD1 until S_EXEC),
  // the high half carry-selected
  logic [63:0] x_va;
  always_ff @(posedge clk) begin
    logic [32:0] lo;
    lo = {1'b0, c.va[31:0]} + {1'b0, c.off};
    x_va <= {lo[32] ? c.va[63:32] + 32'd1 : c.va[63:32], lo[31:0]};
  end

  // rq_base + (rq_ci mod 2^rq_log_size) * 64: the mask as a thermometer (no subtraction) and
  // the add carry-selected (the offset is below 2^21: low 21 bits added, high 43 bits as
  // they are or incremented)
  logic [63:0] rq_slot_addr;
  always_comb begin
    logic [14:0] m;
    logic [21:0] lo;
    for (int i = 0; i < 15; i++) m[i] = 4'(i) < a.rq_log_size;
    lo = {1'b0, a.rq_base[20:0]} + {1'b0, c.rq_ci[14:0] & m, 6'd0};
    rq_slot_addr = {lo[21] ? a.rq_base[63:21] + 43'd1 : a.rq_base[63:21], lo[20:0]};
  end
  // the FSM's read address, registered for S_DMA_REQ: S_DMA_PRE is always the cycle before
  // it, and rd_for, mr_dma, a and c.rq_ci hold still in both
  logic [63:0] fsm_rd_addr;
  always_ff @(posedge clk) fsm_rd_addr <= rd_for == RD_ATOMIC ? mr_dma[63:0] : rq_slot_addr;
  logic fsm_rd;  // S_DMA_REQ issues the FSM's read (never with a prefetch issue)
  assign fsm_rd = st == S_DMA_REQ && !dq_mine && !m_dma_rd_valid;

  // ---------------------------------------------------------------- the sequencer
  always_ff @(posedge clk) begin
    rs_we <= 1'b0;
    ctx_done <= 1'b0;
    strd_done <= 1'b0;
    cnt_dup <= 1'b0;
    cnt_nak_seq <= 1'b0;
    cnt_nak_rnr <= 1'b0;
    cnt_nak_inv <= 1'b0;
    cnt_nak_acc <= 1'b0;
    cnt_nak_op <= 1'b0;
    cnt_dma_err <= 1'b0;
    cnt_drop <= 1'b0;
    if (!init_done) init_idx <= init_idx + 1'b1;
    // handshakes of registered outputs
    if (m_mr_valid && m_mr_ready) begin
      mr_i <= mr_i + 1'b1;
      if (mr_i + 1'b1 == mr_n) m_mr_valid <= 1'b0;
    end
    if (s_mr_valid) begin
      mr_got <= mr_got + 1'b1;
      for (int i = 0; i < 3; i++) begin
        if (s_mr_user == 2'(i)) begin
          mr_ok[i] <= s_mr.status == MR_OK;
          mr_dma[64*i +: 64] <= s_mr.dma;
        end
      end
    end
    if (m_dma_rd_valid && m_dma_rd_ready) m_dma_rd_valid <= 1'b0;
    if (sc_valid && sc_ready) sc_valid <= 1'b0;
    if (m_attr_valid && m_attr_ready) m_attr_valid <= 1'b0;
    if (m_ack_valid && m_ack_ready) m_ack_valid <= 1'b0;
    if (m_rsp_valid && m_rsp_ready) m_rsp_valid <= 1'b0;
    if (m_cpl_valid && m_cpl_ready) m_cpl_valid <= 1'b0;
    if (m_err_valid && m_err_ready) m_err_valid <= 1'b0;
    if (aw_req && m_dma_wr_ready) aw_req <= 1'b0;
    if (aw_data && m_axis_dma_wr_tready) aw_data <= 1'b0;

    // output queue: push (staged by S_OUT), present the head once its writes are out, pop
    oq_we <= 1'b0;
    if (oq_we) oq_wp <= oq_wp + 3'd1;
    // (four registers, not oq_t oq [4]: Yosys 0.23 drops the unpacked dimension of an array
    // of a struct type, so it built one 700-bit vector, written and read a bit at a time)
    if (oq_we && oq_wp[1:0] == 2'd0) oq0 <= oq_in;
    if (oq_we && oq_wp[1:0] == 2'd1) oq1 <= oq_in;
    if (oq_we && oq_wp[1:0] == 2'd2) oq2 <= oq_in;
    if (oq_we && oq_wp[1:0] == 2'd3) oq3 <= oq_in;
    if (m_axis_dma_wr_tvalid && m_axis_dma_wr_tready && m_axis_dma_wr_tlast) wr_done <= wr_done + 16'd1;
    if (oq_release) begin
      presenting <= 1'b1;
      m_ack_valid <= oq_head.ack_v;
      m_ack_qpn <= oq_head.ack_qpn;
      m_ack_psn <= oq_head.ack_psn;
      m_ack_syndrome <= oq_head.ack_syn;
      m_ack_msn <= oq_head.ack_msn;
      m_rsp_valid <= oq_head.rsp_v;
      m_rsp_data <= oq_head.rsp;
      m_cpl_valid <= oq_head.cpl_v;
      m_cpl_tdata <= oq_head.cpl;
      m_cpl_tuser <= oq_head.cpl_cq;
      m_err_valid <= oq_head.err_v;
      m_err_qpn <= oq_head.ack_qpn;
      m_err_cause <= oq_head.err_cause;
    end
    if (oq_pop) begin
      presenting <= 1'b0;
      oq_rp <= oq_rp + 3'd1;
    end
    if (oq_push && !oq_pop) oq_used <= oq_used + 3'd1;
    else if (!oq_push && oq_pop) oq_used <= oq_used - 3'd1;

    // the prefetcher: a read out when the port is free, a read landed
    if (pf_issue) begin
      m_dma_rd_valid <= 1'b1;
      pf_nxt <= pf_nxt1;
      pf_alloc <= pf_alloc + 1'b1;
    end
    if (pf_issue && !(pf_beat && s_dma_rd_tlast)) pf_out <= pf_out + 1'b1;
    else if (!pf_issue && pf_beat && s_dma_rd_tlast) pf_out <= pf_out - 1'b1;
    pf_fresh <= 1'b1;
    // the read request's address and length: the FSM's (S_DMA_REQ) or the prefetcher's
    if (fsm_rd) begin
      m_dma_rd.addr <= fsm_rd_addr;
      m_dma_rd.len <= rd_for == RD_ATOMIC ? 16'd8 : 16'd64;
    end else if (pf_issue) begin
      m_dma_rd.addr <= pf_addr;
      m_dma_rd.len <= 16'd64;
    end

    case (st)
      S_IDLE: if (init_done) begin
        exec_ack <= 1'b0;
        fatal <= 1'b0;
        fin_send <= 1'b0;
        fin_wend <= 1'b0;
        len_err <= 1'b0;
        prot_err <= 1'b0;
        o_ack <= 1'b0;
        o_rsp <= 1'b0;
        o_cpl <= 1'b0;
        rsp <= '0;
        rsp.qpn <= s_req_hdr[8*roce_rec_pkg::RX_HDR_DEST_QP_OFF +: 24];
        sc_we <= 3'b000;
        sc_len <= '0;
        sc_addr <= '0;
        mr_n <= 2'd0;
        mr_inv <= 1'b0;
        if (s_ctx_valid || s_strd_valid || s_db_valid) begin
          if (!quiet) begin
            // wait: the queue drains
          end else if (s_ctx_valid) begin
          kind <= K_CTX;
          qpn <= s_ctx.qpn[LOG_N-1:0];
          qpn24 <= s_ctx.qpn;
          k_op <= s_ctx.code;
          k_arg <= s_ctx.arg[23:0];
          st <= S_RD0;
        end else if (s_strd_valid) begin
          kind <= K_STRD;
          qpn <= s_strd_qpn[LOG_N-1:0];
          qpn24 <= s_strd_qpn;
          st <= S_RD0;
        end else if (s_db_valid) begin
          kind <= K_DB;
          qpn <= s_db_qpn[LOG_N-1:0];
          qpn24 <= s_db_qpn;
          k_pi <= s_db_pi;
          st <= S_RD0;
          end
        end else if (s_req_valid) begin
          kind <= K_PKT;
          h <= s_req_hdr;
          a <= s_req_attr;
          info <= roce_opcode_pkg::op_info(s_req_hdr[8*roce_rec_pkg::RX_HDR_OPCODE_OFF +: 8]);
          qpn <= s_req_hdr[8*roce_rec_pkg::RX_HDR_DEST_QP_OFF +: LOG_N];
          qpn24 <= s_req_hdr[8*roce_rec_pkg::RX_HDR_DEST_QP_OFF +: 24];
          st <= S_RD0;
        end
      end

      S_RD0: st <= S_RD1;  // the context read is in the BRAM's output register next cycle

      S_RD1: begin
        c <= ctx_q;
        st <= kind == K_PKT ? S_DECIDE : S_DISPATCH;
      end

      S_DISPATCH: begin
        case (kind)
          K_STRD: begin
            strd_done <= 1'b1;
            strd_rq_psn <= c.epsn;
            strd_rq_pi <= c.rq_pi[15:0];
            strd_rq_ci <= c.rq_ci[15:0];
            st <= S_IDLE;
          end
          K_CTX: begin
            st <= S_WB;
            if (k_op == roce_rec_pkg::CTX_OP_RESET) begin
              c <= '0;
              if (pf_qpn == qpn) pf_act <= 1'b0;  // forget its bodies, drop its reads
            end else if (k_op == roce_rec_pkg::CTX_OP_SET_RQ_PSN) begin
              c.epsn <= k_arg;
            end else if (k_op == roce_rec_pkg::CTX_OP_ENTER_ERR) begin
              c.dead <= 1'b1;
              c.cur <= CUR_NONE;
              st <= S_FL_ATTR;
            end
          end
          K_DB: begin
            c.rq_pi <= db_pi;
            if (pf_act && pf_qpn == qpn) pf_pi <= db_pi;
            st <= c.dead ? S_FL_ATTR : S_DB_PF;
          end
          default: st <= S_DECIDE;
        endcase
      end

      // a doorbell: an idle prefetcher starts reading this QP's WQEs (its attributes first)
      S_DB_PF: begin
        if (!(pf_act && pf_qpn == qpn) && (!pf_act || pf_none) && pf_out == '0 && c.rq_pi != c.rq_ci)
          st <= S_PF_ATTR;
        else
          st <= S_WB;
      end

      // ------------------------------------------------------------ packet decisions
      // S_EXEC's tests registered (c, h, a and the op decode hold still from here on)
      S_DECIDE: begin
        x_dead <= c.dead;
        x_pos <= pd_pos;
        x_neg <= pd_neg;
        x_nak_sent <= c.nak_sent;
        x_bad <= !seq_ok || !acc_ok || !len_ok;
        x_rnr <= (i_send && i_start && rq_empty) || (i_write && i_imm && rq_empty);
        st <= S_EXEC;
      end
      S_EXEC: begin
        sc_pay <= i_pay;
        st <= S_SCAT;
        if (x_dead) begin
          cnt_drop <= 1'b1;
        end else if (x_pos) begin
          // ahead: one sequence error NAK until the expected PSN comes
          if (!x_nak_sent) begin
            c.nak_sent <= 1'b1;
            o_ack <= 1'b1;
            ack_psn <= c.epsn;
            ack_syn <= NAK_SEQ;
          end
        end else if (x_neg) begin
          cnt_dup <= 1'b1;
          if (i_read || i_atomic) begin
            rs_i <= '0;
            rs_slot <= c.rs_head;
            st <= S_RS_ADDR;
          end else begin
            o_ack <= 1'b1;
            ack_psn <= c.epsn - 24'd1;
            ack_syn <= SYN_ACK;
          end
        end else begin
          c.nak_sent <= 1'b0;
          if (x_bad) begin
            fatal <= 1'b1;
            err_syn <= NAK_INV;
          end else if (x_rnr) begin
            o_ack <= 1'b1;
            ack_psn <= h.psn;
            ack_syn <= {3'b001, a.min_rnr_timer};
          end else if (i_send && i_start) begin
            rd_for <= RD_SEND_WQE;
            st <= S_DMA_PRE;
          end else if (i_send) begin
            wk_i <= 2'd0;
            wk_skip <= c.off;
            wk_rest <= plen;
            wk_len <= c.sge[95:64];
            wk_key <= c.sge[127:96];
            wk_lo <= {1'b0, c.sge[31:0]};
            wk_hi <= c.sge[63:32];
            wk_nchunk <= 2'd0;
            st <= S_WALK;
          end else if (i_write) begin
            mr_n <= 2'd1;
            mr_need_r <= ACC_REMOTE_WRITE;
            st <= S_MR_WAIT;
            m_mr_valid <= 1'b1;
            mr_i <= 2'd0;
            mr_got <= 2'd0;
            mr_ok <= 3'b000;
            if (i_start) begin
              // the whole RETH range; its translation also places this first packet
              c.cur <= CUR_WRITE;
              c.va <= h.va;
              c.rkey <= h.rkey;
              c.dma_len <= h.dma_len;
              c.off <= 32'd0;
              mr_key[31:0] <= h.rkey;
              mr_va[63:0] <= h.va;
              mr_len[31:0] <= h.dma_len;
            end else begin
              mr_key[31:0] <= c.rkey;
              mr_va[63:0] <= x_va;
              mr_len[31:0] <= {16'd0, plen};
              // an empty middle/last packet checks nothing (len 0 passes)
            end
          end else if (i_read) begin
            mr_n <= 2'd1;
            mr_need_r <= ACC_REMOTE_READ;
            mr_key[31:0] <= h.rkey;
            mr_va[63:0] <= h.va;
            mr_len[31:0] <= h.dma_len;
            st <= S_MR_WAIT;
            m_mr_valid <= 1'b1;
            mr_i <= 2'd0;
            mr_got <= 2'd0;
            mr_ok <= 3'b000;
          end else if (i_atomic) begin
            if (h.va[2:0] != 3'd0) begin
              fatal <= 1'b1;
              err_syn <= NAK_INV;
            end else begin
              mr_n <= 2'd1;
              mr_need_r <= ACC_REMOTE_ATOMIC;
              mr_key[31:0] <= h.rkey;
              mr_va[63:0] <= h.va;
              mr_len[31:0] <= 32'd8;
              st <= S_MR_WAIT;
            m_mr_valid <= 1'b1;
            mr_i <= 2'd0;
            mr_got <= 2'd0;
            mr_ok <= 3'b000;
            end
          end else begin
            fatal <= 1'b1;
            err_syn <= NAK_INV;
          end
        end
      end

      // ------------------------------------------------------------ duplicate READ/atomic
      // The resources oldest first: a READ inside a served READ's PSN range is served
      // again; an atomic is answered by the first entry of its PSN if that is an atomic.
      S_RS_ADDR: st <= rs_i == c.rs_cnt ? S_SCAT : S_RS_WAIT;
      S_RS_WAIT: st <= S_RS_CMP;  // rs_q holds entry rs_slot next cycle (and S_RS_CMP's tests)
      S_RS_CMP: begin
        rs_i <= rs_i + 1'b1;
        rs_slot <= rs_slot + 1'b1;
        st <= S_RS_ADDR;
        if (i_read) begin
          if (rs_in) begin
            mr_n <= 2'd1;
            mr_need_r <= ACC_REMOTE_READ;
            mr_key[31:0] <= h.rkey;
            mr_va[63:0] <= h.va;
            mr_len[31:0] <= h.dma_len;
            st <= S_MR_ISSUE;
          end
        end else if (rs_at) begin
          if (e_atomic) begin
            o_rsp <= 1'b1;
            rsp.atomic <= 1'b1;
            rsp.psn <= h.psn;
            rsp.msn <= c.msn;
            rsp.orig <= e_orig;
          end
          st <= S_SCAT;
        end
      end

      // ------------------------------------------------------------ SEND: the SGE walk
      // one SGE a cycle: S_WALK skips c.off bytes (whole SGEs, then into one: the cycle that
      // starts S_WALK_TAKE), S_WALK_TAKE places a chunk per SGE (none of an empty one) until
      // plen bytes are placed
      S_WALK, S_WALK_TAKE: begin
        if (wk_stop) begin
          len_err <= wk_rest != 16'd0;
          mr_n <= wk_nchunk;
          mr_need_r <= ACC_LOCAL_WRITE;
          st <= wk_nchunk == 2'd0 ? S_MR_DONE : S_MR_ISSUE;
        end else begin
          if (st == S_WALK && wk_skip < wk_len) begin  // into this SGE
            wk_len <= wk_len - wk_skip;
            wk_lo <= {1'b0, wk_lo[31:0]} + {1'b0, wk_skip};
            wk_hi1 <= wk_hi + 32'd1;
            st <= S_WALK_TAKE;
          end else begin  // on to the next SGE
            if (st == S_WALK) wk_skip <= wk_skip - wk_len;
            wk_i <= wk_i + 1'b1;
            wk_len <= sg_nx[95:64];
            wk_key <= sg_nx[127:96];
            wk_lo <= {1'b0, sg_nx[31:0]};
            wk_hi <= sg_nx[63:32];
          end
          // S_WALK_TAKE places a chunk of the SGE it leaves (its own branch: the skip
          // compare stays out of these registers' enables)
          if (st == S_WALK_TAKE && wk_len != 32'd0) begin
            for (int i = 0; i < 3; i++) begin
              if (wk_nchunk == 2'(i)) begin
                mr_key[32*i +: 32] <= wk_key;
                mr_va[64*i +: 64] <= {wk_lo[32] ? wk_hi1 : wk_hi, wk_lo[31:0]};
                mr_len[32*i +: 32] <= wk_lt ? wk_len : {16'd0, wk_rest};
                wk_clen[16*i +: 16] <= wk_lt ? wk_len[15:0] : wk_rest;
              end
            end
            wk_nchunk <= wk_nchunk + 1'b1;
            wk_rest <= wk_lt ? wk_rest - wk_len[15:0] : 16'd0;
          end
        end
      end

      // ------------------------------------------------------------ key checks
      S_MR_ISSUE: begin
        mr_i <= 2'd0;
        mr_got <= 2'd0;
        mr_ok <= 3'b000;
        m_mr_valid <= 1'b1;
        st <= S_MR_WAIT;
      end
      S_MR_WAIT: if (!m_mr_valid && mr_got == mr_n) st <= S_MR_DONE;
      S_MR_DONE: begin
        st <= S_SCAT;
        if (mr_inv) begin
          // SEND with invalidate, at the end of the message
          st <= S_SEND_CPL;
          if (!mr_ok[0]) begin
            o_cpl <= 1'b1;
            cpl_img <= roce_util_pkg::cqe_img(c.wr_id, c.off, 32'd0, qpn24, roce_desc_pkg::CQE_OP_RECV,
                               roce_desc_pkg::WC_STATUS_REM_INV_REQ_ERR, 8'd0, a.dest_qpn);
            cpl_cq <= {2'b00, a.recv_cq};
            c.cur <= CUR_NONE;
            fatal <= 1'b1;
            err_syn <= NAK_INV;
            st <= S_OUT;
          end
          mr_inv <= 1'b0;
        end else if (i_send) begin
          // the pieces are written up to the first failed check
          fin_send <= 1'b1;
          sc_addr <= mr_dma;
          sc_len <= wk_clen;
          sc_we[0] <= mr_n > 2'd0 && mr_ok[0];
          sc_we[1] <= mr_n > 2'd1 && mr_ok[0] && mr_ok[1];
          sc_we[2] <= mr_n > 2'd2 && mr_ok[0] && mr_ok[1] && mr_ok[2];
          prot_err <= (mr_n > 2'd0 && !mr_ok[0]) || (mr_n > 2'd1 && !mr_ok[1]) ||
                      (mr_n > 2'd2 && !mr_ok[2]);
        end else if (i_write) begin
          if (!mr_ok[0]) begin
            fatal <= 1'b1;
            err_syn <= NAK_ACC;
          end else if (w_len_bad) begin
            fatal <= 1'b1;
            err_syn <= NAK_INV;
          end else begin
            if (plen != 16'd0) begin
              sc_we[0] <= 1'b1;
              sc_len[15:0] <= plen;
              sc_addr[63:0] <= mr_dma[63:0];
            end
            c.off <= w_end[31:0];
            c.epsn <= c.epsn + 24'd1;
            exec_ack <= 1'b1;
            fin_wend <= i_end;
          end
        end else if (i_read) begin
          if (pd_neg) begin  // (c.epsn unchanged since S_EXEC)
            // a duplicate served again from its PSN, if its range still checks
            if (mr_ok[0]) begin
              o_rsp <= 1'b1;
              rsp.psn <= h.psn;
              rsp.msn <= c.msn;
              rsp.len <= h.dma_len;
              rsp.dma <= mr_dma[63:0];
            end
          end else if (!mr_ok[0]) begin
            fatal <= 1'b1;
            err_syn <= NAK_ACC;
          end else begin
            o_rsp <= 1'b1;
            rsp.psn <= h.psn;
            rsp.msn <= c.msn + 24'd1;
            rsp.len <= h.dma_len;
            rsp.dma <= mr_dma[63:0];
            c.epsn <= c.epsn + rd_np;
            c.msn <= c.msn + 24'd1;
            rs_we <= 1'b1;
            rs_waddr <= {qpn, rs_new_slot};
            rs_wdata <= {1'b0, h.psn, h.psn + rd_np, 64'd0};
            c.rs_head <= rs_new_head;
            c.rs_cnt <= rs_new_cnt;
          end
        end else if (i_atomic) begin
          if (!mr_ok[0]) begin
            fatal <= 1'b1;
            err_syn <= NAK_ACC;
          end else begin
            rd_for <= RD_ATOMIC;
            st <= S_DMA_PRE;
          end
        end
      end

      // ------------------------------------------------------------ DMA reads
      // the prefetcher's tests registered (only S_DMA_REQ and the other FSM states move the
      // ring head or stop the prefetcher; an issue meanwhile only adds a WQE in flight)
      S_DMA_PRE: begin
        dq_mine <= (rd_for == RD_SEND_WQE || rd_for == RD_IMM_WQE) && pf_mine;
        dq_ready <= pf_ready;
        st <= S_DMA_REQ;
      end
      S_DMA_REQ: if (dq_mine) begin
        // the receive WQE is the prefetch ring's head: take it once its read has landed
        if (dq_ready) begin
          c.rq_ci <= rq_ci1;
          pf_head <= pf_head1;
          pf_alloc <= pf_alloc - 1'b1;
          st <= S_PF_HIT;
        end else begin
          st <= S_DMA_PRE;
        end
      end else if (!m_dma_rd_valid) begin
        m_dma_rd_valid <= 1'b1;
        rd_first <= 1'b1;
        rd_err <= 1'b0;
        st <= S_DMA_DATA;
        if (rd_for != RD_ATOMIC) begin
          // a receive WQE (fsm_rd_addr: its slot): consumed whatever it holds
          c.rq_ci <= rq_ci1;
          if (rd_for != RD_FLUSH_WQE && pf_out == '0) begin
            // read this QP's next WQEs ahead from now on
            pf_act <= 1'b1;
            pf_qpn <= qpn;
            pf_head <= rq_ci1;
            pf_nxt <= rq_ci1;
            pf_alloc <= '0;
            pf_fresh <= 1'b0;
            pf_pi <= c.rq_pi;
            pf_base <= a.rq_base;
            pf_mask <= 15'((32'd1 << a.rq_log_size) - 32'd1);
          end else if (pf_qpn == qpn) begin
            pf_act <= 1'b0;
          end
        end
      end
      S_PF_HIT: begin  // pf_q, pf_eq: the head's body as it was before the pop
        rd_first <= 1'b0;
        rd_data <= pf_q;
        wqe_bad <= wqe_bad_of(pf_q);
        rd_err <= pf_eq;
        if (pf_eq) cnt_dma_err <= 1'b1;
        st <= S_DMA_DONE;
      end
      S_DMA_DATA: if (fsm_beat) begin
        rd_first <= 1'b0;
        if (rd_first) begin
          rd_data <= s_dma_rd_tdata;
          wqe_bad <= wqe_bad_of(s_dma_rd_tdata);
        end
        if (s_dma_rd_tuser) rd_err <= 1'b1;
        if (s_dma_rd_tlast) st <= S_DMA_DONE;
        if (s_dma_rd_tlast) begin
          rd_err <= rd_bad;
          if (rd_bad) cnt_dma_err <= 1'b1;
        end
      end
      S_DMA_DONE: begin
        case (rd_for)
          RD_SEND_WQE: begin
            if (rd_err || wqe_bad) begin
              // no message in progress yet: NAK, no completion
              fatal <= 1'b1;
              err_syn <= NAK_OP;
              st <= S_SCAT;
            end else begin
              c.cur <= CUR_SEND;
              c.off <= 32'd0;
              c.wr_id <= rd_data[63:0];
              c.nsge <= rd_data[8*roce_desc_pkg::RQ_WQE_NUM_SGE_OFF +: 2];
              c.sge <= rd_data[8*roce_desc_pkg::RQ_WQE_SGE_OFF +: 384];
              wk_i <= 2'd0;
              wk_skip <= 32'd0;
              wk_rest <= plen;
              wk_len <= rd_data[8*roce_desc_pkg::RQ_WQE_SGE_OFF + 64 +: 32];
              wk_key <= rd_data[8*roce_desc_pkg::RQ_WQE_SGE_OFF + 96 +: 32];
              wk_lo <= {1'b0, rd_data[8*roce_desc_pkg::RQ_WQE_SGE_OFF +: 32]};
              wk_hi <= rd_data[8*roce_desc_pkg::RQ_WQE_SGE_OFF + 32 +: 32];
              wk_nchunk <= 2'd0;
              st <= S_WALK;
            end
          end
          RD_IMM_WQE: begin
            st <= S_OUT;
            if (rd_err || wqe_bad) begin
              fatal <= 1'b1;
              err_syn <= NAK_OP;
              exec_ack <= 1'b0;
            end else begin
              o_cpl <= 1'b1;
              cpl_img <= roce_util_pkg::cqe_img(rd_data[63:0], c.dma_len, h.imm_or_inv, qpn24,
                                 roce_desc_pkg::CQE_OP_RECV_WRITE_IMM,
                                 roce_desc_pkg::WC_STATUS_SUCCESS,
                                 {5'd0, i_se, 1'b0, 1'b1}, a.dest_qpn);
              cpl_cq <= {2'b00, a.recv_cq};
              c.msn <= c.msn + 24'd1;
            end
          end
          RD_ATOMIC: begin
            if (rd_err) begin
              fatal <= 1'b1;
              err_syn <= NAK_OP;
              st <= S_SCAT;
            end else begin
              at_orig <= rd_data[63:0];
              st <= S_AT_WAIT;
            end
          end
          default: begin  // RD_FLUSH_WQE
            if (rd_err || wqe_bad) begin
              st <= S_WB;  // the flush stops at a WQE it cannot read
            end else begin
              m_cpl_valid <= 1'b1;
              m_cpl_tdata <= roce_util_pkg::cqe_img(rd_data[63:0], 32'd0, 32'd0, qpn24, roce_desc_pkg::CQE_OP_RECV,
                                     roce_desc_pkg::WC_STATUS_WR_FLUSH_ERR, 8'd0, a.dest_qpn);
              m_cpl_tuser <= {2'b00, a.recv_cq};
              st <= S_FL_CPL;
            end
          end
        endcase
      end

      // ------------------------------------------------------------ atomics
      // the DMA write port is the scatter's until its writes are out
      S_AT_WAIT: if (sc_idle) begin
        aw_req <= 1'b1;
        aw_data <= 1'b1;
        wr_issued <= wr_issued + 16'd1;
        st <= S_AT_WR;
      end
      S_AT_WR: if (!aw_req && !aw_data) begin
        o_rsp <= 1'b1;
        rsp.atomic <= 1'b1;
        rsp.psn <= h.psn;
        rsp.msn <= c.msn + 24'd1;
        rsp.orig <= at_orig;
        c.epsn <= c.epsn + 24'd1;
        c.msn <= c.msn + 24'd1;
        rs_we <= 1'b1;
        rs_waddr <= {qpn, rs_new_slot};
        rs_wdata <= {1'b1, h.psn, h.psn + 24'd1, at_orig};
        c.rs_head <= rs_new_head;
        c.rs_cnt <= rs_new_cnt;
        st <= S_SCAT;
      end

      // ------------------------------------------------------------ payload
      // The packet's scatter command is offered at once; the scatter takes it in the cycle
      // it finishes the previous packet's (whose last writes may still be streaming). The
      // FSM does not wait for the data: the packet's outputs wait in the output queue until
      // its writes are out.
      S_SCAT: begin
        if (!(sc_pay || sc_we != 3'b000)) begin
          st <= fin_send || fin_wend ? S_FIN : S_OUT;
        end else begin
          sc_valid <= 1'b1;
          wr_issued <= wr_issued + nwrites(sc_we, sc_len);
          st <= S_SCAT_ACC;
        end
      end
      S_SCAT_ACC: if (!sc_valid) st <= fin_send || fin_wend ? S_FIN : S_OUT;

      // ------------------------------------------------------------ after the data
      S_FIN: begin
        st <= S_OUT;
        if (fin_send) begin
          if (prot_err || len_err) begin
            // the receive WQE completes in error (bytes placed before this packet)
            o_cpl <= 1'b1;
            cpl_img <= roce_util_pkg::cqe_img(c.wr_id, c.off, 32'd0, qpn24, roce_desc_pkg::CQE_OP_RECV,
                               prot_err ? roce_desc_pkg::WC_STATUS_LOC_PROT_ERR :
                                          roce_desc_pkg::WC_STATUS_LOC_LEN_ERR,
                               8'd0, a.dest_qpn);
            cpl_cq <= {2'b00, a.recv_cq};
            c.cur <= CUR_NONE;
            fatal <= 1'b1;
            err_syn <= prot_err ? NAK_OP : NAK_INV;
          end else begin
            c.off <= c.off + {16'd0, plen};
            c.epsn <= c.epsn + 24'd1;
            exec_ack <= 1'b1;
            if (i_end && i_inv) begin
              mr_n <= 2'd1;
              mr_inv <= 1'b1;
              mr_need_r <= 4'd0;
              mr_key[31:0] <= h.imm_or_inv;
              st <= S_MR_ISSUE;
            end else if (i_end) begin
              st <= S_SEND_CPL;
            end
          end
        end else if (fin_wend) begin
          c.cur <= CUR_NONE;
          if (i_imm) begin
            rd_for <= RD_IMM_WQE;
            st <= S_DMA_PRE;
          end else begin
            c.msn <= c.msn + 24'd1;
          end
        end
      end

      // the SEND message is complete (c.off counts this packet)
      S_SEND_CPL: begin
        o_cpl <= 1'b1;
        cpl_img <= roce_util_pkg::cqe_img(c.wr_id, c.off, (i_imm || i_inv) ? h.imm_or_inv : 32'd0, qpn24,
                           i_inv ? roce_desc_pkg::CQE_OP_RECV_INV :
                           i_imm ? roce_desc_pkg::CQE_OP_RECV_IMM : roce_desc_pkg::CQE_OP_RECV,
                           roce_desc_pkg::WC_STATUS_SUCCESS, {5'd0, i_se, i_inv, i_imm},
                           a.dest_qpn);
        cpl_cq <= {2'b00, a.recv_cq};
        c.cur <= CUR_NONE;
        c.msn <= c.msn + 24'd1;
        st <= S_OUT;
      end

      // ------------------------------------------------------------ outputs
      // the packet's outputs into the queue (they leave once its DMA writes are out)
      S_OUT: if (!oq_full) begin
        st <= S_WB;
        oq_we <= 1'b1;
        oq_in <= '0;
        oq_in.need <= wr_issued;
        oq_in.ack_qpn <= qpn24;
        oq_in.ack_msn <= c.msn;
        if (fatal) begin
          oq_in.ack_v <= 1'b1;
          oq_in.ack_psn <= h.psn;
          oq_in.ack_syn <= err_syn;
          oq_in.err_v <= 1'b1;
          oq_in.err_cause <= err_cause;
          c.dead <= 1'b1;
          cnt_nak_inv <= err_syn == NAK_INV;
          cnt_nak_acc <= err_syn == NAK_ACC;
          cnt_nak_op <= err_syn == NAK_OP;
        end else if (o_ack) begin
          oq_in.ack_v <= 1'b1;
          oq_in.ack_psn <= ack_psn;
          oq_in.ack_syn <= ack_syn;
          cnt_nak_seq <= ack_syn == NAK_SEQ;
          cnt_nak_rnr <= ack_syn[7:5] == 3'b001;
        end else if (exec_ack && (h.ack_req || x_nak_sent)) begin
          oq_in.ack_v <= 1'b1;
          oq_in.ack_psn <= h.psn;
          oq_in.ack_syn <= SYN_ACK;
        end
        if (o_rsp) begin
          oq_in.rsp_v <= 1'b1;
          oq_in.rsp <= rsp;
          oq_in.rsp[8*roce_rec_pkg::RD_RSP_PATH_MTU_OFF +: 8] <= a.path_mtu;
        end
        if (o_cpl) begin
          oq_in.cpl_v <= 1'b1;
          oq_in.cpl <= cpl_img;
          oq_in.cpl_cq <= cpl_cq;
        end
      end

      S_WB: begin  // the context is written this cycle (see the memory above)
        ctx_done <= kind == K_CTX;
        st <= S_IDLE;
      end

      // ------------------------------------------------------------ flush
      // ENTER_ERR, or an RQ doorbell while dead: every posted receive WQE completes with
      // WR_FLUSH_ERR (the flush stops at a WQE it cannot read or decode).
      S_FL_ATTR: begin
        if (pf_qpn == qpn) pf_act <= 1'b0;
        m_attr_valid <= 1'b1;
        m_attr_qpn <= qpn24;
        st <= S_FL_ATTR_WAIT;
      end
      S_FL_ATTR_WAIT: if (s_attr_valid) begin
        a <= s_attr_data;
        st <= S_FL_NEXT;
      end
      S_FL_NEXT: begin
        if (rq_empty) begin
          st <= S_WB;
        end else begin
          rd_for <= RD_FLUSH_WQE;
          st <= S_DMA_PRE;
        end
      end
      S_FL_CPL: if (!m_cpl_valid) st <= S_FL_NEXT;

      // ------------------------------------------------------------ prefetch start
      // a doorbell found the prefetcher idle: read this QP's WQEs from its rq ci
      S_PF_ATTR: begin
        m_attr_valid <= 1'b1;
        m_attr_qpn <= qpn24;
        st <= S_PF_ATTR_WAIT;
      end
      S_PF_ATTR_WAIT: if (s_attr_valid) begin
        a <= s_attr_data;
        st <= S_PF_SET;
      end
      S_PF_SET: begin
        if ((!pf_act || pf_none) && pf_out == '0) begin
          pf_act <= 1'b1;
          pf_qpn <= qpn;
          pf_head <= c.rq_ci;
          pf_nxt <= c.rq_ci;
          pf_alloc <= '0;
          pf_fresh <= 1'b0;
          pf_pi <= c.rq_pi;
          pf_base <= a.rq_base;
          pf_mask <= 15'((32'd1 << a.rq_log_size) - 32'd1);
        end
        st <= S_WB;
      end

      default: st <= S_IDLE;
    endcase

    if (rst || soft_reset) begin
      init_idx <= '0;
      st <= S_IDLE;
      oq_wp <= '0;
      oq_rp <= '0;
      oq_used <= '0;
      oq_we <= 1'b0;
      presenting <= 1'b0;
      wr_issued <= '0;
      wr_done <= '0;
      pf_act <= 1'b0;
      pf_out <= '0;
      pf_alloc <= '0;
      m_mr_valid <= 1'b0;
      m_dma_rd_valid <= 1'b0;
      sc_valid <= 1'b0;
      m_attr_valid <= 1'b0;
      m_ack_valid <= 1'b0;
      m_rsp_valid <= 1'b0;
      m_cpl_valid <= 1'b0;
      m_err_valid <= 1'b0;
      aw_req <= 1'b0;
      aw_data <= 1'b0;
      ctx_done <= 1'b0;
      strd_done <= 1'b0;
    end
  end

endmodule

`resetall
