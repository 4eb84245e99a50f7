// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_axis_frame_gate: passes or discards AXI4-Stream frames whole, by an enable that may
// change at any time (a link going down, a FIFO behind it in reset). A frame passes only if en
// is high at each of its beats: from the first beat seen with en low the rest of the frame is
// discarded, and a frame that starts while en is low is discarded entirely. Discarded beats are
// taken (s_axis_tready high), passed beats see the sink's tready; a sink sees whole frames or,
// when en fell mid-frame, one cut short without its tlast (the sink's reset must absorb it).
// Latency: none (combinational). Throughput: one beat per cycle.
// Use: the MAC paths of boards/alveo-u250/roce_u250_top.sv.

`resetall
`default_nettype none

module roce_axis_frame_gate (
  input  wire logic clk,
  input  wire logic rst,
  input  wire logic en,
  input  wire logic s_axis_tvalid,
  output      logic s_axis_tready,
  input  wire logic s_axis_tlast,
  output      logic m_axis_tvalid,
  input  wire logic m_axis_tready
);

  logic mid;      // a frame has started (some beat taken) and its tlast not yet
  logic pass_q;   // that frame is passing
  logic pass;
  assign pass = en && (!mid || pass_q);
  assign m_axis_tvalid = s_axis_tvalid && pass;
  assign s_axis_tready = pass ? m_axis_tready : 1'b1;

  always_ff @(posedge clk) begin
    if (s_axis_tvalid && s_axis_tready) begin
      mid <= !s_axis_tlast;
      pass_q <= pass;
    end
    if (!en) pass_q <= 1'b0;
    if (rst) begin
      mid <= 1'b0;
      pass_q <= 1'b0;
    end
  end

endmodule

`resetall
