// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_engine: the RoCEv2 RC engine's top level: control plane (roce_ctrl), RX (roce_icrc
// check, roce_axis_drop_fifo, roce_rx_parse, roce_axis_fifo, roce_rx_disp), responder
// (roce_resp, roce_ack_q, roce_rd_rsp), requester and completer (roce_req, roce_comp),
// congestion control (roce_dcqcn), TX (roce_tx_arb, roce_tx_build, roce_icrc insert) and the
// shared ports (roce_dma_rd_arb, roce_dma_wr_arb, roce_mr_arb); here: the context-op fan-out
// to every owner, the QP error and completion merges, the attribute-port sharing, counters.
// The block diagram and how the blocks connect: docs/engine-hdl.md.
// Ports: s_axil_* (BAR0, AXI4-Lite, 16-bit addresses) and irq; s_axis_bf_* (the BlueFlame
//   window, BAR2: one 128-byte SQ WQE with its bf_db per two beats); s_axis_rx_* / m_axis_tx_*
//   (MAC, 512-bit, one frame per tlast, no FCS; rx tuser = bad frame); m_dma_rd_* /
//   s_dma_rd_* (tagged DMA reads, data in order per tag); m_dma_wr_* / m_axis_dma_wr_* (DMA
//   writes, lane-0 aligned data); status_link_up.
// Latency and throughput: per block (docs/engine-hdl.md); measured in the engine by
//   roce-sim latency and sweep (BENCHMARKS.md).
// Model: engine::Engine; tests/tests/engine_cosim.rs runs both side by side.
//
// Parameters:
//   LOG_MAX_QP, LOG_MAX_CQ, LOG_MAX_MR, MAX_MTU: the build's sizes (CAPS).
//   DMA_TAG_W  width of the DMA read tag.
//   BF         CAPS.BF: 1 when the board connects s_axis_bf_* to the BlueFlame window.

`resetall
`default_nettype none

module roce_engine #(
  parameter int LOG_MAX_QP = 10,
  parameter int LOG_MAX_CQ = 8,
  parameter int LOG_MAX_MR = 10,
  parameter int MAX_MTU = 5,
  parameter int DMA_TAG_W = 4,
  parameter int BF = 1
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

  input  wire logic [511:0]         s_axis_bf_tdata,
  input  wire logic                 s_axis_bf_tvalid,
  output      logic                 s_axis_bf_tready,
  input  wire logic                 s_axis_bf_tlast,

  input  wire logic [511:0]         s_axis_rx_tdata,
  input  wire logic [63:0]          s_axis_rx_tkeep,
  input  wire logic                 s_axis_rx_tvalid,
  output      logic                 s_axis_rx_tready,
  input  wire logic                 s_axis_rx_tlast,
  input  wire logic                 s_axis_rx_tuser,

  output      logic [511:0]         m_axis_tx_tdata,
  output      logic [63:0]          m_axis_tx_tkeep,
  output      logic                 m_axis_tx_tvalid,
  input  wire logic                 m_axis_tx_tready,
  output      logic                 m_axis_tx_tlast,
  output      logic                 m_axis_tx_tuser,

  output      logic                 m_dma_rd_valid,
  input  wire logic                 m_dma_rd_ready,
  output      roce_rec_pkg::dma_req_t m_dma_rd,
  output      logic [DMA_TAG_W-1:0] m_dma_rd_tag,
  input  wire logic [511:0]         s_dma_rd_tdata,
  input  wire logic                 s_dma_rd_tvalid,
  output      logic                 s_dma_rd_tready,
  input  wire logic                 s_dma_rd_tlast,
  input  wire logic                 s_dma_rd_tuser,
  input  wire logic [DMA_TAG_W-1:0] s_dma_rd_tid,

  output      logic                 m_dma_wr_valid,
  input  wire logic                 m_dma_wr_ready,
  output      roce_rec_pkg::dma_req_t m_dma_wr,
  output      logic [511:0]         m_axis_dma_wr_tdata,
  output      logic [63:0]          m_axis_dma_wr_tkeep,
  output      logic                 m_axis_dma_wr_tvalid,
  input  wire logic                 m_axis_dma_wr_tready,
  output      logic                 m_axis_dma_wr_tlast,

  input  wire logic                 status_link_up
);

  localparam int NCNT = roce_regs_pkg::NUM_COUNTERS;
  localparam int HDR_W = 8 * roce_rec_pkg::RX_HDR_BYTES;
  localparam int TXH_W = 8 * roce_rec_pkg::TX_HDR_BYTES;
  localparam int ATTR_W = 8 * roce_rec_pkg::QP_ATTR_BYTES;
  localparam int DESC_W = 8 * roce_rec_pkg::TX_DESC_BYTES;
  localparam int RSP_W = 8 * roce_rec_pkg::RD_RSP_BYTES;

  // ================================================================ control plane
  logic         cfg_enable, cfg_ecn_enable, cfg_cnp_enable, cfg_dcqcn_enable, cfg_pfc_enable;
  logic [47:0]  cfg_mac;
  logic [31:0]  cfg_ipv4;
  logic [127:0] cfg_gid;
  logic         cfg_vlan_enable;
  logic [11:0]  cfg_vlan_vid;
  logic [2:0]   cfg_vlan_pcp;
  logic [15:0]  cfg_tick_cycles;
  logic [11:0]  cfg_us_cycles;
  logic [19:0]  cfg_dcqcn_rate_ai, cfg_dcqcn_rate_hai, cfg_dcqcn_rate_min;
  logic [9:0]   cfg_dcqcn_g, cfg_dcqcn_alpha_init;
  logic [15:0]  cfg_dcqcn_alpha_us, cfg_dcqcn_rate_us;
  logic [31:0]  cfg_dcqcn_byte_counter;
  logic [4:0]   cfg_dcqcn_stages;
  logic [5:0]   cfg_cnp_dscp;
  logic [2:0]   cfg_cnp_pcp;
  logic [15:0]  cfg_cnp_interval_us;
  logic         soft_reset;
  logic         dp_init;  // the data path blocks' init_done, ANDed into STATUS.READY
  logic [NCNT*16-1:0] cnt_add, cnt_add_q;

  logic [31:0]  db_tdata;
  logic [1:0]   db_tuser;
  logic         db_tvalid, db_tready;

  logic         rx_attr_req_valid, rx_attr_valid, tx_attr_req_valid, tx_attr_valid;
  logic [23:0]  rx_attr_req_qpn, tx_attr_req_qpn;
  roce_rec_pkg::qp_attr_t rx_attr, tx_attr;
  logic [2:0]   rx_attr_state, tx_attr_state;

  logic         ctx_op_valid, ctx_op_done;
  roce_rec_pkg::ctx_op_req_t ctx_op;
  logic         st_rd_valid, st_rd_done;
  logic [23:0]  st_rd_qpn, st_rd_rq_psn, st_rd_sq_psn;
  logic [15:0]  st_rd_rq_pi, st_rd_rq_ci, st_rd_sq_pi, st_rd_sq_ci;

  logic         qerr_valid, qerr_ready;
  logic [23:0]  qerr_qpn;
  logic [7:0]   qerr_cause;

  logic [255:0] cpl_tdata;
  logic [15:0]  cpl_tuser;
  logic         cpl_tvalid, cpl_tready;
  logic [63:0]  cqe_addr;
  logic [255:0] cqe_data;
  logic         cqe_valid, cqe_ready;

  logic         mr_valid, mr_ready;
  roce_rec_pkg::mr_req_t mr_req;
  logic [15:0]  mr_user;
  roce_rec_pkg::mr_res_t mr_res;
  logic [15:0]  mr_res_user;
  logic         mr_res_valid, mr_res_ready;

  roce_ctrl #(
    .LOG_MAX_QP(LOG_MAX_QP), .LOG_MAX_CQ(LOG_MAX_CQ), .LOG_MAX_MR(LOG_MAX_MR), .MAX_MTU(MAX_MTU),
    .BF(BF)
  ) u_ctrl (
    .clk, .rst,
    .s_axil_awaddr, .s_axil_awvalid, .s_axil_awready, .s_axil_wdata, .s_axil_wstrb,
    .s_axil_wvalid, .s_axil_wready, .s_axil_bresp, .s_axil_bvalid, .s_axil_bready,
    .s_axil_araddr, .s_axil_arvalid, .s_axil_arready, .s_axil_rdata, .s_axil_rresp,
    .s_axil_rvalid, .s_axil_rready, .irq,
    .cfg_enable, .cfg_ecn_enable, .cfg_cnp_enable, .cfg_dcqcn_enable, .cfg_pfc_enable,
    .cfg_mac, .cfg_ipv4, .cfg_gid, .cfg_vlan_enable, .cfg_vlan_vid, .cfg_vlan_pcp,
    .cfg_tick_cycles, .cfg_us_cycles, .cfg_dcqcn_rate_ai, .cfg_dcqcn_rate_hai,
    .cfg_dcqcn_rate_min, .cfg_dcqcn_g, .cfg_dcqcn_alpha_init, .cfg_dcqcn_alpha_us,
    .cfg_dcqcn_rate_us, .cfg_dcqcn_byte_counter, .cfg_dcqcn_stages, .cfg_cnp_dscp,
    .cfg_cnp_pcp, .cfg_cnp_interval_us,
    .soft_reset, .status_link_up, .dp_init, .fatal(1'b0), .cnt_add(cnt_add_q),
    .m_axis_db_tdata(db_tdata), .m_axis_db_tuser(db_tuser), .m_axis_db_tvalid(db_tvalid),
    .m_axis_db_tready(db_tready),
    .rx_attr_req_valid, .rx_attr_req_qpn, .rx_attr_valid, .rx_attr, .rx_attr_state,
    .tx_attr_req_valid, .tx_attr_req_qpn, .tx_attr_valid, .tx_attr, .tx_attr_state,
    .ctx_op_valid, .ctx_op, .ctx_op_done,
    .st_rd_valid, .st_rd_qpn, .st_rd_done, .st_rd_sq_psn, .st_rd_rq_psn,
    .st_rd_sq_pi, .st_rd_sq_ci, .st_rd_rq_pi, .st_rd_rq_ci,
    .s_qp_err_valid(qerr_valid), .s_qp_err_ready(qerr_ready), .s_qp_err_qpn(qerr_qpn),
    .s_qp_err_cause(qerr_cause),
    .s_axis_cpl_tdata(cpl_tdata), .s_axis_cpl_tuser(cpl_tuser), .s_axis_cpl_tvalid(cpl_tvalid),
    .s_axis_cpl_tready(cpl_tready),
    .m_axis_dma_addr(cqe_addr), .m_axis_dma_tdata(cqe_data), .m_axis_dma_tvalid(cqe_valid),
    .m_axis_dma_tready(cqe_ready),
    .s_axis_mr(mr_req), .s_axis_mr_user(mr_user),
    .s_axis_mr_tvalid(mr_valid), .s_axis_mr_tready(mr_ready),
    .m_axis_mr(mr_res), .m_axis_mr_user(mr_res_user),
    .m_axis_mr_tvalid(mr_res_valid), .m_axis_mr_tready(mr_res_ready)
  );

  // ================================================================ RX path
  logic [511:0] ic_tdata;
  logic [63:0]  ic_tkeep;
  logic         ic_tvalid, ic_tready, ic_tlast;
  logic [1:0]   ic_tuser;
  roce_icrc #(.DATA_W(512), .INSERT(0)) u_icrc_rx (
    .clk, .rst,
    .s_axis_tdata(s_axis_rx_tdata), .s_axis_tkeep(s_axis_rx_tkeep), .s_axis_tvalid(s_axis_rx_tvalid),
    .s_axis_tready(s_axis_rx_tready), .s_axis_tlast(s_axis_rx_tlast), .s_axis_tuser(s_axis_rx_tuser),
    .m_axis_tdata(ic_tdata), .m_axis_tkeep(ic_tkeep), .m_axis_tvalid(ic_tvalid),
    .m_axis_tready(ic_tready), .m_axis_tlast(ic_tlast), .m_axis_tuser(ic_tuser)
  );

  logic [511:0] df_tdata;
  logic [63:0]  df_tkeep;
  logic         df_tvalid, df_tready, df_tlast;
  logic [0:0]   df_tuser;
  logic [15:0]  df_tlen;
  logic         df_good, df_bad, df_over, df_full;
  logic [31:0]  df_good_n, df_bad_n, df_over_n, df_full_n;
  roce_axis_drop_fifo #(.DATA_W(512)) u_drop_fifo (
    .clk, .rst,
    .s_axis_tdata(ic_tdata), .s_axis_tkeep(ic_tkeep), .s_axis_tvalid(ic_tvalid),
    .s_axis_tready(ic_tready), .s_axis_tlast(ic_tlast), .s_axis_tuser(ic_tuser),
    .m_axis_tdata(df_tdata), .m_axis_tkeep(df_tkeep), .m_axis_tvalid(df_tvalid),
    .m_axis_tready(df_tready), .m_axis_tlast(df_tlast), .m_axis_tuser(df_tuser),
    .m_axis_tlen(df_tlen),
    .good_frame(df_good), .drop_bad_frame(df_bad), .drop_overflow_frame(df_over),
    .drop_full_frame(df_full), .good_count(df_good_n), .drop_bad_count(df_bad_n),
    .drop_overflow_count(df_over_n), .drop_full_count(df_full_n)
  );

  logic [HDR_W-1:0] rec;
  logic         rec_valid, rec_ready;
  logic [511:0] pay_tdata, pp_tdata;
  logic [63:0]  pay_tkeep, pp_tkeep;
  logic         pay_tvalid, pay_tready, pay_tlast, pay_tuser;
  logic         pp_tvalid, pp_tready, pp_tlast, pp_tuser;
  roce_rx_parse u_rx_parse (
    .clk, .rst,
    .s_axis_tdata(df_tdata), .s_axis_tkeep(df_tkeep), .s_axis_tvalid(df_tvalid),
    .s_axis_tready(df_tready), .s_axis_tlast(df_tlast), .s_axis_tlen(df_tlen),
    .m_axis_rec_tdata(rec), .m_axis_rec_tvalid(rec_valid), .m_axis_rec_tready(rec_ready),
    .m_axis_pay_tdata(pp_tdata), .m_axis_pay_tkeep(pp_tkeep), .m_axis_pay_tvalid(pp_tvalid),
    .m_axis_pay_tready(pp_tready), .m_axis_pay_tlast(pp_tlast), .m_axis_pay_tuser(pp_tuser)
  );

  // payloads wait here, not in the parser, so the next header record is not held up
  roce_axis_fifo #(.DATA_W(512), .USER_W(1), .DEPTH(128)) u_pay_fifo (
    .clk, .rst,
    .s_axis_tdata(pp_tdata), .s_axis_tkeep(pp_tkeep), .s_axis_tvalid(pp_tvalid),
    .s_axis_tready(pp_tready), .s_axis_tlast(pp_tlast), .s_axis_tuser(pp_tuser),
    .m_axis_tdata(pay_tdata), .m_axis_tkeep(pay_tkeep), .m_axis_tvalid(pay_tvalid),
    .m_axis_tready(pay_tready), .m_axis_tlast(pay_tlast), .m_axis_tuser(pay_tuser)
  );

  // RX attribute port: the dispatch first, then roce_resp's flush lookups, then roce_comp's
  // (timeouts, kicks, flushes); the answer (latency 2) goes to whoever asked
  logic                 disp_attr_valid, resp_attr_valid, resp_attr_ready;
  logic                 comp_attr_valid, comp_attr_ready;
  logic [LOG_MAX_QP-1:0] disp_attr_qpn;
  logic [23:0]          resp_attr_qpn, comp_attr_qpn;
  logic [3:0]           rx_attr_who;  // who asked 1 and 2 cycles ago: 0 dispatch, 1 resp, 2 comp
  assign resp_attr_ready = !disp_attr_valid;
  assign comp_attr_ready = !disp_attr_valid && !resp_attr_valid;
  assign rx_attr_req_valid = disp_attr_valid || resp_attr_valid || comp_attr_valid;
  assign rx_attr_req_qpn = disp_attr_valid ? {{(24 - LOG_MAX_QP){1'b0}}, disp_attr_qpn} :
                           resp_attr_valid ? resp_attr_qpn : comp_attr_qpn;
  always_ff @(posedge clk) begin
    rx_attr_who[1:0] <= disp_attr_valid ? 2'd0 : resp_attr_valid ? 2'd1 : 2'd2;
    rx_attr_who[3:2] <= rx_attr_who[1:0];
    if (rst) rx_attr_who <= 4'd0;
  end
  logic disp_attr_rvalid, resp_attr_rvalid, comp_attr_rvalid;
  assign disp_attr_rvalid = rx_attr_valid && rx_attr_who[3:2] == 2'd0;
  assign resp_attr_rvalid = rx_attr_valid && rx_attr_who[3:2] == 2'd1;
  assign comp_attr_rvalid = rx_attr_valid && rx_attr_who[3:2] == 2'd2;

  logic             req_valid, req_ready, rsp_valid, rsp_ready;
  logic [HDR_W-1:0] d_hdr;
  logic [ATTR_W-1:0] d_attr;
  logic [2:0]       d_state;
  logic [511:0]     dq_tdata, dr_tdata;
  logic [63:0]      dq_tkeep, dr_tkeep;
  logic             dq_tvalid, dq_tready, dq_tlast, dr_tvalid, dr_tready, dr_tlast;
  logic             cnp_in_valid, cnp_in_ready, ce_valid, ce_ready;
  logic [23:0]      cnp_in_qpn, ce_qpn;
  logic             c_malformed, c_dropped, c_not_roce, c_unknown, c_ecn, c_cnp_rcvd;
  roce_rx_disp #(.LOG_N(LOG_MAX_QP)) u_rx_disp (
    .clk, .rst,
    .cfg_enable, .cfg_ecn_enable, .cfg_mac, .cfg_ipv4, .cfg_gid,
    .s_rec_valid(rec_valid), .s_rec_ready(rec_ready), .s_rec(rec),
    .s_axis_pay_tdata(pay_tdata), .s_axis_pay_tkeep(pay_tkeep), .s_axis_pay_tvalid(pay_tvalid),
    .s_axis_pay_tready(pay_tready), .s_axis_pay_tlast(pay_tlast), .s_axis_pay_tuser(pay_tuser),
    .m_attr_valid(disp_attr_valid), .m_attr_qpn(disp_attr_qpn), .s_attr_valid(disp_attr_rvalid),
    .s_attr_data(rx_attr), .s_attr_state(rx_attr_state),
    .m_req_valid(req_valid), .m_req_ready(req_ready), .m_rsp_valid(rsp_valid),
    .m_rsp_ready(rsp_ready), .m_hdr(d_hdr), .m_attr(d_attr), .m_state(d_state),
    .m_axis_req_tdata(dq_tdata), .m_axis_req_tkeep(dq_tkeep), .m_axis_req_tvalid(dq_tvalid),
    .m_axis_req_tready(dq_tready), .m_axis_req_tlast(dq_tlast),
    .m_axis_rsp_tdata(dr_tdata), .m_axis_rsp_tkeep(dr_tkeep), .m_axis_rsp_tvalid(dr_tvalid),
    .m_axis_rsp_tready(dr_tready), .m_axis_rsp_tlast(dr_tlast),
    .m_cnp_valid(cnp_in_valid), .m_cnp_ready(cnp_in_ready), .m_cnp_qpn(cnp_in_qpn),
    .m_ce_valid(ce_valid), .m_ce_ready(ce_ready), .m_ce_qpn(ce_qpn),
    .cnt_malformed(c_malformed), .cnt_dropped(c_dropped), .cnt_not_roce(c_not_roce),
    .cnt_unknown_qp(c_unknown), .cnt_ecn(c_ecn), .cnt_cnp(c_cnp_rcvd)
  );

  // ================================================================ responder
  logic [511:0] rdd_tdata;  // DMA read data, shared by the read clients
  logic         rdd_tlast, rdd_tuser;
  logic         db_rq, db_sq;
  assign db_rq = db_tuser[0];
  assign db_sq = !db_tuser[0];
  logic         rq_db_ready, sq_db_ready;
  assign db_tready = db_sq ? sq_db_ready : rq_db_ready;

  logic         r_ctx_valid, r_ctx_ready, r_ctx_done;
  logic         r_strd_valid, r_strd_ready, r_strd_done;
  logic [23:0]  r_st_rq_psn;
  logic [15:0]  r_st_rq_pi, r_st_rq_ci;
  logic         r_cpl_valid, r_cpl_ready;
  logic [255:0] r_cpl_tdata;
  logic [15:0]  r_cpl_tuser;
  logic         r_err_valid, r_err_ready;
  logic [23:0]  r_err_qpn;
  logic [7:0]   r_err_cause;
  logic         r_mr_valid, r_mr_ready;
  roce_rec_pkg::mr_req_t r_mr;
  logic [1:0]   r_mr_user, r_mr_res_user;
  logic         r_mr_res_valid, r_mr_res_ready;
  logic         r_rd_valid, r_rd_ready;
  roce_rec_pkg::dma_req_t r_rd;
  logic         r_rdd_tvalid, r_rdd_tready;
  logic         r_wr_valid, r_wr_ready;
  roce_rec_pkg::dma_req_t r_wr;
  logic [511:0] r_wd_tdata;
  logic [63:0]  r_wd_tkeep;
  logic         r_wd_tvalid, r_wd_tready, r_wd_tlast;
  logic         ack_valid, ack_ready;
  logic [23:0]  ack_qpn, ack_psn, ack_msn;
  logic [7:0]   ack_syn;
  logic         rsp_req_valid, rsp_req_ready;
  logic [RSP_W-1:0] rsp_req;
  logic         c_dup, c_nak_seq, c_nak_rnr, c_nak_inv, c_nak_acc, c_nak_op, c_r_dma_err, c_r_drop;
  logic         resp_init;

  roce_resp #(.LOG_N(LOG_MAX_QP)) u_resp (
    .clk, .rst, .soft_reset, .init_done(resp_init),
    .s_req_valid(req_valid), .s_req_ready(req_ready), .s_req_hdr(d_hdr), .s_req_attr(d_attr),
    .s_axis_pay_tdata(dq_tdata), .s_axis_pay_tkeep(dq_tkeep), .s_axis_pay_tvalid(dq_tvalid),
    .s_axis_pay_tready(dq_tready), .s_axis_pay_tlast(dq_tlast),
    .s_db_valid(db_tvalid && db_rq), .s_db_ready(rq_db_ready),
    .s_db_qpn({8'd0, db_tdata[roce_regs_pkg::RQ_DB_QP_LSB +: 16]}),
    .s_db_pi(db_tdata[roce_regs_pkg::RQ_DB_PI_LSB +: 16]),
    .s_ctx_valid(r_ctx_valid), .s_ctx_ready(r_ctx_ready), .s_ctx(ctx_op), .ctx_done(r_ctx_done),
    .s_strd_valid(r_strd_valid), .s_strd_ready(r_strd_ready), .s_strd_qpn(st_rd_qpn),
    .strd_done(r_strd_done), .strd_rq_psn(r_st_rq_psn), .strd_rq_pi(r_st_rq_pi),
    .strd_rq_ci(r_st_rq_ci),
    .m_attr_valid(resp_attr_valid), .m_attr_ready(resp_attr_ready), .m_attr_qpn(resp_attr_qpn),
    .s_attr_valid(resp_attr_rvalid), .s_attr_data(rx_attr),
    .m_mr_valid(r_mr_valid), .m_mr_ready(r_mr_ready), .m_mr(r_mr), .m_mr_user(r_mr_user),
    .s_mr_valid(r_mr_res_valid), .s_mr_ready(r_mr_res_ready), .s_mr(mr_res),
    .s_mr_user(r_mr_res_user),
    .m_dma_rd_valid(r_rd_valid), .m_dma_rd_ready(r_rd_ready), .m_dma_rd(r_rd),
    .s_dma_rd_tdata(rdd_tdata), .s_dma_rd_tvalid(r_rdd_tvalid), .s_dma_rd_tready(r_rdd_tready),
    .s_dma_rd_tlast(rdd_tlast), .s_dma_rd_tuser(rdd_tuser),
    .m_dma_wr_valid(r_wr_valid), .m_dma_wr_ready(r_wr_ready), .m_dma_wr(r_wr),
    .m_axis_dma_wr_tdata(r_wd_tdata), .m_axis_dma_wr_tkeep(r_wd_tkeep),
    .m_axis_dma_wr_tvalid(r_wd_tvalid), .m_axis_dma_wr_tready(r_wd_tready),
    .m_axis_dma_wr_tlast(r_wd_tlast),
    .m_ack_valid(ack_valid), .m_ack_ready(ack_ready), .m_ack_qpn(ack_qpn), .m_ack_psn(ack_psn),
    .m_ack_syndrome(ack_syn), .m_ack_msn(ack_msn),
    .m_rsp_valid(rsp_req_valid), .m_rsp_ready(rsp_req_ready), .m_rsp_data(rsp_req),
    .m_cpl_valid(r_cpl_valid), .m_cpl_ready(r_cpl_ready), .m_cpl_tdata(r_cpl_tdata),
    .m_cpl_tuser(r_cpl_tuser),
    .m_err_valid(r_err_valid), .m_err_ready(r_err_ready), .m_err_qpn(r_err_qpn),
    .m_err_cause(r_err_cause),
    .cnt_dup(c_dup), .cnt_nak_seq(c_nak_seq), .cnt_nak_rnr(c_nak_rnr), .cnt_nak_inv(c_nak_inv),
    .cnt_nak_acc(c_nak_acc), .cnt_nak_op(c_nak_op), .cnt_dma_err(c_r_dma_err), .cnt_drop(c_r_drop)
  );

  // ================================================================ context ops, state reads
  // Owners: roce_resp (every op), roce_ack_q (RESET: forget the owed ACK), roce_dcqcn
  // (RESET: clear the QP's rate state), roce_req and roce_comp (every op). The op completes
  // when all have taken it (and, for resp/req/comp, reported ctx_done). The handshake runs on
  // registers only: the cycle after ctx_op_valid rises the owners' valids are raised from
  // ctx_v, each drops on its owner's ready, ctx_w waits for the owners' ctx_done, and
  // ctx_op_done is the AND of the emptied bit vectors. (The owners' valid/ready logic and the
  // op decode no longer chain into roce_qp_ctx's state machine; 2 cycles more per op.)
  logic [4:0] ctx_v;      // per owner (0 resp, 1 ack_q, 2 dcqcn, 3 req, 4 comp): presented
  logic [4:0] ctx_w;      // resp, req, comp: taken, ctx_done not yet seen
  logic [4:0] ctx_hs, ctx_dn;
  logic       ctx_busy;
  logic       aq_clr_valid, aq_clr_ready, cc_rst_valid, cc_rst_ready;
  logic       q_ctx_valid, q_ctx_ready, q_ctx_done, c_ctx_valid, c_ctx_ready, c_ctx_done;
  logic       op_reset;
  assign op_reset = ctx_op.code == roce_rec_pkg::CTX_OP_RESET;
  assign {c_ctx_valid, q_ctx_valid, cc_rst_valid, aq_clr_valid, r_ctx_valid} = ctx_v;
  assign ctx_hs = ctx_v & {c_ctx_ready, q_ctx_ready, cc_rst_ready, aq_clr_ready, r_ctx_ready};
  assign ctx_dn = {c_ctx_done, q_ctx_done, 2'b00, r_ctx_done};
  assign ctx_op_done = ctx_busy && ctx_v == 5'd0 && ctx_w == 5'd0;
  always_ff @(posedge clk) begin
    ctx_v <= ctx_v & ~ctx_hs;
    ctx_w <= (ctx_w | (ctx_hs & 5'b11001)) & ~ctx_dn;
    if (ctx_op_done) begin
      ctx_busy <= 1'b0;
    end else if (ctx_op_valid && !ctx_busy) begin
      ctx_busy <= 1'b1;
      ctx_v <= {2'b11, op_reset, op_reset, 1'b1};
    end
    if (rst || soft_reset) begin
      ctx_v <= 5'd0;
      ctx_w <= 5'd0;
      ctx_busy <= 1'b0;
    end
  end

  // State read (QP_READ): roce_resp (rq_psn, rq_pi, rq_ci), roce_req (sq_psn, sq_pi),
  // roce_comp (sq_ci); each owner gets the read once, its answer is kept, st_rd_done is
  // raised (registered) once all three answered.
  logic       q_strd_valid, q_strd_ready, q_strd_done, c_strd_valid, c_strd_ready, c_strd_done;
  logic [23:0] q_st_sq_psn;
  logic [15:0] q_st_sq_pi, c_st_sq_ci;
  logic [2:0] st_taken, st_got;
  assign r_strd_valid = st_rd_valid && !st_taken[0];
  assign q_strd_valid = st_rd_valid && !st_taken[1];
  assign c_strd_valid = st_rd_valid && !st_taken[2];
  always_ff @(posedge clk) begin
    st_rd_done <= 1'b0;
    if (r_strd_valid && r_strd_ready) st_taken[0] <= 1'b1;
    if (q_strd_valid && q_strd_ready) st_taken[1] <= 1'b1;
    if (c_strd_valid && c_strd_ready) st_taken[2] <= 1'b1;
    if (r_strd_done) begin
      st_got[0] <= 1'b1;
      st_rd_rq_psn <= r_st_rq_psn;
      st_rd_rq_pi <= r_st_rq_pi;
      st_rd_rq_ci <= r_st_rq_ci;
    end
    if (q_strd_done) begin
      st_got[1] <= 1'b1;
      st_rd_sq_psn <= q_st_sq_psn;
      st_rd_sq_pi <= q_st_sq_pi;
    end
    if (c_strd_done) begin
      st_got[2] <= 1'b1;
      st_rd_sq_ci <= c_st_sq_ci;
    end
    if (st_rd_valid && st_got == 3'b111 && !st_rd_done) st_rd_done <= 1'b1;
    if (st_rd_done || rst) begin
      st_taken <= 3'b000;
      st_got <= 3'b000;
    end
    if (rst) st_rd_done <= 1'b0;
  end

  // ================================================================ ACKs, READ responses
  logic             ackd_valid, ackd_ready;
  logic [DESC_W-1:0] ackd;
  logic             aq_init;
  roce_ack_q #(.LOG_N(LOG_MAX_QP)) u_ack_q (
    .clk, .rst, .soft_reset, .init_done(aq_init),
    .s_ack_valid(ack_valid), .s_ack_ready(ack_ready), .s_ack_qpn(ack_qpn), .s_ack_psn(ack_psn),
    .s_ack_syndrome(ack_syn), .s_ack_msn(ack_msn),
    .s_clr_valid(aq_clr_valid), .s_clr_ready(aq_clr_ready), .s_clr_qpn(ctx_op.qpn),
    .m_desc_valid(ackd_valid), .m_desc_ready(ackd_ready), .m_desc(ackd)
  );

  logic             rr_rd_valid, rr_rd_ready;
  roce_rec_pkg::dma_req_t rr_rd;
  logic             rr_rdd_tvalid, rr_rdd_tready;
  logic             rrd_valid, rrd_ready;
  logic [DESC_W-1:0] rrd;
  logic [511:0]     rrp_tdata;
  logic [63:0]      rrp_tkeep;
  logic             rrp_tvalid, rrp_tready, rrp_tlast;
  logic             c_rr_dma_err;
  roce_rd_rsp u_rd_rsp (
    .clk, .rst,
    .s_rsp_valid(rsp_req_valid), .s_rsp_ready(rsp_req_ready), .s_rsp_data(rsp_req),
    .m_dma_rd_valid(rr_rd_valid), .m_dma_rd_ready(rr_rd_ready), .m_dma_rd(rr_rd),
    .s_dma_rd_tdata(rdd_tdata), .s_dma_rd_tvalid(rr_rdd_tvalid), .s_dma_rd_tready(rr_rdd_tready),
    .s_dma_rd_tlast(rdd_tlast), .s_dma_rd_tuser(rdd_tuser),
    .m_desc_valid(rrd_valid), .m_desc_ready(rrd_ready), .m_desc(rrd),
    .m_axis_pay_tdata(rrp_tdata), .m_axis_pay_tkeep(rrp_tkeep), .m_axis_pay_tvalid(rrp_tvalid),
    .m_axis_pay_tready(rrp_tready), .m_axis_pay_tlast(rrp_tlast),
    .cnt_dma_err(c_rr_dma_err)
  );

  // ================================================================ congestion control
  logic        cnp_out_valid, cnp_out_ready;
  logic [23:0] cnp_out_qpn;
  logic        cc_init;
  logic [31:0] cc_now;
  logic        cc_sent_ready, cc_query_ready, cc_pace_valid, cc_pace_allowed, cc_pace_limited;
  logic [23:0] cc_pace_qpn;
  logic [27:0] cc_pace_rc, cc_pace_rt;
  logic [15:0] cc_pace_alpha;
  logic        q_sent_valid, q_query_valid;
  logic [23:0] q_sent_qpn, q_query_qpn;
  logic [15:0] q_sent_bytes;
  roce_dcqcn #(.LOG_N(LOG_MAX_QP)) u_dcqcn (
    .clk, .rst, .soft_reset, .init_done(cc_init), .now_cycle(cc_now),
    .cfg_cnp_enable, .cfg_dcqcn_enable, .cfg_us_cycles, .cfg_dcqcn_rate_ai, .cfg_dcqcn_rate_hai,
    .cfg_dcqcn_rate_min, .cfg_dcqcn_g, .cfg_dcqcn_alpha_init, .cfg_dcqcn_alpha_us,
    .cfg_dcqcn_rate_us, .cfg_dcqcn_byte_counter, .cfg_dcqcn_stages, .cfg_cnp_interval_us,
    .s_ce_valid(ce_valid), .s_ce_ready(ce_ready), .s_ce_qpn(ce_qpn),
    .m_cnp_valid(cnp_out_valid), .m_cnp_ready(cnp_out_ready), .m_cnp_qpn(cnp_out_qpn),
    .s_reset_valid(cc_rst_valid), .s_reset_ready(cc_rst_ready), .s_reset_qpn(ctx_op.qpn),
    .s_cnp_valid(cnp_in_valid), .s_cnp_ready(cnp_in_ready), .s_cnp_qpn(cnp_in_qpn),
    .s_sent_valid(q_sent_valid), .s_sent_ready(cc_sent_ready), .s_sent_qpn(q_sent_qpn),
    .s_sent_bytes(q_sent_bytes),
    .s_query_valid(q_query_valid), .s_query_ready(cc_query_ready), .s_query_qpn(q_query_qpn),
    .m_pace_valid(cc_pace_valid), .m_pace_qpn(cc_pace_qpn), .m_pace_allowed(cc_pace_allowed),
    .m_pace_limited(cc_pace_limited), .m_pace_rc(cc_pace_rc), .m_pace_rt(cc_pace_rt),
    .m_pace_alpha(cc_pace_alpha)
  );
  logic unused_cc;  // the pacing answer's rate state is for tests; CNP/PFC fields unused
  assign unused_cc = ^cc_pace_limited ^ ^cc_pace_rc ^ ^cc_pace_rt ^ ^cc_pace_alpha ^
                     cfg_pfc_enable ^ ^cfg_cnp_dscp ^ ^cfg_cnp_pcp;

  // ================================================================ requester, completer
  // IB timer ticks: one per TICK_CYCLES cycles (0 counts as 1)
  logic [15:0] tick_div;
  logic [31:0] now_tick;
  always_ff @(posedge clk) begin
    if (tick_div + 16'd1 >= cfg_tick_cycles) begin
      tick_div <= 16'd0;
      now_tick <= now_tick + 32'd1;
    end else begin
      tick_div <= tick_div + 16'd1;
    end
    if (rst) begin
      tick_div <= 16'd0;
      now_tick <= 32'd0;
    end
  end

  localparam int CRD_W = 8 * roce_rec_pkg::COMP_RD_BYTES;
  localparam int RRD_W = 8 * roce_rec_pkg::REQ_RD_BYTES;
  localparam int WIN_W = 8 * roce_rec_pkg::SQ_WIN_BYTES;

  logic [2:0]       mr_arb_res_valid;  // roce_mr_arb's results (declared here: used below)
  logic [13:0]      mr_arb_res_user;

  // roce_req <-> roce_comp
  logic             wake_valid, wake_ready, kick_valid, kick_ready, kick_flush;
  logic [23:0]      wake_qpn, kick_qpn;
  logic             body_valid, body_clr;
  logic [23:0]      body_qpn;
  logic [31:0]      body_idx;
  logic [514:0]     body_sge;
  logic             crd_req_valid, crd_req_ready, crd_valid;
  logic [23:0]      crd_req_qpn;
  logic [CRD_W-1:0] crd_data;
  logic             sqr_req_valid, sqr_valid, sqr2_req_valid, sqr2_valid;
  logic [23:0]      sqr_req_qpn, sqr2_req_qpn;
  logic [RRD_W-1:0] sqr_data, sqr2_data;
  logic             win_req_valid, win_valid;
  logic [23:0]      win_req_qpn;
  logic [31:0]      win_req_idx;
  logic [WIN_W-1:0] win_data;

  // roce_req's other ports
  logic             q_init;
  logic             q_attr_valid, q_attr_ready, q_attr_rvalid;
  logic [23:0]      q_attr_qpn;
  logic             q_mr_valid, q_mr_ready, q_mr_res_valid;
  roce_rec_pkg::mr_req_t q_mr;
  logic [1:0]       q_mr_user;
  logic             q_wq_valid, q_wq_ready, q_wqd_tvalid, q_wqd_tready;
  roce_rec_pkg::dma_req_t q_wq;
  logic             q_rd_valid, q_rd_ready, q_rdd_tvalid, q_rdd_tready;
  roce_rec_pkg::dma_req_t q_rd;
  logic             qd_valid, qd_ready;
  logic [DESC_W-1:0] qd;
  logic [511:0]     qp_tdata;
  logic [63:0]      qp_tkeep;
  logic             qp_tvalid, qp_tready, qp_tlast;
  logic             q_err_valid, q_err_ready;
  logic [23:0]      q_err_qpn;
  logic [7:0]       q_err_cause;
  logic             c_q_retx, c_q_stale, c_q_dma_err, c_q_wqe_err;

  // inline doorbells are ignored (taken and dropped) while CTRL.ENABLE is clear
  logic             q_bf_ready;
  assign s_axis_bf_tready = q_bf_ready || !cfg_enable;

  roce_req #(.LOG_N(LOG_MAX_QP)) u_req (
    .clk, .rst, .soft_reset, .init_done(q_init), .now(cc_now), .now_tick,
    .s_db_valid(db_tvalid && db_sq), .s_db_ready(sq_db_ready),
    .s_db_qpn({8'd0, db_tdata[roce_regs_pkg::SQ_DB_QP_LSB +: 16]}),
    .s_db_pi(db_tdata[roce_regs_pkg::SQ_DB_PI_LSB +: 16]),
    .s_axis_bf_tdata, .s_axis_bf_tvalid(s_axis_bf_tvalid && cfg_enable), .s_axis_bf_tready(q_bf_ready),
    .s_axis_bf_tlast,
    .s_wake_valid(wake_valid), .s_wake_ready(wake_ready), .s_wake_qpn(wake_qpn),
    .s_ctx_valid(q_ctx_valid), .s_ctx_ready(q_ctx_ready), .s_ctx(ctx_op), .ctx_done(q_ctx_done),
    .s_strd_valid(q_strd_valid), .s_strd_ready(q_strd_ready), .s_strd_qpn(st_rd_qpn),
    .strd_done(q_strd_done), .strd_sq_psn(q_st_sq_psn), .strd_sq_pi(q_st_sq_pi),
    .m_attr_valid(q_attr_valid), .m_attr_ready(q_attr_ready), .m_attr_qpn(q_attr_qpn),
    .s_attr_valid(q_attr_rvalid), .s_attr_data(tx_attr), .s_attr_state(tx_attr_state),
    .m_comp_valid(crd_req_valid), .m_comp_ready(crd_req_ready), .m_comp_qpn(crd_req_qpn),
    .s_comp_valid(crd_valid), .s_comp_data(crd_data),
    .m_query_valid(q_query_valid), .m_query_ready(cc_query_ready), .m_query_qpn(q_query_qpn),
    .s_pace_valid(cc_pace_valid), .s_pace_qpn(cc_pace_qpn), .s_pace_allowed(cc_pace_allowed),
    .m_sent_valid(q_sent_valid), .m_sent_ready(cc_sent_ready), .m_sent_qpn(q_sent_qpn),
    .m_sent_bytes(q_sent_bytes),
    .m_mr_valid(q_mr_valid), .m_mr_ready(q_mr_ready), .m_mr(q_mr), .m_mr_user(q_mr_user),
    .s_mr_valid(q_mr_res_valid), .s_mr(mr_res), .s_mr_user(mr_arb_res_user[1:0]),
    .m_wqe_rd_valid(q_wq_valid), .m_wqe_rd_ready(q_wq_ready), .m_wqe_rd(q_wq),
    .s_wqe_rd_tdata(rdd_tdata), .s_wqe_rd_tvalid(q_wqd_tvalid), .s_wqe_rd_tready(q_wqd_tready),
    .s_wqe_rd_tlast(rdd_tlast), .s_wqe_rd_tuser(rdd_tuser),
    .m_dma_rd_valid(q_rd_valid), .m_dma_rd_ready(q_rd_ready), .m_dma_rd(q_rd),
    .s_dma_rd_tdata(rdd_tdata), .s_dma_rd_tvalid(q_rdd_tvalid), .s_dma_rd_tready(q_rdd_tready),
    .s_dma_rd_tlast(rdd_tlast), .s_dma_rd_tuser(rdd_tuser),
    .m_desc_valid(qd_valid), .m_desc_ready(qd_ready), .m_desc(qd),
    .m_axis_pay_tdata(qp_tdata), .m_axis_pay_tkeep(qp_tkeep), .m_axis_pay_tvalid(qp_tvalid),
    .m_axis_pay_tready(qp_tready), .m_axis_pay_tlast(qp_tlast),
    .m_kick_valid(kick_valid), .m_kick_ready(kick_ready), .m_kick_qpn(kick_qpn),
    .m_kick_flush(kick_flush),
    .m_body_valid(body_valid), .m_body_qpn(body_qpn), .m_body_idx(body_idx),
    .m_body_sge(body_sge), .m_body_clr(body_clr),
    .m_err_valid(q_err_valid), .m_err_ready(q_err_ready), .m_err_qpn(q_err_qpn),
    .m_err_cause(q_err_cause),
    .s_rd_valid(sqr_req_valid), .s_rd_qpn(sqr_req_qpn), .m_rd_valid(sqr_valid), .m_rd_data(sqr_data),
    .s_rd2_valid(sqr2_req_valid), .s_rd2_qpn(sqr2_req_qpn), .m_rd2_valid(sqr2_valid),
    .m_rd2_data(sqr2_data),
    .s_win_valid(win_req_valid), .s_win_qpn(win_req_qpn), .s_win_idx(win_req_idx),
    .m_win_valid(win_valid), .m_win_data(win_data),
    .cnt_retransmit(c_q_retx), .cnt_stale(c_q_stale), .cnt_dma_err(c_q_dma_err),
    .cnt_wqe_err(c_q_wqe_err)
  );
  assign crd_req_ready = 1'b1;  // roce_comp's s_comp is always ready

  // roce_comp's other ports
  logic             c_init;
  logic             c_mr_valid, c_mr_ready, c_mr_res_valid;
  roce_rec_pkg::mr_req_t c_mr;
  logic [1:0]       c_mr_user;
  logic             c_rd_valid, c_rd_ready, c_rdd_tvalid, c_rdd_tready;
  roce_rec_pkg::dma_req_t c_rd;
  logic             c_wr_valid, c_wr_ready;
  roce_rec_pkg::dma_req_t c_wr;
  logic [511:0]     c_wd_tdata;
  logic [63:0]      c_wd_tkeep;
  logic             c_wd_tvalid, c_wd_tready, c_wd_tlast;
  logic             c_cpl_valid, c_cpl_ready;
  logic [255:0]     c_cpl_tdata;
  logic [15:0]      c_cpl_tuser;
  logic             c_err_valid, c_err_ready;
  logic [23:0]      c_err_qpn;
  logic [7:0]       c_err_cause;
  logic             c_dbg_valid;
  logic [2:0]       c_dbg_kind;
  logic [23:0]      c_dbg_qpn;
  logic             c_c_nak, c_c_rnr, c_c_timeout, c_c_dma_err;

  roce_comp #(.LOG_N(LOG_MAX_QP)) u_comp (
    .clk, .rst, .soft_reset, .init_done(c_init), .now(cc_now), .now_tick, .cfg_us_cycles,
    .s_rsp_valid(rsp_valid), .s_rsp_ready(rsp_ready), .s_rsp_hdr(d_hdr), .s_rsp_attr(d_attr),
    .s_rsp_state(d_state),
    .s_axis_pay_tdata(dr_tdata), .s_axis_pay_tkeep(dr_tkeep), .s_axis_pay_tvalid(dr_tvalid),
    .s_axis_pay_tready(dr_tready), .s_axis_pay_tlast(dr_tlast),
    .s_kick_valid(kick_valid), .s_kick_ready(kick_ready), .s_kick_qpn(kick_qpn),
    .s_kick_flush(kick_flush),
    .s_body_valid(body_valid), .s_body_qpn(body_qpn), .s_body_idx(body_idx),
    .s_body_sge(body_sge), .s_body_clr(body_clr),
    .s_ctx_valid(c_ctx_valid), .s_ctx_ready(c_ctx_ready), .s_ctx(ctx_op), .ctx_done(c_ctx_done),
    .s_strd_valid(c_strd_valid), .s_strd_ready(c_strd_ready), .s_strd_qpn(st_rd_qpn),
    .strd_done(c_strd_done), .strd_sq_ci(c_st_sq_ci),
    .m_attr_valid(comp_attr_valid), .m_attr_ready(comp_attr_ready), .m_attr_qpn(comp_attr_qpn),
    .s_attr_valid(comp_attr_rvalid), .s_attr_data(rx_attr), .s_attr_state(rx_attr_state),
    .m_rd_valid(sqr_req_valid), .m_rd_qpn(sqr_req_qpn), .s_rd_valid(sqr_valid), .s_rd_data(sqr_data),
    .m_rd2_valid(sqr2_req_valid), .m_rd2_qpn(sqr2_req_qpn), .s_rd2_valid(sqr2_valid),
    .s_rd2_data(sqr2_data),
    .m_win_valid(win_req_valid), .m_win_qpn(win_req_qpn), .m_win_idx(win_req_idx),
    .s_win_valid(win_valid), .s_win_data(win_data),
    .s_comp_valid(crd_req_valid), .s_comp_qpn(crd_req_qpn), .m_comp_valid(crd_valid),
    .m_comp_data(crd_data),
    .m_wake_valid(wake_valid), .m_wake_ready(wake_ready), .m_wake_qpn(wake_qpn),
    .m_mr_valid(c_mr_valid), .m_mr_ready(c_mr_ready), .m_mr(c_mr), .m_mr_user(c_mr_user),
    .s_mr_valid(c_mr_res_valid), .s_mr(mr_res), .s_mr_user(mr_arb_res_user[1:0]),
    .m_dma_rd_valid(c_rd_valid), .m_dma_rd_ready(c_rd_ready), .m_dma_rd(c_rd),
    .s_dma_rd_tdata(rdd_tdata), .s_dma_rd_tvalid(c_rdd_tvalid), .s_dma_rd_tready(c_rdd_tready),
    .s_dma_rd_tlast(rdd_tlast), .s_dma_rd_tuser(rdd_tuser),
    .m_dma_wr_valid(c_wr_valid), .m_dma_wr_ready(c_wr_ready), .m_dma_wr(c_wr),
    .m_axis_dma_wr_tdata(c_wd_tdata), .m_axis_dma_wr_tkeep(c_wd_tkeep),
    .m_axis_dma_wr_tvalid(c_wd_tvalid), .m_axis_dma_wr_tready(c_wd_tready),
    .m_axis_dma_wr_tlast(c_wd_tlast),
    .m_cpl_valid(c_cpl_valid), .m_cpl_ready(c_cpl_ready), .m_cpl_tdata(c_cpl_tdata),
    .m_cpl_tuser(c_cpl_tuser),
    .m_err_valid(c_err_valid), .m_err_ready(c_err_ready), .m_err_qpn(c_err_qpn),
    .m_err_cause(c_err_cause),
    .dbg_op_valid(c_dbg_valid), .dbg_op_kind(c_dbg_kind), .dbg_op_qpn(c_dbg_qpn),
    .cnt_nak(c_c_nak), .cnt_rnr(c_c_rnr), .cnt_timeout(c_c_timeout), .cnt_dma_err(c_c_dma_err)
  );
  logic unused_qc;  // the lockstep's operation trace
  assign unused_qc = c_dbg_valid ^ ^c_dbg_kind ^ ^c_dbg_qpn;
  // STATUS.READY waits for the data path blocks' reset sweeps too (the requester's is the
  // longest: its store's tags)
  assign dp_init = resp_init && aq_init && cc_init && q_init && c_init;

  // TX attribute port: roce_tx_arb first (it cannot wait), then roce_req's visits; the
  // answer (latency 2) goes to whoever asked
  logic [LOG_MAX_QP-1:0] tx_arb_attr_qpn;
  logic                  tx_arb_attr_valid, tx_arb_attr_rvalid;
  logic [1:0]            tx_attr_who;  // 1 and 2 cycles ago: roce_req asked
  assign q_attr_ready = !tx_arb_attr_valid;
  assign tx_attr_req_valid = tx_arb_attr_valid || q_attr_valid;
  assign tx_attr_req_qpn = tx_arb_attr_valid ? {{(24 - LOG_MAX_QP){1'b0}}, tx_arb_attr_qpn} : q_attr_qpn;
  always_ff @(posedge clk) begin
    tx_attr_who <= {tx_attr_who[0], !tx_arb_attr_valid && q_attr_valid};
    if (rst) tx_attr_who <= 2'b00;
  end
  assign tx_arb_attr_rvalid = tx_attr_valid && !tx_attr_who[1];
  assign q_attr_rvalid = tx_attr_valid && tx_attr_who[1];

  // QP errors toward roce_qp_ctx: roce_resp, roce_req, roce_comp, round-robin into a FIFO.
  // roce_qp_ctx takes no error while a command waits for the owners' acknowledgements, and
  // an owner with an error to hand over (roce_resp, roce_comp) does not acknowledge: the
  // FIFO takes errors at once, so only more errors than it holds during one command could
  // hold an owner (a QP reports at most one per owner until it is reset).
  logic [1:0] qe_last;  // served last: bit 0 roce_resp, bit 1 roce_req, none roce_comp
  logic [2:0] qe_v, qe_pick;
  assign qe_v = {c_err_valid, q_err_valid, r_err_valid};
  always_comb begin
    // the first requester after the last one served, else the others in order
    qe_pick = 3'b000;
    if (qe_last[0]) qe_pick = qe_v[1] ? 3'b010 : qe_v[2] ? 3'b100 : qe_v[0] ? 3'b001 : 3'b000;
    else if (qe_last[1]) qe_pick = qe_v[2] ? 3'b100 : qe_v[0] ? 3'b001 : qe_v[1] ? 3'b010 : 3'b000;
    else qe_pick = qe_v[0] ? 3'b001 : qe_v[1] ? 3'b010 : qe_v[2] ? 3'b100 : 3'b000;
  end
  logic qe_free;  // the FIFO has room (a function of its registers)
  assign r_err_ready = qe_free && qe_pick[0];
  assign q_err_ready = qe_free && qe_pick[1];
  assign c_err_ready = qe_free && qe_pick[2];
  always_ff @(posedge clk) begin
    if (qe_free && qe_pick != 3'b000) qe_last <= qe_pick[1:0];
    if (rst) qe_last <= 2'b00;
  end
  logic [31:0] qe_in;
  assign qe_in = qe_pick[0] ? {r_err_cause, r_err_qpn} : qe_pick[1] ? {q_err_cause, q_err_qpn} :
                 {c_err_cause, c_err_qpn};
  logic [3:0] qe_keep_unused;
  logic       qe_last_unused, qe_user_unused;
  roce_axis_fifo #(.DATA_W(32), .USER_W(1), .DEPTH(16)) u_qerr_fifo (
    .clk, .rst,
    .s_axis_tdata(qe_in), .s_axis_tkeep(4'hF), .s_axis_tvalid(qe_pick != 3'b000),
    .s_axis_tready(qe_free), .s_axis_tlast(1'b1), .s_axis_tuser(1'b0),
    .m_axis_tdata({qerr_cause, qerr_qpn}), .m_axis_tkeep(qe_keep_unused), .m_axis_tvalid(qerr_valid),
    .m_axis_tready(qerr_ready), .m_axis_tlast(qe_last_unused), .m_axis_tuser(qe_user_unused)
  );

  // completions toward roce_cq: roce_resp (receives), roce_comp (sends), alternating when
  // both offer, registered
  logic cp_last;  // 1: roce_comp was served last
  logic cp_r, cp_c, cp_free;
  assign cp_free = !cpl_tvalid || cpl_tready;
  assign cp_r = r_cpl_valid && (!c_cpl_valid || cp_last);
  assign cp_c = c_cpl_valid && !cp_r;
  assign r_cpl_ready = cp_free && cp_r;
  assign c_cpl_ready = cp_free && cp_c;
  always_ff @(posedge clk) begin
    if (cp_free) begin
      cpl_tvalid <= cp_r || cp_c;
      cpl_tdata <= cp_r ? r_cpl_tdata : c_cpl_tdata;
      cpl_tuser <= cp_r ? r_cpl_tuser : c_cpl_tuser;
      if (cp_r || cp_c) cp_last <= cp_c;
    end
    if (rst) begin
      cpl_tvalid <= 1'b0;
      cp_last <= 1'b0;
    end
  end

  // ================================================================ TX path
  logic             txh_valid, txh_ready;
  logic [TXH_W-1:0] txh;
  logic [511:0]     txp_tdata;
  logic [63:0]      txp_tkeep;
  logic             txp_tvalid, txp_tready, txp_tlast;
  logic             c_acks;
  roce_tx_arb #(.LOG_N(LOG_MAX_QP)) u_tx_arb (
    .clk, .rst,
    .cfg_mac, .cfg_ipv4, .cfg_gid, .cfg_ecn_enable, .cfg_vlan_enable, .cfg_vlan_vid,
    .cfg_vlan_pcp, .pause(8'd0),
    .s_cnp_valid(cnp_out_valid), .s_cnp_ready(cnp_out_ready), .s_cnp_qpn(cnp_out_qpn),
    .s_ack_valid(ackd_valid), .s_ack_ready(ackd_ready), .s_ack_desc(ackd),
    .s_rsp_valid(rrd_valid), .s_rsp_ready(rrd_ready), .s_rsp_desc(rrd),
    .s_axis_rsp_tdata(rrp_tdata), .s_axis_rsp_tkeep(rrp_tkeep), .s_axis_rsp_tvalid(rrp_tvalid),
    .s_axis_rsp_tready(rrp_tready), .s_axis_rsp_tlast(rrp_tlast),
    .s_req_valid(qd_valid), .s_req_ready(qd_ready), .s_req_desc(qd),
    .s_axis_req_tdata(qp_tdata), .s_axis_req_tkeep(qp_tkeep), .s_axis_req_tvalid(qp_tvalid),
    .s_axis_req_tready(qp_tready), .s_axis_req_tlast(qp_tlast),
    .m_attr_valid(tx_arb_attr_valid), .m_attr_qpn(tx_arb_attr_qpn), .s_attr_valid(tx_arb_attr_rvalid),
    .s_attr_data(tx_attr),
    .m_hdr_valid(txh_valid), .m_hdr_ready(txh_ready), .m_hdr(txh),
    .m_axis_pay_tdata(txp_tdata), .m_axis_pay_tkeep(txp_tkeep), .m_axis_pay_tvalid(txp_tvalid),
    .m_axis_pay_tready(txp_tready), .m_axis_pay_tlast(txp_tlast),
    .cnt_ack(c_acks)
  );
  logic [511:0] tb_tdata;
  logic [63:0]  tb_tkeep;
  logic         tb_tvalid, tb_tready, tb_tlast, tb_tuser, tb_drop;
  roce_tx_build u_tx_build (
    .clk, .rst,
    .s_axis_hdr_tdata(txh), .s_axis_hdr_tvalid(txh_valid), .s_axis_hdr_tready(txh_ready),
    .s_axis_pay_tdata(txp_tdata), .s_axis_pay_tkeep(txp_tkeep), .s_axis_pay_tvalid(txp_tvalid),
    .s_axis_pay_tready(txp_tready), .s_axis_pay_tlast(txp_tlast),
    .m_axis_tdata(tb_tdata), .m_axis_tkeep(tb_tkeep), .m_axis_tvalid(tb_tvalid),
    .m_axis_tready(tb_tready), .m_axis_tlast(tb_tlast), .m_axis_tuser(tb_tuser),
    .drop(tb_drop)
  );

  logic [1:0] tx_icrc_user;
  roce_icrc #(.DATA_W(512), .INSERT(1)) u_icrc_tx (
    .clk, .rst,
    .s_axis_tdata(tb_tdata), .s_axis_tkeep(tb_tkeep), .s_axis_tvalid(tb_tvalid),
    .s_axis_tready(tb_tready), .s_axis_tlast(tb_tlast), .s_axis_tuser(tb_tuser),
    .m_axis_tdata(m_axis_tx_tdata), .m_axis_tkeep(m_axis_tx_tkeep),
    .m_axis_tvalid(m_axis_tx_tvalid), .m_axis_tready(m_axis_tx_tready),
    .m_axis_tlast(m_axis_tx_tlast), .m_axis_tuser(tx_icrc_user)
  );
  assign m_axis_tx_tuser = tx_icrc_user[0];

  // ================================================================ DMA and MR sharing
  roce_dma_rd_arb #(.N(5), .TAG_W(DMA_TAG_W)) u_dma_rd_arb (
    .clk, .rst,
    .s_req_valid({c_rd_valid, q_rd_valid, q_wq_valid, rr_rd_valid, r_rd_valid}),
    .s_req_ready({c_rd_ready, q_rd_ready, q_wq_ready, rr_rd_ready, r_rd_ready}),
    .s_req({c_rd, q_rd, q_wq, rr_rd, r_rd}),
    .m_req_valid(m_dma_rd_valid), .m_req_ready(m_dma_rd_ready), .m_req(m_dma_rd),
    .m_req_tag(m_dma_rd_tag),
    .s_rsp_tdata(s_dma_rd_tdata), .s_rsp_tvalid(s_dma_rd_tvalid), .s_rsp_tready(s_dma_rd_tready),
    .s_rsp_tlast(s_dma_rd_tlast), .s_rsp_tuser(s_dma_rd_tuser), .s_rsp_tid(s_dma_rd_tid),
    .m_rsp_tdata(rdd_tdata),
    .m_rsp_tvalid({c_rdd_tvalid, q_rdd_tvalid, q_wqd_tvalid, rr_rdd_tvalid, r_rdd_tvalid}),
    .m_rsp_tready({c_rdd_tready, q_rdd_tready, q_wqd_tready, rr_rdd_tready, r_rdd_tready}),
    .m_rsp_tlast(rdd_tlast), .m_rsp_tuser(rdd_tuser)
  );

  // roce_cq's CQE writes as a write client: the request, then one beat (offered together:
  // roce_dma_wr_arb grants a client that offers both)
  logic cqw_req_valid, cqw_req_ready, cqw_tvalid, cqw_tready, cqw_sent;
  assign cqw_req_valid = cqe_valid && !cqw_sent;
  assign cqw_tvalid = cqe_valid;
  assign cqe_ready = cqw_tvalid && cqw_tready;
  always_ff @(posedge clk) begin
    if (cqw_req_valid && cqw_req_ready) cqw_sent <= 1'b1;
    if (cqe_ready || rst) cqw_sent <= 1'b0;
  end

  roce_dma_wr_arb #(.N(3)) u_dma_wr_arb (
    .clk, .rst,
    .s_req_valid({c_wr_valid, cqw_req_valid, r_wr_valid}),
    .s_req_ready({c_wr_ready, cqw_req_ready, r_wr_ready}),
    .s_req({c_wr, 16'd32, cqe_addr, r_wr}),
    .s_tdata({c_wd_tdata, 256'd0, cqe_data, r_wd_tdata}),
    .s_tkeep({c_wd_tkeep, 64'h0000_0000_FFFF_FFFF, r_wd_tkeep}),
    .s_tvalid({c_wd_tvalid, cqw_tvalid, r_wd_tvalid}), .s_tready({c_wd_tready, cqw_tready, r_wd_tready}),
    .s_tlast({c_wd_tlast, 1'b1, r_wd_tlast}),
    .m_req_valid(m_dma_wr_valid), .m_req_ready(m_dma_wr_ready), .m_req(m_dma_wr), .m_tdata(m_axis_dma_wr_tdata), .m_tkeep(m_axis_dma_wr_tkeep),
    .m_tvalid(m_axis_dma_wr_tvalid), .m_tready(m_axis_dma_wr_tready), .m_tlast(m_axis_dma_wr_tlast)
  );

  // MR checks: roce_resp (0), roce_req (1; its gather checks ask for no access right, as the
  // model's walk_sges with need 0), roce_comp (2); results routed back by the user field
  roce_mr_arb #(.N(3), .USER_W(16)) u_mr_arb (
    .clk, .rst,
    .s_valid({c_mr_valid, q_mr_valid, r_mr_valid}), .s_ready({c_mr_ready, q_mr_ready, r_mr_ready}),
    .s_req({c_mr, q_mr, r_mr}),
    .s_user({12'd0, c_mr_user, 12'd0, q_mr_user, 12'd0, r_mr_user}),
    .m_valid(mr_valid), .m_ready(mr_ready), .m_req(mr_req), .m_user(mr_user),
    .s_res_valid(mr_res_valid), .s_res_ready(mr_res_ready), .s_res_user(mr_res_user),
    .m_res_valid(mr_arb_res_valid), .m_res_ready({1'b1, 1'b1, r_mr_res_ready}),
    .m_res_user(mr_arb_res_user)
  );
  assign r_mr_res_valid = mr_arb_res_valid[0];
  assign q_mr_res_valid = mr_arb_res_valid[1];
  assign c_mr_res_valid = mr_arb_res_valid[2];
  assign r_mr_res_user = mr_arb_res_user[1:0];

  // ================================================================ counters
  // The increments reach roce_regs registered (a cycle after the event; the byte counts two:
  // eight 8-lane popcounts of tkeep are registered first, their sum after). The registers
  // clear with rst / soft_reset, so an event in the cycle of a soft reset is not counted,
  // as before.
  // set bits of an 8-lane group: full adders in logic operators (LUTs, no carry chain)
  function automatic logic [3:0] pop8(input logic [7:0] k);
    logic [3:0] t;
    logic       c;
    t = '0;
    for (int i = 0; i < 8; i++) begin
      c = k[i];
      for (int b = 0; b < 4; b++) begin
        t[b] = t[b] ^ c;
        c = c & !t[b];
      end
    end
    pop8 = t;
  endfunction
  function automatic logic [15:0] sum8x4(input logic [31:0] p);
    logic [4:0] s01, s23, s45, s67;
    logic [5:0] s03, s47;
    s01 = {1'b0, p[3:0]} + {1'b0, p[7:4]};
    s23 = {1'b0, p[11:8]} + {1'b0, p[15:12]};
    s45 = {1'b0, p[19:16]} + {1'b0, p[23:20]};
    s67 = {1'b0, p[27:24]} + {1'b0, p[31:28]};
    s03 = {1'b0, s01} + {1'b0, s23};
    s47 = {1'b0, s45} + {1'b0, s67};
    sum8x4 = {9'd0, {1'b0, s03} + {1'b0, s47}};
  endfunction
  logic rx_beat, tx_beat;
  assign rx_beat = s_axis_rx_tvalid && s_axis_rx_tready;
  assign tx_beat = m_axis_tx_tvalid && m_axis_tx_tready;
  logic [31:0] rx_pop, tx_pop;  // per 8-lane group of the beat's tkeep (0 without a beat)
  always_ff @(posedge clk) begin
    for (int g = 0; g < 8; g++) begin
      rx_pop[4*g +: 4] <= rx_beat ? pop8(s_axis_rx_tkeep[8*g +: 8]) : 4'd0;
      tx_pop[4*g +: 4] <= tx_beat ? pop8(m_axis_tx_tkeep[8*g +: 8]) : 4'd0;
    end
    cnt_add_q <= cnt_add;
    if (rst || soft_reset) begin
      rx_pop <= '0;
      tx_pop <= '0;
      cnt_add_q <= '0;
    end
  end
  always_comb begin
    cnt_add = '0;
    cnt_add[16*roce_regs_pkg::CNT_RX_FRAMES +: 16] = {15'd0, rx_beat && s_axis_rx_tlast};
    cnt_add[16*roce_regs_pkg::CNT_RX_BYTES +: 16] = sum8x4(rx_pop);
    cnt_add[16*roce_regs_pkg::CNT_RX_ICRC_ERRORS +: 16] = {15'd0, df_bad};
    cnt_add[16*roce_regs_pkg::CNT_RX_MALFORMED +: 16] = {15'd0, c_malformed};
    cnt_add[16*roce_regs_pkg::CNT_RX_UNKNOWN_QP +: 16] = {15'd0, c_unknown} + {15'd0, c_r_drop};
    cnt_add[16*roce_regs_pkg::CNT_RX_DROPPED +: 16] = {14'd0, c_dropped} + {15'd0, df_over} +
                                                    {15'd0, df_full};
    cnt_add[16*roce_regs_pkg::CNT_TX_FRAMES +: 16] = {15'd0, tx_beat && m_axis_tx_tlast};
    cnt_add[16*roce_regs_pkg::CNT_TX_BYTES +: 16] = sum8x4(tx_pop);
    cnt_add[16*roce_regs_pkg::CNT_RETRANSMITS +: 16] = {15'd0, c_q_retx};
    cnt_add[16*roce_regs_pkg::CNT_TIMEOUTS +: 16] = {15'd0, c_c_timeout};
    cnt_add[16*roce_regs_pkg::CNT_NAKS_RCVD +: 16] = {15'd0, c_c_nak};
    cnt_add[16*roce_regs_pkg::CNT_RNR_RETRIES +: 16] = {15'd0, c_c_rnr};
    cnt_add[16*roce_regs_pkg::CNT_NAK_SEQ_SENT +: 16] = {15'd0, c_nak_seq};
    cnt_add[16*roce_regs_pkg::CNT_NAK_RNR_SENT +: 16] = {15'd0, c_nak_rnr};
    cnt_add[16*roce_regs_pkg::CNT_NAK_INV_REQ_SENT +: 16] = {15'd0, c_nak_inv};
    cnt_add[16*roce_regs_pkg::CNT_NAK_REM_ACC_SENT +: 16] = {15'd0, c_nak_acc};
    cnt_add[16*roce_regs_pkg::CNT_CNP_SENT +: 16] = {15'd0, cnp_out_valid && cnp_out_ready};
    cnt_add[16*roce_regs_pkg::CNT_CNP_RCVD +: 16] = {15'd0, c_cnp_rcvd};
    cnt_add[16*roce_regs_pkg::CNT_ECN_MARKED_RCVD +: 16] = {15'd0, c_ecn};
    // (PFC_PAUSE_RCVD stays 0: this engine has no PFC receiver, pause is tied off above; a
    // MAC control frame reaches roce_rx_disp and is counted in RX_NOT_ROCE, where the model
    // with CTRL.PFC_ENABLE counts a PFC frame in PFC_PAUSE_RCVD)
    cnt_add[16*roce_regs_pkg::CNT_RX_NOT_ROCE +: 16] = {15'd0, c_not_roce};
    cnt_add[16*roce_regs_pkg::CNT_NAK_REM_OP_SENT +: 16] = {15'd0, c_nak_op};
    cnt_add[16*roce_regs_pkg::CNT_DUPLICATES +: 16] = {15'd0, c_dup};
    // every frame roce_tx_arb takes from roce_ack_q: ACKs and NAKs after coalescing, as the
    // model's acks_sent (engine::tx_arb, the owed ACK/NAK queue)
    cnt_add[16*roce_regs_pkg::CNT_ACKS_SENT +: 16] = {15'd0, c_acks};
    // one roce_cq DMA write per CQE (the handshake with the write arbiter)
    cnt_add[16*roce_regs_pkg::CNT_CQES +: 16] = {15'd0, cqe_ready};
    // Failed DMA reads, each counted once by the client that made it (the model counts each
    // failed dma_read): roce_resp (RQ WQEs, atomic operands), roce_rd_rsp (READ response
    // data), roce_req (payload pieces; WQEs on c_q_wqe_err), roce_comp (flush reads of an
    // SQ WQE's wr_id; SGE list reads of the WQE a READ response is placed by). No model
    // equivalent: roce_comp's SGE list reads (the model keeps the decoded WQE and reads
    // nothing), and roce_req's reads of a WQE again after it was fetched (the model counts
    // fetched WQEs only). The model also counts refused DMA writes (atomic results, WRITE
    // payload, CQEs); the DMA write port here is posted and reports nothing back.
    cnt_add[16*roce_regs_pkg::CNT_DMA_ERRORS +: 16] = {15'd0, c_r_dma_err} + {15'd0, c_rr_dma_err} +
                                                     {15'd0, c_q_dma_err} + {15'd0, c_q_wqe_err} +
                                                     {15'd0, c_c_dma_err};
  end
  logic unused_cnt;
  assign unused_cnt = df_good ^ ^df_good_n ^ ^df_bad_n ^ ^df_over_n ^ ^df_full_n ^ tb_drop ^
                      tx_icrc_user[1] ^ df_tuser[0] ^ db_tuser[1] ^ ^mr_arb_res_user[13:2] ^
                      c_q_stale ^ ^qe_keep_unused ^ qe_last_unused ^ qe_user_unused;

endmodule

`resetall
