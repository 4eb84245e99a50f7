// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_axis_drop_fifo: store-and-forward AXI4-Stream frame FIFO that drops errored frames
// (behind roce_icrc's check). A frame is committed at its last beat if that beat's
// s_axis_tuser[ERR_BIT] is clear, then sent unchanged; a bad frame, one longer than DEPTH
// beats, and (DROP_WHEN_FULL = 1) one meeting a FIFO full of committed frames are dropped
// whole. m_axis_tuser is s_axis_tuser without ERR_BIT; m_axis_tlen is the frame's byte count
// on every beat. Pulses and wrapping counters: good, drop_bad, drop_overflow, drop_full.
// Ports: s_axis_*, m_axis_* + m_axis_tlen, *_frame pulses, *_count counters.
// Latency: a committed frame's first beat is on m_axis 3 cycles after its last beat was taken.
// Throughput: one beat per cycle in and out; committed frames back to back.
// docs/engine-hdl.md.
//
// Parameters:
//   DATA_W          64, 256 or 512.
//   DEPTH           beats, a power of two >= 2 (default two 9216-byte frames, rounded up).
//   USER_W, ERR_BIT s_axis_tuser width (default 2: {roce, error}) and its error bit (0).
//   DROP_WHEN_FULL  0: stall the input when full; 1: drop the frame instead.
//   CNT_W, LEN_W    counter width; m_axis_tlen width (default 16).

`resetall
`default_nettype none

module roce_axis_drop_fifo #(
  parameter int DATA_W = 512,
  parameter int DEPTH = 1 << $clog2(2 * ((9216 + DATA_W / 8 - 1) / (DATA_W / 8))),
  parameter int USER_W = 2,
  parameter int ERR_BIT = 0,
  parameter int DROP_WHEN_FULL = 0,
  parameter int CNT_W = 32,
  parameter int LEN_W = 16,
  localparam int KEEP_W = DATA_W / 8,
  localparam int OUSER_W = (USER_W > 1) ? USER_W - 1 : 1
) (
  input  wire logic               clk,
  input  wire logic               rst,

  input  wire logic [DATA_W-1:0]  s_axis_tdata,
  input  wire logic [KEEP_W-1:0]  s_axis_tkeep,
  input  wire logic               s_axis_tvalid,
  output      logic               s_axis_tready,
  input  wire logic               s_axis_tlast,
  input  wire logic [USER_W-1:0]  s_axis_tuser,

  output      logic [DATA_W-1:0]  m_axis_tdata,
  output      logic [KEEP_W-1:0]  m_axis_tkeep,
  output      logic               m_axis_tvalid,
  input  wire logic               m_axis_tready,
  output      logic               m_axis_tlast,
  output      logic [OUSER_W-1:0] m_axis_tuser,
  output      logic [LEN_W-1:0]   m_axis_tlen,

  output      logic               good_frame,
  output      logic               drop_bad_frame,
  output      logic               drop_overflow_frame,
  output      logic               drop_full_frame,
  output      logic [CNT_W-1:0]   good_count,
  output      logic [CNT_W-1:0]   drop_bad_count,
  output      logic [CNT_W-1:0]   drop_overflow_count,
  output      logic [CNT_W-1:0]   drop_full_count
);

  localparam int AW = $clog2(DEPTH);
  // Memory word: {user without ERR_BIT, last, keep, data}.
  localparam int MEM_W = DATA_W + KEEP_W + 1 + OUSER_W;

  if (DEPTH < 2 || (DEPTH & (DEPTH - 1)) != 0) begin : g_bad_depth
    $error("roce_axis_drop_fifo: DEPTH must be a power of two >= 2");
  end
  if ((DEPTH * KEEP_W) >= (1 << LEN_W)) begin : g_bad_len_w
    $error("roce_axis_drop_fifo: LEN_W too narrow for the longest frame that fits");
  end
  if (ERR_BIT < 0 || ERR_BIT >= USER_W) begin : g_bad_err_bit
    $error("roce_axis_drop_fifo: ERR_BIT must index s_axis_tuser");
  end

  // Pointers carry one wrap bit: equal = empty, differ by DEPTH = full.
  logic [AW:0] wr_ptr, commit_ptr, rd_ptr;
  logic        drop_q;    // discarding the rest of a dropped frame

  // ------------------------------------------------------------------------------------
  // Write side
  // ------------------------------------------------------------------------------------
  logic              full, part, commit_rd, s_hs, wen, s_err;
  logic [OUSER_W-1:0] s_urem;
  logic [USER_W:0]   s_upad;
  logic [MEM_W-1:0]  s_word;

  // wr_ptr - rd_ptr == DEPTH without the subtraction
  assign full      = wr_ptr == {!rd_ptr[AW], rd_ptr[AW-1:0]};
  assign part      = wr_ptr != commit_ptr;  // a frame is partly written
  assign commit_rd = commit_ptr == rd_ptr;  // no committed beat left in the RAM

  always_comb begin
    if (DROP_WHEN_FULL != 0) begin
      s_axis_tready = drop_q || !full || part;
    end else begin
      // full with no committed data left means the frame alone fills the FIFO
      s_axis_tready = drop_q || !full || commit_rd;
    end
  end

  assign s_hs  = s_axis_tvalid && s_axis_tready;
  assign wen   = s_hs && !drop_q && !full;
  assign s_err = s_axis_tuser[ERR_BIT];

  always_comb begin
    s_upad = {1'b0, s_axis_tuser};
    for (int j = 0; j < OUSER_W; j++) begin
      if (USER_W == 1) begin
        s_urem[j] = 1'b0;
      end else if (j < ERR_BIT) begin
        s_urem[j] = s_upad[j];
      end else begin
        s_urem[j] = s_upad[j + 1];
      end
    end
    s_word = {s_urem, s_axis_tlast, s_axis_tkeep, s_axis_tdata};
  end

  // Byte count of the frame being written, one cycle behind the input. A beat's tkeep
  // popcount is registered as two parts (k_a + 4 k_b, k_v: it counts) and added to the
  // frame's sum (acc) the cycle after, as is the restart of the sum at a frame's end
  // (acc_clr): the frame's bytes before the beat in s_axis are wr_bytes. At a good last beat
  // wr_bytes and the beat's count are registered (len_base, len_ka, len_kb) and their sum is
  // written into len_mem the cycle after (len_pv); a read of that entry in the same cycle
  // takes the value being written (forwarded), so the read side sees it as if written a
  // cycle earlier.
  logic [LEN_W-1:0] acc, wr_bytes, len_base, len_data;
  logic [4:0]       k_a, k_b, len_ka, len_kb;
  logic             k_v, acc_clr, len_pv;
  logic [AW:0]      len_wr, len_pa;
  logic             len_wen;

  // Popcount of tkeep in LUT levels on kept wires (so that the mapper does not merge them
  // into wide LUT + MUXF chains), each bit a function of at most six bits of the level
  // before: (1) groups of five or six bits counted; (2) pairs of groups summed (0..12);
  // (3) each bit column of those (at most six) counted; (4) the four column counts summed
  // in two pairs, pc_a + 4 pc_b; that sum is left to the adders of the next cycle.
  localparam int NG = (KEEP_W + 5) / 6;   // groups, at most 11
  localparam int NP = (NG + 1) / 2;       // pairs of groups, at most 6

  if (KEEP_W > 64) begin : g_bad_keep
    $error("roce_axis_drop_fifo: DATA_W above 512");
  end

  // a + b, bitwise (no carry chain; small operands, no overflow out of the five bits)
  function automatic logic [4:0] badd(input logic [4:0] a, input logic [4:0] b);
    logic c;
    c = 1'b0;
    for (int i = 0; i < 5; i++) begin
      badd[i] = a[i] ^ b[i] ^ c;
      c = (a[i] & b[i]) | (c & (a[i] ^ b[i]));
    end
  endfunction
  // the number of set bits of x
  function automatic logic [2:0] cnt6(input logic [5:0] x);
    logic [4:0] t;
    t = '0;
    for (int j = 0; j < 6; j++) t = badd(t, {4'b0000, x[j]});
    cnt6 = t[2:0];
  endfunction

  (* keep *) logic [3*NG-1:0] pc_g;   // per group, 0..6
  (* keep *) logic [4*NP-1:0] pc_p;   // per pair of groups, 0..12
  (* keep *) logic [11:0]     pc_c;   // per bit column j of pc_p: 3 bits at 3*j
  (* keep *) logic [4:0]      pc_a;   // pc_c[0] + 2 pc_c[1]
  (* keep *) logic [4:0]      pc_b;   // pc_c[2] + 2 pc_c[3]

  for (genvar i = 0; i < NG; i++) begin : g_pc_g
    localparam int LO = (i * KEEP_W) / NG;
    localparam int HI = ((i + 1) * KEEP_W) / NG;
    logic [5:0] x;
    for (genvar j = 0; j < 6; j++) begin : g_x
      if (LO + j < HI) begin : g_on
        assign x[j] = s_axis_tkeep[LO + j];
      end else begin : g_off
        assign x[j] = 1'b0;
      end
    end
    assign pc_g[3*i +: 3] = cnt6(x);
  end
  for (genvar i = 0; i < NP; i++) begin : g_pc_p
    if (2 * i + 1 < NG) begin : g_two
      logic [4:0] t;
      assign t = badd({2'b00, pc_g[3*2*i +: 3]}, {2'b00, pc_g[3*(2*i+1) +: 3]});
      assign pc_p[4*i +: 4] = t[3:0];
      logic unused_t;
      assign unused_t = t[4];  // 0..12 fits in four bits
    end else begin : g_one
      assign pc_p[4*i +: 4] = {1'b0, pc_g[3*2*i +: 3]};
    end
  end
  for (genvar j = 0; j < 4; j++) begin : g_pc_c
    logic [5:0] x;
    for (genvar i = 0; i < 6; i++) begin : g_x
      if (i < NP) begin : g_on
        assign x[i] = pc_p[4*i + j];
      end else begin : g_off
        assign x[i] = 1'b0;
      end
    end
    assign pc_c[3*j +: 3] = cnt6(x);
  end
  assign pc_a = badd({2'b00, pc_c[2:0]}, {1'b0, pc_c[5:3], 1'b0});
  assign pc_b = badd({2'b00, pc_c[8:6]}, {1'b0, pc_c[11:9], 1'b0});

  assign wr_bytes = (acc_clr ? '0 : acc) + (k_v ? LEN_W'(k_a) : '0) +
                    (k_v ? LEN_W'({k_b, 2'b00}) : '0);
  assign len_data = len_base + LEN_W'(len_ka) + LEN_W'({len_kb, 2'b00});
  assign len_wen = s_hs && !drop_q && !full && s_axis_tlast && !s_err;

  always_ff @(posedge clk) begin
    k_a <= pc_a;
    k_b <= pc_b;
    acc <= wr_bytes;
    k_v <= s_hs && !(s_axis_tlast || drop_q || full);
    acc_clr <= s_hs && (s_axis_tlast || drop_q || full);
    len_pv <= len_wen;
    if (len_wen) begin
      len_base <= wr_bytes;
      len_ka   <= pc_a;
      len_kb   <= pc_b;
      len_pa   <= len_wr;
      len_wr   <= len_wr + 1'b1;
    end
    if (rst) begin
      acc     <= '0;
      k_v     <= 1'b0;
      acc_clr <= 1'b0;
      len_pv  <= 1'b0;
      len_wr  <= '0;
    end
  end

  always_ff @(posedge clk) begin
    good_frame          <= 1'b0;
    drop_bad_frame      <= 1'b0;
    drop_overflow_frame <= 1'b0;
    drop_full_frame     <= 1'b0;
    if (s_hs) begin
      if (drop_q) begin
        if (s_axis_tlast) begin
          drop_q <= 1'b0;
        end
      end else if (full) begin
        // No room for this beat: drop the frame (only reachable with tready high, i.e.
        // the frame alone fills the FIFO, or DROP_WHEN_FULL).
        wr_ptr <= commit_ptr;
        drop_q <= !s_axis_tlast;
        if (commit_rd) begin
          drop_overflow_frame <= 1'b1;
        end else begin
          drop_full_frame <= 1'b1;
        end
      end else if (s_axis_tlast) begin
        if (s_err) begin
          wr_ptr         <= commit_ptr;
          drop_bad_frame <= 1'b1;
        end else begin
          wr_ptr     <= wr_ptr + 1'b1;
          commit_ptr <= wr_ptr + 1'b1;
          good_frame <= 1'b1;
        end
      end else begin
        wr_ptr <= wr_ptr + 1'b1;
      end
    end
    if (rst) begin
      wr_ptr              <= '0;
      commit_ptr          <= '0;
      drop_q              <= 1'b0;
      good_frame          <= 1'b0;
      drop_bad_frame      <= 1'b0;
      drop_overflow_frame <= 1'b0;
      drop_full_frame     <= 1'b0;
    end
  end

  // Counters, one cycle behind the pulses.
  always_ff @(posedge clk) begin
    good_count          <= good_count + CNT_W'(good_frame);
    drop_bad_count      <= drop_bad_count + CNT_W'(drop_bad_frame);
    drop_overflow_count <= drop_overflow_count + CNT_W'(drop_overflow_frame);
    drop_full_count     <= drop_full_count + CNT_W'(drop_full_frame);
    if (rst) begin
      good_count          <= '0;
      drop_bad_count      <= '0;
      drop_overflow_count <= '0;
      drop_full_count     <= '0;
    end
  end

  // ------------------------------------------------------------------------------------
  // Storage: simple dual-port block RAM, registered read with enable, no reset
  // ------------------------------------------------------------------------------------
  logic [MEM_W-1:0] mem [DEPTH];
  logic [MEM_W-1:0] ram_q;
  logic             ren;

  always_ff @(posedge clk) begin
    if (wen) begin
      mem[wr_ptr[AW-1:0]] <= s_word;
    end
  end

  always_ff @(posedge clk) begin
    if (ren) begin
      ram_q <= mem[rd_ptr[AW-1:0]];
    end
  end

  // Frame lengths, written at commit, read with the frame's first beat.
  logic [LEN_W-1:0] len_mem [DEPTH];
  logic [LEN_W-1:0] len_q;
  logic [AW:0]      len_rd;
  logic             rd_any, rd_first, len_ren;

  always_ff @(posedge clk) begin
    if (len_pv) begin
      len_mem[len_pa[AW-1:0]] <= len_data;
    end
  end

  // The beat read next starts a frame if none was read yet or the last one read was a tlast
  // (ram_q holds the word read last).
  assign rd_first = !rd_any || ram_q[DATA_W + KEEP_W];
  assign len_ren  = ren && rd_first;

  always_ff @(posedge clk) begin
    if (len_ren) begin
      len_q <= len_mem[len_rd[AW-1:0]];
    end
  end

  // The entry written this cycle (the frame committed last cycle) is forwarded.
  logic [LEN_W-1:0] len_fwd;
  logic             len_fq;

  always_ff @(posedge clk) begin
    if (len_ren) begin
      len_fq  <= len_pv && len_pa == len_rd;
      len_fwd <= len_data;
    end
  end

  always_ff @(posedge clk) begin
    if (len_ren) begin
      len_rd <= len_rd + 1'b1;
    end
    if (ren) begin
      rd_any <= 1'b1;
    end
    if (rst) begin
      len_rd <= '0;
      rd_any <= 1'b0;
    end
  end

  // ------------------------------------------------------------------------------------
  // Read side: RAM output register (ram_valid), then the output register (out_valid)
  // ------------------------------------------------------------------------------------
  logic             ram_valid, out_valid, out_ready, ram_ready;
  logic [MEM_W-1:0] out_q;
  logic [LEN_W-1:0] out_len;

  assign out_ready = !out_valid || m_axis_tready;
  assign ram_ready = !ram_valid || out_ready;
  assign ren       = ram_ready && !commit_rd;

  always_ff @(posedge clk) begin
    if (ren) begin
      rd_ptr <= rd_ptr + 1'b1;
    end
    if (ram_ready) begin
      ram_valid <= ren;
    end
    if (out_ready) begin
      out_valid <= ram_valid;
      if (ram_valid) begin
        out_q   <= ram_q;
        out_len <= len_fq ? len_fwd : len_q;
      end
    end
    if (rst) begin
      rd_ptr    <= '0;
      ram_valid <= 1'b0;
      out_valid <= 1'b0;
    end
  end

  assign m_axis_tvalid = out_valid;
  assign m_axis_tdata  = out_q[DATA_W-1:0];
  assign m_axis_tkeep  = out_q[DATA_W +: KEEP_W];
  assign m_axis_tlast  = out_q[DATA_W + KEEP_W];
  assign m_axis_tuser  = out_q[DATA_W + KEEP_W + 1 +: OUSER_W];
  assign m_axis_tlen   = out_len;

endmodule

`resetall
