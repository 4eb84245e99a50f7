// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_rx_disp: the RX dispatch between roce_rx_parse and the transport. For each header
// record (s_rec: rx_hdr_t, its payload on s_axis_pay) the engine model's RX decision
// (engine::rx_disp::rx_verdict): malformed, not ours, not RoCE and unknown-QP packets are dropped
// and counted, CNPs go to roce_dcqcn (m_cnp), requests to roce_resp (m_req) and responses to
// roce_comp (m_rsp) with the QP's attributes (m_attr) and state (m_state), the payload routed
// behind them; a CE-marked request or response with CTRL.ECN_ENABLE gives a CE event (m_ce).
// The payload of a dropped packet is consumed here; CTRL.ENABLE = 0 drops every frame.
// Ports: s_rec, s_axis_pay, the RX attribute port, m_req / m_rsp, m_axis_pay_*, m_cnp, m_ce,
//   configuration, counters. Model blocks::rx_disp; docs/engine-hdl.md.
// Latency: a record taken in c is offered on m_req / m_rsp in c+4 (attribute latency 2).
// Throughput: one record every 5 cycles when its target takes it at once; payloads pass at one
//   beat per cycle, routed by a queue of decided targets (up to 4 packets ahead).
//
// Parameters:
//   LOG_N  log2 of the number of QPs (larger QPNs are unknown).

`resetall
`default_nettype none

module roce_rx_disp #(
  parameter int LOG_N = 10,
  localparam int HDR_W = 8 * roce_rec_pkg::RX_HDR_BYTES,
  localparam int ATTR_W = 8 * roce_rec_pkg::QP_ATTR_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic              cfg_enable,
  input  wire logic              cfg_ecn_enable,
  input  wire logic [47:0]       cfg_mac,
  input  wire logic [31:0]       cfg_ipv4,
  input  wire logic [127:0]      cfg_gid,

  input  wire logic              s_rec_valid,
  output      logic              s_rec_ready,
  input  wire logic [HDR_W-1:0]  s_rec,
  input  wire logic [511:0]      s_axis_pay_tdata,
  input  wire logic [63:0]       s_axis_pay_tkeep,
  input  wire logic              s_axis_pay_tvalid,
  output      logic              s_axis_pay_tready,
  input  wire logic              s_axis_pay_tlast,
  input  wire logic              s_axis_pay_tuser,

  output      logic              m_attr_valid,
  output      logic [LOG_N-1:0]  m_attr_qpn,
  input  wire logic              s_attr_valid,
  input  wire logic [ATTR_W-1:0] s_attr_data,
  input  wire logic [2:0]        s_attr_state,

  output      logic              m_req_valid,
  input  wire logic              m_req_ready,
  output      logic              m_rsp_valid,
  input  wire logic              m_rsp_ready,
  output      logic [HDR_W-1:0]  m_hdr,
  output      logic [ATTR_W-1:0] m_attr,
  output      logic [2:0]        m_state,
  output      logic [511:0]      m_axis_req_tdata,
  output      logic [63:0]       m_axis_req_tkeep,
  output      logic              m_axis_req_tvalid,
  input  wire logic              m_axis_req_tready,
  output      logic              m_axis_req_tlast,
  output      logic [511:0]      m_axis_rsp_tdata,
  output      logic [63:0]       m_axis_rsp_tkeep,
  output      logic              m_axis_rsp_tvalid,
  input  wire logic              m_axis_rsp_tready,
  output      logic              m_axis_rsp_tlast,

  output      logic              m_cnp_valid,
  input  wire logic              m_cnp_ready,
  output      logic [23:0]       m_cnp_qpn,
  output      logic              m_ce_valid,
  input  wire logic              m_ce_ready,
  output      logic [23:0]       m_ce_qpn,

  output      logic              cnt_malformed,
  output      logic              cnt_dropped,
  output      logic              cnt_not_roce,
  output      logic              cnt_unknown_qp,
  output      logic              cnt_ecn,
  output      logic              cnt_cnp
);

  typedef enum logic [1:0] { S_IDLE, S_ATTR, S_DECIDE, S_FWD } state_t;
  state_t st;

  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::rx_hdr_t h;  // the record carries fields the transport blocks use
  /* verilator lint_on UNUSEDSIGNAL */
  logic [31:0] info;
  logic        ce;

  typedef enum logic [1:0] { T_DROP, T_REQ, T_RSP } target_t;

  // where the payloads of decided records go, in order: the record side runs ahead of the
  // payload stream by up to RQ_DEPTH packets (the responder starts on a packet while the
  // previous payload still streams)
  localparam int RQ_DEPTH = 4;
  target_t     rq [RQ_DEPTH];
  logic [2:0]  rq_wp, rq_rp;
  logic        rq_full, rq_empty, rq_push, rq_pop;
  logic [2:0]  rq_n;  // rq_wp - rq_rp, on a register (rq_full is in front of S_DECIDE's outputs)
  target_t     rq_in;
  assign rq_full = rq_n == 3'(RQ_DEPTH);
  assign rq_empty = rq_wp == rq_rp;
  target_t     tgt;
  assign tgt = rq[rq_rp[1:0]];
  assign rq_pop = s_axis_pay_tvalid && s_axis_pay_tready && s_axis_pay_tlast;

  // the port's addresses in record byte order (memory order)
  logic [127:0] my_v4, my_gid;
  logic [47:0]  my_mac;
  assign my_v4 = {roce_util_pkg::bswap48({16'hFFFF, cfg_ipv4}), 80'd0};
  assign my_gid = roce_util_pkg::bswap128(cfg_gid);
  assign my_mac = roce_util_pkg::bswap48(cfg_mac);

  logic roce, err, v4, pay, mac_ok, ip_ok, known, is_req, is_rsp, is_cnp;
  always_comb begin
    roce = h.flags[roce_rec_pkg::RX_FLAG_ROCE_BIT];
    err = h.flags[roce_rec_pkg::RX_FLAG_ERROR_BIT];
    v4 = !h.flags[roce_rec_pkg::RX_FLAG_IPV6_BIT] && !h.flags[roce_rec_pkg::RX_FLAG_ROCEV1_BIT];
    pay = h.flags[roce_rec_pkg::RX_FLAG_PAYLOAD_BIT];
    // non-RoCE records carry no addresses: the MAC filter applies to RoCE frames here
    mac_ok = !roce || h.dst_mac == my_mac || h.dst_mac[0];
    ip_ok = v4 ? h.dst_ip == my_v4 : (h.dst_ip == my_gid || h.dst_ip == my_v4);
    is_cnp = info[roce_opcode_pkg::OPI_CNP];
    is_rsp = info[roce_opcode_pkg::OPI_RESPONSE];
    is_req = info[roce_opcode_pkg::OPI_REQUEST] && !is_rsp && !is_cnp;
    known = h.dest_qp[23:LOG_N] == '0;
  end

  logic can_receive, can_receive_q, addr_ok_q;
  assign can_receive = known && (s_attr_state == 3'd2 || s_attr_state == 3'd3 || s_attr_state == 3'd4);

  // payload routing: the head of the route queue
  logic route_req, route_rsp, route_drop;
  assign route_req = !rq_empty && tgt == T_REQ;
  assign route_rsp = !rq_empty && tgt == T_RSP;
  assign route_drop = !rq_empty && tgt == T_DROP;
  always_comb begin
    m_axis_req_tdata = s_axis_pay_tdata;
    m_axis_req_tkeep = s_axis_pay_tkeep;
    m_axis_req_tlast = s_axis_pay_tlast;
    m_axis_rsp_tdata = s_axis_pay_tdata;
    m_axis_rsp_tkeep = s_axis_pay_tkeep;
    m_axis_rsp_tlast = s_axis_pay_tlast;
    m_axis_req_tvalid = route_req && s_axis_pay_tvalid;
    m_axis_rsp_tvalid = route_rsp && s_axis_pay_tvalid;
    s_axis_pay_tready = route_drop || (route_req && m_axis_req_tready) || (route_rsp && m_axis_rsp_tready);
  end

  assign s_rec_ready = st == S_IDLE;

  always_ff @(posedge clk) begin
    m_attr_valid <= 1'b0;
    cnt_malformed <= 1'b0;
    cnt_dropped <= 1'b0;
    cnt_not_roce <= 1'b0;
    cnt_unknown_qp <= 1'b0;
    cnt_ecn <= 1'b0;
    cnt_cnp <= 1'b0;
    if (m_cnp_valid && m_cnp_ready) m_cnp_valid <= 1'b0;
    if (m_ce_valid && m_ce_ready) m_ce_valid <= 1'b0;
    rq_push <= 1'b0;
    if (rq_push) begin
      rq[rq_wp[1:0]] <= rq_in;
      rq_wp <= rq_wp + 3'd1;
    end
    if (rq_pop) rq_rp <= rq_rp + 3'd1;
    if (rq_push && !rq_pop) rq_n <= rq_n + 3'd1;
    if (!rq_push && rq_pop) rq_n <= rq_n - 3'd1;
    case (st)
      S_IDLE: if (s_rec_valid) begin
        h <= s_rec;
        info <= roce_opcode_pkg::op_info(s_rec[8*roce_rec_pkg::RX_HDR_OPCODE_OFF +: 8]);
        ce <= s_rec[8*roce_rec_pkg::RX_HDR_FLAGS_OFF + roce_rec_pkg::RX_FLAG_CE_BIT];
        m_attr_valid <= 1'b1;
        m_attr_qpn <= s_rec[8*roce_rec_pkg::RX_HDR_DEST_QP_OFF +: LOG_N];
        st <= S_ATTR;
      end
      S_ATTR: if (s_attr_valid) begin
        m_attr <= s_attr_data;
        m_state <= s_attr_state;
        st <= S_DECIDE;
      end
      S_DECIDE: begin
        // wait for the previous CNP / CE event to be taken, and for room in the route queue
        if (!m_cnp_valid && !m_ce_valid && !rq_full && !rq_push) begin
          rq_in <= T_DROP;
          rq_push <= pay;
          st <= S_IDLE;
          if (!cfg_enable) cnt_dropped <= 1'b1;
          else if (err) cnt_malformed <= 1'b1;
          else if (!addr_ok_q) cnt_dropped <= 1'b1;
          else if (!roce) cnt_not_roce <= 1'b1;
          else if (is_cnp) begin
            cnt_cnp <= 1'b1;
            m_cnp_valid <= 1'b1;
            m_cnp_qpn <= h.dest_qp;
          end else if (!(is_req || is_rsp) || !can_receive_q) cnt_unknown_qp <= 1'b1;
          else begin
            if (ce && cfg_ecn_enable) begin
              cnt_ecn <= 1'b1;
              m_ce_valid <= 1'b1;
              m_ce_qpn <= h.dest_qp;
            end
            m_hdr <= h;
            m_req_valid <= is_req;
            m_rsp_valid <= is_rsp;
            rq_push <= 1'b0;  // the payload's route goes in once the record is taken
            st <= S_FWD;
          end
        end
      end
      S_FWD: begin
        if ((m_req_valid && m_req_ready) || (m_rsp_valid && m_rsp_ready)) begin
          m_req_valid <= 1'b0;
          m_rsp_valid <= 1'b0;
          rq_in <= m_req_valid ? T_REQ : T_RSP;
          rq_push <= pay;
          st <= S_IDLE;
        end
      end
      default: st <= S_IDLE;
    endcase
    if (rst) begin
      st <= S_IDLE;
      m_attr_valid <= 1'b0;
      m_req_valid <= 1'b0;
      m_rsp_valid <= 1'b0;
      m_cnp_valid <= 1'b0;
      m_ce_valid <= 1'b0;
      rq_wp <= '0;
      rq_rp <= '0;
      rq_n <= '0;
      rq_push <= 1'b0;
    end
  end

  // the QP's state, kept with its attributes; the address filter (128-bit compares) on the
  // record, registered while the attributes are read (h holds still from S_IDLE on)
  always_ff @(posedge clk) begin
    if (st == S_ATTR && s_attr_valid) can_receive_q <= can_receive;
    if (st == S_ATTR) addr_ok_q <= mac_ok && (!roce || ip_ok);
  end

  logic unused;
  assign unused = s_axis_pay_tuser;

endmodule

`resetall
