// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_util_pkg: hand-written helpers the transport blocks share (the generated packages
// are in gen/). Use them as roce_util_pkg::name(...) (Yosys 0.23 takes no `import`).
//
//   psn_lt, psn_gt   x before / after y in PSN order (24-bit serial numbers)
//   idx_lt, t_after  x before y in SQ index order, x after y in time (32-bit serial numbers)
//   cqe_img          the 32-byte CQE image (roce_desc_pkg's CQE layout) of a completion
//   bswap48/128      byte order reversed (MAC and GID fields between wire and record order)
//
// The orders are the sign of x - y, and for "after" x != y beside it: two carry chains side
// by side, not a compare of the difference against a constant behind the subtraction.

`resetall
`default_nettype none

package roce_util_pkg;

  /* verilator lint_off UNUSEDSIGNAL */
  function automatic logic psn_lt(input logic [23:0] x, input logic [23:0] y);
    logic [23:0] d;
    d = x - y;
    psn_lt = d[23];
  endfunction

  function automatic logic psn_gt(input logic [23:0] x, input logic [23:0] y);
    logic [23:0] d;
    d = x - y;
    psn_gt = !d[23] && x != y;
  endfunction

  function automatic logic idx_lt(input logic [31:0] x, input logic [31:0] y);
    logic [31:0] d;
    d = x - y;
    idx_lt = d[31];
  endfunction

  function automatic logic t_after(input logic [31:0] x, input logic [31:0] y);
    logic [31:0] d;
    d = x - y;
    t_after = !d[31] && x != y;
  endfunction
  /* verilator lint_on UNUSEDSIGNAL */

  function automatic logic [255:0] cqe_img(input logic [63:0] wr_id, input logic [31:0] len,
                                          input logic [31:0] imm, input logic [23:0] qp,
                                          input logic [7:0] op, input logic [7:0] status,
                                          input logic [7:0] flags, input logic [23:0] src);
    cqe_img = '0;
    cqe_img[8*roce_desc_pkg::CQE_WR_ID_OFF +: 64] = wr_id;
    cqe_img[8*roce_desc_pkg::CQE_BYTE_LEN_OFF +: 32] = len;
    cqe_img[8*roce_desc_pkg::CQE_IMM_OR_INV_OFF +: 32] = imm;
    cqe_img[8*roce_desc_pkg::CQE_QPN_OFF +: 24] = qp;
    cqe_img[8*roce_desc_pkg::CQE_OPCODE_OFF +: 8] = op;
    cqe_img[8*roce_desc_pkg::CQE_STATUS_OFF +: 8] = status;
    cqe_img[8*roce_desc_pkg::CQE_FLAGS_OFF +: 8] = flags;
    cqe_img[8*roce_desc_pkg::CQE_SRC_QP_OFF +: 24] = src;
  endfunction

  function automatic logic [47:0] bswap48(input logic [47:0] x);
    for (int i = 0; i < 6; i++) bswap48[8*i +: 8] = x[8*(5-i) +: 8];
  endfunction

  function automatic logic [127:0] bswap128(input logic [127:0] x);
    for (int i = 0; i < 16; i++) bswap128[8*i +: 8] = x[8*(15-i) +: 8];
  endfunction

endpackage

`resetall
