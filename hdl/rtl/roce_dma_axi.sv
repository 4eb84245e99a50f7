// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_dma_axi: the engine's DMA ports on an AXI4 master (512-bit data, 64-bit addresses),
// as a board attaches the engine to a PCIe IP's AXI slave bridge toward host memory. Reads:
// bursts of whole 64-byte beats split at MAX_BURST x 64 bytes (never across 4 KiB), ARID = tag;
// per tag the data is realigned to lane 0 and returned in request order, tuser set from the
// first errored beat to the read's last. Writes: bursts split alike, one AWID (WR_ID) so writes
// stay ordered, W realigned with exact WSTRB; a B error pulses wr_error (rd_error per errored
// R beat). Every valid/data output is a register.
// Ports: s_dma_rd_*, m_dma_rd_* (engine side, reads), s_dma_wr_*, s_axis_dma_wr_* (writes),
//   m_axi_* (AXI4 master), rd_error, wr_error.
// Latency: a request's first burst on AR/AW 2 cycles after it is accepted; an R beat on
//   m_dma_rd 2 cycles after its handshake; a W beat the cycle after it is accepted.
// Throughput: one beat per cycle both ways; one request per cycle when each fits one burst.
// Model blocks::dma_axi; docs/engine-hdl.md, "Board-side blocks".
//
// Parameters:
//   TAG_W, ID_W  engine read tag width; AXI ID width (>= TAG_W).
//   MAX_BURST    beats per burst at most, a power of two 1..64.
//   RD_QUEUE     reads per tag accepted behind the one being returned (power of two >= 2).
//   WR_QUEUE     writes accepted ahead of the one whose data moves (power of two >= 2).
//   WR_ID        AWID of every write.

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
  input  wire roce_rec_pkg::dma_req_t s_dma_rd,
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
  input  wire roce_rec_pkg::dma_req_t s_dma_wr,
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
  // lanes below k (k in 0..64)
  function automatic logic [63:0] lanes_below(input logic [6:0] k);
    lanes_below = k[6] ? '1 : ~({64{1'b1}} << k[5:0]);
  endfunction

  // bytes rotated toward lane 0 by s (out[i] = d[(i + s) mod 64]) and away from it (out[i]
  // = d[(i - s) mod 64]): three stages of 4:1 byte muxes, one LUT level each
  function automatic logic [511:0] rot_down(input logic [511:0] d, input logic [5:0] s);
    logic [511:0] a, b;
    case (s[1:0])
      2'd0: a = d;
      2'd1: a = {d[7:0], d[511:8]};
      2'd2: a = {d[15:0], d[511:16]};
      2'd3: a = {d[23:0], d[511:24]};
    endcase
    case (s[3:2])
      2'd0: b = a;
      2'd1: b = {a[31:0], a[511:32]};
      2'd2: b = {a[63:0], a[511:64]};
      2'd3: b = {a[95:0], a[511:96]};
    endcase
    case (s[5:4])
      2'd0: rot_down = b;
      2'd1: rot_down = {b[127:0], b[511:128]};
      2'd2: rot_down = {b[255:0], b[511:256]};
      2'd3: rot_down = {b[383:0], b[511:384]};
    endcase
  endfunction
  function automatic logic [511:0] rot_up(input logic [511:0] d, input logic [5:0] s);
    logic [511:0] a, b;
    case (s[1:0])
      2'd0: a = d;
      2'd1: a = {d[503:0], d[511:504]};
      2'd2: a = {d[495:0], d[511:496]};
      2'd3: a = {d[487:0], d[511:488]};
    endcase
    case (s[3:2])
      2'd0: b = a;
      2'd1: b = {a[479:0], a[511:480]};
      2'd2: b = {a[447:0], a[511:448]};
      2'd3: b = {a[415:0], a[511:416]};
    endcase
    case (s[5:4])
      2'd0: rot_up = b;
      2'd1: rot_up = {b[383:0], b[511:384]};
      2'd2: rot_up = {b[255:0], b[511:256]};
      2'd3: rot_up = {b[127:0], b[511:128]};
    endcase
  endfunction
  // lane by lane: the byte of x where sel, else of y, zero where not m
  function automatic logic [511:0] pick(input logic [511:0] x, input logic [511:0] y,
                                        input logic [63:0] sel, input logic [63:0] m);
    for (int i = 0; i < 64; i++)
      pick[8*i +: 8] = !m[i] ? 8'h00 : (sel[i] ? x[8*i +: 8] : y[8*i +: 8]);
  endfunction
  // the first beat of the next MAX_BURST window after beat b: an increment cut in three
  // carry-select pieces (no 58-bit carry chain)
  function automatic logic [57:0] next_window(input logic [57:0] b);
    logic [57:0] o;
    logic c0, c1;
    o = b | MB_MASK;
    c0 = &o[19:0];
    c1 = c0 && &o[39:20];
    next_window = {c1 ? o[57:40] + 18'd1 : o[57:40], c0 ? o[39:20] + 20'd1 : o[39:20],
                   o[19:0] + 20'd1};
  endfunction

  // =============================================================================== reads
  // ---- a read request as queued: flags (offset 0, one AXI beat, one / two output beats),
  // offset, bytes of the last output beat (mod 64), AXI beats, output beats
  localparam int QE_W = 4 + 6 + 6 + 11 + 11;
  function automatic logic [QE_W-1:0] rd_entry(input logic [5:0] off, input logic [15:0] len);
    logic [10:0] ab, ob;
    ab = axi_beats(off, len);
    ob = data_beats(len);
    rd_entry = {off == 6'd0, ab == 11'd1, ob == 11'd1, ob == 11'd2, off, len[5:0], ab, ob};
  endfunction

  // ---- per tag: the read being returned (its context x_*: the entry with its AXI and
  // output beats left counted down, first beat still to come, error seen) and RD_QUEUE
  // behind it (qmem). The context of the tag of the beat in the R register is copied into
  // c_* as the beat enters it, so the beat's processing reads registers, not a mux by tag.
  (* ram_style = "distributed" *) logic [QE_W-1:0] qmem [NT * RD_QUEUE];
  logic [QA-1:0]    q_wp [NT];
  logic [QA-1:0]    q_rp [NT];
  logic [QA:0]      q_cnt [NT];
  logic [NT-1:0]    q_nz, q_full;
  logic [QE_W-1:0]  x_ent [NT];
  logic [NT-1:0]    hv, x_first, x_err;

  // ---- AR splitter
  logic              ar_busy;
  logic [57:0]       ar_b;      // next 64-byte beat to request
  logic [10:0]       ar_left;   // beats left to request
  logic [6:0]        ar_room;   // beats to the end of ar_b's MAX_BURST window
  logic              ar_fits;   // ar_left <= ar_room: the next burst is the last
  logic [TAG_W-1:0]  ar_tag;
  logic ar_issue, ar_done;
  assign ar_issue = ar_busy && (!m_axi_arvalid || m_axi_arready);
  assign ar_done = ar_issue && ar_fits;
  assign s_dma_rd_ready = (!ar_busy || ar_done) && !q_full[s_dma_rd_tag];
  logic rd_acc;
  assign rd_acc = s_dma_rd_valid && s_dma_rd_ready;
  logic [QE_W-1:0] rd_ent;
  assign rd_ent = rd_entry(s_dma_rd.addr[5:0], s_dma_rd.len);
  logic [10:0] rd_ab;
  assign rd_ab = axi_beats(s_dma_rd.addr[5:0], s_dma_rd.len);
  logic [6:0] rd_room;
  assign rd_room = MB - 7'(s_dma_rd.addr[63:6] & MB_MASK);
  logic [10:0] ar_rest;
  assign ar_rest = ar_left - 11'(ar_room);

  assign m_axi_arsize = 3'd6;
  assign m_axi_arburst = 2'b01;
  always_ff @(posedge clk) begin
    if (m_axi_arvalid && m_axi_arready) m_axi_arvalid <= 1'b0;
    if (ar_issue) begin
      m_axi_arvalid <= 1'b1;
      m_axi_arid <= ID_W'(ar_tag);
      m_axi_araddr <= {ar_b, 6'd0};
      m_axi_arlen <= ar_fits ? 8'(ar_left - 11'd1) : 8'(ar_room - 7'd1);
      ar_b <= next_window(ar_b);
      ar_left <= ar_rest;
      ar_room <= MB;
      ar_fits <= ar_rest <= 11'(MB);
      if (ar_done) ar_busy <= 1'b0;
    end
    if (rd_acc) begin
      ar_busy <= 1'b1;
      ar_b <= s_dma_rd.addr[63:6];
      ar_left <= rd_ab;
      ar_room <= rd_room;
      ar_fits <= rd_ab <= 11'(rd_room);
      ar_tag <= s_dma_rd_tag;
    end
    if (rst) begin
      ar_busy <= 1'b0;
      m_axi_arvalid <= 1'b0;
    end
  end

  // ---- R input register, with the context of its tag
  logic              rq_v, rq_err, rq_take;
  logic [TAG_W-1:0]  rq_t, r_t;
  logic [511:0]      rq_d;
  logic [QE_W-1:0]   c_ent;
  logic [QA-1:0]     c_rp;      // q_rp of the tag
  logic              c_hv, c_first, c_err;
  logic              c_off0, c_ab1, c_ob1, c_ob2;
  logic [5:0]        c_off, c_end;
  logic [10:0]       c_ab, c_ob;
  assign {c_off0, c_ab1, c_ob1, c_ob2, c_off, c_end, c_ab, c_ob} = c_ent;
  assign r_t = m_axi_rid[TAG_W-1:0];
  assign m_axi_rready = !rq_v || rq_take;
  logic unused_r;
  assign unused_r = m_axi_rlast ^ m_axi_rresp[0] ^ (ID_W > TAG_W ? ^m_axi_rid : 1'b0);

  // ---- realignment: per tag one carry (the previous AXI beat, stored already rotated to
  // the output lanes)
  (* ram_style = "distributed" *) logic [511:0] carry [NT];
  logic              fl_v;      // the read of tag fl_t still owes its last beat (from the carry)
  logic [TAG_W-1:0]  fl_t;
  logic [5:0]        fl_end;
  logic              fl_err;
  logic [TAG_W-1:0]  ts;        // the tag served this cycle
  assign ts = fl_v ? fl_t : rq_t;
  logic [511:0] s_carry, rot;
  assign s_carry = carry[ts];
  assign rot = rot_down(rq_d, c_off);

  logic out_free;
  assign out_free = !m_dma_rd_tvalid || m_dma_rd_tready;
  logic beat_go;    // the beat in rq is processed
  assign beat_go = !fl_v && rq_v && c_hv && out_free;
  logic fl_go;
  assign fl_go = fl_v && out_free;
  assign rq_take = beat_go;
  // aligned (or a one-beat read): the beat alone gives the output beat; else the first beat
  // is only kept, and each later one completes the previous beat's output
  logic direct, keep_only, emit;
  assign direct = c_off0 || (c_first && c_ab1);
  assign keep_only = !direct && c_first;
  assign emit = fl_go || (beat_go && !keep_only);
  logic        e_last, e_err;
  assign e_last = fl_v || c_ob1;
  assign e_err = c_err || rq_err;
  logic [5:0]  e_end;
  assign e_end = fl_v ? fl_end : c_end;
  logic [63:0] e_mask, e_carry;
  assign e_mask = e_last ? lanes_below({e_end == 6'd0, e_end}) : '1;
  for (genvar j = 0; j < 64; j++) begin : g_lane
    // output lane j comes from the carry below lane 64 - offset (a flush: all of it)
    assign e_carry[j] = fl_v || (!direct && 7'(j) + {1'b0, c_off} < 7'd64);
  end
  logic need_fl;   // this beat was the last AXI beat, one output beat still to give
  assign need_fl = !direct && !c_first && c_ab1 && c_ob2;
  logic fin;       // this beat ends the read's AXI beats: its context moves to the next read
  assign fin = (!keep_only && c_ob1) || need_fl;

  // ---- the context after this beat (tag rq_t): a read accepted now for that tag with its
  // queue empty is loaded by push_head instead (no beat of it can be on R yet)
  logic [QE_W-1:0]  n_ent;
  logic             n_hv, n_first, n_err;
  always_comb begin
    n_ent = {c_off0, c_ab == 11'd2, keep_only ? c_ob1 : c_ob == 11'd2,
             keep_only ? c_ob2 : c_ob == 11'd3, c_off, c_end, c_ab - 11'd1,
             keep_only ? c_ob : c_ob - 11'd1};
    n_hv = 1'b1;
    n_first = 1'b0;
    n_err = e_err;
    if (fin) begin
      n_first = 1'b1;
      n_err = 1'b0;
      n_hv = q_nz[rq_t];
      n_ent = qmem[{rq_t, c_rp}];
    end
  end
  // per tag (decoded, no mux by tag): a request accepted for an idle tag, or for one whose
  // read ends now with nothing queued, is its next read at once; else it is queued
  logic q_pop, q_push;
  assign q_pop = beat_go && fin && q_nz[rq_t];
  logic [NT-1:0] acc_t, head_t, push_t, pop_t;
  for (genvar t = 0; t < NT; t++) begin : g_tag
    assign acc_t[t] = s_dma_rd_valid && (!ar_busy || ar_done) && s_dma_rd_tag == TAG_W'(t) &&
                      !q_full[t];
    assign head_t[t] = acc_t[t] && (!hv[t] || (beat_go && fin && !q_nz[t] && rq_t == TAG_W'(t)));
    assign push_t[t] = acc_t[t] && !head_t[t];
    assign pop_t[t] = beat_go && fin && q_nz[t] && rq_t == TAG_W'(t);
  end
  assign q_push = |push_t;

  always_ff @(posedge clk) begin
    if (m_axi_rready) begin
      rq_v <= m_axi_rvalid;
      rq_t <= r_t;
      rq_d <= m_axi_rdata;
      rq_err <= m_axi_rresp[1];
      if (beat_go && rq_t == r_t) begin
        {c_hv, c_first, c_err, c_ent} <= {n_hv, n_first, n_err, n_ent};
        c_rp <= c_rp + QA'(q_pop);
      end else begin
        {c_hv, c_first, c_err, c_ent} <= {hv[r_t], x_first[r_t], x_err[r_t], x_ent[r_t]};
        c_rp <= q_rp[r_t];
      end
    end
    if (m_dma_rd_tvalid && m_dma_rd_tready) m_dma_rd_tvalid <= 1'b0;
    if (emit) begin
      m_dma_rd_tvalid <= 1'b1;
      m_dma_rd_tdata <= pick(s_carry, rot, e_carry, e_mask);
      m_dma_rd_tlast <= e_last;
      m_dma_rd_tuser <= fl_v ? fl_err : e_err;
      m_dma_rd_tid <= ts;
    end
    if (beat_go) carry[rq_t] <= rot;
    if (fl_go) fl_v <= 1'b0;
    if (beat_go && need_fl) begin
      fl_v <= 1'b1;
      fl_t <= rq_t;
      fl_end <= c_end;
      fl_err <= e_err;
    end
    if (q_push) qmem[{s_dma_rd_tag, q_wp[s_dma_rd_tag]}] <= rd_ent;
    for (int t = 0; t < NT; t++) begin
      if (beat_go && rq_t == TAG_W'(t)) begin
        {hv[t], x_first[t], x_err[t], x_ent[t]} <= {n_hv, n_first, n_err, n_ent};
      end
      if (head_t[t]) begin
        {hv[t], x_first[t], x_err[t], x_ent[t]} <= {1'b1, 1'b1, 1'b0, rd_ent};
      end
      if (push_t[t]) q_wp[t] <= q_wp[t] + 1'b1;
      if (pop_t[t]) q_rp[t] <= c_rp + 1'b1;
      case ({push_t[t], pop_t[t]})
        2'b10: begin
          q_cnt[t] <= q_cnt[t] + 1'b1;
          q_nz[t] <= 1'b1;
          q_full[t] <= q_cnt[t] == (QA+1)'(RD_QUEUE - 1);
        end
        2'b01: begin
          q_cnt[t] <= q_cnt[t] - 1'b1;
          q_nz[t] <= q_cnt[t] != (QA+1)'(1);
          q_full[t] <= 1'b0;
        end
        default: ;
      endcase
    end
    if (rst) begin
      rq_v <= 1'b0;
      m_dma_rd_tvalid <= 1'b0;
      fl_v <= 1'b0;
      hv <= '0;
      q_nz <= '0;
      q_full <= '0;
      for (int t = 0; t < NT; t++) begin
        q_wp[t] <= '0;
        q_rp[t] <= '0;
        q_cnt[t] <= '0;
      end
    end
  end

  // ============================================================================== writes
  // ---- write descriptors from the AW side to the W side: offset, beats from the address's
  // beat to the end of its MAX_BURST window minus one, data beats, AXI beats minus one, end
  // lane of the last AXI beat (mod 64)
  localparam int WE_W = 6 + 6 + 11 + 11 + 6;
  localparam logic [5:0] MB6 = 6'(MAX_BURST - 1);
  logic [WE_W-1:0]  wq [WR_QUEUE];
  logic [WA:0]      wq_wp, wq_rp;
  logic             wq_full, wq_empty;
  assign wq_full = (wq_wp - wq_rp) == (WA+1)'(WR_QUEUE);
  assign wq_empty = wq_wp == wq_rp;

  logic              aw_busy;
  logic [57:0]       aw_b;
  logic [10:0]       aw_left;
  logic [6:0]        aw_room;
  logic              aw_fits;
  logic aw_issue, aw_done;
  assign aw_issue = aw_busy && (!m_axi_awvalid || m_axi_awready);
  assign aw_done = aw_issue && aw_fits;
  assign s_dma_wr_ready = (!aw_busy || aw_done) && !wq_full;
  logic wr_acc;
  assign wr_acc = s_dma_wr_valid && s_dma_wr_ready;
  logic [10:0] wr_ab;
  assign wr_ab = axi_beats(s_dma_wr.addr[5:0], s_dma_wr.len);
  logic [6:0] wr_room;
  assign wr_room = MB - 7'(s_dma_wr.addr[63:6] & MB_MASK);
  logic [10:0] aw_rest;
  assign aw_rest = aw_left - 11'(aw_room);

  assign m_axi_awsize = 3'd6;
  assign m_axi_awburst = 2'b01;
  assign m_axi_awid = ID_W'(WR_ID);
  always_ff @(posedge clk) begin
    if (m_axi_awvalid && m_axi_awready) m_axi_awvalid <= 1'b0;
    if (aw_issue) begin
      m_axi_awvalid <= 1'b1;
      m_axi_awaddr <= {aw_b, 6'd0};
      m_axi_awlen <= aw_fits ? 8'(aw_left - 11'd1) : 8'(aw_room - 7'd1);
      aw_b <= next_window(aw_b);
      aw_left <= aw_rest;
      aw_room <= MB;
      aw_fits <= aw_rest <= 11'(MB);
      if (aw_done) aw_busy <= 1'b0;
    end
    if (wr_acc) begin
      aw_busy <= 1'b1;
      aw_b <= s_dma_wr.addr[63:6];
      aw_left <= wr_ab;
      aw_room <= wr_room;
      aw_fits <= wr_ab <= 11'(wr_room);
      wq[wq_wp[WA-1:0]] <= {s_dma_wr.addr[5:0], (MB6 - s_dma_wr.addr[11:6]) & MB6,
                            data_beats(s_dma_wr.len), wr_ab - 11'd1,
                            6'(s_dma_wr.addr[5:0] + s_dma_wr.len[5:0])};
      wq_wp <= wq_wp + 1'b1;
    end
    if (rst) begin
      aw_busy <= 1'b0;
      m_axi_awvalid <= 1'b0;
      wq_wp <= '0;
    end
  end

  // ---- W: data realigned from lane 0 to the address offset
  logic [5:0]   w_off, w_room, w_end;
  logic [10:0]  w_ib, w_abm1;
  assign {w_off, w_room, w_ib, w_abm1, w_end} = wq[wq_rp[WA-1:0]];
  logic [10:0]  w_j;       // AXI beat of the write at the queue head
  logic         w_first;   // w_j == 0
  logic [511:0] w_carry;   // the previous data beat (rotated to its lanes)
  logic w_free, w_need, w_go, w_lastb;
  assign w_free = !m_axi_wvalid || m_axi_wready;
  assign w_need = w_j != w_ib;   // w_j never passes w_ib
  assign s_axis_dma_wr_tready = !wq_empty && w_need && w_free;
  assign w_go = !wq_empty && w_free && (!w_need || s_axis_dma_wr_tvalid);
  assign w_lastb = w_j == w_abm1;
  logic [511:0] w_rot;
  assign w_rot = rot_up(s_axis_dma_wr_tdata, w_off);
  logic [63:0] w_strb, w_low;
  assign w_strb = (w_lastb ? lanes_below({w_end == 6'd0, w_end}) : '1) &
                  ~(w_first ? lanes_below({1'b0, w_off}) : 64'd0);
  assign w_low = lanes_below({1'b0, w_off});
  logic w_blast;
  assign w_blast = w_lastb || (w_j[5:0] & MB6) == w_room;

  always_ff @(posedge clk) begin
    if (m_axi_wvalid && m_axi_wready) m_axi_wvalid <= 1'b0;
    if (w_go) begin
      m_axi_wvalid <= 1'b1;
      // lanes below the offset from the previous beat, the others from this one (a beat
      // past the data has strobes only below the offset)
      m_axi_wdata <= pick(w_carry, w_rot, w_low, w_strb);
      m_axi_wstrb <= w_strb;
      m_axi_wlast <= w_blast;
      if (w_need) w_carry <= w_rot;
      w_j <= w_j + 11'd1;
      w_first <= 1'b0;
      if (w_lastb) begin
        w_j <= '0;
        w_first <= 1'b1;
        wq_rp <= wq_rp + 1'b1;
      end
    end
    if (rst) begin
      m_axi_wvalid <= 1'b0;
      w_j <= '0;
      w_first <= 1'b1;
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
