// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_tx_build: TX frame builder. From a packet record on s_axis_hdr (tx_hdr_t) and, when
// its payload_len > 0, a payload packet on s_axis_pay (lane-0 aligned), one Ethernet frame on
// m_axis: Ethernet (+802.1Q) / IPv4 (header checksum) or IPv6 / UDP 4791 or the RoCEv1 GRH /
// BTH / the opcode's extension headers / payload / pad / a zero ICRC slot (roce_icrc fills it)
// / padding to 60 bytes, exactly the wire codec's FrameBuilder (blocks::tx_build). A
// record the codec refuses makes no frame: its payload is consumed and drop pulses. A payload
// packet of the wrong length still gives a frame of the record's length, m_axis_tuser set on
// its last beat. Pipeline H1, H2, the frame being written, the output register.
// Latency: a record accepted in c gives its first beat on m_axis in c+4.
// Throughput: one beat per cycle; frames back to back. A dropped record takes max(1, its
//   payload beats) cycles with no output.
// docs/engine-hdl.md.
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
  logic [4:0]  c1_ext_len;
  logic [1:0]  c1_pad;
  logic        c1_v1, c1_v6, c1_vlan;
  logic [6:0]  c1_outer;     // Ethernet + IP + UDP header bytes
  logic [6:0]  c1_lim;       // 60 - c1_outer (when below 60)
  logic [6:0]  c1_tsm;       // transport bytes (BTH..ICRC) besides the payload
  logic [6:0]  c1_dsm;       // IP datagram length besides the payload
  logic [6:0]  c1_fsm;       // frame bytes besides the payload (before the 60-byte minimum)
  logic [17:0] c1_psa, c1_psb;
  always_comb begin
    c1_info    = roce_opcode_pkg::op_info(r0.opcode);
    c1_ext_len = c1_info[roce_opcode_pkg::OPI_EXT_LEN_LSB +: 5];
    c1_pad     = 2'(3'd4 - {1'b0, r0.payload_len[1:0]});
    c1_v1      = r0.flags[roce_rec_pkg::TX_FLAG_ROCEV1_BIT];
    c1_v6      = r0.flags[roce_rec_pkg::TX_FLAG_IPV6_BIT] && !c1_v1;
    c1_vlan    = r0.flags[roce_rec_pkg::TX_FLAG_VLAN_BIT];
    case ({c1_v1, c1_v6, c1_vlan})
      3'b000:  c1_outer = 7'd42;   // Ethernet 14 + IPv4 20 + UDP 8
      3'b001:  c1_outer = 7'd46;
      3'b010:  c1_outer = 7'd62;   // IPv6 40
      3'b011:  c1_outer = 7'd66;
      3'b100:  c1_outer = 7'd54;   // GRH 40, no UDP
      default: c1_outer = 7'd58;
    endcase
    c1_lim = 7'd60 - c1_outer;
    // the small terms (of the opcode, the flags and payload_len[1:0]); H2 adds the payload
    c1_tsm = 7'd16 + 7'(c1_ext_len) + 7'(c1_pad);
    c1_dsm = c1_tsm + (c1_v1 ? 7'd0 : c1_v6 ? 7'd8 : 7'd28);
    c1_fsm = c1_tsm + c1_outer;
    // IPv4 header checksum: the words that do not depend on the length, in two halves
    c1_psa = 18'({8'h45, r0.tclass}) + 18'(r0.ip_id) +
             ((r0.flags[roce_rec_pkg::TX_FLAG_DF_BIT] ? 18'h4000 : 18'h0) + 18'({r0.ttl, 8'h11}));
    c1_psb = (18'({r0.src_ip[103:96], r0.src_ip[111:104]}) + 18'({r0.src_ip[119:112], r0.src_ip[127:120]})) +
             (18'({r0.dst_ip[103:96], r0.dst_ip[111:104]}) + 18'({r0.dst_ip[119:112], r0.dst_ip[127:120]}));
  end

  logic [7:0]  s1_ext;
  logic [1:0]  s1_pad;
  logic        s1_v1, s1_v6, s1_vlan, s1_err;
  logic [6:0]  s1_hlen;      // header bytes (Ethernet .. extension headers)
  logic        s1_olt60;     // c1_outer < 60
  logic [6:0]  s1_lim, s1_tsm, s1_usm, s1_dsm, s1_fsm1;
  logic [5:0]  s1_fsm;
  logic [17:0] s1_psa, s1_psb;
  always_ff @(posedge clk) begin
    if (hadv) begin
      h1_valid <= s_axis_hdr_tvalid;
      r1       <= r0;
      s1_ext   <= c1_info[roce_opcode_pkg::OPI_EXT_LSB +: 8];
      s1_pad   <= c1_pad;
      s1_v1    <= c1_v1;
      s1_v6    <= c1_v6;
      s1_vlan  <= c1_vlan;
      s1_hlen  <= c1_outer + 7'd12 + 7'(c1_ext_len);
      s1_olt60 <= c1_outer < 7'd60;
      s1_lim   <= c1_lim;
      s1_tsm   <= c1_tsm;
      s1_usm   <= c1_tsm + 7'd8;
      s1_dsm   <= c1_dsm;
      s1_fsm   <= c1_fsm[5:0];
      s1_fsm1  <= c1_fsm - 7'd1;
      s1_psa   <= c1_psa;
      s1_psb   <= c1_psb;
      s1_err   <= !c1_info[roce_opcode_pkg::OPI_KNOWN] ||
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
  logic [17:0]     c2_dgram;    // IPv4 total length / IPv6 or GRH payload length
  logic [15:0]     c2_udpl;     // UDP length
  logic [19:0]     c2_sum;
  logic [15:0]     c2_et;
  logic [6:0]      c2_tl6;      // transport bytes, if the payload is below 64 bytes
  logic            c2_short;    // the frame is padded to 60 bytes
  logic [5:0]      c2_flen;     // frame bytes mod 64
  logic [16:0]     c2_flen1;    // frame bytes - 1
  always_comb begin
    c2_dgram = 18'(r1.payload_len) + 18'(s1_dsm);
    c2_udpl  = r1.payload_len + 16'(s1_usm);
    c2_et = s1_v1 ? 16'h8915 : s1_v6 ? 16'h86DD : 16'h0800;
    c2_l2 = s1_vlan ? {bs16(c2_et), bs16(r1.vlan_tci), bs16(16'h8100), r1.src_mac, r1.dst_mac}
                    : {32'b0, bs16(c2_et), r1.src_mac, r1.dst_mac};
    if (s1_v1 || s1_v6) begin
      c2_l3 = {r1.dst_ip, r1.src_ip, r1.ttl, s1_v1 ? 8'h1B : 8'h11, bs16(c2_dgram[15:0]),
               bs32({4'h6, r1.tclass, r1.flow_label})};
    end else begin
      c2_l3 = {160'b0, r1.dst_ip[127:96], r1.src_ip[127:96], 16'h0, 8'h11, r1.ttl,
               bs16(r1.flags[roce_rec_pkg::TX_FLAG_DF_BIT] ? 16'h4000 : 16'h0), bs16(r1.ip_id),
               bs16(c2_dgram[15:0]), r1.tclass, 8'h45};
    end
    c2_udp = {16'h0, bs16(c2_udpl), bs16(16'd4791), bs16(r1.udp_sport)};
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
    // IPv4 header checksum: the sum of its 16-bit words (checksum word zero)
    c2_sum   = (20'(s1_psa) + 20'(s1_psb)) + 20'(c2_dgram[15:0]);
    // header + transport (BTH..ICRC); at least the 60-byte Ethernet minimum
    c2_tl6   = 7'(r1.payload_len[5:0]) + s1_tsm;
    c2_short = s1_olt60 && r1.payload_len[15:6] == 10'd0 && c2_tl6 < s1_lim;
    c2_flen  = c2_short ? 6'd60 : r1.payload_len[5:0] + s1_fsm;
    c2_flen1 = c2_short ? 17'd59 : 17'(r1.payload_len) + 17'(s1_fsm1);
  end

  logic [1023:0] s2_hdr;
  logic [6:0]    s2_hlen;
  logic [19:0]   s2_sum;
  logic          s2_v4, s2_vlan, s2_err;
  logic [16:0]   s2_end;      // header + payload bytes
  logic [10:0]   s2_nlast;    // index of the last output beat
  logic          s2_nlast0;   // ... is 0
  logic [6:0]    s2_lastn;    // bytes in the last output beat
  logic [10:0]   s2_npay;     // payload beats
  logic          s2_pay0;     // no payload
  always_ff @(posedge clk) begin
    if (hadv) begin
      h2_valid  <= h1_valid;
      s2_hdr    <= c2_hdr;
      s2_hlen   <= s1_hlen;
      s2_sum    <= c2_sum;
      s2_v4     <= !s1_v1 && !s1_v6;
      s2_vlan   <= s1_vlan;
      s2_err    <= s1_err || c2_dgram > 18'd65535;
      s2_end    <= 17'(s1_hlen) + 17'(r1.payload_len);
      s2_nlast  <= 11'(c2_flen1 >> 6);
      s2_nlast0 <= c2_flen1 < 17'd64;
      s2_lastn  <= c2_flen[5:0] == 6'd0 ? 7'd64 : {1'b0, c2_flen[5:0]};
      s2_npay   <= 11'((17'(r1.payload_len) + 17'd63) >> 6);
      s2_pay0   <= r1.payload_len == 16'd0;
    end
    if (rst) begin
      h2_valid <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // cur: the frame being written
  // ------------------------------------------------------------------------------------
  // The IPv4 checksum: the 20-bit sum folded to 16 bits with its end-around carry (both
  // sums side by side, the carry picks one), complemented.
  logic [16:0] c3_fa;
  logic [15:0] c3_fb;
  logic [15:0] c3_csum;
  logic [1023:0] c3_hdr;
  always_comb begin
    c3_fa   = 17'(s2_sum[15:0]) + 17'(s2_sum[19:16]);
    c3_fb   = s2_sum[15:0] + 16'(s2_sum[19:16]) + 16'd1;
    c3_csum = ~(c3_fa[16] ? c3_fb : c3_fa[15:0]);
    c3_hdr  = s2_hdr;
    if (s2_v4) begin
      if (s2_vlan) begin
        c3_hdr[8*28 +: 16] = bs16(c3_csum);
      end else begin
        c3_hdr[8*24 +: 16] = bs16(c3_csum);
      end
    end
  end

  logic [DATA_W-1:0] cur_hb0;  // header bytes of the current output beat (64k..), zero past it
  logic [DATA_W-1:0] cur_hb1;  // header bytes of the next output beat
  logic [5:0]    cur_s;       // header length mod 64
  logic          cur_hb;      // header length >= 64: beat 0 is all header
  logic          cur_err;     // drop this record
  logic [63:0]   cur_lkeep;   // tkeep of the last output beat
  logic [63:0]   cur_lpay;    // lanes j >= cur_s: filled from this payload beat
  // per frame
  logic [10:0]   krem;        // output beats after beat k
  logic          k_last;      // beat k is the last (krem == 0)
  logic          k_nz;        // k != 0
  logic [10:0]   qrem;        // payload beats still expected
  logic          q_ne;        // qrem != 0
  logic          q_l1;        // qrem == 1
  logic          need_in;     // the beat being made needs a payload beat
  // Beat k+1's payload lanes: those j with hlen <= 64(k+1)+j < hend (hend = hlen +
  // payload_len). They end before lane 0 when hend/64 <= k, cover the beat when
  // hend/64 >= k+2, and end at lane hend mod 64 when hend/64 == k+1: flags on a beat
  // counter, no comparison of byte offsets. The header (hlen < 128) lies before beat k+1
  // but for k = 0 with hlen >= 64, where its lanes j < hlen mod 64 (not cur_lpay) are
  // header: they take no payload beat there, and beat 0 consumes none (m_prev stays zero).
  logic [10:0]   hq;          // max(hend/64 - k, 0)
  logic          h_ge2;       // hq >= 2
  logic          h_eq1;       // hq == 1
  logic [63:0]   h_th;        // lanes j < hend mod 64
  logic [63:0]   m_pay;       // payload lanes of beat k taken from this payload beat
  logic [63:0]   m_prev;      // ... from the previous one (zero when it was not received)
  logic          pay_end;     // the payload packet has ended (tlast seen)
  logic          bad;         // the payload packet did not match payload_len
  logic          drain;       // discard payload beats up to a tlast (packet ran long)
  logic [DATA_W-1:0] prev;    // the previous payload beat, rotated by cur_s bytes
  logic [DATA_W-1:0] o_rot;   // this payload beat, rotated by cur_s bytes

  // This cycle's decisions. need_in (the beat being made needs a payload beat), k_last,
  // q_l1 and q_ne are registers: the tests on the beat and payload counters are kept as
  // flags, updated a cycle ahead.
  logic adv_o;                // the output register can take a beat
  logic pay_ok;               // a payload beat is there for the frame
  logic emit;                 // an output beat is made
  logic dstep;                // a dropped record consumes a payload beat / finishes
  logic consume;              // a payload beat is taken for the frame
  logic finish;               // cur is done after this cycle
  logic late;                 // the last expected payload beat came without tlast
  logic early;                // a payload beat with tlast before the last expected one

  assign adv_o   = !m_axis_tvalid || m_axis_tready;
  assign pay_ok  = s_axis_pay_tvalid && !drain;
  assign emit    = cur_valid && !cur_err && adv_o && (!need_in || pay_ok);
  assign dstep   = cur_valid && cur_err && (!need_in || pay_ok);
  assign consume = need_in && pay_ok && (emit || dstep);
  assign late    = consume && q_l1 && !s_axis_pay_tlast;
  assign early   = consume && !q_l1 && s_axis_pay_tlast;
  assign finish  = (emit && k_last) ||
                   (dstep && (!need_in || q_l1 || s_axis_pay_tlast));
  assign cur_free = !cur_valid || finish;
  assign hadv     = !h2_valid || cur_free;
  assign s_axis_pay_tready = consume || (drain && s_axis_pay_tvalid);

  // need_in = cur_valid && !pay_end && qrem != 0 && (cur_err || !cur_hb || k != 0), of the
  // state after this cycle
  logic n_pay_end, n_q_ne, n_k_nz;
  always_comb begin
    n_pay_end = pay_end || (consume && s_axis_pay_tlast);
    n_q_ne    = consume ? !q_l1 : q_ne;
    n_k_nz    = k_nz || emit;
  end

  // Lanes j of beat 0 with l <= j < h.
  function automatic logic [63:0] lanes0(input logic [6:0] l, input logic [16:0] h);
    for (int j = 0; j < 64; j++) begin
      lanes0[j] = h > 17'(j) && !(l > 7'(j));
    end
  endfunction

  logic [63:0] c3_lpay;
  logic [63:0] c3_mask;       // beat 0's payload lanes
  logic [63:0] n_hmask;       // beat k+1's lanes before the payload end
  always_comb begin
    for (int j = 0; j < 64; j++) begin
      c3_lpay[j] = 6'(j) >= s2_hlen[5:0];
    end
    c3_mask = lanes0(s2_hlen, s2_end);
    for (int j = 0; j < 64; j++) begin
      n_hmask[j] = h_ge2 || (h_eq1 && h_th[j]);
    end
  end

  always_ff @(posedge clk) begin
    if (cur_free) begin
      cur_valid <= h2_valid;
      cur_hb0   <= c3_hdr[0 +: DATA_W];
      cur_hb1   <= c3_hdr[DATA_W +: DATA_W];
      cur_s     <= s2_hlen[5:0];
      cur_hb    <= s2_hlen[6];
      cur_err   <= s2_err;
      cur_lkeep <= thermo(s2_lastn);
      cur_lpay  <= c3_lpay;
      krem      <= s2_nlast;
      k_last    <= s2_nlast0;
      k_nz      <= 1'b0;
      qrem      <= s2_npay;
      q_ne      <= !s2_pay0;
      q_l1      <= s2_npay == 11'd1;
      need_in   <= h2_valid && !s2_pay0 && (s2_err || !s2_hlen[6]);
      hq        <= s2_end[16:6];
      h_ge2     <= s2_end[16:7] != 10'd0;
      h_eq1     <= s2_end[16:6] == 11'd1;
      h_th      <= thermo({1'b0, s2_end[5:0]});
      m_pay     <= c3_mask & c3_lpay;
      m_prev    <= '0;
      pay_end   <= 1'b0;
      bad       <= 1'b0;
    end else begin
      need_in <= cur_valid && !n_pay_end && n_q_ne && (cur_err || !cur_hb || n_k_nz);
      pay_end <= n_pay_end;
      q_ne    <= n_q_ne;
      k_nz    <= n_k_nz;
      if (emit) begin
        krem    <= krem - 11'd1;
        k_last  <= krem == 11'd1;
        hq      <= hq == 11'd0 ? 11'd0 : hq - 11'd1;
        h_ge2   <= hq >= 11'd3;
        h_eq1   <= hq == 11'd2;
        cur_hb0 <= cur_hb1;
        cur_hb1 <= '0;
        m_pay   <= n_hmask & cur_lpay;
        m_prev  <= consume ? n_hmask & ~cur_lpay : '0;
      end
      if (consume) begin
        qrem <= qrem - 11'd1;
        q_l1 <= qrem == 11'd2;
        if (early || late) begin
          bad <= 1'b1;
        end
      end
    end
    if (consume) begin
      prev <= o_rot;
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
  // Byte j of beat k is header byte 64k+j, or payload byte 64k+j-hlen: byte j-cur_s of this
  // payload beat (lanes j >= cur_s) or byte 64+j-cur_s of the previous one (lanes j < cur_s),
  // i.e. lane j of either beat rotated up by cur_s bytes. The rotation is three 4:1 stages
  // on the registered cur_s; the previous beat is kept rotated.
  logic [DATA_W-1:0] o_r1, o_r2;
  logic [DATA_W-1:0] o_bpay, o_bprev;
  always_comb begin
    for (int j = 0; j < 64; j++) begin
      case (cur_s[1:0])
        2'd0: o_r1[8*j +: 8] = s_axis_pay_tdata[8*((j + 64) % 64) +: 8];
        2'd1: o_r1[8*j +: 8] = s_axis_pay_tdata[8*((j + 63) % 64) +: 8];
        2'd2: o_r1[8*j +: 8] = s_axis_pay_tdata[8*((j + 62) % 64) +: 8];
        default: o_r1[8*j +: 8] = s_axis_pay_tdata[8*((j + 61) % 64) +: 8];
      endcase
    end
    for (int j = 0; j < 64; j++) begin
      case (cur_s[3:2])
        2'd0: o_r2[8*j +: 8] = o_r1[8*((j + 64) % 64) +: 8];
        2'd1: o_r2[8*j +: 8] = o_r1[8*((j + 60) % 64) +: 8];
        2'd2: o_r2[8*j +: 8] = o_r1[8*((j + 56) % 64) +: 8];
        default: o_r2[8*j +: 8] = o_r1[8*((j + 52) % 64) +: 8];
      endcase
    end
    for (int j = 0; j < 64; j++) begin
      case (cur_s[5:4])
        2'd0: o_rot[8*j +: 8] = o_r2[8*((j + 64) % 64) +: 8];
        2'd1: o_rot[8*j +: 8] = o_r2[8*((j + 48) % 64) +: 8];
        2'd2: o_rot[8*j +: 8] = o_r2[8*((j + 32) % 64) +: 8];
        default: o_rot[8*j +: 8] = o_r2[8*((j + 16) % 64) +: 8];
      endcase
    end
    // Payload bytes that were not received (a packet that ended early) are zero; need_in
    // equals consume whenever a beat is emitted.
    for (int j = 0; j < 64; j++) begin
      o_bpay[8*j +: 8]  = {8{m_pay[j] && need_in}};
      o_bprev[8*j +: 8] = {8{m_prev[j]}};
    end
  end

  always_ff @(posedge clk) begin
    if (adv_o) begin
      m_axis_tvalid <= emit;
      m_axis_tdata  <= cur_hb0 | (o_rot & o_bpay) | (prev & o_bprev);
      m_axis_tlast  <= k_last;
      m_axis_tkeep  <= k_last ? cur_lkeep : '1;
      m_axis_tuser  <= k_last && (bad || early || late);
    end
    if (rst) begin
      m_axis_tvalid <= 1'b0;
    end
  end

  logic unused;
  assign unused = ^{s_axis_pay_tkeep, r0, r1};

endmodule

`resetall
