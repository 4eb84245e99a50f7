// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_req: the RC requester, with the SQ doorbells and the WQE fetch. Owns the per-QP
// requester state and the send window sq_win in BRAM (each QP's own 16 entries and a pool of
// as many blocks of 16 again, from which a QP takes 2^sq_win_shift at Rtr -> Rts), and a WQE
// prefetch store (16 bodies per QP), and makes request packets as the engine model's requester
// (Engine::req_visit): a round-robin ring of QPs with work is visited one at a time (state
// and rewind checks, then up to BURST times the WQE body, limits and pacing, a packet with
// its payload gathered through the SGEs after L_Key checks; then a run of WQE reads ahead);
// between visits context ops, state reads, WQE arrivals, wakes and doorbells (SQ_DB, and
// inline ones that carry their WQE: taken into the store without a read when it is the next
// to fetch).
// Ports: s_db (SQ doorbells), s_axis_bf (inline doorbells: a WQE with bf_db, two beats),
//   s_ctx / s_strd, m_attr, m_comp (roce_comp's state), s_wake,
//   m_kick, m_body / m_body_clr (READ/atomic SGEs for roce_comp), m_query / s_pace and m_sent
//   (roce_dcqcn), m_mr, m_wqe_rd and m_dma_rd (DMA reads), m_desc + m_axis_pay (packets),
//   m_err, s_rd / s_rd2 / s_win (our state and window for roce_comp, latency 2), counters.
// Latency: the descriptor of a visit whose body is held is pushed about 11 cycles after the
//   visit starts (inline; its pacing question goes out with the visit's reads) or 17 (the SGE
//   walk and the MR checks; the first payload read goes out with the last L_Key answer) and
//   offered 2 cycles after its payload's last beat is taken; two cycles less for a visit a WQE
//   arrival starts whose send index is that WQE (S_V_REW takes the body the arrival kept and
//   the packet's pipeline runs a cycle ahead). On an empty ring an SQ doorbell
//   starts its QP's visit at once (a QP with nothing fetched and not completed: its WQE read
//   request 5 cycles after the doorbell), an inline one 5 cycles after its first beat, the
//   last WQE read in flight 5 (its reads of the QP's attributes and completer state go out at 3).
// Throughput: one visit at a time, up to BURST packets; a further packet of the same WQE keeps
//   the body, the SGE walk and MR checks overlap the pacing answer (about 22 cycles a 64-byte
//   WRITE over eight QPs, 16.7 inline, 16.3 a packet of a long WRITE at MTU 256). Payload one
//   beat per cycle; the next descriptor is offered while a payload streams.
// Model blocks::req; docs/engine-hdl.md. Parameters: LOG_N (QPs, default 1024), LOG_WIN
//   (a QP's own window, the pool's block and a QP's stretch of the store, 16), LOG_BATCH
//   (WQEs per read, 8), DEPTH (payload FIFO beats, 512 = 32 KiB), DESC_DEPTH (packets in
//   flight, 64), MAX_UNACKED (PSNs, 4096), LOG_ACK_EVERY (AckReq at least every 2^n packets,
//   32), BURST (packets per visit, 4), LOG_ACK_WQES (an unsignaled WQE's last packet asks
//   for an ACK at least every 2^n, 4). The reset sweep takes N x W cycles (the store's tags).

`resetall
`default_nettype none

module roce_req #(
  parameter int LOG_N = 10,
  parameter int LOG_WIN = 4,
  parameter int LOG_BATCH = 3,
  parameter int DEPTH = 512,
  parameter int DESC_DEPTH = 64,
  parameter int MAX_UNACKED = 4096,
  parameter int LOG_ACK_EVERY = 5,
  parameter int BURST = 4,
  parameter int LOG_ACK_WQES = 2,
  localparam int ATTR_W = 8 * roce_rec_pkg::QP_ATTR_BYTES,
  localparam int DESC_W = 8 * roce_rec_pkg::TX_DESC_BYTES,
  localparam int CRD_W = 8 * roce_rec_pkg::COMP_RD_BYTES,
  localparam int RRD_W = 8 * roce_rec_pkg::REQ_RD_BYTES,
  localparam int WIN_W = 8 * roce_rec_pkg::SQ_WIN_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,
  input  wire logic              soft_reset,
  output      logic              init_done,
  input  wire logic [31:0]       now,       // cycle counter (RNR back-off)
  input  wire logic [31:0]       now_tick,  // IB timer ticks (TICK_CYCLES)

  // SQ doorbells
  input  wire logic              s_db_valid,
  output      logic              s_db_ready,
  input  wire logic [23:0]       s_db_qpn,
  input  wire logic [15:0]       s_db_pi,

  // inline doorbells: a whole SQ WQE whose bf_db is the doorbell (two beats, tlast on the
  // second; a record of another length is dropped)
  input  wire logic [511:0]      s_axis_bf_tdata,
  input  wire logic              s_axis_bf_tvalid,
  output      logic              s_axis_bf_tready,
  input  wire logic              s_axis_bf_tlast,

  // wakes from roce_comp (its state of the QP changed)
  input  wire logic              s_wake_valid,
  output      logic              s_wake_ready,
  input  wire logic [23:0]       s_wake_qpn,

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
  output      logic [23:0]       strd_sq_psn,
  output      logic [15:0]       strd_sq_pi,

  // attribute lookup (roce_qp_ctx's TX port)
  output      logic              m_attr_valid,
  input  wire logic              m_attr_ready,
  output      logic [23:0]       m_attr_qpn,
  input  wire logic              s_attr_valid,
  input  wire logic [ATTR_W-1:0] s_attr_data,
  input  wire logic [2:0]        s_attr_state,

  // roce_comp's state of a QP
  output      logic              m_comp_valid,
  input  wire logic              m_comp_ready,
  output      logic [23:0]       m_comp_qpn,
  input  wire logic              s_comp_valid,
  input  wire logic [CRD_W-1:0]  s_comp_data,

  // pacing (roce_dcqcn): may the QP send; the bytes it sent
  output      logic              m_query_valid,
  input  wire logic              m_query_ready,
  output      logic [23:0]       m_query_qpn,
  input  wire logic              s_pace_valid,
  input  wire logic [23:0]       s_pace_qpn,
  input  wire logic              s_pace_allowed,
  output      logic              m_sent_valid,
  input  wire logic              m_sent_ready,
  output      logic [23:0]       m_sent_qpn,
  output      logic [15:0]       m_sent_bytes,

  // L_Key checks (roce_mr_check; results in order)
  output      logic              m_mr_valid,
  input  wire logic              m_mr_ready,
  output      roce_rec_pkg::mr_req_t m_mr,
  output      logic [1:0]        m_mr_user,
  input  wire logic              s_mr_valid,
  input  wire roce_rec_pkg::mr_res_t s_mr,
  input  wire logic [1:0]        s_mr_user,

  // WQE reads (128 bytes, two beats, in order; tuser = the read failed)
  output      logic              m_wqe_rd_valid,
  input  wire logic              m_wqe_rd_ready,
  output      roce_rec_pkg::dma_req_t m_wqe_rd,
  input  wire logic [511:0]      s_wqe_rd_tdata,
  input  wire logic              s_wqe_rd_tvalid,
  output      logic              s_wqe_rd_tready,
  input  wire logic              s_wqe_rd_tlast,
  input  wire logic              s_wqe_rd_tuser,

  // payload reads (lane-0 aligned data, in order; tuser = the read failed)
  output      logic              m_dma_rd_valid,
  input  wire logic              m_dma_rd_ready,
  output      roce_rec_pkg::dma_req_t m_dma_rd,
  input  wire logic [511:0]      s_dma_rd_tdata,
  input  wire logic              s_dma_rd_tvalid,
  output      logic              s_dma_rd_tready,
  input  wire logic              s_dma_rd_tlast,
  input  wire logic              s_dma_rd_tuser,

  // packets toward the TX arbiter
  output      logic              m_desc_valid,
  input  wire logic              m_desc_ready,
  output      logic [DESC_W-1:0] m_desc,
  output      logic [511:0]      m_axis_pay_tdata,
  output      logic [63:0]       m_axis_pay_tkeep,
  output      logic              m_axis_pay_tvalid,
  input  wire logic              m_axis_pay_tready,
  output      logic              m_axis_pay_tlast,

  // toward roce_comp: complete a malformed WQE at the head (flush 0) / flush the SQ (1)
  output      logic              m_kick_valid,
  input  wire logic              m_kick_ready,
  output      logic [23:0]       m_kick_qpn,
  output      logic              m_kick_flush,
  // toward roce_comp: the SGEs of each READ/atomic WQE as it arrives (a one-cycle write,
  // {num_sge[2:0], the WQE's data section}), and a pulse at RESET (forget QP m_body_qpn's)
  output      logic              m_body_valid,
  output      logic [23:0]       m_body_qpn,
  output      logic [31:0]       m_body_idx,
  output      logic [514:0]      m_body_sge,
  output      logic              m_body_clr,

  // QP errors (roce_qp_ctx): cause = the CQE status code
  output      logic              m_err_valid,
  input  wire logic              m_err_ready,
  output      logic [23:0]       m_err_qpn,
  output      logic [7:0]        m_err_cause,

  // read ports for roce_comp
  input  wire logic              s_rd_valid,
  input  wire logic [23:0]       s_rd_qpn,
  output      logic              m_rd_valid,
  output      logic [RRD_W-1:0]  m_rd_data,
  input  wire logic              s_rd2_valid,
  input  wire logic [23:0]       s_rd2_qpn,
  output      logic              m_rd2_valid,
  output      logic [RRD_W-1:0]  m_rd2_data,
  input  wire logic              s_win_valid,
  input  wire logic [23:0]       s_win_qpn,
  input  wire logic [31:0]       s_win_idx,
  output      logic              m_win_valid,
  output      logic [WIN_W-1:0]  m_win_data,

  // counters: one-cycle pulses
  output      logic              cnt_retransmit,
  output      logic              cnt_stale,
  output      logic              cnt_dma_err,
  output      logic              cnt_wqe_err
);

  localparam int N = 1 << LOG_N;
  localparam int LOG_STORE = LOG_N + LOG_WIN;
  localparam int P = 1 << LOG_STORE;   // prefetch store entries: W per QP
  localparam int B = 1 << LOG_BATCH;   // WQEs per read at most

  // QPNs beyond the table alias (the engine gives none); WQE data is two beats
  logic unused_in;
  assign unused_in = ^s_wake_qpn[23:LOG_N] ^ ^s_rd_qpn[23:LOG_N] ^ ^s_rd2_qpn[23:LOG_N] ^
                     ^s_win_qpn[23:LOG_N] ^ ^s_win_idx[31:LOG_WIN] ^ s_wqe_rd_tlast;
  localparam int W = 1 << LOG_WIN;
  localparam int AW = $clog2(DEPTH);
  localparam int QW = $clog2(DESC_DEPTH);
  localparam int PQ_DEPTH = 4 * DESC_DEPTH;  // payload pieces in flight
  localparam int PW = $clog2(PQ_DEPTH);
  localparam int IQ_DEPTH = 4;               // inline payloads in flight
  localparam int TQ_DEPTH = 16;              // WQE reads in flight (1..B WQEs each)
  localparam int TW = $clog2(TQ_DEPTH);

  // ---------------------------------------------------------------- codes
  localparam logic [2:0] OP_SEND = 3'd0;
  localparam logic [2:0] OP_SEND_IMM = 3'd1;
  localparam logic [2:0] OP_SEND_INV = 3'd2;
  localparam logic [2:0] OP_WRITE = 3'd3;
  localparam logic [2:0] OP_WRITE_IMM = 3'd4;
  localparam logic [2:0] OP_READ = 3'd5;
  localparam logic [2:0] OP_CAS = 3'd6;
  localparam logic [2:0] OP_FAA = 3'd7;
  localparam int F_SIGNALED = roce_desc_pkg::SQ_FLAG_SIGNALED_BIT;
  localparam int F_SOLICITED = roce_desc_pkg::SQ_FLAG_SOLICITED_BIT;
  localparam int F_INLINE = roce_desc_pkg::SQ_FLAG_INLINE_BIT;
  localparam int F_FENCE = roce_desc_pkg::SQ_FLAG_FENCE_BIT;

  // body slot states
  localparam logic [1:0] T_NONE = 2'd0;
  localparam logic [1:0] T_PEND = 2'd1;
  localparam logic [1:0] T_OK = 2'd2;
  localparam logic [1:0] T_BAD = 2'd3;

  // ---------------------------------------------------------------- per-QP state
  typedef struct packed {
    logic [31:0]  own_idx;      // the own body slot: the SQ index it holds
    logic [1:0]   own_st;       // its T_*
    logic [3:0]   epoch;        // bumped by RESET (WQE reads of an earlier epoch are dropped)
    logic         rts;          // ENTER_RTS seen (until RESET / ENTER_ERR)
    logic         dead;         // ENTER_ERR seen (until RESET)
    logic         busy;         // busy_dl valid
    logic [31:0]  busy_dl;      // local ACK timer deadline set when sending from idle (ticks)
    logic [7:0]   rd_started;   // READ/atomic WQEs started
    logic [7:0]   gen;          // rewind generation applied
    logic [23:0]  cur_pkt;
    logic [23:0]  max_sent;
    logic [23:0]  next_psn;
    logic [31:0]  cur;          // SQ index of the WQE being sent
    logic [31:0]  fetched;      // SQ index one past the last WQE fetched (reads issued)
    logic [31:0]  fetched_pub;  // SQ index one past the last fetched WQE arrived
    logic [31:0]  started;      // SQ index one past the last WQE started
    logic [31:0]  sq_pi;        // SQ producer index (extended)
    logic [15:0]  ci_seen;      // roce_comp's sq_ci at the last visit (inline doorbells)
    logic [3:0]   win_lo;       // the window: bit j set when sq_win_shift > j (0: own block)
    logic [LOG_N-1:0] win_base; // its first pool block (win_lo != 0)
  } row_t;
  localparam int ROW_W = 341 + LOG_N;  // (Yosys 0.23 has no $bits of a type)

  // a WQE body as a visit needs it
  typedef struct packed {
    logic [511:0] data;         // SGEs or inline bytes; atomics: {swap, compare_add} in [127:0]
    logic [31:0]  total_len;
    logic [31:0]  rkey;
    logic [63:0]  remote_addr;
    logic [31:0]  imm;
    logic [2:0]   num_sge;
    logic [3:0]   flags;
    logic [2:0]   opcode;
  } body_t;
  localparam int BODY_W = 682;

  (* ram_style = "block" *) logic [ROW_W-1:0] row_mem [N];
  (* ram_style = "block" *) logic [RRD_W-1:0] rd1_mem [N];
  (* ram_style = "block" *) logic [RRD_W-1:0] rd2_mem [N];
  (* ram_style = "block" *) logic [BODY_W-1:0] own_mem [N];   // own body slots
  (* ram_style = "block" *) logic [BODY_W-1:0] st_mem [P];    // the prefetch store
  // the send windows: entry win_slot (the own blocks, then the pool's)
  (* ram_style = "block" *) logic [111:0] wina_mem [2 * N * W];  // {flags, opcode, len, wr_id}
  (* ram_style = "block" *) logic [7:0]   wins_mem [2 * N * W];  // status
  (* ram_style = "block" *) logic [47:0]  winp_mem [2 * N * W];  // {npkts, first_psn}
  // each QP's {win_lo, win_base} for roce_comp's window reads (written with the row)
  (* ram_style = "distributed" *) logic [LOG_N+3:0] wcfg_mem [N];
  (* ram_style = "distributed" *) logic [12:0] out_mem [N];  // {epoch, gen, dead}

  // the reset sweep: every table's entries, the store's tags (P of them) last
  logic [LOG_STORE:0] init_idx;
  assign init_done = init_idx[LOG_STORE];

  // ---------------------------------------------------------------- helpers
  function automatic logic signed [23:0] psn_diff(input logic [23:0] x, input logic [23:0] y);
    psn_diff = x - y;
  endfunction
  // PSN and time order: roce_util_pkg
  /* verilator lint_off UNUSEDSIGNAL */
  // the send window entry of SQ index idx of QP qq: its own block, or with lo != 0 its blocks
  // of the pool from base (a multiple of their number: the index bits OR in)
  function automatic logic [LOG_N+LOG_WIN:0] win_slot(input logic [LOG_N-1:0] qq,
                                                      input logic [31:0] idx,
                                                      input logic [3:0] lo,
                                                      input logic [LOG_N-1:0] base);
    logic [LOG_N-1:0] blk;
    blk = base;
    blk[3:0] = base[3:0] | (idx[LOG_WIN +: 4] & lo);
    win_slot = lo[0] ? {1'b1, blk, idx[LOG_WIN-1:0]} : {1'b0, qq, idx[LOG_WIN-1:0]};
  endfunction
  // whether fetched - sq_ci (d) has reached the window of lo
  function automatic logic win_at(input logic [31:0] d, input logic [3:0] lo);
    win_at = d[31:LOG_WIN+4] != '0 || (d[LOG_WIN +: 4] & ~lo) != '0;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  // SGE k's length on the WQE's second beat (s_wqe_rd_tdata in S_A1, s_axis_bf_tdata in
  // S_B1)
  logic [511:0] w2_data;
  function automatic logic [31:0] sge_len_in(input int k);
    sge_len_in = w2_data[8*roce_desc_pkg::SQ_WQE_DATA_OFF - 512 + 128*k + 64 +: 32];
  endfunction


  // ---------------------------------------------------------------- the ring of QPs
  (* ram_style = "distributed" *) logic [LOG_N-1:0] ring [N];
  logic [LOG_N:0]   ring_wr, ring_rd;
  // on_ring: the QP is on the ring. LUT RAM with one write port (no 1024-way decode or
  // read mux in flip-flops), cleared by the reset sweep with the row store.
  (* ram_style = "distributed" *) logic on_ring [N];
  logic             on_we, on_wd;
  logic [LOG_N-1:0] on_wa;
  logic             ring_empty;
  logic [LOG_N-1:0] ring_head;
  assign ring_empty = ring_wr == ring_rd;
  assign ring_head = ring[ring_rd[LOG_N-1:0]];
  logic             push_en;
  logic [LOG_N-1:0] push_q;
  always_ff @(posedge clk) begin
    if (push_en) ring[ring_wr[LOG_N-1:0]] <= push_q;
  end

  // ---------------------------------------------------------------- FSM
  typedef enum logic [5:0] {
    S_IDLE, S_RD0, S_RD1, S_DISPATCH, S_KICK,
    S_A1, S_A2, S_A3, S_B1, S_B2, S_B3, S_BDRAIN,
    S_V_WAIT, S_V_REW, S_V_HOLD, S_V_LIM, S_V_PACE, S_V_PACEW, S_V_PDRAIN,
    S_V_PKT, S_V_WALK, S_V_WALK2, S_V_MRW, S_V_ISSUE, S_V_DESC, S_V_NEXT,
    S_FILL0, S_FILL, S_CLR, S_WB
  } state_t;
  state_t st;

  typedef enum logic [2:0] { K_CTX, K_STRD, K_DB, K_ARR, K_VISIT, K_BF } kind_t;
  kind_t kind;

  logic [LOG_N-1:0] q;
  logic [23:0]      q24;
  row_t             r;
  logic [ROW_W-1:0] row_q;
  logic [LOG_N-1:0] row_raddr;
  logic             row_we;    // the write-back: in the cycle of S_WB, so the next read sees it
  logic             requeue;

  always_ff @(posedge clk) begin
    row_q <= row_mem[row_raddr];
    if (!init_done) row_mem[init_idx[LOG_N-1:0]] <= '0;
    else if (row_we) row_mem[q] <= r;
  end
  // the req_rd_t the row publishes
  logic [RRD_W-1:0] r_pub;
  always_comb begin
    r_pub = '0;
    r_pub[8*roce_rec_pkg::REQ_RD_MAX_SENT_OFF +: 24] = r.max_sent;
    r_pub[8*roce_rec_pkg::REQ_RD_NEXT_PSN_OFF +: 24] = r.next_psn;
    r_pub[8*roce_rec_pkg::REQ_RD_STARTED_OFF +: 32] = r.started;
    r_pub[8*roce_rec_pkg::REQ_RD_FETCHED_OFF +: 32] = r.fetched_pub;
    r_pub[8*roce_rec_pkg::REQ_RD_SQ_PI_OFF +: 32] = r.sq_pi;
    r_pub[8*roce_rec_pkg::REQ_RD_BUSY_DEADLINE_OFF +: 32] = r.busy_dl;
    r_pub[8*roce_rec_pkg::REQ_RD_GEN_OFF +: 8] = r.gen;
    r_pub[8*roce_rec_pkg::REQ_RD_BUSY_OFF] = r.busy;
  end
  always_ff @(posedge clk) begin
    if (!init_done) begin
      rd1_mem[init_idx[LOG_N-1:0]] <= '0;
      rd2_mem[init_idx[LOG_N-1:0]] <= '0;
    end else if (row_we) begin
      rd1_mem[q] <= r_pub;
      rd2_mem[q] <= r_pub;
    end
  end
  always_ff @(posedge clk) begin
    if (!init_done) wcfg_mem[init_idx[LOG_N-1:0]] <= '0;
    else if (row_we) wcfg_mem[q] <= {r.win_lo, r.win_base};
  end
  always_ff @(posedge clk) begin
    // also when a packet is pushed: it must not meet the generation before its own
    if (!init_done) out_mem[init_idx[LOG_N-1:0]] <= '0;
    else if (row_we || st == S_V_DESC) out_mem[q] <= {r.epoch, r.gen, r.dead};
  end

  // read ports for roce_comp
  logic [RRD_W-1:0] rd_q1, rd2_q1;
  logic [WIN_W-1:0] win_q1;
  always_ff @(posedge clk) begin
    logic [RRD_W-1:0] a1, a2;
    logic [WIN_W-1:0] w0;
    logic [111:0] wa;
    logic [7:0] ws;
    logic [47:0] wp;
    logic [LOG_N+3:0] wc;
    logic [LOG_N+LOG_WIN:0] wsl;
    a1 = rd1_mem[s_rd_qpn[LOG_N-1:0]];
    a2 = rd2_mem[s_rd2_qpn[LOG_N-1:0]];
    wc = wcfg_mem[s_win_qpn[LOG_N-1:0]];
    wsl = win_slot(s_win_qpn[LOG_N-1:0], s_win_idx, wc[LOG_N+3:LOG_N], wc[LOG_N-1:0]);
    wa = wina_mem[wsl];
    ws = wins_mem[wsl];
    wp = winp_mem[wsl];
    w0 = '0;
    w0[8*roce_rec_pkg::SQ_WIN_WR_ID_OFF +: 64] = wa[63:0];
    w0[8*roce_rec_pkg::SQ_WIN_LEN_OFF +: 32] = wa[95:64];
    w0[8*roce_rec_pkg::SQ_WIN_OPCODE_OFF +: 8] = wa[103:96];
    w0[8*roce_rec_pkg::SQ_WIN_FLAGS_OFF +: 8] = wa[111:104];
    w0[8*roce_rec_pkg::SQ_WIN_STATUS_OFF +: 8] = ws;
    w0[8*roce_rec_pkg::SQ_WIN_FIRST_PSN_OFF +: 24] = wp[23:0];
    w0[8*roce_rec_pkg::SQ_WIN_NPKTS_OFF +: 24] = wp[47:24];
    // the BRAM read, then the output registers (latency 2: the data of the address given
    // two cycles before, one read per cycle)
    rd_q1 <= a1;
    rd2_q1 <= a2;
    win_q1 <= w0;
    m_rd_data <= rd_q1;
    m_rd2_data <= rd2_q1;
    m_win_data <= win_q1;
  end
  logic rd_v1, rd2_v1, win_v1;
  always_ff @(posedge clk) begin
    rd_v1 <= s_rd_valid;
    rd2_v1 <= s_rd2_valid;
    win_v1 <= s_win_valid;
    m_rd_valid <= rd_v1;
    m_rd2_valid <= rd2_v1;
    m_win_valid <= win_v1;
    if (rst) begin
      rd_v1 <= 1'b0;
      rd2_v1 <= 1'b0;
      win_v1 <= 1'b0;
      m_rd_valid <= 1'b0;
      m_rd2_valid <= 1'b0;
      m_win_valid <= 1'b0;
    end
  end

  // window writes
  logic             wina_we, wins_we, winp_we;
  logic [LOG_N+LOG_WIN:0] wina_addr, wins_addr, winp_addr;
  logic [111:0]     wina_d;
  logic [7:0]       wins_d;
  logic [47:0]      winp_d;
  always_ff @(posedge clk) begin
    if (wina_we) wina_mem[wina_addr] <= wina_d;
    if (wins_we) wins_mem[wins_addr] <= wins_d;
    if (winp_we) winp_mem[winp_addr] <= winp_d;
  end

  // bodies: the QP's own slot (read at q) and the prefetch store (read as the tags are, at
  // stag_ra: stb_q is the entry at stag_a where S_V_HOLD reads it); writes registered (one
  // cycle late; nothing reads the entry in between)
  logic                    own_we, st_we;
  logic [LOG_N-1:0]        own_waddr;
  logic [LOG_STORE-1:0]    st_waddr;
  body_t                   body_wd;
  logic [BODY_W-1:0]       own_q, stb_q;
  logic [LOG_STORE-1:0]    stag_a;
  always_ff @(posedge clk) begin
    own_q <= own_mem[q];
    stb_q <= st_mem[stag_ra];
    if (own_we) own_mem[own_waddr] <= body_wd;
    if (st_we) st_mem[st_waddr] <= body_wd;
  end

  // prefetch store tags {T_*, SQ index} in block RAM: entry {qpn, idx mod 2^LOG_WIN} (a QP's
  // own stretch of W: it reads at most W ahead of its send index; only the QP writes its
  // stretch, so the entry's address says whose it is); written registered (one cycle late: a
  // run of reads ahead writes consecutive entries of the stretch) and read registered at
  // stag_ra, the address stag_a holds next cycle where it is moved (S_V_REW, S_V_DESC), the
  // first entry of a run of reads ahead in its set-up and the next one in its walk (S_FILL,
  // on fl_a / fl_n), else stag_a: sg_* is the entry at stag_a, except after a state that
  // sets stag_a otherwise (S_A1, S_DISPATCH), which S_A2 and S_CLR follow (S_CLR writes
  // without reading), and after a walk stops (S_WB follows; nothing reads sg_* before
  // stag_a is read again). No read meets a write of the same entry
  // still in flight: a write is followed by S_WB at the latest, or by the walk's next entry.
  // The reset sweep clears them last (P cycles).
  localparam int STAG_W = 2 + 32;
  (* ram_style = "block" *) logic [STAG_W-1:0] stag_mem [P];
  logic [1:0]           sg_st;
  logic [31:0]          sg_idx;
  logic [LOG_STORE-1:0] stag_ra;
  logic [LOG_STORE-1:0] fl_a, fl_n;  // S_FILL's entry and its next (set with the run)
  logic [STAG_W-1:0]    sg_r;
  always_ff @(posedge clk) sg_r <= stag_mem[stag_ra];
  assign {sg_st, sg_idx} = sg_r;
  logic                 stag_we;
  logic [LOG_STORE-1:0] stag_wa;
  logic [STAG_W-1:0]    stag_wd;
  always_ff @(posedge clk) begin
    if (!init_done) stag_mem[init_idx[LOG_STORE-1:0]] <= '0;
    else if (stag_we) stag_mem[stag_wa] <= stag_wd;
  end
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [LOG_STORE-1:0] st_slot(input logic [LOG_N-1:0] qq, input logic [31:0] idx);
    st_slot = {qq, idx[LOG_WIN-1:0]};
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  // the entry of the next SQ index: the same QP's stretch, wrapping
  function automatic logic [LOG_STORE-1:0] st_next(input logic [LOG_STORE-1:0] s);
    st_next = {s[LOG_STORE-1:LOG_WIN], s[LOG_WIN-1:0] + 1'b1};
  endfunction

  // ---------------------------------------------------------------- WQE reads in flight
  // {epoch, WQEs read again before the fetched ones, first SQ index, WQEs, qpn}; t_k: the
  // WQE of the head read arriving next
  localparam int TQ_W = 4 + (LOG_BATCH + 1) + 32 + (LOG_BATCH + 1) + LOG_N;
  (* ram_style = "distributed" *) logic [TQ_W-1:0] tq [TQ_DEPTH];
  logic [TW:0] tq_wr, tq_rd;
  logic        tq_empty;
  // tq_wr != tq_rd and tq_wr - tq_rd < TQ_DEPTH on registers (both are in front of the
  // sequencer's next state)
  logic        tq_ne, tq_nfull;
  assign tq_empty = !tq_ne;
  logic [3:0]         t_epoch;
  logic [LOG_BATCH:0] t_nre, t_n, t_k;
  logic [31:0]        t_idx;
  logic [LOG_N-1:0]   t_q;
  assign {t_epoch, t_nre, t_idx, t_n, t_q} = tq[tq_rd[TW-1:0]];

  // ---------------------------------------------------------------- payload path
  // pieces: {inline, last of packet, len}
  localparam int PQ_W = 2 + 13;
  (* ram_style = "distributed" *) logic [PQ_W-1:0] pq [PQ_DEPTH];
  logic [PW:0]  pq_wr, pq_rd;
  logic [PW:0]  pq_used;
  assign pq_used = pq_wr - pq_rd;
  logic [511:0] iq [IQ_DEPTH];
  logic [2:0]   iq_wr, iq_rd;
  logic [2:0]   iq_used;
  assign iq_used = iq_wr - iq_rd;
  // room for an inline payload, registered: S_V_PKT pushes, and the tests that read it
  // (S_V_NEXT, a visit's start) come two cycles after it at the earliest
  logic         iq_room;
  always_ff @(posedge clk) iq_room <= iq_used < 3'(IQ_DEPTH);

  // descriptors: {desc, beats, qpn, epoch, gen}
  localparam int DQ_W = DESC_W + AW + 1 + LOG_N + 4 + 8;
  (* ram_style = "distributed" *) logic [DQ_W-1:0] dq [DESC_DEPTH];
  logic [QW:0]     dq_wr, dq_rd;
  logic            dq_empty;
  // room for a packet and its (up to 4) pieces, registered: a cycle adds one entry at most,
  // so the tests keep one more free than they need
  logic            dq_room, pq_room;
  always_ff @(posedge clk) begin
    dq_room <= dq_wr - dq_rd < (QW + 1)'(DESC_DEPTH - 1);
    pq_room <= pq_used <= (PW + 1)'(PQ_DEPTH - 5);
  end
  assign dq_empty = dq_wr == dq_rd;

  logic [AW:0] arrived;
  // the payload FIFO's beats not promised to a packet, a register (the room tests below are
  // then an OR of its high bits, not a subtraction and a compare)
  logic [AW+1:0] credit_free;
  logic          cr_room;  // room for a packet of any size (64 beats)
  assign cr_room = credit_free[AW+1:6] != '0;

  // ---------------------------------------------------------------- the visit's registers
  // (the records carry fields other blocks use)
  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::comp_rd_t c;
  roce_rec_pkg::qp_attr_t a;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [2:0]  a_state;
  logic        got_attr, got_comp;
  logic [1:0]  row_wait;
  logic        v_db;      // the visit carries an SQ doorbell (db_go): a dead QP's is a kick
  logic        v_pi;      // its PI is still to be added to the row read (S_V_WAIT)
  logic        v_arr;     // the visit is the one a WQE arrival started (a3_go) and the
                          // arrival took its WQE into the own slot or the store (a3_kept)
  logic        a3_kept;
  logic        v_early;   // S_V_REW loaded the body (rew_fwd): the packet's pipeline is a cycle
                          // ahead (b since S_WB, the MTU since the answer), S_V_PACE skipped
  logic        a3_go;     // S_A3 asked for the visit its arrival starts; S_WB enters it
  body_t       b;
  logic [31:0] now_l, tick_l;

  // registers derived from a are loaded with it, from the answer in the cycle it comes (a
  // changes only then), so they hold the visit's values from S_V_REW on
  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::qp_attr_t s_attr;  // the answer, for the fields read here
  /* verilator lint_on UNUSEDSIGNAL */
  logic        a_in;               // the answer comes: a takes it
  assign s_attr = s_attr_data;
  assign a_in = s_attr_valid && st == S_V_WAIT;

  logic [3:0]  log_mtu;    // registered (above), read from S_V_LIM on
  logic [32:0] mtu_m1;     // the MTU less one, registered with it
  logic [12:0] mtu_b;      // the MTU in bytes (at most 4096)
  always_ff @(posedge clk) begin
    if (a_in) begin
      log_mtu <= 4'd7 + s_attr.path_mtu[3:0];
      mtu_m1 <= (33'd1 << (4'd7 + s_attr.path_mtu[3:0])) - 33'd1;
      mtu_b <= 13'(32'd1 << (4'd7 + s_attr.path_mtu[3:0]));
    end
  end

  // the body of the send index: in the own slot, else in the store (stag_a = its entry)
  logic own_hit, st_hit, held;
  logic [1:0] slot_st;
  assign own_hit = r.own_idx == r.cur && r.own_st != T_NONE;
  assign st_hit = sg_st != T_NONE && sg_idx == r.cur;
  assign held = own_hit || st_hit;
  assign slot_st = own_hit ? r.own_st : sg_st;

  logic win_full;  // registered: r.fetched and c.sq_ci hold still in S_V_REW, and
                   // S_V_HOLD reads it
  logic [31:0] pi_m_fet, pi_m_cur, fet_m_cur, cur_m_fet, fet_m_ci;
  logic [15:0] fet_m_cur16;  // fetched - cur on 16 bits (it is at most a window)
  assign fet_m_cur16 = r.fetched[15:0] - r.cur[15:0];
  assign pi_m_fet = r.sq_pi - r.fetched;
  assign pi_m_cur = r.sq_pi - r.cur;
  assign fet_m_cur = r.fetched - r.cur;
  assign cur_m_fet = r.cur - r.fetched;
  assign fet_m_ci = r.fetched - c.sq_ci;
  always_ff @(posedge clk) win_full <= win_at(fet_m_ci, r.win_lo);

  // the packet
  logic        is_read, is_atomic, is_rdma, is_send;
  assign is_read = b.opcode == OP_READ;
  assign is_atomic = b.opcode == OP_CAS || b.opcode == OP_FAA;
  assign is_rdma = b.opcode == OP_WRITE || b.opcode == OP_WRITE_IMM;
  assign is_send = b.opcode == OP_SEND || b.opcode == OP_SEND_IMM || b.opcode == OP_SEND_INV;
  logic [31:0] p_len;      // message length
  assign p_len = is_atomic ? 32'd8 : b.total_len;

  // The packet arithmetic is pipelined over the visit's fixed states. b (loaded in S_V_HOLD),
  // a, log_mtu and r's send position (cur_pkt, next_psn) do not change from S_V_LIM until
  // S_V_DESC writes them; S_V_PKT comes at least three cycles after S_V_LIM (LIM, PACE,
  // PACEW) and S_V_DESC at least four, so free-running registers one (s1) to four (s4)
  // cycles behind these inputs hold this visit's values wherever they are read:
  //   s1: the rounded-up length, the packet's offset and the next packet's offset, the
  //       next PSN, whether it is a READ or atomic (the WQE is done after it);
  //   s2: the packet count, the bytes from the offset on, whether a whole MTU follows;
  //   s3: the PSNs left (for a READ's next PSN), the READ's address, whether it is the last,
  //       the payload length (S_V_PKT);
  //   s4: the payload's beats, a READ's next PSN (S_V_DESC: the descriptor, the credit and
  //       the send position).
  // (log_mtu's MTU and MTU - 1 are registered beside it, from a.)
  logic [32:0] s1_up;      // p_len + mtu - 1
  logic [36:0] s1_off;     // offset of packet cur_pkt (37 bits: cur_pkt << 12 needs 36)
  logic [36:0] s1_off1;    // offset of packet cur_pkt + 1
  logic        s1_one;     // one PSN whatever the length (atomic, or zero length)
  logic        s1_rdat;    // a READ or an atomic (one request packet)
  always_ff @(posedge clk) begin
    s1_up <= {1'b0, p_len} + mtu_m1;
    s1_off <= {13'd0, r.cur_pkt} << log_mtu;
    s1_off1 <= ({13'd0, r.cur_pkt} + 37'd1) << log_mtu;
    s1_one <= is_atomic || p_len == 32'd0;
    s1_rdat <= is_read || is_atomic;
  end
  logic [23:0] p_n;        // PSNs of the WQE
  logic [35:0] p_off;      // offset of packet i
  logic [31:0] p_rest;     // bytes from the offset on
  logic        p_full;     // more than an MTU from the offset on
  logic [32:0] np_x;
  assign np_x = s1_up >> log_mtu;
  logic unused_np;
  assign unused_np = ^{np_x[32:24], s1_off[36]};
  always_ff @(posedge clk) begin
    p_n <= s1_one ? 24'd1 : np_x[23:0];
    p_off <= s1_off[35:0];
    p_rest <= s1_off >= {5'd0, p_len} ? 32'd0 : p_len - s1_off[31:0];
    p_full <= {5'd0, p_len} > s1_off1;
  end
  logic [12:0] p_plen;     // payload of packet i (SEND/WRITE): s3
  always_ff @(posedge clk) p_plen <= p_full ? mtu_b : p_rest[12:0];
  logic        p_first, p_last;
  assign p_first = r.cur_pkt == 24'd0;
  always_ff @(posedge clk) p_last <= r.cur_pkt + 24'd1 >= p_n;  // s3 (p_n is s2)
  logic [23:0] s3_left;    // PSNs of the WQE from cur_pkt on
  logic [23:0] s4_next_rd; // the PSN after a READ's remaining PSNs (r.next_psn + s3_left)
  logic [23:0] s1_next1;   // r.next_psn + 1
  logic [63:0] s3_va;      // a READ's address at the packet's offset
  // (carry-select at bit 36, the offset's width: the high word + 1 on an s1 register)
  logic [27:0] s1_ra_hi1;
  logic [36:0] va_lo;
  assign va_lo = {1'b0, b.remote_addr[35:0]} + {1'b0, p_off};
  always_ff @(posedge clk) begin
    s1_ra_hi1 <= b.remote_addr[63:36] + 28'd1;
    s3_left <= p_n - (r.cur_pkt < p_n ? r.cur_pkt : p_n);
    s4_next_rd <= r.next_psn + s3_left;
    s1_next1 <= r.next_psn + 24'd1;
    s3_va <= {va_lo[36] ? s1_ra_hi1 : b.remote_addr[63:36], va_lo[35:0]};
  end
  logic [LOG_ACK_EVERY-1:0] p_ack_lo;
  assign p_ack_lo = LOG_ACK_EVERY'(r.cur_pkt + 24'd1);
  // an unsignaled message's last packet asks for an ACK only when it is the last WQE
  // fetched (a later AckReq covers it otherwise), ends a group of 2^LOG_ACK_WQES WQEs, or
  // is a resend: three registers deep (r.cur, r.fetched, r.next_psn and r.max_sent hold
  // still from S_V_LIM to S_V_DESC, at least four cycles)
  logic p_tail, t_cur1, t_resend;
  logic [31:0] t_c1;  // r.cur + 1
  always_ff @(posedge clk) begin
    t_c1 <= r.cur + 32'd1;
    t_cur1 <= t_c1 == r.fetched;
    t_resend <= roce_util_pkg::psn_lt(r.next_psn, r.max_sent);
    p_tail <= t_cur1 || &r.cur[LOG_ACK_WQES-1:0] || t_resend;
  end

  logic [7:0] p_opcode;
  always_comb begin
    unique case (b.opcode)
      OP_SEND: p_opcode = p_first && p_last ? 8'h04 : p_first ? 8'h00 : p_last ? 8'h02 : 8'h01;
      OP_SEND_IMM: p_opcode = p_first && p_last ? 8'h05 : p_first ? 8'h00 : p_last ? 8'h03 : 8'h01;
      OP_SEND_INV: p_opcode = p_first && p_last ? 8'h17 : p_first ? 8'h00 : p_last ? 8'h16 : 8'h01;
      OP_WRITE: p_opcode = p_first && p_last ? 8'h0A : p_first ? 8'h06 : p_last ? 8'h08 : 8'h07;
      OP_WRITE_IMM: p_opcode = p_first && p_last ? 8'h0B : p_first ? 8'h06 : p_last ? 8'h09 : 8'h07;
      OP_READ: p_opcode = 8'h0C;
      OP_CAS: p_opcode = 8'h13;
      default: p_opcode = 8'h14;
    endcase
  end

  // the descriptor and what the packet changes
  logic [DESC_W-1:0] p_desc;
  logic [23:0]       p_next;     // next PSN after it
  logic              p_adv;      // the WQE is done: the send index moves on
  logic [12:0]       p_pay;      // payload bytes
  always_comb begin
    logic se, ack;
    p_desc = '0;
    p_pay = 13'd0;
    se = 1'b0;
    ack = 1'b1;
    p_next = s1_next1;
    p_desc[8*roce_rec_pkg::TX_DESC_QPN_OFF +: 24] = q24;
    p_desc[8*roce_rec_pkg::TX_DESC_OPCODE_OFF +: 8] = p_opcode;
    p_desc[8*roce_rec_pkg::TX_DESC_PSN_OFF +: 24] = r.next_psn;
    if (is_read) begin
      p_desc[8*roce_rec_pkg::TX_DESC_VA_OFF +: 64] = s3_va;
      p_desc[8*roce_rec_pkg::TX_DESC_RKEY_OFF +: 32] = b.rkey;
      p_desc[8*roce_rec_pkg::TX_DESC_DMA_LEN_OFF +: 32] = p_rest;
      p_next = s4_next_rd;
    end else if (is_atomic) begin
      p_desc[8*roce_rec_pkg::TX_DESC_VA_OFF +: 64] = b.remote_addr;
      p_desc[8*roce_rec_pkg::TX_DESC_RKEY_OFF +: 32] = b.rkey;
      p_desc[8*roce_rec_pkg::TX_DESC_SWAP_ADD_OFF +: 64] = b.opcode == OP_CAS ? b.data[127:64] : b.data[63:0];
      p_desc[8*roce_rec_pkg::TX_DESC_COMPARE_OFF +: 64] = b.opcode == OP_CAS ? b.data[63:0] : 64'd0;
    end else begin
      p_pay = p_plen;
      ack = (p_last && (b.flags[F_SIGNALED] || p_tail)) || p_ack_lo == '0;
      if (p_first && is_rdma) begin
        p_desc[8*roce_rec_pkg::TX_DESC_VA_OFF +: 64] = b.remote_addr;
        p_desc[8*roce_rec_pkg::TX_DESC_RKEY_OFF +: 32] = b.rkey;
        p_desc[8*roce_rec_pkg::TX_DESC_DMA_LEN_OFF +: 32] = p_len;
      end
      if (p_last && (b.opcode == OP_SEND_IMM || b.opcode == OP_WRITE_IMM || b.opcode == OP_SEND_INV))
        p_desc[8*roce_rec_pkg::TX_DESC_IMM_OR_INV_OFF +: 32] = b.imm;
      se = p_last && b.flags[F_SOLICITED] && (is_send || b.opcode == OP_WRITE_IMM);
    end
    p_desc[8*roce_rec_pkg::TX_DESC_PAYLOAD_LEN_OFF +: 16] = {3'd0, p_pay};
    p_desc[8*roce_rec_pkg::TX_DESC_FLAGS_OFF + roce_rec_pkg::TX_DESC_FLAG_SE_BIT] = se;
    p_desc[8*roce_rec_pkg::TX_DESC_FLAGS_OFF + roce_rec_pkg::TX_DESC_FLAG_ACK_REQ_BIT] = ack;
    p_adv = s1_rdat || p_last;
  end
  logic [AW:0] p_beats;    // s4: read in S_V_DESC only
  always_ff @(posedge clk) p_beats <= (AW + 1)'((p_pay + 13'd63) >> 6);

  // SGE walk: the pieces of [off, off + plen) over the WQE's SGEs, all four SGEs at once on
  // free-running registers (b is loaded in S_V_HOLD and holds from S_V_LIM, p_off from two
  // cycles after, p_plen from three; S_V_PKT comes three or more cycles after S_V_LIM, so
  // the last stage, five cycles after S_V_LIM, holds the visit's values from S_V_PKT + 2 on,
  // where S_V_WALK2 reads it; an early S_V_LIM (v_early) has all of it a cycle sooner and
  // S_V_PKT two cycles after it). SGE k spans [pre_k, pre_k + len_k) of the message; relative to
  // the packet's offset, a_k = pre_k - off and e_k = pre_(k+1) - off, and SGE k (k below
  // num_sge and 4) holds a piece when a_k < plen, e_k > 0 and len_k != 0: it starts
  // max(a_k, 0) into the packet, skip_k = max(-a_k, 0) into the SGE, and ends at
  // min(e_k, plen). The pieces are consecutive SGEs (the payload is contiguous).
  logic [2:0]   pc_n;        // pieces
  logic [4*32-1:0] pc_key, pc_len;
  logic [4*64-1:0] pc_va, pc_dma;
  logic         pc_bad;     // a check answered so far refused its piece
  logic [2:0]   mr_i, mr_got;
  logic [2:0]   is_i;        // reads issued
  logic         wk_short;    // the SGEs end before the packet does (local length error)
  function automatic logic [31:0] sge_len(input int k);
    sge_len = b.data[128*k + 64 +: 32];
  endfunction
  // wa (S_V_LIM + 1): pair sums; wb (+ 2): the prefix sums pre_1..pre_4, the SGEs' total
  logic [34:0] wa_l0, wa_01, wa_l2, wa_23;
  logic [34:0] wb_pre [5];
  logic [34:0] wb_tot;
  logic [3:0]  wb_nz;
  // wc (+ 3): a_k, e_k (e_k = a_(k+1)) and the total less off
  logic signed [35:0] wc_a [5];
  logic signed [35:0] wc_t;
  // wd (+ 4): the piece's bounds in the packet, the skip into the SGE, which SGEs hold one
  logic [12:0] wd_s [4], wd_e [4];
  logic [31:0] wd_skip [4];
  logic [3:0]  wd_has;
  logic        wd_short;
  // we (+ 5): length, low address (with its carry) and key of each SGE's piece
  logic [31:0] we_n [4];
  logic [32:0] we_va_lo [4];
  logic [31:0] we_va_hi1 [4];  // the address's high word + 1 (b holds the word itself)
  logic [3:0]  we_has;
  logic        we_short;
  always_ff @(posedge clk) begin
    logic [2:0] nsge;
    logic [5*35-1:0] pre;  // pre_0..pre_4, 35 bits each (flat: Yosys 0.23 takes no local arrays)
    wa_l0 <= 35'(sge_len(0));
    wa_01 <= 35'(sge_len(0)) + 35'(sge_len(1));
    wa_l2 <= 35'(sge_len(2));
    wa_23 <= 35'(sge_len(2)) + 35'(sge_len(3));
    nsge = b.num_sge > 3'd4 ? 3'd4 : b.num_sge;
    pre = {wa_01 + wa_23, wa_01 + wa_l2, wa_01, wa_l0, 35'd0};
    for (int k = 0; k < 5; k++) wb_pre[k] <= pre[35*k +: 35];
    wb_tot <= pre[35*nsge +: 35];
    for (int k = 0; k < 4; k++) wb_nz[k] <= sge_len(k) != 32'd0 && 3'(k) < nsge;
    for (int k = 0; k < 5; k++) wc_a[k] <= $signed({1'b0, wb_pre[k]}) - $signed({1'b0, p_off[34:0]});
    wc_t <= $signed({1'b0, wb_tot}) - $signed({1'b0, p_off[34:0]});
    for (int k = 0; k < 4; k++) begin
      // a_k < plen, e_k > 0 (plen is 13 bits, nonzero in a walk)
      wd_has[k] <= wb_nz[k] && (wc_a[k] < $signed({23'd0, p_plen})) && (wc_a[k + 1] > 36'sd0);
      wd_s[k] <= wc_a[k][35] ? 13'd0 : wc_a[k][12:0];
      wd_e[k] <= wc_a[k + 1] < $signed({23'd0, p_plen}) ? wc_a[k + 1][12:0] : p_plen;
      wd_skip[k] <= wc_a[k][35] ? 32'd0 - wc_a[k][31:0] : 32'd0;
      we_n[k] <= {19'd0, wd_e[k] - wd_s[k]};
      we_va_lo[k] <= {1'b0, b.data[128*k +: 32]} + {1'b0, wd_skip[k]};
      we_va_hi1[k] <= b.data[128*k + 32 +: 32] + 32'd1;
    end
    wd_short <= wc_t < $signed({23'd0, p_plen});
    we_has <= wd_has;
    we_short <= wd_short;
  end
  // the pieces packed from slot 0 in SGE order (an empty SGE between two holds none): SGE
  // k's piece goes to slot w_slot[k], the number of pieces before it
  logic [1:0] w_slot [4];
  logic [2:0] w_cnt;
  always_comb begin
    w_slot[0] = 2'd0;
    w_slot[1] = 2'(we_has[0]);
    w_slot[2] = 2'(we_has[0]) + 2'(we_has[1]);
    w_slot[3] = 2'(we_has[0]) + 2'(we_has[1]) + 2'(we_has[2]);
    w_cnt = 3'(we_has[0]) + 3'(we_has[1]) + 3'(we_has[2]) + 3'(we_has[3]);
  end

  // the checks all answered, or the last one answering now
  logic mr_in;
  assign mr_in = !m_mr_valid && (mr_got == pc_n || (s_mr_valid && mr_got + 3'd1 == pc_n));
  // m_mr: piece mr_i
  always_comb begin
    m_mr.op = 1'b0;
    m_mr.need = 4'd0;
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

  // ---------------------------------------------------------------- WQE decode (arrival)
  logic [1023:0] wq;         // the WQE (two beats)
  logic          wq_err;     // the read failed
  logic [7:0]    d_op, d_flags, d_nsge;
  logic [31:0]   d_len;
  logic [63:0]   d_raddr;
  logic          d_inline, d_readlike, d_atomic;
  logic [7:0]    d_status;
  // The SGE lengths (of the SGEs below num_sge) sum to d_have = h01 + h23: the pair sums are
  // added as the second beat (which holds the SGEs) arrives in S_A1; d_have == total_len is
  // then checked without a carry chain (A + B == K iff A ^ B ^ K equals the carries
  // (A & B | (A | B) & ~K) << 1; Cortadella's test), and d_have >= 8 from the high bits and
  // the low three.
  logic [32:0]   h01, h23;
  logic [3:0]    d_sge_on;   // SGE k is below num_sge: registered with the first beat (S_IDLE)
  logic bf_in;  // the WQE comes from the inline doorbell: set with its first beat in S_IDLE
  assign w2_data = bf_in ? s_axis_bf_tdata : s_wqe_rd_tdata;
  always_ff @(posedge clk) begin
    if ((st == S_A1 && s_wqe_rd_tvalid) || (st == S_B1 && s_axis_bf_tvalid)) begin
      h01 <= (d_sge_on[0] ? {1'b0, sge_len_in(0)} : 33'd0) + (d_sge_on[1] ? {1'b0, sge_len_in(1)} : 33'd0);
      h23 <= (d_sge_on[2] ? {1'b0, sge_len_in(2)} : 33'd0) + (d_sge_on[3] ? {1'b0, sge_len_in(3)} : 33'd0);
    end
  end
  logic          d_have_eq, d_have_ge8;
  always_comb begin
    logic [33:0] x;
    logic [32:0] k, cg;
    k = {1'b0, wq[8*roce_desc_pkg::SQ_WQE_TOTAL_LEN_OFF +: 32]};
    x = {1'b0, h01 ^ h23 ^ k};
    cg = (h01 & h23) | ((h01 | h23) & ~k);
    d_have_eq = x == {cg, 1'b0};
    d_have_ge8 = h01[32:3] != '0 || h23[32:3] != '0 || {1'b0, h01[2:0]} + {1'b0, h23[2:0]} >= 4'd8;
  end
  always_comb begin
    d_op = wq[8*roce_desc_pkg::SQ_WQE_OPCODE_OFF +: 8];
    d_flags = wq[8*roce_desc_pkg::SQ_WQE_FLAGS_OFF +: 8];
    d_nsge = wq[8*roce_desc_pkg::SQ_WQE_NUM_SGE_OFF +: 8];
    d_len = wq[8*roce_desc_pkg::SQ_WQE_TOTAL_LEN_OFF +: 32];
    d_raddr = wq[8*roce_desc_pkg::SQ_WQE_REMOTE_ADDR_OFF +: 64];
    d_inline = d_flags[F_INLINE];
    d_readlike = d_op == roce_desc_pkg::SQ_OP_READ || d_op == roce_desc_pkg::SQ_OP_ATOMIC_CAS ||
                 d_op == roce_desc_pkg::SQ_OP_ATOMIC_FAA;
    d_atomic = d_op == roce_desc_pkg::SQ_OP_ATOMIC_CAS || d_op == roce_desc_pkg::SQ_OP_ATOMIC_FAA;
    d_status = roce_desc_pkg::WC_STATUS_SUCCESS;
    if (wq_err || roce_desc_pkg::sq_wqe_bad(wq)) d_status = roce_desc_pkg::WC_STATUS_LOC_QP_OP_ERR;
    else if (d_inline && (d_len > 32'd64 || d_readlike)) d_status = roce_desc_pkg::WC_STATUS_LOC_QP_OP_ERR;
    else if (!d_inline && d_nsge > 8'd4) d_status = roce_desc_pkg::WC_STATUS_LOC_QP_OP_ERR;
    else if (!d_inline && !d_atomic && !d_have_eq) d_status = roce_desc_pkg::WC_STATUS_LOC_LEN_ERR;
    else if (d_atomic && (!d_have_ge8 || d_raddr[2:0] != 3'd0)) d_status = roce_desc_pkg::WC_STATUS_LOC_QP_OP_ERR;
  end
  // The status is registered: the WQE is complete in S_A2 (its second beat lands in S_A1) and
  // S_A3 uses it, so the checks (SGE length sum, compares) get a cycle of their own.
  logic       d_bad;
  logic [7:0] dr_status;
  always_ff @(posedge clk) dr_status <= d_status;
  assign d_bad = dr_status != roce_desc_pkg::WC_STATUS_SUCCESS;
  body_t d_body;
  always_comb begin
    d_body.data = wq[8*roce_desc_pkg::SQ_WQE_DATA_OFF +: 512];
    if (d_atomic) begin
      d_body.data[63:0] = wq[8*roce_desc_pkg::SQ_WQE_COMPARE_ADD_OFF +: 64];
      d_body.data[127:64] = wq[8*roce_desc_pkg::SQ_WQE_SWAP_OFF +: 64];
    end
    d_body.total_len = d_len;
    d_body.rkey = wq[8*roce_desc_pkg::SQ_WQE_RKEY_OFF +: 32];
    d_body.remote_addr = d_raddr;
    d_body.imm = wq[8*roce_desc_pkg::SQ_WQE_IMM_OR_INV_OFF +: 32];
    d_body.num_sge = d_nsge[2:0];
    d_body.flags = d_flags[3:0];
    d_body.opcode = d_op[2:0];
  end
  // the window entry of a fetched WQE: {flags, opcode, len, wr_id} (a malformed one is a
  // signaled SEND of length 0, as the model's stand-in request)
  logic [111:0] d_win;
  assign d_win = d_bad ? {8'h01, 8'h00, 32'd0, wq[63:0]}
                       : {d_flags, d_op, d_atomic ? 32'd8 : d_len, wq[63:0]};

  // ---------------------------------------------------------------- input handshakes
  logic idle;
  logic v_can;  // a visit may start: room for a packet of any size and its pieces
  assign idle = st == S_IDLE && init_done;
  // a burst goes on with the QP's next packet when there is room for one of any size
  logic b_room;
  assign b_room = dq_room && cr_room && pq_room && iq_room;
  logic [3:0] burst_n;  // packets this visit made
  logic       v_cont;   // the visit's last packet was not its WQE's last (S_V_DESC)
  logic       walk_ahead;  // b's payload is gathered through its SGEs
  assign walk_ahead = !is_read && !is_atomic && !b.flags[F_INLINE] && b.total_len != 32'd0;
  logic pace_pend, pace_got, pace_ok;  // the pacing question asked, its answer in, allowed
  logic v_room;
  assign v_room = dq_room && cr_room && pq_room && iq_room && !pace_pend &&
                  tq_nfull && !m_sent_valid && !m_err_valid &&
                  !m_kick_valid && !m_wqe_rd_valid && !m_dma_rd_valid && !m_mr_valid;
  assign v_can = !ring_empty && v_room;
  // a doorbell (SQ_DB or inline), or the arrival of the last WQE read in flight, that finds
  // the ring empty visits its QP straight from S_WB instead of through the ring
  logic wb_visit;
  assign wb_visit = st == S_WB && requeue && !q_on && ring_empty && v_room && !a3_go &&
                    (kind == K_DB || kind == K_BF || (kind == K_ARR && tq_empty));
  logic arr_go;
  assign arr_go = s_wqe_rd_tvalid && !tq_empty;
  // S_IDLE starts a visit of the ring's head when no other input is waiting, and an SQ
  // doorbell that finds the ring empty and its QP off it starts its QP's visit at once (the
  // visit applies the doorbell to the row it reads: v_db)
  logic v_idle_go, v_go, db_go, db_on;
  logic [23:0] v_qpn;
  assign db_on = on_ring[s_db_qpn[LOG_N-1:0]];
  assign v_idle_go = idle && !s_ctx_valid && !s_strd_valid && !arr_go && !s_wake_valid &&
                     !s_axis_bf_tvalid && !s_db_valid && v_can;
  assign db_go = idle && !s_ctx_valid && !s_strd_valid && !arr_go && !s_wake_valid &&
                 !s_axis_bf_tvalid && s_db_valid && ring_empty && v_room && !db_on;
  assign v_go = v_idle_go || wb_visit || db_go;
  // the arrival of the last WQE read in flight asks for its QP's visit from S_A3 when S_WB
  // would start it (a3_go; a malformed WQE's kick goes first, by S_WB)
  logic a3_ask;
  assign a3_ask = st == S_A3 && r.epoch == t_epoch_l && !d_bad && !q_on && ring_empty &&
                  v_room && tq_empty;
  assign v_qpn = wb_visit ? q24 : db_go ? s_db_qpn : 24'(ring_head);
  assign s_ctx_ready = idle;
  assign s_strd_ready = idle && !s_ctx_valid;
  assign s_wake_ready = idle && !s_ctx_valid && !s_strd_valid && !arr_go;
  assign s_axis_bf_tready = (idle && !s_ctx_valid && !s_strd_valid && !arr_go && !s_wake_valid) ||
                            st == S_B1 || st == S_BDRAIN;
  assign s_db_ready = idle && !s_ctx_valid && !s_strd_valid && !arr_go && !s_wake_valid &&
                      !s_axis_bf_tvalid;
  // the inline doorbell's SQ_DB value
  logic [15:0] bf_qpn, bf_pi;
  assign bf_qpn = s_axis_bf_tdata[8*roce_desc_pkg::SQ_WQE_BF_DB_OFF + 16 +: 16];
  assign bf_pi = s_axis_bf_tdata[8*roce_desc_pkg::SQ_WQE_BF_DB_OFF +: 16];
  assign s_wqe_rd_tready = (idle && !s_ctx_valid && !s_strd_valid && arr_go) || st == S_A1;

  always_comb begin
    row_raddr = q;
    if (idle) begin
      if (s_ctx_valid) row_raddr = s_ctx.qpn[LOG_N-1:0];
      else if (s_strd_valid) row_raddr = s_strd_qpn[LOG_N-1:0];
      else if (arr_go) row_raddr = t_q;
      else if (s_axis_bf_tvalid) row_raddr = bf_qpn[LOG_N-1:0];
      else if (s_db_valid) row_raddr = s_db_qpn[LOG_N-1:0];
      else row_raddr = ring_head;
    end
  end

  // ---------------------------------------------------------------- the sequencer
  logic [LOG_BATCH:0] f_k;     // WQEs in the run of reads ahead
  logic [LOG_BATCH:0] f_nre;   // of them read again (before the fetch index)
  logic [31:0]        f_idx;   // the next SQ index of the run
  logic [31:0]        f_start;
  // The run's stop tests on differences kept next to f_idx (set with the run, stepped with
  // it), so S_FILL compares registers against zero instead of subtracting 32-bit indices:
  // fl_pi = sq_pi - f_idx, fl_fet = fetched - f_idx, fl_cur = cur - f_idx,
  // fl_win = fetched - sq_ci (the window's use).
  logic [31:0]        fl_pi, fl_fet, fl_cur, fl_win;
  logic [LOG_WIN-1:0] fl_ra;   // f_idx - cur below 2^LOG_WIN (the read-ahead)
  logic               fl_raf;  // f_idx - cur >= 2^LOG_WIN: no further WQE fetched
  logic               fl_at_fet, fl_at_cur, fl_stop;
  // f_idx is before y (serial order: f_idx - y >= 2^31) with d = y - f_idx: d in [1, 2^31]
  function automatic logic d_ahead(input logic [31:0] d);
    d_ahead = d != 32'd0 && (!d[31] || d[30:0] == 31'd0);
  endfunction
  // the SQ ring's index mask and the WQE run's address (a changes only in S_V_WAIT; the mask
  // and the base's upper half + 1 are set from the answer, so S_V_REW computes the address): the
  // send index's or the fetch index's, f_fet telling which (r.cur and r.fetched hold still
  // until the run's first step, which keeps it on f_addr for the steps after); the address
  // add is carry-select on the 22 low bits the offset spans
  logic [14:0] sq_mask;
  logic [41:0] sq_base_hi1;
  logic [63:0] f_addr, f_addr_cur, f_addr_fet;
  logic        f_fet;  // the run starts at the fetch index
  function automatic logic [63:0] sq_addr(input logic [14:0] idx);
    logic [22:0] lo;
    lo = {1'b0, a.sq_base[21:0]} + {1'b0, idx & sq_mask, 7'd0};
    sq_addr = {lo[22] ? sq_base_hi1 : a.sq_base[63:22], lo[21:0]};
  endfunction
  // (loaded with a: from the answer, in the cycle it comes)
  always_ff @(posedge clk) begin
    if (a_in) begin
      sq_mask <= (15'd1 << s_attr.sq_log_size) - 15'd1;
      sq_base_hi1 <= s_attr.sq_base[63:22] + 42'd1;
    end
    if (st == S_FILL && f_k == '0) f_addr <= f_fet ? f_addr_fet : f_addr_cur;
    f_addr_cur <= sq_addr(r.cur[14:0]);
    f_addr_fet <= sq_addr(r.fetched[14:0]);
  end
  assign fl_at_fet = fl_fet == 32'd0;
  assign fl_at_cur = fl_cur == 32'd0;
  // the run's next step would stop whatever it finds (a full batch, the producer index, the
  // ring's end): this step issues the read
  logic fl_last;
  assign fl_last = f_k == (LOG_BATCH + 1)'(B - 1) || fl_pi == 32'd1 ||
                   (f_idx[14:0] & sq_mask) == sq_mask;
  assign fl_stop = f_k == (LOG_BATCH + 1)'(B) || !d_ahead(fl_pi) ||
                   (f_k != '0 && (f_idx[14:0] & sq_mask) == 15'd0) ||
                   (fl_at_fet && (win_at(fl_win, r.win_lo) || fl_raf)) ||
                   (!fl_at_fet && !d_ahead(fl_fet)) ||
                   (!fl_at_cur && (sg_st == T_PEND || (sg_st != T_NONE && sg_idx == f_idx)));
  logic       kick_flush_n;
  logic [7:0] k_op;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [31:0] k_arg;      // a PSN, or the CtxRtsArg (the window fields)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [15:0] k_pi;
  // doorbells: PI - the row's PI (16 bits) and whether it is behind it (a stale doorbell);
  // the inline doorbell's tests (S_B2, registered)
  /* verilator lint_off UNUSEDSIGNAL */
  row_t        rq;         // the row as read (the tests use a few fields)
  logic [15:0] ci_gap;     // fetched - ci_seen (only whether it reaches the window)
  logic [15:0] ra_gap;     // fetched - cur (only whether it reaches 2^LOG_WIN)
  /* verilator lint_on UNUSEDSIGNAL */
  assign rq = row_q;
  logic [15:0] db_d;
  logic        db_stale;
  assign db_stale = db_d[15] && db_d[14:0] != 15'd0;
  assign ci_gap = rq.fetched[15:0] - rq.ci_seen;
  assign ra_gap = rq.fetched[15:0] - rq.cur[15:0];
  logic        bf_oor, bf_seq, bf_room, bf_live, bf_take;
  assign bf_take = bf_live && db_d == 16'd1 && bf_seq && bf_room && sg_st != T_PEND;
  logic [3:0]  t_epoch_l;
  logic        t_fetch_l;
  logic [31:0] t_idx_l;
  logic [LOG_N-1:0] t_q_l;
  // the QP is on the ring: read a cycle early (S_WB reads it; q and on_ring[q] are written
  // only in S_IDLE and S_WB, and S_WB is never the state right after either)
  logic       q_on;
  always_ff @(posedge clk) q_on <= on_ring[q];
  logic       wake_on;
  assign wake_on = on_ring[s_wake_qpn[LOG_N-1:0]];
  // its one write: set by a wake in S_IDLE, cleared by a visit starting, set by S_WB
  always_comb begin
    on_we = 1'b0;
    on_wd = 1'b0;
    on_wa = q;
    if (!init_done) begin
      on_we = 1'b1;
      on_wa = init_idx[LOG_N-1:0];
    end else if (st == S_WB) begin
      on_we = requeue && !q_on && !wb_visit && !a3_go;
      on_wd = 1'b1;
    end else if (idle && !s_ctx_valid && !s_strd_valid && !arr_go) begin
      if (s_wake_valid) begin
        on_we = !wake_on;
        on_wd = 1'b1;
        on_wa = s_wake_qpn[LOG_N-1:0];
      end else if (v_idle_go) begin
        on_we = 1'b1;
        on_wa = ring_head;
      end
    end
  end
  always_ff @(posedge clk) begin
    if (on_we) on_ring[on_wa] <= on_wd;
  end

  assign row_we = st == S_WB;

  // S_V_LIM's limit tests on r, c, a and now_l, registered: S_V_HOLD and S_V_NEXT, the
  // states before it, write none of them (only b, loaded in S_V_HOLD, is tested live)
  logic lim_unacked, lim_at_start, lim_rd_busy, lim_rd_full, lim_rnr;
  // the busy deadline S_V_DESC sets, two registers deep: tick_l (S_IDLE) and a (S_V_WAIT)
  // hold still from S_V_REW on, and S_V_DESC comes five cycles later at the earliest
  logic [31:0] busy_inc, busy_dl_n;
  always_ff @(posedge clk) begin
    busy_inc <= (32'd1 << (a.timeout > 5'd30 ? 5'd30 : a.timeout)) | 32'd1;  // 2^t + 1 ticks
    busy_dl_n <= tick_l + busy_inc;
  end
  always_ff @(posedge clk) begin
    logic [7:0] rd_out, rd_lim;
    rd_out = r.rd_started - c.rd_done;
    rd_lim = a.max_rd_atomic == 8'd0 ? 8'd1 : a.max_rd_atomic;
    lim_unacked <= psn_diff(r.next_psn, c.una) >= $signed(24'(MAX_UNACKED));
    lim_at_start <= r.cur == r.started;
    lim_rd_busy <= rd_out != 8'd0;
    lim_rd_full <= rd_out >= rd_lim;
    lim_rnr <= roce_util_pkg::t_after(c.rnr_until, now_l);
  end

  // the tag read address: where the state below moves stag_a (see the tag store): the send
  // index's for S_V_REW (c may arrive in S_V_WAIT's last cycle: an 8-bit compare and a
  // 4-bit mux), the one after it for S_V_DESC on a register (q and r.cur hold still from
  // S_V_REW on)
  logic [LOG_STORE-1:0] slot_rew, slot_cur1;
  // the states S_FILL may follow set a run of reads ahead up (S_FILL0, S_V_HOLD, S_V_NEXT at
  // the burst's end: every cycle, whether S_FILL follows or not; only S_FILL reads the
  // run's registers, and a held send index's run reads its first tag at the fetch index:
  // S_V_HOLD's next states other than S_FILL read no tag or body before stag_a is read again)
  // S_V_REW sets the run up itself when nothing of the QP is fetched and not completed
  // (send index = fetch index = the completer's CI, no rewind) and a WQE is posted: S_FILL
  // follows it (nothing is held, and the fetch index's slot is the send index's)
  logic fill_rd, rew_fill;
  assign rew_fill = c.rw_gen == r.gen && r.cur == r.fetched && r.fetched[15:0] == c.sq_ci[15:0] &&
                    r.sq_pi != r.fetched;
  assign fill_rd = st == S_FILL0 || st == S_V_HOLD || (st == S_V_NEXT && burst_n == 4'(BURST)) ||
                   (st == S_V_REW && rew_fill);
  // S_V_REW loads the body itself when the visit's send index is the WQE whose arrival
  // started it (no rewind): S_V_LIM follows it
  logic rew_fwd;
  assign rew_fwd = v_arr && c.rw_gen == r.gen && r.cur == t_idx_l;
  logic nothing_to_read;  // S_V_HOLD without the body: none posted, or the window full
  assign nothing_to_read = r.cur == r.fetched && (r.sq_pi == r.fetched || win_full);
  assign slot_rew = {q, c.rw_gen != r.gen ? c.rw_idx[LOG_WIN-1:0] : r.cur[LOG_WIN-1:0]};
  always_ff @(posedge clk) slot_cur1 <= st_slot(q, r.cur + 32'd1);
  always_comb begin
    stag_ra = stag_a;
    case (st)
      S_V_REW: stag_ra = slot_rew;
      S_V_DESC: if (p_adv) stag_ra = slot_cur1;
      S_FILL: stag_ra = fl_n;
      default: ;
    endcase
    if (fill_rd && held) stag_ra = st_slot(q, r.fetched);
  end

  always_ff @(posedge clk) begin
    wina_we <= 1'b0;
    wins_we <= 1'b0;
    winp_we <= 1'b0;
    cnt_wqe_err <= 1'b0;
    own_we <= 1'b0;
    st_we <= 1'b0;
    stag_we <= 1'b0;
    push_en <= 1'b0;
    ctx_done <= 1'b0;
    strd_done <= 1'b0;
    cnt_retransmit <= 1'b0;
    if (!init_done) init_idx <= init_idx + 1'b1;
    if (push_en) ring_wr <= ring_wr + 1'b1;
    if (m_attr_valid && m_attr_ready) m_attr_valid <= 1'b0;
    if (m_comp_valid && m_comp_ready) m_comp_valid <= 1'b0;
    if (m_query_valid && m_query_ready) m_query_valid <= 1'b0;
    // the pacing answer to the question of the visit's start or of S_V_NEXT, kept for
    // S_V_PACEW / S_V_PDRAIN / S_V_MRW (a visit that ends first leaves it to the next one's
    // start to drop: v_room waits for it)
    if (pace_pend && !m_query_valid && s_pace_valid && s_pace_qpn == m_query_qpn) begin
      pace_pend <= 1'b0;
      pace_got <= 1'b1;
      pace_ok <= s_pace_allowed;
    end
    if (m_sent_valid && m_sent_ready) m_sent_valid <= 1'b0;
    if (m_kick_valid && m_kick_ready) m_kick_valid <= 1'b0;
    m_body_valid <= 1'b0;
    m_body_clr <= 1'b0;
    if (m_err_valid && m_err_ready) m_err_valid <= 1'b0;
    if (m_wqe_rd_valid && m_wqe_rd_ready) m_wqe_rd_valid <= 1'b0;
    if (m_dma_rd_valid && m_dma_rd_ready) m_dma_rd_valid <= 1'b0;
    if (m_mr_valid && m_mr_ready) begin
      mr_i <= mr_i + 1'b1;
      if (mr_i + 1'b1 == pc_n) m_mr_valid <= 1'b0;
    end
    if (s_mr_valid) begin
      mr_got <= mr_got + 1'b1;
      if (s_mr.status != 3'd0) pc_bad <= 1'b1;
      for (int k = 0; k < 4; k++) begin
        if (s_mr_user == 2'(k)) pc_dma[64*k +: 64] <= s_mr.dma;
      end
    end
    if (s_attr_valid && st == S_V_WAIT) begin
      a <= s_attr_data;
      a_state <= s_attr_state;
      got_attr <= 1'b1;
    end
    if (s_comp_valid && st == S_V_WAIT) begin
      c <= s_comp_data;
      got_comp <= 1'b1;
    end

    case (st)
      S_IDLE: if (init_done) begin
        requeue <= 1'b0;
        if (s_ctx_valid) begin
          kind <= K_CTX;
          q <= s_ctx.qpn[LOG_N-1:0];
          q24 <= s_ctx.qpn;
          k_op <= s_ctx.code;
          k_arg <= s_ctx.arg;
          st <= S_RD0;
        end else if (s_strd_valid) begin
          kind <= K_STRD;
          q <= s_strd_qpn[LOG_N-1:0];
          q24 <= s_strd_qpn;
          st <= S_RD0;
        end else if (arr_go) begin
          // WQE data: the first beat now (WQE t_k of the head read)
          kind <= K_ARR;
          q <= t_q;
          q24 <= 24'(t_q);
          t_q_l <= t_q;
          t_epoch_l <= t_epoch;
          t_fetch_l <= t_k >= t_nre;
          t_idx_l <= t_idx + 32'(t_k);
          wq[511:0] <= s_wqe_rd_tdata;
          bf_in <= 1'b0;
          for (int k = 0; k < 4; k++)
            d_sge_on[k] <= s_wqe_rd_tdata[8*roce_desc_pkg::SQ_WQE_NUM_SGE_OFF +: 8] > 8'(k);
          wq_err <= s_wqe_rd_tuser;
          st <= S_A1;
        end else if (s_wake_valid) begin
          if (!wake_on) begin
            push_en <= 1'b1;
            push_q <= s_wake_qpn[LOG_N-1:0];
          end
        end else if (s_axis_bf_tvalid) begin
          // an inline doorbell: its first beat now (a one-beat record is dropped)
          kind <= K_BF;
          q <= bf_qpn[LOG_N-1:0];
          q24 <= {8'd0, bf_qpn};
          k_pi <= bf_pi;
          bf_oor <= (32'(bf_qpn) >> LOG_N) != 32'd0;
          wq[511:0] <= s_axis_bf_tdata;
          bf_in <= 1'b1;
          for (int k = 0; k < 4; k++)
            d_sge_on[k] <= s_axis_bf_tdata[8*roce_desc_pkg::SQ_WQE_NUM_SGE_OFF +: 8] > 8'(k);
          wq_err <= 1'b0;
          if (!s_axis_bf_tlast) st <= S_B1;
        end else if (s_db_valid) begin
          kind <= K_DB;
          q <= s_db_qpn[LOG_N-1:0];
          q24 <= s_db_qpn;
          k_pi <= s_db_pi;
          st <= S_RD0;
        end else if (v_can) begin  // a visit of the ring's head (v_go, below)
          q <= ring_head;
          q24 <= 24'(ring_head);
          ring_rd <= ring_rd + 1'b1;
        end
      end

      S_RD0: st <= S_RD1;
      S_RD1: begin
        r <= row_q;
        db_d <= k_pi - rq.sq_pi[15:0];
        st <= S_DISPATCH;
      end

      S_DISPATCH: begin
        st <= S_WB;
        case (kind)
          K_CTX: begin
            ctx_done <= 1'b1;
            if (k_op == roce_rec_pkg::CTX_OP_RESET) begin
              r <= '0;
              r.epoch <= r.epoch + 4'd1;
              m_body_clr <= 1'b1;
              m_body_qpn <= q24;
              // forget the QP's bodies in the store: a walk over its stretch
              stag_a <= st_slot(q, 32'd0);
              st <= S_CLR;
            end else if (k_op == roce_rec_pkg::CTX_OP_SET_SQ_PSN) begin
              r.next_psn <= k_arg[23:0];
              r.max_sent <= k_arg[23:0];
            end else if (k_op == roce_rec_pkg::CTX_OP_ENTER_RTS) begin
              r.rts <= 1'b1;
              for (int j = 0; j < 4; j++)
                r.win_lo[j] <= k_arg[roce_rec_pkg::CTX_RTS_WIN_SHIFT_LSB +: 3] > 3'(j);
              r.win_base <= k_arg[roce_rec_pkg::CTX_RTS_WIN_BASE_LSB +: LOG_N];
              requeue <= 1'b1;
            end else if (k_op == roce_rec_pkg::CTX_OP_ENTER_ERR) begin
              r.dead <= 1'b1;
              r.rts <= 1'b0;
            end
          end
          K_STRD: begin
            strd_done <= 1'b1;
            strd_sq_psn <= r.next_psn;
            strd_sq_pi <= r.sq_pi[15:0];
            st <= S_IDLE;
          end
          default: begin  // K_DB: the 16-bit PI extended against the free-running one
            if (!db_stale) r.sq_pi <= r.sq_pi + {16'd0, db_d};
            if (r.dead) begin
              kick_flush_n <= 1'b1;
              st <= S_KICK;
            end else begin
              requeue <= 1'b1;
            end
          end
        endcase
      end

      // a kick for roce_comp once the output is free
      S_KICK: if (!m_kick_valid) begin
        m_kick_valid <= 1'b1;
        m_kick_qpn <= q24;
        m_kick_flush <= kick_flush_n;
        st <= S_WB;
      end

      // ------------------------------------------------------------ WQE arrival
      S_A1: if (s_wqe_rd_tvalid) begin
        wq[1023:512] <= s_wqe_rd_tdata;
        if (s_wqe_rd_tuser) wq_err <= 1'b1;
        stag_a <= st_slot(t_q_l, t_idx_l);
        st <= S_A2;
      end
      S_A2: begin  // the row is in row_q
        r <= row_q;
        if (t_k + 1'b1 == t_n) begin
          tq_rd <= tq_rd + 1'b1;
          tq_ne <= tq_rd + 1'b1 != tq_wr;
          tq_nfull <= 1'b1;
          t_k <= '0;
        end else begin
          t_k <= t_k + 1'b1;
        end
        st <= S_A3;
        if (wq_err) cnt_wqe_err <= 1'b1;
      end
      S_A3: begin  // the store entry's tag is on sg_*
        st <= S_WB;
        a3_go <= a3_ask;
        a3_kept <= (r.own_idx == t_idx_l && r.own_st == T_PEND) ||
                   (sg_st == T_PEND && sg_idx == t_idx_l);
        if (r.epoch == t_epoch_l) begin
          requeue <= 1'b1;
          body_wd <= d_body;
          m_body_valid <= d_readlike && !d_bad;
          m_body_qpn <= q24;
          m_body_idx <= t_idx_l;
          m_body_sge <= {wq[8*roce_desc_pkg::SQ_WQE_NUM_SGE_OFF +: 3], wq[8*roce_desc_pkg::SQ_WQE_DATA_OFF +: 512]};
          if (r.own_idx == t_idx_l && r.own_st == T_PEND) begin
            r.own_st <= d_bad ? T_BAD : T_OK;
            own_we <= 1'b1;
            own_waddr <= q;
          end else if (sg_st == T_PEND && sg_idx == t_idx_l) begin
            st_we <= 1'b1;
            st_waddr <= stag_a;
            stag_we <= 1'b1;
            stag_wa <= stag_a;
            stag_wd <= {d_bad ? T_BAD : T_OK, t_idx_l};
          end
          if (t_fetch_l) begin
            wina_we <= 1'b1;
            wina_addr <= win_slot(q, t_idx_l, r.win_lo, r.win_base);
            wina_d <= d_win;
            wins_we <= 1'b1;
            wins_addr <= win_slot(q, t_idx_l, r.win_lo, r.win_base);
            wins_d <= dr_status;
            r.fetched_pub <= t_idx_l + 32'd1;
            if (d_bad && !r.dead) begin
              kick_flush_n <= 1'b0;
              st <= S_KICK;
            end
          end
        end
      end

      // ------------------------------------------------------------ inline doorbell
      S_B1: if (s_axis_bf_tvalid) begin  // the second beat (the row is in row_q)
        wq[1023:512] <= s_axis_bf_tdata;
        stag_a <= st_slot(q, {16'd0, k_pi - 16'd1});
        st <= s_axis_bf_tlast ? S_B2 : S_BDRAIN;
      end
      S_BDRAIN: if (s_axis_bf_tvalid && s_axis_bf_tlast) st <= S_IDLE;
      S_B2: begin  // the tests on the row, registered for S_B3
        r <= row_q;
        db_d <= k_pi - rq.sq_pi[15:0];
        bf_seq <= rq.fetched == rq.sq_pi && rq.fetched_pub == rq.fetched;
        bf_room <= !win_at({16'd0, ci_gap}, rq.win_lo) && ra_gap[15:LOG_WIN] == '0;
        bf_live <= rq.rts && !rq.dead && !bf_oor;
        st <= S_B3;
      end
      S_B3: begin  // the store entry's tag is on sg_*, the WQE's status on dr_status
        st <= bf_oor ? S_IDLE : S_WB;
        if (!db_stale) r.sq_pi <= r.sq_pi + {16'd0, db_d};
        if (!bf_oor && r.dead) begin
          kick_flush_n <= 1'b1;
          st <= S_KICK;
        end else if (!bf_oor) begin
          requeue <= 1'b1;
        end
        if (bf_take) begin
          // fetched, as if its read had arrived
          r.fetched <= r.fetched + 32'd1;
          r.fetched_pub <= r.fetched + 32'd1;
          body_wd <= d_body;
          st_we <= 1'b1;
          st_waddr <= stag_a;
          stag_we <= 1'b1;
          stag_wa <= stag_a;
          stag_wd <= {d_bad ? T_BAD : T_OK, r.fetched};
          wina_we <= 1'b1;
          wina_addr <= win_slot(q, r.fetched, r.win_lo, r.win_base);
          wina_d <= d_win;
          wins_we <= 1'b1;
          wins_addr <= win_slot(q, r.fetched, r.win_lo, r.win_base);
          wins_d <= dr_status;
          m_body_valid <= d_readlike && !d_bad;
          m_body_qpn <= q24;
          m_body_idx <= r.fetched;
          m_body_sge <= {wq[8*roce_desc_pkg::SQ_WQE_NUM_SGE_OFF +: 3], wq[8*roce_desc_pkg::SQ_WQE_DATA_OFF +: 512]};
          if (d_bad) begin
            kick_flush_n <= 1'b0;
            st <= S_KICK;
          end
        end
      end

      // ------------------------------------------------------------ visit
      S_V_WAIT: begin
        if (row_wait != 2'd2) row_wait <= row_wait + 2'd1;
        if (row_wait == 2'd1) begin
          r <= row_q;
          db_d <= k_pi - rq.sq_pi[15:0];
        end
        // a doorbell's PI (as S_DISPATCH adds it), in the cycle S_V_REW may follow
        if (row_wait == 2'd2 && v_pi) begin
          v_pi <= 1'b0;
          if (!db_stale) r.sq_pi <= r.sq_pi + {16'd0, db_d};
        end
        // on, or in the cycle of, the last answer's arrival
        if (row_wait == 2'd2 && (got_attr || s_attr_valid) && (got_comp || s_comp_valid) &&
            !m_attr_valid && !m_comp_valid) begin
          st <= S_V_REW;
        end
      end
      S_V_REW: begin
        r.ci_seen <= c.sq_ci[15:0];
        if (r.dead && v_db) begin
          kick_flush_n <= 1'b1;
          st <= S_KICK;
        end else if (r.dead || !(a_state == roce_desc_pkg::QP_STATE_RTS[2:0] ||
                                 (a_state == roce_desc_pkg::QP_STATE_RTR[2:0] && r.rts))) begin
          st <= S_WB;
        end else begin
          if (c.rw_gen != r.gen) begin
            r.cur <= c.rw_idx;
            r.cur_pkt <= c.rw_pkt;
            r.next_psn <= c.rw_psn;
            r.gen <= c.rw_gen;
          end
          stag_a <= stag_ra;
          st <= rew_fill ? S_FILL : S_V_HOLD;
          if (rew_fill && r.sq_pi == t_c1) begin
            // one WQE posted: its read goes out now (S_FILL's only step: into the own slot)
            r.own_idx <= r.cur;
            r.own_st <= T_PEND;
            r.fetched <= r.fetched + 32'd1;
            m_wqe_rd_valid <= 1'b1;
            m_wqe_rd.addr <= sq_addr(r.cur[14:0]);
            m_wqe_rd.len <= 16'd128;
            tq[tq_wr[TW-1:0]] <= {r.epoch, (LOG_BATCH + 1)'(0), r.cur, (LOG_BATCH + 1)'(1), q};
            tq_wr <= tq_wr + 1'b1;
            tq_ne <= 1'b1;
            tq_nfull <= tq_wr - tq_rd != (TW + 1)'(TQ_DEPTH - 1);
            st <= S_WB;
          end
          if (rew_fwd) begin
            // the send index's WQE is the one that just arrived: its body was loaded from
            // body_wd in S_WB, and S_V_HOLD's tests are the arrival's (taken, not malformed)
            v_early <= 1'b1;
            st <= S_V_LIM;
          end
        end
      end
      S_V_HOLD: begin  // the send index's tag on sg_*, its body on own_q / stb_q
        if (!held) begin
          if (nothing_to_read) begin
            st <= S_WB;
          end else begin
            st <= S_FILL;  // read it (and the next ones); wait for it off the ring
          end
        end else if (slot_st == T_PEND) begin
          st <= S_FILL;  // waits for its body off the ring; reads ahead meanwhile
        end else if (slot_st == T_BAD) begin
          st <= S_WB;  // a malformed WQE waits for the flush
        end else begin
          // (the packet's pacing question went out with the visit's reads, or in S_V_NEXT)
          b <= own_hit ? own_q : stb_q;
          st <= S_V_LIM;
        end
      end
      S_V_LIM: begin  // a limit ends the visit once the pacing answer is in (S_V_PDRAIN)
        v_early <= 1'b0;
        st <= v_early ? S_V_PACEW : S_V_PACE;
        if (lim_unacked) begin
          st <= S_V_PDRAIN;
        end else if (lim_at_start && b.flags[F_FENCE] && lim_rd_busy) begin
          st <= S_V_PDRAIN;
        end else if (lim_at_start && (is_read || is_atomic) && lim_rd_full) begin
          st <= S_V_PDRAIN;
        end else if (lim_rnr) begin
          requeue <= 1'b1;
          st <= S_V_PDRAIN;
        end
      end
      S_V_PACE: st <= S_V_PACEW;  // (S_V_PKT at least three cycles after S_V_LIM, two early)
      // a packet whose payload is gathered through SGEs walks them and checks the pieces'
      // keys while the pacing answer is on its way (S_V_MRW waits for it before the first
      // read); any other waits for it here
      S_V_PACEW: if (pace_got) begin
        pace_got <= 1'b0;
        if (!pace_ok) begin
          requeue <= 1'b1;
          st <= S_FILL0;
        end else begin
          st <= S_V_PKT;
        end
      end else if (walk_ahead) begin
        st <= S_V_PKT;
      end
      S_V_PDRAIN: if (pace_got) begin
        pace_got <= 1'b0;
        st <= S_FILL0;
      end
      S_V_PKT: begin
        pc_n <= 3'd0;
        is_i <= 3'd0;
        st <= S_V_DESC;
        if (walk_ahead) begin
          st <= S_V_WALK;
        end else if (!is_read && !is_atomic && p_plen != 13'd0) begin
          // the inline bytes are one piece of the payload path
          iq[iq_wr[1:0]] <= b.data;
          iq_wr <= iq_wr + 1'b1;
          pq[pq_wr[PW-1:0]] <= {1'b1, 1'b1, p_plen};
          pq_wr <= pq_wr + 1'b1;
        end
      end
      S_V_WALK: st <= S_V_WALK2;  // the walk's last stage holds this packet's pieces next cycle
      S_V_WALK2: begin
        for (int j = 0; j < 4; j++) begin
          for (int k = j; k < 4; k++) begin
            if (we_has[k] && w_slot[k] == 2'(j)) begin
              pc_key[32*j +: 32] <= b.data[128*k + 96 +: 32];
              pc_va[64*j +: 64] <= {we_va_lo[k][32] ? we_va_hi1[k] : b.data[128*k + 32 +: 32], we_va_lo[k][31:0]};
              pc_len[32*j +: 32] <= we_n[k];
            end
          end
        end
        pc_n <= w_cnt;
        wk_short <= we_short;
        mr_i <= 3'd0;
        mr_got <= 3'd0;
        pc_bad <= 1'b0;
        m_mr_valid <= w_cnt != 3'd0;
        st <= S_V_MRW;
      end
      // the checks' answers (the last may come in this cycle: the first piece's read takes
      // its address from it) and the pacing answer all in: a packet not allowed yet waits for the next
      // visit; a piece refused or the SGEs short is a local error, the WQE completes with it
      // and the QP goes to Err
      S_V_MRW: if (mr_in && !pace_pend) begin
        logic bad;
        bad = pc_bad || (s_mr_valid && s_mr.status != 3'd0);
        pace_got <= 1'b0;
        if (pace_got && !pace_ok) begin
          requeue <= 1'b1;
          st <= S_FILL0;
        end else if (bad || wk_short) begin
          wins_we <= 1'b1;
          wins_addr <= win_slot(q, r.cur, r.win_lo, r.win_base);
          wins_d <= bad ? roce_desc_pkg::WC_STATUS_LOC_PROT_ERR : roce_desc_pkg::WC_STATUS_LOC_LEN_ERR;
          m_err_valid <= 1'b1;
          m_err_qpn <= q24;
          m_err_cause <= bad ? roce_desc_pkg::WC_STATUS_LOC_PROT_ERR : roce_desc_pkg::WC_STATUS_LOC_LEN_ERR;
          st <= S_WB;
        end else if (pc_n != 3'd0 && !m_dma_rd_valid) begin
          // the first piece's read goes out now (its address may be this cycle's answer)
          m_dma_rd_valid <= 1'b1;
          m_dma_rd.addr <= (s_mr_valid && s_mr_user == 2'd0) ? s_mr.dma : pc_dma[63:0];
          m_dma_rd.len <= pc_len[15:0];
          pq[pq_wr[PW-1:0]] <= {1'b0, pc_n == 3'd1, pc_len[12:0]};
          pq_wr <= pq_wr + 1'b1;
          is_i <= 3'd1;
          st <= pc_n == 3'd1 ? S_V_DESC : S_V_ISSUE;
        end else begin
          st <= pc_n != 3'd0 ? S_V_ISSUE : S_V_DESC;
        end
      end
      // one payload read per further piece; the descriptor follows the last one's issue
      S_V_ISSUE: if (!m_dma_rd_valid) begin
        m_dma_rd_valid <= 1'b1;
        for (int k = 0; k < 4; k++) begin
          if (is_i == 3'(k)) begin
            m_dma_rd.addr <= pc_dma[64*k +: 64];
            m_dma_rd.len <= pc_len[32*k +: 16];
            pq[pq_wr[PW-1:0]] <= {1'b0, is_i + 3'd1 == pc_n, pc_len[32*k +: 13]};
          end
        end
        pq_wr <= pq_wr + 1'b1;
        is_i <= is_i + 3'd1;
        if (is_i + 3'd1 == pc_n) st <= S_V_DESC;
      end
      S_V_DESC: if (!m_sent_valid) begin  // (the burst's previous packet's bytes reported)
        dq[dq_wr[QW-1:0]] <= {p_desc, p_beats, q, r.epoch, r.gen};
        dq_wr <= dq_wr + 1'b1;
        m_sent_valid <= 1'b1;
        m_sent_qpn <= q24;
        m_sent_bytes <= {3'd0, p_pay} + 16'd80;
        if (r.cur == r.started) begin
          r.started <= r.cur + 32'd1;
          winp_we <= 1'b1;
          winp_addr <= win_slot(q, r.cur, r.win_lo, r.win_base);
          winp_d <= {p_n, r.next_psn};
          if (is_read || is_atomic) r.rd_started <= r.rd_started + 8'd1;
        end
        r.next_psn <= p_next;
        v_cont <= !p_adv;
        if (p_adv) begin
          r.cur <= r.cur + 32'd1;
          r.cur_pkt <= 24'd0;
          stag_a <= stag_ra;
        end else begin
          r.cur_pkt <= r.cur_pkt + 24'd1;
        end
        if (c.una == r.max_sent) begin
          r.busy <= a.timeout != 5'd0;
          r.busy_dl <= busy_dl_n;
        end
        if (roce_util_pkg::psn_lt(r.next_psn, r.max_sent)) cnt_retransmit <= 1'b1;
        else r.max_sent <= p_next;
        requeue <= 1'b1;
        burst_n <= burst_n + 4'd1;
        st <= S_V_NEXT;
      end
      // the burst: up to BURST packets a visit, then the reads ahead (the send index's tag
      // is on sg_* here, as S_V_HOLD and the run's set-up need it). The next packet's pacing
      // question goes out here, once the last packet's bytes are handed to roce_dcqcn (it
      // takes them first); a further packet of the same WQE keeps b (S_V_LIM's tests and
      // the s1..s4 registers see r as S_V_DESC left it), the next WQE's body is S_V_HOLD's.
      S_V_NEXT: begin
        if (burst_n == 4'(BURST)) begin
          st <= S_FILL;
        end else if (b_room && (!m_sent_valid || m_sent_ready)) begin
          m_query_valid <= 1'b1;
          m_query_qpn <= q24;
          pace_pend <= 1'b1;
          st <= v_cont ? S_V_LIM : S_V_HOLD;
        end
      end

      // ------------------------------------------------------------ WQE reads
      // One run of up to B consecutive WQEs in one read: from the send index when its body
      // is not held (into the own slot), else from the fetch index (into the store); it
      // stops at the producer index, at the fetch index when the window is full or W ahead
      // of the send index, at the ring's end, and ahead of the send index at a store entry
      // being read or holding it. A run from the fetch index starts only when it is at most
      // W - B ahead of the send index (room for a whole read).
      S_FILL0: st <= S_FILL;
      S_FILL: begin  // f_idx's entry on sg_*
        if (fl_stop) begin
          st <= S_WB;
          if (f_k != '0) begin
            m_wqe_rd_valid <= 1'b1;
            m_wqe_rd.addr <= f_addr;
            m_wqe_rd.len <= {5'd0, f_k, 7'd0};
            tq[tq_wr[TW-1:0]] <= {r.epoch, f_nre, f_start, f_k, q};
            tq_wr <= tq_wr + 1'b1;
            tq_ne <= 1'b1;
            tq_nfull <= tq_wr - tq_rd != (TW + 1)'(TQ_DEPTH - 1);
          end
        end else begin
          if (fl_at_cur) begin
            r.own_idx <= f_idx;
            r.own_st <= T_PEND;
          end else begin
            stag_we <= 1'b1;
            stag_wa <= fl_a;
            stag_wd <= {T_PEND, f_idx};
          end
          if (fl_at_fet) begin
            r.fetched <= r.fetched + 32'd1;
            fl_win <= fl_win + 32'd1;
          end else begin
            f_nre <= f_nre + 1'b1;
            fl_fet <= fl_fet - 32'd1;
          end
          fl_pi <= fl_pi - 32'd1;
          fl_cur <= fl_cur - 32'd1;
          fl_ra <= fl_ra + 1'b1;
          if (fl_ra == '1) fl_raf <= 1'b1;
          f_k <= f_k + 1'b1;
          f_idx <= f_idx + 32'd1;
          fl_a <= fl_n;
          fl_n <= st_next(fl_n);
          if (fl_last) begin
            st <= S_WB;
            m_wqe_rd_valid <= 1'b1;
            m_wqe_rd.addr <= f_k != '0 ? f_addr : f_fet ? f_addr_fet : f_addr_cur;
            m_wqe_rd.len <= {5'd0, f_k + 1'b1, 7'd0};
            tq[tq_wr[TW-1:0]] <= {r.epoch, fl_at_fet ? f_nre : f_nre + 1'b1, f_start, f_k + 1'b1, q};
            tq_wr <= tq_wr + 1'b1;
            tq_ne <= 1'b1;
            tq_nfull <= tq_wr - tq_rd != (TW + 1)'(TQ_DEPTH - 1);
          end
        end
      end

      // RESET: the QP's stretch of the store is forgotten, one entry per cycle
      S_CLR: begin
        stag_we <= 1'b1;
        stag_wa <= stag_a;
        stag_wd <= '0;
        stag_a <= st_next(stag_a);
        if (stag_a[LOG_WIN-1:0] == '1) st <= S_WB;
      end

      // ------------------------------------------------------------ write back
      S_WB: begin
        st <= S_IDLE;
        if (a3_go) begin
          a3_go <= 1'b0;
          requeue <= 1'b0;
          kind <= K_VISIT;
          row_wait <= 2'd2;  // r is the row this cycle writes
          v_arr <= a3_kept;
          if (a3_kept) b <= body_wd;  // (S_V_REW keeps it if the send index is that WQE)
          st <= S_V_WAIT;
        end else if (wb_visit) begin
          requeue <= 1'b0;  // (a visit of q: v_go, below)
        end else if (requeue && !q_on) begin
          push_en <= 1'b1;
          push_q <= q;
        end
      end

      default: st <= S_IDLE;
    endcase

    // a run of reads ahead is set up (stag_a is the send index's entry; the run's first is
    // the fetch index's when the send index is held)
    if (fill_rd) begin
      f_start <= held ? r.fetched : r.cur;
      f_fet <= held;
        f_idx <= held ? r.fetched : r.cur;
        // AND-OR, not ?: (Yosys's opt_share would make a mux of the operands in front of
        // one subtractor: the late `held` then goes through the carry chain)
        fl_pi <= (pi_m_fet & {32{held}}) | (pi_m_cur & {32{!held}});
        fl_fet <= fet_m_cur & {32{!held}};
        fl_cur <= cur_m_fet & {32{held}};
        fl_win <= fet_m_ci;
        // a run from the fetch index needs room for a whole read in the stretch
        fl_raf <= held && (fet_m_cur16[15:LOG_WIN] != '0 ||
                           fet_m_cur16[LOG_WIN-1:0] > LOG_WIN'(W - B));
        fl_ra <= held ? fet_m_cur16[LOG_WIN-1:0] : '0;
        // (in S_V_REW the fetch index's slot: stag_a is set there; any other field is the
        // same whatever held says, the send and fetch indexes being equal)
        fl_a <= (held || st == S_V_REW) ? st_slot(q, r.fetched) : stag_a;
        fl_n <= (held || st == S_V_REW) ? st_next(st_slot(q, r.fetched)) : st_next(stag_a);
        f_k <= '0;
        f_nre <= '0;
    end

    // a visit starts: of the ring's head from S_IDLE, of q from S_WB (wb_visit)
    if (v_go || a3_ask) begin
      m_attr_valid <= 1'b1;
      m_attr_qpn <= v_go ? v_qpn : q24;
      m_comp_valid <= 1'b1;
      m_comp_qpn <= v_go ? v_qpn : q24;
      // the pacing question for the visit's first packet
      m_query_valid <= 1'b1;
      m_query_qpn <= v_go ? v_qpn : q24;
      pace_pend <= 1'b1;
      pace_got <= 1'b0;
      got_attr <= 1'b0;
      got_comp <= 1'b0;
      row_wait <= 2'd0;
      burst_n <= 4'd0;
      now_l <= now;
      tick_l <= now_tick;
      v_db <= db_go;
      v_pi <= db_go;
      v_arr <= 1'b0;
    end
    if (v_go) begin
      kind <= K_VISIT;
      st <= S_V_WAIT;
    end

    if (rst || soft_reset) begin
      init_idx <= '0;
      st <= S_IDLE;
      a3_go <= 1'b0;
      v_early <= 1'b0;
      ring_wr <= '0;
      ring_rd <= '0;
      tq_wr <= '0;
      tq_rd <= '0;
      tq_ne <= 1'b0;
      tq_nfull <= 1'b1;
      t_k <= '0;
      pq_wr <= '0;
      iq_wr <= '0;
      dq_wr <= '0;
      m_attr_valid <= 1'b0;
      m_comp_valid <= 1'b0;
      m_query_valid <= 1'b0;
      pace_pend <= 1'b0;
      pace_got <= 1'b0;
      m_sent_valid <= 1'b0;
      m_kick_valid <= 1'b0;
      m_body_valid <= 1'b0;
      m_body_clr <= 1'b0;
      m_err_valid <= 1'b0;
      m_wqe_rd_valid <= 1'b0;
      m_dma_rd_valid <= 1'b0;
      m_mr_valid <= 1'b0;
      push_en <= 1'b0;
      ctx_done <= 1'b0;
      strd_done <= 1'b0;
    end
  end

  // ---------------------------------------------------------------- payload: realigner
  // Pieces in order (pq): a DMA read (lane-0 aligned beats, tlast on its last) or an inline
  // beat; each beat is rotated by the bytes already in the partial beat (one 64:1 byte mux)
  // and merged; full beats go into the payload FIFO, a packet's last partial beat after it.
  logic [511:0] ra_acc;
  logic [5:0]   ra_fill;
  logic [6:0]   ra_k, ra_k1; // 64-byte beats of the head piece taken, and that + 1
  logic         ra_flush;   // the packet's partial beat goes out this cycle
  logic         pq_empty;
  logic         h_inl, h_plast;
  logic [12:0]  h_len;
  assign pq_empty = pq_wr == pq_rd;
  assign {h_inl, h_plast, h_len} = pq[pq_rd[PW-1:0]];
  logic         in_v;
  logic [511:0] in_d;
  assign in_v = !pq_empty && !ra_flush && (h_inl || s_dma_rd_tvalid);
  assign in_d = h_inl ? iq[iq_rd[1:0]] : s_dma_rd_tdata;
  assign s_dma_rd_tready = !pq_empty && !ra_flush && !h_inl;
  // A piece is taken 64 bytes a beat and its rest in its last (a beat takes fewer bytes only
  // when it ends the piece), so the bytes taken are ra_k * 64 and the tests on the rest
  // (h_len - 64 ra_k) are on h_len's beat count and low bits: no subtraction behind the
  // piece queue's LUT RAM read
  logic         in_big, in_done;  // 64 bytes or more left; this beat ends the piece
  logic [6:0]   in_n;
  assign in_big = h_len[12:6] > ra_k;
  assign in_n = in_big ? 7'd64 : {1'b0, h_len[5:0]};
  assign in_done = !in_big || (h_len[5:0] == 6'd0 && h_len[12:6] == ra_k1);
  logic [1023:0] dbl;
  logic [511:0]  rot, merged;
  assign dbl = {in_d, in_d} << {ra_fill, 3'b000};
  assign rot = dbl[1023:512];
  logic unused_dbl;
  assign unused_dbl = ^dbl[511:0];
  always_comb begin
    for (int j = 0; j < 64; j++) merged[8*j +: 8] = 6'(j) < ra_fill ? ra_acc[8*j +: 8] : rot[8*j +: 8];
  end
  logic [6:0] in_total;
  assign in_total = {1'b0, ra_fill} + in_n;

  (* ram_style = "block" *) logic [511:0] pf [DEPTH];
  logic [AW:0]  pf_wr, pf_rd;
  logic         pf_we;
  logic [511:0] pf_wd;
  always_ff @(posedge clk) begin
    if (pf_we) pf[pf_wr[AW-1:0]] <= pf_wd;
  end

  always_ff @(posedge clk) begin
    pf_we <= 1'b0;
    cnt_dma_err <= 1'b0;
    if (pf_we) pf_wr <= pf_wr + 1'b1;
    if (ra_flush) begin
      pf_we <= 1'b1;
      pf_wd <= ra_acc;
      ra_fill <= 6'd0;
      ra_flush <= 1'b0;
    end else if (in_v) begin
      if (in_total >= 7'd64) begin
        pf_we <= 1'b1;
        pf_wd <= merged;
        ra_acc <= rot;
        ra_fill <= 6'(in_total - 7'd64);
      end else begin
        ra_acc <= merged;
        ra_fill <= in_total[5:0];
      end
      if (!h_inl && s_dma_rd_tlast && s_dma_rd_tuser) cnt_dma_err <= 1'b1;
      if (in_done) begin
        // the piece is in
        pq_rd <= pq_rd + 1'b1;
        ra_k <= 7'd0;
        ra_k1 <= 7'd1;
        if (h_inl) iq_rd <= iq_rd + 1'b1;
        if (h_plast && in_total != 7'd0 && in_total != 7'd64) ra_flush <= 1'b1;
      end else begin
        ra_k <= ra_k1;
        ra_k1 <= ra_k1 + 7'd1;
      end
    end
    if (rst || soft_reset) begin
      pf_wr <= '0;
      pq_rd <= '0;
      iq_rd <= '0;
      ra_fill <= 6'd0;
      ra_k <= 7'd0;
      ra_k1 <= 7'd1;
      ra_flush <= 1'b0;
      pf_we <= 1'b0;
      cnt_dma_err <= 1'b0;
    end
  end

  // ---------------------------------------------------------------- output
  logic [DESC_W-1:0] h_desc;
  logic [AW:0]       h_beats;
  logic [LOG_N-1:0]  h_q;
  logic [3:0]        h_epoch;
  logic [7:0]        h_gen;
  assign {h_desc, h_beats, h_q, h_epoch, h_gen} = dq[dq_rd[QW-1:0]];
  logic [15:0]       h_bytes;
  assign h_bytes = h_desc[8*roce_rec_pkg::TX_DESC_PAYLOAD_LEN_OFF +: 16];
  // The offer's tests on registers: the head's beats, epoch and generation and its QP as it
  // is now, all read a cycle before (the stale test lags out_mem's writes by a cycle); no
  // offer the cycle after the head moved or was written into an empty queue.
  logic [12:0]       h_now;
  logic [AW:0]       hq_beats, hq_beats_m1;
  logic [3:0]        hq_epoch;
  logic [7:0]        hq_gen;
  logic [QW:0]       dq_rd_l;
  logic              h_fresh;
  always_ff @(posedge clk) begin
    h_now <= out_mem[h_q];
    hq_beats <= h_beats;
    hq_beats_m1 <= h_beats - 1'b1;
    hq_epoch <= h_epoch;
    hq_gen <= h_gen;
    dq_rd_l <= dq_rd;
    h_fresh <= st == S_V_DESC && dq_empty;
  end
  logic              h_stale;
  assign h_stale = h_now[0] || h_now[12:9] != hq_epoch || h_now[8:1] != hq_gen;

  // A descriptor is offered while the packet before it still streams (the consumer may take
  // it once that payload is out); a descriptor taken, or a stale one dropped, while a stream
  // is on waits in pend_* and starts (or skips its beats) the cycle after it ends.
  logic        streaming;
  logic [AW:0] s_left;
  logic [15:0] s_bytes;
  logic        pend_v, pend_skip;
  logic [AW:0] pend_beats;
  logic [15:0] pend_bytes;
  logic        offer;
  // (the head's beats are in once the beat written this cycle, pf_we, is counted)
  logic        arr_ok;
  assign arr_ok = arrived >= hq_beats || (pf_we && arrived >= hq_beats_m1);
  assign offer = !dq_empty && !pend_v && !m_desc_valid && arr_ok && dq_rd_l == dq_rd && !h_fresh;
  logic        out_beat;
  assign out_beat = m_axis_pay_tvalid && m_axis_pay_tready;
  logic        s_issue;  // a beat goes to the output register
  assign s_issue = streaming && s_left != '0 && (!m_axis_pay_tvalid || m_axis_pay_tready);

  always_ff @(posedge clk) begin
    cnt_stale <= 1'b0;
    if (out_beat) m_axis_pay_tvalid <= 1'b0;
    if (s_issue) begin
      m_axis_pay_tvalid <= 1'b1;
      m_axis_pay_tdata <= pf[pf_rd[AW-1:0]];
      m_axis_pay_tkeep <= s_bytes >= 16'd64 ? '1 : ~({64{1'b1}} << s_bytes[5:0]);
      m_axis_pay_tlast <= s_left == (AW + 1)'(1);
      pf_rd <= pf_rd + 1'b1;
      s_left <= s_left - 1'b1;
      s_bytes <= s_bytes >= 16'd64 ? s_bytes - 16'd64 : 16'd0;
      if (s_left == (AW + 1)'(1)) streaming <= 1'b0;
    end
    // the head's lengths, kept while a descriptor waits (a handshake takes the head; a
    // drop happens with no descriptor offered, it skips the beats)
    if (!pend_v) begin
      pend_beats <= h_beats;
      pend_bytes <= h_bytes;
      pend_skip <= !m_desc_valid;
    end
    if (m_desc_valid && m_desc_ready) begin
      m_desc_valid <= 1'b0;
      dq_rd <= dq_rd + 1'b1;
      if (!streaming) begin
        streaming <= h_beats != '0;
        s_left <= h_beats;
        s_bytes <= h_bytes;
      end else begin
        pend_v <= 1'b1;
      end
    end else if (offer) begin
      if (h_stale) begin
        // dropped with its payload
        dq_rd <= dq_rd + 1'b1;
        pend_v <= 1'b1;
        cnt_stale <= 1'b1;
      end else begin
        m_desc_valid <= 1'b1;
        m_desc <= h_desc;
      end
    end
    if (pend_v && !streaming) begin
      pend_v <= 1'b0;
      if (pend_skip) begin
        pf_rd <= pf_rd + pend_beats;
      end else begin
        streaming <= pend_beats != '0;
        s_left <= pend_beats;
        s_bytes <= pend_bytes;
      end
    end
    if (rst || soft_reset) begin
      dq_rd <= '0;
      pf_rd <= '0;
      m_desc_valid <= 1'b0;
      m_axis_pay_tvalid <= 1'b0;
      streaming <= 1'b0;
      pend_v <= 1'b0;
      cnt_stale <= 1'b0;
    end
  end

  // credit (the FIFO's beats less those reserved by packets made and not yet sent) and
  // arrival (beats in the FIFO not yet claimed by an offered or dropped descriptor)
  // (a claim is applied a cycle late, registered: the next offer comes two cycles later at
  // the earliest, the head having moved)
  logic [AW:0] claim;
  // (the releases, a stale drop's beats and a beat sent, are applied two cycles late,
  // registered and then summed: credit is only held longer)
  logic [AW:0] rel_drop, release_q;
  logic        rel_beat;
  always_ff @(posedge clk) begin
    claim <= offer ? hq_beats : '0;
    rel_drop <= (offer && h_stale) ? hq_beats : '0;
    rel_beat <= out_beat;
    release_q <= rel_drop + (AW + 1)'(rel_beat);
    credit_free <= credit_free - {1'b0, st == S_V_DESC ? p_beats : '0} + {1'b0, release_q};
    arrived <= arrived + (pf_we ? (AW + 1)'(1) : '0) - claim;
    if (rst || soft_reset) begin
      claim <= '0;
      rel_drop <= '0;
      rel_beat <= 1'b0;
      release_q <= '0;
      credit_free <= (AW + 2)'(DEPTH);
      arrived <= '0;
    end
  end

endmodule

`resetall
