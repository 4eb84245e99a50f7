// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_rd_rsp: the READ response generator. For each response the responder asks for
// (s_rsp: roce_rec_pkg::rd_rsp_t): a READ as max(1, ceil(len / MTU)) packets (ONLY, or FIRST,
// MIDDLEs, LAST; AETH on FIRST/LAST/ONLY), packet k's payload read by DMA from dma + k * MTU;
// an atomic as one ATOMIC Acknowledge. DMA reads go ahead as far as the payload FIFO has room;
// each packet's tx_desc_t is offered on m_desc once its payload is in the FIFO (also while
// the packet before streams), and its payload follows that one's on m_axis_pay. A failed DMA
// read is counted (cnt_dma_err); the packet is still sent. Model blocks::rd_rsp;
// docs/engine-hdl.md.
// Latency: a one-packet READ response is offered 4 cycles after its DMA data's last beat (an
//   atomic ACK 3 cycles after its record is taken).
// Throughput: one payload beat per cycle in and out; m_axis_pay idles a cycle between two
//   packets' payloads when the consumer takes a descriptor while the payload before it
//   streams (roce_tx_arb does), else 4.
//
// Parameters:
//   DEPTH       payload FIFO depth in 64-byte beats (default 512 = 32 KiB).
//   DESC_DEPTH  packets in flight (default 16).

`resetall
`default_nettype none

module roce_rd_rsp #(
  parameter int DEPTH = 512,
  parameter int DESC_DEPTH = 16,
  localparam int RSP_W = 8 * roce_rec_pkg::RD_RSP_BYTES,
  localparam int DESC_W = 8 * roce_rec_pkg::TX_DESC_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,

  input  wire logic              s_rsp_valid,
  output      logic              s_rsp_ready,
  input  wire logic [RSP_W-1:0]  s_rsp_data,

  output      logic              m_dma_rd_valid,
  input  wire logic              m_dma_rd_ready,
  output      roce_rec_pkg::dma_req_t m_dma_rd,
  input  wire logic [511:0]      s_dma_rd_tdata,
  input  wire logic              s_dma_rd_tvalid,
  output      logic              s_dma_rd_tready,
  input  wire logic              s_dma_rd_tlast,
  input  wire logic              s_dma_rd_tuser,

  output      logic              m_desc_valid,
  input  wire logic              m_desc_ready,
  output      logic [DESC_W-1:0] m_desc,

  output      logic [511:0]      m_axis_pay_tdata,
  output      logic [63:0]       m_axis_pay_tkeep,
  output      logic              m_axis_pay_tvalid,
  input  wire logic              m_axis_pay_tready,
  output      logic              m_axis_pay_tlast,

  output      logic              cnt_dma_err
);

  localparam int AW = $clog2(DEPTH);
  localparam int QW = $clog2(DESC_DEPTH);

  localparam logic [7:0] OP_FIRST = 8'h0D;
  localparam logic [7:0] OP_MIDDLE = 8'h0E;
  localparam logic [7:0] OP_LAST = 8'h0F;
  localparam logic [7:0] OP_ONLY = 8'h10;
  localparam logic [7:0] OP_ATOMIC_ACK = 8'h12;
  localparam logic [7:0] SYN_ACK = 8'h1F;

  // ---------------------------------------------------------------- generator
  roce_rec_pkg::rd_rsp_t r;  // the response being split
  logic        r_busy;
  logic [31:0] r_left;       // bytes not yet in a packet
  logic [23:0] r_psn;
  logic [63:0] r_dma;
  logic        r_first;
  logic [15:0] r_mtu;       // a register (decoded as the request is taken): g_len's operand

  assign s_rsp_ready = !r_busy;

  // the next packet of the response
  logic [15:0] g_len;      // its payload bytes
  logic        g_last;
  logic [AW:0] g_beats;
  // r_big = more than an MTU left, a register: r_lm2 = r_left - 2 * mtu is kept beside
  // r_left (both stepped by the MTU), and after a full packet r_big is its sign and zero
  // test; no compare on the packet path. The beats of both packet kinds are ready beside.
  // r_left63 = r_left[15:0] + 63 is kept beside r_left too (stepped by the packet length),
  // so the last packet's beats are its bits [15:6] (exact when r_big is low: r_left is at
  // most an MTU then), no adder in front of the credit test.
  logic [32:0] r_lm2;
  logic        r_big;
  logic [15:0] r_left63;
  logic [AW:0] r_mtu_beats, r_left_beats;
  assign g_len = r.atomic ? 16'd0 : (r_big ? r_mtu : r_left[15:0]);
  assign g_last = r.atomic || !r_big;
  assign g_beats = r.atomic ? '0 : r_big ? r_mtu_beats : r_left_beats;
  assign r_left_beats = (AW + 1)'(r_left63[15:6]);

  // descriptor queue: {desc, beats}
  localparam int QE_W = DESC_W + AW + 1;
  logic [QE_W-1:0] dq [DESC_DEPTH];
  logic [QW:0]     dq_wr, dq_rd;
  logic            dq_full, dq_empty;
  // full: the pointers differ in their wrap bit only (no subtraction in front of `go`)
  assign dq_full = dq_wr[QW] != dq_rd[QW] && dq_wr[QW-1:0] == dq_rd[QW-1:0];
  assign dq_empty = dq_wr == dq_rd;

  // FIFO credit: the beats not reserved by issued reads (DEPTH less the beats reserved and
  // not yet sent out; a sent beat returns its credit the cycle after), so a packet fits
  // when its beats are at most this: one compare
  logic [AW:0] credit_free;
  logic        fits;
  logic fits_mtu, fits_left;
  assign fits_mtu = r_mtu_beats <= credit_free;
  assign fits_left = r_left_beats <= credit_free;
  assign fits = r.atomic || (r_big ? fits_mtu : fits_left);

  logic go;  // make the next packet this cycle (its read request once the last one is taken)
  assign go = r_busy && !dq_full && fits && !m_dma_rd_valid;

  logic [47:0] r_dma_hi1;   // r_dma[63:16] + 1
  logic [16:0] dma_lo;
  assign dma_lo = {1'b0, r_dma[15:0]} + {1'b0, g_len};

  logic [DESC_W-1:0] g_desc;
  always_comb begin
    g_desc = '0;
    g_desc[8*roce_rec_pkg::TX_DESC_QPN_OFF +: 24] = r.qpn;
    g_desc[8*roce_rec_pkg::TX_DESC_PSN_OFF +: 24] = r_psn;
    g_desc[8*roce_rec_pkg::TX_DESC_PAYLOAD_LEN_OFF +: 16] = g_len;
    g_desc[8*roce_rec_pkg::TX_DESC_AETH_SYNDROME_OFF +: 8] = SYN_ACK;
    g_desc[8*roce_rec_pkg::TX_DESC_AETH_MSN_OFF +: 24] = r.msn;
    if (r.atomic) begin
      g_desc[8*roce_rec_pkg::TX_DESC_OPCODE_OFF +: 8] = OP_ATOMIC_ACK;
      g_desc[8*roce_rec_pkg::TX_DESC_ATOMIC_ORIG_OFF +: 64] = r.orig;
    end else begin
      g_desc[8*roce_rec_pkg::TX_DESC_OPCODE_OFF +: 8] =
        r_first ? (g_last ? OP_ONLY : OP_FIRST) : (g_last ? OP_LAST : OP_MIDDLE);
      if (!r_first && !g_last) g_desc[8*roce_rec_pkg::TX_DESC_AETH_SYNDROME_OFF +: 8] = 8'h00;
      if (!r_first && !g_last) g_desc[8*roce_rec_pkg::TX_DESC_AETH_MSN_OFF +: 24] = 24'd0;
    end
  end

  // ---------------------------------------------------------------- payload FIFO
  (* ram_style = "block" *) logic [511:0] pf [DEPTH];
  logic [AW:0] pf_wr, pf_rd;
  logic [AW:0] arrived;  // beats written and not yet claimed by a descriptor
  assign s_dma_rd_tready = 1'b1;  // credit guarantees room
  always_ff @(posedge clk) begin
    if (s_dma_rd_tvalid) pf[pf_wr[AW-1:0]] <= s_dma_rd_tdata;
  end

  // ---------------------------------------------------------------- output
  logic [DESC_W-1:0] h_desc;
  logic [AW:0]       h_beats;
  assign {h_desc, h_beats} = dq[dq_rd[QW-1:0]];
  logic [15:0]       h_len;
  assign h_len = h_desc[8*roce_rec_pkg::TX_DESC_PAYLOAD_LEN_OFF +: 16];

  logic        streaming;     // a descriptor was taken, its beats go out
  logic [AW:0] s_left;        // beats still to send
  logic [15:0] s_bytes;       // bytes still to send
  logic        pend_v;        // a descriptor taken while the one before it still streams
  logic [AW:0] pend_beats;
  logic [15:0] pend_bytes;

  // a descriptor is offered once its beats are all in, also while the previous packet's
  // payload streams (taken then, its payload follows that one's)
  logic offer;
  assign offer = !dq_empty && !pend_v && arrived >= h_beats;
  logic s_issue;  // a beat goes to the output register
  assign s_issue = streaming && s_left != '0 && (!m_axis_pay_tvalid || m_axis_pay_tready);


  always_ff @(posedge clk) begin
    cnt_dma_err <= 1'b0;
    // generator
    if (m_dma_rd_valid && m_dma_rd_ready) m_dma_rd_valid <= 1'b0;
    if (!r_busy && s_rsp_valid) begin
      r <= s_rsp_data;
      r_busy <= 1'b1;
      r_left <= s_rsp_data[8*roce_rec_pkg::RD_RSP_LEN_OFF +: 32];
      r_left63 <= s_rsp_data[8*roce_rec_pkg::RD_RSP_LEN_OFF +: 16] + 16'd63;
      r_psn <= s_rsp_data[8*roce_rec_pkg::RD_RSP_PSN_OFF +: 24];
      r_dma <= s_rsp_data[8*roce_rec_pkg::RD_RSP_DMA_OFF +: 64];
      r_dma_hi1 <= s_rsp_data[8*roce_rec_pkg::RD_RSP_DMA_OFF + 16 +: 48] + 48'd1;
      begin
        logic [3:0]  lg;
        logic [31:0] len;
        lg = 4'd7 + s_rsp_data[8*roce_rec_pkg::RD_RSP_PATH_MTU_OFF +: 4];
        len = s_rsp_data[8*roce_rec_pkg::RD_RSP_LEN_OFF +: 32];
        r_big <= len > (32'd1 << lg);
        // 2 * MTU is 2^(8 + code) (codes 1..5): the subtraction on bits 32:8 only
        r_lm2 <= {{1'b0, len[31:8]} - (25'd1 << s_rsp_data[8*roce_rec_pkg::RD_RSP_PATH_MTU_OFF +: 4]),
                  len[7:0]};
        r_mtu_beats <= (AW + 1)'(((17'd1 << lg) + 17'd63) >> 6);
        r_mtu <= 16'd1 << lg;
      end
      r_first <= 1'b1;
    end
    if (go) begin
      dq[dq_wr[QW-1:0]] <= {g_desc, g_beats};
      dq_wr <= dq_wr + 1'b1;
      if (g_len != 16'd0) begin
        m_dma_rd_valid <= 1'b1;
        m_dma_rd.addr <= r_dma;
        m_dma_rd.len <= g_len;
      end
      r_psn <= r_psn + 24'd1;
      // the address in two parts: the low 16 bits plus the length, the high 48 from
      // themselves or their increment (kept ready)
      r_dma[15:0] <= dma_lo[15:0];
      if (dma_lo[16]) begin
        r_dma[63:16] <= r_dma_hi1;
        r_dma_hi1 <= r_dma_hi1 + 48'd1;
      end
      r_left <= r_left - {16'd0, g_len};
      r_left63 <= r_left63 - g_len;
      r_big <= !r_lm2[32] && r_lm2 != 33'd0;  // (meaningless after the last packet)
      r_lm2 <= r_lm2 - {17'd0, r_mtu};
      r_first <= 1'b0;
      if (g_last) r_busy <= 1'b0;
    end
    // DMA data in
    if (s_dma_rd_tvalid) begin
      pf_wr <= pf_wr + 1'b1;
      if (s_dma_rd_tuser && s_dma_rd_tlast) cnt_dma_err <= 1'b1;
    end
    // output
    if (m_axis_pay_tvalid && m_axis_pay_tready) m_axis_pay_tvalid <= 1'b0;
    if (s_issue) begin
      m_axis_pay_tvalid <= 1'b1;
      m_axis_pay_tdata <= pf[pf_rd[AW-1:0]];
      m_axis_pay_tkeep <= s_bytes >= 16'd64 ? '1 : ~({64{1'b1}} << s_bytes[5:0]);
      m_axis_pay_tlast <= s_left == (AW + 1)'(1);
      pf_rd <= pf_rd + 1'b1;
      s_left <= s_left - 1'b1;
      s_bytes <= s_bytes >= 16'd64 ? s_bytes - 16'd64 : 16'd0;
      if (s_left == (AW + 1)'(1)) streaming <= 1'b0;
    end
    if (!pend_v) begin  // the head's lengths, kept while its descriptor waits
      pend_beats <= h_beats;
      pend_bytes <= h_len;
    end
    if (m_desc_valid && m_desc_ready) begin
      m_desc_valid <= 1'b0;
      dq_rd <= dq_rd + 1'b1;
      if (!streaming) begin
        streaming <= h_beats != '0;
        s_left <= h_beats;
        s_bytes <= h_len;
      end else begin
        pend_v <= 1'b1;
      end
    end else if (offer && !m_desc_valid) begin
      m_desc_valid <= 1'b1;
      m_desc <= h_desc;
    end
    if (pend_v && !streaming) begin
      pend_v <= 1'b0;
      streaming <= pend_beats != '0;
      s_left <= pend_beats;
      s_bytes <= pend_bytes;
    end

    if (rst) begin
      r_busy <= 1'b0;
      m_dma_rd_valid <= 1'b0;
      dq_wr <= '0;
      dq_rd <= '0;
      pf_wr <= '0;
      pf_rd <= '0;
      m_desc_valid <= 1'b0;
      m_axis_pay_tvalid <= 1'b0;
      streaming <= 1'b0;
      pend_v <= 1'b0;
      cnt_dma_err <= 1'b0;
    end
  end

  // credit and arrival accounting
  logic [AW:0] claim;  // beats a descriptor takes from `arrived` when it is offered
  assign claim = (offer && !m_desc_valid) ? h_beats : '0;
  logic rel_q;  // a payload beat left last cycle: its credit returns a cycle late
  always_ff @(posedge clk) begin
    rel_q <= m_axis_pay_tvalid && m_axis_pay_tready;
    credit_free <= credit_free - (go ? g_beats : '0) + (rel_q ? (AW + 1)'(1) : '0);
    arrived <= arrived + (s_dma_rd_tvalid ? (AW + 1)'(1) : '0) - claim;
    if (rst) begin
      credit_free <= (AW + 1)'(DEPTH);
      rel_q <= 1'b0;
      arrived <= '0;
    end
  end

  logic unused;  // rd_rsp_t fields the generator keeps in its own counters
  assign unused = ^r.len ^ ^r.dma ^ ^r.psn ^ ^r.qpn_rsvd ^ ^r.psn_rsvd ^ ^r.msn_rsvd ^ ^r.rsvd_14 ^
                  ^r.rsvd_20 ^ ^r.atomic_rsvd ^ ^r.path_mtu;

endmodule

`resetall
