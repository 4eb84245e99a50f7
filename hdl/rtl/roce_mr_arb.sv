// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_mr_arb: shares roce_mr_check's request port among N clients. Requests are granted
// round-robin (a client keeps the grant while it holds valid, so a burst of checks goes out
// back to back) and carry the client's index in the top bits of the user field; results come
// back in request order and are routed to their client by those bits.
// Ports: s_req holds N roce_rec_pkg::mr_req_t, client i at [MR_REQ_W*i +: MR_REQ_W]; m_req one.
// Latency: none added (requests and results pass through combinationally).
// Throughput: one request per cycle.
//
// Parameters:
//   N       clients (at least 2).
//   USER_W  roce_mr_check's user width; each client has USER_W - IW bits of its own.

`resetall
`default_nettype none

module roce_mr_arb #(
  parameter int N = 2,
  parameter int USER_W = 16,
  localparam int IW = $clog2(N),
  localparam int CU_W = USER_W - IW
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [N-1:0]      s_valid,
  output      logic [N-1:0]      s_ready,
  input  wire logic [N*roce_rec_pkg::MR_REQ_W-1:0] s_req,
  input  wire logic [N*CU_W-1:0] s_user,

  output      logic              m_valid,
  input  wire logic              m_ready,
  output      roce_rec_pkg::mr_req_t m_req,
  output      logic [USER_W-1:0] m_user,

  input  wire logic              s_res_valid,
  output      logic              s_res_ready,
  input  wire logic [USER_W-1:0] s_res_user,
  output      logic [N-1:0]      m_res_valid,
  input  wire logic [N-1:0]      m_res_ready,
  output      logic [CU_W-1:0]   m_res_user
);

  logic [IW-1:0] g;       // the client holding the grant
  logic          held;    // g holds it (it offered last cycle and was not done)
  logic [N-1:0]  sel;     // one-hot: the client picked (g when none offers)
  logic [IW-1:0] pick;
  logic          any;

  // Round-robin from g: the first offering client after g (g itself last), unless g holds
  // the grant and still offers. Unrolled over the values of g so that every index is a
  // constant: sel is a function of g, held and s_valid alone (one LUT for small N).
  always_comb begin
    sel = '0;
    for (int gv = 0; gv < N; gv++) begin
      if (g == IW'(gv)) begin
        sel[gv] = 1'b1;
        for (int k = N; k >= 1; k--) begin
          if (s_valid[(gv + k) % N]) begin
            sel = '0;
            sel[(gv + k) % N] = 1'b1;
          end
        end
        if (held && s_valid[gv]) begin
          sel = '0;
          sel[gv] = 1'b1;
        end
      end
    end
    any = |s_valid;
    pick = '0;
    for (int i = 0; i < N; i++) begin
      if (sel[i]) pick = IW'(i);
    end
  end

  // one-hot (AND-OR) multiplexers
  always_comb begin
    m_valid = any;
    m_req = '0;
    m_user = '0;
    for (int i = 0; i < N; i++) begin
      if (sel[i]) begin
        m_req = m_req | s_req[roce_rec_pkg::MR_REQ_W*i +: roce_rec_pkg::MR_REQ_W];
        m_user = m_user | {IW'(i), s_user[CU_W*i +: CU_W]};
      end
    end
    // the picked client offers unless none does
    s_ready = sel & s_valid & {N{m_ready}};
  end

  always_ff @(posedge clk) begin
    g <= pick;
    held <= any;
    if (rst) begin
      g <= '0;
      held <= 1'b0;
    end
  end

  logic [IW-1:0] rc;
  assign rc = s_res_user[USER_W-1 -: IW];
  assign m_res_user = s_res_user[CU_W-1:0];
  always_comb begin
    m_res_valid = '0;
    s_res_ready = 1'b1;
    for (int i = 0; i < N; i++) begin
      if (rc == IW'(i)) begin
        m_res_valid[i] = s_res_valid;
        s_res_ready = m_res_ready[i];
      end
    end
  end

endmodule

`resetall
