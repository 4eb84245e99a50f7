// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_ack_q: the ACK/NAK coalescer between the responder and the TX arbiter. Per QP it
// keeps the one ACK or NAK the QP owes (PSN, syndrome, MSN) in a table, and the QPs that
// owe one in a FIFO in the order they first came to owe it, so a QP's ACK keeps its turn
// on the wire while newer ones replace it (a stream of AckReq packets is acknowledged as it
// goes). Exactly the engine model's `Engine::owe_ack` rule (engine::resp::ack_merge): a new
// request replaces the owed one, except that a NAK or RNR NAK stays owed against an ACK
// that is not newer than it.
//   s_ack (from roce_resp's m_ack): owe an ACK/NAK.
//   s_clr: forget what a QP owes (its context was reset).
//   m_desc: the next owed ACK/NAK as a tx_desc_t (opcode Acknowledge, PSN, AETH), taken
//     from the FIFO head; the QP's entry is cleared when it is sent. A QP whose entry was
//     cleared while it waited in the FIFO is skipped.
// Model: firmware-model blocks::roce_ack_q (the engine's owe_ack rule and the TX side's
// ACK queue); lockstep test tests/tests/ack_q_cosim.rs.
//
// Structure: the table (2^LOG_N x 58 bits, BRAM) and the FIFO (2^LOG_N QPNs: a QP is in it
// at most once (the entry's queued bit), so it never overflows) serve one operation at a time: a request or a clear
// is read, merged and written back; a send pops the FIFO and reads and clears the entry.
// Latency: a request taken in cycle c is on m_desc in c+6 (empty queue, no other input).
// Throughput: one request or clear per 2 cycles (also while an ACK waits on m_desc); one
//   ACK sent per 4 cycles (the responder makes at most one request per packet, more than
//   a dozen cycles apart).
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

  // table port: read address now, data next cycle; writes in the same port
  logic [LOG_N-1:0] t_raddr;
  logic [E_W-1:0]   t_q;
  logic             t_we;
  logic [LOG_N-1:0] t_waddr;
  logic [E_W-1:0]   t_wdata;
  always_ff @(posedge clk) begin
    t_q <= tab[t_raddr];
    if (t_we) tab[t_waddr] <= t_wdata;
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

  always_comb begin
    t_raddr = q;
    if (idle) begin
      if (s_clr_valid) t_raddr = s_clr_qpn[LOG_N-1:0];
      else t_raddr = s_ack_qpn[LOG_N-1:0];
    end
    if (st == S_POP_RD) t_raddr = f_q;
  end

  // the owed entry and the merge rule
  logic        e_queued, e_valid;
  logic [23:0] e_psn, e_msn;
  logic [7:0]  e_syn;
  assign {e_queued, e_valid, e_psn, e_syn, e_msn} = t_q;
  logic keep_nak;  // a NAK/RNR NAK stays against an ACK that is not newer
  logic [23:0] d_psn;
  assign d_psn = k_psn - e_psn;
  assign keep_nak = e_valid && (e_syn & 8'h60) != 8'h00 && (k_syn & 8'h60) == 8'h00 &&
                    (d_psn[23] || d_psn == 24'd0);

  always_comb begin
    t_we = 1'b0;
    t_waddr = q;
    t_wdata = '0;
    f_we = 1'b0;
    f_wdata = q;
    if (!init_done) begin
      t_we = 1'b1;
      t_waddr = init_idx[LOG_N-1:0];
    end else begin
      case (st)
        S_REQ: begin
          t_we = !keep_nak;
          t_wdata = {2'b11, k_psn, k_syn, k_msn};
          f_we = !e_queued;
        end
        S_CLR: begin  // forgotten, but its FIFO place stays (skipped when it comes up)
          t_we = 1'b1;
          t_wdata = {e_queued, {(E_W - 1){1'b0}}};
        end
        S_SEND: t_we = 1'b1;  // popped: neither queued nor owed
        default: ;
      endcase
    end
  end

  always_ff @(posedge clk) begin
    if (!init_done) init_idx <= init_idx + 1'b1;
    if (m_desc_valid && m_desc_ready) m_desc_valid <= 1'b0;
    case (st)
      S_IDLE: begin
        if (init_done) begin
          if (s_clr_valid) begin
            q <= s_clr_qpn[LOG_N-1:0];
            st <= S_CLR;
          end else if (s_ack_valid) begin
            q <= s_ack_qpn[LOG_N-1:0];
            k_psn <= s_ack_psn;
            k_syn <= s_ack_syndrome;
            k_msn <= s_ack_msn;
            st <= S_REQ;
          end else if (!fifo_empty && !m_desc_valid) begin
            st <= S_POP;
          end
        end
      end
      S_REQ: begin  // t_q is the entry; merged and written this cycle
        if (!e_queued) tail <= tail + 1'b1;
        st <= S_IDLE;
      end
      S_CLR: st <= S_IDLE;
      S_POP: st <= S_POP_RD;  // f_q is the head QPN
      S_POP_RD: begin         // the entry is read
        q <= f_q;
        head <= head + 1'b1;
        st <= S_SEND;
      end
      S_SEND: begin           // t_q is the entry: send it (cleared this cycle)
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
    end
  end

  logic unused;
  assign unused = ^s_ack_qpn[23:LOG_N] ^ ^s_clr_qpn[23:LOG_N];

endmodule

`resetall
