// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_dcqcn: congestion control: the notification point (a CNP request for a QP that
// received a CE-marked packet, at most one per CNP_INTERVAL) and the DCQCN reaction point that
// paces each QP's requests, in engine::dcqcn's fixed point (rates Mb/s << 8, alpha / 65536,
// time in cycles; pacing as a debt paid at Rc per cycle, no divider). RP and NP tables in BRAM,
// one read-modify-write pipeline each; on even cycles a scanner visits one row of both (timers,
// expiry), on odd cycles one operation per table issues from the input slots.
// Ports: s_reset, s_cnp, s_sent, s_query (answered on m_pace), s_ce (CNP requests on m_cnp,
//   2-entry FIFO), cfg_* (registered), now_cycle. Each input has a one-operation slot:
//   ready = the slot is empty (a register).
// Latency: an input taken in c issues in c+1 or c+2; an operation issued in i answers on
//   m_pace in i+3; a CNP request is in the FIFO in i+2.
// Throughput: one RP operation and one CE event per 2 cycles; each input one per 2 cycles.
// Model blocks::dcqcn; docs/engine-hdl.md.
//
// Parameters:
//   LOG_N      log2 of the number of QPs (CAPS.LOG_MAX_QP; default 10), at most 14.
//   LINE_MBPS  line rate in Mb/s (a QP at this rate is unlimited), at most 2^20 - 1.

`resetall
`default_nettype none

module roce_dcqcn #(
  parameter int LOG_N = 10,
  parameter int LINE_MBPS = 100000
) (
  input  wire logic        clk,
  input  wire logic        rst,
  input  wire logic        soft_reset,
  output      logic        init_done,
  output      logic [31:0] now_cycle,

  input  wire logic        cfg_cnp_enable,
  input  wire logic        cfg_dcqcn_enable,
  input  wire logic [11:0] cfg_us_cycles,
  input  wire logic [19:0] cfg_dcqcn_rate_ai,
  input  wire logic [19:0] cfg_dcqcn_rate_hai,
  input  wire logic [19:0] cfg_dcqcn_rate_min,
  input  wire logic [9:0]  cfg_dcqcn_g,
  input  wire logic [9:0]  cfg_dcqcn_alpha_init,
  input  wire logic [15:0] cfg_dcqcn_alpha_us,
  input  wire logic [15:0] cfg_dcqcn_rate_us,
  input  wire logic [31:0] cfg_dcqcn_byte_counter,
  input  wire logic [4:0]  cfg_dcqcn_stages,
  input  wire logic [15:0] cfg_cnp_interval_us,

  input  wire logic        s_ce_valid,
  output      logic        s_ce_ready,
  input  wire logic [23:0] s_ce_qpn,
  output      logic        m_cnp_valid,
  input  wire logic        m_cnp_ready,
  output      logic [23:0] m_cnp_qpn,

  input  wire logic        s_reset_valid,
  output      logic        s_reset_ready,
  input  wire logic [23:0] s_reset_qpn,
  input  wire logic        s_cnp_valid,
  output      logic        s_cnp_ready,
  input  wire logic [23:0] s_cnp_qpn,
  input  wire logic        s_sent_valid,
  output      logic        s_sent_ready,
  input  wire logic [23:0] s_sent_qpn,
  input  wire logic [15:0] s_sent_bytes,
  input  wire logic        s_query_valid,
  output      logic        s_query_ready,
  input  wire logic [23:0] s_query_qpn,

  output      logic        m_pace_valid,
  output      logic [23:0] m_pace_qpn,
  output      logic        m_pace_allowed,
  output      logic        m_pace_limited,
  output      logic [27:0] m_pace_rc,
  output      logic [27:0] m_pace_rt,
  output      logic [15:0] m_pace_alpha
);

  localparam int N = 1 << LOG_N;
  localparam logic [27:0] LINE_Q = 28'(LINE_MBPS) << 8;
  localparam logic [19:0] LINE_I = 20'(LINE_MBPS);
  localparam logic [29:0] REL_Q = {1'b0, LINE_Q, 1'b0} - 30'd1;  // 2 LINE_Q - 1
  // RP row: {lim, rc, rt, alpha, ts, bs, bc, d_alpha, d_rate, debt, tp}
  localparam int RP_W = 1 + 28 + 28 + 16 + 6 + 6 + 32 + 32 + 32 + 32 + 16;
  localparam int NP_W = 33;  // {recent, expiry}

  typedef enum logic [2:0] { K_NONE, K_SCAN, K_RESET, K_CNP, K_SENT, K_QUERY, K_CE } kind_t;

  // ---------------------------------------------------------------- time, init
  logic [31:0] now;
  assign now_cycle = now;
  logic [LOG_N:0] init_idx;
  assign init_done = init_idx[LOG_N];

  logic scan_slot, ext_slot;
  assign scan_slot = init_done && !now[0];
  assign ext_slot = init_done && now[0];
  logic [LOG_N-1:0] s_row;  // scanner row of this (even) or the previous cycle
  assign s_row = now[LOG_N:1];
  // s_row - 1, s_row + 1, s_row + 2, registers: now steps by one every cycle (and is 0
  // after rst), so next cycle's s_row is (now + 1) >> 1
  logic [LOG_N-1:0] s_row_prev, s_row_next, s_row_next2;
  logic [LOG_N-1:0] s_row_nc;
  assign s_row_nc = now[LOG_N:1] + LOG_N'(now[0]);
  always_ff @(posedge clk) begin
    s_row_prev <= s_row_nc - 1'b1;
    s_row_next <= s_row_nc + 1'b1;
    s_row_next2 <= s_row_nc + LOG_N'(2);
    if (rst) begin
      s_row_prev <= '1;
      s_row_next <= LOG_N'(1);
      s_row_next2 <= LOG_N'(2);
    end
  end

  // ---------------------------------------------------------------- configuration
  logic        cq_cnp_en, cq_dcqcn_en;
  logic [11:0] cq_us;
  logic [19:0] cq_ai, cq_hai, cq_min;
  logic [9:0]  cq_g, cq_init;
  logic [15:0] cq_k, cq_t, cq_i;
  logic [31:0] cq_b;
  logic [4:0]  cq_f;
  logic        cd_cnp_en, cd_dcqcn_en;
  logic [11:0] cd_us;
  logic [27:0] cd_ai, cd_hai, cd_min;  // Q20.8
  logic [9:0]  cd_g;
  logic [15:0] cd_init;                // Q0.16
  logic [31:0] cd_k, cd_t;             // cycles
  logic [31:0] cd_b;
  logic signed [29:0] cd_ai_room, cd_hai_room;  // LINE_Q - cd_ai, LINE_Q - cd_hai
  logic [31:0] cq_i_cycles;                     // the CNP interval in cycles (n1_exp)
  assign cq_i_cycles = 32'(cq_i) * 32'(cq_us);
  always_ff @(posedge clk) begin
    cq_cnp_en <= cfg_cnp_enable;
    cq_dcqcn_en <= cfg_dcqcn_enable;
    cq_us <= cfg_us_cycles;
    cq_ai <= cfg_dcqcn_rate_ai;
    cq_hai <= cfg_dcqcn_rate_hai;
    cq_min <= cfg_dcqcn_rate_min;
    cq_g <= cfg_dcqcn_g;
    cq_init <= cfg_dcqcn_alpha_init;
    cq_k <= cfg_dcqcn_alpha_us;
    cq_t <= cfg_dcqcn_rate_us;
    cq_i <= cfg_cnp_interval_us;
    cq_b <= cfg_dcqcn_byte_counter;
    cq_f <= cfg_dcqcn_stages;
    cd_cnp_en <= cq_cnp_en;
    cd_dcqcn_en <= cq_dcqcn_en;
    cd_us <= cq_us;
    cd_ai <= {cq_ai, 8'd0};
    cd_hai <= {cq_hai, 8'd0};
    cd_ai_room <= $signed({2'b00, LINE_Q}) - $signed({2'b00, cq_ai, 8'd0});
    cd_hai_room <= $signed({2'b00, LINE_Q}) - $signed({2'b00, cq_hai, 8'd0});
    if (cq_min == 20'd0) cd_min <= {20'd1, 8'd0};
    else if (cq_min > LINE_I) cd_min <= LINE_Q;
    else cd_min <= {cq_min, 8'd0};
    cd_g <= cq_g;
    cd_init <= {cq_init, 6'd0};
    cd_k <= 32'(cq_k) * 32'(cq_us);
    cd_t <= 32'(cq_t) * 32'(cq_us);
    cd_b <= cq_b;
  end

  // ---------------------------------------------------------------- input slots
  // One register per input: an input is taken (ready) when its slot is empty; the
  // operations are issued from the slots, so the arbitration and the hazard tests below
  // run on registers only (no input reaches them, nor the ready outputs).
  logic             q_ce_v, q_rst_v, q_cnp_v, q_sent_v, q_qry_v;
  logic [23:0]      q_ce_qpn, q_rst_qpn, q_cnp_qpn, q_sent_qpn, q_qry_qpn;
  logic             q_ce_oor, q_rst_oor, q_cnp_oor, q_sent_oor, q_qry_oor;  // qpn >= N
  logic [15:0]      q_sent_bytes;
  assign s_ce_ready = !q_ce_v;
  assign s_reset_ready = !q_rst_v;
  assign s_cnp_ready = !q_cnp_v;
  assign s_sent_ready = !q_sent_v;
  assign s_query_ready = !q_qry_v;

  // ---------------------------------------------------------------- issue (P0)
  // RP: the first full slot of reset, cnp, sent, query, on an odd cycle i, unless its row
  // is the scanner's of cycle i - 3 or i - 1 (written in P3 in cycles i and i + 2) or i + 1
  // or i + 3 (read before this operation's write in i + 3), or the row of the RP operation
  // issued in i - 2 (written in i + 1); then nothing is issued. NP: a reset (with its RP
  // issue) or else a CE (no reset waiting, not the scanner's rows of i - 1 and i + 1, the
  // CNP FIFO not full after the CNP request of the CE issued 2 cycles before).
  logic [LOG_N-1:0] rp_row_in, ce_row_in, rst_row, cnp_row, sent_row, qry_row;
  assign ce_row_in = q_ce_qpn[LOG_N-1:0];
  assign rst_row = q_rst_qpn[LOG_N-1:0];
  assign cnp_row = q_cnp_qpn[LOG_N-1:0];
  assign sent_row = q_sent_qpn[LOG_N-1:0];
  assign qry_row = q_qry_qpn[LOG_N-1:0];

  // RP pipeline stage registers (declared here for the hazard test)
  logic             p1_valid, p2_valid;
  kind_t            p1_kind, p2_kind;
  logic [LOG_N-1:0] p1_row, p2_row;

  // Each slot's hazard for the next cycle, registered: the slot's row then (this cycle's
  // input if the slot is empty now) against the scanner rows and the RP operation in P2
  // then. Only used on odd cycles, so computed on even ones: the scanner rows of the next
  // (odd) cycle are this cycle's s_row_prev .. s_row_next2, its P2 operation this cycle's P1.
  function automatic logic row_busy(input logic [LOG_N-1:0] r, input logic [LOG_N-1:0] srp,
                                    input logic [LOG_N-1:0] sr, input logic [LOG_N-1:0] srn,
                                    input logic [LOG_N-1:0] srn2, input logic p1e,
                                    input logic [LOG_N-1:0] p1r);
    row_busy = r == srp || r == sr || r == srn || r == srn2 || (p1e && r == p1r);
  endfunction
  logic             p1_ext;
  assign p1_ext = p1_valid && p1_kind != K_SCAN;
  logic [LOG_N-1:0] rst_row_nx, cnp_row_nx, sent_row_nx, qry_row_nx, ce_row_nx;
  assign rst_row_nx = q_rst_v ? rst_row : s_reset_qpn[LOG_N-1:0];
  assign cnp_row_nx = q_cnp_v ? cnp_row : s_cnp_qpn[LOG_N-1:0];
  assign sent_row_nx = q_sent_v ? sent_row : s_sent_qpn[LOG_N-1:0];
  assign qry_row_nx = q_qry_v ? qry_row : s_query_qpn[LOG_N-1:0];
  assign ce_row_nx = q_ce_v ? ce_row_in : s_ce_qpn[LOG_N-1:0];
  logic hz_rst, hz_cnp, hz_sent, hz_qry, hz_ce;
  always_ff @(posedge clk) begin
    hz_rst <= row_busy(rst_row_nx, s_row_prev, s_row, s_row_next, s_row_next2, p1_ext, p1_row);
    hz_cnp <= row_busy(cnp_row_nx, s_row_prev, s_row, s_row_next, s_row_next2, p1_ext, p1_row);
    hz_sent <= row_busy(sent_row_nx, s_row_prev, s_row, s_row_next, s_row_next2, p1_ext, p1_row);
    hz_qry <= row_busy(qry_row_nx, s_row_prev, s_row, s_row_next, s_row_next2, p1_ext, p1_row);
    hz_ce <= ce_row_nx == s_row || ce_row_nx == s_row_next;
  end

  logic go_rst, go_cnp, go_sent, go_qry, rp_go, go_ce;
  assign go_rst = ext_slot && q_rst_v && !hz_rst;
  assign go_cnp = ext_slot && !q_rst_v && q_cnp_v && !hz_cnp;
  assign go_sent = ext_slot && !q_rst_v && !q_cnp_v && q_sent_v && !hz_sent;
  assign go_qry = ext_slot && !q_rst_v && !q_cnp_v && !q_sent_v && q_qry_v && !hz_qry;
  assign rp_go = go_rst || go_cnp || go_sent || go_qry;

  logic [1:0] fifo_cnt;
  assign go_ce = ext_slot && q_ce_v && !q_rst_v && !hz_ce && fifo_cnt <= 2'd1;

  // the RP read address and the operation's fields: the first full slot's (the issue only
  // gates p1_valid)
  logic [23:0] rp_qpn_in;
  logic        rp_oor_in;
  kind_t       rp_kind_in;
  always_comb begin
    rp_kind_in = K_QUERY;
    rp_qpn_in = q_qry_qpn;
    rp_oor_in = q_qry_oor;
    if (q_rst_v) begin
      rp_kind_in = K_RESET;
      rp_qpn_in = q_rst_qpn;
      rp_oor_in = q_rst_oor;
    end else if (q_cnp_v) begin
      rp_kind_in = K_CNP;
      rp_qpn_in = q_cnp_qpn;
      rp_oor_in = q_cnp_oor;
    end else if (q_sent_v) begin
      rp_kind_in = K_SENT;
      rp_qpn_in = q_sent_qpn;
      rp_oor_in = q_sent_oor;
    end
  end
  assign rp_row_in = rp_qpn_in[LOG_N-1:0];

  always_ff @(posedge clk) begin
    if (!q_ce_v) begin
      q_ce_v <= s_ce_valid;
      q_ce_qpn <= s_ce_qpn;
      q_ce_oor <= s_ce_qpn[23:LOG_N] != '0;
    end else if (go_ce) begin
      q_ce_v <= 1'b0;
    end
    if (!q_rst_v) begin
      q_rst_v <= s_reset_valid;
      q_rst_qpn <= s_reset_qpn;
      q_rst_oor <= s_reset_qpn[23:LOG_N] != '0;
    end else if (go_rst) begin
      q_rst_v <= 1'b0;
    end
    if (!q_cnp_v) begin
      q_cnp_v <= s_cnp_valid;
      q_cnp_qpn <= s_cnp_qpn;
      q_cnp_oor <= s_cnp_qpn[23:LOG_N] != '0;
    end else if (go_cnp) begin
      q_cnp_v <= 1'b0;
    end
    if (!q_sent_v) begin
      q_sent_v <= s_sent_valid;
      q_sent_qpn <= s_sent_qpn;
      q_sent_oor <= s_sent_qpn[23:LOG_N] != '0;
      q_sent_bytes <= s_sent_bytes;
    end else if (go_sent) begin
      q_sent_v <= 1'b0;
    end
    if (!q_qry_v) begin
      q_qry_v <= s_query_valid;
      q_qry_qpn <= s_query_qpn;
      q_qry_oor <= s_query_qpn[23:LOG_N] != '0;
    end else if (go_qry) begin
      q_qry_v <= 1'b0;
    end
    if (rst || soft_reset) begin
      q_ce_v <= 1'b0;
      q_rst_v <= 1'b0;
      q_cnp_v <= 1'b0;
      q_sent_v <= 1'b0;
      q_qry_v <= 1'b0;
    end
  end

  // ---------------------------------------------------------------- RP table
  (* ram_style = "block" *) logic [RP_W-1:0] rp_mem [N];
  logic [RP_W-1:0]  rp_rd;
  logic             rp_we;
  logic [LOG_N-1:0] rp_wa;
  logic [RP_W-1:0]  rp_wd;
  always_ff @(posedge clk) begin
    rp_rd <= rp_mem[scan_slot ? s_row : rp_row_in];
    if (rp_we) rp_mem[rp_wa] <= rp_wd;
  end

  logic [23:0] p1_qpn;
  logic        p1_oor;
  logic [15:0] p1_bytes;
  logic [32:0] p1_b_need;  // BYTE_COUNTER - bytes: the byte count that fires (< 0: any)
  logic [5:0]  p1_ts_lim, p1_bs_lim;  // STAGES, + 1 unless the operation counts that stage
  logic [31:0] p1_t;
  always_ff @(posedge clk) begin
    p1_valid <= scan_slot || rp_go;
    p1_kind <= scan_slot ? K_SCAN : rp_kind_in;
    p1_row <= scan_slot ? s_row : rp_row_in;
    p1_qpn <= rp_qpn_in;
    p1_oor <= !scan_slot && rp_oor_in;
    p1_bytes <= q_sent_bytes;
    p1_b_need <= {1'b0, cq_b} - {17'd0, q_sent_bytes};  // (cq_*: cd_* as P1 sees them)
    p1_ts_lim <= {1'b0, cq_f} + 6'(!scan_slot);
    p1_bs_lim <= {1'b0, cq_f} + 6'(scan_slot || rp_kind_in != K_SENT);
    p1_t <= now;
    if (rst || soft_reset) p1_valid <= 1'b0;
  end

  // ---------------------------------------------------------------- RP P1: products, events
  logic        r_lim;
  logic [27:0] r_rc, r_rt;
  logic [15:0] r_alpha;
  logic [5:0]  r_ts, r_bs;
  logic [31:0] r_bc, r_da, r_dr, r_debt;
  logic [15:0] r_tp;
  // (the row as read, also for an out-of-range QPN: its operation writes nothing, and its
  // answer is "unlimited", made at the output registers)
  assign {r_lim, r_rc, r_rt, r_alpha, r_ts, r_bs, r_bc, r_da, r_dr, r_debt, r_tp} = rp_rd;

  logic [27:0] rc_eff;
  logic [15:0] alpha_eff;
  assign rc_eff = r_lim ? r_rc : LINE_Q;
  assign alpha_eff = r_lim ? r_alpha : cd_init;

  logic [15:0] dt;
  assign dt = p1_t[15:0] - r_tp;
  logic [35:0] prod_pace;
  assign prod_pace = 36'(r_rc[27:8]) * 36'(dt);
  logic [27:0] cost;  // bytes * us (times 8 below)
  assign cost = 28'(p1_bytes) * 28'(cd_us);
  logic [43:0] prod_cut;
  assign prod_cut = 44'(rc_eff) * 44'(alpha_eff);
  logic [16:0] a_op;
  assign a_op = p1_kind == K_CNP ? 17'h10000 - 17'(alpha_eff) : 17'(r_alpha);
  logic [26:0] prod_a;
  assign prod_a = 27'(a_op) * 27'(cd_g);

  logic [31:0] t_da, t_dr;  // now - deadline
  assign t_da = p1_t - r_da;
  assign t_dr = p1_t - r_dr;
  logic fire_a, fire_r, fire_b;
  assign fire_a = p1_kind == K_SCAN && r_lim && !t_da[31];
  assign fire_r = p1_kind == K_SCAN && r_lim && !t_dr[31];
  logic [32:0] bsum;
  assign bsum = {1'b0, r_bc} + {17'd0, p1_bytes};
  // bsum >= cd_b as the count against BYTE_COUNTER - bytes, subtracted in P0
  assign fire_b = p1_kind == K_SENT && r_lim && (p1_b_need[32] || r_bc >= p1_b_need[31:0]);
  // P2's deadline tests, x = deadline + period - now > 0, as the sign of x - 1 = deadline +
  // period + ~now (one three-operand sum): the same but for x = 2^31, and a test is used
  // only when its deadline has come (now - deadline in [0, 2^31)), so x is in
  // (period - 2^31, period], period < 2^28
  logic [31:0] da_k_t1, dr_k_t1;
  assign da_k_t1 = r_da + cd_k + ~p1_t;
  assign dr_k_t1 = r_dr + cd_t + ~p1_t;

  // the phase of a rate increase caused by this operation
  logic [5:0] ts1, bs1;
  assign ts1 = (p1_kind == K_SCAN && r_ts != 6'd63) ? r_ts + 6'd1 : r_ts;
  assign bs1 = (p1_kind == K_SENT && r_bs != 6'd63) ? r_bs + 6'd1 : r_bs;
  logic [27:0] rt_ai_s, rt_hai_s;  // (used when they do not pass LINE_Q: no carry out)
  assign rt_ai_s = r_rt + cd_ai;
  assign rt_hai_s = r_rt + cd_hai;
  // (ts1 <= cd_f as r_ts < the limit set in P0: cd_f < 63, so a count at 63 is above it
  // either way; bs1 alike; the sums against LINE_Q as r_rt against LINE_Q - increase, kept
  // ready with the configuration: the compares run beside the adds, not after them)
  logic ts_le, bs_le, ai_over, hai_over;
  assign ts_le = r_ts < p1_ts_lim;
  assign bs_le = r_bs < p1_bs_lim;
  assign ai_over = $signed({2'b00, r_rt}) > cd_ai_room;
  assign hai_over = $signed({2'b00, r_rt}) > cd_hai_room;
  // the new Rt, one of four (one-hot selects)
  logic sel_keep, sel_line, sel_ai, sel_hai;
  assign sel_keep = ts_le && bs_le;
  assign sel_line = (ts_le != bs_le && ai_over) || (!ts_le && !bs_le && hai_over);
  assign sel_ai = ts_le != bs_le && !ai_over;
  assign sel_hai = !ts_le && !bs_le && !hai_over;
  logic [27:0] rt_inc;
  assign rt_inc = (r_rt & {28{sel_keep}}) | (LINE_Q & {28{sel_line}}) | (rt_ai_s & {28{sel_ai}})
                  | (rt_hai_s & {28{sel_hai}});
  // the pacing debt after this operation: debt + cost (a sent report's) - pace, 0 when paid
  // (pace >= debt, P2) and cost then; the sum here, the difference in P2
  logic [30:0] d_add;
  assign d_add = p1_kind == K_SENT ? {cost, 3'd0} : 31'd0;

  // P1 -> P2 registers
  logic [23:0] p2_qpn;
  logic        p2_oor, p2_lim, p2_fire_a, p2_fire_r, p2_fire_b, p2_cut_en;
  logic [27:0] p2_rc, p2_rt, p2_rc_eff, p2_rt_inc, p2_min;
  logic [15:0] p2_alpha, p2_alpha_eff;
  logic [5:0]  p2_ts, p2_bs, p2_ts1, p2_bs1;
  logic [31:0] p2_bc, p2_debt, p2_da, p2_dr;
  logic [32:0] p2_bsum;
  logic [35:0] p2_prod_pace;
  logic [30:0] p2_d_add;
  logic [32:0] p2_debt_add;
  logic        p2_debt_zero;  // a CNP's first cut: the debt starts at 0
  logic [26:0] p2_cut;
  logic [16:0] p2_da_step;  // (a_op * g) >> 10
  logic [31:0] p2_t, p2_da_k, p2_dr_k, p2_ta_k, p2_tr_k;
  logic        p2_da_later, p2_dr_later;  // deadline + period > now
  logic [29:0] p2_rc_room;  // rc_eff - min
  always_ff @(posedge clk) begin
    p2_valid <= p1_valid;
    p2_kind <= p1_kind;
    p2_row <= p1_row;
    p2_qpn <= p1_qpn;
    p2_oor <= p1_oor;
    p2_lim <= r_lim;
    p2_fire_a <= fire_a;
    p2_fire_r <= fire_r;
    p2_fire_b <= fire_b;
    p2_cut_en <= cd_dcqcn_en;
    p2_rc <= r_rc;
    p2_rt <= r_rt;
    p2_rc_eff <= rc_eff;
    p2_rt_inc <= rt_inc;
    p2_min <= cd_min;
    p2_alpha <= r_alpha;
    p2_alpha_eff <= alpha_eff;
    p2_ts <= r_ts;
    p2_bs <= r_bs;
    p2_ts1 <= ts1;
    p2_bs1 <= bs1;
    p2_bc <= r_bc;
    p2_bsum <= bsum;
    p2_debt <= r_debt;
    p2_da <= r_da;
    p2_dr <= r_dr;
    p2_prod_pace <= prod_pace;
    p2_cut <= prod_cut[43:17];
    p2_da_step <= prod_a[26:10];
    p2_t <= p1_t;
    p2_da_k <= r_da + cd_k;
    p2_dr_k <= r_dr + cd_t;
    p2_ta_k <= p1_t + cd_k;
    p2_tr_k <= p1_t + cd_t;
    p2_da_later <= !da_k_t1[31];
    p2_dr_later <= !dr_k_t1[31];
    p2_d_add <= d_add;
    p2_rc_room <= {2'b00, rc_eff} - {2'b00, cd_min};
    p2_debt_add <= {1'b0, r_debt} + {2'b00, d_add};
    p2_debt_zero <= p1_kind == K_CNP && !r_lim;
    if (rst || soft_reset) p2_valid <= 1'b0;
  end

  // ---------------------------------------------------------------- RP P2: new row, answer
  logic paid;
  assign paid = p2_prod_pace >= {4'd0, p2_debt};
  // debt + cost - pace, saturated (cost is 0 but for a sent report): below 2^33 when not
  // paid (pace < debt < 2^32), so exact modulo 2^33; beside the paid compare
  logic [32:0] debt_np;
  assign debt_np = p2_debt_add - p2_prod_pace[32:0];
  logic [31:0] debt_new;
  assign debt_new = p2_debt_zero ? 32'd0 : paid ? {1'b0, p2_d_add} : debt_np[31:0] | {32{debt_np[32]}};
  logic [28:0] rc_sum;
  assign rc_sum = {1'b0, p2_rt_inc} + {1'b0, p2_rc} + 29'd1;
  logic [27:0] rc_avg;
  assign rc_avg = rc_sum[28:1];
  // back at line rate: rc_avg >= LINE_Q, i.e. rt_inc + Rc >= 2 LINE_Q - 1, beside rc_sum
  logic [29:0] rel_d;
  assign rel_d = {2'b00, p2_rt_inc} + {2'b00, p2_rc} - REL_Q;
  logic release_q;
  assign release_q = !rel_d[29];
  logic [27:0] rc_cut;
  assign rc_cut = p2_rc_eff - {1'b0, p2_cut};
  logic [29:0] cut_low;  // rc_cut - min beside rc_cut: below the minimum by the sign
  assign cut_low = p2_rc_room - {3'b000, p2_cut};
  logic [31:0] da_next, dr_next;  // deadline + period, or now + period when that is not later
  assign da_next = p2_da_later ? p2_da_k : p2_ta_k;
  assign dr_next = p2_dr_later ? p2_dr_k : p2_tr_k;

  // fields of the new row
  logic        n_lim;
  logic [27:0] n_rc, n_rt;
  logic [15:0] n_alpha;
  logic [5:0]  n_ts, n_bs;
  logic [31:0] n_bc, n_da, n_dr, n_debt;
  logic        n_clear, n_we;
  always_comb begin
    n_lim = p2_lim;
    n_rc = p2_rc;
    n_rt = p2_rt;
    n_alpha = p2_alpha;
    n_ts = p2_ts;
    n_bs = p2_bs;
    n_bc = p2_bc;
    n_da = p2_da;
    n_dr = p2_dr;
    n_debt = debt_new;
    n_clear = 1'b0;
    n_we = 1'b0;
    case (p2_kind)
      K_SCAN: begin
        n_we = p2_lim;
        if (p2_fire_a) begin
          n_alpha = p2_alpha - p2_da_step[15:0];
          n_da = da_next;
        end
        if (p2_fire_r) begin
          n_ts = p2_ts1;
          n_dr = dr_next;
          n_rt = p2_rt_inc;
          n_rc = rc_avg;
          n_clear = release_q;
        end
      end
      K_SENT: begin
        n_we = p2_lim;
        if (p2_fire_b) begin
          n_bc = 32'd0;
          n_bs = p2_bs1;
          n_rt = p2_rt_inc;
          n_rc = rc_avg;
          n_clear = release_q;
        end else begin
          n_bc = p2_bsum[31:0];
        end
      end
      K_CNP: begin
        n_we = p2_cut_en;
        n_lim = 1'b1;
        n_rt = p2_rc_eff;
        n_rc = cut_low[29] ? p2_min : rc_cut;
        n_alpha = p2_alpha_eff + p2_da_step[15:0];
        n_ts = 6'd0;
        n_bs = 6'd0;
        n_bc = 32'd0;
        n_da = p2_ta_k;
        n_dr = p2_tr_k;
      end
      K_RESET: begin
        n_we = 1'b1;
        n_clear = 1'b1;
      end
      default: ;
    endcase
  end

  // P3: the row write, registered (the all-zero row of a clear or of the init sweep as one
  // mask on the fields)
  logic             p3_we, p3_clear;
  logic [LOG_N-1:0] p3_row;
  logic [RP_W-1:0]  p3_wd;
  always_ff @(posedge clk) begin
    p3_we <= p2_valid && n_we && !p2_oor;
    p3_row <= p2_row;
    p3_clear <= n_clear;
    p3_wd <= {n_lim, n_rc, n_rt, n_alpha, n_ts, n_bs, n_bc, n_da, n_dr, n_debt, p2_t[15:0]};
    if (rst || soft_reset) p3_we <= 1'b0;
  end
  always_comb begin
    rp_we = p3_we;
    rp_wa = p3_row;
    if (!init_done) begin
      rp_we = 1'b1;
      rp_wa = init_idx[LOG_N-1:0];
    end
    rp_wd = p3_wd & ~{RP_W{p3_clear || !init_done}};
  end

  always_ff @(posedge clk) begin
    m_pace_valid <= p2_valid && p2_kind == K_QUERY;
    m_pace_qpn <= p2_qpn;
    m_pace_allowed <= p2_oor || !p2_lim || paid;
    m_pace_limited <= !p2_oor && p2_lim;
    m_pace_rc <= p2_oor ? 28'd0 : p2_rc;
    m_pace_rt <= p2_oor ? 28'd0 : p2_rt;
    m_pace_alpha <= p2_oor ? 16'd0 : p2_alpha;
    if (rst || soft_reset) m_pace_valid <= 1'b0;
    if (rst) begin
      m_pace_qpn <= 24'd0;
      m_pace_allowed <= 1'b0;
      m_pace_limited <= 1'b0;
      m_pace_rc <= 28'd0;
      m_pace_rt <= 28'd0;
      m_pace_alpha <= 16'd0;
    end
  end

  // ---------------------------------------------------------------- NP table
  (* ram_style = "block" *) logic [NP_W-1:0] np_mem [N];
  logic [NP_W-1:0]  np_rd;
  logic             np_we;
  logic [LOG_N-1:0] np_wa;
  logic [NP_W-1:0]  np_wd;
  logic [LOG_N-1:0] np_row_in;
  assign np_row_in = q_rst_v ? rst_row : ce_row_in;
  // The write is registered (the BRAM's data input no longer follows its own read output
  // through the expiry subtract) and lands a cycle later; a read of the row in the cycle
  // it waits gets the written entry forwarded, so every read sees what it saw before.
  logic             np_we_q, np_fwd;
  logic [LOG_N-1:0] np_wa_q, np_ra;
  logic [NP_W-1:0]  np_wd_q, np_fwd_d, np_q;
  assign np_ra = scan_slot ? s_row : np_row_in;
  always_ff @(posedge clk) begin
    np_q <= np_mem[np_ra];
    if (np_we_q) np_mem[np_wa_q] <= np_wd_q;
    np_we_q <= np_we;
    np_wa_q <= np_wa;
    np_wd_q <= np_wd;
    np_fwd <= np_we_q && np_wa_q == np_ra;
    np_fwd_d <= np_wd_q;
    if (rst) np_we_q <= 1'b0;
  end
  assign np_rd = np_fwd ? np_fwd_d : np_q;

  logic             n1_valid;
  kind_t            n1_kind;
  logic [LOG_N-1:0] n1_row;
  logic [23:0]      n1_qpn;
  logic             n1_oor;
  logic [31:0]      n1_t, n1_exp;  // now, and now + CNP_INTERVAL (cycles, with the cd_* timing)
  always_ff @(posedge clk) begin
    n1_valid <= scan_slot || go_ce || go_rst;
    n1_kind <= scan_slot ? K_SCAN : q_rst_v ? K_RESET : K_CE;
    n1_row <= scan_slot ? s_row : np_row_in;
    n1_qpn <= q_ce_qpn;
    n1_oor <= !scan_slot && (q_rst_v ? q_rst_oor : q_ce_oor);
    n1_t <= now;
    n1_exp <= now + cq_i_cycles;
    if (rst || soft_reset) n1_valid <= 1'b0;
  end

  logic        e_recent;
  logic [31:0] e_exp, e_t_exp;
  assign {e_recent, e_exp} = np_rd;
  assign e_t_exp = n1_t - e_exp;  // now - expiry: >= 0 when expired
  logic send_cnp;
  assign send_cnp = n1_valid && n1_kind == K_CE && !n1_oor && cd_cnp_en && !(e_recent && e_t_exp[31]);

  always_comb begin
    np_we = 1'b0;
    np_wa = n1_row;
    np_wd = '0;
    if (n1_valid && !n1_oor) begin
      case (n1_kind)
        K_SCAN: if (e_recent && !e_t_exp[31]) begin
          np_we = 1'b1;
          np_wd = {1'b0, e_exp};
        end
        K_RESET: np_we = 1'b1;
        default: if (send_cnp) begin
          np_we = 1'b1;
          np_wd = {1'b1, n1_exp};
        end
      endcase
    end
    if (!init_done) begin
      np_we = 1'b1;
      np_wa = init_idx[LOG_N-1:0];
      np_wd = '0;
    end
  end

  // CNP request FIFO (2 entries)
  logic [23:0] fifo_q1;
  logic        pop;
  assign m_cnp_valid = fifo_cnt != 2'd0;
  assign pop = m_cnp_valid && m_cnp_ready;
  always_ff @(posedge clk) begin
    case ({send_cnp, pop})
      2'b10: begin
        if (fifo_cnt == 2'd0) m_cnp_qpn <= n1_qpn;
        else fifo_q1 <= n1_qpn;
        fifo_cnt <= fifo_cnt + 2'd1;
      end
      2'b01: begin
        m_cnp_qpn <= fifo_q1;
        fifo_cnt <= fifo_cnt - 2'd1;
      end
      2'b11: begin
        if (fifo_cnt == 2'd1) m_cnp_qpn <= n1_qpn;
        else begin
          m_cnp_qpn <= fifo_q1;
          fifo_q1 <= n1_qpn;
        end
      end
      default: ;
    endcase
    if (rst || soft_reset) fifo_cnt <= 2'd0;
    if (rst) begin
      m_cnp_qpn <= 24'd0;
      fifo_q1 <= 24'd0;
    end
  end

  // ---------------------------------------------------------------- time, init sweep
  always_ff @(posedge clk) begin
    now <= now + 32'd1;
    if (!init_done) init_idx <= init_idx + 1'b1;
    if (rst || soft_reset) init_idx <= '0;
    if (rst) now <= 32'd0;
  end

  logic unused;
  assign unused = ^{prod_cut[16:0], prod_a[9:0], p2_da_step[16], rc_sum[0], t_da[30:0], t_dr[30:0],
                    p2_bsum[32], e_t_exp[30:0], cd_b, da_k_t1[30:0], dr_k_t1[30:0], rel_d[28:0], cut_low[28:0], p2_t[31:16]};

endmodule

`resetall
