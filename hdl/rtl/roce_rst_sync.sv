// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_rst_sync: a reset bridge. rst_out rises asynchronously with arst (so a domain whose
// clock is not running yet is still held in reset) and falls synchronously, STAGES cycles of
// clk after arst falls (every flip-flop of the domain leaves reset on the same edge). arst may
// come from any clock domain or a pin; the chain is ASYNC_REG. Board constraints: no timing
// from arst to the chain (set_false_path to the flip-flops' asynchronous set pins).
// Latency: STAGES cycles on release.
//
// Parameters:
//   STAGES  flip-flops in the chain (>= 2).

`resetall
`default_nettype none

module roce_rst_sync #(
  parameter int STAGES = 3
) (
  input  wire logic clk,
  input  wire logic arst,
  output      logic rst_out
);

  if (STAGES < 2) begin : g_bad_stages
    $error("roce_rst_sync: STAGES must be at least 2");
  end

  (* ASYNC_REG = "TRUE" *) logic [STAGES-1:0] rst_sync;

  always_ff @(posedge clk or posedge arst) begin
    if (arst) rst_sync <= '1;
    else rst_sync <= {rst_sync[STAGES-2:0], 1'b0};
  end

  assign rst_out = rst_sync[STAGES-1];

endmodule

`resetall
