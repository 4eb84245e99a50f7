// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_axis_async_fifo: an AXI4-Stream FIFO between two unrelated clocks (block RAM, one
// clock per port): write side clk/rst (s_axis), read side m_clk/m_rst (m_axis). The read
// pointer crosses Gray-coded through two flip-flops (rp_gray_sync1/2); the committed write
// pointer crosses by a toggle handshake (wp_xfer, xfer_tog -> tog_sync1/2, m_ack_tog ->
// ack_sync1/2), which carries a frame commit's jump. rst and m_rst must be asserted together.
// Board constraints: set_max_delay -datapath_only of one destination-clock period from
//   rp_gray -> rp_gray_sync1, xfer_tog -> tog_sync1, m_ack_tog -> ack_sync1, wp_xfer -> wp_r;
//   no set_clock_groups between the clocks; the RAM stays in block RAM (ram_style).
// Latency: about 4 m_clk cycles from a beat (FRAME = 0) or a frame's tlast (FRAME = 1) being
//   written, up to one handshake round trip more. Throughput: one beat per cycle each side.
// docs/engine-hdl.md, "Board-side blocks".
//
// Parameters:
//   DATA_W, USER_W  tdata bits (tkeep DATA_W/8), tuser bits (per beat).
//   DEPTH           beats, a power of two >= 4.
//   FRAME           1: store and forward, frames leave without gaps (the CMAC's TX); frames
//                   must fit in DEPTH beats.
//   DROP_WHEN_FULL  1 (with FRAME = 1): s_axis_tready always high, a frame meeting a full FIFO
//                   is dropped whole, s_drop pulses at its last beat (the CMAC's RX).

`resetall
`default_nettype none

module roce_axis_async_fifo #(
  parameter int DATA_W = 512,
  parameter int USER_W = 1,
  parameter int DEPTH = 512,
  parameter int FRAME = 1,
  parameter int DROP_WHEN_FULL = 0,
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
  output      logic              s_drop,

  input  wire logic              m_clk,
  input  wire logic              m_rst,
  output      logic [DATA_W-1:0] m_axis_tdata,
  output      logic [KEEP_W-1:0] m_axis_tkeep,
  output      logic              m_axis_tvalid,
  input  wire logic              m_axis_tready,
  output      logic              m_axis_tlast,
  output      logic [USER_W-1:0] m_axis_tuser
);

  if (DEPTH < 4 || (DEPTH & (DEPTH - 1)) != 0) begin : g_bad_depth
    $error("roce_axis_async_fifo: DEPTH must be a power of two >= 4");
  end
  if (DROP_WHEN_FULL != 0 && FRAME == 0) begin : g_bad_mode
    $error("roce_axis_async_fifo: DROP_WHEN_FULL needs FRAME");
  end

  localparam int A = $clog2(DEPTH);
  localparam int W = DATA_W + KEEP_W + 1 + USER_W;

  function automatic logic [A:0] gray(input logic [A:0] b);
    gray = b ^ (b >> 1);
  endfunction
  function automatic logic [A:0] ungray(input logic [A:0] g);
    ungray = g;
    for (int i = A - 1; i >= 0; i--) ungray[i] = ungray[i + 1] ^ g[i];
  endfunction

  (* ram_style = "block" *) logic [W-1:0] mem [DEPTH];

  // ------------------------------------------------------------------ write side (clk)
  logic [A:0] wp;          // next beat written
  logic [A:0] wp_commit;   // beats the read side may see (whole frames, FRAME = 1)
  logic [A:0] wp_xfer;     // wp_commit as last handed to the read side
  logic       xfer_tog;
  (* ASYNC_REG = "TRUE" *) logic ack_sync1, ack_sync2;
  (* ASYNC_REG = "TRUE" *) logic [A:0] rp_gray_sync1, rp_gray_sync2;
  logic [A:0] rp_w;        // read pointer as the write side knows it
  assign rp_w = ungray(rp_gray_sync2);
  logic full;
  assign full = (wp - rp_w) == (A+1)'(DEPTH);
  logic dropping;          // the rest of this frame is discarded
  assign s_axis_tready = DROP_WHEN_FULL != 0 ? 1'b1 : !full;
  logic take;
  assign take = s_axis_tvalid && s_axis_tready;
  logic store;             // the beat goes into the RAM
  assign store = take && !dropping && !full;

  always_ff @(posedge clk) begin
    rp_gray_sync1 <= rp_gray;
    rp_gray_sync2 <= rp_gray_sync1;
    ack_sync1 <= m_ack_tog;
    ack_sync2 <= ack_sync1;
    if (ack_sync2 == xfer_tog && wp_xfer != wp_commit) begin
      wp_xfer <= wp_commit;
      xfer_tog <= !xfer_tog;
    end
    s_drop <= 1'b0;
    if (store) begin
      mem[wp[A-1:0]] <= {s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser};
      wp <= wp + 1'b1;
      if (s_axis_tlast || FRAME == 0) wp_commit <= wp + 1'b1;
    end
    if (DROP_WHEN_FULL != 0 && take && (dropping || full)) begin
      wp <= wp_commit;     // take back this frame's beats
      dropping <= !s_axis_tlast;
      s_drop <= s_axis_tlast;
    end
    if (rst) begin
      wp <= '0;
      wp_commit <= '0;
      wp_xfer <= '0;
      xfer_tog <= 1'b0;
      ack_sync1 <= 1'b0;
      ack_sync2 <= 1'b0;
      dropping <= 1'b0;
      s_drop <= 1'b0;
      rp_gray_sync1 <= '0;
      rp_gray_sync2 <= '0;
    end
  end

  // ------------------------------------------------------------------ read side (m_clk)
  logic [A:0] m_rp;
  logic [A:0] rp_gray;     // m_rp, Gray, registered
  (* ASYNC_REG = "TRUE" *) logic tog_sync1, tog_sync2;
  logic       m_ack_tog;
  logic [A:0] wp_r;        // the committed write pointer as the read side knows it
  logic m_load;
  assign m_load = wp_r != m_rp && (!m_axis_tvalid || m_axis_tready);

  always_ff @(posedge m_clk) begin
    tog_sync1 <= xfer_tog;
    tog_sync2 <= tog_sync1;
    if (tog_sync2 != m_ack_tog) begin
      wp_r <= wp_xfer;
      m_ack_tog <= tog_sync2;
    end
    if (m_axis_tvalid && m_axis_tready) m_axis_tvalid <= 1'b0;
    if (m_load) begin
      {m_axis_tdata, m_axis_tkeep, m_axis_tlast, m_axis_tuser} <= mem[m_rp[A-1:0]];
      m_axis_tvalid <= 1'b1;
      m_rp <= m_rp + 1'b1;
    end
    rp_gray <= gray(m_load ? m_rp + 1'b1 : m_rp);
    if (m_rst) begin
      m_rp <= '0;
      rp_gray <= '0;
      m_axis_tvalid <= 1'b0;
      tog_sync1 <= 1'b0;
      tog_sync2 <= 1'b0;
      m_ack_tog <= 1'b0;
      wp_r <= '0;
    end
  end

endmodule

`resetall
