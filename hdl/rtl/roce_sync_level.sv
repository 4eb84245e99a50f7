// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_sync_level: W independent level signals (status bits: link up, aligned) into the clk
// domain through STAGES flip-flops each (ASYNC_REG). Each bit arrives on its own: bits that
// must stay consistent with each other need a handshake or a Gray code (roce_axis_async_fifo).
// Board constraints: set_false_path (or set_max_delay -datapath_only) into sync_ff[W-1:0].
// Latency: STAGES cycles (plus up to one).
//
// Parameters:
//   W       bits.
//   STAGES  flip-flops per bit (>= 2).

`resetall
`default_nettype none

module roce_sync_level #(
  parameter int W = 1,
  parameter int STAGES = 2
) (
  input  wire logic         clk,
  input  wire logic [W-1:0] d,
  output      logic [W-1:0] q
);

  if (STAGES < 2) begin : g_bad_stages
    $error("roce_sync_level: STAGES must be at least 2");
  end

  // stage i is sync_ff[W*i +: W]; stage 0 samples d
  (* ASYNC_REG = "TRUE" *) logic [STAGES*W-1:0] sync_ff;

  always_ff @(posedge clk) sync_ff <= {sync_ff[(STAGES-1)*W-1:0], d};

  assign q = sync_ff[(STAGES-1)*W +: W];

endmodule

`resetall
