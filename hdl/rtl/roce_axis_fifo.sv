// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_axis_fifo: a synchronous AXI4-Stream FIFO (tdata, tkeep, tlast, tuser) in block RAM.
// In the engine it holds received payloads between roce_rx_parse and the dispatch (so the
// parser goes on to the next header while a payload waits for the responder), and the QP
// errors in front of roce_qp_ctx. Every beat that enters leaves, in order, unchanged.
// Latency: a beat written in cycle c can be on m_axis in c+2 (BRAM read, output register).
// Throughput: one beat per cycle in and out; s_axis_tready is low only while DEPTH - 2 beats
//   are stored; it is a register, set a cycle ahead from a fill counter.
//
// Parameters:
//   DATA_W  tdata width (tkeep DATA_W/8).
//   USER_W  tuser width.
//   DEPTH   beats, a power of two >= 4.

`resetall
`default_nettype none

module roce_axis_fifo #(
  parameter int DATA_W = 512,
  parameter int USER_W = 1,
  parameter int DEPTH = 128,
  localparam int KEEP_W = DATA_W / 8
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [DATA_W-1:0] s_axis_tdata,
  input  wire logic [KEEP_W-1:0] s_axis_tkeep,
  input  wire logic              s_axis_tvalid,
  output      logic              s_axis_tready,
  input  wire logic              s_axis_tlast,
  input  wire logic [USER_W-1:0] s_axis_tuser,

  output      logic [DATA_W-1:0] m_axis_tdata,
  output      logic [KEEP_W-1:0] m_axis_tkeep,
  output      logic              m_axis_tvalid,
  input  wire logic              m_axis_tready,
  output      logic              m_axis_tlast,
  output      logic [USER_W-1:0] m_axis_tuser
);

  localparam int AW = $clog2(DEPTH);
  localparam int W = DATA_W + KEEP_W + 1 + USER_W;

  (* ram_style = "block" *) logic [W-1:0] mem [DEPTH];
  logic [AW:0] wp, rp;     // write pointer, read pointer (beats handed to the read stage)
  logic        q_valid;    // the BRAM output holds the beat at rp - 1
  logic [W-1:0] q;

  // beats in the FIFO, including those in the read pipeline (so the count bounds the RAM):
  // wp - rp + q_valid + m_axis_tvalid, kept as a counter (+1 per beat taken, -1 per beat
  // popped). s_axis_tready = used < DEPTH - 2 is registered: its next value is one of three
  // compares on the counter, picked by the take and the pop of this cycle.
  logic [AW:0] used;
  logic        rdy_p1, rdy_0, rdy_m1;   // used + 1, used, used - 1 below DEPTH - 2
  assign rdy_p1 = used < (AW + 1)'(DEPTH - 3);
  assign rdy_0  = used < (AW + 1)'(DEPTH - 2);
  assign rdy_m1 = used < (AW + 1)'(DEPTH - 1);

  logic take, pop, out_free, rd;
  assign take = s_axis_tvalid && s_axis_tready;
  assign pop = m_axis_tvalid && m_axis_tready;
  assign out_free = !m_axis_tvalid || m_axis_tready;
  // read the next beat into the BRAM output when that register is free or moves on
  assign rd = wp != rp && (!q_valid || out_free);

  always_ff @(posedge clk) begin
    if (take) mem[wp[AW-1:0]] <= {s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser};
    if (rd) q <= mem[rp[AW-1:0]];
  end

  always_ff @(posedge clk) begin
    if (take) wp <= wp + 1'b1;
    if (rd) rp <= rp + 1'b1;
    if (take && !pop) begin
      used <= used + 1'b1;
      s_axis_tready <= rdy_p1;
    end else if (pop && !take) begin
      used <= used - 1'b1;
      s_axis_tready <= rdy_m1;
    end else begin
      s_axis_tready <= rdy_0;
    end
    if (out_free) begin
      m_axis_tvalid <= q_valid;
      {m_axis_tdata, m_axis_tkeep, m_axis_tlast, m_axis_tuser} <= q;
    end
    if (rd) q_valid <= 1'b1;
    else if (out_free) q_valid <= 1'b0;
    if (rst) begin
      wp <= '0;
      rp <= '0;
      q_valid <= 1'b0;
      m_axis_tvalid <= 1'b0;
      used <= '0;
      s_axis_tready <= 1'b1;
    end
  end

endmodule

`resetall
