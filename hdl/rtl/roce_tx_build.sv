// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_tx_build: TX frame builder. From a packet record on s_axis_hdr (roce_rec_pkg::tx_hdr_t,
// 1088 bits) and, when its payload_len > 0, a payload packet on s_axis_pay (lane-0 aligned,
// tlast on its last beat), it writes one Ethernet frame on m_axis:
//   Ethernet (+802.1Q) / IPv4 (no options, header checksum) | IPv6 / UDP 4791 (checksum 0)
//   | RoCEv1 GRH / BTH (pad count derived) / the extension headers the opcode carries
//   (roce_opcode_pkg::op_info) / payload / pad / a zero ICRC slot / zero Ethernet padding
//   to 60 bytes.
// roce_icrc (INSERT=1) behind it fills the ICRC. The frame is exactly
// firmware-model blocks::roce_tx_build::build (the wire codec's FrameBuilder), proven by the
// lockstep test.
//
// A record the codec refuses (unknown opcode, payload on an opcode without payload, an IP
// datagram over 65535 bytes) makes no frame: its payload packet (ceil(payload_len/64) beats)
// is consumed and `drop` pulses for one cycle.
//
// Payload packets must have ceil(payload_len/64) beats. If one ends early (tlast before) the
// frame is still written to its full length, the missing beats zero; if it runs long, the
// extra beats are discarded up to its tlast. Either way m_axis_tuser is set on the frame's
// last beat (a MAC aborts such a frame), and the stream stays in step.
//
// Pipeline: H1 (opcode table, lengths, verdict) -> H2 (header fields laid out for the
// encapsulation, IPv4 checksum sum) -> cur (checksum folded in; the frame being written)
// -> m_axis register. The output beat k of a frame is header bytes 64k.. OR the payload
// window {this payload beat, previous payload beat} shifted by the header length mod 64
// (one 64:1 byte mux), masked to the payload's bytes.
// Latency: a record accepted in cycle c gives its first beat on m_axis in cycle c+4 (idle
//   builder, no backpressure, payload beat 0 waiting if beat 0 needs it).
// Throughput: one beat per cycle; frames back to back with no idle cycle between them
//   (records are prepared while the previous frame is written). A dropped record takes
//   max(1, its payload beats) cycles with no output.
//
// Parameters:
//   DATA_W  datapath width: 512 only.

`resetall
`default_nettype none

module roce_tx_build #(
  parameter int DATA_W = 512,
  localparam int KEEP_W = DATA_W / 8,
  localparam int REC_W = 8 * roce_rec_pkg::TX_HDR_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [REC_W-1:0]  s_axis_hdr_tdata,
  input  wire logic              s_axis_hdr_tvalid,
  output      logic              s_axis_hdr_tready,

  input  wire logic [DATA_W-1:0] s_axis_pay_tdata,
  input  wire logic [KEEP_W-1:0] s_axis_pay_tkeep,
  input  wire logic              s_axis_pay_tvalid,
  output      logic              s_axis_pay_tready,
  input  wire logic              s_axis_pay_tlast,

  output      logic [DATA_W-1:0] m_axis_tdata,
  output      logic [KEEP_W-1:0] m_axis_tkeep,
  output      logic              m_axis_tvalid,
  input  wire logic              m_axis_tready,
  output      logic              m_axis_tlast,
  output      logic              m_axis_tuser,

  output      logic              drop
);

  if (DATA_W != 512) begin : g_bad_width
    $error("roce_tx_build: DATA_W must be 512");
  end

  // Byte-lane order of big-endian fields: byte k of a field is bits [8k+7:8k].
  function automatic logic [15:0] bs16(input logic [15:0] v);
    bs16 = {v[7:0], v[15:8]};
  endfunction
  function automatic logic [23:0] bs24(input logic [23:0] v);
    bs24 = {v[7:0], v[15:8], v[23:16]};
  endfunction
  function automatic logic [31:0] bs32(input logic [31:0] v);
    bs32 = {bs16(v[15:0]), bs16(v[31:16])};
  endfunction
  function automatic logic [63:0] bs64(input logic [63:0] v);
    bs64 = {bs32(v[31:0]), bs32(v[63:32])};
  endfunction
  // Lanes j < n set (n = 0..64).
  function automatic logic [63:0] thermo(input logic [6:0] n);
    for (int j = 0; j < 64; j++) begin
      thermo[j] = 7'(j) < n;
    end
  endfunction
  // A signed byte count relative to a beat, clamped to 0..64.
  function automatic logic [6:0] clamp64(input logic [17:0] v);
    if (v[17]) begin
      clamp64 = 7'd0;
    end else if (v > 18'd64) begin
      clamp64 = 7'd64;
    end else begin
      clamp64 = v[6:0];
    end
  endfunction

  // ------------------------------------------------------------------------------------
  // Handshakes
  // ------------------------------------------------------------------------------------
  logic hadv;          // H1 and H2 advance
  logic cur_free;      // cur can take H2 this cycle
  logic h1_valid, h2_valid, cur_valid;
  assign s_axis_hdr_tready = hadv;

  // ------------------------------------------------------------------------------------
  // H1: opcode table, lengths, verdict
  // ------------------------------------------------------------------------------------
  roce_rec_pkg::tx_hdr_t r0, r1;
  assign r0 = s_axis_hdr_tdata;

  logic [31:0] c1_info;
  logic [16:0] c1_tl;
  logic [1:0]  c1_pad;
  logic        c1_v1, c1_v6;
  always_comb begin
    c1_info = roce_opcode_pkg::op_info(r0.opcode);
    c1_pad  = 2'(3'd4 - {1'b0, r0.payload_len[1:0]});
    // BTH + extension headers + payload + pad + ICRC
    c1_tl   = 17'd16 + 17'(c1_info[roce_opcode_pkg::OPI_EXT_LEN_LSB +: 5]) + 17'(r0.payload_len) +
              17'(c1_pad);
    c1_v1   = r0.flags[roce_rec_pkg::TX_FLAG_ROCEV1_BIT];
    c1_v6   = r0.flags[roce_rec_pkg::TX_FLAG_IPV6_BIT] && !c1_v1;
  end

  logic [7:0]  s1_ext;
  logic [4:0]  s1_ext_len;
  logic [1:0]  s1_pad;
  logic [16:0] s1_tl;
  logic        s1_v1, s1_v6, s1_vlan, s1_err;
  logic [17:0] s1_dgram;     // IPv4 total length / IPv6 or GRH payload length
  always_ff @(posedge clk) begin
    if (hadv) begin
      h1_valid   <= s_axis_hdr_tvalid;
      r1         <= r0;
      s1_ext     <= c1_info[roce_opcode_pkg::OPI_EXT_LSB +: 8];
      s1_ext_len <= c1_info[roce_opcode_pkg::OPI_EXT_LEN_LSB +: 5];
      s1_pad     <= c1_pad;
      s1_tl      <= c1_tl;
      s1_v1      <= c1_v1;
      s1_v6      <= c1_v6;
      s1_vlan    <= r0.flags[roce_rec_pkg::TX_FLAG_VLAN_BIT];
      s1_dgram   <= c1_v1 ? 18'(c1_tl) : c1_v6 ? 18'(c1_tl) + 18'd8 : 18'(c1_tl) + 18'd28;
      s1_err     <= !c1_info[roce_opcode_pkg::OPI_KNOWN] ||
                    (r0.payload_len != 16'd0 && !c1_info[roce_opcode_pkg::OPI_PAYLOAD]);
    end
    if (rst) begin
      h1_valid <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // H2: the header laid out, IPv4 checksum sum
  // ------------------------------------------------------------------------------------
  logic [8*18-1:0] c2_l2;       // 14 or 18 bytes
  logic [8*40-1:0] c2_l3;       // IPv4 (20 bytes, checksum zero) or IPv6/GRH (40)
  logic [8*8-1:0]  c2_udp;
  logic [8*12-1:0] c2_bth;
  logic [8*28-1:0] c2_ext;
  logic [8*40-1:0] c2_tr;       // BTH + extension headers
  logic [1023:0]   c2_hdr;
  logic [6:0]      c2_hlen;
  logic [19:0]     c2_sum;
  logic [15:0]     c2_et;
  always_comb begin
    c2_et = s1_v1 ? 16'h8915 : s1_v6 ? 16'h86DD : 16'h0800;
    c2_l2 = s1_vlan ? {bs16(c2_et), bs16(r1.vlan_tci), bs16(16'h8100), r1.src_mac, r1.dst_mac}
                    : {32'b0, bs16(c2_et), r1.src_mac, r1.dst_mac};
    if (s1_v1 || s1_v6) begin
      c2_l3 = {r1.dst_ip, r1.src_ip, r1.ttl, s1_v1 ? 8'h1B : 8'h11, bs16(s1_dgram[15:0]),
               bs32({4'h6, r1.tclass, r1.flow_label})};
    end else begin
      c2_l3 = {160'b0, r1.dst_ip[127:96], r1.src_ip[127:96], 16'h0, 8'h11, r1.ttl,
               bs16(r1.flags[roce_rec_pkg::TX_FLAG_DF_BIT] ? 16'h4000 : 16'h0), bs16(r1.ip_id),
               bs16(s1_dgram[15:0]), r1.tclass, 8'h45};
    end
    c2_udp = {16'h0, bs16(16'(s1_tl) + 16'd8), bs16(16'd4791), bs16(r1.udp_sport)};
    c2_bth = {bs24(r1.psn), {r1.ack_req, 7'b0}, bs24(r1.dest_qp), {r1.bth_fecn_becn[7:6], 6'b0},
              bs16(r1.pkey), {r1.bth_se_m_tver[7:6], s1_pad, r1.bth_se_m_tver[3:0]}, r1.opcode};
    // Extension headers in wire order (ExtBits: DETH, RETH, AtomicETH, AETH, AtomicAckETH,
    // ImmDt, IETH, CNP padding); the combinations wire::Opcode defines.
    c2_ext = '0;
    case (s1_ext)
      8'h01: c2_ext[0 +: 64]  = {bs24(r1.deth_src_qp), 8'h0, bs32(r1.deth_qkey)};
      8'h21: c2_ext[0 +: 96]  = {bs32(r1.imm_or_inv), bs24(r1.deth_src_qp), 8'h0, bs32(r1.deth_qkey)};
      8'h02: c2_ext[0 +: 128] = {bs32(r1.dma_len), bs32(r1.rkey), bs64(r1.va)};
      8'h22: c2_ext[0 +: 160] = {bs32(r1.imm_or_inv), bs32(r1.dma_len), bs32(r1.rkey), bs64(r1.va)};
      8'h04: c2_ext[0 +: 224] = {bs64(r1.compare), bs64(r1.swap_add), bs32(r1.rkey), bs64(r1.va)};
      8'h08: c2_ext[0 +: 32]  = {bs24(r1.aeth_msn), r1.aeth_syndrome};
      8'h18: c2_ext[0 +: 96]  = {bs64(r1.atomic_orig), bs24(r1.aeth_msn), r1.aeth_syndrome};
      8'h20: c2_ext[0 +: 32]  = bs32(r1.imm_or_inv);
      8'h40: c2_ext[0 +: 32]  = bs32(r1.imm_or_inv);
      default: c2_ext = '0;   // none, CNP (16 zero bytes), unknown opcodes (dropped)
    endcase
    c2_tr = {c2_ext, c2_bth};
    case ({s1_v1, s1_v6, s1_vlan})
      3'b000:  c2_hdr = 1024'({c2_tr, c2_udp, c2_l3[0 +: 160], c2_l2[0 +: 112]});
      3'b001:  c2_hdr = 1024'({c2_tr, c2_udp, c2_l3[0 +: 160], c2_l2});
      3'b010:  c2_hdr = 1024'({c2_tr, c2_udp, c2_l3, c2_l2[0 +: 112]});
      3'b011:  c2_hdr = 1024'({c2_tr, c2_udp, c2_l3, c2_l2});
      3'b100:  c2_hdr = 1024'({c2_tr, c2_l3, c2_l2[0 +: 112]});
      default: c2_hdr = 1024'({c2_tr, c2_l3, c2_l2});
    endcase
    c2_hlen = (s1_vlan ? 7'd18 : 7'd14) + (s1_v1 || s1_v6 ? 7'd40 : 7'd20) +
              (s1_v1 ? 7'd0 : 7'd8) + 7'd12 + 7'(s1_ext_len);
    // IPv4 header checksum: the sum of its 16-bit words (checksum word zero)
    c2_sum = 20'({8'h45, r1.tclass}) + 20'(s1_dgram[15:0]) + 20'(r1.ip_id) +
             (r1.flags[roce_rec_pkg::TX_FLAG_DF_BIT] ? 20'h4000 : 20'h0) + 20'({r1.ttl, 8'h11}) +
             20'({r1.src_ip[103:96], r1.src_ip[111:104]}) + 20'({r1.src_ip[119:112], r1.src_ip[127:120]}) +
             20'({r1.dst_ip[103:96], r1.dst_ip[111:104]}) + 20'({r1.dst_ip[119:112], r1.dst_ip[127:120]});
  end

  logic [1023:0] s2_hdr;
  logic [6:0]    s2_hlen;
  logic [19:0]   s2_sum;
  logic          s2_v4, s2_vlan, s2_err;
  logic [16:0]   s2_end;      // header + payload bytes
  logic [16:0]   s2_flen;     // frame bytes
  logic [10:0]   s2_npay;     // payload beats
  always_ff @(posedge clk) begin
    if (hadv) begin
      h2_valid <= h1_valid;
      s2_hdr   <= c2_hdr;
      s2_hlen  <= c2_hlen;
      s2_sum   <= c2_sum;
      s2_v4    <= !s1_v1 && !s1_v6;
      s2_vlan  <= s1_vlan;
      s2_err   <= s1_err || s1_dgram > 18'd65535;
      s2_end   <= 17'(c2_hlen) + 17'(r1.payload_len);
      // header + transport (BTH..ICRC); at least the 60-byte Ethernet minimum
      s2_flen  <= (17'(c2_hlen) - 17'd12 - 17'(s1_ext_len) + s1_tl < 17'd60) ? 17'd60 :
                  17'(c2_hlen) - 17'd12 - 17'(s1_ext_len) + s1_tl;
      s2_npay  <= 11'((17'(r1.payload_len) + 17'd63) >> 6);
    end
    if (rst) begin
      h2_valid <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // cur: the frame being written
  // ------------------------------------------------------------------------------------
  logic [16:0] c3_fold;
  logic [15:0] c3_csum;
  logic [1023:0] c3_hdr;
  always_comb begin
    c3_fold = 17'(s2_sum[15:0]) + 17'(s2_sum[19:16]);
    c3_csum = ~(c3_fold[15:0] + 16'(c3_fold[16]));
    c3_hdr  = s2_hdr;
    if (s2_v4) begin
      if (s2_vlan) begin
        c3_hdr[8*28 +: 16] = bs16(c3_csum);
      end else begin
        c3_hdr[8*24 +: 16] = bs16(c3_csum);
      end
    end
  end

  logic [1023:0] cur_hdr;
  logic [5:0]    cur_s;       // header length mod 64
  logic          cur_hb;      // header length >= 64: beat 0 is all header
  logic          cur_err;     // drop this record
  logic [10:0]   cur_npay;    // payload beats
  logic [10:0]   cur_nlast;   // index of the last output beat
  logic [6:0]    cur_lastn;   // bytes in the last output beat
  // per frame
  logic [10:0]   k;           // output beat
  logic [10:0]   q;           // payload beats consumed
  logic [17:0]   lo, hi;      // header length, header + payload length, relative to beat k
  logic          pay_end;     // the payload packet has ended (tlast seen)
  logic          bad;         // the payload packet did not match payload_len
  logic          drain;       // discard payload beats up to a tlast (packet ran long)
  logic [DATA_W-1:0] prev;
  logic          prev_ok;     // prev is the payload beat before this output beat's

  // This cycle's decisions
  logic adv_o;                // the output register can take a beat
  logic need_in;              // the beat being made needs a payload beat
  logic pay_ok;               // ... and it is there
  logic emit;                 // an output beat is made
  logic dstep;                // a dropped record consumes a payload beat / finishes
  logic consume;              // a payload beat is taken for the frame
  logic finish;               // cur is done after this cycle
  logic late;                 // the last expected payload beat came without tlast
  logic early;                // a payload beat with tlast before the last expected one

  assign adv_o   = !m_axis_tvalid || m_axis_tready;
  assign need_in = cur_valid && !pay_end && (q != cur_npay) && (cur_err || cur_hb == 1'b0 || k != 11'd0);
  assign pay_ok  = s_axis_pay_tvalid && !drain;
  assign emit    = cur_valid && !cur_err && adv_o && (!need_in || pay_ok);
  assign dstep   = cur_valid && cur_err && (!need_in || pay_ok);
  assign consume = need_in && pay_ok && (emit || dstep);
  assign late    = consume && q == cur_npay - 11'd1 && !s_axis_pay_tlast;
  assign early   = consume && q != cur_npay - 11'd1 && s_axis_pay_tlast;
  assign finish  = (emit && k == cur_nlast) ||
                   (dstep && (!need_in || q == cur_npay - 11'd1 || s_axis_pay_tlast));
  assign cur_free = !cur_valid || finish;
  assign hadv     = !h2_valid || cur_free;
  assign s_axis_pay_tready = consume || (drain && s_axis_pay_tvalid);

  always_ff @(posedge clk) begin
    if (cur_free) begin
      cur_valid <= h2_valid;
      cur_hdr   <= c3_hdr;
      cur_s     <= s2_hlen[5:0];
      cur_hb    <= s2_hlen[6];
      cur_err   <= s2_err;
      cur_npay  <= s2_npay;
      cur_nlast <= 11'((s2_flen - 17'd1) >> 6);
      cur_lastn <= s2_flen[5:0] == 6'd0 ? 7'd64 : {1'b0, s2_flen[5:0]};
      k         <= '0;
      q         <= '0;
      lo        <= 18'(s2_hlen);
      hi        <= 18'(s2_end);
      pay_end   <= 1'b0;
      bad       <= 1'b0;
      prev_ok   <= 1'b0;
    end else begin
      if (emit) begin
        prev_ok <= consume;
        k  <= k + 11'd1;
        lo <= lo - 18'd64;
        hi <= hi - 18'd64;
      end
      if (consume) begin
        q <= q + 11'd1;
        if (s_axis_pay_tlast) begin
          pay_end <= 1'b1;
        end
        if (early) begin
          bad <= 1'b1;
        end
        if (late) begin
          bad <= 1'b1;
        end
      end
    end
    if (consume) begin
      prev <= s_axis_pay_tdata;
    end
    if (late) begin
      drain <= 1'b1;
    end else if (drain && s_axis_pay_tvalid && s_axis_pay_tlast) begin
      drain <= 1'b0;
    end
    drop <= dstep && finish;
    if (rst) begin
      cur_valid <= 1'b0;
      drain     <= 1'b0;
      drop      <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // Output beat
  // ------------------------------------------------------------------------------------
  logic [2*DATA_W-1:0] o_win;
  logic [DATA_W-1:0]   o_pay, o_hdr, o_bmask;
  logic [63:0]         o_mask;
  always_comb begin
    // Payload bytes that were not received (a packet that ended early) are zero.
    o_win  = {consume ? s_axis_pay_tdata : '0, prev_ok ? prev : '0};
    o_pay  = o_win[8 * (7'd64 - 7'(cur_s)) +: DATA_W];
    o_mask = thermo(clamp64(hi)) & ~thermo(clamp64(lo));
    for (int j = 0; j < 64; j++) begin
      o_bmask[8*j +: 8] = {8{o_mask[j]}};
    end
    o_hdr  = k == 11'd0 ? cur_hdr[0 +: DATA_W] : k == 11'd1 ? cur_hdr[DATA_W +: DATA_W] : '0;
  end

  always_ff @(posedge clk) begin
    if (adv_o) begin
      m_axis_tvalid <= emit;
      m_axis_tdata  <= o_hdr | (o_pay & o_bmask);
      m_axis_tlast  <= k == cur_nlast;
      m_axis_tkeep  <= k == cur_nlast ? thermo(cur_lastn) : '1;
      m_axis_tuser  <= k == cur_nlast && (bad || early || late);
    end
    if (rst) begin
      m_axis_tvalid <= 1'b0;
    end
  end

  logic unused;
  assign unused = ^{s_axis_pay_tkeep, r0, r1};

endmodule

`resetall
