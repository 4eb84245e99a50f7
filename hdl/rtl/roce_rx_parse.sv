// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_rx_parse: RX header parser. Behind roce_axis_drop_fifo (s_axis_tlen: the frame's
// byte count), each frame gives one header record on m_axis_rec (rx_hdr_t: the verdict flags
// and error code, and every field the transport needs; only flags and error for a malformed or
// non-RoCE frame) and, for a RoCE packet with payload, one payload packet on m_axis_pay (no pad
// or ICRC, realigned to lane 0, tlast on its last beat; tuser on it if the frame ended early).
// The record is exactly blocks::rx_parse::parse (the wire codec's verdict). Pipeline
// (global enable): header token, S1 Ethernet, S2 IP/UDP checks, S3 BTH and extensions, S4
// lengths and the record, then the output registers and the payload realigner.
// Ports: s_axis_* + s_axis_tlen; m_axis_rec_*, m_axis_pay_* (independent tready: a consumer may
//   take a record, its payload, then the next record).
// Latency: the record is valid 5 cycles after the beat that completes the header is accepted
//   (+1 per bubble of a frame ahead of it); the first payload beat comes with it or next.
// Throughput: one beat per cycle in and out; a payload needing one output beat more than its
//   frame has left costs one bubble (line rate at 100 Gb/s for every frame size).
// docs/engine-hdl.md.
//
// Parameters:
//   DATA_W  datapath width: 512 only.
//   LEN_W   width of s_axis_tlen (default 16).

`resetall
`default_nettype none

module roce_rx_parse #(
  parameter int DATA_W = 512,
  parameter int LEN_W = 16,
  localparam int KEEP_W = DATA_W / 8,
  localparam int REC_W = 8 * roce_rec_pkg::RX_HDR_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [DATA_W-1:0] s_axis_tdata,
  input  wire logic [KEEP_W-1:0] s_axis_tkeep,
  input  wire logic              s_axis_tvalid,
  output      logic              s_axis_tready,
  input  wire logic              s_axis_tlast,
  input  wire logic [LEN_W-1:0]  s_axis_tlen,

  output      logic [REC_W-1:0]  m_axis_rec_tdata,
  output      logic              m_axis_rec_tvalid,
  input  wire logic              m_axis_rec_tready,

  output      logic [DATA_W-1:0] m_axis_pay_tdata,
  output      logic [KEEP_W-1:0] m_axis_pay_tkeep,
  output      logic              m_axis_pay_tvalid,
  input  wire logic              m_axis_pay_tready,
  output      logic              m_axis_pay_tlast,
  output      logic              m_axis_pay_tuser
);

  if (DATA_W != 512) begin : g_bad_width
    $error("roce_rx_parse: DATA_W must be 512");
  end
  if (LEN_W < 8 || LEN_W > 16) begin : g_bad_len_w
    $error("roce_rx_parse: LEN_W must be 8..16");
  end

  localparam logic [15:0] ET_VLAN = 16'h8100;
  localparam logic [15:0] ET_IPV4 = 16'h0800;
  localparam logic [15:0] ET_IPV6 = 16'h86DD;
  localparam logic [15:0] ET_V1   = 16'h8915;
  localparam logic [15:0] ROCE_PORT = 16'd4791;

  localparam logic [1:0] CLS_OTHER = 2'd0;
  localparam logic [1:0] CLS_V4    = 2'd1;
  localparam logic [1:0] CLS_V6    = 2'd2;
  localparam logic [1:0] CLS_V1    = 2'd3;

  // Big-endian field extraction from byte vectors (byte k = bits [8k+7:8k]).
  function automatic logic [15:0] be16(input logic [1023:0] v, input int o);
    be16 = {v[8*o +: 8], v[8*(o+1) +: 8]};
  endfunction
  function automatic logic [23:0] be24(input logic [1023:0] v, input int o);
    be24 = {v[8*o +: 8], v[8*(o+1) +: 8], v[8*(o+2) +: 8]};
  endfunction
  function automatic logic [31:0] be32(input logic [1023:0] v, input int o);
    be32 = {v[8*o +: 8], v[8*(o+1) +: 8], v[8*(o+2) +: 8], v[8*(o+3) +: 8]};
  endfunction
  function automatic logic [63:0] be64(input logic [1023:0] v, input int o);
    be64 = {be32(v, o), be32(v, o + 4)};
  endfunction

  // Bytes sh.. of a 128-byte window: three 4:1 byte-mux stages (by 16, 4 and 1 bytes);
  // the window's last byte is never selected (sh <= 63).
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [511:0] funnel(input logic [1023:0] w, input logic [5:0] sh);
  /* verilator lint_on UNUSEDSIGNAL */
    logic [8*79-1:0] fa;
    logic [8*67-1:0] fb;
    case (sh[5:4])
      2'd0:    fa = w[0 +: 8*79];
      2'd1:    fa = w[8*16 +: 8*79];
      2'd2:    fa = w[8*32 +: 8*79];
      default: fa = w[8*48 +: 8*79];
    endcase
    case (sh[3:2])
      2'd0:    fb = fa[0 +: 8*67];
      2'd1:    fb = fa[8*4 +: 8*67];
      2'd2:    fb = fa[8*8 +: 8*67];
      default: fb = fa[8*12 +: 8*67];
    endcase
    case (sh[1:0])
      2'd0:    funnel = fb[0 +: 512];
      2'd1:    funnel = fb[8 +: 512];
      2'd2:    funnel = fb[16 +: 512];
      default: funnel = fb[24 +: 512];
    endcase
  endfunction

  logic adv;
  assign s_axis_tready = adv;

  // Lengths come from s_axis_tlen; tkeep is implied by it (contiguous frames).
  logic unused_keep;
  assign unused_keep = ^s_axis_tkeep;

  // ------------------------------------------------------------------------------------
  // Stage 0: header assembly
  // ------------------------------------------------------------------------------------
  logic              s_hs, in_first, in_second, tok_now;
  logic [DATA_W-1:0] beat0;
  logic [1023:0]     hdr;

  assign s_hs = s_axis_tvalid && adv;

  always_ff @(posedge clk) begin
    if (s_hs) begin
      in_first  <= s_axis_tlast;
      in_second <= in_first && !s_axis_tlast;
      if (in_first) begin
        beat0 <= s_axis_tdata;
      end
    end
    if (rst) begin
      in_first  <= 1'b1;
      in_second <= 1'b0;
    end
  end

  // The header is complete with beat 1, or with beat 0 if it is the frame's only beat.
  assign tok_now = s_hs && ((in_first && s_axis_tlast) || in_second);
  assign hdr = in_first ? {512'b0, s_axis_tdata} : {s_axis_tdata, beat0};

  // ------------------------------------------------------------------------------------
  // Data delay line D1..D4 beside S1..S4
  // ------------------------------------------------------------------------------------
  // d_data holds D1 in its low DATA_W bits and D4 in its high ones (a flat shift register:
  // Yosys 0.23 does not take multi-dimensional packed arrays).
  logic [4*DATA_W-1:0]    d_data;
  logic [DATA_W-1:0]      d4_data;
  logic [4:1]             d_valid, d_last;
  assign d4_data = d_data[3*DATA_W +: DATA_W];

  always_ff @(posedge clk) begin
    if (adv) begin
      d_valid[1] <= s_hs;
      d_data     <= {d_data[0 +: 3*DATA_W], s_axis_tdata};
      d_last[1]  <= s_axis_tlast;
      for (int k = 2; k <= 4; k++) begin
        d_valid[k] <= d_valid[k-1];
        d_last[k]  <= d_last[k-1];
      end
    end
    if (rst) begin
      d_valid <= '0;
    end
  end

  // ------------------------------------------------------------------------------------
  // S1: Ethernet
  // ------------------------------------------------------------------------------------
  logic             t1;
  logic [7:0]       s1_err;
  logic [1:0]       s1_cls;
  logic             s1_vlan;
  logic [15:0]      s1_tci;
  logic [LEN_W-1:0] s1_avail;     // bytes after the Ethernet header
  logic [LEN_W-1:0] s1_avail40;   // s1_avail - 40
  logic [95:0]      s1_macs;      // dst (bytes 0..5), src (bytes 6..11)
  logic [383:0]     s1_w3;        // 48 bytes from the IP header
  logic [511:0]     s1_hb;        // frame bytes 42..105

  logic             c1_vlan;
  logic [7:0]       c1_err;
  logic [1:0]       c1_cls, c1_cls12, c1_cls16;
  logic [LEN_W-1:0] c1_a14, c1_a18, c1_a54, c1_a58;

  // The ethertype's class (bytes 12..13 or, behind a VLAN tag, 16..17 of beat 0).
  function automatic logic [1:0] et_cls(input logic [15:0] et);
    if (et == ET_IPV4) begin
      et_cls = CLS_V4;
    end else if (et == ET_IPV6) begin
      et_cls = CLS_V6;
    end else if (et == ET_V1) begin
      et_cls = CLS_V1;
    end else begin
      et_cls = CLS_OTHER;
    end
  endfunction

  always_comb begin
    // the compares on beat 0 (register) and on the input side by side, then picked
    c1_vlan  = in_first ? be16({512'b0, s_axis_tdata}, 12) == ET_VLAN : be16({512'b0, beat0}, 12) == ET_VLAN;
    c1_cls12 = in_first ? et_cls(be16({512'b0, s_axis_tdata}, 12)) : et_cls(be16({512'b0, beat0}, 12));
    c1_cls16 = in_first ? et_cls(be16({512'b0, s_axis_tdata}, 16)) : et_cls(be16({512'b0, beat0}, 16));
    c1_cls   = c1_vlan ? c1_cls16 : c1_cls12;
    c1_err   = roce_rec_pkg::RX_ERR_NONE;
    if (s_axis_tlen < LEN_W'(14) || (c1_vlan && s_axis_tlen < LEN_W'(18))) begin
      c1_err = roce_rec_pkg::RX_ERR_TRUNCATED;
    end
    c1_a14 = s_axis_tlen - LEN_W'(14);
    c1_a18 = s_axis_tlen - LEN_W'(18);
    c1_a54 = s_axis_tlen - LEN_W'(54);
    c1_a58 = s_axis_tlen - LEN_W'(58);
  end

  always_ff @(posedge clk) begin
    if (adv) begin
      t1       <= tok_now;
      s1_err   <= c1_err;
      s1_cls   <= c1_cls;
      s1_vlan  <= c1_vlan;
      s1_tci   <= be16(hdr, 14);
      s1_avail   <= c1_vlan ? c1_a18 : c1_a14;
      s1_avail40 <= c1_vlan ? c1_a58 : c1_a54;
      s1_macs  <= hdr[0 +: 96];
      s1_w3    <= c1_vlan ? hdr[8*18 +: 384] : hdr[8*14 +: 384];
      s1_hb    <= hdr[8*42 +: 512];
    end
    if (rst) begin
      t1 <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // S2: IP and UDP
  // ------------------------------------------------------------------------------------
  logic             t2;
  logic [7:0]       s2_err;
  logic             s2_vlan, s2_v6, s2_v1;
  logic [15:0]      s2_tci, s2_sport;
  logic [LEN_W-1:0] s2_tr;        // transport bytes (BTH .. ICRC)
  logic [LEN_W:0]   s2_tr16;      // s2_tr - 16 (BTH and ICRC), sign bit on top
  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic [4:0] ext_len_of(input logic [7:0] op);
    logic [roce_opcode_pkg::OP_INFO_W-1:0] i;
    i = roce_opcode_pkg::op_info(op);
    ext_len_of = i[roce_opcode_pkg::OPI_EXT_LEN_LSB +: 5];
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */
  logic [5:0]       s2_dscp;
  logic [1:0]       s2_ecn;
  logic [127:0]     s2_sip, s2_dip;
  logic [95:0]      s2_macs;
  logic [6:0]       s2_bo;        // BTH offset in the frame
  logic [319:0]     s2_wb;        // 40 bytes from the BTH
  logic [4:0]       s2_xl;        // the opcode's extension header length (op_info), for S3

  logic [1023:0]    w3;
  logic [511:0]     hbv;
  logic [LEN_W-1:0] c2_tr;
  logic [15:0]      c2_tot, c2_plen, c2_sport;
  logic [15:0]      c2_ul4, c2_ul6;     // UDP length (IPv4 / IPv6 position)
  logic [7:0]       c2_tc;
  logic [127:0]     c2_sip, c2_dip;
  logic [4:0]       c2_bo_rel;
  logic [15:0]      c2_g4;              // udp length + 20 == total length, carry-free

  // The IP/UDP checks as flags (the S2 verdict is drawn in S3 from them, in the order of
  // the codec: the first failing check gives the error).
  logic             f4_av, f4_ver, f4_opt, f4_t20, f4_tav, f4_nu, f4_t28, f4_ul, f4_port;
  logic             f6_av, f6_ver, f6_pav, f1_nh, f6_nu, f6_p8, f6_ul, f6_port;

  always_comb begin
    w3  = {640'b0, s1_w3};
    hbv = s1_hb;
    c2_tot  = be16(w3, 2);
    c2_plen = be16(w3, 4);
    c2_ul4  = be16(w3, 24);
    c2_ul6  = be16(w3, 44);
    c2_g4   = (c2_ul4 ^ 16'd20 ^ c2_tot) ^
              (((c2_ul4 & 16'd20) | ((c2_ul4 | 16'd20) & ~c2_tot)) << 1);
    f4_av   = s1_avail < LEN_W'(20);
    f4_ver  = w3[7:4] != 4'd4 || w3[3:0] < 4'd5;
    f4_opt  = w3[3:0] != 4'd5;
    f4_t20  = c2_tot < 16'd20;
    f4_tav  = c2_tot > 16'(s1_avail);
    f4_nu   = (be16(w3, 6) & 16'h3FFF) != 16'd0 || w3[8*9 +: 8] != 8'd17;
    f4_t28  = c2_tot < 16'd28;
    f4_ul   = c2_g4 != 16'd0;
    f4_port = be16(w3, 22) == ROCE_PORT;
    f6_av   = s1_avail < LEN_W'(40);
    f6_ver  = w3[7:4] != 4'd6;
    f6_pav  = c2_plen > 16'(s1_avail40);
    f1_nh   = w3[8*6 +: 8] == 8'h1B;
    f6_nu   = w3[8*6 +: 8] != 8'd17;
    f6_p8   = c2_plen < 16'd8;
    f6_ul   = c2_ul6 != c2_plen;
    f6_port = be16(w3, 42) == ROCE_PORT;
    c2_tr   = '0;
    c2_tc   = '0;
    c2_sip  = '0;
    c2_dip  = '0;
    c2_sport  = '0;
    c2_bo_rel = '0;
    case (s1_cls)
      CLS_V4: begin
        c2_tc     = w3[15:8];
        c2_sip    = {w3[8*12 +: 32], 16'hFFFF, 80'b0};
        c2_dip    = {w3[8*16 +: 32], 16'hFFFF, 80'b0};
        c2_sport  = be16(w3, 20);
        c2_bo_rel = s1_vlan ? 5'd4 : 5'd0;
        c2_tr     = LEN_W'(c2_tot) - LEN_W'(28);
      end
      CLS_V6, CLS_V1: begin
        c2_tc  = {w3[3:0], w3[15:12]};
        c2_sip = w3[8*8 +: 128];
        c2_dip = w3[8*24 +: 128];
        if (s1_cls == CLS_V6) begin
          c2_sport  = be16(w3, 40);
          c2_bo_rel = s1_vlan ? 5'd24 : 5'd20;
          c2_tr     = LEN_W'(c2_plen) - LEN_W'(8);
        end else begin
          c2_bo_rel = s1_vlan ? 5'd16 : 5'd12;
          c2_tr     = LEN_W'(c2_plen);
        end
      end
      default: ;
    endcase
  end

  logic [1:0]       s2_cls;
  logic [8:0]       s2_f4;
  logic [7:0]       s2_f6;
  always_ff @(posedge clk) begin
    if (adv) begin
      t2       <= t1;
      s2_err   <= s1_err;
      s2_cls   <= s1_cls;
      s2_f4    <= {f4_port, f4_ul, f4_t28, f4_nu, f4_tav, f4_t20, f4_opt, f4_ver, f4_av};
      s2_f6    <= {f6_port, f6_ul, f6_p8, f6_nu, f1_nh, f6_pav, f6_ver, f6_av};
      s2_vlan  <= s1_vlan;
      s2_v6    <= s1_cls == CLS_V6;
      s2_v1    <= s1_cls == CLS_V1;
      s2_tci   <= s1_tci;
      s2_sport <= s1_cls == CLS_V1 ? 16'd0 : c2_sport;
      s2_tr    <= c2_tr;
      s2_tr16  <= {1'b0, c2_tr} - (LEN_W + 1)'(16);
      s2_dscp  <= c2_tc[7:2];
      s2_ecn   <= c2_tc[1:0];
      s2_sip   <= c2_sip;
      s2_dip   <= c2_dip;
      s2_macs  <= s1_macs;
      s2_bo    <= 7'd42 + 7'(c2_bo_rel);
      case (c2_bo_rel)
        5'd4:    s2_wb <= hbv[8*4 +: 320];
        5'd12:   s2_wb <= hbv[8*12 +: 320];
        5'd16:   s2_wb <= hbv[8*16 +: 320];
        5'd20:   s2_wb <= hbv[8*20 +: 320];
        5'd24:   s2_wb <= hbv[8*24 +: 320];
        default: s2_wb <= hbv[0 +: 320];
      endcase
      // the opcode decoded at each place the BTH can start, then picked
      case (c2_bo_rel)
        5'd4:    s2_xl <= ext_len_of(hbv[8*4 +: 8]);
        5'd12:   s2_xl <= ext_len_of(hbv[8*12 +: 8]);
        5'd16:   s2_xl <= ext_len_of(hbv[8*16 +: 8]);
        5'd20:   s2_xl <= ext_len_of(hbv[8*20 +: 8]);
        5'd24:   s2_xl <= ext_len_of(hbv[8*24 +: 8]);
        default: s2_xl <= ext_len_of(hbv[0 +: 8]);
      endcase
    end
    if (rst) begin
      t2 <= 1'b0;
    end
  end

  // The IP/UDP verdict from S2's flags (the error, RoCE or not).
  logic [7:0]       v2_err;
  logic             v2_roce;
  always_comb begin
    v2_err  = s2_err;
    v2_roce = 1'b0;
    if (s2_err == roce_rec_pkg::RX_ERR_NONE) begin
      case (s2_cls)
        CLS_V4: begin
          if (s2_f4[0]) begin
            v2_err = roce_rec_pkg::RX_ERR_TRUNCATED;
          end else if (s2_f4[1]) begin
            v2_err = roce_rec_pkg::RX_ERR_BAD_IP_HEADER;
          end else if (s2_f4[2]) begin
            v2_err = roce_rec_pkg::RX_ERR_IP_OPTIONS;
          end else if (s2_f4[3]) begin
            v2_err = roce_rec_pkg::RX_ERR_BAD_IP_HEADER;
          end else if (s2_f4[4]) begin
            v2_err = roce_rec_pkg::RX_ERR_TRUNCATED;
          end else if (s2_f4[5]) begin
            v2_roce = 1'b0;  // fragment, or not UDP
          end else if (s2_f4[6]) begin
            v2_err = roce_rec_pkg::RX_ERR_TRUNCATED;
          end else if (s2_f4[7]) begin
            v2_err = roce_rec_pkg::RX_ERR_UDP_LEN;
          end else begin
            v2_roce = s2_f4[8];
          end
        end
        CLS_V6, CLS_V1: begin
          if (s2_f6[0]) begin
            v2_err = roce_rec_pkg::RX_ERR_TRUNCATED;
          end else if (s2_f6[1]) begin
            v2_err = roce_rec_pkg::RX_ERR_BAD_IP_HEADER;
          end else if (s2_f6[2]) begin
            v2_err = roce_rec_pkg::RX_ERR_TRUNCATED;
          end else if (s2_cls == CLS_V1) begin
            v2_roce = s2_f6[3];
          end else if (s2_f6[4]) begin
            v2_roce = 1'b0;
          end else if (s2_f6[5]) begin
            v2_err = roce_rec_pkg::RX_ERR_TRUNCATED;
          end else if (s2_f6[6]) begin
            v2_err = roce_rec_pkg::RX_ERR_UDP_LEN;
          end else begin
            v2_roce = s2_f6[7];
          end
        end
        default: ;
      endcase
    end
  end

  // ------------------------------------------------------------------------------------
  // S3: BTH, opcode table, extension headers
  // ------------------------------------------------------------------------------------
  logic             t3;
  logic [7:0]       s3_err;
  logic             s3_roce;
  logic [LEN_W:0]   s3_body;      // transport - 16 - ext_len, sign bit on top
  logic [1:0]       s3_pad;
  logic             s3_has_pay;
  logic [6:0]       s3_off;
  roce_rec_pkg::rx_hdr_t          s3_rec;       // fields, before the verdict

  logic [1023:0]    wb;
  logic [31:0]      c3_info;
  logic [7:0]       c3_ext;
  logic [7:0]       c3_err;
  logic [1023:0]    ev;           // extension headers (wb from byte 12)
  logic [4:0]       c3_imm_off;
  roce_rec_pkg::rx_hdr_t          c3_rec;

  always_comb begin
    wb         = {704'b0, s2_wb};
    ev         = {800'b0, s2_wb[319:96]};
    c3_info    = roce_opcode_pkg::op_info(wb[7:0]);
    c3_ext     = c3_info[roce_opcode_pkg::OPI_EXT_LSB +: 8];
    c3_imm_off = {c3_info[roce_opcode_pkg::OPI_IMM_OFF4_LSB +: 3], 2'b00};
    c3_err     = v2_err;
    if (c3_err == roce_rec_pkg::RX_ERR_NONE && v2_roce) begin
      if (s2_tr < LEN_W'(12)) begin
        c3_err = roce_rec_pkg::RX_ERR_TRUNCATED;
      end else if (wb[11:8] != 4'd0) begin
        c3_err = roce_rec_pkg::RX_ERR_TVER;
      end else if (!c3_info[roce_opcode_pkg::OPI_KNOWN]) begin
        c3_err = roce_rec_pkg::RX_ERR_UNKNOWN_OPCODE;
      end
    end

    c3_rec = '0;
    c3_rec.opcode            = wb[7:0];
    c3_rec.bth_se_m_pad_tver = wb[15:8];
    c3_rec.pkey              = be16(wb, 2);
    c3_rec.bth_fecn_becn     = wb[39:32];
    c3_rec.dest_qp           = be24(wb, 5);
    c3_rec.ack_req           = wb[71];
    c3_rec.psn               = be24(wb, 9);
    c3_rec.udp_sport         = s2_sport;
    c3_rec.vlan_tci          = s2_vlan ? s2_tci : 16'd0;
    c3_rec.dst_mac           = s2_macs[47:0];
    c3_rec.src_mac           = s2_macs[95:48];
    c3_rec.dscp              = s2_dscp;
    c3_rec.ecn               = s2_ecn;
    c3_rec.ext               = c3_ext;
    c3_rec.src_ip            = s2_sip;
    c3_rec.dst_ip            = s2_dip;
    if (c3_ext[roce_rec_pkg::RX_EXT_RETH_BIT] || c3_ext[roce_rec_pkg::RX_EXT_ATOMIC_ETH_BIT]) begin
      c3_rec.va   = be64(ev, 0);
      c3_rec.rkey = be32(ev, 8);
    end
    if (c3_ext[roce_rec_pkg::RX_EXT_RETH_BIT]) begin
      c3_rec.dma_len = be32(ev, 12);
    end
    if (c3_ext[roce_rec_pkg::RX_EXT_ATOMIC_ETH_BIT]) begin
      c3_rec.swap_add = be64(ev, 12);
      c3_rec.compare  = be64(ev, 20);
    end
    if (c3_ext[roce_rec_pkg::RX_EXT_AETH_BIT]) begin
      c3_rec.aeth_syndrome = ev[7:0];
      c3_rec.aeth_msn      = be24(ev, 1);
    end
    if (c3_ext[roce_rec_pkg::RX_EXT_ATOMIC_ACK_ETH_BIT]) begin
      c3_rec.atomic_orig = be64(ev, 4);
    end
    if (c3_ext[roce_rec_pkg::RX_EXT_IMMDT_BIT] || c3_ext[roce_rec_pkg::RX_EXT_IETH_BIT]) begin
      case (c3_imm_off)
        5'd8:    c3_rec.imm_or_inv = be32(ev, 8);
        5'd16:   c3_rec.imm_or_inv = be32(ev, 16);
        default: c3_rec.imm_or_inv = be32(ev, 0);
      endcase
    end
    if (c3_ext[roce_rec_pkg::RX_EXT_DETH_BIT]) begin
      c3_rec.deth_qkey   = be32(ev, 0);
      c3_rec.deth_src_qp = be24(ev, 5);
    end
    c3_rec.flags[roce_rec_pkg::RX_FLAG_VLAN_BIT]   = s2_vlan;
    c3_rec.flags[roce_rec_pkg::RX_FLAG_IPV6_BIT]   = s2_v6;
    c3_rec.flags[roce_rec_pkg::RX_FLAG_ROCEV1_BIT] = s2_v1;
    c3_rec.flags[roce_rec_pkg::RX_FLAG_CE_BIT]     = s2_ecn == 2'd3;
  end

  always_ff @(posedge clk) begin
    if (adv) begin
      t3         <= t2;
      s3_err     <= c3_err;
      s3_roce    <= v2_roce;
      s3_body    <= s2_tr16 - (LEN_W + 1)'(s2_xl);
      s3_pad     <= wb[13:12];
      s3_has_pay <= c3_info[roce_opcode_pkg::OPI_PAYLOAD];
      s3_off     <= s2_bo + 7'd12 + 7'(s2_xl);
      s3_rec     <= c3_rec;
    end
    if (rst) begin
      t3 <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // S4: length checks, verdict, the record
  // ------------------------------------------------------------------------------------
  logic             t4;
  roce_rec_pkg::rx_hdr_t          s4_rec;
  logic             s4_pay;       // a payload packet follows
  logic [5:0]       s4_shift;     // payload_off mod 64
  logic             s4_fbeat;     // payload_off / 64
  logic [15:0]      s4_len;
  logic             s4_nz, s4_gt64, s4_lt64;   // s4_len != 0, > 64, < 64

  logic [7:0]       c4_err;
  logic [LEN_W-1:0] c4_len;
  roce_rec_pkg::rx_hdr_t          c4_rec;

  always_comb begin
    c4_err = s3_err;
    c4_len = s3_body[LEN_W-1:0] - LEN_W'(s3_pad);
    if (c4_err == roce_rec_pkg::RX_ERR_NONE && s3_roce) begin
      if (s3_body[LEN_W]) begin
        c4_err = roce_rec_pkg::RX_ERR_TOO_SHORT;
      end else if (!s3_has_pay && s3_body != '0) begin
        c4_err = roce_rec_pkg::RX_ERR_UNEXPECTED_PAYLOAD;
      end else if (LEN_W'(s3_pad) > s3_body[LEN_W-1:0] || s3_body[1:0] != 2'b00) begin
        c4_err = roce_rec_pkg::RX_ERR_PAD;
      end
    end
    c4_rec = '0;
    if (c4_err != roce_rec_pkg::RX_ERR_NONE) begin
      c4_rec.flags[roce_rec_pkg::RX_FLAG_ERROR_BIT] = 1'b1;
      c4_rec.error = c4_err;
    end else if (s3_roce) begin
      c4_rec = s3_rec;
      c4_rec.payload_len = 16'(c4_len);
      c4_rec.payload_off = 16'(s3_off);
      c4_rec.flags[roce_rec_pkg::RX_FLAG_ROCE_BIT] = 1'b1;
      c4_rec.flags[roce_rec_pkg::RX_FLAG_PAYLOAD_BIT] = c4_len != '0;
    end
  end

  always_ff @(posedge clk) begin
    if (adv) begin
      t4       <= t3;
      s4_rec   <= c4_rec;
      s4_pay   <= c4_rec.flags[roce_rec_pkg::RX_FLAG_PAYLOAD_BIT];
      s4_shift <= s3_off[5:0];
      s4_fbeat <= s3_off[6];
      s4_len   <= 16'(c4_len);
      s4_nz    <= c4_len != '0;
      s4_gt64  <= c4_len > LEN_W'(64);
      s4_lt64  <= c4_len < LEN_W'(64);
    end
    if (rst) begin
      t4 <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // Output: record register, payload realigner
  // ------------------------------------------------------------------------------------
  logic              rec_busy, pay_busy;
  logic              flush;       // the frame ended with one payload beat still to send
  logic [1:0]        a_j;         // index of the D4 beat in its frame, saturating at 2
  logic              a_act;
  logic [5:0]        a_shift;
  logic              a_fbeat;
  logic [15:0]       a_rem;       // payload bytes still to send
  logic              a_nz;        // a_rem != 0
  logic [DATA_W-1:0] a_prev;

  // The tests on the remaining length (of the S4 slot's new packet or of a_rem), as flags:
  // S4's are registered with S4, a_rem's come from the register itself.
  logic              a_gt64, a_lt64;
  logic              c_t4;        // the S4 slot's packet is the current one
  logic              c_act, c_fbeat, c_nz, c_gt64, c_lt64, c_emit, c_tail, c_short;
  logic [5:0]        c_shift, c_sh;
  logic [15:0]       c_rem, c_rem_next;
  logic [5:0]        c_left;      // bytes in the last beat (when below 64)
  logic [DATA_W-1:0] c_shifted, c_data;
  logic [KEEP_W-1:0] c_keep, c_dmask;

  assign rec_busy = m_axis_rec_tvalid && !m_axis_rec_tready;
  assign pay_busy = m_axis_pay_tvalid && !m_axis_pay_tready;

  always_comb begin
    a_gt64  = a_rem > 16'd64;
    a_lt64  = a_rem < 16'd64;
    c_t4    = t4 && !flush;
    c_act   = t4 ? s4_pay   : a_act;
    c_shift = t4 ? s4_shift : a_shift;
    c_fbeat = t4 ? s4_fbeat : a_fbeat;
    c_rem   = t4 ? s4_len   : a_rem;
    c_nz    = t4 ? s4_nz    : a_nz;
    c_gt64  = t4 ? s4_gt64  : a_gt64;
    // Out beat k of the payload is bytes shift.. of the window {beat fbeat+k+1, beat
    // fbeat+k}: it goes out with beat fbeat+k+1.
    c_emit  = !flush && d_valid[4] && c_act && c_nz && a_j != 2'd0 &&
              (!c_fbeat || a_j == 2'd2);
    c_rem_next = (!c_emit) ? c_rem : c_gt64 ? c_rem - 16'd64 : 16'd0;
    // The frame ends with payload left: one more beat, from its last beat alone (flush).
    c_tail  = !flush && d_valid[4] && d_last[4] && c_act && (c_emit ? c_gt64 : c_nz);
    // In flush the frame has ended: more than one beat left, or a payload that would start
    // in a beat the frame does not have, means the frame was shorter than s_axis_tlen said.
    c_short = a_gt64 || (a_j == 2'd0 && a_fbeat);
    // The window {D4 beat, a_prev} (in flush {0, a_prev}) shifted down by c_sh bytes: a
    // funnel of three 4:1 byte-mux stages (by 16, 4, 1 bytes); in flush the lanes from D4
    // are cleared by the lane mask.
    c_sh    = c_t4 ? s4_shift : a_shift;
    c_left  = c_t4 ? s4_len[5:0] : a_rem[5:0];
    c_lt64  = c_t4 ? s4_lt64 : a_lt64;
    c_shifted = funnel({d4_data, a_prev}, c_sh);
    for (int i = 0; i < KEEP_W; i++) begin
      c_keep[i]  = !c_lt64 || 6'(i) < c_left;
      c_dmask[i] = c_keep[i] && !(flush && 7'(i) + 7'(a_shift) >= 7'd64);
      c_data[8*i +: 8] = c_dmask[i] ? c_shifted[8*i +: 8] : 8'h00;
    end
  end

  always_comb begin
    if (flush) begin
      adv = 1'b0;
    end else begin
      adv = !(d_valid[4] && c_emit && pay_busy) && !(t4 && rec_busy);
    end
  end

  always_ff @(posedge clk) begin
    if (m_axis_rec_tready) begin
      m_axis_rec_tvalid <= 1'b0;
    end
    if (m_axis_pay_tready) begin
      m_axis_pay_tvalid <= 1'b0;
    end
    if (flush) begin
      if (!pay_busy) begin
        m_axis_pay_tvalid <= 1'b1;
        m_axis_pay_tdata  <= c_data;
        m_axis_pay_tkeep  <= c_keep;
        m_axis_pay_tlast  <= 1'b1;
        m_axis_pay_tuser  <= c_short;
        flush <= 1'b0;
        a_act <= 1'b0;
        a_j   <= 2'd0;
      end
    end else if (adv) begin
      if (t4) begin
        m_axis_rec_tvalid <= 1'b1;
        m_axis_rec_tdata  <= s4_rec;
      end
      if (c_emit) begin
        m_axis_pay_tvalid <= 1'b1;
        m_axis_pay_tdata  <= c_data;
        m_axis_pay_tkeep  <= c_keep;
        m_axis_pay_tlast  <= !c_gt64;
        m_axis_pay_tuser  <= 1'b0;
      end
      if (d_valid[4]) begin
        a_prev  <= d4_data;
        a_act   <= c_act;
        a_shift <= c_shift;
        a_fbeat <= c_fbeat;
        a_rem   <= c_rem_next;
        a_nz    <= c_emit ? c_gt64 : c_nz;
        if (d_last[4]) begin
          flush <= c_tail;
          a_j   <= c_tail ? a_j : 2'd0;
          a_act <= c_tail;
        end else if (a_j != 2'd2) begin
          a_j <= a_j + 2'd1;
        end
      end
    end
    if (rst) begin
      m_axis_rec_tvalid <= 1'b0;
      m_axis_pay_tvalid <= 1'b0;
      flush <= 1'b0;
      a_act <= 1'b0;
      a_j   <= 2'd0;
    end
  end

endmodule

`resetall
