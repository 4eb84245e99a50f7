// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// ============================================================================================
//  BLACK-BOX STUBS OF VENDOR IP AND PRIMITIVES -- FOR THE OPEN-SOURCE CHECKS ONLY.
//  Never add this file to a Vivado project: build.tcl generates the real IP (create_ip) and
//  Vivado has the real UNISIM primitives; these stubs would shadow them.
// ============================================================================================
//
// Used by the `u250_top` line of hdl/configs.txt, so that Verilator lint
// (scripts/lint-hdl.sh) and the Yosys elaboration check (roce-synth) can read
// roce_u250_top.sv: every module here declares exactly the ports and parameters
// roce_u250_top connects (the real IP has more ports, all optional outputs or inputs with
// the same constant meaning as left open), with the real names and widths:
//   xdma_0         Xilinx DMA/Bridge Subsystem for PCI Express (xdma 4.1), AXI Bridge mode,
//                  Gen3 x16, 512-bit AXI at 250 MHz, 64-bit AXI addresses, one user IRQ
//                  (build.tcl sets these options)
//   cmac_usplus_0  UltraScale+ 100G Ethernet (cmac_usplus 3.1), CAUI-4, AXI4-Stream user
//                  interface, RS-FEC included, no pause frames (build.tcl)
//   IBUFDS_GTE4, IBUFDS, BUFG, MMCME4_BASE   UNISIM primitives (subset of ports)
// The stubs drive their outputs to 0 and are Yosys black boxes; they model nothing.

`resetall
`default_nettype none
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */
/* verilator lint_off DECLFILENAME */

(* blackbox *)
module xdma_0 (
  input  wire logic         sys_clk,
  input  wire logic         sys_clk_gt,
  input  wire logic         sys_rst_n,
  output      logic [15:0]  pci_exp_txp,
  output      logic [15:0]  pci_exp_txn,
  input  wire logic [15:0]  pci_exp_rxp,
  input  wire logic [15:0]  pci_exp_rxn,
  output      logic         user_lnk_up,
  output      logic         axi_aclk,
  output      logic         axi_aresetn,
  input  wire logic [0:0]   usr_irq_req,
  output      logic [0:0]   usr_irq_ack,

  // AXI4 master: host accesses to the BARs (here BAR0, the engine's registers)
  output      logic [3:0]   m_axib_awid,
  output      logic [63:0]  m_axib_awaddr,
  output      logic [7:0]   m_axib_awlen,
  output      logic [2:0]   m_axib_awsize,
  output      logic [1:0]   m_axib_awburst,
  output      logic [2:0]   m_axib_awprot,
  output      logic         m_axib_awlock,
  output      logic [3:0]   m_axib_awcache,
  output      logic         m_axib_awvalid,
  input  wire logic         m_axib_awready,
  output      logic [511:0] m_axib_wdata,
  output      logic [63:0]  m_axib_wstrb,
  output      logic         m_axib_wlast,
  output      logic         m_axib_wvalid,
  input  wire logic         m_axib_wready,
  input  wire logic [3:0]   m_axib_bid,
  input  wire logic [1:0]   m_axib_bresp,
  input  wire logic         m_axib_bvalid,
  output      logic         m_axib_bready,
  output      logic [3:0]   m_axib_arid,
  output      logic [63:0]  m_axib_araddr,
  output      logic [7:0]   m_axib_arlen,
  output      logic [2:0]   m_axib_arsize,
  output      logic [1:0]   m_axib_arburst,
  output      logic [2:0]   m_axib_arprot,
  output      logic         m_axib_arlock,
  output      logic [3:0]   m_axib_arcache,
  output      logic         m_axib_arvalid,
  input  wire logic         m_axib_arready,
  input  wire logic [3:0]   m_axib_rid,
  input  wire logic [511:0] m_axib_rdata,
  input  wire logic [1:0]   m_axib_rresp,
  input  wire logic         m_axib_rlast,
  input  wire logic         m_axib_rvalid,
  output      logic         m_axib_rready,

  // AXI4 slave bridge: the user's accesses to host memory (the engine's DMA)
  input  wire logic [3:0]   s_axib_awid,
  input  wire logic [63:0]  s_axib_awaddr,
  input  wire logic [3:0]   s_axib_awregion,
  input  wire logic [7:0]   s_axib_awlen,
  input  wire logic [2:0]   s_axib_awsize,
  input  wire logic [1:0]   s_axib_awburst,
  input  wire logic         s_axib_awvalid,
  output      logic         s_axib_awready,
  input  wire logic [511:0] s_axib_wdata,
  input  wire logic [63:0]  s_axib_wstrb,
  input  wire logic         s_axib_wlast,
  input  wire logic         s_axib_wvalid,
  output      logic         s_axib_wready,
  output      logic [3:0]   s_axib_bid,
  output      logic [1:0]   s_axib_bresp,
  output      logic         s_axib_bvalid,
  input  wire logic         s_axib_bready,
  input  wire logic [3:0]   s_axib_arid,
  input  wire logic [63:0]  s_axib_araddr,
  input  wire logic [3:0]   s_axib_arregion,
  input  wire logic [7:0]   s_axib_arlen,
  input  wire logic [2:0]   s_axib_arsize,
  input  wire logic [1:0]   s_axib_arburst,
  input  wire logic         s_axib_arvalid,
  output      logic         s_axib_arready,
  output      logic [3:0]   s_axib_rid,
  output      logic [511:0] s_axib_rdata,
  output      logic [1:0]   s_axib_rresp,
  output      logic         s_axib_rlast,
  output      logic         s_axib_rvalid,
  input  wire logic         s_axib_rready
);
  assign {pci_exp_txp, pci_exp_txn, user_lnk_up, axi_aclk, axi_aresetn, usr_irq_ack} = '0;
  assign {m_axib_awid, m_axib_awaddr, m_axib_awlen, m_axib_awsize, m_axib_awburst,
          m_axib_awprot, m_axib_awlock, m_axib_awcache, m_axib_awvalid, m_axib_wdata,
          m_axib_wstrb, m_axib_wlast, m_axib_wvalid, m_axib_bready} = '0;
  assign {m_axib_arid, m_axib_araddr, m_axib_arlen, m_axib_arsize, m_axib_arburst,
          m_axib_arprot, m_axib_arlock, m_axib_arcache, m_axib_arvalid, m_axib_rready} = '0;
  assign {s_axib_awready, s_axib_wready, s_axib_bid, s_axib_bresp, s_axib_bvalid,
          s_axib_arready, s_axib_rid, s_axib_rdata, s_axib_rresp, s_axib_rlast,
          s_axib_rvalid} = '0;
endmodule

(* blackbox *)
module cmac_usplus_0 (
  input  wire logic [3:0]   gt_rxp_in,
  input  wire logic [3:0]   gt_rxn_in,
  output      logic [3:0]   gt_txp_out,
  output      logic [3:0]   gt_txn_out,
  input  wire logic         gt_ref_clk_p,
  input  wire logic         gt_ref_clk_n,
  input  wire logic         init_clk,
  input  wire logic         sys_reset,
  output      logic         gt_txusrclk2,
  input  wire logic [11:0]  gt_loopback_in,
  input  wire logic         gtwiz_reset_tx_datapath,
  input  wire logic         gtwiz_reset_rx_datapath,

  input  wire logic         rx_clk,
  input  wire logic         core_rx_reset,
  output      logic         usr_rx_reset,
  output      logic         rx_axis_tvalid,
  output      logic [511:0] rx_axis_tdata,
  output      logic         rx_axis_tlast,
  output      logic [63:0]  rx_axis_tkeep,
  output      logic         rx_axis_tuser,
  output      logic         stat_rx_aligned,
  input  wire logic         ctl_rx_enable,
  input  wire logic         ctl_rx_force_resync,
  input  wire logic         ctl_rx_test_pattern,
  input  wire logic         ctl_rsfec_ieee_error_indication_mode,
  input  wire logic         ctl_rx_rsfec_enable,
  input  wire logic         ctl_rx_rsfec_enable_correction,
  input  wire logic         ctl_rx_rsfec_enable_indication,

  input  wire logic         core_tx_reset,
  output      logic         usr_tx_reset,
  output      logic         tx_axis_tready,
  input  wire logic         tx_axis_tvalid,
  input  wire logic [511:0] tx_axis_tdata,
  input  wire logic         tx_axis_tlast,
  input  wire logic [63:0]  tx_axis_tkeep,
  input  wire logic         tx_axis_tuser,
  input  wire logic [55:0]  tx_preamblein,
  output      logic         tx_ovfout,
  output      logic         tx_unfout,
  input  wire logic         ctl_tx_enable,
  input  wire logic         ctl_tx_send_idle,
  input  wire logic         ctl_tx_send_rfi,
  input  wire logic         ctl_tx_send_lfi,
  input  wire logic         ctl_tx_test_pattern,
  input  wire logic         ctl_tx_rsfec_enable,

  input  wire logic         core_drp_reset,
  input  wire logic         drp_clk,
  input  wire logic [9:0]   drp_addr,
  input  wire logic [15:0]  drp_di,
  input  wire logic         drp_en,
  input  wire logic         drp_we,
  output      logic [15:0]  drp_do,
  output      logic         drp_rdy
);
  assign {gt_txp_out, gt_txn_out, gt_txusrclk2, usr_rx_reset, rx_axis_tvalid, rx_axis_tdata,
          rx_axis_tlast, rx_axis_tkeep, rx_axis_tuser, stat_rx_aligned} = '0;
  assign {usr_tx_reset, tx_axis_tready, tx_ovfout, tx_unfout, drp_do, drp_rdy} = '0;
endmodule

(* blackbox *)
module IBUFDS_GTE4 #(
  parameter logic       REFCLK_EN_TX_PATH = 1'b0,
  parameter logic [1:0] REFCLK_HROW_CK_SEL = 2'b00,
  parameter logic [1:0] REFCLK_ICNTL_RX = 2'b00
) (
  input  wire logic I,
  input  wire logic IB,
  input  wire logic CEB,
  output      logic O,
  output      logic ODIV2
);
  assign {O, ODIV2} = '0;
endmodule

(* blackbox *)
module IBUFDS (
  input  wire logic I,
  input  wire logic IB,
  output      logic O
);
  assign O = 1'b0;
endmodule

(* blackbox *)
module BUFG (
  input  wire logic I,
  output      logic O
);
  assign O = 1'b0;
endmodule

(* blackbox *)
module MMCME4_BASE #(
  parameter real    CLKIN1_PERIOD = 0.0,
  parameter real    CLKFBOUT_MULT_F = 5.0,
  parameter integer DIVCLK_DIVIDE = 1,
  parameter real    CLKOUT0_DIVIDE_F = 1.0
) (
  input  wire logic CLKIN1,
  input  wire logic CLKFBIN,
  input  wire logic RST,
  input  wire logic PWRDWN,
  output      logic CLKOUT0,
  output      logic CLKFBOUT,
  output      logic LOCKED
);
  assign {CLKOUT0, CLKFBOUT, LOCKED} = '0;
endmodule

/* verilator lint_on DECLFILENAME */
/* verilator lint_on UNUSEDPARAM */
/* verilator lint_on UNUSEDSIGNAL */

`resetall
