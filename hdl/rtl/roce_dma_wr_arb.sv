// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_dma_wr_arb: shares the engine's DMA write port among N clients. Each client writes a
// request (address, length), then its data (lane-0 aligned, ceil(length/64) beats, tlast on
// the last), possibly after later requests. One client's whole write is granted at a time,
// round-robin, so writes never interleave and stay in order per client; a client is granted
// only when it offers both a request and a data beat, so a client whose data waits does not
// hold the port.
// Ports: s_req holds N roce_rec_pkg::dma_req_t, client i at [DMA_REQ_W*i +: DMA_REQ_W].
// Latency: request and data pass through combinationally once granted; a grant takes one
//   cycle after the previous write's last beat.
// Throughput: one beat per cycle within a write; one idle cycle between writes.
//
// Parameters:
//   N  clients (at least 2).

`resetall
`default_nettype none

module roce_dma_wr_arb #(
  parameter int N = 2
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic [N-1:0]      s_req_valid,
  output      logic [N-1:0]      s_req_ready,
  input  wire logic [N*roce_rec_pkg::DMA_REQ_W-1:0] s_req,
  input  wire logic [N*512-1:0]  s_tdata,
  input  wire logic [N*64-1:0]   s_tkeep,
  input  wire logic [N-1:0]      s_tvalid,
  output      logic [N-1:0]      s_tready,
  input  wire logic [N-1:0]      s_tlast,

  output      logic              m_req_valid,
  input  wire logic              m_req_ready,
  output      roce_rec_pkg::dma_req_t m_req,
  output      logic [511:0]      m_tdata,
  output      logic [63:0]       m_tkeep,
  output      logic              m_tvalid,
  input  wire logic              m_tready,
  output      logic              m_tlast
);

  localparam int IW = $clog2(N);

  typedef enum logic [1:0] { G_IDLE, G_REQ, G_DATA } gstate_t;
  gstate_t st;
  logic [IW-1:0] last;   // the client granted last (round-robin)
  logic [N-1:0]  g;      // one-hot: the client holding the grant

  logic [N-1:0]  sel;    // one-hot: the client picked (none when no client offers)
  logic [IW-1:0] pick;
  logic          any;
  logic [N-1:0]  offer;  // clients offering a request and a data beat

  // Round-robin from last: the first offering client after last (last itself last).
  // Unrolled over the values of last so that every index is a constant.
  always_comb begin
    offer = s_req_valid & s_tvalid;
    sel = '0;
    for (int lv = 0; lv < N; lv++) begin
      if (last == IW'(lv)) begin
        for (int k = N; k >= 1; k--) begin
          if (offer[(lv + k) % N]) begin
            sel = '0;
            sel[(lv + k) % N] = 1'b1;
          end
        end
      end
    end
    any = |offer;
    pick = '0;
    for (int i = 0; i < N; i++) begin
      if (sel[i]) pick = pick | IW'(i);
    end
  end

  // one-hot (AND-OR) multiplexers on the grant holder
  always_comb begin
    m_req = '0;
    m_tdata = '0;
    m_tkeep = '0;
    m_tlast = 1'b0;
    for (int i = 0; i < N; i++) begin
      if (g[i]) begin
        m_req = m_req | s_req[roce_rec_pkg::DMA_REQ_W*i +: roce_rec_pkg::DMA_REQ_W];
        m_tdata = m_tdata | s_tdata[512*i +: 512];
        m_tkeep = m_tkeep | s_tkeep[64*i +: 64];
        m_tlast = m_tlast | s_tlast[i];
      end
    end
    m_req_valid = st == G_REQ && |(g & s_req_valid);
    m_tvalid = st == G_DATA && |(g & s_tvalid);
    s_req_ready = g & {N{st == G_REQ && m_req_ready}};
    s_tready = g & {N{st == G_DATA && m_tready}};
  end

  always_ff @(posedge clk) begin
    case (st)
      G_IDLE: if (any) begin
        g <= sel;
        last <= pick;
        st <= G_REQ;
      end
      G_REQ: if (m_req_valid && m_req_ready) st <= G_DATA;
      G_DATA: if (m_tvalid && m_tready && m_tlast) st <= G_IDLE;
      default: st <= G_IDLE;
    endcase
    if (rst) begin
      st <= G_IDLE;
      last <= '0;
      g <= N'(1);
    end
  end

endmodule

`resetall
