// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_pay_scatter: cuts one received payload packet into DMA writes. A command names up to
// NSEG consecutive segments of the payload (segment k starts where k-1 ended, the first at
// payload byte 0): each is either written to host memory (s_cmd_we[k]: one DMA write of
// s_cmd_len[k] bytes at s_cmd_addr[k]) or skipped; payload bytes after the last segment are
// discarded. With s_cmd_pay set the payload packet (lane-0 aligned, tlast on its last beat,
// as roce_rx_parse gives it) is consumed to its tlast; without, no payload is read and
// every segment must be skipped or empty. The responder uses it for WRITE packets (one
// segment), SEND packets (one segment per receive SGE piece) and for dropping payload
// (no segment).
// Model: firmware-model blocks::roce_pay_scatter (the byte slicing it does); checked in
// lockstep by tests/tests/pay_scatter_cosim.rs and, inside roce_resp, by resp_cosim.
//
// DMA write port: a request (m_dma_wr_addr, m_dma_wr_len bytes) is handed over before its
// data; the data is ceil(len/64) beats on m_axis_dma_wr, lane-0 aligned (byte i of the
// write in lane i of its first beat, ...), tkeep marking the bytes, tlast on the last beat.
// A write never has zero length (an empty segment makes no write).
//
// Datapath: a two-beat window (w0 at payload offset pos, w1 behind it); an output beat is
// the window shifted right by (offset - pos) bytes (one 64:1 byte mux), registered on
// m_axis_dma_wr. Skipped bytes cost nothing beyond the beats they occupy.
// Latency: a command accepted in cycle c has its first write request valid in c+1 and,
//   with the payload's first beat offered from c+1, its first data beat valid in c+3.
// Throughput: one beat per cycle for a segment whose start is 64-byte aligned in the
//   payload (every WRITE packet and the first SEND segment); one beat per two cycles for a
//   segment starting mid-beat (a later SGE of a SEND). A command costs three cycles beyond
//   its beats (4096-byte WRITE packets back to back: 67 cycles each, measured by the test).
//
// Parameters:
//   NSEG   segments per command (the responder needs 3: the receive WQE's SGEs).
//   DATA_W datapath width: 512 only.

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
  output      logic [63:0]       m_dma_wr_addr,
  output      logic [15:0]       m_dma_wr_len,

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
  logic [SEG_W-1:0]  k;        // current segment; NSEG = all done
  logic              seg_on;   // segment k is loaded (rem, req state valid)
  logic [15:0]       rem;      // bytes of segment k still to write
  logic [15:0]       cur;      // payload offset of the next byte of segment k
  logic              ended;    // the payload's tlast beat was taken (or there is none)

  // ---------------------------------------------------------------- window
  logic [DATA_W-1:0] w0, w1;
  logic              v0, v1;
  logic [15:0]       pos;      // payload offset of w0's first byte

  assign s_cmd_ready = !busy;

  // segment attributes: the command's segment j (for loading segment k or k+1)
  function automatic logic [80:0] seg_of(input logic [NSEG-1:0] we, input logic [NSEG*16-1:0] len,
                                         input logic [NSEG*64-1:0] addr, input logic [SEG_W-1:0] j);
    seg_of = '0;
    for (int i = 0; i < NSEG; i++) begin
      if (j == SEG_W'(i)) seg_of = {we[i], len[16*i +: 16], addr[64*i +: 64]};
    end
  endfunction

  logic        k_we;
  logic [15:0] k_len_unused;
  logic [63:0] k_addr_unused;
  assign {k_we, k_len_unused, k_addr_unused} = seg_of(c_we, c_len, c_addr, k);

  logic all_done;
  assign all_done = k == SEG_W'(NSEG);

  // ---------------------------------------------------------------- emit one output beat
  logic [15:0] rel;
  assign rel = cur - pos;
  logic [15:0] n;  // bytes of this output beat
  assign n = rem > 16'd64 ? 16'd64 : rem;
  logic [15:0] loaded_end;
  assign loaded_end = pos + (v0 ? (v1 ? 16'd128 : 16'd64) : 16'd0);
  logic out_free;
  assign out_free = !m_axis_dma_wr_tvalid || m_axis_dma_wr_tready;
  logic have;  // the window holds the beat's bytes (or the payload ended short)
  assign have = ended ? (!v0 || rel < 16'd64) : (v0 && rel < 16'd64 && cur + n <= loaded_end);
  logic emit;
  assign emit = busy && seg_on && k_we && rem != 16'd0 && have && out_free;

  logic [2*DATA_W-1:0] win;
  assign win = {v1 ? w1 : '0, v0 ? w0 : '0};  // bytes past a short payload read as zero
  logic [DATA_W-1:0] shifted;
  assign shifted = DATA_W'(win >> {rel[5:0], 3'b000});
  logic [KEEP_W-1:0] keep_n;
  assign keep_n = n[6] ? '1 : ~({KEEP_W{1'b1}} << n[5:0]);

  // after this cycle's emit / skip
  logic [15:0] cur_nx, rem_nx;
  always_comb begin
    cur_nx = cur;
    rem_nx = rem;
    if (emit) begin
      cur_nx = cur + n;
      rem_nx = rem - n;
    end else if (busy && seg_on && !k_we) begin
      cur_nx = cur + rem;  // skip the whole segment at once
      rem_nx = 16'd0;
    end
  end

  // the window drops w0 once every byte in it is behind (or, past the segments, always)
  logic shift;
  assign shift = busy && v0 && (all_done || cur_nx >= pos + 16'd64);

  logic take;
  assign s_axis_pay_tready = busy && c_pay && !ended && !(v0 && v1);
  assign take = s_axis_pay_tvalid && s_axis_pay_tready;

  // loading segment j: its request goes out unless it is skipped or empty
  logic [80:0] nx_seg;   // the segment to load: 0 at a new command, else the next one
  logic [SEG_W-1:0] nx_k;
  assign nx_k = !busy ? '0 : seg_on ? k + 1'b1 : k;
  assign nx_seg = busy ? seg_of(c_we, c_len, c_addr, nx_k) : seg_of(s_cmd_we, s_cmd_len, s_cmd_addr, '0);
  logic seg_end;  // segment k is finished this cycle
  assign seg_end = busy && seg_on && rem_nx == 16'd0;
  logic load;     // load segment nx_k (the request register must be free for it)
  assign load = ((!busy && s_cmd_valid) || seg_end || (busy && !seg_on)) && nx_k != SEG_W'(NSEG) &&
                (!m_dma_wr_valid || m_dma_wr_ready);
  // nothing to do from segment j on (only empty segments left): finish at once
  function automatic logic rest_empty(input logic [NSEG*16-1:0] len, input logic [SEG_W-1:0] j);
    rest_empty = 1'b1;
    for (int i = 0; i < NSEG; i++) begin
      if (SEG_W'(i) >= j && len[16*i +: 16] != 16'd0) rest_empty = 1'b0;
    end
  endfunction
  logic nx_empty;
  assign nx_empty = busy ? rest_empty(c_len, nx_k) : rest_empty(s_cmd_len, '0);
  logic [15:0] ld_len;
  logic        ld_we;
  logic [63:0] ld_addr;
  assign {ld_we, ld_len, ld_addr} = nx_seg;

  always_ff @(posedge clk) begin
    if (m_dma_wr_valid && m_dma_wr_ready) m_dma_wr_valid <= 1'b0;
    if (m_axis_dma_wr_tvalid && m_axis_dma_wr_tready) m_axis_dma_wr_tvalid <= 1'b0;

    if (!busy && s_cmd_valid) begin
      busy <= 1'b1;
      c_pay <= s_cmd_pay;
      c_we <= s_cmd_we;
      c_len <= s_cmd_len;
      c_addr <= s_cmd_addr;
      k <= '0;
      seg_on <= 1'b0;
      cur <= 16'd0;
      pos <= 16'd0;
      v0 <= 1'b0;
      v1 <= 1'b0;
      ended <= !s_cmd_pay;
    end
    if (busy) begin
      cur <= cur_nx;
      rem <= rem_nx;
      if (seg_end) begin
        seg_on <= 1'b0;
        k <= k + 1'b1;
      end
      if (emit) begin
        m_axis_dma_wr_tvalid <= 1'b1;
        m_axis_dma_wr_tdata <= masked(shifted, keep_n);
        m_axis_dma_wr_tkeep <= keep_n;
        m_axis_dma_wr_tlast <= rem == n;
      end
      // window
      if (shift) begin
        w0 <= w1;
        v0 <= v1;
        v1 <= 1'b0;
        pos <= pos + 16'd64;
      end
      if (take) begin
        if (shift ? !v1 : !v0) begin
          w0 <= masked(s_axis_pay_tdata, s_axis_pay_tkeep);
          v0 <= 1'b1;
        end else begin
          w1 <= masked(s_axis_pay_tdata, s_axis_pay_tkeep);
          v1 <= 1'b1;
        end
        if (s_axis_pay_tlast) ended <= 1'b1;
      end
      // the command is finished: every segment done, the payload consumed
      if (all_done && ended && !v0 && !take) busy <= 1'b0;
    end
    // a segment (re)loads last: it overrides the sequencing above
    if (load && nx_empty) begin
      seg_on <= 1'b0;
      k <= SEG_W'(NSEG);
    end else if (load) begin
      seg_on <= 1'b1;
      k <= nx_k;
      rem <= ld_len;
      if (ld_we && ld_len != 16'd0) begin
        m_dma_wr_valid <= 1'b1;
        m_dma_wr_addr <= ld_addr;
        m_dma_wr_len <= ld_len;
      end
    end

    if (rst) begin
      busy <= 1'b0;
      seg_on <= 1'b0;
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
