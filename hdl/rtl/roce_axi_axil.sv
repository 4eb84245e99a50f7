// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_axi_axil: an AXI4 slave (wide data, IDs, bursts) in front of a 32-bit AXI4-Lite
// master: a PCIe bridge's BAR master (e.g. XDMA's m_axib_*) to the engine's register port.
// Each 32-bit word a beat covers (writes: with a strobe set) is one AXI4-Lite access, one at a
// time, in order; INCR addressing (WRAP and FIXED as INCR); B carries the worst response of
// the burst, R of the beat (DECERR > SLVERR > OKAY). Address bits above ADDR_W are dropped.
// Ports: s_axi_* (AXI4 slave), m_axil_* (AXI4-Lite master).
// Latency: an access's AXI4-Lite request is out the cycle after it (and its W beat) is taken;
//   B/R one cycle after the last AXI4-Lite response.
// Throughput: one register access in flight per direction (reads and writes independent).
// docs/engine-hdl.md, "Board-side blocks".
//
// Parameters:
//   DATA_W    AXI4 data width (64..1024, a power of two).
//   ID_W      AXI4 ID width.
//   S_ADDR_W  AXI4 address width.
//   ADDR_W    AXI4-Lite address width (the engine's: 16).

`resetall
`default_nettype none

module roce_axi_axil #(
  parameter int DATA_W = 512,
  parameter int ID_W = 4,
  parameter int S_ADDR_W = 64,
  parameter int ADDR_W = 16,
  localparam int STRB_W = DATA_W / 8
) (
  input  wire logic                clk,
  input  wire logic                rst,

  input  wire logic [ID_W-1:0]     s_axi_awid,
  input  wire logic [S_ADDR_W-1:0] s_axi_awaddr,
  input  wire logic [7:0]          s_axi_awlen,
  input  wire logic [2:0]          s_axi_awsize,
  input  wire logic [1:0]          s_axi_awburst,
  input  wire logic                s_axi_awvalid,
  output      logic                s_axi_awready,
  input  wire logic [DATA_W-1:0]   s_axi_wdata,
  input  wire logic [STRB_W-1:0]   s_axi_wstrb,
  input  wire logic                s_axi_wlast,
  input  wire logic                s_axi_wvalid,
  output      logic                s_axi_wready,
  output      logic [ID_W-1:0]     s_axi_bid,
  output      logic [1:0]          s_axi_bresp,
  output      logic                s_axi_bvalid,
  input  wire logic                s_axi_bready,
  input  wire logic [ID_W-1:0]     s_axi_arid,
  input  wire logic [S_ADDR_W-1:0] s_axi_araddr,
  input  wire logic [7:0]          s_axi_arlen,
  input  wire logic [2:0]          s_axi_arsize,
  input  wire logic [1:0]          s_axi_arburst,
  input  wire logic                s_axi_arvalid,
  output      logic                s_axi_arready,
  output      logic [ID_W-1:0]     s_axi_rid,
  output      logic [DATA_W-1:0]   s_axi_rdata,
  output      logic [1:0]          s_axi_rresp,
  output      logic                s_axi_rlast,
  output      logic                s_axi_rvalid,
  input  wire logic                s_axi_rready,

  output      logic [ADDR_W-1:0]   m_axil_awaddr,
  output      logic                m_axil_awvalid,
  input  wire logic                m_axil_awready,
  output      logic [31:0]         m_axil_wdata,
  output      logic [3:0]          m_axil_wstrb,
  output      logic                m_axil_wvalid,
  input  wire logic                m_axil_wready,
  input  wire logic [1:0]          m_axil_bresp,
  input  wire logic                m_axil_bvalid,
  output      logic                m_axil_bready,
  output      logic [ADDR_W-1:0]   m_axil_araddr,
  output      logic                m_axil_arvalid,
  input  wire logic                m_axil_arready,
  input  wire logic [31:0]         m_axil_rdata,
  input  wire logic [1:0]          m_axil_rresp,
  input  wire logic                m_axil_rvalid,
  output      logic                m_axil_rready
);

  if (DATA_W < 64 || DATA_W > 1024 || (DATA_W & (DATA_W - 1)) != 0) begin : g_bad_width
    $error("roce_axi_axil: DATA_W must be a power of two in 64..1024");
  end
  if (ADDR_W > S_ADDR_W || ADDR_W < $clog2(DATA_W / 8) + 1) begin : g_bad_addr
    $error("roce_axi_axil: ADDR_W out of range");
  end

  localparam int NW = DATA_W / 32;        // 32-bit words per beat
  localparam int WI = $clog2(NW);         // word index bits
  localparam int LSB = WI + 2;            // beat-offset bits

  // the worse of two responses (DECERR 3 > SLVERR 2 > OKAY 0)
  function automatic logic [1:0] worse(input logic [1:0] a, input logic [1:0] b);
    worse = (a[1] && (!b[1] || a[0])) ? a : (b[1] ? b : a);
  endfunction
  // the next beat's address of an INCR burst of 2^size-byte beats
  // (a aligned down to the size, plus the size: the bits below the size set, plus one)
  function automatic logic [ADDR_W-1:0] next_beat(input logic [ADDR_W-1:0] a, input logic [2:0] size);
    logic [ADDR_W-1:0] low;
    for (int i = 0; i < ADDR_W; i++) low[i] = i < 32'(size);
    next_beat = (a | low) + 1'b1;
  endfunction
  // lowest set bit of m, one-hot (zero when m is)
  function automatic logic [NW-1:0] lowest_oh(input logic [NW-1:0] m);
    logic found;
    found = 1'b0;
    for (int i = 0; i < NW; i++) begin
      lowest_oh[i] = m[i] && !found;
      found = found || m[i];
    end
  endfunction

  // ================================================================== writes
  typedef enum logic [2:0] { W_IDLE, W_BEAT, W_WORD, W_RESP, W_B } wst_t;
  wst_t wst;
  logic [ID_W-1:0]   w_id;
  logic [ADDR_W-1:0] w_addr;     // current beat's address
  logic [2:0]        w_size;
  logic [7:0]        w_left;     // beats after the current one
  logic [DATA_W-1:0] w_data;
  logic [STRB_W-1:0] w_strb;
  logic [NW-1:0]     w_todo;     // words of the beat still to write
  logic [NW-1:0]     w_sel;      // one-hot: its lowest (the word being written), kept with it
  logic [1:0]        w_resp;
  logic              w_aw_done, w_w_done;
  logic [WI-1:0]     w_k;

  function automatic logic [NW-1:0] words_of(input logic [STRB_W-1:0] st);
    for (int i = 0; i < NW; i++) words_of[i] = |st[4*i +: 4];
  endfunction

  assign s_axi_awready = wst == W_IDLE;
  assign s_axi_wready = wst == W_BEAT;
  // lowest_oh(words_of(s_axi_wstrb)) in LUT levels on kept wires (so that the mapper does
  // not merge them into wide LUT + MUXF chains): the words, any word per group of four,
  // any group below each group, then the word's own test.
  localparam int NQ = (NW + 3) / 4;
  (* keep *) logic [NW-1:0] s_words;
  (* keep *) logic [NQ-1:0] s_qany, s_qbelow;
  logic [NW-1:0] s_sel;
  assign s_words = words_of(s_axi_wstrb);
  always_comb begin
    for (int q = 0; q < NQ; q++) begin
      s_qany[q] = 1'b0;
      for (int i = 4 * q; i < 4 * q + 4; i++) begin
        if (i < NW) s_qany[q] = s_qany[q] | s_words[i];
      end
    end
    for (int q = 0; q < NQ; q++) begin
      s_qbelow[q] = 1'b0;
      for (int r = 0; r < q; r++) s_qbelow[q] = s_qbelow[q] | s_qany[r];
    end
    for (int i = 0; i < NW; i++) begin
      s_sel[i] = s_words[i] && !s_qbelow[i / 4];
      for (int j = 4 * (i / 4); j < i; j++) s_sel[i] = s_sel[i] && !s_words[j];
    end
  end

  assign m_axil_awvalid = wst == W_WORD && w_todo != '0 && !w_aw_done;
  assign m_axil_wvalid = wst == W_WORD && w_todo != '0 && !w_w_done;
  assign m_axil_awaddr = {w_addr[ADDR_W-1:LSB], w_k, 2'b00};
  // one-hot (AND-OR) selects of the word being written (word 0 when none is left)
  logic [NW-1:0] w_osel;
  always_comb begin
    w_osel = w_sel;
    w_osel[0] = w_sel[0] || w_todo == '0;
    w_k = '0;
    m_axil_wdata = '0;
    m_axil_wstrb = '0;
    for (int i = 0; i < NW; i++) begin
      if (w_osel[i]) begin
        w_k = w_k | WI'(i);
        m_axil_wdata = m_axil_wdata | w_data[32*i +: 32];
        m_axil_wstrb = m_axil_wstrb | w_strb[4*i +: 4];
      end
    end
  end
  assign m_axil_bready = wst == W_RESP;

  always_ff @(posedge clk) begin
    case (wst)
      W_IDLE: if (s_axi_awvalid) begin
        w_id <= s_axi_awid;
        w_addr <= s_axi_awaddr[ADDR_W-1:0];
        w_size <= s_axi_awsize;
        w_left <= s_axi_awlen;
        w_resp <= 2'b00;
        wst <= W_BEAT;
      end
      W_BEAT: if (s_axi_wvalid) begin
        w_data <= s_axi_wdata;
        w_strb <= s_axi_wstrb;
        w_todo <= words_of(s_axi_wstrb);
        w_sel <= s_sel;
        w_aw_done <= 1'b0;
        w_w_done <= 1'b0;
        wst <= W_WORD;
      end
      W_WORD: begin
        if (w_todo == '0) begin  // nothing (more) to write in this beat
          if (w_left == 8'd0) begin
            wst <= W_B;
            s_axi_bvalid <= 1'b1;
            s_axi_bid <= w_id;
            s_axi_bresp <= w_resp;
          end else begin
            w_left <= w_left - 8'd1;
            w_addr <= next_beat(w_addr, w_size);
            wst <= W_BEAT;
          end
        end else begin
          if (m_axil_awvalid && m_axil_awready) w_aw_done <= 1'b1;
          if (m_axil_wvalid && m_axil_wready) w_w_done <= 1'b1;
          if ((w_aw_done || m_axil_awready) && (w_w_done || m_axil_wready)) wst <= W_RESP;
        end
      end
      W_RESP: if (m_axil_bvalid) begin
        w_resp <= worse(w_resp, m_axil_bresp);
        w_todo <= w_todo & ~w_sel;
        w_sel <= lowest_oh(w_todo & ~w_sel);
        w_aw_done <= 1'b0;
        w_w_done <= 1'b0;
        wst <= W_WORD;
      end
      W_B: if (s_axi_bready) begin
        s_axi_bvalid <= 1'b0;
        wst <= W_IDLE;
      end
      default: wst <= W_IDLE;
    endcase
    if (rst) begin
      wst <= W_IDLE;
      s_axi_bvalid <= 1'b0;
    end
  end
  logic unused_w;
  assign unused_w = s_axi_wlast ^ ^s_axi_awburst ^
                    ^(s_axi_awaddr >> ADDR_W);

  // ================================================================== reads
  typedef enum logic [1:0] { R_IDLE, R_WORD, R_WAIT, R_BEAT } rd_st_t;
  rd_st_t rds;
  logic [ADDR_W-1:0] r_addr;
  logic [2:0]        r_size;
  logic [7:0]        r_left;
  logic [WI-1:0]     r_k;        // word being read
  logic [WI:0]       r_n;        // words left in this beat (after r_k)
  logic [1:0]        r_resp;

  // words of a beat of 2^size bytes at address a: the first, and how many follow it
  function automatic logic [WI-1:0] first_word(input logic [WI-1:0] aw, input logic [2:0] size);
    logic [WI-1:0] m;
    m = size > 3'd2 ? WI'((1 << (size - 3'd2)) - 1) : '0;
    first_word = aw & ~m;
  endfunction
  function automatic logic [WI:0] more_words(input logic [2:0] size);
    if (size <= 3'd2) more_words = '0;
    else if (32'(size) - 2 >= WI) more_words = (WI+1)'(NW - 1);  // at most the whole beat
    else more_words = (WI+1)'((1 << (size - 3'd2)) - 1);
  endfunction

  logic [ADDR_W-1:0] r_next;
  assign r_next = next_beat(r_addr, r_size);
  assign s_axi_arready = rds == R_IDLE;
  assign m_axil_arvalid = rds == R_WORD;
  assign m_axil_araddr = {r_addr[ADDR_W-1:LSB], r_k, 2'b00};
  assign m_axil_rready = rds == R_WAIT;

  always_ff @(posedge clk) begin
    case (rds)
      R_IDLE: if (s_axi_arvalid) begin
        s_axi_rid <= s_axi_arid;
        r_addr <= s_axi_araddr[ADDR_W-1:0];
        r_size <= s_axi_arsize;
        r_left <= s_axi_arlen;
        r_k <= first_word(s_axi_araddr[LSB-1:2], s_axi_arsize);
        r_n <= more_words(s_axi_arsize);
        r_resp <= 2'b00;
        s_axi_rdata <= '0;
        rds <= R_WORD;
      end
      R_WORD: if (m_axil_arready) rds <= R_WAIT;
      R_WAIT: if (m_axil_rvalid) begin
        for (int i = 0; i < NW; i++) begin
          if (r_k == WI'(i)) s_axi_rdata[32*i +: 32] <= m_axil_rdata;
        end
        r_resp <= worse(r_resp, m_axil_rresp);
        if (r_n == '0) begin
          s_axi_rvalid <= 1'b1;
          s_axi_rresp <= worse(r_resp, m_axil_rresp);
          s_axi_rlast <= r_left == 8'd0;
          rds <= R_BEAT;
        end else begin
          r_k <= r_k + 1'b1;
          r_n <= r_n - 1'b1;
          rds <= R_WORD;
        end
      end
      R_BEAT: if (s_axi_rready) begin
        s_axi_rvalid <= 1'b0;
        if (r_left == 8'd0) begin
          rds <= R_IDLE;
        end else begin
          r_left <= r_left - 8'd1;
          r_addr <= r_next;
          r_k <= first_word(r_next[LSB-1:2], r_size);
          r_n <= more_words(r_size);
          r_resp <= 2'b00;
          s_axi_rdata <= '0;
          rds <= R_WORD;
        end
      end
      default: rds <= R_IDLE;
    endcase
    if (rst) begin
      rds <= R_IDLE;
      s_axi_rvalid <= 1'b0;
    end
  end
  logic unused_r;
  assign unused_r = ^s_axi_arburst ^ ^(s_axi_araddr >> ADDR_W);

endmodule

`resetall
