// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_ack_q: the ACK/NAK coalescer between the responder and the TX arbiter. Per QP the one
// ACK or NAK the QP owes (table, BRAM) and a FIFO of the QPs that owe one, in the order they
// first came to owe it: a new request replaces the owed one (a NAK stays owed against an ACK
// that is not newer), and the QP keeps its turn (engine::resp::ack_merge).
// Ports: s_ack (a request from roce_resp), s_clr (forget a QP's entry: context reset), m_desc
//   (the next owed ACK/NAK as a roce_rec_pkg::tx_desc_t; its entry is cleared when sent).
// Latency: a request taken in c is on m_desc in c+6 (empty queue).
// Throughput: one request or clear per 2 cycles; one ACK sent per 4 cycles.
// Model blocks::ack_q; docs/engine-hdl.md.
//
// Parameters:
//   LOG_N  log2 of the number of QPs (default 10 = 1024).

`resetall
`default_nettype none

module roce_ack_q #(
  parameter int LOG_N = 10,
  localparam int DESC_W = 8 * roce_rec_pkg::TX_DESC_BYTES
) (
  input  wire logic              clk,
  input  wire logic              rst,
  input  wire logic              soft_reset,
  output      logic              init_done,

  input  wire logic              s_ack_valid,
  output      logic              s_ack_ready,
  input  wire logic [23:0]       s_ack_qpn,
  input  wire logic [23:0]       s_ack_psn,
  input  wire logic [7:0]        s_ack_syndrome,
  input  wire logic [23:0]       s_ack_msn,

  input  wire logic              s_clr_valid,
  output      logic              s_clr_ready,
  input  wire logic [23:0]       s_clr_qpn,

  output      logic              m_desc_valid,
  input  wire logic              m_desc_ready,
  output      logic [DESC_W-1:0] m_desc
);

  localparam int N = 1 << LOG_N;
  // entry: {queued (in the FIFO), valid (owes one), psn, syndrome, msn}
  localparam int E_W = 2 + 24 + 8 + 24;
  localparam int E_VALID = E_W - 2, E_PSN = 32, E_SYN = 24;  // field offsets

  (* ram_style = "block" *) logic [E_W-1:0] tab [N];
  (* ram_style = "block" *) logic [LOG_N-1:0] fifo [N];

  logic [LOG_N:0] init_idx;
  assign init_done = init_idx[LOG_N];

  logic [LOG_N:0] head, tail;  // FIFO pointers (one more bit than the index)
  logic fifo_empty;
  assign fifo_empty = head == tail;

  typedef enum logic [2:0] { S_IDLE, S_REQ, S_CLR, S_POP, S_POP_RD, S_SEND } state_t;
  state_t st;

  logic [LOG_N-1:0] q;          // the QP of the operation
  logic [23:0]      k_psn, k_msn;
  logic [7:0]       k_syn;
  // the write this cycle decides, decoded a cycle ahead from the state: made whatever the
  // entry (the init sweep, S_CLR, S_SEND, S_REQ of a NAK/RNR NAK), or S_REQ of an ACK (made
  // unless the owed NAK stays)
  logic             we_fix, req_ack;

  // table port: read address now, data next cycle. The write an operation decides (its
  // enable in three parts, t_waddr, t_wdata) is registered (w_*) and made in the next
  // cycle, so the merge rule's PSN compare ends at registers, not at the BRAM's write
  // enable; a read in the cycle of that write to the same entry gets the written entry
  // (fwd).
  logic [LOG_N-1:0] t_raddr;
  logic [E_W-1:0]   t_q;
  logic             t_we_pre, t_neg_t, t_neg_w;
  logic [LOG_N-1:0] t_waddr;
  logic [E_W-1:0]   t_wdata;
  logic             w_pre, w_neg_t, w_neg_w, w_en, fwd;
  logic [LOG_N-1:0] w_addr;
  logic [E_W-1:0]   w_data;
  assign w_en = w_pre && !w_neg_t && !w_neg_w;
  always_ff @(posedge clk) begin
    t_q <= tab[t_raddr];
    if (w_en) tab[w_addr] <= w_data;
    fwd <= w_en && w_addr == i_raddr;
    w_pre <= t_we_pre;
    w_neg_t <= t_neg_t;
    w_neg_w <= t_neg_w;
    // loaded only in the states that decide a write, so it still holds the written entry
    // in the cycle after the write (where fwd selects it)
    if (!init_done || st == S_REQ || st == S_CLR || st == S_SEND) begin
      w_addr <= t_waddr;
      w_data <= t_wdata;
    end
  end

  logic             f_we;
  logic [LOG_N-1:0] f_wdata;
  logic [LOG_N-1:0] f_q;
  always_ff @(posedge clk) begin
    f_q <= fifo[head[LOG_N-1:0]];
    if (f_we) fifo[tail[LOG_N-1:0]] <= f_wdata;
  end

  logic idle;
  assign idle = st == S_IDLE && init_done;
  assign s_clr_ready = idle;
  assign s_ack_ready = idle && !s_clr_valid;

  // the read an input operation makes in S_IDLE: the only read a write can be pending for
  // (a write is made in the cycle after S_REQ, S_CLR or S_SEND, which is S_IDLE; S_POP_RD's
  // read follows S_IDLE and S_POP, which write nothing)
  logic [LOG_N-1:0] i_raddr;
  assign i_raddr = s_clr_valid ? s_clr_qpn[LOG_N-1:0] : s_ack_qpn[LOG_N-1:0];
  always_comb begin
    t_raddr = q;
    if (idle) t_raddr = i_raddr;
    if (st == S_POP_RD) t_raddr = f_q;
  end

  // the owed entry and the merge rule
  // The entry read (S_REQ, S_CLR): its queued bit from t_q or forwarded. S_SEND's entry is
  // t_q as read (no write is pending for S_POP_RD's read), so the rest is not forwarded.
  logic        e_queued, e_valid;
  logic [23:0] e_psn, e_msn;
  logic [7:0]  e_syn;
  assign e_queued = fwd ? w_data[E_W-1] : t_q[E_W-1];
  assign {e_valid, e_psn, e_syn, e_msn} = t_q[E_W-2:0];
  // A NAK/RNR NAK stays against an ACK that is not newer: k_psn - e_psn negative or zero.
  // Worked out for both candidates of e (the entry read, t_q; the one forwarded, w_data),
  // each ANDed with its select, and registered in three parts (the write unless equal PSNs
  // keep the NAK; a negative difference to either candidate keeps it), so that behind each
  // subtraction's carry chain is one small function: ABC takes a carry chain's output for
  // an early input and buries it under the rest of a cone it shares.
  logic [23:0] d_psn_t, d_psn_w;
  assign d_psn_t = k_psn - t_q[E_PSN +: 24];
  assign d_psn_w = k_psn - w_data[E_PSN +: 24];
  logic nak_t, nak_w;  // an ACK request against an owed NAK (syndrome & 0x60), per candidate
  assign nak_t = !fwd && req_ack && t_q[E_VALID] && t_q[E_SYN + 5 +: 2] != 2'b00;
  assign nak_w = fwd && req_ack && w_data[E_VALID] && w_data[E_SYN + 5 +: 2] != 2'b00;
  assign t_we_pre = we_fix || (req_ack && !(nak_t && k_psn == t_q[E_PSN +: 24]) &&
                               !(nak_w && k_psn == w_data[E_PSN +: 24]));
  assign t_neg_t = nak_t && d_psn_t[23];
  assign t_neg_w = nak_w && d_psn_w[23];

  always_comb begin
    t_waddr = q;
    t_wdata = '0;
    f_we = 1'b0;
    f_wdata = q;
    if (!init_done) begin
      t_waddr = init_idx[LOG_N-1:0];
    end else begin
      case (st)
        S_REQ: begin
          t_wdata = {2'b11, k_psn, k_syn, k_msn};
          f_we = !e_queued;
        end
        S_CLR: begin  // forgotten, but its FIFO place stays (skipped when it comes up)
          t_wdata = {e_queued, {(E_W - 1){1'b0}}};
        end
        S_SEND: ;  // popped: neither queued nor owed
        default: ;
      endcase
    end
  end

  always_ff @(posedge clk) begin
    if (!init_done) init_idx <= init_idx + 1'b1;
    we_fix <= !init_done && init_idx[LOG_N-1:0] != '1;  // the sweep goes on
    req_ack <= 1'b0;
    if (m_desc_valid && m_desc_ready) m_desc_valid <= 1'b0;
    case (st)
      S_IDLE: begin
        if (init_done) begin
          if (s_clr_valid) begin
            q <= s_clr_qpn[LOG_N-1:0];
            we_fix <= 1'b1;
            st <= S_CLR;
          end else if (s_ack_valid) begin
            q <= s_ack_qpn[LOG_N-1:0];
            k_psn <= s_ack_psn;
            k_syn <= s_ack_syndrome;
            req_ack <= (s_ack_syndrome & 8'h60) == 8'h00;
            we_fix <= (s_ack_syndrome & 8'h60) != 8'h00;
            k_msn <= s_ack_msn;
            st <= S_REQ;
          end else if (!fifo_empty && !m_desc_valid) begin
            st <= S_POP;
          end
        end
      end
      S_REQ: begin  // t_q (or w_data) is the entry; merged, written next cycle
        if (!e_queued) tail <= tail + 1'b1;
        st <= S_IDLE;
      end
      S_CLR: st <= S_IDLE;
      S_POP: st <= S_POP_RD;  // f_q is the head QPN
      S_POP_RD: begin         // the entry is read
        q <= f_q;
        head <= head + 1'b1;
        we_fix <= 1'b1;
        st <= S_SEND;
      end
      S_SEND: begin           // t_q is the entry: send it (cleared next cycle)
        if (e_valid) begin
          m_desc_valid <= 1'b1;
          m_desc <= '0;
          m_desc[8*roce_rec_pkg::TX_DESC_QPN_OFF +: 24] <= {{(24 - LOG_N){1'b0}}, q};
          m_desc[8*roce_rec_pkg::TX_DESC_OPCODE_OFF +: 8] <= 8'h11;  // RC Acknowledge
          m_desc[8*roce_rec_pkg::TX_DESC_PSN_OFF +: 24] <= e_psn;
          m_desc[8*roce_rec_pkg::TX_DESC_AETH_SYNDROME_OFF +: 8] <= e_syn;
          m_desc[8*roce_rec_pkg::TX_DESC_AETH_MSN_OFF +: 24] <= e_msn;
        end
        st <= S_IDLE;
      end
      default: st <= S_IDLE;
    endcase
    if (rst || soft_reset) begin
      init_idx <= '0;
      head <= '0;
      tail <= '0;
      st <= S_IDLE;
      m_desc_valid <= 1'b0;
      we_fix <= 1'b1;
      req_ack <= 1'b0;
    end
  end

  logic unused;
  assign unused = ^s_ack_qpn[23:LOG_N] ^ ^s_clr_qpn[23:LOG_N] ^ ^d_psn_t[22:0] ^ ^d_psn_w[22:0];

endmodule

`resetall
