// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_cq: the completion queues. A table of CQ contexts in BRAM (ring base, size, IRQ flag,
// producer and consumer index, arm state, overrun) serving, one operation at a time,
// completions (s_axis_cpl: the CQE image, tuser = CQ index; written into the ring by DMA with
// the phase bit, or dropped with cq_err on an invalid or overrun CQ), CQ doorbells (s_axis_db:
// consumer index, arming; an armed CQ fires cq_event) and the CQ commands (CQ_WRITE, CQ_READ).
// cq_valid has one bit per valid CQ (for roce_qp_ctx). Reset clears one entry per cycle.
// Model: engine::cq, wrapped by blocks::cq; docs/register-map.md, "Completions".
// Latency: an operation accepted in c reads its context in c, decides on registers in c+1
//   (forwarded from the write-back before it on the same CQ), writes back in c+2; its DMA
//   write, cq_event, cq_err or cmd_done are visible in c+3.
// Throughput: one operation every 2 cycles (commands, then doorbells, then completions).
//
// Parameters:
//   LOG_N  log2 of the number of CQs (CAPS.LOG_MAX_CQ; default 8 = 256).

`resetall
`default_nettype none

module roce_cq #(
  parameter int LOG_N = 8
) (
  input  wire logic         clk,
  input  wire logic         rst,
  input  wire logic         soft_reset,
  output      logic         init_done,

  input  wire logic [255:0] s_axis_cpl_tdata,
  input  wire logic [15:0]  s_axis_cpl_tuser,
  input  wire logic         s_axis_cpl_tvalid,
  output      logic         s_axis_cpl_tready,

  input  wire logic [31:0]  s_axis_db_tdata,
  input  wire logic         s_axis_db_tvalid,
  output      logic         s_axis_db_tready,

  output      logic [63:0]  m_axis_dma_addr,
  output      logic [255:0] m_axis_dma_tdata,
  output      logic         m_axis_dma_tvalid,
  input  wire logic         m_axis_dma_tready,

  output      logic         cq_event,
  output      logic         cq_err_valid,
  output      logic [13:0]  cq_err_cq,
  output      logic [7:0]   cq_err_cause,
  output      logic [(1<<LOG_N)-1:0] cq_valid,

  input  wire logic         cmd_valid,
  output      logic         cmd_ready,
  input  wire logic [7:0]   cmd_opcode,
  input  wire logic [23:0]  cmd_index,
  input  wire logic [255:0] cmd_data,
  output      logic         cmd_done,
  output      logic [7:0]   cmd_error,
  output      logic         cmd_rdata_we,
  output      logic [255:0] cmd_rdata
);

  localparam int N = 1 << LOG_N;
  // entry: {valid, irq, armed, arm_sol, overrun, log_size[3:0], base[63:0], pi[31:0], ci[31:0]}
  localparam int E_W = 5 + 4 + 64 + 64;
  localparam int E_LOG = 128;  // log_size's offset

  (* ram_style = "block" *) logic [E_W-1:0] mem [N];

  logic [LOG_N:0] init_idx;
  assign init_done = init_idx[LOG_N];

  // ---------------------------------------------------------------- operation select
  typedef enum logic [1:0] { K_CMD, K_DB, K_CPL } kind_t;
  logic   busy;  // an operation is in its first decide cycle (stage A)
  logic   wb;    // an operation writes back (stage B)
  logic   cpl_b; // a completion is in stage B (its DMA write comes next cycle)
  kind_t  k_kind;
  logic [23:0]  k_index;
  logic [7:0]   k_op;
  logic [255:0] k_data;  // command data or CQE
  logic [31:0]  k_db;

  logic can;
  assign can = init_done && !busy;
  assign cmd_ready = can;
  assign s_axis_db_tready = can && !cmd_valid;
  assign cpl_b = wb && k_kind == K_CPL;
  assign s_axis_cpl_tready = can && !cmd_valid && !s_axis_db_tvalid && !m_axis_dma_tvalid && !cpl_b;

  logic take_cmd, take_db, take_cpl;
  assign take_cmd = cmd_valid && cmd_ready;
  assign take_db = s_axis_db_tvalid && s_axis_db_tready;
  assign take_cpl = s_axis_cpl_tvalid && s_axis_cpl_tready;

  logic [23:0] in_index;
  always_comb begin
    in_index = {8'd0, s_axis_cpl_tuser};
    if (cmd_valid) in_index = cmd_index;
    else if (s_axis_db_tvalid) in_index = {10'd0, s_axis_db_tdata[29:16]};
  end

  logic [E_W-1:0] rd_q;
  logic           wr_en;
  logic [LOG_N-1:0] wr_addr;
  logic [E_W-1:0] wr_data;
  // a read in the cycle of the write-back to the same entry: the written context
  logic           fwd;
  logic [E_W-1:0] fwd_data;
  logic [31:0]    fwd_mask;  // its size - 1
  always_ff @(posedge clk) begin
    if (can) rd_q <= mem[in_index[LOG_N-1:0]];
    if (wr_en) mem[wr_addr] <= wr_data;
    if (can) begin
      fwd <= wr_en && wr_addr == in_index[LOG_N-1:0];
      fwd_data <= wr_data;
      fwd_mask <= ~(32'hFFFF_FFFF << wr_data[E_LOG +: 4]);
    end
  end

  // ---------------------------------------------------------------- stage A: sums, compares
  logic        e_valid, e_irq, e_armed, e_sol, e_over;
  logic [3:0]  e_log;
  logic [63:0] e_base;
  logic [31:0] e_pi, e_ci;
  logic [E_W-1:0] e;  // the context read, or forwarded
  assign e = fwd ? fwd_data : rd_q;
  assign {e_valid, e_irq, e_armed, e_sol, e_over, e_log, e_base, e_pi, e_ci} = e;
  logic unused_e;  // stage B reads them from a_e
  assign unused_e = ^{e_irq, e_over, e_ci};

  logic idx_ok;
  assign idx_ok = k_index[23:LOG_N] == '0;
  // completion
  // size - 1 for both candidates of e, the context read (one LUT per bit) and the one
  // forwarded (registered with it): what is computed from the mask is worked out for each
  // and selected after
  logic [31:0] mask_rd, mask_fwd;
  assign mask_rd = ~(32'hFFFF_FFFF << rd_q[E_LOG +: 4]);
  assign mask_fwd = fwd_mask;
  // the ring is full when pi - ci >= size: the difference's bits from log_size up. Both
  // candidates' differences, selected after (AND-OR: Yosys's opt_share would turn a ?: of
  // two subtractions into one subtractor behind the select), so one LUT per bit follows
  // the carry chains; stage B ORs them
  logic [31:0] used_rd, used_fwd, used_hi;
  assign used_rd = rd_q[63:32] - rd_q[31:0];
  assign used_fwd = fwd_data[63:32] - fwd_data[31:0];
  assign used_hi = (used_fwd & ~mask_fwd & {32{fwd}}) | (used_rd & ~mask_rd & {32{!fwd}});
  // the slot address base + (pi mod size) * 32: pi mod size < 2^15 (log_size <= 15), so
  // the sum's 20 low bits and their carry here, bits 20-36 and 37-63 incremented beside
  // them and picked in stage B
  logic [14:0] pi_mod;  // pi mod size
  assign pi_mod = (fwd_data[46:32] & mask_fwd[14:0] & {15{fwd}}) |
                  (rd_q[46:32] & mask_rd[14:0] & {15{!fwd}});
  logic [20:0] slot_lo;  // the slot address's 20 low bits and their carry
  assign slot_lo = {1'b0, e_base[19:0]} + {1'b0, pi_mod, 5'd0};
  logic c_sol, c_err;
  assign c_sol = k_data[8 * roce_desc_pkg::CQE_FLAGS_OFF + roce_desc_pkg::CQE_FLAG_SOLICITED_BIT];
  assign c_err = k_data[8 * 21 +: 8] != 8'd0;

  // doorbell: ci (16 bits) extended against pi, the largest value <= pi with those bits
  logic        db_arm, db_sol;
  assign db_arm = k_db[roce_regs_pkg::CQ_DB_ARM_LSB];
  assign db_sol = k_db[roce_regs_pkg::CQ_DB_SOLICITED_LSB];

  // the stage's registers (read in stage B)
  logic [E_W-1:0] a_e;        // the context
  logic           present;    // a valid CQ
  logic [31:0]    a_used_hi;  // pi - ci, its bits below log_size cleared
  logic [20:0]    a_slot_lo;
  logic [16:0]    a_base_mid1;  // base[36:20] + 1
  logic           a_mid_ones;   // base[36:20] all ones (the + 1 carries on)
  logic [26:0]    a_base_hi1;   // base[63:37] + 1
  logic           phase;
  logic           c_fire;
  logic [31:0]    a_pi1;
  logic [31:0]    db_ci;
  logic           db_fire;
  always_ff @(posedge clk) begin
    a_e <= e;
    present <= idx_ok && e_valid;
    a_used_hi <= used_hi;
    a_slot_lo <= slot_lo;
    a_base_mid1 <= e_base[36:20] + 17'd1;
    a_mid_ones <= &e_base[36:20];
    a_base_hi1 <= e_base[63:37] + 27'd1;
    phase <= !e_pi[{1'b0, e_log}];
    c_fire <= e_armed && (!e_sol || c_sol || c_err);
    a_pi1 <= e_pi + 32'd1;
    db_ci <= {k_db[15:0] > e_pi[15:0] ? e_pi[31:16] - 16'd1 : e_pi[31:16], k_db[15:0]};
    db_fire <= db_arm && !db_sol && k_db[15:0] != e_pi[15:0];
  end

  // ---------------------------------------------------------------- stage B: write-back
  logic        b_valid, b_irq, b_armed, b_sol, b_over;
  logic [3:0]  b_log;
  logic [63:0] b_base;
  logic [31:0] b_pi, b_ci;
  assign {b_valid, b_irq, b_armed, b_sol, b_over, b_log, b_base, b_pi, b_ci} = a_e;
  logic unused_b;  // stage A decided presence from it
  assign unused_b = b_valid;
  logic [63:0] slot_addr;
  assign slot_addr = {a_slot_lo[20] && a_mid_ones ? a_base_hi1 : b_base[63:37],
                       a_slot_lo[20] ? a_base_mid1 : b_base[36:20], a_slot_lo[19:0]};
  logic full;
  assign full = b_over || a_used_hi != 32'd0;  // overrun, or used >= size

  // commands: CqCtx fields
  logic [63:0] d_base;
  logic [3:0]  d_log;
  logic        d_irq, d_valid;
  assign d_base = k_data[8*roce_desc_pkg::CQ_CTX_BASE_OFF +: 64];
  assign d_log = k_data[8*roce_desc_pkg::CQ_CTX_LOG_SIZE_OFF +: 4];
  assign d_irq = k_data[8*roce_desc_pkg::CQ_CTX_FLAGS_OFF + roce_desc_pkg::CQ_FLAG_IRQ_ENABLE_BIT];
  assign d_valid = k_data[8*roce_desc_pkg::CQ_CTX_VALID_OFF];
  // what CqCtx::decode refuses (generated from the contract), and a CQ_WRITE that writes:
  // registered in stage A (k_data and k_index are held from the accept to stage B)
  // (a CQ_WRITE to a valid index and the reserved bits' check in separate registers: the
  // check's cone stays its own)
  logic d_bad_attr, d_write_ok, d_write;
  always_ff @(posedge clk) begin
    d_bad_attr <= roce_desc_pkg::cq_ctx_bad(k_data);
    d_write_ok <= k_kind == K_CMD && k_op == roce_regs_pkg::CMD_OP_CQ_WRITE && idx_ok;
  end
  assign d_write = d_write_ok && !d_bad_attr;
  // cq_valid's bit for the CQ of stage B, one-hot on a register (a masked update, no index)
  logic [N-1:0] k_hot;
  always_ff @(posedge clk) begin
    k_hot <= N'(1) << k_index[LOG_N-1:0];
  end

  logic [255:0] ctx_img;
  always_comb begin
    ctx_img = '0;
    if (present) begin
      ctx_img[8*roce_desc_pkg::CQ_CTX_BASE_OFF +: 64] = b_base;
      ctx_img[8*roce_desc_pkg::CQ_CTX_LOG_SIZE_OFF +: 4] = b_log;
      ctx_img[8*roce_desc_pkg::CQ_CTX_FLAGS_OFF + roce_desc_pkg::CQ_FLAG_IRQ_ENABLE_BIT] = b_irq;
      ctx_img[8*roce_desc_pkg::CQ_CTX_VALID_OFF] = 1'b1;
      ctx_img[8*roce_desc_pkg::CQ_CTX_PI_OFF +: 16] = b_pi[15:0];
      ctx_img[8*roce_desc_pkg::CQ_CTX_CI_OFF +: 16] = b_ci[15:0];
      ctx_img[8*roce_desc_pkg::CQ_CTX_STATE_OFF + roce_desc_pkg::CQ_STATE_ARMED_BIT] = b_armed;
      ctx_img[8*roce_desc_pkg::CQ_CTX_STATE_OFF + roce_desc_pkg::CQ_STATE_ARMED_SOLICITED_BIT] =
        b_armed && b_sol;
      ctx_img[8*roce_desc_pkg::CQ_CTX_STATE_OFF + roce_desc_pkg::CQ_STATE_OVERRUN_BIT] = b_over;
    end
  end

  // write-back of the decide cycle (or the init sweep)
  always_comb begin
    wr_en = 1'b0;
    wr_addr = k_index[LOG_N-1:0];
    wr_data = a_e;
    if (!init_done) begin
      wr_en = 1'b1;
      wr_addr = init_idx[LOG_N-1:0];
      wr_data = '0;
    end else if (wb) begin
      case (k_kind)
        K_CMD:
          if (d_write) begin
            wr_en = 1'b1;
            wr_data = d_valid ? {1'b1, d_irq, 3'b000, d_log, d_base, 64'd0} : '0;
          end
        K_DB:
          if (present) begin
            wr_en = 1'b1;
            wr_data = {1'b1, b_irq, db_arm ? !db_fire : b_armed, db_arm ? db_sol : b_sol, b_over,
                       b_log, b_base, b_pi, db_ci};
          end
        default:  // completion
          if (present) begin
            wr_en = 1'b1;
            if (b_over || full)
              wr_data = {1'b1, b_irq, b_armed, b_sol, 1'b1, b_log, b_base, b_pi, b_ci};
            else
              wr_data = {1'b1, b_irq, b_armed && !c_fire, b_sol, 1'b0, b_log, b_base,
                         a_pi1, b_ci};
          end
      endcase
    end
  end

  always_ff @(posedge clk) begin
    cq_event <= 1'b0;
    cq_err_valid <= 1'b0;
    cmd_done <= 1'b0;
    cmd_rdata_we <= 1'b0;
    if (!init_done) init_idx <= init_idx + 1'b1;
    if (m_axis_dma_tvalid && m_axis_dma_tready) m_axis_dma_tvalid <= 1'b0;
    busy <= 1'b0;
    wb <= busy;
    if (take_cmd || take_db || take_cpl) begin
      busy <= 1'b1;
      k_index <= in_index;
      k_kind <= take_cmd ? K_CMD : take_db ? K_DB : K_CPL;
      k_op <= cmd_opcode;
      k_data <= take_cmd ? cmd_data : s_axis_cpl_tdata;
      k_db <= s_axis_db_tdata;
    end
    if (wb && d_write) cq_valid <= (cq_valid & ~k_hot) | (k_hot & {N{d_valid}});
    if (wb) begin
      case (k_kind)
        K_CMD: begin
          cmd_done <= 1'b1;
          cmd_error <= roce_regs_pkg::CMD_ERR_OK;
          cmd_rdata <= ctx_img;
          if (k_op == roce_regs_pkg::CMD_OP_CQ_WRITE) begin
            if (d_bad_attr) cmd_error <= roce_regs_pkg::CMD_ERR_BAD_ATTR;
            else if (!idx_ok) cmd_error <= roce_regs_pkg::CMD_ERR_BAD_INDEX;
          end else if (k_op == roce_regs_pkg::CMD_OP_CQ_READ) begin
            if (!idx_ok) cmd_error <= roce_regs_pkg::CMD_ERR_BAD_INDEX;
            else cmd_rdata_we <= 1'b1;
          end else begin
            cmd_error <= roce_regs_pkg::CMD_ERR_BAD_OPCODE;
          end
        end
        K_DB: if (present && db_fire && b_irq) cq_event <= 1'b1;
        default: begin
          cq_err_cq <= k_index[13:0];
          if (!present) begin
            cq_err_valid <= 1'b1;
            cq_err_cause <= roce_regs_pkg::CQ_ERR_INVALID;
          end else if (b_over || full) begin
            cq_err_valid <= 1'b1;
            cq_err_cause <= roce_regs_pkg::CQ_ERR_OVERRUN;
          end else begin
            m_axis_dma_tvalid <= 1'b1;
            m_axis_dma_addr <= slot_addr;
            m_axis_dma_tdata <= {k_data[255:8*24], 7'd0, phase, k_data[8*23-1:0]};
            if (c_fire && b_irq) cq_event <= 1'b1;
          end
        end
      endcase
    end
    if (rst || soft_reset) begin
      init_idx <= '0;
      cq_valid <= '0;
      busy <= 1'b0;
      wb <= 1'b0;
      m_axis_dma_tvalid <= 1'b0;
      cq_event <= 1'b0;
      cq_err_valid <= 1'b0;
      cmd_done <= 1'b0;
      cmd_rdata_we <= 1'b0;
    end
    if (rst) begin
      m_axis_dma_addr <= 64'd0;
      m_axis_dma_tdata <= '0;
      cq_err_cq <= 14'd0;
      cq_err_cause <= 8'd0;
      cmd_error <= 8'd0;
      cmd_rdata <= '0;
    end
  end

endmodule

`resetall
