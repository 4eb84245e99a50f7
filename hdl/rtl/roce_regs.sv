// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_regs: the engine's BAR0 register file, an AXI4-Lite slave (32-bit data, 16-bit byte
// address) as the register contract defines it (docs/register-map.md, gen/roce_regs_pkg.sv):
// RW registers as typed cfg_* outputs, RO ones from inputs, IRQ_STATUS (W1C) and irq, the
// 64-bit counters with the LO/HI latch, the command handshake toward the context tables,
// doorbells as a stream, soft reset. The semantics beyond the contract's table (strobes,
// SLVERR, CMD while BUSY, doorbell holding, soft reset, error info): docs/engine-hdl.md.
// Ports: s_axil_*, irq, cfg_*, status inputs, cmd_* (one command at a time, cmd_done with
//   cmd_error and cmd_rdata_we), m_axis_db_* (tuser 0 SQ, 1 RQ, 2 CQ), soft_reset, interrupt
//   cause pulses, cnt_add (one increment per counter per cycle).
// Latency: a read accepted in c answers in c+3 with the values of c+1; a write accepted by c
//   (its address and data) takes effect at the end of c and is answered in c+1.
// Throughput: one read and one write every 2 cycles.
// Model blocks::regs, cycle for cycle.
//
// Parameters (CAPS; the defaults are the contract's CAPS reset value):
//   LOG_MAX_QP, LOG_MAX_CQ, LOG_MAX_RD_ATOMIC, LOG_MAX_MR, MAX_MTU, LOG_DP_BYTES, BF
//   CNT_ADD_W  width of each counter increment.

`resetall
`default_nettype none

module roce_regs #(
  parameter int unsigned LOG_MAX_QP = 10,
  parameter int unsigned LOG_MAX_CQ = 8,
  parameter int unsigned LOG_MAX_RD_ATOMIC = 4,
  parameter int unsigned LOG_MAX_MR = 10,
  parameter int unsigned MAX_MTU = 5,
  parameter int unsigned LOG_DP_BYTES = 6,
  parameter int unsigned BF = 1,
  parameter int unsigned CNT_ADD_W = 16,
  localparam int unsigned NCNT = roce_regs_pkg::NUM_COUNTERS
) (
  input  wire logic                      clk,
  input  wire logic                      rst,

  // AXI4-Lite slave (BAR0)
  input  wire logic [15:0]               s_axil_awaddr,
  input  wire logic                      s_axil_awvalid,
  output      logic                      s_axil_awready,
  input  wire logic [31:0]               s_axil_wdata,
  input  wire logic [3:0]                s_axil_wstrb,
  input  wire logic                      s_axil_wvalid,
  output      logic                      s_axil_wready,
  output      logic [1:0]                s_axil_bresp,
  output      logic                      s_axil_bvalid,
  input  wire logic                      s_axil_bready,
  input  wire logic [15:0]               s_axil_araddr,
  input  wire logic                      s_axil_arvalid,
  output      logic                      s_axil_arready,
  output      logic [31:0]               s_axil_rdata,
  output      logic [1:0]                s_axil_rresp,
  output      logic                      s_axil_rvalid,
  input  wire logic                      s_axil_rready,

  // configuration (the RW registers, decoded)
  output      logic                      cfg_enable,
  output      logic                      cfg_ecn_enable,
  output      logic                      cfg_cnp_enable,
  output      logic                      cfg_dcqcn_enable,
  output      logic                      cfg_pfc_enable,
  output      logic                      soft_reset,
  output      logic [47:0]               cfg_mac,
  output      logic [31:0]               cfg_ipv4,
  output      logic [127:0]              cfg_gid,
  output      logic                      cfg_vlan_enable,
  output      logic [11:0]               cfg_vlan_vid,
  output      logic [2:0]                cfg_vlan_pcp,
  output      logic [15:0]               cfg_tick_cycles,
  output      logic [11:0]               cfg_us_cycles,
  output      logic [19:0]               cfg_dcqcn_rate_ai,
  output      logic [19:0]               cfg_dcqcn_rate_hai,
  output      logic [19:0]               cfg_dcqcn_rate_min,
  output      logic [9:0]                cfg_dcqcn_g,
  output      logic [9:0]                cfg_dcqcn_alpha_init,
  output      logic [15:0]               cfg_dcqcn_alpha_us,
  output      logic [15:0]               cfg_dcqcn_rate_us,
  output      logic [31:0]               cfg_dcqcn_byte_counter,
  output      logic [4:0]                cfg_dcqcn_stages,
  output      logic [5:0]                cfg_cnp_dscp,
  output      logic [2:0]                cfg_cnp_pcp,
  output      logic [15:0]               cfg_cnp_interval_us,

  // status and interrupt causes
  input  wire logic                      status_ready,
  input  wire logic                      status_link_up,
  input  wire logic                      cq_event,
  input  wire logic                      fatal,
  input  wire logic                      qp_err_valid,
  input  wire logic [23:0]               qp_err_qpn,
  input  wire logic [7:0]                qp_err_cause,
  input  wire logic                      cq_err_valid,
  input  wire logic [13:0]               cq_err_cq,
  input  wire logic [7:0]                cq_err_cause,
  output      logic                      irq,

  // command interface toward the context tables
  output      logic                      cmd_valid,
  input  wire logic                      cmd_ready,
  output      logic [7:0]                cmd_opcode,
  output      logic [23:0]               cmd_index,
  output      logic [31:0]               cmd_arg,
  output      logic [1023:0]             cmd_data,
  input  wire logic                      cmd_done,
  input  wire logic [7:0]                cmd_error,
  input  wire logic                      cmd_rdata_we,
  input  wire logic [1023:0]             cmd_rdata,

  // doorbells
  output      logic [31:0]               m_axis_db_tdata,
  output      logic [1:0]                m_axis_db_tuser,
  output      logic                      m_axis_db_tvalid,
  input  wire logic                      m_axis_db_tready,

  // counters: counter i adds cnt_add[i*CNT_ADD_W +: CNT_ADD_W] every cycle
  input  wire logic [NCNT*CNT_ADD_W-1:0] cnt_add
);

  localparam int NCNT_I = NCNT;
  localparam int GID_N = roce_regs_pkg::GID_COUNT;
  localparam int CD_N = roce_regs_pkg::CMD_DATA_COUNT;

  // ---------------------------------------------------------------- register state
  logic [31:0]   ctrl_q, irq_status_q, irq_mask_q, mac_lo_q, mac_hi_q, ipv4_q, vlan_q;
  logic [127:0]  gid_q;  // GID[i] in bits 32i+31..32i
  logic [31:0]   tick_q, us_q, ai_q, hai_q, rmin_q, alpha_q, alpha_t_q, rate_t_q, bytes_q;
  logic [31:0]   stages_q, cnp_cfg_q, cnp_int_q, cmd_arg_q, qp_info_q, cq_info_q;
  logic [1023:0] cmd_data_q;  // CMD_DATA[i] in bits 32i+31..32i
  logic          busy_q;
  logic [7:0]    cmd_err_q;
  logic [NCNT*64-1:0] cnt_q;
  logic [31:0]   hi_latch_q;

  // ---------------------------------------------------------------- read address
  // (declared first: a counter LO read loads the latch in the write process)
  //
  // The read mux is an AND-OR over every readable word, selected by a one-hot vector that is
  // decoded from s_axil_araddr as the address is accepted and registered with it (ar_sel),
  // so the read pipeline only ANDs and ORs (no address compare, no indexed select of the
  // wide counter array): stage 1 (rd_go) per group of words, stage 2 the groups (below).
  //
  // ar_sel, one bit per readable word, from bit 0: the NSC scalar registers (S_* below),
  // GID[0..GID_N-1], CMD_DATA[0..CD_N-1], counter i's LO register (NCNT), any counter's HI
  // register (the latch). No bit set: a reserved (or write-only) address, which reads 0.
  localparam int S_ID = 0, S_VERSION = 1, S_CAPS = 2, S_NEXT = 3, S_CTRL = 4, S_STATUS = 5,
                 S_IRQ_STATUS = 6, S_IRQ_MASK = 7, S_MAC_LO = 8, S_MAC_HI = 9, S_IPV4 = 10,
                 S_VLAN = 11, S_TICK = 12, S_US = 13, S_AI = 14, S_HAI = 15, S_RMIN = 16,
                 S_ALPHA = 17, S_ALPHA_T = 18, S_RATE_T = 19, S_BYTES = 20, S_STAGES = 21,
                 S_CNP_CFG = 22, S_CNP_INT = 23, S_CMD_STATUS = 24, S_CMD_ARG = 25,
                 S_QP_INFO = 26, S_CQ_INFO = 27, NSC = 28;
  localparam int SEL_GID = NSC, SEL_CD = SEL_GID + GID_N, SEL_LO = SEL_CD + CD_N,
                 SEL_HI = SEL_LO + NCNT_I, NSEL = SEL_HI + 1;

  logic            ar_full;
  logic [NSEL-1:0] ar_sel;
  logic            ar_lo;   // a counter LO read: it loads the latch
  logic            rd_go;   // the read leaves ar_* and samples the registers (stage 1)
  assign s_axil_arready = !ar_full;

  logic [15:0]     in_ra;
  logic [NSEL-1:0] in_sel;
  assign in_ra = {s_axil_araddr[15:2], 2'b00};
  always_comb begin
    in_sel = '0;
    case (in_ra)
      roce_regs_pkg::ID_ADDR: in_sel[S_ID] = 1'b1;
      roce_regs_pkg::VERSION_ADDR: in_sel[S_VERSION] = 1'b1;
      roce_regs_pkg::CAPS_ADDR: in_sel[S_CAPS] = 1'b1;
      roce_regs_pkg::NEXT_ADDR: in_sel[S_NEXT] = 1'b1;
      roce_regs_pkg::CTRL_ADDR: in_sel[S_CTRL] = 1'b1;
      roce_regs_pkg::STATUS_ADDR: in_sel[S_STATUS] = 1'b1;
      roce_regs_pkg::IRQ_STATUS_ADDR: in_sel[S_IRQ_STATUS] = 1'b1;
      roce_regs_pkg::IRQ_MASK_ADDR: in_sel[S_IRQ_MASK] = 1'b1;
      roce_regs_pkg::MAC_LO_ADDR: in_sel[S_MAC_LO] = 1'b1;
      roce_regs_pkg::MAC_HI_ADDR: in_sel[S_MAC_HI] = 1'b1;
      roce_regs_pkg::IPV4_ADDR: in_sel[S_IPV4] = 1'b1;
      roce_regs_pkg::VLAN_ADDR: in_sel[S_VLAN] = 1'b1;
      roce_regs_pkg::TICK_CYCLES_ADDR: in_sel[S_TICK] = 1'b1;
      roce_regs_pkg::US_CYCLES_ADDR: in_sel[S_US] = 1'b1;
      roce_regs_pkg::DCQCN_RATE_AI_ADDR: in_sel[S_AI] = 1'b1;
      roce_regs_pkg::DCQCN_RATE_HAI_ADDR: in_sel[S_HAI] = 1'b1;
      roce_regs_pkg::DCQCN_RATE_MIN_ADDR: in_sel[S_RMIN] = 1'b1;
      roce_regs_pkg::DCQCN_ALPHA_ADDR: in_sel[S_ALPHA] = 1'b1;
      roce_regs_pkg::DCQCN_ALPHA_TIMER_ADDR: in_sel[S_ALPHA_T] = 1'b1;
      roce_regs_pkg::DCQCN_RATE_TIMER_ADDR: in_sel[S_RATE_T] = 1'b1;
      roce_regs_pkg::DCQCN_BYTE_COUNTER_ADDR: in_sel[S_BYTES] = 1'b1;
      roce_regs_pkg::DCQCN_STAGES_ADDR: in_sel[S_STAGES] = 1'b1;
      roce_regs_pkg::CNP_CFG_ADDR: in_sel[S_CNP_CFG] = 1'b1;
      roce_regs_pkg::CNP_INTERVAL_ADDR: in_sel[S_CNP_INT] = 1'b1;
      roce_regs_pkg::CMD_STATUS_ADDR: in_sel[S_CMD_STATUS] = 1'b1;
      roce_regs_pkg::CMD_ARG_ADDR: in_sel[S_CMD_ARG] = 1'b1;
      roce_regs_pkg::QP_ERR_INFO_ADDR: in_sel[S_QP_INFO] = 1'b1;
      roce_regs_pkg::CQ_ERR_INFO_ADDR: in_sel[S_CQ_INFO] = 1'b1;
      default: ;
    endcase
    for (int i = 0; i < GID_N; i++)
      in_sel[SEL_GID + i] = in_ra == roce_regs_pkg::GID_ADDR + 16'(4 * i);
    for (int i = 0; i < CD_N; i++)
      in_sel[SEL_CD + i] = in_ra == roce_regs_pkg::CMD_DATA_ADDR + 16'(4 * i);
    for (int i = 0; i < NCNT_I; i++) begin
      in_sel[SEL_LO + i] = in_ra == roce_regs_pkg::COUNTERS_ADDR + 16'(8 * i);
      if (in_ra == roce_regs_pkg::COUNTERS_ADDR + 16'(8 * i + 4)) in_sel[SEL_HI] = 1'b1;
    end
  end

  // the HI half of the counter a LO read selects (0 when none is)
  logic [31:0] cnt_hi_sel;
  always_comb begin
    cnt_hi_sel = 32'd0;
    for (int i = 0; i < NCNT_I; i++)
      cnt_hi_sel = cnt_hi_sel | (cnt_q[64*i + 32 +: 32] & {32{ar_sel[SEL_LO + i]}});
  end

  // Counter next values. The 64-bit sum as one carry chain is too deep (a LUT and 8 CARRY8),
  // so it is a carry-select: the low 32 bits add cnt_add, and their carry-out picks the high
  // 32 bits or the high 32 bits + 1 (computed in parallel from the register). The value is
  // the same 64-bit sum in every cycle.
  logic [NCNT*64-1:0] cnt_next;
  for (genvar g = 0; g < NCNT_I; g++) begin : g_cnt
    logic [32:0] lo_sum;
    logic [31:0] hi, hi_inc;
    assign lo_sum = {1'b0, cnt_q[64*g +: 32]} + 33'(cnt_add[CNT_ADD_W*g +: CNT_ADD_W]);
    assign hi = cnt_q[64*g + 32 +: 32];
    assign hi_inc = hi + 32'd1;
    assign cnt_next[64*g +: 64] = {lo_sum[32] ? hi_inc : hi, lo_sum[31:0]};
  end

  // ---------------------------------------------------------------- write channel
  logic        aw_full, w_full;
  logic [15:0] aw_q;       // an address or data accepted before its other half
  logic [31:0] wd_q;
  logic [3:0]  ws_q;
  logic [15:0] aw_addr;    // the write's address and data: kept, else this cycle's
  logic [31:0] w_data;
  logic [3:0]  w_strb;
  assign aw_addr = aw_full ? aw_q : s_axil_awaddr;
  assign w_data = w_full ? wd_q : s_axil_wdata;
  assign w_strb = w_full ? ws_q : s_axil_wstrb;
  logic        db_valid;
  logic [31:0] db_data;
  logic [1:0]  db_kind;

  assign s_axil_awready = !aw_full;
  assign s_axil_wready = !w_full;

  logic [15:0] wa;
  assign wa = {aw_addr[15:2], 2'b00};
  logic [31:0] wmask;
  assign wmask = {{8{w_strb[3]}}, {8{w_strb[2]}}, {8{w_strb[1]}}, {8{w_strb[0]}}};
  logic full_strb;
  assign full_strb = &w_strb;
  logic wa_is_db;
  assign wa_is_db = wa == roce_regs_pkg::SQ_DB_ADDR || wa == roce_regs_pkg::RQ_DB_ADDR
                    || wa == roce_regs_pkg::CQ_DB_ADDR;
  // The write is performed in this cycle (in the cycle its last half is accepted).
  logic wr_go;
  assign wr_go = (aw_full || s_axil_awvalid) && (w_full || s_axil_wvalid) && !s_axil_bvalid &&
                 !(wa_is_db && db_valid);

  // w_data merged into an old value by strobe, masked to the register's fields.
  function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] data,
                                        input logic [31:0] m, input logic [31:0] fields);
    merge = ((old & ~m) | (data & m)) & fields;
  endfunction

  // the GID and CMD_DATA words: one address compare each (no offset subtraction behind the
  // address that may come straight from the bus)
  logic [GID_N-1:0] wr_gid;
  logic [CD_N-1:0]  wr_cd;
  always_comb begin
    for (int i = 0; i < GID_N; i++) wr_gid[i] = wa == roce_regs_pkg::GID_ADDR + 16'(4 * i);
    for (int i = 0; i < CD_N; i++) wr_cd[i] = wa == roce_regs_pkg::CMD_DATA_ADDR + 16'(4 * i);
  end

  logic wr_soft;  // this write is a soft reset
  assign wr_soft = wr_go && wa == roce_regs_pkg::CTRL_ADDR && w_strb[0]
                   && w_data[roce_regs_pkg::CTRL_SOFT_RESET_LSB];
  logic wr_cmd;   // this write starts a command
  assign wr_cmd = wr_go && wa == roce_regs_pkg::CMD_ADDR && full_strb && !busy_q;
  logic [31:0] w1c;
  assign w1c = (wr_go && wa == roce_regs_pkg::IRQ_STATUS_ADDR) ? (w_data & wmask) : 32'd0;

  localparam int unsigned IRQ_CQ_EVENT = roce_regs_pkg::IRQ_STATUS_CQ_EVENT_LSB;
  localparam int unsigned IRQ_CMD_DONE = roce_regs_pkg::IRQ_STATUS_CMD_DONE_LSB;
  localparam int unsigned IRQ_QP_ERROR = roce_regs_pkg::IRQ_STATUS_QP_ERROR_LSB;
  localparam int unsigned IRQ_FATAL = roce_regs_pkg::IRQ_STATUS_FATAL_LSB;
  localparam int unsigned IRQ_CQ_ERROR = roce_regs_pkg::IRQ_STATUS_CQ_ERROR_LSB;

  logic cmd_fin;
  assign cmd_fin = cmd_done && busy_q;
  logic [31:0] irq_set;
  always_comb begin
    irq_set = 32'd0;
    irq_set[IRQ_CQ_EVENT] = cq_event;
    irq_set[IRQ_CMD_DONE] = cmd_fin;
    irq_set[IRQ_QP_ERROR] = qp_err_valid;
    irq_set[IRQ_FATAL] = fatal;
    irq_set[IRQ_CQ_ERROR] = cq_err_valid;
  end

  always_ff @(posedge clk) begin
    soft_reset <= 1'b0;
    if (s_axil_awvalid && s_axil_awready) begin
      aw_full <= 1'b1;
      aw_q <= s_axil_awaddr;
    end
    if (s_axil_wvalid && s_axil_wready) begin
      w_full <= 1'b1;
      wd_q <= s_axil_wdata;
      ws_q <= s_axil_wstrb;
    end
    if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
    if (m_axis_db_tvalid && m_axis_db_tready) db_valid <= 1'b0;
    if (cmd_valid && cmd_ready) cmd_valid <= 1'b0;

    // interrupt causes and their info (before the write: a soft reset below wins)
    irq_status_q <= ((irq_status_q & ~w1c) | irq_set) & roce_regs_pkg::IRQ_STATUS_MASK;
    if (qp_err_valid && !irq_status_q[IRQ_QP_ERROR])
      qp_info_q <= {qp_err_cause, qp_err_qpn} & roce_regs_pkg::QP_ERR_INFO_MASK;
    if (cq_err_valid && !irq_status_q[IRQ_CQ_ERROR])
      cq_info_q <= {cq_err_cause, 10'd0, cq_err_cq} & roce_regs_pkg::CQ_ERR_INFO_MASK;

    // command completion
    if (cmd_rdata_we && busy_q) cmd_data_q <= cmd_rdata;
    if (cmd_fin) begin
      busy_q <= 1'b0;
      cmd_err_q <= cmd_error;
    end

    cnt_q <= cnt_next;

    if (wr_go) begin
      aw_full <= 1'b0;
      w_full <= 1'b0;
      s_axil_bvalid <= 1'b1;
      s_axil_bresp <= (wa_is_db || wa == roce_regs_pkg::CMD_ADDR) && !full_strb ? 2'b10 : 2'b00;
      case (wa)
        roce_regs_pkg::CTRL_ADDR:
          if (!wr_soft)
            ctrl_q <= merge(ctrl_q, w_data, wmask, roce_regs_pkg::CTRL_MASK
                            & ~(32'd1 << roce_regs_pkg::CTRL_SOFT_RESET_LSB));
        roce_regs_pkg::IRQ_MASK_ADDR:
          irq_mask_q <= merge(irq_mask_q, w_data, wmask, roce_regs_pkg::IRQ_MASK_MASK);
        roce_regs_pkg::MAC_LO_ADDR:
          mac_lo_q <= merge(mac_lo_q, w_data, wmask, roce_regs_pkg::MAC_LO_MASK);
        roce_regs_pkg::MAC_HI_ADDR:
          mac_hi_q <= merge(mac_hi_q, w_data, wmask, roce_regs_pkg::MAC_HI_MASK);
        roce_regs_pkg::IPV4_ADDR:
          ipv4_q <= merge(ipv4_q, w_data, wmask, roce_regs_pkg::IPV4_MASK);
        roce_regs_pkg::VLAN_ADDR:
          vlan_q <= merge(vlan_q, w_data, wmask, roce_regs_pkg::VLAN_MASK);
        roce_regs_pkg::TICK_CYCLES_ADDR:
          tick_q <= merge(tick_q, w_data, wmask, roce_regs_pkg::TICK_CYCLES_MASK);
        roce_regs_pkg::US_CYCLES_ADDR:
          us_q <= merge(us_q, w_data, wmask, roce_regs_pkg::US_CYCLES_MASK);
        roce_regs_pkg::DCQCN_RATE_AI_ADDR:
          ai_q <= merge(ai_q, w_data, wmask, roce_regs_pkg::DCQCN_RATE_AI_MASK);
        roce_regs_pkg::DCQCN_RATE_HAI_ADDR:
          hai_q <= merge(hai_q, w_data, wmask, roce_regs_pkg::DCQCN_RATE_HAI_MASK);
        roce_regs_pkg::DCQCN_RATE_MIN_ADDR:
          rmin_q <= merge(rmin_q, w_data, wmask, roce_regs_pkg::DCQCN_RATE_MIN_MASK);
        roce_regs_pkg::DCQCN_ALPHA_ADDR:
          alpha_q <= merge(alpha_q, w_data, wmask, roce_regs_pkg::DCQCN_ALPHA_MASK);
        roce_regs_pkg::DCQCN_ALPHA_TIMER_ADDR:
          alpha_t_q <= merge(alpha_t_q, w_data, wmask, roce_regs_pkg::DCQCN_ALPHA_TIMER_MASK);
        roce_regs_pkg::DCQCN_RATE_TIMER_ADDR:
          rate_t_q <= merge(rate_t_q, w_data, wmask, roce_regs_pkg::DCQCN_RATE_TIMER_MASK);
        roce_regs_pkg::DCQCN_BYTE_COUNTER_ADDR:
          bytes_q <= merge(bytes_q, w_data, wmask, roce_regs_pkg::DCQCN_BYTE_COUNTER_MASK);
        roce_regs_pkg::DCQCN_STAGES_ADDR:
          stages_q <= merge(stages_q, w_data, wmask, roce_regs_pkg::DCQCN_STAGES_MASK);
        roce_regs_pkg::CNP_CFG_ADDR:
          cnp_cfg_q <= merge(cnp_cfg_q, w_data, wmask, roce_regs_pkg::CNP_CFG_MASK);
        roce_regs_pkg::CNP_INTERVAL_ADDR:
          cnp_int_q <= merge(cnp_int_q, w_data, wmask, roce_regs_pkg::CNP_INTERVAL_MASK);
        roce_regs_pkg::CMD_ARG_ADDR:
          if (!busy_q)
            cmd_arg_q <= merge(cmd_arg_q, w_data, wmask, roce_regs_pkg::CMD_ARG_MASK);
        roce_regs_pkg::CMD_ADDR:
          if (wr_cmd) begin
            busy_q <= 1'b1;
            cmd_valid <= 1'b1;
            cmd_opcode <= w_data[7:0];
            cmd_index <= w_data[31:8];
          end
        roce_regs_pkg::SQ_DB_ADDR:
          if (full_strb && ctrl_q[roce_regs_pkg::CTRL_ENABLE_LSB]) begin
            db_valid <= 1'b1;
            db_data <= w_data;
            db_kind <= 2'd0;
          end
        roce_regs_pkg::RQ_DB_ADDR:
          if (full_strb && ctrl_q[roce_regs_pkg::CTRL_ENABLE_LSB]) begin
            db_valid <= 1'b1;
            db_data <= w_data;
            db_kind <= 2'd1;
          end
        roce_regs_pkg::CQ_DB_ADDR:
          if (full_strb) begin
            db_valid <= 1'b1;
            db_data <= w_data;
            db_kind <= 2'd2;
          end
        default: ;
      endcase
      for (int i = 0; i < GID_N; i++)
        if (wr_gid[i])
          gid_q[32*i +: 32] <= merge(gid_q[32*i +: 32], w_data, wmask, roce_regs_pkg::GID_MASK);
      for (int i = 0; i < CD_N; i++)
        if (wr_cd[i] && !busy_q)
          cmd_data_q[32*i +: 32] <= merge(cmd_data_q[32*i +: 32], w_data, wmask,
                                          roce_regs_pkg::CMD_DATA_MASK);
    end

    if (wr_soft) begin
      soft_reset <= 1'b1;
      ctrl_q[roce_regs_pkg::CTRL_ENABLE_LSB] <= 1'b0;
      irq_status_q <= 32'd0;
      qp_info_q <= 32'd0;
      cq_info_q <= 32'd0;
      busy_q <= 1'b0;
      cmd_valid <= 1'b0;
      cmd_err_q <= 8'd0;
      cnt_q <= '0;
      hi_latch_q <= 32'd0;
    end else if (rd_go && ar_lo) begin
      hi_latch_q <= cnt_hi_sel;
    end

    if (rst) begin
      aw_full <= 1'b0;
      w_full <= 1'b0;
      s_axil_bvalid <= 1'b0;
      s_axil_bresp <= 2'b00;
      aw_q <= 16'd0;
      wd_q <= 32'd0;
      ws_q <= 4'd0;
      db_valid <= 1'b0;
      db_data <= 32'd0;
      db_kind <= 2'd0;
      cmd_valid <= 1'b0;
      cmd_opcode <= 8'd0;
      cmd_index <= 24'd0;
      soft_reset <= 1'b0;
      ctrl_q <= roce_regs_pkg::CTRL_RESET;
      irq_status_q <= roce_regs_pkg::IRQ_STATUS_RESET;
      irq_mask_q <= roce_regs_pkg::IRQ_MASK_RESET;
      mac_lo_q <= roce_regs_pkg::MAC_LO_RESET;
      mac_hi_q <= roce_regs_pkg::MAC_HI_RESET;
      ipv4_q <= roce_regs_pkg::IPV4_RESET;
      gid_q <= {4{roce_regs_pkg::GID_RESET}};
      vlan_q <= roce_regs_pkg::VLAN_RESET;
      tick_q <= roce_regs_pkg::TICK_CYCLES_RESET;
      us_q <= roce_regs_pkg::US_CYCLES_RESET;
      ai_q <= roce_regs_pkg::DCQCN_RATE_AI_RESET;
      hai_q <= roce_regs_pkg::DCQCN_RATE_HAI_RESET;
      rmin_q <= roce_regs_pkg::DCQCN_RATE_MIN_RESET;
      alpha_q <= roce_regs_pkg::DCQCN_ALPHA_RESET;
      alpha_t_q <= roce_regs_pkg::DCQCN_ALPHA_TIMER_RESET;
      rate_t_q <= roce_regs_pkg::DCQCN_RATE_TIMER_RESET;
      bytes_q <= roce_regs_pkg::DCQCN_BYTE_COUNTER_RESET;
      stages_q <= roce_regs_pkg::DCQCN_STAGES_RESET;
      cnp_cfg_q <= roce_regs_pkg::CNP_CFG_RESET;
      cnp_int_q <= roce_regs_pkg::CNP_INTERVAL_RESET;
      cmd_arg_q <= roce_regs_pkg::CMD_ARG_RESET;
      cmd_data_q <= {32{roce_regs_pkg::CMD_DATA_RESET}};
      qp_info_q <= roce_regs_pkg::QP_ERR_INFO_RESET;
      cq_info_q <= roce_regs_pkg::CQ_ERR_INFO_RESET;
      busy_q <= 1'b0;
      cmd_err_q <= 8'd0;
      cnt_q <= '0;
      hi_latch_q <= 32'd0;
    end
  end

  // ---------------------------------------------------------------- read channel

  logic [31:0] caps;
  assign caps = ((32'(LOG_MAX_QP) & 32'h1f) << roce_regs_pkg::CAPS_LOG_MAX_QP_LSB)
              | ((32'(LOG_MAX_CQ) & 32'h1f) << roce_regs_pkg::CAPS_LOG_MAX_CQ_LSB)
              | ((32'(LOG_MAX_RD_ATOMIC) & 32'h7) << roce_regs_pkg::CAPS_LOG_MAX_RD_ATOMIC_LSB)
              | ((32'(LOG_MAX_MR) & 32'h1f) << roce_regs_pkg::CAPS_LOG_MAX_MR_LSB)
              | ((32'(MAX_MTU) & 32'h7) << roce_regs_pkg::CAPS_MAX_MTU_LSB)
              | ((32'(LOG_DP_BYTES) & 32'hf) << roce_regs_pkg::CAPS_LOG_DP_BYTES_LSB)
              | ((32'(BF) & 32'h1) << roce_regs_pkg::CAPS_BF_LSB);

  // every readable word, in ar_sel's order
  logic [32*NSEL-1:0] rd_src;
  always_comb begin
    rd_src = '0;
    rd_src[32*S_ID +: 32] = roce_regs_pkg::ID_RESET;
    rd_src[32*S_VERSION +: 32] = roce_regs_pkg::VERSION_RESET;
    rd_src[32*S_CAPS +: 32] = caps;
    rd_src[32*S_NEXT +: 32] = roce_regs_pkg::NEXT_RESET;
    rd_src[32*S_CTRL +: 32] = ctrl_q;
    rd_src[32*S_STATUS +: 32] = (32'(status_ready) << roce_regs_pkg::STATUS_READY_LSB)
                              | (32'(status_link_up) << roce_regs_pkg::STATUS_LINK_UP_LSB);
    rd_src[32*S_IRQ_STATUS +: 32] = irq_status_q;
    rd_src[32*S_IRQ_MASK +: 32] = irq_mask_q;
    rd_src[32*S_MAC_LO +: 32] = mac_lo_q;
    rd_src[32*S_MAC_HI +: 32] = mac_hi_q;
    rd_src[32*S_IPV4 +: 32] = ipv4_q;
    rd_src[32*S_VLAN +: 32] = vlan_q;
    rd_src[32*S_TICK +: 32] = tick_q;
    rd_src[32*S_US +: 32] = us_q;
    rd_src[32*S_AI +: 32] = ai_q;
    rd_src[32*S_HAI +: 32] = hai_q;
    rd_src[32*S_RMIN +: 32] = rmin_q;
    rd_src[32*S_ALPHA +: 32] = alpha_q;
    rd_src[32*S_ALPHA_T +: 32] = alpha_t_q;
    rd_src[32*S_RATE_T +: 32] = rate_t_q;
    rd_src[32*S_BYTES +: 32] = bytes_q;
    rd_src[32*S_STAGES +: 32] = stages_q;
    rd_src[32*S_CNP_CFG +: 32] = cnp_cfg_q;
    rd_src[32*S_CNP_INT +: 32] = cnp_int_q;
    rd_src[32*S_CMD_STATUS +: 32] = (32'(busy_q) << roce_regs_pkg::CMD_STATUS_BUSY_LSB)
                                  | (32'(cmd_err_q) << roce_regs_pkg::CMD_STATUS_ERROR_LSB);
    rd_src[32*S_CMD_ARG +: 32] = cmd_arg_q;
    rd_src[32*S_QP_INFO +: 32] = qp_info_q;
    rd_src[32*S_CQ_INFO +: 32] = cq_info_q;
    rd_src[32*SEL_GID +: 32*GID_N] = gid_q;
    rd_src[32*SEL_CD +: 32*CD_N] = cmd_data_q;
    for (int i = 0; i < NCNT_I; i++)
      rd_src[32*(SEL_LO + i) +: 32] = cnt_q[64*i +: 32];
    rd_src[32*SEL_HI +: 32] = hi_latch_q;
  end

  // Stage 1 (the rd_go cycle): the selected word's OR within each of three groups (scalars
  // and GID; CMD_DATA; the counters' LO registers and the latch), registered in rd_part_q.
  // Stage 2: the three ORed into s_axil_rdata. (One AND-OR over all NSEL words is too wide
  // for one cycle: ABC maps it to three levels of 8-input LUTs, LUT6 + MUXF7 + MUXF8 each.)
  logic [31:0] rd_a, rd_b, rd_c;
  always_comb begin
    rd_a = 32'd0;
    rd_b = 32'd0;
    rd_c = 32'd0;
    for (int i = 0; i < SEL_CD; i++)
      rd_a = rd_a | (rd_src[32*i +: 32] & {32{ar_sel[i]}});
    for (int i = SEL_CD; i < SEL_LO; i++)
      rd_b = rd_b | (rd_src[32*i +: 32] & {32{ar_sel[i]}});
    for (int i = SEL_LO; i < NSEL; i++)
      rd_c = rd_c | (rd_src[32*i +: 32] & {32{ar_sel[i]}});
  end

  logic        rd1_q;       // stage 2 holds a read (its data in rd_part_q)
  logic [95:0] rd_part_q;
  assign rd_go = ar_full && !rd1_q;

  always_ff @(posedge clk) begin
    if (s_axil_arvalid && s_axil_arready) begin
      ar_full <= 1'b1;
      ar_sel <= in_sel;
      ar_lo <= |in_sel[SEL_LO +: NCNT_I];
    end
    if (s_axil_rvalid && s_axil_rready) s_axil_rvalid <= 1'b0;
    if (rd1_q && !s_axil_rvalid) begin
      rd1_q <= 1'b0;
      s_axil_rvalid <= 1'b1;
      s_axil_rdata <= rd_part_q[31:0] | rd_part_q[63:32] | rd_part_q[95:64];
    end
    if (rd_go) begin
      ar_full <= 1'b0;
      rd1_q <= 1'b1;
      rd_part_q <= {rd_c, rd_b, rd_a};
    end
    if (rst) begin
      ar_full <= 1'b0;
      ar_sel <= '0;
      ar_lo <= 1'b0;
      rd1_q <= 1'b0;
      rd_part_q <= 96'd0;
      s_axil_rvalid <= 1'b0;
      s_axil_rdata <= 32'd0;
    end
  end
  assign s_axil_rresp = 2'b00;

  // ---------------------------------------------------------------- outputs
  assign cfg_enable = ctrl_q[roce_regs_pkg::CTRL_ENABLE_LSB];
  assign cfg_ecn_enable = ctrl_q[roce_regs_pkg::CTRL_ECN_ENABLE_LSB];
  assign cfg_cnp_enable = ctrl_q[roce_regs_pkg::CTRL_CNP_ENABLE_LSB];
  assign cfg_dcqcn_enable = ctrl_q[roce_regs_pkg::CTRL_DCQCN_ENABLE_LSB];
  assign cfg_pfc_enable = ctrl_q[roce_regs_pkg::CTRL_PFC_ENABLE_LSB];
  assign cfg_mac = {mac_hi_q[15:0], mac_lo_q};
  assign cfg_ipv4 = ipv4_q;
  // GID byte 0 (the first on the wire) in bits 127:120
  assign cfg_gid = {gid_q[31:0], gid_q[63:32], gid_q[95:64], gid_q[127:96]};
  assign cfg_vlan_enable = vlan_q[roce_regs_pkg::VLAN_ENABLE_LSB];
  assign cfg_vlan_vid = vlan_q[roce_regs_pkg::VLAN_VID_LSB +: 12];
  assign cfg_vlan_pcp = vlan_q[roce_regs_pkg::VLAN_PCP_LSB +: 3];
  assign cfg_tick_cycles = tick_q[15:0];
  assign cfg_us_cycles = us_q[11:0];
  assign cfg_dcqcn_rate_ai = ai_q[19:0];
  assign cfg_dcqcn_rate_hai = hai_q[19:0];
  assign cfg_dcqcn_rate_min = rmin_q[19:0];
  assign cfg_dcqcn_g = alpha_q[roce_regs_pkg::DCQCN_ALPHA_G_LSB +: 10];
  assign cfg_dcqcn_alpha_init = alpha_q[roce_regs_pkg::DCQCN_ALPHA_INIT_LSB +: 10];
  assign cfg_dcqcn_alpha_us = alpha_t_q[15:0];
  assign cfg_dcqcn_rate_us = rate_t_q[15:0];
  assign cfg_dcqcn_byte_counter = bytes_q;
  assign cfg_dcqcn_stages = stages_q[4:0];
  assign cfg_cnp_dscp = cnp_cfg_q[roce_regs_pkg::CNP_CFG_DSCP_LSB +: 6];
  assign cfg_cnp_pcp = cnp_cfg_q[roce_regs_pkg::CNP_CFG_PCP_LSB +: 3];
  assign cfg_cnp_interval_us = cnp_int_q[15:0];
  assign cmd_arg = cmd_arg_q;
  assign cmd_data = cmd_data_q;
  assign irq = |(irq_status_q & ~irq_mask_q);
  assign m_axis_db_tvalid = db_valid;
  assign m_axis_db_tdata = db_data;
  assign m_axis_db_tuser = db_kind;

  // Bits of registers no output uses (fields wider than their port, reserved bits that the
  // masks keep at 0, the low address bits).
  logic unused;
  assign unused = ^{aw_addr[1:0], s_axil_araddr[1:0], mac_hi_q[31:16], tick_q[31:16], us_q[31:12],
                    ai_q[31:20], hai_q[31:20], rmin_q[31:20], alpha_q, alpha_t_q[31:16],
                    rate_t_q[31:16], stages_q[31:5], cnp_cfg_q, cnp_int_q[31:16], vlan_q};

endmodule

`resetall
