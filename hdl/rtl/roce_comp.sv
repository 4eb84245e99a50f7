// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_comp: the RC completer. Owns the per-QP completer state in BRAM (una, sq_ci, READ
// progress, retries, the local ACK timer, the RNR back-off, the rewind request) and runs one
// operation at a time as the engine model's completer (engine::comp): responses (ACKs walk
// roce_req's send window from sq_ci and complete WQEs; NAKs and timeouts go back by a rewind
// request roce_req applies; READ responses and atomic results placed through the head WQE's
// SGEs by roce_pay_scatter), the timer scanner, kicks and flushes, context ops, state reads.
// Ports: s_rsp + s_axis_pay (responses), s_kick, s_body (READ/atomic SGEs from roce_req),
//   s_ctx / s_strd (context ops, state reads), m_attr, m_rd / m_rd2 / m_win (roce_req's state
//   and window), s_comp (our state for roce_req), m_wake, m_mr, DMA read and write, m_cpl
//   (CQEs), m_err (QP errors), dbg_op (operation starts, for the lockstep), counters.
// Latency: an ACK completing the head WQE: its CQE about 11 cycles after the response is taken
//   (4 more per further WQE); a READ response's first DMA write request about 17 cycles after.
// Throughput: one operation at a time, 22 cycles per READ response of a READ at the head whose
//   SGEs are kept; payload one beat per cycle behind it. docs/engine-hdl.md has the
//   behaviour; model blocks::comp.
//
// Parameters:
//   LOG_N     log2 of the number of QPs (default 10 = 1024).
//   LOG_WIN   log2 of a QP's stretch of the READ/atomic body store (default 4, roce_req's
//             LOG_WIN). The reset sweep takes N x 2^LOG_WIN cycles (the store's entries).

`resetall
`default_nettype none

module roce_comp #(
  parameter int LOG_N = 10,
  parameter int LOG_WIN = 4,
  localparam int HDR_W = 8 * roce_rec_pkg::RX_HDR_BYTES,
  localparam int ATTR_W = 8 * roce_rec_pkg::QP_ATTR_BYTES,
  localparam int CRD_W = 8 * roce_rec_pkg::COMP_RD_BYTES,
  localparam int RRD_W = 8 * roce_rec_pkg::REQ_RD_BYTES,
  localparam int WIN_W = 8 * roce_rec_pkg::SQ_WIN_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,
  input  wire logic              soft_reset,
  output      logic              init_done,
  input  wire logic [31:0]       now,            // cycle counter (RNR back-off)
  input  wire logic [31:0]       now_tick,       // IB timer ticks (TICK_CYCLES)
  input  wire logic [11:0]       cfg_us_cycles,  // US_CYCLES

  // responses (RX dispatch) and their payload
  input  wire logic              s_rsp_valid,
  output      logic              s_rsp_ready,
  input  wire logic [HDR_W-1:0]  s_rsp_hdr,
  input  wire logic [ATTR_W-1:0] s_rsp_attr,
  input  wire logic [2:0]        s_rsp_state,
  input  wire logic [511:0]      s_axis_pay_tdata,
  input  wire logic [63:0]       s_axis_pay_tkeep,
  input  wire logic              s_axis_pay_tvalid,
  output      logic              s_axis_pay_tready,
  input  wire logic              s_axis_pay_tlast,

  // kicks from roce_req
  input  wire logic              s_kick_valid,
  output      logic              s_kick_ready,
  input  wire logic [23:0]       s_kick_qpn,
  input  wire logic              s_kick_flush,

  // READ/atomic WQE bodies from roce_req as they arrive ({num_sge, SGEs} of SQ index
  // s_body_idx), and a pulse that forgets QP s_body_qpn's (roce_req's RESET)
  input  wire logic              s_body_valid,
  input  wire logic [23:0]       s_body_qpn,
  input  wire logic [31:0]       s_body_idx,
  input  wire logic [514:0]      s_body_sge,
  input  wire logic              s_body_clr,

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
  output      logic [15:0]       strd_sq_ci,

  // attribute lookup (roce_qp_ctx): timeouts, kicks, flushes
  output      logic              m_attr_valid,
  input  wire logic              m_attr_ready,
  output      logic [23:0]       m_attr_qpn,
  input  wire logic              s_attr_valid,
  input  wire logic [ATTR_W-1:0] s_attr_data,
  input  wire logic [2:0]        s_attr_state,

  // roce_req's state (req_rd_t): the operations, the timer scanner
  output      logic              m_rd_valid,
  output      logic [23:0]       m_rd_qpn,
  input  wire logic              s_rd_valid,
  input  wire logic [RRD_W-1:0]  s_rd_data,
  output      logic              m_rd2_valid,
  output      logic [23:0]       m_rd2_qpn,
  input  wire logic              s_rd2_valid,
  input  wire logic [RRD_W-1:0]  s_rd2_data,
  // roce_req's send window (sq_win_t)
  output      logic              m_win_valid,
  output      logic [23:0]       m_win_qpn,
  output      logic [31:0]       m_win_idx,
  input  wire logic              s_win_valid,
  input  wire logic [WIN_W-1:0]  s_win_data,

  // our state for roce_req (comp_rd_t; latency 2, one per cycle, always ready)
  input  wire logic              s_comp_valid,
  input  wire logic [23:0]       s_comp_qpn,
  output      logic              m_comp_valid,
  output      logic [CRD_W-1:0]  m_comp_data,

  // wakes toward roce_req
  output      logic              m_wake_valid,
  input  wire logic              m_wake_ready,
  output      logic [23:0]       m_wake_qpn,

  // L_Key checks (roce_mr_check; results in order)
  output      logic              m_mr_valid,
  input  wire logic              m_mr_ready,
  output      roce_rec_pkg::mr_req_t m_mr,
  output      logic [1:0]        m_mr_user,
  input  wire logic              s_mr_valid,
  input  wire roce_rec_pkg::mr_res_t s_mr,
  input  wire logic [1:0]        s_mr_user,

  // DMA reads (WQEs again, wr_id of flushed WQEs): lane-0 aligned data, tuser = failed
  output      logic              m_dma_rd_valid,
  input  wire logic              m_dma_rd_ready,
  output      roce_rec_pkg::dma_req_t m_dma_rd,
  input  wire logic [511:0]      s_dma_rd_tdata,
  input  wire logic              s_dma_rd_tvalid,
  output      logic              s_dma_rd_tready,
  input  wire logic              s_dma_rd_tlast,
  input  wire logic              s_dma_rd_tuser,

  // DMA writes (READ data, atomic results)
  output      logic              m_dma_wr_valid,
  input  wire logic              m_dma_wr_ready,
  output      roce_rec_pkg::dma_req_t m_dma_wr,
  output      logic [511:0]      m_axis_dma_wr_tdata,
  output      logic [63:0]       m_axis_dma_wr_tkeep,
  output      logic              m_axis_dma_wr_tvalid,
  input  wire logic              m_axis_dma_wr_tready,
  output      logic              m_axis_dma_wr_tlast,

  // send completions (CQE image, CQ index): roce_cq's s_axis_cpl
  output      logic              m_cpl_valid,
  input  wire logic              m_cpl_ready,
  output      logic [255:0]      m_cpl_tdata,
  output      logic [15:0]       m_cpl_tuser,

  // QP errors (roce_qp_ctx): cause = the CQE status code
  output      logic              m_err_valid,
  input  wire logic              m_err_ready,
  output      logic [23:0]       m_err_qpn,
  output      logic [7:0]        m_err_cause,

  // operation starts (for the lockstep): 0 response, 1 timeout, 2 kick, 3 flush kick, 4 ctx
  output      logic              dbg_op_valid,
  output      logic [2:0]        dbg_op_kind,
  output      logic [23:0]       dbg_op_qpn,

  // counters: one-cycle pulses
  output      logic              cnt_nak,
  output      logic              cnt_rnr,
  output      logic              cnt_timeout,
  output      logic              cnt_dma_err
);

  localparam int N = 1 << LOG_N;

  // ---------------------------------------------------------------- codes
  localparam logic [7:0] OP_RD_FIRST = 8'h0D;
  localparam logic [7:0] OP_RD_MIDDLE = 8'h0E;
  localparam logic [7:0] OP_RD_LAST = 8'h0F;
  localparam logic [7:0] OP_RD_ONLY = 8'h10;
  localparam logic [7:0] OP_ACK = 8'h11;
  localparam logic [7:0] OP_ATOMIC_ACK = 8'h12;
  localparam logic [2:0] ST_RTS = 3'd3;
  localparam logic [2:0] ST_SQD = 3'd4;
  localparam logic [3:0] ACC_LOCAL_WRITE = 4'b0001;

  // the RNR NAK timer codes in microseconds (IBTA Vol 1 table 45)
  function automatic logic [19:0] rnr_us(input logic [4:0] t);
    case (t)
      5'd0: rnr_us = 20'd655360;  5'd1: rnr_us = 20'd10;      5'd2: rnr_us = 20'd20;
      5'd3: rnr_us = 20'd30;      5'd4: rnr_us = 20'd40;      5'd5: rnr_us = 20'd60;
      5'd6: rnr_us = 20'd80;      5'd7: rnr_us = 20'd120;     5'd8: rnr_us = 20'd160;
      5'd9: rnr_us = 20'd240;     5'd10: rnr_us = 20'd320;    5'd11: rnr_us = 20'd480;
      5'd12: rnr_us = 20'd640;    5'd13: rnr_us = 20'd960;    5'd14: rnr_us = 20'd1280;
      5'd15: rnr_us = 20'd1920;   5'd16: rnr_us = 20'd2560;   5'd17: rnr_us = 20'd3840;
      5'd18: rnr_us = 20'd5120;   5'd19: rnr_us = 20'd7680;   5'd20: rnr_us = 20'd10240;
      5'd21: rnr_us = 20'd15360;  5'd22: rnr_us = 20'd20480;  5'd23: rnr_us = 20'd30720;
      5'd24: rnr_us = 20'd40960;  5'd25: rnr_us = 20'd61440;  5'd26: rnr_us = 20'd81920;
      5'd27: rnr_us = 20'd122880; 5'd28: rnr_us = 20'd163840; 5'd29: rnr_us = 20'd245760;
      5'd30: rnr_us = 20'd327680; default: rnr_us = 20'd491520;
    endcase
  endfunction

  // PSN, SQ index and time order, CQE images: roce_util_pkg

  // ---------------------------------------------------------------- per-QP state
  typedef struct packed {
    logic         dead;       // an error completion or ENTER_ERR: nothing more until RESET
    logic         sg_v;       // sg_mem holds the SGEs of the WQE at sg_idx
    logic [31:0]  sg_idx;
    logic [23:0]  una;
    logic [23:0]  rd_pkts;    // response packets of the READ at the head
    logic [7:0]   rd_done;
    logic [2:0]   retries;
    logic [2:0]   rnr_left;
    logic         dl_v;
    logic [31:0]  dl;         // local ACK timer deadline (ticks)
    logic [31:0]  rnr_until;  // cycles
    logic [23:0]  rw_psn;
    logic [31:0]  rw_idx;
    logic [23:0]  rw_pkt;
    logic [7:0]   rw_gen;
    logic         rewound_v;
    logic [23:0]  rewound;
    logic [31:0]  sq_ci;
  } row_t;
  localparam int ROW_W = 306;  // (Yosys 0.23 has no $bits of a type)

  (* ram_style = "block" *) logic [ROW_W-1:0] row_mem [N];
  (* ram_style = "block" *) logic [CRD_W-1:0] crd_mem [N];
  (* ram_style = "block" *) logic [56:0]      tmr_mem [N];  // {dl_v, dl, una}
  (* ram_style = "block" *) logic [514:0]     sg_mem [N];   // {num_sge, SGEs}

  // the reset sweep: every table's entries, the body store's (N x 2^LOG_WIN) last
  localparam int LOG_BODY = LOG_N + LOG_WIN;
  logic [LOG_BODY:0] init_idx;
  assign init_done = init_idx[LOG_BODY];

  // ---------------------------------------------------------------- FSM
  // one-hot: each state is a flip-flop, the next-state and datapath muxes decode one bit
  localparam int NST = 48;
  localparam int I_IDLE = 0;
  localparam int I_WAIT = 1;
  localparam int I_GO = 2;
  localparam int I_R_START = 3;
  localparam int I_W_NEXT = 4;
  localparam int I_W_CHECK = 5;
  localparam int I_W_DONE = 6;
  localparam int I_R_AETH = 7;
  localparam int I_O_NEXT = 8;
  localparam int I_O_CHECK = 9;
  localparam int I_O_CPL = 10;
  localparam int I_O_CPL2 = 11;
  localparam int I_O_DONE = 12;
  localparam int I_R_READ = 13;
  localparam int I_R_ATOM = 14;
  localparam int I_SG = 15;
  localparam int I_SG_RD = 16;
  localparam int I_SG_DATA = 17;
  localparam int I_PC_SKIP = 18;
  localparam int I_PC_MRW = 19;
  localparam int I_PC_CHK = 20;
  localparam int I_SCAT_WAIT = 21;
  localparam int I_R_PLACED = 22;
  localparam int I_R_FIN = 23;
  localparam int I_R_FIN2 = 24;
  localparam int I_R_FIN3 = 25;
  localparam int I_R_FIN4 = 26;
  localparam int I_WIN_WAIT = 27;
  localparam int I_CPL = 28;
  localparam int I_CPL_WAIT = 29;
  localparam int I_RW_NEXT = 30;
  localparam int I_RW_CHECK = 31;
  localparam int I_T_GO = 32;
  localparam int I_T_CPL = 33;
  localparam int I_K_GO = 34;
  localparam int I_K_CPL = 35;
  localparam int I_F_NEXT = 36;
  localparam int I_F_CPL = 37;
  localparam int I_U_NEXT = 38;
  localparam int I_U_DATA = 39;
  localparam int I_U_CPL = 40;
  localparam int I_DROP = 41;
  localparam int I_DROP_WAIT = 42;
  localparam int I_WB = 43;
  localparam int I_WAKE = 44;
  localparam int I_PC_TAKE = 45;
  localparam int I_W_PRE = 46;
  localparam int I_R_AETH2 = 47;
  typedef enum logic [NST-1:0] {
    S_IDLE = NST'(1) << I_IDLE,
    S_WAIT = NST'(1) << I_WAIT,
    S_GO = NST'(1) << I_GO,
    S_R_START = NST'(1) << I_R_START,
    S_W_NEXT = NST'(1) << I_W_NEXT,
    S_W_CHECK = NST'(1) << I_W_CHECK,
    S_W_DONE = NST'(1) << I_W_DONE,
    S_R_AETH = NST'(1) << I_R_AETH,
    S_O_NEXT = NST'(1) << I_O_NEXT,
    S_O_CHECK = NST'(1) << I_O_CHECK,
    S_O_CPL = NST'(1) << I_O_CPL,
    S_O_CPL2 = NST'(1) << I_O_CPL2,
    S_O_DONE = NST'(1) << I_O_DONE,
    S_R_READ = NST'(1) << I_R_READ,
    S_R_ATOM = NST'(1) << I_R_ATOM,
    S_SG = NST'(1) << I_SG,
    S_SG_RD = NST'(1) << I_SG_RD,
    S_SG_DATA = NST'(1) << I_SG_DATA,
    S_PC_SKIP = NST'(1) << I_PC_SKIP,
    S_PC_TAKE = NST'(1) << I_PC_TAKE,
    S_W_PRE = NST'(1) << I_W_PRE,
    S_R_AETH2 = NST'(1) << I_R_AETH2,
    S_PC_MRW = NST'(1) << I_PC_MRW,
    S_PC_CHK = NST'(1) << I_PC_CHK,
    S_SCAT_WAIT = NST'(1) << I_SCAT_WAIT,
    S_R_PLACED = NST'(1) << I_R_PLACED,
    S_R_FIN = NST'(1) << I_R_FIN,
    S_R_FIN2 = NST'(1) << I_R_FIN2,
    S_R_FIN3 = NST'(1) << I_R_FIN3,
    S_R_FIN4 = NST'(1) << I_R_FIN4,
    S_WIN_WAIT = NST'(1) << I_WIN_WAIT,
    S_CPL = NST'(1) << I_CPL,
    S_CPL_WAIT = NST'(1) << I_CPL_WAIT,
    S_RW_NEXT = NST'(1) << I_RW_NEXT,
    S_RW_CHECK = NST'(1) << I_RW_CHECK,
    S_T_GO = NST'(1) << I_T_GO,
    S_T_CPL = NST'(1) << I_T_CPL,
    S_K_GO = NST'(1) << I_K_GO,
    S_K_CPL = NST'(1) << I_K_CPL,
    S_F_NEXT = NST'(1) << I_F_NEXT,
    S_F_CPL = NST'(1) << I_F_CPL,
    S_U_NEXT = NST'(1) << I_U_NEXT,
    S_U_DATA = NST'(1) << I_U_DATA,
    S_U_CPL = NST'(1) << I_U_CPL,
    S_DROP = NST'(1) << I_DROP,
    S_DROP_WAIT = NST'(1) << I_DROP_WAIT,
    S_WB = NST'(1) << I_WB,
    S_WAKE = NST'(1) << I_WAKE
  } state_t;
  state_t st, ret, rw_ret;

  typedef enum logic [2:0] { K_RSP, K_TMO, K_KICK, K_FLUSH, K_CTX, K_STRD } kind_t;
  kind_t kind;

  logic [LOG_N-1:0] q;
  logic [23:0]      q24;
  row_t             r;
  logic [CRD_W-1:0] pub0;     // what s_comp showed before the operation
  logic [ROW_W-1:0] row_q;
  logic [LOG_N-1:0] row_raddr;
  logic             row_we;
  assign row_we = st[I_WB];

  // the comp_rd_t of the row
  logic [CRD_W-1:0] r_pub;
  always_comb begin
    r_pub = '0;
    r_pub[8*roce_rec_pkg::COMP_RD_UNA_OFF +: 24] = r.una;
    r_pub[8*roce_rec_pkg::COMP_RD_RW_PSN_OFF +: 24] = r.rw_psn;
    r_pub[8*roce_rec_pkg::COMP_RD_SQ_CI_OFF +: 32] = r.sq_ci;
    r_pub[8*roce_rec_pkg::COMP_RD_RW_IDX_OFF +: 32] = r.rw_idx;
    r_pub[8*roce_rec_pkg::COMP_RD_RW_PKT_OFF +: 24] = r.rw_pkt;
    r_pub[8*roce_rec_pkg::COMP_RD_RNR_UNTIL_OFF +: 32] = r.rnr_until;
    r_pub[8*roce_rec_pkg::COMP_RD_RD_DONE_OFF +: 8] = r.rd_done;
    r_pub[8*roce_rec_pkg::COMP_RD_RW_GEN_OFF +: 8] = r.rw_gen;
  end

  always_ff @(posedge clk) begin
    row_q <= row_mem[row_raddr];
    if (!init_done) row_mem[init_idx[LOG_N-1:0]] <= '0;
    else if (row_we) row_mem[q] <= r;
  end
  always_ff @(posedge clk) begin
    if (!init_done) begin
      crd_mem[init_idx[LOG_N-1:0]] <= '0;
      tmr_mem[init_idx[LOG_N-1:0]] <= '0;
    end else if (row_we) begin
      crd_mem[q] <= r_pub;
      tmr_mem[q] <= {r.dl_v, r.dl, r.una};
    end
  end
  // roce_req's read port (the BRAM read, then the output register)
  logic crd_v1;
  logic [CRD_W-1:0] crd_q1;
  always_ff @(posedge clk) begin
    crd_v1 <= s_comp_valid;
    m_comp_valid <= crd_v1;
    crd_q1 <= crd_mem[s_comp_qpn[LOG_N-1:0]];
    m_comp_data <= crd_q1;
    if (rst) begin
      crd_v1 <= 1'b0;
      m_comp_valid <= 1'b0;
    end
  end

  // the SGEs kept for the WQE at the head
  logic         sg_we;
  logic [514:0] sg_wd, sg_q;
  always_ff @(posedge clk) begin
    sg_q <= sg_mem[q];
    if (sg_we) sg_mem[q] <= sg_wd;
  end

  // the READ/atomic bodies roce_req gave, {valid, SQ index, SGEs} in block RAM: entry {QPN,
  // SQ index mod 2^LOG_WIN} (a stretch for each QP), read at bs_ra (set when the WQE at the
  // head is known; bs_hit is first used three cycles after: S_O_DONE, S_WIN_WAIT, S_R_READ,
  // then S_SG). A body is written a cycle after it comes; one that comes after the read is
  // a miss, and the SGEs are read from the ring. The reset sweep clears every entry, a
  // RESET (s_body_clr) the QP's 2^LOG_WIN, one a cycle where no body is written (roce_req
  // walks its own store as long and gives no bodies meanwhile).
  localparam int NB = 1 << LOG_BODY;
  localparam int BS_W = 1 + 32 + 515;
  (* ram_style = "block" *) logic [BS_W-1:0] bs_mem [NB];
  logic [LOG_BODY-1:0] bs_ra;
  logic [BS_W-1:0]     bs_q;
  logic                bw_v;
  logic [LOG_BODY-1:0] bw_a;
  logic [BS_W-1:0]     bw_d;
  logic                bc_on;  // a RESET's walk over the QP's stretch
  logic [LOG_BODY-1:0] bc_a;
  always_ff @(posedge clk) begin
    bw_v <= s_body_valid;
    bw_a <= LOG_BODY'({s_body_qpn[LOG_N-1:0], s_body_idx[LOG_WIN-1:0]});
    bw_d <= {1'b1, s_body_idx, s_body_sge};
    bs_q <= bs_mem[bs_ra];
    if (!init_done) bs_mem[init_idx[LOG_BODY-1:0]] <= '0;
    else if (bw_v) bs_mem[bw_a] <= bw_d;
    else if (bc_on) bs_mem[bc_a] <= '0;
    if (bc_on && !bw_v) begin
      bc_a <= {bc_a[LOG_BODY-1:LOG_WIN], bc_a[LOG_WIN-1:0] + 1'b1};
      if (bc_a[LOG_WIN-1:0] == '1) bc_on <= 1'b0;
    end
    if (s_body_clr) begin
      bc_on <= 1'b1;
      bc_a <= {s_body_qpn[LOG_N-1:0], LOG_WIN'(0)};
    end
    if (rst || soft_reset) begin
      bw_v <= 1'b0;
      bc_on <= 1'b0;
    end
  end
  logic bs_hit;  // the body of the WQE at the head (q, r.sq_ci) is in the store
  assign bs_hit = bs_q[BS_W-1] && bs_q[BS_W-2 -: 32] == r.sq_ci;

  // ---------------------------------------------------------------- timer scanner
  logic [LOG_N-1:0] sc_idx, sc_q1, sc_q2, sc_q3;
  logic             sc_v1, sc_v2;
  logic [56:0]      sc_t1, sc_t2;
  localparam int TQ = 4;
  logic [LOG_N-1:0] tq [TQ];
  logic [2:0]       tq_wr, tq_rd;
  logic [TQ-1:0]    tq_v;   // entry holds a queued QP (a QP is queued at most once)
  logic             sc_run;
  // (the scan runs while the queue is empty: the QPs in its three stages may all be pushed,
  // which fills the TQ entries)
  assign sc_run = init_done && tq_wr == tq_rd;
  assign m_rd2_valid = sc_run;
  assign m_rd2_qpn = 24'(sc_idx);

  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::req_rd_t sc_rv;
  /* verilator lint_on UNUSEDSIGNAL */
  assign sc_rv = s_rd2_data;
  // the later deadline has passed: the three differences' signs side by side (as in
  // S_T_GO), registered in stage 3 with the other tests, combined there
  logic sc_ok3, sc_dv3, sc_bz3, sc_dlge3, sc_pdl3, sc_pbd3;
  always_ff @(posedge clk) begin
    logic dv;
    logic [31:0] dl;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [31:0] d_dlbd, d_dl, d_bd;  // (their signs)
    /* verilator lint_on UNUSEDSIGNAL */
    logic [23:0] una;
    {dv, dl, una} = sc_t2;
    d_dlbd = dl - sc_rv.busy_deadline;
    d_dl = now_tick - dl;
    d_bd = now_tick - sc_rv.busy_deadline;
    sc_ok3 <= sc_v2 && s_rd2_valid && una != sc_rv.max_sent && (dv || sc_rv.busy);
    sc_dv3 <= dv;
    sc_bz3 <= sc_rv.busy;
    sc_dlge3 <= !d_dlbd[31];
    sc_pdl3 <= !d_dl[31];
    sc_pbd3 <= !d_bd[31];
    if (rst || soft_reset) sc_ok3 <= 1'b0;
  end
  // "sc_q3 is queued", found a cycle ahead at sc_q2 by comparing it with the TQ queued
  // entries, with this cycle's push and pop forwarded (the pop wins, as in the queue update).
  // (A QP is pushed only when not queued, so the queue stands for a per-QP pending bit
  // without an N-bit vector and its 1-of-N read and write decode.)
  logic sc_e3, sc_p3, sc_set;
  assign sc_e3 = sc_ok3 && (sc_dv3 && (!sc_bz3 || sc_dlge3) ? sc_pdl3 : sc_pbd3);
  assign sc_set = sc_e3 && !sc_p3;

  logic tq_pop;
  logic [TQ-1:0] tq_hit, tq_popm;
  always_comb begin
    for (int i = 0; i < TQ; i++) begin
      tq_hit[i] = tq[i] == sc_q2;
      tq_popm[i] = tq_pop && tq_rd[1:0] == 2'(i);
    end
  end
  always_ff @(posedge clk) begin
    sc_v1 <= sc_run;
    sc_q1 <= sc_idx;
    sc_t1 <= tmr_mem[sc_idx];
    sc_v2 <= sc_v1;
    sc_q2 <= sc_q1;
    sc_t2 <= sc_t1;
    if (sc_run) sc_idx <= sc_idx + 1'b1;
    sc_q3 <= sc_q2;
    sc_p3 <= ((tq_v & tq_hit & ~tq_popm) != '0 || (sc_set && sc_q3 == sc_q2)) &&
             (tq_popm & tq_hit) == '0;
    if (sc_set) begin
      tq[tq_wr[1:0]] <= sc_q3;
      tq_wr <= tq_wr + 1'b1;
    end
    tq_v <= (tq_v & ~tq_popm) | (sc_set ? TQ'(1) << tq_wr[1:0] : '0);
    if (tq_pop) tq_rd <= tq_rd + 1'b1;
    if (rst || soft_reset) begin
      sc_idx <= '0;
      sc_v1 <= 1'b0;
      sc_v2 <= 1'b0;
      tq_wr <= '0;
      tq_rd <= '0;
      tq_v <= '0;
    end
  end

  // ---------------------------------------------------------------- operation registers
  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::rx_hdr_t  h;
  roce_rec_pkg::qp_attr_t a;
  roce_rec_pkg::req_rd_t  rv;
  roce_rec_pkg::sq_win_t  e;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [2:0]  a_state;
  logic        got_rv, got_attr, need_attr;
  logic [1:0]  row_wait;
  logic [31:0] now_l, tick_l;
  logic [7:0]  k_op;
  logic [31:0] k_arg;
  logic        pay_pending;   // the response's payload is still to be consumed

  logic unused_in;  // QPNs beyond the table alias (the engine gives none)
  assign unused_in = ^s_comp_qpn[23:LOG_N] ^ ^k_arg[31:24] ^ ^s_body_qpn[23:LOG_N];

  logic [3:0]  log_mtu;    // registered: a is loaded as an operation starts, read in S_WIN_WAIT
  always_ff @(posedge clk) log_mtu <= 4'd7 + a.path_mtu[3:0];
  // the local ACK timer's new deadline, tick_l + 2^min(timeout, 30) + 1 (whole ticks: the
  // current one is partly over), registered in two
  // steps (the step, then the sum): a and tick_l are set in S_IDLE and S_WAIT and hold from
  // the cycle S_WAIT ends in, and its readers (S_W_DONE, S_R_PLACED, S_T_GO) come two
  // cycles after it at the earliest (S_GO or S_R_START between)
  logic [31:0] dl_step, dl_new;
  always_ff @(posedge clk) begin
    dl_step <= (32'd1 << (a.timeout > 5'd30 ? 5'd30 : a.timeout)) | 32'd1;  // 2^t + 1 ticks
    dl_new <= tick_l + dl_step;
  end

  // S_T_GO: the later of the QP's two deadlines has passed. Registered in two steps (the
  // three differences' signs and the PSN compare side by side, then the pick): r, rv and
  // tick_l hold from the cycle S_WAIT ends in (r is loaded two cycles before, rv and the
  // exit's got_rv at once), through S_GO (which changes none of them for a timeout), to
  // S_T_GO.
  logic t_expired, t_dl_later, t_past_dl, t_past_bd, t_una_ne;
  always_ff @(posedge clk) begin
    t_dl_later <= $signed(r.dl - rv.busy_deadline) >= 0;
    t_past_dl <= $signed(tick_l - r.dl) >= 0;
    t_past_bd <= $signed(tick_l - rv.busy_deadline) >= 0;
    t_una_ne <= r.una != rv.max_sent;
    t_expired <= t_una_ne && (r.dl_v || rv.busy) &&
                 (r.dl_v && (!rv.busy || t_dl_later) ? t_past_dl : t_past_bd);
  end
  // S_R_START (entered only from S_WAIT): the response's PSN was sent and is not older than
  // una - 1
  logic r_in_win;
  always_ff @(posedge clk) begin
    /* verilator lint_off UNUSEDSIGNAL */
    logic [23:0] d;
    /* verilator lint_on UNUSEDSIGNAL */
    d = h.psn - r.una + 24'd1;
    r_in_win <= roce_util_pkg::psn_lt(h.psn, rv.max_sent) && !d[23];
  end

  // the entry e
  logic e_readlike, e_atomic;
  assign e_readlike = e.opcode == roce_desc_pkg::SQ_OP_READ || e_atomic;
  assign e_atomic = e.opcode == roce_desc_pkg::SQ_OP_ATOMIC_CAS || e.opcode == roce_desc_pkg::SQ_OP_ATOMIC_FAA;
  // e's first PSN after it and its packets - 1, registered with e (from the window read): the
  // adds are off the sequencer's compares
  logic [23:0] e_end, e_nm1, w_end, w_nm1;
  always_comb begin
    logic [23:0] wf, wn;
    wf = s_win_data[8*roce_rec_pkg::SQ_WIN_FIRST_PSN_OFF +: 24];
    wn = s_win_data[8*roce_rec_pkg::SQ_WIN_NPKTS_OFF +: 24];
    w_end = wf + wn;
    w_nm1 = wn - 24'd1;
  end
  logic w_read;  // the window answer is a READ
  assign w_read = s_win_data[8*roce_rec_pkg::SQ_WIN_OPCODE_OFF +: 8] == roce_desc_pkg::SQ_OP_READ;
  logic [7:0] e_cqe_op;
  always_comb begin
    unique case (e.opcode)
      roce_desc_pkg::SQ_OP_WRITE, roce_desc_pkg::SQ_OP_WRITE_IMM: e_cqe_op = roce_desc_pkg::CQE_OP_WRITE;
      roce_desc_pkg::SQ_OP_READ: e_cqe_op = roce_desc_pkg::CQE_OP_READ;
      roce_desc_pkg::SQ_OP_ATOMIC_CAS: e_cqe_op = roce_desc_pkg::CQE_OP_ATOMIC_CAS;
      roce_desc_pkg::SQ_OP_ATOMIC_FAA: e_cqe_op = roce_desc_pkg::CQE_OP_ATOMIC_FAA;
      default: e_cqe_op = roce_desc_pkg::CQE_OP_SEND;
    endcase
  end

  // walk / completion / rewind registers
  logic [23:0] ack_psn, una_w, lost_psn, rw_target;
  logic        w_adv, w_same;  // S_W_PRE: una_w is after r.una; the lost PSN is the last rewind's
  logic        lost;
  logic [7:0]  fatal;          // 0: none, else the completion status
  logic [7:0]  cpl_status;     // CPL: 0 = the entry's own status
  logic        cpl_flush;      // CPL: a flush completion (byte_len 0, WR_FLUSH_ERR default)
  logic        err_done;       // this operation reported the QP in error
  // rw_target/rw_i/rw_ret are read only by S_RW_NEXT/S_RW_CHECK (and rw_i by S_O_*): the
  // states that may start a rewind load them whether or not they go there, so the loads do
  // not wait for the test that decides it
  logic [31:0] rw_i;
  logic [31:0] ol_km1;         // oldest READ's index - 1
  // S_O_CPL's "the head is the oldest READ": registered, as r.sq_ci == rw_i when S_O_CHECK
  // finds it (o_first), else as r.sq_ci + 1 == the oldest READ's index (S_CPL's increment,
  // the state before; kept as r.sq_ci == ol_km1, no add before the compare)
  logic        ci_eq_rw, o_eq, o_eq1, o_first;
  always_ff @(posedge clk) begin
    ci_eq_rw <= r.sq_ci == rw_i;
    o_eq1 <= r.sq_ci == ol_km1;
  end
  logic [23:0] ol_first;

  // READ/atomic placement
  // Where the expected READ response goes, computed as the window entry arrives (S_WIN_WAIT,
  // from s_win_data: r and a hold still there) for S_R_READ, which always follows it: the
  // offset and length of packet rd_pkts, its PSN and whether it is the last.
  logic [31:0] rd_off;
  logic [12:0] rd_rest;      // bytes from the offset on (at most an MTU when it counts)
  logic        rd_full;      // more than an MTU from the offset on
  logic [23:0] rd_exp;       // e.first_psn + r.rd_pkts
  logic        rd_last;      // r.rd_pkts + 1 == e.npkts
  logic        rd_ahead;     // psn_gt(h.psn, rd_exp)
  logic        o_head;       // S_O_CHECK's entry is the head's (rw_i == r.sq_ci)
  logic        o_una_gt;     // the entry from S_R_START's read starts after r.una
  logic        rd_at;        // h.psn == rd_exp
  logic        rd_rw_same;   // the last rewind went to rd_exp
  logic        rw_in;        // rw_target is in the entry (S_RW_CHECK)
  logic        wc_first_gt, wc_rd_gt, wc_last_gt;
  logic [12:0] rd_plen;
  // the window answer's operands that do not come with it, registered: r.rd_pkts's offset
  // and the next one's, ack_psn, h.psn and r.rewound less r.rd_pkts. log_mtu and ack_psn
  // are set, h loaded (S_IDLE), r.rewound written (S_RW_NEXT, S_RW_CHECK) and r.rd_pkts
  // written (S_CPL, S_R_PLACED, S_U_NEXT) or loaded (S_WAIT), at least a state before any state that
  // issues a window read, whose answer comes a cycle after the request at the earliest.
  logic [36:0] rd_off_q, rd_off1_q;
  logic [23:0] ack_m_rdp, ack1, hpsn_m_rdp, rw_m_rdp;
  always_ff @(posedge clk) begin
    rd_off_q <= {13'd0, r.rd_pkts} << log_mtu;
    rd_off1_q <= ({13'd0, r.rd_pkts} + 37'd1) << log_mtu;
    ack_m_rdp <= ack_psn - r.rd_pkts;
    hpsn_m_rdp <= h.psn - r.rd_pkts;
    rw_m_rdp <= r.rewound - r.rd_pkts;
    ack1 <= ack_psn + 24'd1;
  end
  // x + y == k without a carry chain: if the sum is k, bit i's carry in is x ^ y ^ k at i,
  // so each bit checks that against the carry bit i - 1 makes (one LUT6 per bit, then an AND)
  function automatic logic sum_eq(input logic [23:0] x, input logic [23:0] y, input logic [23:0] k);
    logic [23:0] c;
    c = {(x[22:0] & y[22:0]) | ((x[22:0] ^ y[22:0]) & ~k[22:0]), 1'b0};
    sum_eq = (x ^ y ^ k) == c;
  endfunction
  always_ff @(posedge clk) begin
    if (st[I_WIN_WAIT] && s_win_valid) begin
      logic [31:0] w_len;
      logic [23:0] w_first, w_npkts;
      logic [36:0] off, off1;
      logic [12:0] rest;
      w_len = s_win_data[8*roce_rec_pkg::SQ_WIN_LEN_OFF +: 32];
      w_first = s_win_data[8*roce_rec_pkg::SQ_WIN_FIRST_PSN_OFF +: 24];
      w_npkts = s_win_data[8*roce_rec_pkg::SQ_WIN_NPKTS_OFF +: 24];
      off = rd_off_q;
      off1 = rd_off1_q;
      rest = w_len[12:0] - off[12:0];
      rd_off <= off[31:0];
      rd_rest <= off >= {5'd0, w_len} ? 13'd0 : rest;
      rd_full <= {5'd0, w_len} > off1;
      rd_exp <= w_first + r.rd_pkts;
      begin
        logic [23:0] d;  // psn_diff(h.psn, rd_exp)
        d = hpsn_m_rdp - w_first;
        rd_ahead <= $signed(d) > 0;
        rd_at <= d == 24'd0;
      end
      rd_last <= r.rd_pkts + 24'd1 == w_npkts;
      o_una_gt <= ret[I_O_CHECK] && roce_util_pkg::psn_gt(w_first, r.una);
      begin
        logic [23:0] d;  // r.rewound - rd_exp
        d = rw_m_rdp - w_first;
        rd_rw_same <= r.rewound_v && d == 24'd0;
      end
      // S_RW_CHECK: rw_target is one of the entry's PSNs, [first, first + npkts) (npkts is
      // at most 2^23: !psn_lt(t, first) && psn_lt(t, first + npkts) is this)
      rw_in <= rw_target - w_first < w_npkts;
      // S_W_CHECK: the entry's first PSN, its next READ response and its last PSN are after
      // ack_psn (each one sum's sign and != 0, the != 0 beside the carry chain: an operand
      // compare, or sum_eq for the three-operand one)
      begin
        /* verilator lint_off UNUSEDSIGNAL */
        logic [23:0] df, dr, dl;
        /* verilator lint_on UNUSEDSIGNAL */
        df = w_first - ack_psn;
        dr = w_first - ack_m_rdp;
        dl = w_first + w_npkts - ack1;
        wc_first_gt <= !df[23] && w_first != ack_psn;
        wc_rd_gt <= !dr[23] && w_first != ack_m_rdp;
        wc_last_gt <= !dl[23] && !sum_eq(w_first, w_npkts, ack1);
      end
    end
  end
  assign rd_plen = rd_full ? 13'(32'd1 << log_mtu) : rd_rest[12:0];
  // S_R_READ's tests of the header, registered (h is loaded as the operation starts, log_mtu
  // from a in S_WAIT): a LAST/ONLY or a FIRST/MIDDLE response, a payload of an MTU
  logic h_rd_end, h_rd_mid, h_len_mtu;
  always_ff @(posedge clk) begin
    h_rd_end <= h.opcode == OP_RD_LAST || h.opcode == OP_RD_ONLY;
    h_rd_mid <= h.opcode == OP_RD_FIRST || h.opcode == OP_RD_MIDDLE;
    h_len_mtu <= h.payload_len == 16'(32'd1 << log_mtu);
  end
  logic        pl_atomic;      // placing an atomic's 8 bytes (else READ data)
  logic [12:0] pl_len;
  logic [31:0] pl_off;
  logic [2:0]  sgn;            // the WQE's SGEs
  logic [383:0] sgs;           // the WQE's SGEs 1-3 (0 goes to the walk's registers)
  // the walk over the SGEs (S_PC_SKIP, then S_PC_TAKE), one SGE per cycle, on registers: the
  // SGE at wk_i is kept in wk_len/wk_key/va_*, the next one is loaded when the walk moves on
  logic [2:0]  wk_i;
  logic [31:0] wk_skip;        // S_PC_SKIP: bytes still to skip
  logic [12:0] wk_rest;        // bytes still to place
  logic [31:0] wk_len;         // S_PC_SKIP: the SGE's length; S_PC_TAKE: what it has left
  logic [31:0] wk_key;
  logic [32:0] va_lo;          // the SGE's address (+ the skip, carry in bit 32)
  logic [31:0] va_hi, va_hi1;  // its high half, + 1
  logic        wk_go;          // the walk starts on wk_src
  logic [514:0] wk_src;
  logic        sg_kept;        // the SGEs kept for the QP are the head's (r is the same
  always_ff @(posedge clk)     // since S_O_DONE, two cycles or more before S_SG)
    sg_kept <= r.sg_v && r.sg_idx == r.sq_ci;
  // the SQ ring entry of r.sq_ci (base + (index mod size) * 128): the mask and the high
  // half's + 1 are kept on registers (a is set in S_WAIT, at least two cycles before the
  // ring is read in S_SG or S_U_NEXT), so only a 22-bit add and a select are left
  logic [14:0] sq_mask;
  logic [41:0] sq_hi1;
  logic [22:0] ring_lo;
  logic [63:0] ring_addr;
  always_ff @(posedge clk) begin
    sq_mask <= (15'd1 << a.sq_log_size) - 15'd1;
    sq_hi1 <= a.sq_base[63:22] + 42'd1;
  end
  assign ring_lo = {1'b0, a.sq_base[21:0]} + {1'b0, r.sq_ci[14:0] & sq_mask, 7'd0};
  assign ring_addr = {ring_lo[22] ? sq_hi1 : a.sq_base[63:22], ring_lo[21:0]};
  assign wk_src = st[I_SG_DATA] ? {dr_data[8*roce_desc_pkg::SQ_WQE_NUM_SGE_OFF +: 3],
                                   dr_data[8*roce_desc_pkg::SQ_WQE_DATA_OFF +: 512]}
                : sg_kept ? sg_q : bs_q[514:0];
  // (loaded in S_SG whether or not the SGEs are there: a ring read loads them again)
  assign wk_go = st[I_SG_DATA] || st[I_SG] || st[I_R_READ];
  logic [2:0]  pc_n, mr_i, mr_got;
  logic [4*32-1:0] pc_key, pc_len;
  logic [4*64-1:0] pc_va, pc_dma;
  logic [3:0]  pc_ok;
  logic [127:0] sg_nx;         // the SGE after wk_i
  always_comb begin
    sg_nx = sgs[127:0];
    if (wk_i == 3'd1) sg_nx = sgs[255:128];
    if (wk_i == 3'd2) sg_nx = sgs[383:256];
  end
  logic wk_stop, wk_lt;
  assign wk_stop = wk_i == sgn || wk_i == 3'd4 || wk_rest == 13'd0;
  assign wk_lt = wk_len[31:13] == 19'd0 && wk_len[12:0] < wk_rest;  // the SGE ends first
  always_comb begin
    m_mr.op = 1'b0;
    m_mr.need = ACC_LOCAL_WRITE;
    m_mr.pd = a.pd;
    m_mr.key = pc_key[31:0];
    m_mr.va = pc_va[63:0];
    m_mr.len = pc_len[31:0];
    for (int k = 1; k < 4; k++) begin
      if (mr_i == 3'(k)) begin
        m_mr.key = pc_key[32*k +: 32];
        m_mr.va = pc_va[64*k +: 64];
        m_mr.len = pc_len[32*k +: 32];
      end
    end
  end
  assign m_mr_user = mr_i[1:0];

  // the scatter: the response's payload, or the atomic's original data as one beat
  logic         sc_valid, sc_ready, sc_pay;
  logic [3:0]   sc_we;
  logic [63:0]  sc_len;
  logic [255:0] sc_addr;
  logic         at_beat;   // the atomic's beat is offered
  logic [511:0] sp_data;
  logic [63:0]  sp_keep;
  logic         sp_valid, sp_ready, sp_last;
  assign sp_data = pl_atomic ? {448'd0, h.atomic_orig} : s_axis_pay_tdata;
  assign sp_keep = pl_atomic ? 64'hFF : s_axis_pay_tkeep;
  assign sp_valid = pl_atomic ? at_beat : s_axis_pay_tvalid;
  assign sp_last = pl_atomic ? 1'b1 : s_axis_pay_tlast;
  assign s_axis_pay_tready = !pl_atomic && sp_ready;
  roce_pay_scatter #(.NSEG(4)) u_scatter (
    .clk, .rst,
    .s_cmd_valid(sc_valid), .s_cmd_ready(sc_ready), .s_cmd_pay(sc_pay), .s_cmd_we(sc_we),
    .s_cmd_len(sc_len), .s_cmd_addr(sc_addr),
    .s_axis_pay_tdata(sp_data), .s_axis_pay_tkeep(sp_keep), .s_axis_pay_tvalid(sp_valid),
    .s_axis_pay_tready(sp_ready), .s_axis_pay_tlast(sp_last),
    .m_dma_wr_valid, .m_dma_wr_ready, .m_dma_wr,
    .m_axis_dma_wr_tdata, .m_axis_dma_wr_tkeep, .m_axis_dma_wr_tvalid, .m_axis_dma_wr_tready,
    .m_axis_dma_wr_tlast
  );
  logic sc_idle;
  assign sc_idle = !sc_valid && sc_ready && !m_dma_wr_valid && !m_axis_dma_wr_tvalid && !at_beat;
  // a completion is held until the payload placed before it is written (the sequencer goes
  // on while the scatter places a READ response; it gives the scatter nothing new while a
  // completion is held)
  logic cpl_v;
  assign m_cpl_valid = cpl_v && sc_idle;

  // DMA read data
  /* verilator lint_off UNUSEDSIGNAL */
  logic [1023:0] dr_data;  // (the WQE: its SGEs are kept)
  /* verilator lint_on UNUSEDSIGNAL */
  logic          dr_err, dr_hi;

  // ---------------------------------------------------------------- input handshakes
  logic idle;
  assign idle = st[I_IDLE] && init_done;
  logic tq_go;
  assign tq_go = tq_wr != tq_rd;  // (no subtract in front of s_rsp_ready)
  assign s_ctx_ready = idle;
  assign s_strd_ready = idle && !s_ctx_valid;
  assign s_kick_ready = idle && !s_ctx_valid && !s_strd_valid;
  assign s_rsp_ready = idle && !s_ctx_valid && !s_strd_valid && !s_kick_valid && !tq_go;
  assign tq_pop = idle && !s_ctx_valid && !s_strd_valid && !s_kick_valid && tq_go;
  always_comb begin
    dbg_op_valid = 1'b0;
    dbg_op_kind = 3'd0;
    dbg_op_qpn = 24'd0;
    if (idle) begin
      if (s_ctx_valid) begin
        dbg_op_valid = 1'b1;
        dbg_op_kind = 3'd4;
        dbg_op_qpn = s_ctx.qpn;
      end else if (s_strd_valid) begin
        dbg_op_valid = 1'b0;
      end else if (s_kick_valid) begin
        dbg_op_valid = 1'b1;
        dbg_op_kind = s_kick_flush ? 3'd3 : 3'd2;
        dbg_op_qpn = s_kick_qpn;
      end else if (tq_go) begin
        dbg_op_valid = 1'b1;
        dbg_op_kind = 3'd1;
        dbg_op_qpn = 24'(tq[tq_rd[1:0]]);
      end else if (s_rsp_valid) begin
        dbg_op_valid = 1'b1;
        dbg_op_kind = 3'd0;
        dbg_op_qpn = s_rsp_hdr[8*roce_rec_pkg::RX_HDR_DEST_QP_OFF +: 24];
      end
    end
  end
  always_comb begin
    row_raddr = q;
    if (idle) begin
      if (s_ctx_valid) row_raddr = s_ctx.qpn[LOG_N-1:0];
      else if (s_strd_valid) row_raddr = s_strd_qpn[LOG_N-1:0];
      else row_raddr = dbg_op_qpn[LOG_N-1:0];
    end
  end
  assign s_dma_rd_tready = 1'b1;

  // ---------------------------------------------------------------- the sequencer
  // S_R_FIN's test psn_gt(r.una, nxt), nxt = r.rw_psn while a rewind of an older generation
  // is pending, else rv.next_psn: both compares side by side on registers (one subtractor
  // behind a state-selected operand mux was the completer's deepest path)
  logic fin_rw;
  // S_R_AETH's "the RNR wait has not passed", registered: r.rnr_until (loaded in S_WAIT,
  // written only by S_R_AETH) and now_l (latched in S_IDLE) hold still long before it
  logic rnr_wait;
  always_ff @(posedge clk) rnr_wait <= roce_util_pkg::t_after(r.rnr_until, now_l);
  // S_R_PLACED's "the response's PSN + 1 is after r.una", registered: h holds from the
  // operation's start and r.una is not written in S_SG or S_SCAT_WAIT, which precede it
  logic h1_gt_una;
  always_ff @(posedge clk) h1_gt_una <= roce_util_pkg::psn_gt(h.psn + 24'd1, r.una);
  // r.sq_ci's and rw_i's order against roce_req's indices ({sq_pi, fetched, started} and
  // started), registered a cycle ahead for the value and the value + 1: S_CPL increments
  // r.sq_ci (ci_inc), S_O_CHECK/S_RW_CHECK rw_i (rw_inc), and the next state reads the
  // order; rw_i loaded from r.sq_ci (rw_ld) takes r.sq_ci's. rv is loaded in S_WAIT and r
  // in S_WAIT/S_GO, a cycle or more before any state that reads these.
  logic       ci_inc, rw_inc, rw_ld;
  logic [2:0] cb0, cb1, ci_b;
  logic       rb0, rb1, rw_b;
  always_ff @(posedge clk) begin
    cb0 <= {roce_util_pkg::idx_lt(r.sq_ci, rv.sq_pi), roce_util_pkg::idx_lt(r.sq_ci, rv.fetched), roce_util_pkg::idx_lt(r.sq_ci, rv.started)};
    cb1 <= {roce_util_pkg::idx_lt(r.sq_ci + 32'd1, rv.sq_pi), roce_util_pkg::idx_lt(r.sq_ci + 32'd1, rv.fetched),
            roce_util_pkg::idx_lt(r.sq_ci + 32'd1, rv.started)};
    rb0 <= roce_util_pkg::idx_lt(rw_i, rv.started);
    rb1 <= roce_util_pkg::idx_lt(rw_i + 32'd1, rv.started);
  end
  assign ci_b = ci_inc ? cb1 : cb0;
  assign rw_b = rw_ld ? ci_b[0] : rw_inc ? rb1 : rb0;
  // the response is a NAK or an RNR NAK (S_W_DONE: else S_R_AETH is skipped), and the RNR
  // back-off in cycles: h is loaded as the operation starts
  // back-off in cycles, and the header's kind and the QP's state for S_R_START / S_T_GO: h is
  // loaded as the operation starts (S_IDLE), a_state and r in S_WAIT, two cycles or more
  // before any of these reads them
  logic        aeth_nak, h_ack0, h_rnr, h_nak, h_rsp, h_rdrsp, qp_live;
  logic [31:0] rnr_dly;
  assign aeth_nak = h_rnr || h_nak;
  always_ff @(posedge clk) begin
    h_ack0 <= h.opcode == OP_ACK && h.aeth_syndrome[7:5] == 3'b000;
    h_rnr <= h.opcode == OP_ACK && h.aeth_syndrome[7:5] == 3'b001;
    h_nak <= h.opcode == OP_ACK && h.aeth_syndrome[7:5] == 3'b011;
    h_rsp <= h.opcode == OP_ATOMIC_ACK || h.opcode == OP_RD_FIRST || h.opcode == OP_RD_MIDDLE ||
             h.opcode == OP_RD_LAST || h.opcode == OP_RD_ONLY;
    h_rdrsp <= h.opcode != OP_ATOMIC_ACK;
    qp_live <= (a_state == ST_RTS || a_state == ST_SQD) && !r.dead;
    rnr_dly <= rnr_us(h.aeth_syndrome[4:0]) * {20'd0, cfg_us_cycles};
  end
  logic        aeth_same;  // S_R_AETH: the NAK's PSN is the last rewind's
  assign fin_rw = r.rw_gen != rv.gen ? roce_util_pkg::psn_gt(r.una, r.rw_psn) : roce_util_pkg::psn_gt(r.una, rv.next_psn);
  always_ff @(posedge clk) begin
    ctx_done <= 1'b0;
    strd_done <= 1'b0;
    cnt_nak <= 1'b0;
    cnt_rnr <= 1'b0;
    cnt_timeout <= 1'b0;
    cnt_dma_err <= 1'b0;
    sg_we <= 1'b0;
    if (!init_done) init_idx <= init_idx + 1'b1;
    ci_inc <= 1'b0;
    rw_ld <= 1'b0;
    rw_inc <= 1'b0;
    if (m_attr_valid && m_attr_ready) m_attr_valid <= 1'b0;
    if (m_rd_valid) m_rd_valid <= 1'b0;
    if (m_win_valid) m_win_valid <= 1'b0;
    if (m_cpl_valid && m_cpl_ready) cpl_v <= 1'b0;
    if (m_err_valid && m_err_ready) m_err_valid <= 1'b0;
    if (m_wake_valid && m_wake_ready) m_wake_valid <= 1'b0;
    if (m_dma_rd_valid && m_dma_rd_ready) m_dma_rd_valid <= 1'b0;
    if (sc_valid && sc_ready) sc_valid <= 1'b0;
    if (at_beat && sp_ready) at_beat <= 1'b0;
    if (m_mr_valid && m_mr_ready) begin
      mr_i <= mr_i + 1'b1;
      if (mr_i + 1'b1 == pc_n) m_mr_valid <= 1'b0;
    end
    if (s_mr_valid) begin
      mr_got <= mr_got + 1'b1;
      for (int k = 0; k < 4; k++) begin
        if (s_mr_user == 2'(k)) begin
          pc_ok[k] <= s_mr.status == 3'd0;
          pc_dma[64*k +: 64] <= s_mr.dma;
        end
      end
    end
    if (s_rd_valid && st[I_WAIT]) begin
      rv <= s_rd_data;
      got_rv <= 1'b1;
    end
    if (s_attr_valid && st[I_WAIT]) begin
      a <= s_attr_data;
      a_state <= s_attr_state;
      got_attr <= 1'b1;
    end

    unique case (1'b1)
      st[I_IDLE]: if (init_done) begin
        fatal <= 8'd0;
        err_done <= 1'b0;
        lost <= 1'b0;
        pl_atomic <= 1'b0;
        pay_pending <= 1'b0;
        got_rv <= 1'b0;
        got_attr <= 1'b0;
        need_attr <= 1'b1;
        row_wait <= 2'd0;
        now_l <= now;
        tick_l <= now_tick;
        if (s_ctx_valid) begin
          kind <= K_CTX;
          q <= s_ctx.qpn[LOG_N-1:0];
          q24 <= s_ctx.qpn;
          k_op <= s_ctx.code;
          k_arg <= s_ctx.arg;
          m_rd_valid <= 1'b1;
          m_rd_qpn <= s_ctx.qpn;
          m_attr_valid <= 1'b1;
          m_attr_qpn <= s_ctx.qpn;
          st <= S_WAIT;
        end else if (s_strd_valid) begin
          kind <= K_STRD;
          q <= s_strd_qpn[LOG_N-1:0];
          q24 <= s_strd_qpn;
          need_attr <= 1'b0;
          got_rv <= 1'b1;
          st <= S_WAIT;
        end else if (s_kick_valid || tq_go) begin
          kind <= s_kick_valid ? (s_kick_flush ? K_FLUSH : K_KICK) : K_TMO;
          q <= dbg_op_qpn[LOG_N-1:0];
          q24 <= dbg_op_qpn;
          m_rd_valid <= 1'b1;
          m_rd_qpn <= dbg_op_qpn;
          m_attr_valid <= 1'b1;
          m_attr_qpn <= dbg_op_qpn;
          st <= S_WAIT;
        end else if (s_rsp_valid) begin
          kind <= K_RSP;
          h <= s_rsp_hdr;
          a <= s_rsp_attr;
          a_state <= s_rsp_state;
          need_attr <= 1'b0;
          pay_pending <= s_rsp_hdr[8*roce_rec_pkg::RX_HDR_FLAGS_OFF + roce_rec_pkg::RX_FLAG_PAYLOAD_BIT];
          q <= dbg_op_qpn[LOG_N-1:0];
          q24 <= dbg_op_qpn;
          m_rd_valid <= 1'b1;
          m_rd_qpn <= dbg_op_qpn;
          st <= S_WAIT;
        end
      end

      st[I_WAIT]: begin
        if (row_wait != 2'd2) row_wait <= row_wait + 2'd1;
        if (row_wait == 2'd1) begin
          r <= row_q;
          pub0 <= '0;
        end
        if (row_wait == 2'd2 && got_rv && (got_attr || !need_attr) && !m_attr_valid) begin
          pub0 <= r_pub;
          st <= kind == K_RSP ? S_R_START : S_GO;
        end
      end

      st[I_GO]: begin
        unique case (kind)
          K_STRD: begin
            strd_done <= 1'b1;
            strd_sq_ci <= r.sq_ci[15:0];
            st <= S_IDLE;
          end
          K_CTX: begin
            st <= S_WB;
            if (k_op == roce_rec_pkg::CTX_OP_RESET) begin
              r <= '0;
            end else if (k_op == roce_rec_pkg::CTX_OP_SET_SQ_PSN) begin
              r.una <= k_arg[23:0];
            end else if (k_op == roce_rec_pkg::CTX_OP_ENTER_RTS) begin
              r.retries <= k_arg[roce_rec_pkg::CTX_RTS_RETRY_CNT_LSB +: 3];
              r.rnr_left <= k_arg[roce_rec_pkg::CTX_RTS_RNR_RETRY_LSB +: 3];
            end else if (k_op == roce_rec_pkg::CTX_OP_ENTER_ERR) begin
              r.dead <= 1'b1;
              st <= S_F_NEXT;
            end
          end
          K_TMO: st <= S_T_GO;
          K_KICK: st <= S_K_GO;
          K_FLUSH: st <= (a_state == 3'd6 || r.dead) ? S_U_NEXT : S_WB;
          default: st <= S_R_START;
        endcase
      end

      // ------------------------------------------------------------ responses
      st[I_R_START]: begin
        // (rw_*: see their declaration)
        rw_i <= r.sq_ci;
        rw_ld <= 1'b1;
        // a QP not in RTS/SQD ignores it; a PSN never sent changes nothing but the rules at
        // the end
        // (ack_psn and una_w are read only by the ACK walk: loaded whether or not it runs)
        ack_psn <= h_ack0 ? h.psn : h.psn - 24'd1;
        o_head <= 1'b1;
        bs_ra <= {q, r.sq_ci[LOG_WIN-1:0]};
        una_w <= r.una;
        st <= qp_live ? S_R_FIN : S_R_FIN4;
        if (qp_live && r_in_win) begin
          if (h_ack0) begin
            st <= S_W_NEXT;
          end else if (h_rnr || h_nak) begin
            cnt_nak <= 1'b1;
            cnt_rnr <= h_rnr;
            st <= S_W_NEXT;
          end else if (h_rsp && ci_b[0]) begin
            // (S_O_NEXT's first step: rw_i is r.sq_ci)
            m_win_valid <= 1'b1;
            m_win_qpn <= q24;
            m_win_idx <= r.sq_ci;
            ret <= S_O_CHECK;
            st <= S_WIN_WAIT;
          end
        end
      end

      // the walk: complete what ack_psn covers
      st[I_W_NEXT]: begin
        if (!ci_b[0]) begin
          st <= S_W_PRE;
        end else begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= r.sq_ci;
          ret <= S_W_CHECK;
          st <= S_WIN_WAIT;
        end
      end
      st[I_W_CHECK]: begin
        st <= S_W_PRE;
        if (wc_first_gt) begin
          st <= S_W_PRE;
        end else if (e_readlike) begin
          if (!wc_rd_gt) begin
            lost <= 1'b1;
            lost_psn <= rd_exp;
          end
          una_w <= rd_exp;
        end else if (!wc_last_gt) begin
          una_w <= e_end;
          cpl_status <= 8'd0;
          cpl_flush <= 1'b0;
          ret <= S_W_NEXT;
          st <= S_CPL;
        end else begin
          una_w <= ack_psn + 24'd1;
        end
      end
      // the walk's end: its tests registered first
      st[I_W_PRE]: begin
        w_adv <= roce_util_pkg::psn_gt(una_w, r.una);
        w_same <= r.rewound_v && r.rewound == lost_psn;
        st <= S_W_DONE;
      end
      st[I_W_DONE]: begin
        // (rw_*: see their declaration)
        rw_target <= lost_psn;
        rw_i <= r.sq_ci;
        rw_ld <= 1'b1;
        rw_ret <= aeth_nak ? S_R_AETH : S_R_FIN;
        st <= aeth_nak ? S_R_AETH : S_R_FIN;
        if (w_adv) begin
          r.una <= una_w;
          r.retries <= a.retry_cnt;
          r.rnr_left <= a.rnr_retry;
          r.rewound_v <= 1'b0;
          r.dl_v <= a.timeout != 5'd0;
          r.dl <= dl_new;
        end
        if (lost && !(w_same && !w_adv)) begin
          st <= S_RW_NEXT;
        end
      end
      st[I_R_AETH]: begin
        aeth_same <= r.rewound_v && r.rewound == h.psn;
        st <= S_R_AETH2;
      end
      st[I_R_AETH2]: begin
        // (rw_*: see their declaration)
        rw_target <= h.psn;
        rw_i <= r.sq_ci;
        rw_ld <= 1'b1;
        rw_ret <= S_R_FIN;
        st <= S_R_FIN;
        if (h_rnr) begin
          // RNR NAK
          if (aeth_same && rnr_wait) begin
            st <= S_R_FIN;
          end else if (r.rnr_left == 3'd0) begin
            fatal <= roce_desc_pkg::WC_STATUS_RNR_RETRY_EXC_ERR;
          end else begin
            if (r.rnr_left != 3'd7) r.rnr_left <= r.rnr_left - 3'd1;
            r.rnr_until <= now_l + rnr_dly;
            r.rewound_v <= 1'b0;
            st <= S_RW_NEXT;
          end
        end else if (h_nak) begin
          unique case (h.aeth_syndrome[4:0])
            5'd0: begin
              if (!(aeth_same)) begin
                if (r.retries == 3'd0) begin
                  fatal <= roce_desc_pkg::WC_STATUS_RETRY_EXC_ERR;
                end else begin
                  r.retries <= r.retries - 3'd1;
                  st <= S_RW_NEXT;
                end
              end
            end
            5'd1: fatal <= roce_desc_pkg::WC_STATUS_REM_INV_REQ_ERR;
            5'd2: fatal <= roce_desc_pkg::WC_STATUS_REM_ACCESS_ERR;
            5'd3: fatal <= roce_desc_pkg::WC_STATUS_REM_OP_ERR;
            default: fatal <= roce_desc_pkg::WC_STATUS_BAD_RESP_ERR;
          endcase
        end
      end

      // the oldest READ/atomic: find it, complete the WQEs before it
      st[I_O_NEXT]: begin
        if (!rw_b) begin
          st <= S_R_FIN;  // none
        end else begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= rw_i;
          ret <= S_O_CHECK;
          st <= S_WIN_WAIT;
        end
      end
      st[I_O_CHECK]: begin
        o_head <= 1'b0;
        if (e_readlike) begin
          ol_km1 <= rw_i - 32'd1;
          o_eq <= ci_eq_rw;
          o_first <= 1'b1;
          ol_first <= e.first_psn;
          st <= S_O_CPL;
        end else begin
          rw_i <= rw_i + 32'd1;
          rw_inc <= 1'b1;
          st <= S_O_NEXT;
        end
      end
      st[I_O_CPL]: begin  // complete the head until the READ is there
        o_first <= 1'b0;
        if (o_first ? o_eq : o_eq1) begin
          st <= S_O_DONE;
        end else begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= r.sq_ci;
          ret <= S_O_CPL2;
          st <= S_WIN_WAIT;
        end
      end
      st[I_O_CPL2]: begin
        cpl_status <= 8'd0;
        cpl_flush <= 1'b0;
        ret <= S_O_CPL;
        st <= S_CPL;
      end
      st[I_O_DONE]: begin
        if (roce_util_pkg::psn_gt(ol_first, r.una)) r.una <= ol_first;
        bs_ra <= {q, r.sq_ci[LOG_WIN-1:0]};
        m_win_valid <= 1'b1;
        m_win_qpn <= q24;
        m_win_idx <= r.sq_ci;
        ret <= h.opcode == OP_ATOMIC_ACK ? S_R_ATOM : S_R_READ;
        st <= S_WIN_WAIT;
      end

      // READ response for the READ at the head (e)
      st[I_R_READ]: begin
        // (rw_*: see their declaration)
        rw_target <= rd_exp;
        rw_i <= r.sq_ci;
        rw_ld <= 1'b1;
        rw_ret <= S_R_FIN;
        st <= S_R_FIN;
        pl_len <= rd_plen;  // (read only by the walk, which starts here or from S_SG)
        pl_off <= rd_off;
        if (o_una_gt) r.una <= e.first_psn;  // (S_O_DONE's, when it was skipped)
        if (e.opcode == roce_desc_pkg::SQ_OP_READ) begin
          if (rd_ahead) begin
            // a response was lost: go back to it
            if (!rd_rw_same) begin
              st <= S_RW_NEXT;
            end
          end else if (rd_at) begin
            if (!(rd_last ? h_rd_end : h_rd_mid) ||
                !(rd_full ? h_len_mtu : h.payload_len == {3'd0, rd_rest})) begin
              fatal <= roce_desc_pkg::WC_STATUS_BAD_RESP_ERR;
            end else begin
              st <= sg_kept ? S_PC_SKIP : S_SG;  // (wk_go)
            end
          end
        end
      end
      // ATOMIC Acknowledge for the atomic at the head (e)
      st[I_R_ATOM]: if (sc_idle && !cpl_v) begin  // (the atomic's beat replaces the payload input)
        st <= S_R_FIN;
        if (e_atomic && e.first_psn == h.psn) begin
          pl_atomic <= 1'b1;
          pl_len <= 13'd8;
          pl_off <= 32'd0;
          st <= S_SG;
        end
      end

      // the WQE's SGEs: kept, or read again from the SQ ring
      st[I_SG]: begin
        if (sg_kept) begin
          st <= S_PC_SKIP;  // (wk_go)
        end else if (bs_hit) begin
          // given by roce_req when the WQE arrived: kept from now on as if read again
          sg_we <= 1'b1;
          sg_wd <= bs_q[514:0];
          r.sg_v <= 1'b1;
          r.sg_idx <= r.sq_ci;
          st <= S_PC_SKIP;  // (wk_go)
        end else begin
          m_dma_rd_valid <= 1'b1;
          m_dma_rd.addr <= ring_addr;
          m_dma_rd.len <= 16'd128;
          dr_hi <= 1'b0;
          dr_err <= 1'b0;
          st <= S_SG_RD;
        end
      end
      st[I_SG_RD]: if (s_dma_rd_tvalid) begin
        if (!dr_hi) dr_data[511:0] <= s_dma_rd_tdata;
        else dr_data[1023:512] <= s_dma_rd_tdata;
        dr_hi <= 1'b1;
        if (s_dma_rd_tuser) dr_err <= 1'b1;
        if (s_dma_rd_tlast) st <= S_SG_DATA;
      end
      st[I_SG_DATA]: begin
        if (dr_err) cnt_dma_err <= 1'b1;
        sg_we <= 1'b1;
        sg_wd <= wk_src;
        r.sg_v <= 1'b1;
        r.sg_idx <= r.sq_ci;
        st <= S_PC_SKIP;  // (wk_go)
      end
      // pieces of [pl_off, pl_off + pl_len) over the SGEs, one SGE a cycle: S_PC_SKIP skips
      // pl_off bytes (whole SGEs, then into one: the cycle that starts S_PC_TAKE), S_PC_TAKE
      // places a piece per SGE (none of an empty one) until pl_len bytes are placed
      st[I_PC_SKIP], st[I_PC_TAKE]: begin
        if (wk_stop) begin
          mr_i <= 3'd0;
          mr_got <= 3'd0;
          pc_ok <= 4'd0;
          m_mr_valid <= pc_n != 3'd0;
          st <= S_PC_MRW;
        end else if (st[I_PC_SKIP] && wk_skip < wk_len) begin
          wk_len <= wk_len - wk_skip;
          va_lo <= {1'b0, va_lo[31:0]} + {1'b0, wk_skip};
          va_hi1 <= va_hi + 32'd1;
          st <= S_PC_TAKE;
        end else begin  // on to the next SGE
          if (st[I_PC_SKIP]) begin
            wk_skip <= wk_skip - wk_len;
          end else if (wk_len != 32'd0) begin
            for (int k = 0; k < 4; k++) begin
              if (pc_n == 3'(k)) begin
                pc_key[32*k +: 32] <= wk_key;
                pc_va[64*k +: 64] <= {va_lo[32] ? va_hi1 : va_hi, va_lo[31:0]};
                pc_len[32*k +: 32] <= wk_lt ? wk_len : {19'd0, wk_rest};
              end
            end
            pc_n <= pc_n + 3'd1;
            wk_rest <= wk_lt ? wk_rest - wk_len[12:0] : 13'd0;
            if (!wk_lt) begin  // the last piece: the checks start at once
              mr_i <= 3'd0;
              mr_got <= 3'd0;
              pc_ok <= 4'd0;
              m_mr_valid <= 1'b1;
              st <= S_PC_MRW;
            end
          end
          wk_i <= wk_i + 3'd1;
          wk_len <= sg_nx[95:64];
          wk_key <= sg_nx[127:96];
          va_lo <= {1'b0, sg_nx[31:0]};
          va_hi <= sg_nx[63:32];
        end
      end
      st[I_PC_MRW]: if (!m_mr_valid && mr_got == pc_n) st <= S_PC_CHK;
      st[I_PC_CHK]: if (!sc_valid && !cpl_v) begin
        logic [3:0] wen;
        logic bad;
        bad = 1'b0;
        for (int k = 0; k < 4; k++) begin
          wen[k] = pc_n > 3'(k) && !bad && pc_ok[k];
          if (pc_n > 3'(k) && !pc_ok[k]) bad = 1'b1;
        end
        // the pieces up to the first failed check are written (the payload goes through)
        sc_valid <= 1'b1;
        sc_pay <= pl_atomic || pay_pending;  // (an empty READ response has no payload)
        sc_we <= wen;
        for (int k = 0; k < 4; k++) begin
          sc_len[16*k +: 16] <= pc_len[32*k +: 16];
          sc_addr[64*k +: 64] <= pc_dma[64*k +: 64];
        end
        if (pl_atomic) at_beat <= 1'b1;
        pay_pending <= 1'b0;
        if (bad) fatal <= roce_desc_pkg::WC_STATUS_LOC_PROT_ERR;
        else if (wk_rest != 13'd0) fatal <= roce_desc_pkg::WC_STATUS_LOC_LEN_ERR;
        // (S_SCAT_WAIT's test, for READ data)
        st <= pl_atomic ? S_SCAT_WAIT : bad || wk_rest != 13'd0 ? S_R_FIN : S_R_PLACED;
      end
      // READ data: the scatter places it while the sequencer goes on (completions wait for
      // it); an atomic's beat: wait for it
      st[I_SCAT_WAIT]: if (!pl_atomic || sc_idle) st <= fatal != 8'd0 ? S_R_FIN : S_R_PLACED;
      st[I_R_PLACED]: begin
        st <= S_R_FIN;
        r.retries <= a.retry_cnt;
        r.rnr_left <= a.rnr_retry;
        r.rewound_v <= 1'b0;
        r.dl_v <= a.timeout != 5'd0;
        r.dl <= dl_new;
        if (pl_atomic) begin
          r.una <= h.psn + 24'd1;
          cpl_status <= 8'd0;
          cpl_flush <= 1'b0;
          ret <= S_R_FIN;
          st <= S_CPL;
        end else begin
          if (h1_gt_una) r.una <= h.psn + 24'd1;
          if (r.rd_pkts == e_nm1) begin
            cpl_status <= 8'd0;
            cpl_flush <= 1'b0;
            ret <= S_R_FIN;
            st <= S_CPL;
          end else begin
            r.rd_pkts <= r.rd_pkts + 24'd1;
          end
        end
      end

      // after a response: skip what is acknowledged, the error, a malformed WQE at the head
      st[I_R_FIN]: begin
        // (rw_*: see their declaration)
        rw_target <= r.una;
        rw_i <= r.sq_ci;
        rw_ld <= 1'b1;
        rw_ret <= S_R_FIN2;
        st <= S_R_FIN2;
        if (fatal == 8'd0 && fin_rw) begin
          st <= S_RW_NEXT;
        end else if (fatal == 8'd0 && !(!err_done && ci_b[1] && !ci_b[0]) && !pay_pending) begin
          st <= S_WB;  // (S_R_FIN2 .. S_R_FIN4 would do nothing)
        end
      end
      st[I_R_FIN2]: begin
        st <= S_R_FIN3;
        if (fatal != 8'd0 && ci_b[1]) begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= r.sq_ci;
          ret <= S_CPL;
          cpl_status <= fatal;
          cpl_flush <= 1'b0;
          st <= S_WIN_WAIT;
        end
      end
      st[I_R_FIN3]: begin
        // (after S_CPL, which returns to S_CPL's ret: set below)
        st <= S_R_FIN4;
        if (!err_done && ci_b[1] && !ci_b[0]) begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= r.sq_ci;
          ret <= S_K_CPL;
          st <= S_WIN_WAIT;
        end
      end
      st[I_R_FIN4]: st <= pay_pending ? S_DROP : S_WB;

      // ------------------------------------------------------------ window entry read
      st[I_WIN_WAIT]: if (s_win_valid) begin
        e <= s_win_data;
        e_end <= w_end;
        e_nm1 <= w_nm1;
        st <= ret;
        if (ret[I_CPL]) ret <= S_R_FIN3;
        // the READ response's READ is the head: S_O_CHECK .. S_O_DONE and their second read
        // of the same entry are skipped (S_R_READ moves una to its first PSN)
        if (ret[I_O_CHECK] && o_head && h_rdrsp && w_read) st <= S_R_READ;
      end

      // ------------------------------------------------------------ a completion (entry e)
      st[I_CPL]: if (!cpl_v && !m_err_valid) begin
        logic [7:0] stat;
        stat = cpl_status != 8'd0 ? cpl_status :
               cpl_flush && e.status == 8'd0 ? roce_desc_pkg::WC_STATUS_WR_FLUSH_ERR : e.status;
        if (e.flags[roce_desc_pkg::SQ_FLAG_SIGNALED_BIT] || stat != 8'd0) begin
          cpl_v <= 1'b1;
          m_cpl_tdata <= roce_util_pkg::cqe_img(e.wr_id, cpl_flush ? 32'd0 : e.len, 32'd0, q24, e_cqe_op, stat, 8'd0,
                                                a.dest_qpn);
          m_cpl_tuser <= {2'b00, a.send_cq};
        end
        r.sq_ci <= r.sq_ci + 32'd1;
        ci_inc <= 1'b1;
        r.rd_pkts <= 24'd0;
        if (stat == 8'd0 && e_readlike) r.rd_done <= r.rd_done + 8'd1;
        if (stat != 8'd0 && !cpl_flush && !err_done && !r.dead) begin
          m_err_valid <= 1'b1;
          m_err_qpn <= q24;
          m_err_cause <= stat;
          err_done <= 1'b1;
          r.dead <= 1'b1;
        end
        st <= ret;
      end

      // ------------------------------------------------------------ rewind: find rw_target
      st[I_RW_NEXT]: begin
        if (!rw_b) begin
          st <= rw_ret;
          if (rw_target == rv.max_sent) begin
            r.rw_psn <= rw_target;
            r.rw_idx <= rv.started;
            r.rw_pkt <= 24'd0;
            r.rw_gen <= r.rw_gen + 8'd1;
            r.rewound_v <= 1'b1;
            r.rewound <= rw_target;
          end
        end else begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= rw_i;
          ret <= S_RW_CHECK;
          st <= S_WIN_WAIT;
        end
      end
      st[I_RW_CHECK]: begin
        if (rw_in) begin
          r.rw_psn <= rw_target;
          r.rw_idx <= rw_i;
          r.rw_pkt <= rw_target - e.first_psn;
          r.rw_gen <= r.rw_gen + 8'd1;
          r.rewound_v <= 1'b1;
          r.rewound <= rw_target;
          st <= rw_ret;
        end else begin
          rw_i <= rw_i + 32'd1;
          rw_inc <= 1'b1;
          st <= S_RW_NEXT;
        end
      end

      // ------------------------------------------------------------ timeout
      st[I_T_GO]: begin
        // (rw_*: see their declaration)
        rw_target <= r.una;
        rw_i <= r.sq_ci;
        rw_ld <= 1'b1;
        rw_ret <= S_WB;
        st <= S_WB;
        if (qp_live && t_expired) begin
          cnt_timeout <= 1'b1;
          if (r.retries == 3'd0) begin
            if (ci_b[1]) begin
              m_win_valid <= 1'b1;
              m_win_qpn <= q24;
              m_win_idx <= r.sq_ci;
              ret <= S_CPL;
              cpl_status <= roce_desc_pkg::WC_STATUS_RETRY_EXC_ERR;
              cpl_flush <= 1'b0;
              st <= S_T_CPL;
            end
          end else begin
            r.retries <= r.retries - 3'd1;
            r.rewound_v <= 1'b0;
            r.dl_v <= a.timeout != 5'd0;
            r.dl <= dl_new;
            st <= S_RW_NEXT;
          end
        end
      end
      st[I_T_CPL]: if (s_win_valid) begin
        e <= s_win_data;
        e_end <= w_end;
        e_nm1 <= w_nm1;
        ret <= S_WB;
        st <= S_CPL;
      end

      // ------------------------------------------------------------ kick: a malformed head
      st[I_K_GO]: begin
        st <= S_WB;
        if (a_state != 3'd6 && !r.dead && ci_b[1] &&
            !ci_b[0]) begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= r.sq_ci;
          ret <= S_K_CPL;
          st <= S_WIN_WAIT;
        end
      end
      st[I_K_CPL]: begin
        st <= kind == K_RSP ? S_R_FIN4 : S_WB;
        if (e.status != 8'd0) begin
          cpl_status <= 8'd0;
          cpl_flush <= 1'b0;
          ret <= kind == K_RSP ? S_R_FIN4 : S_WB;
          st <= S_CPL;
        end
      end

      // ------------------------------------------------------------ ENTER_ERR: flush
      st[I_F_NEXT]: begin
        if (!ci_b[1]) begin
          st <= S_U_NEXT;
        end else begin
          m_win_valid <= 1'b1;
          m_win_qpn <= q24;
          m_win_idx <= r.sq_ci;
          ret <= S_F_CPL;
          st <= S_WIN_WAIT;
        end
      end
      st[I_F_CPL]: begin
        cpl_status <= 8'd0;
        cpl_flush <= 1'b1;
        ret <= S_F_NEXT;
        st <= S_CPL;
      end
      // the WQEs posted and not fetched: wr_id from the ring
      st[I_U_NEXT]: begin
        if (!ci_b[2]) begin
          if (kind == K_CTX) begin
            r.rd_pkts <= 24'd0;
            r.dl_v <= 1'b0;
            r.una <= rv.max_sent;
          end
          st <= S_WB;
        end else if (!m_dma_rd_valid) begin
          m_dma_rd_valid <= 1'b1;
          m_dma_rd.addr <= ring_addr;
          m_dma_rd.len <= 16'd8;
          st <= S_U_DATA;
        end
      end
      st[I_U_DATA]: if (s_dma_rd_tvalid) begin
        e <= '0;
        e_end <= 24'd0;
        e_nm1 <= 24'hFF_FFFF;
        e.wr_id <= s_dma_rd_tuser ? 64'd0 : s_dma_rd_tdata[63:0];
        if (s_dma_rd_tuser) cnt_dma_err <= 1'b1;
        st <= S_U_CPL;
      end
      st[I_U_CPL]: begin
        cpl_status <= roce_desc_pkg::WC_STATUS_WR_FLUSH_ERR;
        cpl_flush <= 1'b1;
        ret <= S_U_NEXT;
        st <= S_CPL;
      end

      // ------------------------------------------------------------ end of an operation
      st[I_DROP]: if (!sc_valid && !cpl_v) begin
        sc_valid <= 1'b1;
        sc_pay <= 1'b1;
        sc_we <= 4'd0;
        pay_pending <= 1'b0;
        st <= S_DROP_WAIT;
      end
      st[I_DROP_WAIT]: if (sc_idle) st <= S_WB;

      st[I_WB]: begin  // the row is written this cycle
        ctx_done <= kind == K_CTX;
        st <= S_IDLE;
        if (r_pub != pub0 && kind != K_CTX) begin  // (S_WAKE's, when the output is free)
          if (m_wake_valid) begin
            st <= S_WAKE;
          end else begin
            m_wake_valid <= 1'b1;
            m_wake_qpn <= q24;
          end
        end
      end
      st[I_WAKE]: if (!m_wake_valid) begin
        m_wake_valid <= 1'b1;
        m_wake_qpn <= q24;
        st <= S_IDLE;
      end

      default: ;
    endcase
    if (wk_go) begin  // the walk starts on the SGE at index 0 of wk_src
      sgn <= wk_src[514:512];
      sgs <= wk_src[511:128];
      wk_i <= 3'd0;
      wk_skip <= st[I_R_READ] ? rd_off : pl_off;
      wk_rest <= st[I_R_READ] ? rd_plen : pl_len;
      wk_len <= wk_src[95:64];
      wk_key <= wk_src[127:96];
      va_lo <= {1'b0, wk_src[31:0]};
      va_hi <= wk_src[63:32];
      pc_n <= 3'd0;
    end

    if (rst || soft_reset) begin
      init_idx <= '0;
      st <= S_IDLE;
      m_attr_valid <= 1'b0;
      m_rd_valid <= 1'b0;
      m_win_valid <= 1'b0;
      cpl_v <= 1'b0;
      m_err_valid <= 1'b0;
      m_wake_valid <= 1'b0;
      m_dma_rd_valid <= 1'b0;
      m_mr_valid <= 1'b0;
      sc_valid <= 1'b0;
      at_beat <= 1'b0;
      ctx_done <= 1'b0;
      strd_done <= 1'b0;
    end
  end

endmodule

`resetall
