// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_tx_arb: the TX arbiter and header assembly. Four sources, one frame's record at a time
// in priority order: s_cnp (CNPs from roce_dcqcn), s_ack (owed ACK/NAKs from roce_ack_q),
// s_rsp (READ responses and ATOMIC ACKs from roce_rd_rsp, with payload), s_req (requests from
// roce_req, with payload). The QP's attributes are looked up on roce_qp_ctx's TX port and the
// frame's tx_hdr_t goes out on m_hdr (addresses, VLAN, DSCP/ECN, IPv4 identification, UDP
// source port, exactly engine::tx_arb::frame_builder), then the payload on m_axis_pay, which
// passes while the next frames' records are made (a source's descriptor may be taken before
// its previous payload has ended). A frame whose priority is paused by PFC (pause[pcp]) waits
// and holds the frames behind it.
// Ports: s_cnp, s_ack, s_rsp + s_axis_rsp_pay, s_req + s_axis_req_pay, the TX attribute port,
//   port configuration, pause, m_hdr, m_axis_pay.
// Latency: a packet taken in c has its record on m_hdr in c+3 (the attribute lookup asked in c,
//   answered in c+2; the record registered from the answer); its first payload beat passes
//   from c+4, or once the payload before it has ended.
// Throughput: one record per 4 cycles; payloads back to back (one frame per max(4, payload
//   beats) cycles when m_hdr and the payloads keep up).
// Model blocks::tx_arb; docs/engine-hdl.md.
//
// Parameters:
//   LOG_N  log2 of the number of QPs (the attribute port's QPN width).

`resetall
`default_nettype none

module roce_tx_arb #(
  parameter int LOG_N = 10,
  localparam int DESC_W = 8 * roce_rec_pkg::TX_DESC_BYTES,
  localparam int ATTR_W = 8 * roce_rec_pkg::QP_ATTR_BYTES,
  localparam int HDR_W = 8 * roce_rec_pkg::TX_HDR_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [47:0]       cfg_mac,
  input  wire logic [31:0]       cfg_ipv4,
  input  wire logic [127:0]      cfg_gid,
  input  wire logic              cfg_ecn_enable,
  input  wire logic              cfg_vlan_enable,
  input  wire logic [11:0]       cfg_vlan_vid,
  input  wire logic [2:0]        cfg_vlan_pcp,
  input  wire logic [7:0]        pause,

  input  wire logic              s_cnp_valid,
  output      logic              s_cnp_ready,
  input  wire logic [23:0]       s_cnp_qpn,

  input  wire logic              s_ack_valid,
  output      logic              s_ack_ready,
  input  wire logic [DESC_W-1:0] s_ack_desc,

  input  wire logic              s_rsp_valid,
  output      logic              s_rsp_ready,
  input  wire logic [DESC_W-1:0] s_rsp_desc,
  input  wire logic [511:0]      s_axis_rsp_tdata,
  input  wire logic [63:0]       s_axis_rsp_tkeep,
  input  wire logic              s_axis_rsp_tvalid,
  output      logic              s_axis_rsp_tready,
  input  wire logic              s_axis_rsp_tlast,

  input  wire logic              s_req_valid,
  output      logic              s_req_ready,
  input  wire logic [DESC_W-1:0] s_req_desc,
  input  wire logic [511:0]      s_axis_req_tdata,
  input  wire logic [63:0]       s_axis_req_tkeep,
  input  wire logic              s_axis_req_tvalid,
  output      logic              s_axis_req_tready,
  input  wire logic              s_axis_req_tlast,

  output      logic              m_attr_valid,
  output      logic [LOG_N-1:0]  m_attr_qpn,
  input  wire logic              s_attr_valid,
  input  wire logic [ATTR_W-1:0] s_attr_data,

  output      logic              m_hdr_valid,
  input  wire logic              m_hdr_ready,
  output      logic [HDR_W-1:0]  m_hdr,
  output      logic [511:0]      m_axis_pay_tdata,
  output      logic [63:0]       m_axis_pay_tkeep,
  output      logic              m_axis_pay_tvalid,
  input  wire logic              m_axis_pay_tready,
  output      logic              m_axis_pay_tlast,

  output      logic              cnt_ack
);

  typedef enum logic [2:0] { S_IDLE, S_ATTR, S_HDR, S_PAY } state_t;
  state_t st;
  typedef enum logic [1:0] { SRC_CNP, SRC_ACK, SRC_RSP, SRC_REQ } src_t;
  src_t src;

  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::tx_desc_t d;  // the packet (its QPN went to the attribute lookup)
  /* verilator lint_on UNUSEDSIGNAL */
  logic [15:0] ip_id;  // the next IPv4 frame's identification

  // ---------------------------------------------------------------- arbitration
  logic idle;
  assign idle = st == S_IDLE;
  assign s_cnp_ready = idle;
  assign s_ack_ready = idle && !s_cnp_valid;
  assign s_rsp_ready = idle && !s_cnp_valid && !s_ack_valid;
  assign s_req_ready = idle && !s_cnp_valid && !s_ack_valid && !s_rsp_valid;

  // the attribute lookup goes out in the cycle a packet is taken
  assign m_attr_valid = idle && (s_cnp_valid || s_ack_valid || s_rsp_valid || s_req_valid);
  assign m_attr_qpn = s_cnp_valid ? s_cnp_qpn[LOG_N-1:0]
                    : s_ack_valid ? s_ack_desc[8*roce_rec_pkg::TX_DESC_QPN_OFF +: LOG_N]
                    : s_rsp_valid ? s_rsp_desc[8*roce_rec_pkg::TX_DESC_QPN_OFF +: LOG_N]
                    : s_req_desc[8*roce_rec_pkg::TX_DESC_QPN_OFF +: LOG_N];

  roce_rec_pkg::tx_desc_t cnp_desc;
  always_comb begin
    cnp_desc = '0;
    cnp_desc.qpn = s_cnp_qpn;
    cnp_desc.opcode = 8'h81;
    cnp_desc.flags[roce_rec_pkg::TX_DESC_FLAG_BECN_BIT] = 1'b1;
  end

  // ---------------------------------------------------------------- header assembly
  /* verilator lint_off UNUSEDSIGNAL */
  roce_rec_pkg::qp_attr_t a;   // the record carries fields other blocks use
  roce_rec_pkg::qp_attr_t ac;  // the answer in the cycle it comes, then as kept
  /* verilator lint_on UNUSEDSIGNAL */
  assign ac = st == S_ATTR ? s_attr_data : a;

  logic v4, v6, v1, vtag;
  logic [11:0] vid;
  logic [2:0]  pcp;
  always_comb begin
    v6 = ac.encap == roce_rec_pkg::ENCAP_ROCE_V2_IPV6;
    v1 = ac.encap == roce_rec_pkg::ENCAP_ROCE_V1;
    v4 = !v6 && !v1;
    // QpAttr.vlan: VlanTag (VID, VALID, PCP)
    vtag = ac.vlan[roce_desc_pkg::VLAN_TAG_VALID_BIT] || cfg_vlan_enable;
    vid = ac.vlan[roce_desc_pkg::VLAN_TAG_VALID_BIT] ? ac.vlan[roce_desc_pkg::VLAN_TAG_VID_LSB +: 12] : cfg_vlan_vid;
    pcp = ac.vlan[roce_desc_pkg::VLAN_TAG_VALID_BIT] ? ac.vlan[roce_desc_pkg::VLAN_TAG_PCP_LSB +: 3] : cfg_vlan_pcp;
  end

  roce_rec_pkg::tx_hdr_t h;
  always_comb begin
    h = '0;
    h.flags[roce_rec_pkg::TX_FLAG_VLAN_BIT] = vtag;
    h.flags[roce_rec_pkg::TX_FLAG_IPV6_BIT] = v6;
    h.flags[roce_rec_pkg::TX_FLAG_ROCEV1_BIT] = v1;
    h.flags[roce_rec_pkg::TX_FLAG_DF_BIT] = v4;
    h.opcode = d.opcode;
    h.bth_se_m_tver = {d.flags[roce_rec_pkg::TX_DESC_FLAG_SE_BIT], 7'd0};
    h.bth_fecn_becn = {1'b0, d.flags[roce_rec_pkg::TX_DESC_FLAG_BECN_BIT], 6'd0};
    h.pkey = 16'hFFFF;
    h.ack_req = d.flags[roce_rec_pkg::TX_DESC_FLAG_ACK_REQ_BIT];
    h.ttl = ac.hop_limit;
    h.dest_qp = ac.dest_qpn;
    h.psn = d.psn;
    h.udp_sport = v1 ? 16'd0 : ac.udp_sport;
    h.vlan_tci = vtag ? {pcp, 1'b0, vid} : 16'd0;
    h.payload_len = d.payload_len;
    h.ip_id = v4 ? ip_id : 16'd0;
    h.src_mac = roce_util_pkg::bswap48(cfg_mac);
    h.dst_mac = ac.dest_mac;
    h.tclass = {ac.dscp, (v1 || !cfg_ecn_enable) ? 2'b00 : 2'b10};
    if (v4) begin
      h.src_ip = {roce_util_pkg::bswap48({16'hFFFF, cfg_ipv4}), 80'd0};
      h.dst_ip = {ac.dest_ip[127:96], 16'hFFFF, 80'd0};
    end else begin
      h.src_ip = roce_util_pkg::bswap128(cfg_gid);
      h.dst_ip = ac.dest_ip;
      h.flow_label = ac.flow_label;
    end
    h.va = d.va;
    h.rkey = d.rkey;
    h.dma_len = d.dma_len;
    h.swap_add = d.swap_add;
    h.compare = d.compare;
    h.aeth_syndrome = d.aeth_syndrome;
    h.aeth_msn = d.aeth_msn;
    h.imm_or_inv = d.imm_or_inv;
    h.atomic_orig = d.atomic_orig;
  end

  // ---------------------------------------------------------------- payload pass-through
  // The payload of the frame whose record went out last, from p_src, while the next frame's
  // attributes and record are taken (S_PAY: a record out, its payload waits for the one
  // before it to end).
  logic p_on, p_end;
  src_t p_src;
  logic pay_rsp, pay_req;
  assign pay_rsp = p_on && p_src == SRC_RSP;
  assign pay_req = p_on && p_src == SRC_REQ;
  assign p_end = m_axis_pay_tvalid && m_axis_pay_tready && m_axis_pay_tlast;
  always_comb begin
    m_axis_pay_tdata = pay_rsp ? s_axis_rsp_tdata : s_axis_req_tdata;
    m_axis_pay_tkeep = pay_rsp ? s_axis_rsp_tkeep : s_axis_req_tkeep;
    m_axis_pay_tlast = pay_rsp ? s_axis_rsp_tlast : s_axis_req_tlast;
    m_axis_pay_tvalid = (pay_rsp && s_axis_rsp_tvalid) || (pay_req && s_axis_req_tvalid);
    s_axis_rsp_tready = pay_rsp && m_axis_pay_tready;
    s_axis_req_tready = pay_req && m_axis_pay_tready;
  end

  always_ff @(posedge clk) begin
    cnt_ack <= 1'b0;
    if (p_end) p_on <= 1'b0;
    case (st)
      S_IDLE: begin
        if (s_cnp_valid) begin
          d <= cnp_desc;
          src <= SRC_CNP;
        end else if (s_ack_valid) begin
          d <= s_ack_desc;
          src <= SRC_ACK;
        end else if (s_rsp_valid) begin
          d <= s_rsp_desc;
          src <= SRC_RSP;
        end else begin
          d <= s_req_desc;
          src <= SRC_REQ;
        end
        if (s_cnp_valid || s_ack_valid || s_rsp_valid || s_req_valid) st <= S_ATTR;
      end
      S_ATTR: if (s_attr_valid) begin
        // the record straight from the answer (S_HDR waits out a pause)
        a <= s_attr_data;
        st <= S_HDR;
        if (!pause[vtag ? pcp : 3'd0]) begin
          m_hdr_valid <= 1'b1;
          m_hdr <= h;
          if (v4) ip_id <= ip_id + 16'd1;
          if (src == SRC_ACK) cnt_ack <= 1'b1;
        end
      end
      S_HDR: begin
        if (!m_hdr_valid && !pause[vtag ? pcp : 3'd0]) begin
          m_hdr_valid <= 1'b1;
          m_hdr <= h;
          if (v4) ip_id <= ip_id + 16'd1;
          if (src == SRC_ACK) cnt_ack <= 1'b1;
        end
        if (m_hdr_valid && m_hdr_ready) begin
          m_hdr_valid <= 1'b0;
          st <= S_IDLE;
          if (d.payload_len != 16'd0) begin
            if (!p_on || p_end) begin
              p_on <= 1'b1;
              p_src <= src;
            end else begin
              st <= S_PAY;
            end
          end
        end
      end
      S_PAY: if (!p_on || p_end) begin
        p_on <= 1'b1;
        p_src <= src;
        st <= S_IDLE;
      end
      default: st <= S_IDLE;
    endcase
    if (rst) begin
      st <= S_IDLE;
      p_on <= 1'b0;
      m_hdr_valid <= 1'b0;
      ip_id <= 16'd1;
      cnt_ack <= 1'b0;
    end
  end

endmodule

`resetall
