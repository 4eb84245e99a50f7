// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_icrc: RoCEv2 invariant CRC (ICRC) insert (TX) or check (RX) on an AXI4-Stream of
// Ethernet frames (no FCS). Every frame passes with the same beats and tkeep. A RoCE frame
// (RoCEv2 over IPv4 or IPv6, at most one 802.1Q tag, or RoCEv1) that is not malformed gets its
// ICRC written into the last 4 bytes of its IP datagram (INSERT = 1) or checked (INSERT = 0).
// m_axis_tuser on the last beat = {roce, error} (error: any s_axis_tuser of the frame,
// malformed, or a wrong ICRC), zero on other beats. The CRC runs from zero over whole beats with
// uncovered lanes as zeros, the trailing zeros undone by one GF(2) correction whose map is
// looked up a stage ahead (gen/roce_crc32_pkg.sv). Stages P M C X F O; docs/engine-hdl.md.
// Interface requirements: tkeep all ones but on the last beat (1..DATA_W/8 bytes from lane 0);
//   frames up to 64 KiB.
// Latency: 5 cycles from a beat leaving the input register to m_axis (plus one in the input
//   register, where a beat before the datagram's end and the frame's last waits for its
//   successor).
// Throughput: one beat per cycle, frames back to back; s_axis_tready = !m_axis_tvalid ||
//   m_axis_tready.
//
// Parameters:
//   DATA_W  datapath width: 64, 256 or 512.
//   INSERT  1: compute and fill (TX); 0: check and flag (RX).

`resetall
`default_nettype none

module roce_icrc #(
  parameter int DATA_W = 512,
  parameter int INSERT = 0,
  localparam int KEEP_W = DATA_W / 8
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [DATA_W-1:0] s_axis_tdata,
  input  wire logic [KEEP_W-1:0] s_axis_tkeep,
  input  wire logic              s_axis_tvalid,
  output      logic              s_axis_tready,
  input  wire logic              s_axis_tlast,
  input  wire logic              s_axis_tuser,

  output      logic [DATA_W-1:0] m_axis_tdata,
  output      logic [KEEP_W-1:0] m_axis_tkeep,
  output      logic              m_axis_tvalid,
  input  wire logic              m_axis_tready,
  output      logic              m_axis_tlast,
  output      logic [1:0]        m_axis_tuser
);

  localparam int BYTES = KEEP_W;
  localparam int LG = $clog2(BYTES);
  // Remaining-bytes value clamped to 0..BYTES+4 (enough to see an ICRC slot one beat early).
  localparam int RW = LG + 2;
  // Header shadow: the first 64 bytes of a frame hold every field the block looks at.
  localparam int HDR = 64;
  localparam int NCH = HDR / BYTES;  // beats that carry header bytes

  logic adv;  // the whole pipeline moves this cycle

  // ------------------------------------------------------------------------------------
  // P: input register and header parse
  // ------------------------------------------------------------------------------------
  logic              p_valid;
  logic [DATA_W-1:0] p_data;
  logic [KEEP_W-1:0] p_keep;
  logic              p_last;
  logic              p_user;
  logic              p_go;

  // Per-frame state over the beats that already left P.
  logic [4:0]        bidx_q;   // beat index, saturating at 16
  logic [16:0]       base_q;   // byte offset of the beat in P, saturating
  logic              uerr_q;   // an earlier beat had s_axis_tuser set
  /* verilator lint_off UNUSEDSIGNAL */
  // Only the ~26 header bytes the parse reads are used; synthesis drops the rest.
  logic [8*HDR-1:0]  hdr_q;
  /* verilator lint_on UNUSEDSIGNAL */

  logic p_done;  // the beat in P holds the datagram's end or lies past it
  assign p_go = adv && p_valid && (p_last || s_axis_tvalid || p_done);
  assign s_axis_tready = adv;

  always_ff @(posedge clk) begin
    if (adv && (!p_valid || p_go)) begin
      p_valid <= s_axis_tvalid;
      p_data  <= s_axis_tdata;
      p_keep  <= s_axis_tkeep;
      p_last  <= s_axis_tlast;
      p_user  <= s_axis_tuser;
    end
    if (rst) begin
      p_valid <= 1'b0;
    end
  end

  function automatic logic [7:0] hb(input logic [8*HDR-1:0] v, input int o);
    hb = v[8*o +: 8];
  endfunction

  // Remaining datagram bytes from the start of the beat in P (ip_end - base), clamped to
  // 0..BYTES+4 (remc). The length beat LB (it holds header bytes 16..23 in every layout)
  // takes it from per-layout candidates prepared from its lanes on the way into P; later
  // beats take it from rem_q, which counts down by BYTES per beat (and stops once negative),
  // with its clamp flags prepared a beat ahead. Beats before LB do not use it (lenk is 0).
  // The Ethertype compares are prepared on the way in too, so P only selects.
  localparam int LB  = 16 / BYTES;  // beat holding header bytes 16..23 (0 if BYTES >= 32)
  localparam int C12 = 12 / BYTES;  // beat holding bytes 12..13
  localparam int BLB = LB * BYTES;  // the length beat's byte offset

  function automatic logic [7:0] ib(input logic [DATA_W-1:0] d, input int o);
    ib = d[8*(o % BYTES) +: 8];
  endfunction

  // {0x0800, 0x86DD, 0x8915} compares of a 16-bit Ethertype
  function automatic logic [2:0] et_dec(input logic [15:0] e);
    et_dec = {e == 16'h0800, e == 16'h86DD, e == 16'h8915};
  endfunction

  // Candidate (ip_end - base) of one layout for the length beat: the datagram ends k bytes
  // after the length field's value; clamped as remc.
  function automatic logic [RW-1:0] clamp_c(input logic [15:0] len, input logic [17:0] k);
    logic [17:0] r;
    r = 18'(len) + k;
    if (r[17]) begin
      clamp_c = '0;
    end else if (r > 18'(BYTES + 4)) begin
      clamp_c = RW'(BYTES + 4);
    end else begin
      clamp_c = RW'(r);
    end
  endfunction

  // len < c and len > c for a constant c of either sign
  function automatic logic len_lt(input logic [15:0] len, input int c);
    len_lt = c > 0 && 32'(len) < c;
  endfunction
  function automatic logic len_gt(input logic [15:0] len, input int c);
    len_gt = c < 0 || 32'(len) > c;
  endfunction

  // Layouts, indexed {v4, vlan}: 0 IPv6/v1, 1 IPv6/v1 + VLAN, 2 IPv4, 3 IPv4 + VLAN.
  // ip_end = 14 (+4 VLAN) + IPv4 total length, or 14 (+4) + 40 + IPv6 payload length.
  function automatic int len_off(input int y);  // the length field's byte
    len_off = (y >= 2 ? 16 : 18) + (y % 2) * 4;
  endfunction
  function automatic int end_k(input int y);
    end_k = (y >= 2 ? 14 : 54) + (y % 2) * 4;
  endfunction

  logic [3:0]        in_d12;              // bytes 12..13: {0x8100, et_dec}
  logic [2:0]        in_d16;              // bytes 16..17: et_dec
  logic [LG:0]       in_nbytes;
  logic [4*RW-1:0]   in_remc;             // per layout: this beat's remc
  logic [4*18-1:0]   in_next;             // the next beat's rem
  logic [3:0]        in_nneg, in_nsat;    // its clamp flags
  logic [3:0]        in_nend;             // the next beat's rem <= BYTES

  always_comb begin
    in_d12 = {{ib(s_axis_tdata, 12), ib(s_axis_tdata, 13)} == 16'h8100,
              et_dec({ib(s_axis_tdata, 12), ib(s_axis_tdata, 13)})};
    in_d16 = et_dec({ib(s_axis_tdata, 16), ib(s_axis_tdata, 17)});
    for (int y = 0; y < 4; y++) begin
      in_remc[y*RW +: RW] = clamp_c({ib(s_axis_tdata, len_off(y)), ib(s_axis_tdata, len_off(y) + 1)},
                                    18'(end_k(y) - BLB));
      in_next[y*18 +: 18] = 18'({ib(s_axis_tdata, len_off(y)), ib(s_axis_tdata, len_off(y) + 1)})
                          + 18'(end_k(y) - BLB - BYTES);
      in_nneg[y] = len_lt({ib(s_axis_tdata, len_off(y)), ib(s_axis_tdata, len_off(y) + 1)},
                          BLB + BYTES - end_k(y));
      in_nend[y] = len_lt({ib(s_axis_tdata, len_off(y)), ib(s_axis_tdata, len_off(y) + 1)},
                          BLB + 2 * BYTES + 1 - end_k(y));
      in_nsat[y] = len_gt({ib(s_axis_tdata, len_off(y)), ib(s_axis_tdata, len_off(y) + 1)},
                          BLB + 2 * BYTES + 4 - end_k(y));
    end
    // tkeep is contiguous from lane 0 (interface requirement): count it as a thermometer
    // code, bit j set where a run of 2^j lanes starts an odd 2^j block (no adder chain)
    in_nbytes = '0;
    in_nbytes[LG] = s_axis_tkeep[BYTES-1];
    for (int j = 0; j < LG; j++) begin
      for (int m = 0; m < BYTES; m += 2 << j) begin
        if (s_axis_tkeep[m + (1 << j) - 1] && !s_axis_tkeep[m + (2 << j) - 1]) begin
          in_nbytes[j] = 1'b1;
        end
      end
    end
  end

  logic [3:0]        p_d12, hq_d12;       // of the beat in P; of chunk C12 of the frame
  logic [2:0]        p_d16, hq_d16;
  logic [LG:0]       p_nbytes;
  logic [4*RW-1:0]   p_remc;
  logic [4*18-1:0]   p_next;
  logic [3:0]        p_nneg, p_nsat, p_nend;

  always_ff @(posedge clk) begin
    if (adv && (!p_valid || p_go)) begin
      p_d12    <= in_d12;
      p_d16    <= in_d16;
      p_nbytes <= in_nbytes;
      p_remc   <= in_remc;
      p_next   <= in_next;
      p_nneg   <= in_nneg;
      p_nsat   <= in_nsat;
      p_nend   <= in_nend;
    end
  end

  logic        vlan, is_v4, is_v6, is_v1, lenk;
  logic [3:0]  d12;
  logic [2:0]  d16;
  logic [1:0]  lay;
  logic [17:0] rem_q;                 // rem of the beat after the one that left P
  logic        rq_neg, rq_sat;        // rem_q < 0, rem_q > BYTES+4
  logic        rq_end;                // rem_q <= BYTES (or < 0)
  logic [RW-1:0] s_remc, remc, l_remc;
  logic [17:0] l_next;

  always_comb begin
    // the merged view of the header: this beat's lanes over the earlier beats' flags
    d12    = (32'(bidx_q) == C12) ? p_d12 : hq_d12;
    d16    = (32'(bidx_q) == LB) ? p_d16 : hq_d16;
    vlan   = d12[3];
    {is_v4, is_v6, is_v1} = vlan ? d16 : d12[2:0];
    // The IP length field is known from beat LB on.
    lenk   = 32'(bidx_q) + 1 > LB && (is_v4 || is_v1 || is_v6);
    lay    = {is_v4, vlan};
    s_remc = rq_neg ? '0 : rq_sat ? RW'(BYTES + 4) : RW'(rem_q);
    unique case (lay)
      2'd0:    begin l_remc = p_remc[0*RW +: RW]; l_next = p_next[0*18 +: 18]; end
      2'd1:    begin l_remc = p_remc[1*RW +: RW]; l_next = p_next[1*18 +: 18]; end
      2'd2:    begin l_remc = p_remc[2*RW +: RW]; l_next = p_next[2*18 +: 18]; end
      default: begin l_remc = p_remc[3*RW +: RW]; l_next = p_next[3*18 +: 18]; end
    endcase
    remc   = (32'(bidx_q) == LB) ? l_remc : s_remc;
    // A beat waits in P for its successor, so that a beat holding the ICRC's first bytes has
    // the datagram's end right behind it; the beat holding the end (or past it) need not.
    p_done = 32'(bidx_q) > LB && rq_end;
  end

  always_ff @(posedge clk) begin
    if (p_go) begin
      if (32'(bidx_q) == C12) begin
        hq_d12 <= p_d12;
      end
      if (32'(bidx_q) == LB) begin
        hq_d16 <= p_d16;
        rem_q  <= l_next;
        rq_neg <= p_nneg[lay];
        rq_sat <= p_nsat[lay];
        rq_end <= p_nend[lay];
      end else if (!rq_neg) begin
        // rem_q - BYTES < 0 and > BYTES+4, from rem_q itself
        rem_q  <= rem_q - 18'(BYTES);
        rq_neg <= rem_q < 18'(BYTES);
        rq_sat <= rem_q > 18'(2 * BYTES + 4);
        rq_end <= rem_q <= 18'(2 * BYTES);
      end
    end
  end

  always_ff @(posedge clk) begin
    if (p_go) begin
      for (int c = 0; c < NCH; c++) begin
        if (32'(bidx_q) == c) begin
          hdr_q[c*DATA_W +: DATA_W] <= p_data;
        end
      end
      if (p_last) begin
        bidx_q <= '0;
        base_q <= '0;
        uerr_q <= 1'b0;
      end else begin
        if (bidx_q != 5'd16) begin
          bidx_q <= bidx_q + 5'd1;
        end
        base_q <= (base_q > 17'h1FFFF - 17'(BYTES)) ? 17'h1FFFF : base_q + 17'(BYTES);
        uerr_q <= uerr_q || p_user;
      end
    end
    if (rst) begin
      bidx_q <= '0;
      base_q <= '0;
      uerr_q <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // M: masking, and the beat's position flags and frame verdict from P's parse
  // ------------------------------------------------------------------------------------
  logic              m_valid, m_first, m_last, m_vlan, m_v6, m_v1, m_isv6, m_lenk;
  logic              m_uerr, m_bbig;
  logic [DATA_W-1:0] m_data;
  logic [KEEP_W-1:0] m_keep;
  logic [4:0]        m_bidx;
  logic [RW-1:0]     m_remc;  // clamped remaining bytes, before the lenk gate
  logic [LG:0]       m_nbytes;
  logic [5:0]        m_blo;   // base_q[5:0]; m_bbig: base_q >= 64

  always_ff @(posedge clk) begin
    if (adv) begin
      m_valid  <= p_go;
      m_data   <= p_data;
      m_keep   <= p_keep;
      m_last   <= p_last;
      m_first  <= bidx_q == 5'd0;
      m_bidx   <= bidx_q;
      m_vlan   <= vlan;
      m_v6     <= !is_v4 && !is_v1;
      m_v1     <= is_v1;
      m_lenk   <= lenk;
      m_remc   <= remc;
      m_isv6   <= is_v6;
      m_uerr   <= uerr_q || p_user;
      m_nbytes <= p_nbytes;
      m_blo    <= base_q[5:0];
      m_bbig   <= base_q[16:6] != '0;
    end
    if (rst) begin
      m_valid <= 1'b0;
    end
  end

  logic [RW-1:0] mg_remc;     // remc, 0 until the length is known
  logic          mg_end, mg_pre;
  logic [5:0]    mg_z;

  always_comb begin
    mg_remc = m_lenk ? m_remc : '0;
    mg_end  = mg_remc != '0 && mg_remc <= RW'(BYTES);
    mg_pre  = mg_remc > RW'(BYTES) && mg_remc < RW'(BYTES + 4);
    mg_z    = 6'(RW'(BYTES) - mg_remc) & 6'(BYTES - 1);
  end

  // The RoCE field checks need no merge with the beat: once the beat in M left P, the
  // shadow holds it and every earlier beat of the frame (later chunks are not used before
  // the frame reaches them: the verdict counts on the last beat only).
  // Per layout, indexed {v1, v6, vlan}-wise as 0/1 IPv4, 2/3 RoCEv1, 4/5 IPv6 (odd: VLAN):
  // the RoCE fields match, and the IP length is at least IP(+UDP)+BTH+ICRC. C selects.
  logic [5:0] fm, lm;
  always_comb begin
    fm[0] = hb(hdr_q, 14) == 8'h45 && hb(hdr_q, 23) == 8'd17
         && {hb(hdr_q, 36), hb(hdr_q, 37)} == 16'd4791;
    fm[1] = hb(hdr_q, 18) == 8'h45 && hb(hdr_q, 27) == 8'd17
         && {hb(hdr_q, 40), hb(hdr_q, 41)} == 16'd4791;
    // RoCEv1: a GRH (IPv6 layout, next header 0x1B) and the BTH, no UDP
    fm[2] = hb(hdr_q, 14) >> 4 == 8'd6 && hb(hdr_q, 20) == 8'h1B;
    fm[3] = hb(hdr_q, 18) >> 4 == 8'd6 && hb(hdr_q, 24) == 8'h1B;
    fm[4] = hb(hdr_q, 14) >> 4 == 8'd6 && hb(hdr_q, 20) == 8'd17
         && {hb(hdr_q, 56), hb(hdr_q, 57)} == 16'd4791;
    fm[5] = hb(hdr_q, 18) >> 4 == 8'd6 && hb(hdr_q, 24) == 8'd17
         && {hb(hdr_q, 60), hb(hdr_q, 61)} == 16'd4791;
    lm[0] = {hb(hdr_q, 16), hb(hdr_q, 17)} >= 16'd44;
    lm[1] = {hb(hdr_q, 20), hb(hdr_q, 21)} >= 16'd44;
    lm[2] = {hb(hdr_q, 18), hb(hdr_q, 19)} >= 16'd16;
    lm[3] = {hb(hdr_q, 22), hb(hdr_q, 23)} >= 16'd16;
    lm[4] = {hb(hdr_q, 18), hb(hdr_q, 19)} >= 16'd24;
    lm[5] = {hb(hdr_q, 22), hb(hdr_q, 23)} >= 16'd24;
  end

  // The ICRC slot of a beat: lanes [rc-4, rc), where rc is the remaining datagram length
  // from the beat's start; lanes outside the beat fall off either end.
  function automatic logic [DATA_W-1:0] slot_lanes(input logic [RW-1:0] rc);
    slot_lanes = DATA_W'(((DATA_W + 32)'(32'hFFFF_FFFF) << (32'(rc) * 8)) >> 32);
  endfunction

  // ICRC bytes into the slot lanes (lane l takes byte l+4-rc).
  function automatic logic [DATA_W-1:0] patch(input logic [DATA_W-1:0] d,
                                              input logic [RW-1:0] rc,
                                              input logic [31:0] v);
    patch = (d & ~slot_lanes(rc)) | DATA_W'(((DATA_W + 32)'(v) << (32'(rc) * 8)) >> 32);
  endfunction

  // The masking templates (generated from the model's mask tables) of this frame's layout,
  // windowed to this beat; beyond the templates every byte passes unchanged.
  localparam int TW = 8 * roce_icrc_pkg::TEMPLATE_BYTES;
  logic [TW-1:0]     t_zero, t_ones, t_seed;
  logic [DATA_W-1:0] w_zero, w_ones, w_seed, keep_end, slot_m, masked;

  always_comb begin
    unique case ({m_v1, m_v6, m_vlan})
      3'b000: begin
        t_zero = roce_icrc_pkg::ZERO_V4;
        t_ones = roce_icrc_pkg::ONES_V4;
        t_seed = roce_icrc_pkg::SEED_V4;
      end
      3'b001: begin
        t_zero = roce_icrc_pkg::ZERO_V4_VLAN;
        t_ones = roce_icrc_pkg::ONES_V4_VLAN;
        t_seed = roce_icrc_pkg::SEED_V4_VLAN;
      end
      3'b010: begin
        t_zero = roce_icrc_pkg::ZERO_V6;
        t_ones = roce_icrc_pkg::ONES_V6;
        t_seed = roce_icrc_pkg::SEED_V6;
      end
      3'b011: begin
        t_zero = roce_icrc_pkg::ZERO_V6_VLAN;
        t_ones = roce_icrc_pkg::ONES_V6_VLAN;
        t_seed = roce_icrc_pkg::SEED_V6_VLAN;
      end
      3'b100: begin
        t_zero = roce_icrc_pkg::ZERO_V1;
        t_ones = roce_icrc_pkg::ONES_V1;
        t_seed = roce_icrc_pkg::SEED_V1;
      end
      default: begin
        t_zero = roce_icrc_pkg::ZERO_V1_VLAN;
        t_ones = roce_icrc_pkg::ONES_V1_VLAN;
        t_seed = roce_icrc_pkg::SEED_V1_VLAN;
      end
    endcase
    w_zero = DATA_W'(t_zero >> (32'(m_bidx) * DATA_W));
    w_ones = DATA_W'(t_ones >> (32'(m_bidx) * DATA_W));
    w_seed = DATA_W'(t_seed >> (32'(m_bidx) * DATA_W));
    // lanes before the end of the IP datagram (all of them until its length is known)
    keep_end = m_lenk ? ~({DATA_W{1'b1}} << (32'(m_remc) * 8)) : {DATA_W{1'b1}};
    // insert: the ICRC slot, lanes [remc-4, remc), fed as zeros
    slot_m = (INSERT != 0 && m_lenk) ? slot_lanes(m_remc) : '0;
    masked = (((m_data & ~w_zero) | w_ones) ^ w_seed) & keep_end & ~slot_m;
  end

  // ------------------------------------------------------------------------------------
  // C: masked beat -> CRC register
  // ------------------------------------------------------------------------------------
  logic              c_valid, c_past, c_last, c_end, c_pre;
  logic [DATA_W-1:0] c_masked, c_data;
  logic [KEEP_W-1:0] c_keep;
  logic [RW-1:0]     c_remc;
  logic [5:0]        c_z;
  logic [5:0]        c_fm, c_lm;
  logic              c_isv6, c_lenk, c_uerr, c_bbig, c_vlan, c_v1, c_v6;
  logic [LG:0]       c_nbytes;
  logic [5:0]        c_blo;
  logic [RW-1:0]     c_remk;  // remc, not gated by lenk

  always_ff @(posedge clk) begin
    if (adv) begin
      c_valid  <= m_valid;
      c_masked <= masked;
      c_past   <= m_lenk && m_remc == '0;
      c_data   <= m_data;
      c_keep   <= m_keep;
      c_last   <= m_last;
      c_end    <= mg_end;
      c_pre    <= mg_pre;
      c_remc   <= mg_remc;
      c_z      <= mg_z;
      c_fm     <= fm;
      c_lm     <= lm;
      c_isv6   <= m_isv6;
      c_lenk   <= m_lenk;
      c_uerr   <= m_uerr;
      c_bbig   <= m_bbig;
      c_blo    <= m_blo;
      c_nbytes <= m_nbytes;
      c_remk   <= m_remc;
      c_vlan   <= m_vlan;
      c_v1     <= m_v1;
      c_v6     <= m_v6;
    end
    if (rst) begin
      c_valid <= 1'b0;
    end
  end

  // The frame verdict (meaningful on its last beat): {roce, malformed, input error}
  logic [6:0] dport_end;   // the frame must reach this byte to hold the RoCE fields
  logic [7:0] flen_lo;     // frame bytes up to the end of this beat, if base < 64
  logic       v_roce, v_mal, c_fok, c_lok, c_pen;
  logic [2:0] c_v;
  always_comb begin
    unique case ({c_v1, c_v6})
      2'b10:   begin c_fok = c_fm[2 + 32'(c_vlan)]; c_lok = c_lm[2 + 32'(c_vlan)]; end
      2'b01:   begin c_fok = c_isv6 && c_fm[4 + 32'(c_vlan)]; c_lok = c_lm[4 + 32'(c_vlan)]; end
      default: begin c_fok = c_fm[32'(c_vlan)]; c_lok = c_lm[32'(c_vlan)]; end
    endcase
    c_pen   = c_fok && c_lok;
    unique case ({c_v1, c_v6})
      2'b10:   dport_end = c_vlan ? 7'd25 : 7'd21;  // the fields end with the next header
      2'b01:   dport_end = c_vlan ? 7'd62 : 7'd58;
      default: dport_end = c_vlan ? 7'd42 : 7'd38;
    endcase
    flen_lo = 8'(c_blo) + 8'(c_nbytes);
    v_roce  = c_fok && (c_bbig || flen_lo >= 8'(dport_end));
    // ip_end <= frame_len: the datagram ends within this beat (remc <= nbytes)
    v_mal   = v_roce && !(c_lok && c_lenk && c_remk <= RW'(c_nbytes));
    c_v     = {v_roce, v_mal, c_uerr};
  end

  // run_f is run_q as the feedback of the next beat into C: already zero when that beat
  // starts a frame (the beat in M, or if M is empty, the one waiting in P, has bidx 0), so
  // the CRC input needs no mux.
  logic [31:0] crc_next, run_q, run_f;
  roce_crc32_update #(.DATA_W(DATA_W)) u_crc (
    .crc_i (run_f),
    .data_i(c_masked),
    .crc_o (crc_next)
  );

  // ------------------------------------------------------------------------------------
  // X: running CRC (value after the beat in X), and the final correction of the beat's
  // trailing zeros looked up from C's z: the map's rows (insert) or the residue (check)
  // ------------------------------------------------------------------------------------
  logic              x_valid, x_last, x_end, x_pre, x_pen;
  logic [DATA_W-1:0] x_data;
  logic [KEEP_W-1:0] x_keep;
  logic [RW-1:0]     x_remc;
  logic [2:0]        x_v;
  logic [1023:0]     x_rows;
  logic [31:0]       x_res;

  always_ff @(posedge clk) begin
    if (adv) begin
      if (c_valid && !c_past) begin
        run_q <= crc_next;
      end
      if (m_first) begin
        run_f <= '0;
      end else if (c_valid && !c_past) begin
        run_f <= crc_next;
      end
      x_valid <= c_valid;
      x_data  <= c_data;
      x_keep  <= c_keep;
      x_last  <= c_last;
      x_end   <= c_end;
      x_pre   <= c_pre;
      x_pen   <= c_pen;
      x_remc  <= c_remc;
      x_v     <= c_v;
      if (INSERT != 0) begin
        x_rows <= roce_crc32_pkg::icrc_rows(c_z);
      end else begin
        x_res  <= roce_crc32_pkg::residue_z(c_z);
      end
    end
    if (rst) begin
      x_valid <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // F: the ICRC value (insert: one XOR network per bit) or the residue compare (check)
  // ------------------------------------------------------------------------------------
  logic              f_valid, f_last, f_end, f_pre, f_pen, f_ok, e_ok_q;
  logic [DATA_W-1:0] f_data;
  logic [KEEP_W-1:0] f_keep;
  logic [RW-1:0]     f_remc;
  logic [2:0]        f_v;
  logic [31:0]       f_icrc;

  always_ff @(posedge clk) begin
    if (adv) begin
      f_valid <= x_valid;
      f_data  <= x_data;
      f_keep  <= x_keep;
      f_last  <= x_last;
      f_end   <= x_end;
      f_pre   <= x_pre;
      f_pen   <= x_pen;
      f_remc  <= x_remc;
      f_v     <= x_v;
      if (INSERT != 0) begin
        f_icrc <= roce_crc32_pkg::icrc_apply(run_q, x_rows);
        f_ok   <= 1'b0;
      end else begin
        f_icrc <= '0;
        f_ok   <= run_q == x_res;
      end
      if (f_valid && f_end) begin
        e_ok_q <= f_ok;
      end
    end
    if (rst) begin
      f_valid <= 1'b0;
      e_ok_q  <= 1'b0;
    end
  end

  logic       f_err;
  logic [1:0] f_user;
  always_comb begin
    // {roce, malformed, input error} of the frame whose last beat is in F
    if (INSERT != 0) begin
      f_err = f_v[1] || f_v[0];
    end else begin
      f_err = f_v[1] || f_v[0] || (f_v[2] && !(f_end ? f_ok : e_ok_q));
    end
    f_user = f_last ? {f_v[2], f_err} : 2'b00;
  end

  // ------------------------------------------------------------------------------------
  // OUT: output register; the ICRC's first bytes go into the beat before the one holding
  // the datagram's end while that one is in F.
  // ------------------------------------------------------------------------------------
  logic              o_valid, o_pre;
  logic [DATA_W-1:0] o_data;
  logic [RW-1:0]     o_remc;

  assign adv = !o_valid || m_axis_tready;

  always_ff @(posedge clk) begin
    if (adv) begin
      o_valid      <= f_valid;
      o_data       <= (INSERT != 0 && f_end && f_pen) ? patch(f_data, f_remc, f_icrc) : f_data;
      o_pre        <= f_pre;
      o_remc       <= f_remc;
      m_axis_tkeep <= f_keep;
      m_axis_tlast <= f_last;
      m_axis_tuser <= f_user;
    end
    if (rst) begin
      o_valid <= 1'b0;
    end
  end

  assign m_axis_tvalid = o_valid;
  // (o_pre on a last beat means a truncated frame: its ICRC beat never comes)
  assign m_axis_tdata  = (INSERT != 0 && o_pre && !m_axis_tlast && f_valid && f_end && f_pen)
                       ? patch(o_data, o_remc, f_icrc) : o_data;

endmodule

`resetall
