// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_dma_rd_arb: shares the engine's DMA read port among N clients. Requests are granted
// round-robin, one per cycle at most, and go out tagged with the client's index (m_req_tag);
// read data comes back with its tag on s_rsp_tid and is routed to that client (shared data
// bus, tvalid per client, tready from the addressed client). The DMA engine must return each
// read's beats in order and reads of one tag in request order.
// Ports: s_req holds N roce_rec_pkg::dma_req_t, client i at [DMA_REQ_W*i +: DMA_REQ_W].
// Latency: a request is on m_req the cycle after it is granted (a registered output); data
//   passes through combinationally.
// Throughput: one request per cycle.
//
// Parameters:
//   N      clients (at least 2).
//   TAG_W  tag width (at least clog2(N)).

`resetall
`default_nettype none

module roce_dma_rd_arb #(
  parameter int N = 2,
  parameter int TAG_W = 4
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [N-1:0]      s_req_valid,
  output      logic [N-1:0]      s_req_ready,
  input  wire logic [N*roce_rec_pkg::DMA_REQ_W-1:0] s_req,

  output      logic              m_req_valid,
  input  wire logic              m_req_ready,
  output      roce_rec_pkg::dma_req_t m_req,
  output      logic [TAG_W-1:0]  m_req_tag,

  input  wire logic [511:0]      s_rsp_tdata,
  input  wire logic              s_rsp_tvalid,
  output      logic              s_rsp_tready,
  input  wire logic              s_rsp_tlast,
  input  wire logic              s_rsp_tuser,
  input  wire logic [TAG_W-1:0]  s_rsp_tid,

  output      logic [511:0]      m_rsp_tdata,
  output      logic [N-1:0]      m_rsp_tvalid,
  input  wire logic [N-1:0]      m_rsp_tready,
  output      logic              m_rsp_tlast,
  output      logic              m_rsp_tuser
);

  localparam int IW = $clog2(N);

  logic [IW-1:0] last;   // the client granted last (round-robin)
  logic [N-1:0]  sel;    // one-hot: the client picked (none when no client offers)
  logic [IW-1:0] pick;
  logic          any;

  // Round-robin from last: the first offering client after last (last itself last).
  // Unrolled over the values of last so that every index is a constant: sel is a function
  // of last and s_req_valid alone (one LUT per bit for small N).
  always_comb begin
    sel = '0;
    for (int lv = 0; lv < N; lv++) begin
      if (last == IW'(lv)) begin
        for (int k = N; k >= 1; k--) begin
          // scan from last+1 upwards, wrapping; the lowest distance wins
          if (s_req_valid[(lv + k) % N]) begin
            sel = '0;
            sel[(lv + k) % N] = 1'b1;
          end
        end
      end
    end
    any = |s_req_valid;
    pick = '0;
    for (int i = 0; i < N; i++) begin
      if (sel[i]) pick = pick | IW'(i);
    end
  end

  logic take;
  assign take = any && (!m_req_valid || m_req_ready);
  assign s_req_ready = sel & {N{!m_req_valid || m_req_ready}};

  // one-hot (AND-OR) multiplexers
  roce_rec_pkg::dma_req_t sel_req;
  always_comb begin
    sel_req = '0;
    for (int i = 0; i < N; i++) begin
      if (sel[i]) begin
        sel_req = sel_req | s_req[roce_rec_pkg::DMA_REQ_W*i +: roce_rec_pkg::DMA_REQ_W];
      end
    end
  end

  always_ff @(posedge clk) begin
    if (m_req_valid && m_req_ready) m_req_valid <= 1'b0;
    if (take) begin
      m_req_valid <= 1'b1;
      m_req <= sel_req;
      m_req_tag <= TAG_W'(pick);
      last <= pick;
    end
    if (rst) begin
      m_req_valid <= 1'b0;
      last <= '0;
    end
  end

  assign m_rsp_tdata = s_rsp_tdata;
  assign m_rsp_tlast = s_rsp_tlast;
  assign m_rsp_tuser = s_rsp_tuser;
  always_comb begin
    m_rsp_tvalid = '0;
    s_rsp_tready = 1'b1;  // data for a tag no client has is discarded
    for (int i = 0; i < N; i++) begin
      if (s_rsp_tid == TAG_W'(i)) begin
        m_rsp_tvalid[i] = s_rsp_tvalid;
        s_rsp_tready = m_rsp_tready[i];
      end
    end
  end

endmodule

`resetall
