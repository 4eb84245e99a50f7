// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_ctrl: the engine's control plane: roce_regs (BAR0) with the command router in front
// of roce_qp_ctx (QP_WRITE, QP_READ, QP_MODIFY), roce_cq (CQ_WRITE, CQ_READ) and
// roce_mr_check (MR_WRITE, MR_READ, MR_INVALIDATE); NOP completes at once, other opcodes with
// BAD_OPCODE. CQ doorbells go to roce_cq, SQ/RQ doorbells out on m_axis_db; STATUS.READY is
// the AND of the tables' init_done and dp_init (the data path blocks'). Its other ports are
// the tables' transport sides: the attribute ports (rx_attr_*, tx_attr_*), context ops
// (ctx_op_valid, ctx_op, ctx_op_done), state reads (st_rd_*), QP errors (s_qp_err_*),
// completions and CQE writes, MR checks.
// Model: the engine model's register interface (Engine::mmio_read / mmio_write).
// Latency: as roce_regs for registers; a command's BUSY falls a cycle after its table's
//   cmd_done (CQ 2 cycles after the hand-over, MR about 6, QP 4 to 8 plus the owners').
// Throughput: one command at a time.
//
// Parameters:
//   LOG_MAX_QP, LOG_MAX_CQ, LOG_MAX_MR, MAX_MTU: the build's sizes (CAPS).

`resetall
`default_nettype none

module roce_ctrl #(
  parameter int LOG_MAX_QP = 10,
  parameter int LOG_MAX_CQ = 8,
  parameter int LOG_MAX_MR = 10,
  parameter int MAX_MTU = 5,
  parameter int BF = 1,
  localparam int NCNT = roce_regs_pkg::NUM_COUNTERS
) (
  input  wire logic                 clk,
  input  wire logic                 rst,

  input  wire logic [15:0]          s_axil_awaddr,
  input  wire logic                 s_axil_awvalid,
  output      logic                 s_axil_awready,
  input  wire logic [31:0]          s_axil_wdata,
  input  wire logic [3:0]           s_axil_wstrb,
  input  wire logic                 s_axil_wvalid,
  output      logic                 s_axil_wready,
  output      logic [1:0]           s_axil_bresp,
  output      logic                 s_axil_bvalid,
  input  wire logic                 s_axil_bready,
  input  wire logic [15:0]          s_axil_araddr,
  input  wire logic                 s_axil_arvalid,
  output      logic                 s_axil_arready,
  output      logic [31:0]          s_axil_rdata,
  output      logic [1:0]           s_axil_rresp,
  output      logic                 s_axil_rvalid,
  input  wire logic                 s_axil_rready,
  output      logic                 irq,

  output      logic           cfg_enable,
  output      logic           cfg_ecn_enable,
  output      logic           cfg_cnp_enable,
  output      logic           cfg_dcqcn_enable,
  output      logic           cfg_pfc_enable,
  output      logic [47:0]    cfg_mac,
  output      logic [31:0]    cfg_ipv4,
  output      logic [127:0]   cfg_gid,
  output      logic           cfg_vlan_enable,
  output      logic [11:0]    cfg_vlan_vid,
  output      logic [2:0]     cfg_vlan_pcp,
  output      logic [15:0]    cfg_tick_cycles,
  output      logic [11:0]    cfg_us_cycles,
  output      logic [19:0]    cfg_dcqcn_rate_ai,
  output      logic [19:0]    cfg_dcqcn_rate_hai,
  output      logic [19:0]    cfg_dcqcn_rate_min,
  output      logic [9:0]     cfg_dcqcn_g,
  output      logic [9:0]     cfg_dcqcn_alpha_init,
  output      logic [15:0]    cfg_dcqcn_alpha_us,
  output      logic [15:0]    cfg_dcqcn_rate_us,
  output      logic [31:0]    cfg_dcqcn_byte_counter,
  output      logic [4:0]     cfg_dcqcn_stages,
  output      logic [5:0]     cfg_cnp_dscp,
  output      logic [2:0]     cfg_cnp_pcp,
  output      logic [15:0]    cfg_cnp_interval_us,
  output      logic                 soft_reset,
  input  wire logic                 status_link_up,
  input  wire logic                 dp_init,  // the data path blocks' reset sweeps are done
  input  wire logic                 fatal,
  input  wire logic [NCNT*16-1:0]   cnt_add,

  // SQ/RQ doorbells (m_axis_db_tuser: 0 SQ, 1 RQ)
  output      logic [31:0]          m_axis_db_tdata,
  output      logic [1:0]           m_axis_db_tuser,
  output      logic                 m_axis_db_tvalid,
  input  wire logic                 m_axis_db_tready,

  // QP attributes (roce_qp_ctx): RX and TX read ports, latency 2
  input  wire logic                 rx_attr_req_valid,
  input  wire logic [23:0]          rx_attr_req_qpn,
  output      logic                 rx_attr_valid,
  output      roce_rec_pkg::qp_attr_t rx_attr,
  output      logic [2:0]           rx_attr_state,
  input  wire logic                 tx_attr_req_valid,
  input  wire logic [23:0]          tx_attr_req_qpn,
  output      logic                 tx_attr_valid,
  output      roce_rec_pkg::qp_attr_t tx_attr,
  output      logic [2:0]           tx_attr_state,

  // context ops toward the engine-state owners, state reads from them (roce_qp_ctx)
  output      logic                 ctx_op_valid,
  output      roce_rec_pkg::ctx_op_req_t ctx_op,
  input  wire logic                 ctx_op_done,
  output      logic                 st_rd_valid,
  output      logic [23:0]          st_rd_qpn,
  input  wire logic                 st_rd_done,
  input  wire logic [23:0]          st_rd_sq_psn,
  input  wire logic [23:0]          st_rd_rq_psn,
  input  wire logic [15:0]          st_rd_sq_pi,
  input  wire logic [15:0]          st_rd_sq_ci,
  input  wire logic [15:0]          st_rd_rq_pi,
  input  wire logic [15:0]          st_rd_rq_ci,

  // transport errors (roce_qp_ctx: the QP enters Err, QP_ERR_INFO)
  input  wire logic                 s_qp_err_valid,
  output      logic                 s_qp_err_ready,
  input  wire logic [23:0]          s_qp_err_qpn,
  input  wire logic [7:0]           s_qp_err_cause,

  // completions in, CQE writes out (roce_cq)
  input  wire logic [255:0]         s_axis_cpl_tdata,
  input  wire logic [15:0]          s_axis_cpl_tuser,
  input  wire logic                 s_axis_cpl_tvalid,
  output      logic                 s_axis_cpl_tready,
  output      logic [63:0]          m_axis_dma_addr,
  output      logic [255:0]         m_axis_dma_tdata,
  output      logic                 m_axis_dma_tvalid,
  input  wire logic                 m_axis_dma_tready,

  // key checks (roce_mr_check)
  input  wire roce_rec_pkg::mr_req_t s_axis_mr,
  input  wire logic [15:0]          s_axis_mr_user,
  input  wire logic                 s_axis_mr_tvalid,
  output      logic                 s_axis_mr_tready,
  output      roce_rec_pkg::mr_res_t m_axis_mr,
  output      logic [15:0]          m_axis_mr_user,
  output      logic                 m_axis_mr_tvalid,
  input  wire logic                 m_axis_mr_tready
);

  // ---------------------------------------------------------------- register file
  logic          r_cmd_valid, r_cmd_ready, r_cmd_done, r_cmd_we;
  logic [7:0]    r_cmd_op, r_cmd_err;
  logic [23:0]   r_cmd_index;
  logic [31:0]   r_cmd_arg;
  logic [1023:0] r_cmd_data, r_cmd_rdata;
  logic [31:0]   db_data;
  logic [1:0]    db_kind;
  logic          db_valid, db_ready;
  logic          cq_ev, cq_err_v;
  logic [13:0]   cq_err_cq;
  logic [7:0]    cq_err_cause;
  logic          cq_init, mr_init, qp_init;
  logic          qp_err_valid;
  logic [23:0]   qp_err_qpn;
  logic [7:0]    qp_err_cause;

  roce_regs #(
    .LOG_MAX_QP(LOG_MAX_QP), .LOG_MAX_CQ(LOG_MAX_CQ), .LOG_MAX_MR(LOG_MAX_MR), .MAX_MTU(MAX_MTU),
    .BF(BF)
  ) u_regs (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
    .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb), .s_axil_wvalid(s_axil_wvalid),
    .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid),
    .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr), .s_axil_arvalid(s_axil_arvalid),
    .s_axil_arready(s_axil_arready), .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
    .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
    .cfg_enable(cfg_enable),
    .cfg_ecn_enable(cfg_ecn_enable),
    .cfg_cnp_enable(cfg_cnp_enable),
    .cfg_dcqcn_enable(cfg_dcqcn_enable),
    .cfg_pfc_enable(cfg_pfc_enable),
    .cfg_mac(cfg_mac),
    .cfg_ipv4(cfg_ipv4),
    .cfg_gid(cfg_gid),
    .cfg_vlan_enable(cfg_vlan_enable),
    .cfg_vlan_vid(cfg_vlan_vid),
    .cfg_vlan_pcp(cfg_vlan_pcp),
    .cfg_tick_cycles(cfg_tick_cycles),
    .cfg_us_cycles(cfg_us_cycles),
    .cfg_dcqcn_rate_ai(cfg_dcqcn_rate_ai),
    .cfg_dcqcn_rate_hai(cfg_dcqcn_rate_hai),
    .cfg_dcqcn_rate_min(cfg_dcqcn_rate_min),
    .cfg_dcqcn_g(cfg_dcqcn_g),
    .cfg_dcqcn_alpha_init(cfg_dcqcn_alpha_init),
    .cfg_dcqcn_alpha_us(cfg_dcqcn_alpha_us),
    .cfg_dcqcn_rate_us(cfg_dcqcn_rate_us),
    .cfg_dcqcn_byte_counter(cfg_dcqcn_byte_counter),
    .cfg_dcqcn_stages(cfg_dcqcn_stages),
    .cfg_cnp_dscp(cfg_cnp_dscp),
    .cfg_cnp_pcp(cfg_cnp_pcp),
    .cfg_cnp_interval_us(cfg_cnp_interval_us),
    .soft_reset(soft_reset),
    .status_ready(cq_init && mr_init && qp_init && dp_init), .status_link_up(status_link_up),
    .cq_event(cq_ev), .fatal(fatal),
    .qp_err_valid(qp_err_valid), .qp_err_qpn(qp_err_qpn), .qp_err_cause(qp_err_cause),
    .cq_err_valid(cq_err_v), .cq_err_cq(cq_err_cq), .cq_err_cause(cq_err_cause),
    .irq(irq),
    .cmd_valid(r_cmd_valid), .cmd_ready(r_cmd_ready), .cmd_opcode(r_cmd_op), .cmd_index(r_cmd_index),
    .cmd_arg(r_cmd_arg), .cmd_data(r_cmd_data), .cmd_done(r_cmd_done), .cmd_error(r_cmd_err),
    .cmd_rdata_we(r_cmd_we), .cmd_rdata(r_cmd_rdata),
    .m_axis_db_tdata(db_data), .m_axis_db_tuser(db_kind), .m_axis_db_tvalid(db_valid),
    .m_axis_db_tready(db_ready),
    .cnt_add(cnt_add)
  );

  // ---------------------------------------------------------------- command router
  typedef enum logic [1:0] { T_NONE, T_CQ, T_MR, T_QP } target_t;
  target_t tgt;
  always_comb begin
    case (r_cmd_op)
      roce_regs_pkg::CMD_OP_CQ_WRITE, roce_regs_pkg::CMD_OP_CQ_READ: tgt = T_CQ;
      roce_regs_pkg::CMD_OP_MR_WRITE, roce_regs_pkg::CMD_OP_MR_READ,
      roce_regs_pkg::CMD_OP_MR_INVALIDATE: tgt = T_MR;
      roce_regs_pkg::CMD_OP_QP_WRITE, roce_regs_pkg::CMD_OP_QP_READ,
      roce_regs_pkg::CMD_OP_QP_MODIFY: tgt = T_QP;
      default: tgt = T_NONE;
    endcase
  end

  logic cq_cmd_ready, mr_cmd_ready, qp_cmd_ready;
  logic cq_done, cq_we, mr_done, mr_we, qp_cmd_done, qp_cmd_rdata_we;
  logic [7:0] cq_err, mr_err, qp_cmd_error;
  logic [1023:0] qp_cmd_rdata;
  logic [255:0] cq_rdata;
  logic [511:0] mr_rdata;
  logic local_done;  // NOP / unknown opcode, answered here
  logic [7:0] local_err;

  always_comb begin
    case (tgt)
      T_CQ: r_cmd_ready = cq_cmd_ready;
      T_MR: r_cmd_ready = mr_cmd_ready;
      T_QP: r_cmd_ready = qp_cmd_ready;
      default: r_cmd_ready = 1'b1;
    endcase
  end
  logic fire;
  assign fire = r_cmd_valid && r_cmd_ready;

  always_ff @(posedge clk) begin
    local_done <= fire && tgt == T_NONE;
    local_err <= r_cmd_op == roce_regs_pkg::CMD_OP_NOP ? roce_regs_pkg::CMD_ERR_OK
                                                       : roce_regs_pkg::CMD_ERR_BAD_OPCODE;
    if (rst || soft_reset) local_done <= 1'b0;
  end

  // one command is in flight at a time, so at most one done per cycle
  assign r_cmd_done = cq_done || mr_done || qp_cmd_done || local_done;
  always_comb begin
    r_cmd_err = local_err;
    r_cmd_rdata = qp_cmd_rdata;
    r_cmd_we = 1'b0;
    if (cq_done) begin
      r_cmd_err = cq_err;
      r_cmd_we = cq_we;
      r_cmd_rdata = {768'd0, cq_rdata};
    end else if (mr_done) begin
      r_cmd_err = mr_err;
      r_cmd_we = mr_we;
      r_cmd_rdata = {512'd0, mr_rdata};
    end else if (qp_cmd_done) begin
      r_cmd_err = qp_cmd_error;
      r_cmd_we = qp_cmd_rdata_we;
    end
  end

  // ---------------------------------------------------------------- doorbells
  logic cq_db_ready;
  assign m_axis_db_tdata = db_data;
  assign m_axis_db_tuser = db_kind;
  assign m_axis_db_tvalid = db_valid && db_kind != 2'd2;
  assign db_ready = db_kind == 2'd2 ? cq_db_ready : m_axis_db_tready;

  // ---------------------------------------------------------------- tables
  logic [(1<<LOG_MAX_CQ)-1:0] cq_valid;

  roce_qp_ctx #(.LOG_N(LOG_MAX_QP), .LOG_CQ(LOG_MAX_CQ), .MAX_MTU(MAX_MTU)) u_qp (
    .clk(clk), .rst(rst), .soft_reset(soft_reset), .init_done(qp_init),
    .cmd_valid(r_cmd_valid && tgt == T_QP), .cmd_ready(qp_cmd_ready), .cmd_opcode(r_cmd_op),
    .cmd_index(r_cmd_index), .cmd_arg(r_cmd_arg), .cmd_data(r_cmd_data), .cmd_done(qp_cmd_done),
    .cmd_error(qp_cmd_error), .cmd_rdata_we(qp_cmd_rdata_we), .cmd_rdata(qp_cmd_rdata),
    .cq_valid(cq_valid),
    .rx_attr_req_valid(rx_attr_req_valid), .rx_attr_req_qpn(rx_attr_req_qpn),
    .rx_attr_valid(rx_attr_valid), .rx_attr(rx_attr), .rx_attr_state(rx_attr_state),
    .tx_attr_req_valid(tx_attr_req_valid), .tx_attr_req_qpn(tx_attr_req_qpn),
    .tx_attr_valid(tx_attr_valid), .tx_attr(tx_attr), .tx_attr_state(tx_attr_state),
    .ctx_op_valid(ctx_op_valid), .ctx_op(ctx_op), .ctx_op_done(ctx_op_done),
    .st_rd_valid(st_rd_valid), .st_rd_qpn(st_rd_qpn), .st_rd_done(st_rd_done),
    .st_rd_sq_psn(st_rd_sq_psn), .st_rd_rq_psn(st_rd_rq_psn), .st_rd_sq_pi(st_rd_sq_pi),
    .st_rd_sq_ci(st_rd_sq_ci), .st_rd_rq_pi(st_rd_rq_pi), .st_rd_rq_ci(st_rd_rq_ci),
    .err_valid(s_qp_err_valid), .err_ready(s_qp_err_ready), .err_qpn(s_qp_err_qpn),
    .err_cause(s_qp_err_cause),
    .qp_err_valid(qp_err_valid), .qp_err_qpn(qp_err_qpn), .qp_err_cause(qp_err_cause)
  );

  roce_cq #(.LOG_N(LOG_MAX_CQ)) u_cq (
    .clk(clk), .rst(rst), .soft_reset(soft_reset), .init_done(cq_init),
    .s_axis_cpl_tdata(s_axis_cpl_tdata), .s_axis_cpl_tuser(s_axis_cpl_tuser),
    .s_axis_cpl_tvalid(s_axis_cpl_tvalid), .s_axis_cpl_tready(s_axis_cpl_tready),
    .s_axis_db_tdata(db_data), .s_axis_db_tvalid(db_valid && db_kind == 2'd2),
    .s_axis_db_tready(cq_db_ready),
    .m_axis_dma_addr(m_axis_dma_addr), .m_axis_dma_tdata(m_axis_dma_tdata),
    .m_axis_dma_tvalid(m_axis_dma_tvalid), .m_axis_dma_tready(m_axis_dma_tready),
    .cq_event(cq_ev), .cq_err_valid(cq_err_v), .cq_err_cq(cq_err_cq), .cq_err_cause(cq_err_cause),
    .cq_valid(cq_valid),
    .cmd_valid(r_cmd_valid && tgt == T_CQ), .cmd_ready(cq_cmd_ready), .cmd_opcode(r_cmd_op),
    .cmd_index(r_cmd_index), .cmd_data(r_cmd_data[255:0]), .cmd_done(cq_done), .cmd_error(cq_err),
    .cmd_rdata_we(cq_we), .cmd_rdata(cq_rdata)
  );

  roce_mr_check #(.LOG_N(LOG_MAX_MR), .USER_W(16)) u_mr (
    .clk(clk), .rst(rst), .soft_reset(soft_reset), .init_done(mr_init),
    .s_axis_req(s_axis_mr), .s_axis_req_user(s_axis_mr_user), .s_axis_req_tvalid(s_axis_mr_tvalid),
    .s_axis_req_tready(s_axis_mr_tready),
    .m_axis_res(m_axis_mr), .m_axis_res_user(m_axis_mr_user), .m_axis_res_tvalid(m_axis_mr_tvalid),
    .m_axis_res_tready(m_axis_mr_tready),
    .cmd_valid(r_cmd_valid && tgt == T_MR), .cmd_ready(mr_cmd_ready), .cmd_opcode(r_cmd_op),
    .cmd_index(r_cmd_index), .cmd_data(r_cmd_data[511:0]), .cmd_done(mr_done), .cmd_error(mr_err),
    .cmd_rdata_we(mr_we), .cmd_rdata(mr_rdata)
  );

endmodule

`resetall
