// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_pay_scatter: cuts one received payload packet into DMA writes. A command names up to
// NSEG consecutive segments of the payload, each written to host memory (s_cmd_we[k]: one DMA
// write of s_cmd_len[k] bytes at s_cmd_addr[k]) or skipped; bytes after the last segment are
// discarded. With s_cmd_pay the payload packet (lane-0 aligned, as roce_rx_parse gives it) is
// consumed to its tlast; without, no payload is read and every segment must be skipped or
// empty. Used by roce_resp (WRITE and SEND payloads) and roce_comp (READ response data).
// Ports: s_cmd_*, s_axis_pay_*, m_dma_wr_* (request before its data), m_axis_dma_wr_*
//   (ceil(len/64) beats, lane-0 aligned; never a zero-length write).
// Latency: a command accepted in c has its first write request in c+1 and, with the payload's
//   first beat offered from c (taken with the command), its first data beat in c+2.
// Throughput: one beat per cycle for a segment starting 64-byte aligned in the payload, one per
//   two cycles otherwise; the next command is taken in the cycle after the last one's last
//   beat is emitted, so back-to-back commands cost one idle output cycle each.
// Model blocks::pay_scatter; docs/engine-hdl.md.
//
// Parameters:
//   NSEG    segments per command (the responder needs 3: the receive WQE's SGEs).
//   DATA_W  datapath width: 512 only.

`resetall
`default_nettype none

module roce_pay_scatter #(
  parameter int NSEG = 3,
  parameter int DATA_W = 512,
  localparam int KEEP_W = DATA_W / 8
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic              s_cmd_valid,
  output      logic              s_cmd_ready,
  input  wire logic              s_cmd_pay,
  input  wire logic [NSEG-1:0]   s_cmd_we,
  input  wire logic [NSEG*16-1:0] s_cmd_len,
  input  wire logic [NSEG*64-1:0] s_cmd_addr,

  input  wire logic [DATA_W-1:0] s_axis_pay_tdata,
  input  wire logic [KEEP_W-1:0] s_axis_pay_tkeep,
  input  wire logic              s_axis_pay_tvalid,
  output      logic              s_axis_pay_tready,
  input  wire logic              s_axis_pay_tlast,

  output      logic              m_dma_wr_valid,
  input  wire logic              m_dma_wr_ready,
  output      roce_rec_pkg::dma_req_t m_dma_wr,

  output      logic [DATA_W-1:0] m_axis_dma_wr_tdata,
  output      logic [KEEP_W-1:0] m_axis_dma_wr_tkeep,
  output      logic              m_axis_dma_wr_tvalid,
  input  wire logic              m_axis_dma_wr_tready,
  output      logic              m_axis_dma_wr_tlast
);

  if (DATA_W != 512) begin : g_bad_width
    $error("roce_pay_scatter: DATA_W must be 512");
  end

  localparam int SEG_W = $clog2(NSEG + 1);

  // ---------------------------------------------------------------- command state
  logic              busy;
  logic              c_pay;
  logic [NSEG-1:0]   c_we;
  logic [NSEG*16-1:0] c_len;
  logic [NSEG*64-1:0] c_addr;
  logic [NSEG-1:0]   c_gt64;   // segment j is longer than 64 bytes
  logic [NSEG-1:0]   c_nz;     // segment j is not empty
  logic [NSEG*16-1:0] c_end;   // payload offset where segment j ends (len 0 + ... + len j);
                               //   j >= 2 settle in the cycles after the command arrives,
                               //   by the time segment j can load
  logic [SEG_W-1:0]  k;        // current segment; NSEG = all done
  logic              seg_on;   // segment k is loaded (= wr_on || sk_on)
  logic [15:0]       rem;      // bytes of segment k still to write (while wr_on)
  logic [15:0]       cur;      // payload offset of the next byte of segment k
  logic [15:0]       seg_endoff; // payload offset where segment k ends (cur + rem)
  logic              ended;    // the payload's tlast beat was taken (or there is none)
  // Decisions of the current cycle, registered one cycle ahead (their next values are
  // picked among candidates computed from registers by the few late control signals):
  logic              wr_on;    // segment k is on, written and not finished (rem != 0)
  logic              sk_on;    // segment k is on and skipped or empty: it ends this cycle
  logic              rem_gt64; // rem > 64: the next beat is 64 bytes and the segment goes on
  logic              in_w0;    // cur lies in w0's beat (cur[15:6] == pos)
  logic              fit;      // the next beat ends within cur's 64-byte beat:
                               //   cur[5:0] + min(rem, 64) <= 64
  // cur[5:0] holds still during a segment, so fit is one of two per-segment constants:
  logic              f_mid;    // fit for a 64-byte beat: cur[5:0] == 0
  logic              f_last;   // fit for the segment's last beat

  // ---------------------------------------------------------------- window
  logic [DATA_W-1:0] w0, w1;
  logic              v0, v1;
  logic [9:0]        pos;      // payload offset of w0's first byte, in 64-byte beats
  logic [9:0]        pos1;     // pos + 1


  // segment attributes: the command's segment j (for loading segment k or k+1)
  function automatic logic [80:0] seg_of(input logic [NSEG-1:0] we, input logic [NSEG*16-1:0] len,
                                         input logic [NSEG*64-1:0] addr, input logic [SEG_W-1:0] j);
    seg_of = '0;
    for (int i = 0; i < NSEG; i++) begin
      if (j == SEG_W'(i)) seg_of = {we[i], len[16*i +: 16], addr[64*i +: 64]};
    end
  endfunction

  logic all_done;
  assign all_done = k == SEG_W'(NSEG);
  // the command is finished: every segment done, the payload consumed (its tlast taken, so
  // no beat of it is taken now); the next command is taken in this cycle (registers only)
  logic fin;
  assign fin = busy && all_done && ended && !v0;
  logic idle;  // a command may be taken: its first segment loads from s_cmd_*
  assign idle = !busy || fin;
  assign s_cmd_ready = idle;

  // ---------------------------------------------------------------- emit one output beat
  // w0 starts at byte 64 * pos, so the beat's offset in the window is cur[5:0].
  // (* keep *) marks the small functions Yosys/ABC must not merge into wide LUT+MUXF chains.
  logic end_past;  // the segment's end is at or past the end of w0
  assign end_past = seg_endoff[15:6] > pos;
  logic cur_past;  // cur is at or past the end of w0
  assign cur_past = cur[15:6] > pos;

  (* keep *) logic have;  // the window holds the beat's bytes (or the payload ended short)
  assign have = ended ? (!v0 || in_w0) : (v0 && in_w0 && (v1 || fit));
  (* keep *) logic emit;
  assign emit = wr_on && have && (!m_axis_dma_wr_tvalid || m_axis_dma_wr_tready);

  logic [2*DATA_W-1:0] win;
  assign win = {v1 ? w1 : '0, v0 ? w0 : '0};  // bytes past a short payload read as zero
  logic [DATA_W-1:0] shifted;
  assign shifted = DATA_W'(win >> {cur[5:0], 3'b000});
  logic [KEEP_W-1:0] keep_n;  // min(rem, 64) bytes
  assign keep_n = (rem_gt64 || rem[6]) ? '1 : ~({KEEP_W{1'b1}} << rem[5:0]);

  // The window drops w0 once every byte in it is behind (or, past the segments, always):
  // the next cur >= 64 * (pos + 1), taken apart by what the next cur is (cur + 64 after a 64-byte
  // beat, seg_endoff after a segment's last beat or a skip, else cur). With v0 an emit needs
  // cur in w0, so a 64-byte beat always leaves w0 behind and cur_past rules an emit out.
  (* keep *) logic shift_p;  // shift without an emit
  assign shift_p = busy && v0 && (all_done || (sk_on ? end_past : cur_past));
  (* keep *) logic shift_q;  // shift if there is an emit
  assign shift_q = busy && v0 && (rem_gt64 || end_past);
  logic shift;
  assign shift = shift_p || (emit && shift_q);

  logic take;
  logic take_new;  // the first beat of a command's payload, taken as the command is
  assign take_new = idle && s_cmd_valid && s_cmd_pay;
  assign s_axis_pay_tready = (busy && c_pay && !ended && !(v0 && v1)) || take_new;
  assign take = s_axis_pay_tvalid && s_axis_pay_tready;
  (* keep *) logic take_a;  // a taken beat goes to w0 if w0 shifts out (else to w1)
  assign take_a = take && !v1;
  (* keep *) logic take_b;  // a taken beat goes to w0 if nothing shifts (else to w1)
  assign take_b = take && !v0;

  // loading segment j: its request goes out unless it is skipped or empty
  logic [80:0] nx_seg;   // the segment to load: 0 at a new command, else the next one
  logic [SEG_W-1:0] nx_k;
  assign nx_k = idle ? '0 : seg_on ? k + 1'b1 : k;
  assign nx_seg = !idle ? seg_of(c_we, c_len, c_addr, nx_k) : seg_of(s_cmd_we, s_cmd_len, s_cmd_addr, '0);
  logic seg_end;  // segment k is finished this cycle
  assign seg_end = sk_on || (emit && !rem_gt64);
  // load = ((a new command) || seg_end || (busy && !seg_on)) && nx_k != NSEG && request free
  (* keep *) logic load_a;  // a load without seg_end
  assign load_a = (idle && s_cmd_valid) || (busy && !seg_on && k != SEG_W'(NSEG)) ||
                  (sk_on && k + 1'b1 != SEG_W'(NSEG));
  (* keep *) logic load_b;  // a load if an emit ends the segment
  assign load_b = wr_on && !rem_gt64 && k + 1'b1 != SEG_W'(NSEG);
  logic load;     // load segment nx_k (the request register must be free for it)
  assign load = (load_a || (emit && load_b)) && (!m_dma_wr_valid || m_dma_wr_ready);
  // nothing to do from segment j on (only empty segments left): finish at once
  function automatic logic rest_empty(input logic [NSEG-1:0] nz, input logic [SEG_W-1:0] j);
    rest_empty = 1'b1;
    for (int i = 0; i < NSEG; i++) begin
      if (SEG_W'(i) >= j && nz[i]) rest_empty = 1'b0;
    end
  endfunction
  function automatic logic bit_of(input logic [NSEG-1:0] v, input logic [SEG_W-1:0] j);
    bit_of = 1'b0;
    for (int i = 0; i < NSEG; i++) begin
      if (j == SEG_W'(i)) bit_of = v[i];
    end
  endfunction
  logic [NSEG-1:0] s_gt64, s_nz;
  always_comb begin
    for (int i = 0; i < NSEG; i++) begin
      s_gt64[i] = s_cmd_len[16*i +: 16] > 16'd64;
      s_nz[i] = s_cmd_len[16*i +: 16] != 16'd0;
    end
  end
  (* keep *) logic nx_empty;
  assign nx_empty = !idle ? rest_empty(c_nz, nx_k) : rest_empty(s_nz, '0);
  logic [15:0] ld_len;
  logic        ld_we;
  logic [63:0] ld_addr;
  assign {ld_we, ld_len, ld_addr} = nx_seg;
  (* keep *) logic ld_gt64, ld_nz;
  assign ld_gt64 = !idle ? bit_of(c_gt64, nx_k) : s_gt64[0];
  assign ld_nz = !idle ? bit_of(c_nz, nx_k) : s_nz[0];
  (* keep *) logic ld_wr;  // the loaded segment is written (else skipped)
  assign ld_wr = ld_we && ld_nz;
  logic [15:0] c_endoff;   // where segment nx_k ends (while busy and not idle)
  always_comb begin
    c_endoff = '0;
    for (int i = 0; i < NSEG; i++) begin
      if (nx_k == SEG_W'(i)) c_endoff = c_end[16*i +: 16];
    end
  end
  logic [15:0] ld_endoff;
  assign ld_endoff = !idle ? c_endoff : s_cmd_len[15:0];
  // fit for segment j: it starts where segment j-1 ends (0 for the first, for which both
  // are true); its last beat ends in the 64-byte beat where it starts when it ends at a
  // multiple of 64 or past its start in that beat
  (* keep *) logic [NSEG-1:0] c_fmid, c_flast;
  always_comb begin
    c_fmid[0] = 1'b1;
    c_flast[0] = 1'b1;
    for (int i = 1; i < NSEG; i++) begin
      c_fmid[i] = c_end[16*(i-1) +: 6] == 6'd0;
      c_flast[i] = c_end[16*i +: 6] == 6'd0 || c_end[16*i +: 6] > c_end[16*(i-1) +: 6];
    end
  end
  (* keep *) logic ld_fmid, ld_flast, ld_fit;
  assign ld_fmid = idle || bit_of(c_fmid, nx_k);
  assign ld_flast = idle || bit_of(c_flast, nx_k);
  assign ld_fit = idle || bit_of(c_gt64 & c_fmid | ~c_gt64 & c_flast, nx_k);
  // after a 64-byte beat
  (* keep *) logic rem_gt128;
  assign rem_gt128 = (|rem[15:8]) || (rem[7] && (|rem[6:0]));
  // in_w0 after the cycle, by what cur and pos become
  logic eq_c_p1, eq_e_p0, eq_e_p1;
  assign eq_c_p1 = cur[15:6] == pos1;
  assign eq_e_p0 = seg_endoff[15:6] == pos;
  assign eq_e_p1 = seg_endoff[15:6] == pos1;
  (* keep *) logic to_end;  // cur becomes seg_endoff
  assign to_end = sk_on || (emit && !rem_gt64);
  // in_w0 next if w0 shifts out / stays (an emit of a 64-byte beat with v0 shifts and leaves
  // cur in w0; without v0 the payload has ended and in_w0 no longer matters)
  (* keep *) logic w0n_s, w0n_n;
  assign w0n_s = sk_on ? eq_e_p1 : emit ? (rem_gt64 || eq_e_p1) : eq_c_p1;
  assign w0n_n = to_end ? eq_e_p0 : in_w0;

  always_ff @(posedge clk) begin
    if (m_dma_wr_valid && m_dma_wr_ready) m_dma_wr_valid <= 1'b0;
    if (m_axis_dma_wr_tvalid && m_axis_dma_wr_tready) m_axis_dma_wr_tvalid <= 1'b0;

    for (int i = 1; i < NSEG; i++) c_end[16*i +: 16] <= c_end[16*(i-1) +: 16] + c_len[16*i +: 16];
    if (busy) begin
      if (emit && rem_gt64) begin
        cur <= {cur[15:6] + 10'd1, cur[5:0]};
        rem <= {rem[15:6] - 10'd1, rem[5:0]};
        rem_gt64 <= rem_gt128;
        fit <= rem_gt128 ? f_mid : f_last;
      end else if (to_end) begin
        cur <= seg_endoff;
      end
      in_w0 <= shift ? w0n_s : w0n_n;
      if (seg_end) begin
        seg_on <= 1'b0;
        k <= k + 1'b1;
        wr_on <= 1'b0;
        sk_on <= 1'b0;
      end
      if (emit) begin
        m_axis_dma_wr_tvalid <= 1'b1;
        m_axis_dma_wr_tdata <= masked(shifted, keep_n);
        m_axis_dma_wr_tkeep <= keep_n;
        m_axis_dma_wr_tlast <= !rem_gt64;
      end
      // window
      if (shift) begin
        w0 <= w1;
        v0 <= v1;
        v1 <= 1'b0;
        pos <= pos1;
        pos1 <= pos1 + 10'd1;
      end
      if (shift ? take_a : take_b) begin
        w0 <= masked(s_axis_pay_tdata, s_axis_pay_tkeep);
        v0 <= 1'b1;
      end else if (take) begin
        w1 <= masked(s_axis_pay_tdata, s_axis_pay_tkeep);
        v1 <= 1'b1;
      end
      if (take && s_axis_pay_tlast) ended <= 1'b1;
      if (fin) busy <= 1'b0;
    end
    // a new command (in the cycle the last one finishes, this overrides the above), with
    // its payload's first beat when it is there
    if (idle && s_cmd_valid) begin
      busy <= 1'b1;
      c_end[15:0] <= s_cmd_len[15:0];
      for (int i = 1; i < NSEG; i++) begin
        if (i == 1) c_end[16*i +: 16] <= s_cmd_len[15:0] + s_cmd_len[16*i +: 16];
      end
      c_pay <= s_cmd_pay;
      c_we <= s_cmd_we;
      c_len <= s_cmd_len;
      c_addr <= s_cmd_addr;
      c_gt64 <= s_gt64;
      c_nz <= s_nz;
      k <= '0;
      seg_on <= 1'b0;
      cur <= 16'd0;
      seg_endoff <= 16'd0;
      pos <= 10'd0;
      pos1 <= 10'd1;
      in_w0 <= 1'b1;
      v0 <= take;
      if (take) w0 <= masked(s_axis_pay_tdata, s_axis_pay_tkeep);
      v1 <= 1'b0;
      ended <= !s_cmd_pay || (take && s_axis_pay_tlast);
    end
    // a segment (re)loads last: it overrides the sequencing above
    if (load && nx_empty) begin
      seg_on <= 1'b0;
      k <= SEG_W'(NSEG);
    end else if (load) begin
      seg_on <= 1'b1;
      wr_on <= ld_wr;
      sk_on <= !ld_wr;
      k <= nx_k;
      rem <= ld_len;
      rem_gt64 <= ld_gt64;
      fit <= ld_fit;
      f_mid <= ld_fmid;
      f_last <= ld_flast;
      seg_endoff <= ld_endoff;
      if (ld_we && ld_nz) begin
        m_dma_wr_valid <= 1'b1;
        m_dma_wr.addr <= ld_addr;
        m_dma_wr.len <= ld_len;
      end
    end

    if (rst) begin
      busy <= 1'b0;
      seg_on <= 1'b0;
      wr_on <= 1'b0;
      sk_on <= 1'b0;
      m_dma_wr_valid <= 1'b0;
      m_axis_dma_wr_tvalid <= 1'b0;
      v0 <= 1'b0;
      v1 <= 1'b0;
      ended <= 1'b0;
      k <= '0;
    end
  end

  // the bytes of a beat that keep marks, the other lanes zero
  function automatic logic [DATA_W-1:0] masked(input logic [DATA_W-1:0] d,
                                                       input logic [KEEP_W-1:0] keep);
    for (int i = 0; i < KEEP_W; i++) masked[8*i +: 8] = keep[i] ? d[8*i +: 8] : 8'h00;
  endfunction

endmodule

`resetall
