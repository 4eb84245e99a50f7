// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_mr_check: the memory region table (BRAM) with the L_Key/R_Key check pipeline and the
// MR commands. Requests in order, each with one result: op 0 checks that the key names a valid
// region of the PD allowing every access bit in need and containing [va, va + len), and gives
// status 0 with the DMA address or the first failure (1 key, 2 PD, 3 access, 4 bounds; len 0
// passes); op 1 invalidates the region (SEND with Invalidate). Commands MR_WRITE, MR_READ,
// MR_INVALIDATE wait for the pipeline and hold requests off (about 6 cycles). Reset clears one
// entry per cycle. Model: engine::mr_check, wrapped by blocks::mr_check; docs/engine-hdl.md.
// Ports: s_axis_req (roce_rec_pkg::mr_req_t) with s_axis_req_user/tvalid/tready, m_axis_res
//   (mr_res_t) with m_axis_res_user/tvalid/tready, cmd_* (from the command router), init_done.
// Latency: a request accepted in c has its result valid in c+4 (accept, A, B, C, D).
// Throughput: one check per cycle; an invalidate holds further requests for 3 cycles; the
//   pipeline stalls while a result is not taken (s_axis_req_tready follows m_axis_res_tready).
//
// Parameters:
//   LOG_N   log2 of the number of entries (CAPS.LOG_MAX_MR; default 10 = 1024).
//   USER_W  width of the user bits carried from request to result.

`resetall
`default_nettype none

module roce_mr_check #(
  parameter int LOG_N = 10,
  parameter int USER_W = 16
) (
  input  wire logic              clk,
  input  wire logic              rst,
  input  wire logic              soft_reset,
  output      logic              init_done,

  input  wire roce_rec_pkg::mr_req_t s_axis_req,
  input  wire logic [USER_W-1:0] s_axis_req_user,
  input  wire logic              s_axis_req_tvalid,
  output      logic              s_axis_req_tready,

  output      roce_rec_pkg::mr_res_t m_axis_res,
  output      logic [USER_W-1:0] m_axis_res_user,
  output      logic              m_axis_res_tvalid,
  input  wire logic              m_axis_res_tready,

  input  wire logic              cmd_valid,
  output      logic              cmd_ready,
  input  wire logic [7:0]        cmd_opcode,
  input  wire logic [23:0]       cmd_index,
  input  wire logic [511:0]      cmd_data,
  output      logic              cmd_done,
  output      logic [7:0]        cmd_error,
  output      logic              cmd_rdata_we,
  output      logic [511:0]      cmd_rdata
);

  localparam int N = 1 << LOG_N;
  // entry: {valid, access[3:0], tag[7:0], pd[31:0], iova[63:0], len[63:0], va[63:0],
  //         end[64:0] (va + len, bit 64 = wrapped), delta[63:0] (iova - va)}
  localparam int E_W = 1 + 4 + 8 + 32 + 192 + 65 + 64;

  localparam logic [2:0] ST_OK = 3'd0;
  localparam logic [2:0] ST_KEY = 3'd1;
  localparam logic [2:0] ST_PD = 3'd2;
  localparam logic [2:0] ST_ACCESS = 3'd3;
  localparam logic [2:0] ST_BOUNDS = 3'd4;

  (* ram_style = "block" *) logic [E_W-1:0] mem [N];

  // ---------------------------------------------------------------- init sweep
  logic [LOG_N:0] init_idx;  // init_idx[LOG_N] = done
  assign init_done = init_idx[LOG_N];

  // ---------------------------------------------------------------- pipeline state
  typedef struct packed {
    logic              op;
    logic [31:0]       key;
    logic [31:0]       pd;
    logic [63:0]       va;
    logic [31:0]       len;
    logic [3:0]        need;
    logic [USER_W-1:0] user;
  } req_a_t;

  typedef struct packed {
    logic              op;
    logic [31:0]       key;
    logic [31:0]       pd;
    logic [63:0]       va;
    logic [3:0]        need;
    logic [USER_W-1:0] user;
    logic [64:0]       req_end;  // va + len, bit 64 = wrapped
    logic              zero;     // len = 0
    logic              idx_ok;   // key >> 8 < N
  } req_b_t;

  logic        a_v, b_v, c_v;
  req_a_t      a_r;
  req_b_t      b_r;
  logic        c_op;
  logic [LOG_N-1:0] c_idx;
  logic [USER_W-1:0] c_user;
  logic [E_W-1:0] rd_q, rd_q2;

  // stage C results (the D stage turns them into the status and dma)
  logic        c_zero, c_key_ok, c_pd_ok, c_acc_ok, c_lo_ok, c_hi_ok;
  logic [32:0] c_dma_lo;             // low half of va + delta, bit 32 = carry
  logic [31:0] c_dma_hi0, c_dma_hi1; // high half without / with that carry
  logic        c_inv_hit;  // invalidate that clears its entry

  logic ce;  // the pipeline advances
  assign ce = !m_axis_res_tvalid || m_axis_res_tready;

  // command state
  typedef enum logic [2:0] { C_IDLE, C_DRAIN, C_RD, C_WAIT, C_EXEC } cstate_t;
  cstate_t cst;
  logic [7:0]   k_op;
  logic [23:0]  k_index;
  logic [511:0] k_data;

  logic inv_busy;
  assign inv_busy = (a_v && a_r.op) || (b_v && b_r.op) || (c_v && c_op);
  assign s_axis_req_tready = ce && init_done && cst == C_IDLE && !inv_busy;
  assign cmd_ready = init_done && cst == C_IDLE;

  logic s_fire;
  assign s_fire = s_axis_req_tvalid && s_axis_req_tready;

  // BRAM read port: requests in normal operation, the command's entry in C_RD
  logic [LOG_N-1:0] rd_addr;
  logic             rd_en;
  assign rd_addr = cst == C_RD ? k_index[LOG_N-1:0] : s_axis_req.key[8 +: LOG_N];
  assign rd_en = ce || cst == C_RD;

  // BRAM write port: init sweep, invalidate leaving C, command execution
  logic             wr_en;
  logic [LOG_N-1:0] wr_addr;
  logic [E_W-1:0]   wr_data;

  // ---------------------------------------------------------------- stage A: request end
  // va + len as a 32-bit add and a high-half select (carry-select)
  logic [32:0] a_end_lo, a_end_hi1;
  logic [64:0] a_end;
  assign a_end_lo = {1'b0, a_r.va[31:0]} + {1'b0, a_r.len};
  assign a_end_hi1 = {1'b0, a_r.va[63:32]} + 33'd1;
  assign a_end = a_end_lo[32] ? {a_end_hi1, a_end_lo[31:0]} : {1'b0, a_r.va[63:32], a_end_lo[31:0]};

  // ---------------------------------------------------------------- stage C compares
  logic            e_valid;
  logic [3:0]      e_access;
  logic [7:0]      e_tag;
  logic [31:0]     e_pd;
  logic [63:0]     e_iova, e_len, e_va, e_delta;
  logic [64:0]     e_end;
  assign {e_valid, e_access, e_tag, e_pd, e_iova, e_len, e_va, e_end, e_delta} = rd_q2;

  logic        key_ok, pd_ok, acc_ok, lo_ok, hi_ok;
  assign key_ok = b_r.idx_ok && e_valid && e_tag == b_r.key[7:0];
  assign pd_ok = e_pd == b_r.pd;
  assign acc_ok = (e_access & b_r.need) == b_r.need;
  // 64-bit compares as two 32-bit ones
  logic va_hi_gt, va_hi_eq, va_lo_ge, end_hi_lt, end_hi_eq, end_lo_le;
  assign va_hi_gt = b_r.va[63:32] > e_va[63:32];
  assign va_hi_eq = b_r.va[63:32] == e_va[63:32];
  assign va_lo_ge = b_r.va[31:0] >= e_va[31:0];
  assign end_hi_lt = b_r.req_end[63:32] < e_end[63:32];
  assign end_hi_eq = b_r.req_end[63:32] == e_end[63:32];
  assign end_lo_le = b_r.req_end[31:0] <= e_end[31:0];
  assign lo_ok = va_hi_gt || (va_hi_eq && va_lo_ge);
  // the region's end saturates at 2^64 (e_end[64]); the request's must not wrap
  assign hi_ok = !b_r.req_end[64] && (e_end[64] || end_hi_lt || (end_hi_eq && end_lo_le));

  always_ff @(posedge clk) begin
    if (rd_en) rd_q <= mem[rd_addr];
    if (wr_en) mem[wr_addr] <= wr_data;
  end

  // ---------------------------------------------------------------- stage D: the result
  logic        d_ok;
  assign d_ok = !c_op && !c_zero && c_key_ok && c_pd_ok && c_acc_ok && c_lo_ok && c_hi_ok;

  always_ff @(posedge clk) begin
    // BRAM output register; in C_WAIT it takes the command's entry (A..C are empty then)
    if (ce || cst == C_WAIT) rd_q2 <= rd_q;
    if (ce) begin
      // accept -> A (the fields only matter with a_v)
      a_v <= s_fire;
      a_r.op <= s_axis_req.op;
      a_r.key <= s_axis_req.key;
      a_r.pd <= s_axis_req.pd;
      a_r.va <= s_axis_req.va;
      a_r.len <= s_axis_req.len;
      a_r.need <= s_axis_req.need;
      a_r.user <= s_axis_req_user;
      // A -> B
      b_v <= a_v;
      b_r.op <= a_r.op;
      b_r.key <= a_r.key;
      b_r.pd <= a_r.pd;
      b_r.va <= a_r.va;
      b_r.need <= a_r.need;
      b_r.user <= a_r.user;
      b_r.req_end <= a_end;
      b_r.zero <= a_r.len == 32'd0;
      b_r.idx_ok <= a_r.key[31:8] < 24'(N);
      // B -> C
      c_v <= b_v;
      c_op <= b_r.op;
      c_idx <= b_r.key[8 +: LOG_N];
      c_user <= b_r.user;
      c_zero <= b_r.zero;
      c_key_ok <= key_ok;
      c_pd_ok <= pd_ok;
      c_acc_ok <= acc_ok;
      c_lo_ok <= lo_ok;
      c_hi_ok <= hi_ok;
      c_inv_hit <= b_v && b_r.op && key_ok && pd_ok;
      // dma = iova + (va - region va) = va + delta, as two 32-bit halves
      c_dma_lo <= {1'b0, b_r.va[31:0]} + {1'b0, e_delta[31:0]};
      c_dma_hi0 <= b_r.va[63:32] + e_delta[63:32];
      c_dma_hi1 <= 32'(({b_r.va[63:32], 1'b1} + {e_delta[63:32], 1'b1}) >> 1);
      // C -> D (result): the first failing check; dma only for a passing check
      m_axis_res_tvalid <= c_v;
      if (c_op) m_axis_res.status <= !c_key_ok ? ST_KEY : !c_pd_ok ? ST_PD : ST_OK;
      else if (c_zero) m_axis_res.status <= ST_OK;
      else m_axis_res.status <= !c_key_ok ? ST_KEY : !c_pd_ok ? ST_PD : !c_acc_ok ? ST_ACCESS
                              : !(c_lo_ok && c_hi_ok) ? ST_BOUNDS : ST_OK;
      m_axis_res.dma <= !d_ok ? 64'd0
                      : {c_dma_lo[32] ? c_dma_hi1 : c_dma_hi0, c_dma_lo[31:0]};
      m_axis_res_user <= c_user;
    end
    if (rst || soft_reset) begin
      a_v <= 1'b0;
      b_v <= 1'b0;
      c_v <= 1'b0;
      c_inv_hit <= 1'b0;
      m_axis_res_tvalid <= 1'b0;
    end
  end

  // ---------------------------------------------------------------- commands
  // MrCtx fields of the command's data
  logic [63:0] d_va, d_len, d_iova;
  logic [31:0] d_pd, d_key;
  logic [3:0]  d_access;
  logic        d_valid;
  assign d_va = k_data[8*roce_desc_pkg::MR_CTX_VA_OFF +: 64];
  assign d_len = k_data[8*roce_desc_pkg::MR_CTX_LEN_OFF +: 64];
  assign d_iova = k_data[8*roce_desc_pkg::MR_CTX_IOVA_OFF +: 64];
  assign d_pd = k_data[8*roce_desc_pkg::MR_CTX_PD_OFF +: 32];
  assign d_key = k_data[8*roce_desc_pkg::MR_CTX_KEY_OFF +: 32];
  assign d_access = k_data[8*roce_desc_pkg::MR_CTX_ACCESS_OFF +: 4];
  assign d_valid = k_data[8*roce_desc_pkg::MR_CTX_VALID_OFF];
  logic d_bad_attr;  // what MrCtx::decode refuses (generated from the contract)
  assign d_bad_attr = roce_desc_pkg::mr_ctx_bad(k_data);
  logic k_index_ok;
  assign k_index_ok = k_index[23:LOG_N] == '0;

  // Everything C_EXEC needs from the command alone is registered from k_op, k_index and
  // k_data every cycle: they are stable from C_DRAIN on and C_EXEC is at least three cycles
  // after they were loaded, so these registers hold the command's values by then (the
  // outcome, two register stages from k_data, from the cycle before C_EXEC on).
  //   the derived entry fields end = va + len and delta = iova - va: 32-bit halves here, the
  //   high half selected by the low carry in C_EXEC
  logic [32:0] k_end_lo, k_end_hi0, k_end_hi1;
  logic [32:0] k_dl_lo;
  logic [31:0] k_dl_hi0, k_dl_hi1;
  logic [64:0] d_end;
  logic [63:0] d_delta;
  //   the outcome: error code, MR_READ's rdata strobe, and which write it makes
  logic [7:0]  k_err;
  logic        k_rd_we;
  logic        k_wr_ctx;    // MR_WRITE of a valid region: write the entry
  logic        k_wr_clr;    // MR_WRITE with valid = 0: clear the entry if its tag matches
  logic        k_inval;     // MR_INVALIDATE in range: clear the entry
  //   (two register stages: the attribute and key checks, then the outcome)
  logic        k_bad_attr, k_key_ok;
  always_ff @(posedge clk) begin
    k_bad_attr <= d_bad_attr;
    k_key_ok <= d_key[31:8] == k_index;
    k_end_lo <= {1'b0, d_va[31:0]} + {1'b0, d_len[31:0]};
    k_end_hi0 <= {1'b0, d_va[63:32]} + {1'b0, d_len[63:32]};
    k_end_hi1 <= 33'(({1'b0, d_va[63:32], 1'b1} + {1'b0, d_len[63:32], 1'b1}) >> 1);
    // iova - va = iova + ~va + 1
    k_dl_lo <= 33'(({1'b0, d_iova[31:0], 1'b1} + {1'b0, ~d_va[31:0], 1'b1}) >> 1);
    k_dl_hi0 <= d_iova[63:32] + ~d_va[63:32];
    k_dl_hi1 <= 32'(({d_iova[63:32], 1'b1} + {~d_va[63:32], 1'b1}) >> 1);
    k_err <= roce_regs_pkg::CMD_ERR_OK;
    k_rd_we <= 1'b0;
    k_wr_ctx <= 1'b0;
    k_wr_clr <= 1'b0;
    k_inval <= 1'b0;
    case (k_op)
      roce_regs_pkg::CMD_OP_MR_WRITE:
        if (k_bad_attr) k_err <= roce_regs_pkg::CMD_ERR_BAD_ATTR;
        else if (!k_index_ok || !k_key_ok) k_err <= roce_regs_pkg::CMD_ERR_BAD_INDEX;
        else begin
          k_wr_ctx <= d_valid;
          k_wr_clr <= !d_valid;
        end
      roce_regs_pkg::CMD_OP_MR_READ:
        if (!k_index_ok) k_err <= roce_regs_pkg::CMD_ERR_BAD_INDEX;
        else k_rd_we <= 1'b1;
      roce_regs_pkg::CMD_OP_MR_INVALIDATE:
        if (!k_index_ok) k_err <= roce_regs_pkg::CMD_ERR_BAD_INDEX;
        else k_inval <= 1'b1;
      default: k_err <= roce_regs_pkg::CMD_ERR_BAD_OPCODE;
    endcase
  end
  assign d_end = {k_end_lo[32] ? k_end_hi1 : k_end_hi0, k_end_lo[31:0]};
  assign d_delta = {k_dl_lo[32] ? k_dl_hi1 : k_dl_hi0, k_dl_lo[31:0]};

  // the entry read for the command, as an MrCtx image
  logic [511:0] entry_img;
  always_comb begin
    entry_img = '0;
    if (e_valid) begin
      entry_img[8*roce_desc_pkg::MR_CTX_VA_OFF +: 64] = e_va;
      entry_img[8*roce_desc_pkg::MR_CTX_LEN_OFF +: 64] = e_len;
      entry_img[8*roce_desc_pkg::MR_CTX_IOVA_OFF +: 64] = e_iova;
      entry_img[8*roce_desc_pkg::MR_CTX_PD_OFF +: 32] = e_pd;
      entry_img[8*roce_desc_pkg::MR_CTX_KEY_OFF +: 32] = {k_index, e_tag};
      entry_img[8*roce_desc_pkg::MR_CTX_ACCESS_OFF +: 32] = {28'd0, e_access};
      entry_img[8*roce_desc_pkg::MR_CTX_VALID_OFF] = 1'b1;
    end
  end

  // write port. The data is zero but for an MR_WRITE of a valid region in C_EXEC (the init
  // sweep runs in C_IDLE, and A..C are empty while a command runs, so no invalidate leaves C
  // then).
  logic k_exec;
  assign k_exec = cst == C_EXEC;
  assign wr_data = k_exec && k_wr_ctx
                 ? {1'b1, d_access, d_key[7:0], d_pd, d_iova, d_len, d_va, d_end, d_delta}
                 : '0;
  always_comb begin
    wr_en = 1'b0;
    wr_addr = c_idx;
    if (!init_done) begin
      wr_en = 1'b1;
      wr_addr = init_idx[LOG_N-1:0];
    end else if (c_v && c_inv_hit && ce) begin
      wr_en = 1'b1;
    end else if (k_exec) begin
      wr_addr = k_index[LOG_N-1:0];
      wr_en = k_wr_ctx || k_inval || (k_wr_clr && e_valid && e_tag == d_key[7:0]);
    end
  end

  always_ff @(posedge clk) begin
    cmd_done <= 1'b0;
    cmd_rdata_we <= 1'b0;
    if (!init_done) init_idx <= init_idx + 1'b1;
    case (cst)
      C_IDLE:
        if (cmd_valid && cmd_ready) begin
          k_op <= cmd_opcode;
          k_index <= cmd_index;
          k_data <= cmd_data;
          cst <= C_DRAIN;
        end
      // s_axis_req_tready is low from here: wait for A..C to empty
      C_DRAIN: if (!a_v && !b_v && !c_v) cst <= C_RD;
      C_RD: cst <= C_WAIT;   // BRAM read of the entry
      C_WAIT: cst <= C_EXEC; // rd_q -> rd_q2 (ce may be low: move it here)
      C_EXEC: begin
        cst <= C_IDLE;
        cmd_done <= 1'b1;
        cmd_error <= k_err;
        cmd_rdata <= entry_img;
        cmd_rdata_we <= k_rd_we;
      end
      default: cst <= C_IDLE;
    endcase
    if (rst || soft_reset) begin
      init_idx <= '0;
      cst <= C_IDLE;
      cmd_done <= 1'b0;
      cmd_rdata_we <= 1'b0;
      cmd_error <= 8'd0;
    end
  end

endmodule

`resetall
