// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_dma_axi: the engine's DMA ports (roce_engine m_dma_rd_* / s_dma_rd_* / m_dma_wr_* /
// m_axis_dma_wr_*) on an AXI4 memory-mapped master, 512-bit data, 64-bit addresses: the way
// a board attaches the engine to a PCIe IP's AXI slave toward host memory (e.g. the XDMA /
// QDMA "AXI slave bridge", s_axib_*). Model: firmware-model blocks::roce_dma_axi (which
// bursts go out, what lands where, what the engine gets back); lockstep test
// tests/tests/dma_axi_cosim.rs against an AXI slave with random latencies, READY
// backpressure, out-of-order responses across IDs and injected error responses.
//
// Reads. A request (s_dma_rd_addr, s_dma_rd_len bytes, s_dma_rd_tag) becomes AR bursts of
//   whole 64-byte beats (ARSIZE 6, INCR, 64-byte aligned ARADDR), split so no burst crosses
//   a MAX_BURST x 64-byte boundary (so never a 4 KiB one), ARID = the tag. R beats come back
//   in order per ID and may interleave across IDs at any beat; per tag the bridge keeps the
//   requests in flight (the one being returned plus RD_QUEUE behind it), realigns the data
//   from the address offset to lane 0 (one 512-bit carry per tag) and returns each read as
//   ceil(len/64) beats on m_dma_rd, tlast on the last, m_dma_rd_tid = the tag; bytes past
//   len in the last beat are zero. Reads of one tag come back in request order; reads of
//   different tags interleave as the slave interleaves them. A non-OKAY RRESP marks the
//   read failed: m_dma_rd_tuser is set on every beat from the first one that used an
//   errored AXI beat to the read's last beat (so the last beat always tells), and the data
//   is what the slave returned.
// Writes. A request (s_dma_wr_addr, s_dma_wr_len) and its data (lane-0 aligned,
//   ceil(len/64) beats, as roce_dma_wr_arb gives them) become AW bursts split as reads are
//   (AWID = WR_ID for every write, so the slave keeps them in order: a CQE written after a
//   payload cannot overtake it) and W beats realigned to the address offset with WSTRB
//   marking exactly the request's bytes (other lanes zero), WLAST at each burst's end.
//   W beats do not wait for their AW (AXI forbids WVALID waiting on AWREADY); AW normally
//   runs ahead since requests come before their data. BREADY is always high; a B response
//   SLVERR/DECERR raises wr_error for one cycle (a board feeds it to the engine's FATAL:
//   the data did not reach host memory). rd_error pulses per errored R beat (statistics).
// Zero-length requests are outside the port contract (the engine never makes one).
//
// Latency: a request's first burst is on AR/AW two cycles after the request is accepted
//   (its next bursts one per cycle); an R beat is on m_dma_rd two cycles after its handshake (the read's first output beat waits for its second AXI
//   beat when the address is not 64-byte aligned); a write data beat is on W the cycle
//   after it is accepted.
// Throughput: one beat per cycle both ways (64 B/cycle: 16 GB/s at 250 MHz) for long
//   transfers; per transfer at most one extra cycle (a read or write whose last AXI beat is
//   needed only for the carry), and one request accepted per cycle when each fits one burst.
//   tests/tests/dma_axi_cosim.rs measures it.
// Ready paths: s_dma_rd_ready depends on m_axi_arready, s_dma_wr_ready on m_axi_awready,
//   m_axi_rready on m_dma_rd_tready, s_axis_dma_wr_tready on m_axi_wready (one output
//   register each, no skid buffer). Every AXI and engine-side valid/data output is a register.
//
// Parameters:
//   TAG_W      engine read tag width (roce_engine DMA_TAG_W).
//   ID_W       AXI ID width (>= TAG_W; ARID is the tag zero-extended).
//   MAX_BURST  beats per burst at most: a power of two, 1..64 (64 = 4 KiB bursts).
//   RD_QUEUE   reads per tag accepted behind the one being returned (power of two >= 2).
//   WR_QUEUE   writes accepted ahead of the one whose data is moving (power of two >= 2).
//   WR_ID      AWID of every write.

`resetall
`default_nettype none

module roce_dma_axi #(
  parameter int TAG_W = 4,
  parameter int ID_W = 4,
  parameter int MAX_BURST = 64,
  parameter int RD_QUEUE = 16,
  parameter int WR_QUEUE = 4,
  parameter int WR_ID = 0
) (
  input  wire logic                 clk,
  input  wire logic                 rst,

  // ---- engine side: reads
  input  wire logic                 s_dma_rd_valid,
  output      logic                 s_dma_rd_ready,
  input  wire logic [63:0]          s_dma_rd_addr,
  input  wire logic [15:0]          s_dma_rd_len,
  input  wire logic [TAG_W-1:0]     s_dma_rd_tag,
  output      logic [511:0]         m_dma_rd_tdata,
  output      logic                 m_dma_rd_tvalid,
  input  wire logic                 m_dma_rd_tready,
  output      logic                 m_dma_rd_tlast,
  output      logic                 m_dma_rd_tuser,
  output      logic [TAG_W-1:0]     m_dma_rd_tid,

  // ---- engine side: writes
  input  wire logic                 s_dma_wr_valid,
  output      logic                 s_dma_wr_ready,
  input  wire logic [63:0]          s_dma_wr_addr,
  input  wire logic [15:0]          s_dma_wr_len,
  input  wire logic [511:0]         s_axis_dma_wr_tdata,
  input  wire logic [63:0]          s_axis_dma_wr_tkeep,
  input  wire logic                 s_axis_dma_wr_tvalid,
  output      logic                 s_axis_dma_wr_tready,
  input  wire logic                 s_axis_dma_wr_tlast,

  // ---- AXI4 master
  output      logic [ID_W-1:0]      m_axi_arid,
  output      logic [63:0]          m_axi_araddr,
  output      logic [7:0]           m_axi_arlen,
  output      logic [2:0]           m_axi_arsize,
  output      logic [1:0]           m_axi_arburst,
  output      logic                 m_axi_arvalid,
  input  wire logic                 m_axi_arready,
  input  wire logic [ID_W-1:0]      m_axi_rid,
  input  wire logic [511:0]         m_axi_rdata,
  input  wire logic [1:0]           m_axi_rresp,
  input  wire logic                 m_axi_rlast,
  input  wire logic                 m_axi_rvalid,
  output      logic                 m_axi_rready,

  output      logic [ID_W-1:0]      m_axi_awid,
  output      logic [63:0]          m_axi_awaddr,
  output      logic [7:0]           m_axi_awlen,
  output      logic [2:0]           m_axi_awsize,
  output      logic [1:0]           m_axi_awburst,
  output      logic                 m_axi_awvalid,
  input  wire logic                 m_axi_awready,
  output      logic [511:0]         m_axi_wdata,
  output      logic [63:0]          m_axi_wstrb,
  output      logic                 m_axi_wlast,
  output      logic                 m_axi_wvalid,
  input  wire logic                 m_axi_wready,
  input  wire logic [ID_W-1:0]      m_axi_bid,
  input  wire logic [1:0]           m_axi_bresp,
  input  wire logic                 m_axi_bvalid,
  output      logic                 m_axi_bready,

  // ---- status
  output      logic                 rd_error,
  output      logic                 wr_error
);

  if (ID_W < TAG_W) begin : g_bad_id
    $error("roce_dma_axi: ID_W must be at least TAG_W");
  end
  if (MAX_BURST < 1 || MAX_BURST > 64 || (MAX_BURST & (MAX_BURST - 1)) != 0) begin : g_bad_burst
    $error("roce_dma_axi: MAX_BURST must be a power of two in 1..64");
  end
  if (RD_QUEUE < 2 || (RD_QUEUE & (RD_QUEUE - 1)) != 0) begin : g_bad_rq
    $error("roce_dma_axi: RD_QUEUE must be a power of two >= 2");
  end
  if (WR_QUEUE < 2 || (WR_QUEUE & (WR_QUEUE - 1)) != 0) begin : g_bad_wq
    $error("roce_dma_axi: WR_QUEUE must be a power of two >= 2");
  end

  localparam int NT = 1 << TAG_W;
  localparam int QA = $clog2(RD_QUEUE);
  localparam int WA = $clog2(WR_QUEUE);
  localparam logic [6:0] MB = 7'(MAX_BURST);
  localparam logic [57:0] MB_MASK = 58'(MAX_BURST) - 58'd1;

  // AXI beats of a transfer of len bytes at an address whose low bits are off, and the
  // bytes of its last beat (1..64, as 7 bits)
  function automatic logic [10:0] axi_beats(input logic [5:0] off, input logic [15:0] len);
    axi_beats = 11'(({11'd0, off} + {1'b0, len} + 17'd63) >> 6);
  endfunction
  function automatic logic [10:0] data_beats(input logic [15:0] len);
    data_beats = 11'(({1'b0, len} + 17'd63) >> 6);
  endfunction
  // the next burst of a transfer at 64-byte beat b with n beats left: its beat count
  function automatic logic [10:0] burst_of(input logic [57:0] b, input logic [10:0] n);
    logic [6:0] room;
    room = MB - 7'(b & MB_MASK);
    burst_of = n < {4'd0, room} ? n : {4'd0, room};
  endfunction
  // lanes below k (k in 0..64)
  function automatic logic [63:0] lanes_below(input logic [6:0] k);
    lanes_below = k[6] ? '1 : ~({64{1'b1}} << k[5:0]);
  endfunction
  function automatic logic [511:0] bytes_of(input logic [511:0] d, input logic [63:0] m);
    for (int i = 0; i < 64; i++) bytes_of[8*i +: 8] = m[i] ? d[8*i +: 8] : 8'h00;
  endfunction

  // =============================================================================== reads
  // ---- request queue per tag: the read being returned (the head, in registers) and
  // RD_QUEUE behind it (qmem). An entry: offset, AXI beats, data beats, last-beat bytes.
  localparam int QE_W = 6 + 11 + 11 + 6;
  (* ram_style = "distributed" *) logic [QE_W-1:0] qmem [NT * RD_QUEUE];
  logic [NT*(QA+1)-1:0] q_wp, q_rp;
  logic [NT-1:0]        hv, h_first, h_err;
  logic [NT*6-1:0]      h_off, h_end;
  logic [NT*11-1:0]     h_ab, h_ob;

  function automatic logic [QA:0] q_count(input logic [NT*(QA+1)-1:0] wp,
                                          input logic [NT*(QA+1)-1:0] rp, input logic [TAG_W-1:0] t);
    q_count = wp[(QA+1)*t +: QA+1] - rp[(QA+1)*t +: QA+1];
  endfunction

  // ---- AR splitter
  logic              ar_busy;
  logic [57:0]       ar_b;      // next 64-byte beat to request
  logic [10:0]       ar_left;   // beats left to request
  logic [TAG_W-1:0]  ar_tag;
  logic [10:0]       ar_n;
  assign ar_n = burst_of(ar_b, ar_left);
  logic ar_issue, ar_done;
  assign ar_issue = ar_busy && (!m_axi_arvalid || m_axi_arready);
  assign ar_done = ar_issue && ar_left == ar_n;
  logic q_room;
  assign q_room = q_count(q_wp, q_rp, s_dma_rd_tag) != (QA+1)'(RD_QUEUE);
  assign s_dma_rd_ready = (!ar_busy || ar_done) && q_room;
  logic rd_acc;
  assign rd_acc = s_dma_rd_valid && s_dma_rd_ready;
  logic [QE_W-1:0] rd_ent;
  assign rd_ent = {s_dma_rd_addr[5:0], axi_beats(s_dma_rd_addr[5:0], s_dma_rd_len),
                   data_beats(s_dma_rd_len), s_dma_rd_len[5:0]};

  assign m_axi_arsize = 3'd6;
  assign m_axi_arburst = 2'b01;
  always_ff @(posedge clk) begin
    if (m_axi_arvalid && m_axi_arready) m_axi_arvalid <= 1'b0;
    if (ar_issue) begin
      m_axi_arvalid <= 1'b1;
      m_axi_arid <= ID_W'(ar_tag);
      m_axi_araddr <= {ar_b, 6'd0};
      m_axi_arlen <= 8'(ar_n - 11'd1);
      ar_b <= ar_b + 58'(ar_n);
      ar_left <= ar_left - ar_n;
      if (ar_done) ar_busy <= 1'b0;
    end
    if (rd_acc) begin
      ar_busy <= 1'b1;
      ar_b <= s_dma_rd_addr[63:6];
      ar_left <= axi_beats(s_dma_rd_addr[5:0], s_dma_rd_len);
      ar_tag <= s_dma_rd_tag;
    end
    if (rst) begin
      ar_busy <= 1'b0;
      m_axi_arvalid <= 1'b0;
    end
  end

  // ---- R input register
  logic              rq_v, rq_err, rq_take;
  logic [TAG_W-1:0]  rq_t;
  logic [511:0]      rq_d;
  assign m_axi_rready = !rq_v || rq_take;
  always_ff @(posedge clk) begin
    if (m_axi_rready) begin
      rq_v <= m_axi_rvalid;
      rq_t <= m_axi_rid[TAG_W-1:0];
      rq_d <= m_axi_rdata;
      rq_err <= m_axi_rresp[1];
    end
    if (rst) rq_v <= 1'b0;
  end
  logic unused_r;
  assign unused_r = m_axi_rlast ^ m_axi_rresp[0] ^ (ID_W > TAG_W ? ^m_axi_rid : 1'b0);

  // ---- realignment: per tag one carry (the previous AXI beat)
  (* ram_style = "distributed" *) logic [511:0] carry [NT];
  logic              fl_v;      // the read of tag fl_t still owes its last beat (from the carry)
  logic [TAG_W-1:0]  fl_t;
  logic [TAG_W-1:0]  ts;        // the tag served this cycle
  assign ts = fl_v ? fl_t : rq_t;
  logic [5:0]  s_off, s_end;
  logic [10:0] s_ab, s_ob;
  logic        s_first, s_err;
  assign s_off = h_off[6*ts +: 6];
  assign s_end = h_end[6*ts +: 6];
  assign s_ab = h_ab[11*ts +: 11];
  assign s_ob = h_ob[11*ts +: 11];
  assign s_first = h_first[ts];
  assign s_err = h_err[ts];
  logic [511:0] s_carry;
  assign s_carry = carry[ts];

  logic out_free;
  assign out_free = !m_dma_rd_tvalid || m_dma_rd_tready;
  logic beat_go;    // the beat in rq is processed
  assign beat_go = !fl_v && rq_v && hv[rq_t] && out_free;
  logic fl_go;
  assign fl_go = fl_v && out_free;
  assign rq_take = beat_go;
  // aligned (or a one-beat read): the beat alone gives the output beat; else the first beat
  // is only kept, and each later one completes the previous beat's output
  logic direct, keep_only, emit;
  assign direct = s_off == 6'd0 || (s_first && s_ab == 11'd1);
  assign keep_only = beat_go && !direct && s_first;
  assign emit = fl_go || (beat_go && !keep_only);
  logic [511:0] lo, hi;
  assign lo = fl_go ? s_carry : (direct ? rq_d : s_carry);
  assign hi = (fl_go || direct) ? 512'd0 : rq_d;
  logic [511:0] win;
  assign win = 512'({hi, lo} >> {s_off, 3'b000});
  logic        e_last, e_err;
  assign e_last = fl_go || s_ob == 11'd1;
  assign e_err = s_err || (!fl_go && rq_err);
  logic [63:0] e_mask;
  assign e_mask = e_last ? lanes_below({s_end == 6'd0, s_end}) : '1;
  logic need_fl;   // this beat was the last AXI beat, one output beat still to give
  assign need_fl = beat_go && !direct && !s_first && s_ab == 11'd1 && s_ob == 11'd2;
  logic done;      // the read of tag ts is complete this cycle
  assign done = emit && e_last;

  // ---- head reload / push
  logic [QA:0]      d_cnt;
  assign d_cnt = q_count(q_wp, q_rp, ts);
  logic [QE_W-1:0]  q_head;
  assign q_head = qmem[{ts, q_rp[(QA+1)*ts +: QA] }];
  logic [5:0]  qh_off, qh_end, re_off, re_end;
  logic [10:0] qh_ab, qh_ob, re_ab, re_ob;
  assign {qh_off, qh_ab, qh_ob, qh_end} = q_head;
  assign {re_off, re_ab, re_ob, re_end} = rd_ent;
  logic push_to_head_done;  // a request pushed this cycle becomes tag ts's head at once
  assign push_to_head_done = done && d_cnt == '0 && rd_acc && s_dma_rd_tag == ts;
  logic push_to_head_idle;  // ... or becomes the head of an idle tag
  assign push_to_head_idle = rd_acc && !hv[s_dma_rd_tag] && !(done && s_dma_rd_tag == ts);

  always_ff @(posedge clk) begin
    if (m_dma_rd_tvalid && m_dma_rd_tready) m_dma_rd_tvalid <= 1'b0;
    if (emit) begin
      m_dma_rd_tvalid <= 1'b1;
      m_dma_rd_tdata <= bytes_of(win, e_mask);
      m_dma_rd_tlast <= e_last;
      m_dma_rd_tuser <= e_err;
      m_dma_rd_tid <= ts;
    end
    if (beat_go) begin
      carry[rq_t] <= rq_d;
      h_ab[11*rq_t +: 11] <= s_ab - 11'd1;
      h_first[rq_t] <= 1'b0;
      h_err[rq_t] <= e_err;
      if (emit) h_ob[11*rq_t +: 11] <= s_ob - 11'd1;
    end
    if (fl_go) fl_v <= 1'b0;
    if (need_fl) begin
      fl_v <= 1'b1;
      fl_t <= rq_t;
    end
    // the head of tag ts is done: the next in its queue (or a request pushed now) follows
    if (done) begin
      if (d_cnt != '0) begin
        h_off[6*ts +: 6] <= qh_off;
        h_ab[11*ts +: 11] <= qh_ab;
        h_ob[11*ts +: 11] <= qh_ob;
        h_end[6*ts +: 6] <= qh_end;
        q_rp[(QA+1)*ts +: QA+1] <= q_rp[(QA+1)*ts +: QA+1] + 1'b1;
      end else if (!push_to_head_done) begin
        hv[ts] <= 1'b0;
      end
      h_first[ts] <= 1'b1;
      h_err[ts] <= 1'b0;
    end
    if (push_to_head_done || push_to_head_idle) begin
      hv[s_dma_rd_tag] <= 1'b1;
      h_off[6*s_dma_rd_tag +: 6] <= re_off;
      h_ab[11*s_dma_rd_tag +: 11] <= re_ab;
      h_ob[11*s_dma_rd_tag +: 11] <= re_ob;
      h_end[6*s_dma_rd_tag +: 6] <= re_end;
      h_first[s_dma_rd_tag] <= 1'b1;
      h_err[s_dma_rd_tag] <= 1'b0;
    end else if (rd_acc) begin
      qmem[{s_dma_rd_tag, q_wp[(QA+1)*s_dma_rd_tag +: QA]}] <= rd_ent;
      q_wp[(QA+1)*s_dma_rd_tag +: QA+1] <= q_wp[(QA+1)*s_dma_rd_tag +: QA+1] + 1'b1;
    end
    if (rst) begin
      m_dma_rd_tvalid <= 1'b0;
      fl_v <= 1'b0;
      hv <= '0;
      q_wp <= '0;
      q_rp <= '0;
    end
  end

  // ============================================================================== writes
  // ---- write descriptors from the AW side to the W side: offset, address bits 11:6 (the
  // beat's place in its 4 KiB page), data beats, AXI beats, end lane of the last AXI beat
  // (mod 64)
  localparam int WE_W = 6 + 6 + 11 + 11 + 6;
  logic [WE_W-1:0]  wq [WR_QUEUE];
  logic [WA:0]      wq_wp, wq_rp;
  logic             wq_full, wq_empty;
  assign wq_full = (wq_wp - wq_rp) == (WA+1)'(WR_QUEUE);
  assign wq_empty = wq_wp == wq_rp;

  logic              aw_busy;
  logic [57:0]       aw_b;
  logic [10:0]       aw_left;
  logic [10:0]       aw_n;
  assign aw_n = burst_of(aw_b, aw_left);
  logic aw_issue, aw_done;
  assign aw_issue = aw_busy && (!m_axi_awvalid || m_axi_awready);
  assign aw_done = aw_issue && aw_left == aw_n;
  assign s_dma_wr_ready = (!aw_busy || aw_done) && !wq_full;
  logic wr_acc;
  assign wr_acc = s_dma_wr_valid && s_dma_wr_ready;

  assign m_axi_awsize = 3'd6;
  assign m_axi_awburst = 2'b01;
  assign m_axi_awid = ID_W'(WR_ID);
  always_ff @(posedge clk) begin
    if (m_axi_awvalid && m_axi_awready) m_axi_awvalid <= 1'b0;
    if (aw_issue) begin
      m_axi_awvalid <= 1'b1;
      m_axi_awaddr <= {aw_b, 6'd0};
      m_axi_awlen <= 8'(aw_n - 11'd1);
      aw_b <= aw_b + 58'(aw_n);
      aw_left <= aw_left - aw_n;
      if (aw_done) aw_busy <= 1'b0;
    end
    if (wr_acc) begin
      aw_busy <= 1'b1;
      aw_b <= s_dma_wr_addr[63:6];
      aw_left <= axi_beats(s_dma_wr_addr[5:0], s_dma_wr_len);
      wq[wq_wp[WA-1:0]] <= {s_dma_wr_addr[5:0], s_dma_wr_addr[11:6], data_beats(s_dma_wr_len),
                            axi_beats(s_dma_wr_addr[5:0], s_dma_wr_len),
                            6'(s_dma_wr_addr[5:0] + s_dma_wr_len[5:0])};
      wq_wp <= wq_wp + 1'b1;
    end
    if (rst) begin
      aw_busy <= 1'b0;
      m_axi_awvalid <= 1'b0;
      wq_wp <= '0;
    end
  end

  // ---- W: data realigned from lane 0 to the address offset
  logic [5:0]   w_off, w_a, w_end;
  logic [10:0]  w_ib, w_ab;
  assign {w_off, w_a, w_ib, w_ab, w_end} = wq[wq_rp[WA-1:0]];
  logic [10:0]  w_j;       // AXI beat of the write at the queue head
  logic [511:0] w_carry;   // the previous data beat
  logic w_free, w_need, w_go, w_lastb;
  assign w_free = !m_axi_wvalid || m_axi_wready;
  assign w_need = w_j < w_ib;
  assign s_axis_dma_wr_tready = !wq_empty && w_need && w_free;
  assign w_go = !wq_empty && w_free && (!w_need || s_axis_dma_wr_tvalid);
  assign w_lastb = w_j == w_ab - 11'd1;
  logic [511:0] w_win;
  assign w_win = 512'({w_need ? s_axis_dma_wr_tdata : 512'd0, w_j == '0 ? 512'd0 : w_carry} >>
                      {7'd64 - {1'b0, w_off}, 3'b000});
  logic [63:0] w_strb;
  assign w_strb = (w_lastb ? lanes_below({w_end == 6'd0, w_end}) : '1) &
                  ~(w_j == '0 ? lanes_below({1'b0, w_off}) : 64'd0);
  logic [5:0] w_pos;       // the beat's index within its burst window
  assign w_pos = w_a + w_j[5:0];
  logic w_blast;
  assign w_blast = w_lastb || (7'(w_pos) & 7'(MAX_BURST - 1)) == 7'(MAX_BURST - 1);

  always_ff @(posedge clk) begin
    if (m_axi_wvalid && m_axi_wready) m_axi_wvalid <= 1'b0;
    if (w_go) begin
      m_axi_wvalid <= 1'b1;
      m_axi_wdata <= bytes_of(w_win, w_strb);
      m_axi_wstrb <= w_strb;
      m_axi_wlast <= w_blast;
      if (w_need) w_carry <= s_axis_dma_wr_tdata;
      w_j <= w_j + 11'd1;
      if (w_lastb) begin
        w_j <= '0;
        wq_rp <= wq_rp + 1'b1;
      end
    end
    if (rst) begin
      m_axi_wvalid <= 1'b0;
      w_j <= '0;
      wq_rp <= '0;
    end
  end
  logic unused_w;
  assign unused_w = ^s_axis_dma_wr_tkeep ^ s_axis_dma_wr_tlast;

  // ---- B
  assign m_axi_bready = 1'b1;
  always_ff @(posedge clk) begin
    wr_error <= m_axi_bvalid && m_axi_bresp[1];
    rd_error <= m_axi_rvalid && m_axi_rready && m_axi_rresp[1];
    if (rst) begin
      wr_error <= 1'b0;
      rd_error <= 1'b0;
    end
  end
  logic unused_b;
  assign unused_b = ^m_axi_bid ^ m_axi_bresp[0];

endmodule

`resetall
