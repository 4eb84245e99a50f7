// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_qp_ctx: the QP context block. Per QP the attributes (qp_attr_t, one BRAM copy per
// reader) and the QpState, served on two attribute read ports (RX and TX). It executes the QP
// commands (QP_WRITE, QP_MODIFY with the generated transition table, QP_READ) and takes
// transport errors (a live QP enters Err); their effects on state other blocks own go out as
// context ops, and QP_READ collects that state on the state-read port. A command's ops are all
// acknowledged before its table write, which is at the edge that raises cmd_done. Reset clears
// one entry per cycle. Model: engine::qp_ctx, wrapped by blocks::qp_ctx; docs/engine-hdl.md.
// Ports: cmd_* (command router), rx_attr_* / tx_attr_* (attribute reads), ctx_op_valid with ctx_op
//   (roce_rec_pkg::ctx_op_req_t: code, qpn, arg; held until ctx_op_done), st_rd_* (held until st_rd_done), err_* (transport
//   errors), qp_err_* (to roce_regs), cq_valid (from roce_cq), init_done.
// Latency: attribute ports: a request in t gives {attr, state} in t+2. Commands: accepted in c,
//   decided in c+2, ops from c+4: cmd_done in c+5+n for n ops (QP_WRITE c+8), QP_READ c+5, a
//   refused command c+4; an error entering Err raises qp_err_valid in c+6.
// Throughput: attribute ports one read per cycle each; commands and errors one at a time.
//
// Parameters:
//   LOG_N    log2 of the number of QPs (CAPS.LOG_MAX_QP; default 10; at most 16).
//   LOG_CQ   log2 of the number of CQs (CAPS.LOG_MAX_CQ; width of cq_valid; at most 14).
//   MAX_MTU  largest path MTU code QP_MODIFY accepts (CAPS.MAX_MTU; 5 = 4096).

`resetall
`default_nettype none

module roce_qp_ctx #(
  parameter int LOG_N = 10,
  parameter int LOG_CQ = 8,
  parameter int MAX_MTU = 5
) (
  input  wire logic                   clk,
  input  wire logic                   rst,
  input  wire logic                   soft_reset,
  output      logic                   init_done,

  // commands (from the command router)
  input  wire logic                   cmd_valid,
  output      logic                   cmd_ready,
  input  wire logic [7:0]             cmd_opcode,
  input  wire logic [23:0]            cmd_index,
  input  wire logic [31:0]            cmd_arg,
  input  wire logic [1023:0]          cmd_data,
  output      logic                   cmd_done,
  output      logic [7:0]             cmd_error,
  output      logic                   cmd_rdata_we,
  output      logic [1023:0]          cmd_rdata,

  // which CQs are valid (roce_cq)
  input  wire logic [(1<<LOG_CQ)-1:0] cq_valid,

  // attribute read port, RX side
  input  wire logic                   rx_attr_req_valid,
  input  wire logic [23:0]            rx_attr_req_qpn,
  output      logic                   rx_attr_valid,
  output      roce_rec_pkg::qp_attr_t rx_attr,
  output      logic [2:0]             rx_attr_state,

  // attribute read port, TX side
  input  wire logic                   tx_attr_req_valid,
  input  wire logic [23:0]            tx_attr_req_qpn,
  output      logic                   tx_attr_valid,
  output      roce_rec_pkg::qp_attr_t tx_attr,
  output      logic [2:0]             tx_attr_state,

  // context ops toward the owners of the engine state
  output      logic                   ctx_op_valid,
  output      roce_rec_pkg::ctx_op_req_t ctx_op,
  input  wire logic                   ctx_op_done,

  // engine state read (QP_READ)
  output      logic                   st_rd_valid,
  output      logic [23:0]            st_rd_qpn,
  input  wire logic                   st_rd_done,
  input  wire logic [23:0]            st_rd_sq_psn,
  input  wire logic [23:0]            st_rd_rq_psn,
  input  wire logic [15:0]            st_rd_sq_pi,
  input  wire logic [15:0]            st_rd_sq_ci,
  input  wire logic [15:0]            st_rd_rq_pi,
  input  wire logic [15:0]            st_rd_rq_ci,

  // transport errors
  input  wire logic                   err_valid,
  output      logic                   err_ready,
  input  wire logic [23:0]            err_qpn,
  input  wire logic [7:0]             err_cause,

  // toward roce_regs (QP_ERR_INFO, IRQ_STATUS.QP_ERROR)
  output      logic                   qp_err_valid,
  output      logic [23:0]            qp_err_qpn,
  output      logic [7:0]             qp_err_cause
);

  localparam int N = 1 << LOG_N;
  localparam int NCQ = 1 << LOG_CQ;

  // bit positions in the pending-ops vector: the op codes
  localparam int unsigned OP_RESET = 32'(roce_rec_pkg::CTX_OP_RESET);
  localparam int unsigned OP_SET_RQ_PSN = 32'(roce_rec_pkg::CTX_OP_SET_RQ_PSN);
  localparam int unsigned OP_SET_SQ_PSN = 32'(roce_rec_pkg::CTX_OP_SET_SQ_PSN);
  localparam int unsigned OP_ENTER_RTS = 32'(roce_rec_pkg::CTX_OP_ENTER_RTS);
  localparam int unsigned OP_ENTER_ERR = 32'(roce_rec_pkg::CTX_OP_ENTER_ERR);

  localparam logic [2:0] ST_RESET = 3'(roce_desc_pkg::QP_STATE_RESET);
  localparam logic [2:0] ST_RTR = 3'(roce_desc_pkg::QP_STATE_RTR);
  localparam logic [2:0] ST_RTS = 3'(roce_desc_pkg::QP_STATE_RTS);
  localparam logic [2:0] ST_ERR = 3'(roce_desc_pkg::QP_STATE_ERR);

  // ---------------------------------------------------------------- the stored entry
  // The qp_attr_t bits that can be non-zero (a QpCtx that passes qp_ctx_bad has no others).
  typedef struct packed {
    logic [2:0]   path_mtu;
    logic [1:0]   encap;
    logic [4:0]   timeout;
    logic [2:0]   retry_cnt;
    logic [2:0]   rnr_retry;
    logic [4:0]   min_rnr_timer;
    logic [7:0]   max_rd_atomic;
    logic [7:0]   max_dest_rd_atomic;
    logic [31:0]  pd;
    logic [3:0]   access;          // the defined AccessFlags bits
    logic [23:0]  dest_qpn;
    logic [13:0]  send_cq;
    logic [13:0]  recv_cq;
    logic [63:0]  sq_base;
    logic [63:0]  rq_base;
    logic [3:0]   sq_log_size;
    logic [3:0]   rq_log_size;
    logic [5:0]   dscp;
    logic [7:0]   hop_limit;
    logic [15:0]  udp_sport;
    logic [15:0]  vlan;
    logic [47:0]  dest_mac;
    logic [19:0]  flow_label;
    logic [2:0]   sq_win_shift;
    logic [15:0]  sq_win_base;
    logic [127:0] dest_ip;
  } ent_t;
  localparam int E_W = 522;  // $bits(ent_t) (Yosys 0.23 has no $bits of a type; Verilator checks
                             // the width on every assignment between the two)

  // the entry of a QP never written: QpAttr::default() (path MTU code 1, the rest 0;
  // path_mtu is the most significant member)
  localparam logic [E_W-1:0] ENT_DEFAULT = {3'd1, (E_W-3)'(0)};

  // The attribute table: three copies (command path, RX port, TX port), written together;
  // each has one write and one registered read port. The state: {written, QpState} for the
  // command path, QpState for the ports.
  (* ram_style = "block" *) logic [E_W-1:0] attr_cmd [N];
  (* ram_style = "block" *) logic [E_W-1:0] attr_rx [N];
  (* ram_style = "block" *) logic [E_W-1:0] attr_tx [N];
  (* ram_style = "distributed" *) logic [3:0] st_cmd [N];
  (* ram_style = "distributed" *) logic [2:0] st_rx [N];
  (* ram_style = "distributed" *) logic [2:0] st_tx [N];

  logic [LOG_N:0]   init_idx;
  assign init_done = init_idx[LOG_N];

  logic             wr_en;
  logic [LOG_N-1:0] wr_addr;
  ent_t             wr_ent;
  logic [3:0]       wr_st;

  always_ff @(posedge clk) begin
    if (wr_en) begin
      attr_cmd[wr_addr] <= wr_ent;
      attr_rx[wr_addr] <= wr_ent;
      attr_tx[wr_addr] <= wr_ent;
      st_cmd[wr_addr] <= wr_st;
      st_rx[wr_addr] <= wr_st[2:0];
      st_tx[wr_addr] <= wr_st[2:0];
    end
  end

  // ---------------------------------------------------------------- attribute read ports
  logic [E_W-1:0] rx_q, tx_q;
  logic [2:0]     rx_sq, tx_sq;
  logic           rx_v1, tx_v1, rx_out1, tx_out1;  // request valid, qpn beyond the table
  always_ff @(posedge clk) begin
    rx_q <= attr_rx[rx_attr_req_qpn[LOG_N-1:0]];
    rx_sq <= st_rx[rx_attr_req_qpn[LOG_N-1:0]];
    rx_v1 <= rx_attr_req_valid;
    rx_out1 <= 32'(rx_attr_req_qpn) >= N;
    tx_q <= attr_tx[tx_attr_req_qpn[LOG_N-1:0]];
    tx_sq <= st_tx[tx_attr_req_qpn[LOG_N-1:0]];
    tx_v1 <= tx_attr_req_valid;
    tx_out1 <= 32'(tx_attr_req_qpn) >= N;
  end

  // the stored entry as a qp_attr_t (reserved bits zero)
  ent_t rx_e, tx_e;
  roce_rec_pkg::qp_attr_t rx_a, tx_a;
  assign rx_e = rx_out1 ? ENT_DEFAULT : rx_q;
  assign tx_e = tx_out1 ? ENT_DEFAULT : tx_q;
  always_comb begin
    rx_a = '0;
    tx_a = '0;
    rx_a.path_mtu = 8'(rx_e.path_mtu);                 tx_a.path_mtu = 8'(tx_e.path_mtu);
    rx_a.encap = 8'(rx_e.encap);                       tx_a.encap = 8'(tx_e.encap);
    rx_a.timeout = rx_e.timeout;                       tx_a.timeout = tx_e.timeout;
    rx_a.retry_cnt = rx_e.retry_cnt;                   tx_a.retry_cnt = tx_e.retry_cnt;
    rx_a.rnr_retry = rx_e.rnr_retry;                   tx_a.rnr_retry = tx_e.rnr_retry;
    rx_a.min_rnr_timer = rx_e.min_rnr_timer;           tx_a.min_rnr_timer = tx_e.min_rnr_timer;
    rx_a.max_rd_atomic = rx_e.max_rd_atomic;           tx_a.max_rd_atomic = tx_e.max_rd_atomic;
    rx_a.max_dest_rd_atomic = rx_e.max_dest_rd_atomic; tx_a.max_dest_rd_atomic = tx_e.max_dest_rd_atomic;
    rx_a.pd = rx_e.pd;                                 tx_a.pd = tx_e.pd;
    rx_a.access = 32'(rx_e.access);                    tx_a.access = 32'(tx_e.access);
    rx_a.dest_qpn = rx_e.dest_qpn;                     tx_a.dest_qpn = tx_e.dest_qpn;
    rx_a.send_cq = rx_e.send_cq;                       tx_a.send_cq = tx_e.send_cq;
    rx_a.recv_cq = rx_e.recv_cq;                       tx_a.recv_cq = tx_e.recv_cq;
    rx_a.sq_base = rx_e.sq_base;                       tx_a.sq_base = tx_e.sq_base;
    rx_a.rq_base = rx_e.rq_base;                       tx_a.rq_base = tx_e.rq_base;
    rx_a.sq_log_size = rx_e.sq_log_size;               tx_a.sq_log_size = tx_e.sq_log_size;
    rx_a.rq_log_size = rx_e.rq_log_size;               tx_a.rq_log_size = tx_e.rq_log_size;
    rx_a.dscp = rx_e.dscp;                             tx_a.dscp = tx_e.dscp;
    rx_a.hop_limit = rx_e.hop_limit;                   tx_a.hop_limit = tx_e.hop_limit;
    rx_a.udp_sport = rx_e.udp_sport;                   tx_a.udp_sport = tx_e.udp_sport;
    rx_a.vlan = rx_e.vlan;                             tx_a.vlan = tx_e.vlan;
    rx_a.dest_mac = rx_e.dest_mac;                     tx_a.dest_mac = tx_e.dest_mac;
    rx_a.flow_label = rx_e.flow_label;                 tx_a.flow_label = tx_e.flow_label;
    rx_a.sq_win_shift = rx_e.sq_win_shift;             tx_a.sq_win_shift = tx_e.sq_win_shift;
    rx_a.sq_win_base = rx_e.sq_win_base;               tx_a.sq_win_base = tx_e.sq_win_base;
    rx_a.dest_ip = rx_e.dest_ip;                       tx_a.dest_ip = tx_e.dest_ip;
  end

  always_ff @(posedge clk) begin
    rx_attr_valid <= rx_v1;
    rx_attr <= rx_a;
    rx_attr_state <= rx_out1 ? ST_RESET : rx_sq;
    tx_attr_valid <= tx_v1;
    tx_attr <= tx_a;
    tx_attr_state <= tx_out1 ? ST_RESET : tx_sq;
    if (rst) begin
      rx_attr_valid <= 1'b0;
      tx_attr_valid <= 1'b0;
    end
  end

  // ---------------------------------------------------------------- commands and errors
  typedef enum logic [2:0] { S_IDLE, S_CHECK, S_DECIDE, S_OPS, S_STRD, S_COMMIT } fsm_t;
  fsm_t fsm;

  assign err_ready = init_done && fsm == S_IDLE;
  assign cmd_ready = init_done && fsm == S_IDLE && !err_valid;
  logic take_err, take_cmd;
  assign take_err = err_valid && err_ready;
  assign take_cmd = cmd_valid && cmd_ready;

  logic          k_is_err;   // a transport error (else a command)
  logic          k_wr, k_mod, k_rd;  // the command's opcode, decoded when it is taken
  logic [23:0]   k_index;
  logic [31:0]   k_arg;
  logic [7:0]    k_cause;
  logic [1023:0] k_data;
  // (the engine-state and reserved bytes of the context are not fields here: qp_ctx_bad
  // checks the reserved ones on k_data)
  /* verilator lint_off UNUSEDSIGNAL */
  roce_desc_pkg::qp_ctx_t d;
  /* verilator lint_on UNUSEDSIGNAL */
  assign d = k_data;

  // the command path's copy, read when an operation is taken (held until the next one)
  logic [E_W-1:0] c_q;
  logic [3:0]     c_sq;
  ent_t           e;
  logic           e_written;
  logic [2:0]     e_state;
  assign e = c_q;
  assign {e_written, e_state} = c_sq;
  always_ff @(posedge clk) begin
    if (take_err || take_cmd) begin
      c_q <= attr_cmd[take_err ? err_qpn[LOG_N-1:0] : cmd_index[LOG_N-1:0]];
      c_sq <= st_cmd[take_err ? err_qpn[LOG_N-1:0] : cmd_index[LOG_N-1:0]];
    end
  end

  // check cycle: everything the decision needs, registered
  logic        ck_bad, ck_idx_ok, ck_rsvd, ck_cq_ok, ck_mask_undef, ck_busy, ck_wr_state, ck_type;
  logic        ck_mtu, ck_enter, ck_win;
  logic [7:0]  ck_mod_err;
  logic [15:0] ck_hash;
  logic [13:0] hash;  // rxe's hash_32(qpn, 14): the top 14 bits of qpn * 0x61C88647 (32 bits)
  assign hash = 14'((32'(k_index[LOG_N-1:0]) * 32'h61C8_8647) >> 18);
  // cq_valid[send_cq/recv_cq] in two halves: when the command is taken, the 16-bit group
  // holding each CQ's bit (from cmd_data); in S_CHECK, the bit (a 2^LOG_CQ-way select in one
  // cycle was the control plane's deepest path). cq_valid does not change in between: CQ
  // commands and QP commands are taken one at a time.
  localparam int LOG_CQP = LOG_CQ < 5 ? 5 : LOG_CQ;
  logic [(1<<LOG_CQP)-1:0] cq_pad;
  always_comb begin
    cq_pad = '0;
    cq_pad[NCQ-1:0] = cq_valid;
  end
  /* verilator lint_off UNUSEDSIGNAL */
  roce_desc_pkg::qp_ctx_t cd;  // the command's context, for the CQ numbers
  /* verilator lint_on UNUSEDSIGNAL */
  assign cd = cmd_data;
  logic [15:0] cq_grp_s, cq_grp_r;
  logic send_cq_ok, recv_cq_ok;
  assign send_cq_ok = 32'(d.send_cq) < NCQ && cq_grp_s[d.send_cq[3:0]];
  assign recv_cq_ok = 32'(d.recv_cq) < NCQ && cq_grp_r[d.recv_cq[3:0]];

  // prepared when the operation is taken (the command's fields, from the ports): the
  // QP_MODIFY transition check for each of the 8 states the QP can be in (S_CHECK picks the
  // one the table read gives), and the reserved bytes of the context, ORed in 8 groups
  // (S_CHECK adds the field checks of qp_ctx_bad)
  localparam int RSV_G = 32;  // rsvd_96 is 256 bits: 8 groups
  logic [63:0] pre_mod;   // bits 8f+7:8f: qp_modify_error(f, state, mask)
  logic [7:0]  pre_rsvd;
  roce_desc_pkg::qp_ctx_t d_nr;  // k_data without its reserved bytes
  always_comb begin
    d_nr = k_data;
    d_nr.rsvd_96 = '0;
  end

  // decision
  logic [7:0]    dc_err;
  ent_t          dc_ent;
  logic [4:0]    dc_ops;  // bit i: the op with code i
  logic [31:0]   mask;
  logic [127:0]  dest_ip_in;
  logic [15:0]   udp_in;
  assign mask = k_arg;
  assign dest_ip_in = d.encap == roce_desc_pkg::ENCAP_ROCE_V2_IPV4 ? {d.dest_ip[127:96], 16'hFFFF, 80'd0}
                                                                   : d.dest_ip;
  assign udp_in = d.udp_sport == 16'd0 ? ck_hash : d.udp_sport;

  always_comb begin
    dc_err = roce_regs_pkg::CMD_ERR_OK;
    dc_ent = e;
    dc_ops = '0;
    if (k_is_err) begin
      dc_ops[OP_ENTER_ERR] = ck_enter;
    end else begin
      if (k_wr) begin
        if (ck_bad) dc_err = roce_regs_pkg::CMD_ERR_BAD_ATTR;
        else if (!ck_idx_ok || ck_rsvd) dc_err = roce_regs_pkg::CMD_ERR_BAD_INDEX;
        else if (ck_busy) dc_err = roce_regs_pkg::CMD_ERR_BAD_STATE;
        else if (!ck_cq_ok || ck_win) dc_err = roce_regs_pkg::CMD_ERR_BAD_ATTR;
        else if (ck_wr_state) dc_err = roce_regs_pkg::CMD_ERR_BAD_STATE;
        else if (ck_type) dc_err = roce_regs_pkg::CMD_ERR_BAD_ATTR;
        dc_ops[OP_RESET] = 1'b1;
        dc_ops[OP_SET_RQ_PSN] = 1'b1;
        dc_ops[OP_SET_SQ_PSN] = 1'b1;
        dc_ent.path_mtu = d.path_mtu[2:0];
        dc_ent.encap = d.encap[1:0];
        dc_ent.timeout = d.timeout;
        dc_ent.retry_cnt = d.retry_cnt;
        dc_ent.rnr_retry = d.rnr_retry;
        dc_ent.min_rnr_timer = d.min_rnr_timer;
        dc_ent.max_rd_atomic = d.max_rd_atomic;
        dc_ent.max_dest_rd_atomic = d.max_dest_rd_atomic;
        dc_ent.pd = d.pd;
        dc_ent.access = d.access[3:0];
        dc_ent.dest_qpn = d.dest_qpn;
        dc_ent.send_cq = d.send_cq;
        dc_ent.recv_cq = d.recv_cq;
        dc_ent.sq_base = d.sq_base;
        dc_ent.rq_base = d.rq_base;
        dc_ent.sq_log_size = d.sq_log_size;
        dc_ent.rq_log_size = d.rq_log_size;
        dc_ent.dscp = d.dscp;
        dc_ent.hop_limit = d.hop_limit;
        dc_ent.udp_sport = udp_in;
        dc_ent.vlan = d.vlan[roce_desc_pkg::VLAN_TAG_VALID_BIT] ? d.vlan : 16'd0;
        dc_ent.dest_mac = d.dest_mac;
        dc_ent.flow_label = d.flow_label;
        dc_ent.sq_win_shift = d.sq_win_shift;
        dc_ent.sq_win_base = d.sq_win_base;
        dc_ent.dest_ip = dest_ip_in;
      end else if (k_mod) begin
        if (ck_bad || ck_mask_undef) dc_err = roce_regs_pkg::CMD_ERR_BAD_ATTR;
        else if (!ck_idx_ok || !e_written) dc_err = roce_regs_pkg::CMD_ERR_BAD_INDEX;
        else if (ck_mod_err != roce_regs_pkg::CMD_ERR_OK) dc_err = ck_mod_err;
        else if (ck_mtu) dc_err = roce_regs_pkg::CMD_ERR_BAD_ATTR;
        if (mask[roce_regs_pkg::QP_ATTR_ACCESS_FLAGS_BIT]) dc_ent.access = d.access[3:0];
        if (mask[roce_regs_pkg::QP_ATTR_PATH_MTU_BIT]) dc_ent.path_mtu = d.path_mtu[2:0];
        if (mask[roce_regs_pkg::QP_ATTR_DEST_QPN_BIT]) dc_ent.dest_qpn = d.dest_qpn;
        if (mask[roce_regs_pkg::QP_ATTR_AV_BIT]) begin
          dc_ent.encap = d.encap[1:0];
          dc_ent.dest_mac = d.dest_mac;
          dc_ent.vlan = d.vlan[roce_desc_pkg::VLAN_TAG_VALID_BIT] ? d.vlan : 16'd0;
          dc_ent.dscp = d.dscp;
          dc_ent.hop_limit = d.hop_limit;
          dc_ent.flow_label = d.flow_label;
          dc_ent.udp_sport = udp_in;
          dc_ent.dest_ip = dest_ip_in;
        end
        if (mask[roce_regs_pkg::QP_ATTR_TIMEOUT_BIT]) dc_ent.timeout = d.timeout;
        if (mask[roce_regs_pkg::QP_ATTR_RETRY_CNT_BIT]) dc_ent.retry_cnt = d.retry_cnt;
        if (mask[roce_regs_pkg::QP_ATTR_RNR_RETRY_BIT]) dc_ent.rnr_retry = d.rnr_retry;
        if (mask[roce_regs_pkg::QP_ATTR_MIN_RNR_TIMER_BIT]) dc_ent.min_rnr_timer = d.min_rnr_timer;
        if (mask[roce_regs_pkg::QP_ATTR_MAX_QP_RD_ATOMIC_BIT]) dc_ent.max_rd_atomic = d.max_rd_atomic;
        if (mask[roce_regs_pkg::QP_ATTR_MAX_DEST_RD_ATOMIC_BIT])
          dc_ent.max_dest_rd_atomic = d.max_dest_rd_atomic;
        dc_ops[OP_RESET] = d.state[2:0] == ST_RESET;
        dc_ops[OP_SET_RQ_PSN] = mask[roce_regs_pkg::QP_ATTR_RQ_PSN_BIT];
        dc_ops[OP_SET_SQ_PSN] = mask[roce_regs_pkg::QP_ATTR_SQ_PSN_BIT];
        dc_ops[OP_ENTER_RTS] = e_state == ST_RTR && d.state[2:0] == ST_RTS;
        dc_ops[OP_ENTER_ERR] = d.state[2:0] == ST_ERR && e_state != ST_ERR;
      end else if (k_rd) begin
        if (!ck_idx_ok) dc_err = roce_regs_pkg::CMD_ERR_BAD_INDEX;
      end else begin
        dc_err = roce_regs_pkg::CMD_ERR_BAD_OPCODE;
      end
    end
  end

  // the decided operation
  logic [7:0]  r_err;
  ent_t        r_ent;
  logic [3:0]  r_st;      // {written, state} to store
  logic        r_store;   // write the tables at commit
  logic [4:0]  r_ops;     // ops not yet presented
  logic [23:0] r_sq_psn, r_rq_psn;
  logic [15:0] r_sq_pi, r_sq_ci, r_rq_pi, r_rq_ci;

  // the next op: the lowest code pending; r_ops_nx: r_ops without it
  logic [2:0] nx_code;
  logic [2:0] op_code;   // the op on ctx_op
  logic [31:0] op_arg;
  logic [4:0] r_ops_nx;
  always_comb begin
    logic seen;
    nx_code = 3'd0;
    for (int i = 4; i >= 0; i--)
      if (r_ops[i]) nx_code = 3'(i);
    seen = 1'b0;
    for (int i = 0; i < 5; i++) begin
      r_ops_nx[i] = r_ops[i] && seen;
      seen = seen || r_ops[i];
    end
  end
  logic [31:0] nx_arg;
  always_comb begin
    nx_arg = 32'd0;
    case (nx_code)
      3'(roce_rec_pkg::CTX_OP_SET_RQ_PSN): nx_arg = {8'd0, d.rq_psn};
      3'(roce_rec_pkg::CTX_OP_SET_SQ_PSN): nx_arg = {8'd0, d.sq_psn};
      3'(roce_rec_pkg::CTX_OP_ENTER_RTS): begin
        nx_arg[roce_rec_pkg::CTX_RTS_RETRY_CNT_LSB +: roce_rec_pkg::CTX_RTS_RETRY_CNT_W] = r_ent.retry_cnt;
        nx_arg[roce_rec_pkg::CTX_RTS_RNR_RETRY_LSB +: roce_rec_pkg::CTX_RTS_RNR_RETRY_W] = r_ent.rnr_retry;
        nx_arg[roce_rec_pkg::CTX_RTS_WIN_SHIFT_LSB +: roce_rec_pkg::CTX_RTS_WIN_SHIFT_W] = r_ent.sq_win_shift;
        nx_arg[roce_rec_pkg::CTX_RTS_WIN_BASE_LSB +: roce_rec_pkg::CTX_RTS_WIN_BASE_W] = r_ent.sq_win_base;
      end
      default: nx_arg = 32'd0;
    endcase
  end

  // the QP_READ image
  roce_desc_pkg::qp_ctx_t img;
  always_comb begin
    img = '0;
    img.state = 8'(e_state);
    img.qp_type = roce_desc_pkg::QP_TYPE_RC;
    img.path_mtu = 8'(e.path_mtu);
    img.encap = 8'(e.encap);
    img.pd = e.pd;
    img.access = 32'(e.access);
    img.dest_qpn = e.dest_qpn;
    img.sq_psn = r_sq_psn;
    img.rq_psn = r_rq_psn;
    img.sq_base = e.sq_base;
    img.rq_base = e.rq_base;
    img.sq_log_size = e.sq_log_size;
    img.rq_log_size = e.rq_log_size;
    img.send_cq = e.send_cq;
    img.recv_cq = e.recv_cq;
    img.timeout = e.timeout;
    img.retry_cnt = e.retry_cnt;
    img.rnr_retry = e.rnr_retry;
    img.min_rnr_timer = e.min_rnr_timer;
    img.max_rd_atomic = e.max_rd_atomic;
    img.max_dest_rd_atomic = e.max_dest_rd_atomic;
    img.dest_mac = e.dest_mac;
    img.vlan = e.vlan;
    img.dscp = e.dscp;
    img.hop_limit = e.hop_limit;
    img.udp_sport = e.udp_sport;
    img.dest_ip = e.dest_ip;
    img.sq_pi = r_sq_pi;
    img.sq_ci = r_sq_ci;
    img.rq_pi = r_rq_pi;
    img.rq_ci = r_rq_ci;
    img.flow_label = e.flow_label;
    img.sq_win_shift = e.sq_win_shift;
    img.sq_win_base = e.sq_win_base;
  end

  // table writes: the clearing sweep, or a commit
  always_comb begin
    wr_en = 1'b0;
    wr_addr = k_index[LOG_N-1:0];
    wr_ent = r_ent;
    wr_st = r_st;
    if (!init_done) begin
      wr_en = 1'b1;
      wr_addr = init_idx[LOG_N-1:0];
      wr_ent = ENT_DEFAULT;
      wr_st = {1'b0, ST_RESET};
    end else if (fsm == S_COMMIT) begin
      wr_en = r_store;
    end
  end

  always_ff @(posedge clk) begin
    cmd_done <= 1'b0;
    cmd_rdata_we <= 1'b0;
    qp_err_valid <= 1'b0;
    if (!init_done) init_idx <= init_idx + 1'b1;
    case (fsm)
      S_IDLE:
        if (take_err || take_cmd) begin
          fsm <= S_CHECK;
          k_is_err <= take_err;
          k_wr <= cmd_opcode == roce_regs_pkg::CMD_OP_QP_WRITE;
          k_mod <= cmd_opcode == roce_regs_pkg::CMD_OP_QP_MODIFY;
          k_rd <= cmd_opcode == roce_regs_pkg::CMD_OP_QP_READ;
          for (int f = 0; f < 8; f++)
            pre_mod[8*f +: 8] <= roce_regs_pkg::qp_modify_error(8'(f), cd.state, cmd_arg);
          for (int g = 0; g < 8; g++)
            pre_rsvd[g] <= cd.rsvd_96[RSV_G*g +: RSV_G] != '0;
          k_index <= take_err ? err_qpn : cmd_index;
          k_arg <= cmd_arg;
          k_cause <= err_cause;
          k_data <= cmd_data;
          cq_grp_s <= cq_pad[16*cd.send_cq[LOG_CQP-1:4] +: 16];
          cq_grp_r <= cq_pad[16*cd.recv_cq[LOG_CQP-1:4] +: 16];
        end
      S_CHECK: begin
        fsm <= S_DECIDE;
        ck_bad <= roce_desc_pkg::qp_ctx_bad(d_nr) || pre_rsvd != '0;
        ck_idx_ok <= 32'(k_index) < N;
        ck_rsvd <= k_index < 24'd2;
        ck_cq_ok <= send_cq_ok && recv_cq_ok;
        ck_mask_undef <= (k_arg & ~roce_regs_pkg::QP_ATTR_MASK) != '0;
        ck_busy <= e_state != ST_RESET;
        ck_wr_state <= roce_regs_pkg::qp_write_error(roce_desc_pkg::QP_STATE_RESET, d.state)
                       != roce_regs_pkg::CMD_ERR_OK;
        ck_type <= d.qp_type != roce_desc_pkg::QP_TYPE_RC;
        // the send window: shift at most 4 (256 WQEs), the base a multiple of its blocks
        // inside the pool's N
        ck_win <= d.sq_win_shift > 3'd4 || (d.sq_win_base & ~(16'hFFFF << d.sq_win_shift)) != '0 ||
                  32'(d.sq_win_base) >= N;
        ck_mod_err <= pre_mod[8*e_state +: 8];
        ck_mtu <= k_arg[roce_regs_pkg::QP_ATTR_PATH_MTU_BIT] && d.path_mtu > 8'(MAX_MTU);
        ck_enter <= 32'(k_index) < N && e_written && roce_regs_pkg::qp_error_enters_err({5'd0, e_state});
        ck_hash <= {2'b11, hash};
      end
      S_DECIDE: begin
        r_err <= dc_err;
        r_ent <= dc_ent;
        r_st <= {1'b1, k_is_err ? ST_ERR : d.state[2:0]};
        r_store <= 1'b0;
        r_ops <= '0;
        {r_sq_psn, r_rq_psn, r_sq_pi, r_sq_ci, r_rq_pi, r_rq_ci} <= '0;
        if (k_is_err) begin
          if (ck_enter) begin
            r_ops <= dc_ops;
            r_store <= 1'b1;
            fsm <= S_OPS;
          end else begin
            fsm <= S_IDLE;
          end
        end else if (dc_err != roce_regs_pkg::CMD_ERR_OK) begin
          fsm <= S_COMMIT;
        end else if (k_rd) begin
          if (e_written) begin
            st_rd_valid <= 1'b1;
            fsm <= S_STRD;
          end else begin
            fsm <= S_COMMIT;
          end
        end else begin
          r_ops <= dc_ops;
          r_store <= 1'b1;
          fsm <= S_OPS;
        end
      end
      S_OPS:
        if (!ctx_op_valid || ctx_op_done) begin
          if (r_ops != '0) begin
            ctx_op_valid <= 1'b1;
            op_code <= nx_code;
            op_arg <= nx_arg;
            r_ops <= r_ops_nx;
          end else begin
            ctx_op_valid <= 1'b0;
            fsm <= S_COMMIT;
          end
        end
      S_STRD:
        if (st_rd_done) begin
          st_rd_valid <= 1'b0;
          r_sq_psn <= st_rd_sq_psn;
          r_rq_psn <= st_rd_rq_psn;
          r_sq_pi <= st_rd_sq_pi;
          r_sq_ci <= st_rd_sq_ci;
          r_rq_pi <= st_rd_rq_pi;
          r_rq_ci <= st_rd_rq_ci;
          fsm <= S_COMMIT;
        end
      S_COMMIT: begin
        fsm <= S_IDLE;
        if (k_is_err) begin
          qp_err_valid <= 1'b1;
          qp_err_qpn <= k_index;
          qp_err_cause <= k_cause;
        end else begin
          cmd_done <= 1'b1;
          cmd_error <= r_err;
          cmd_rdata_we <= k_rd && r_err == roce_regs_pkg::CMD_ERR_OK;
          cmd_rdata <= img;
        end
      end
      default: fsm <= S_IDLE;
    endcase
    if (rst || soft_reset) begin
      init_idx <= '0;
      fsm <= S_IDLE;
      ctx_op_valid <= 1'b0;
      st_rd_valid <= 1'b0;
      cmd_done <= 1'b0;
      cmd_rdata_we <= 1'b0;
      qp_err_valid <= 1'b0;
    end
    if (rst) begin
      cmd_error <= 8'd0;
      cmd_rdata <= '0;
      qp_err_qpn <= 24'd0;
      qp_err_cause <= 8'd0;
      op_code <= 3'd0;
      op_arg <= 32'd0;
    end
  end

  always_comb begin
    ctx_op.code = 8'(op_code);
    ctx_op.qpn = k_index;
    ctx_op.arg = op_arg;
  end
  assign st_rd_qpn = k_index;

endmodule

`resetall
