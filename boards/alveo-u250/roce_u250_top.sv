// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// roce_u250_top: the RoCEv2 engine on a Xilinx Alveo U250 (xcu250-figd2104-2L-e), one
// 100G port (QSFP28 cage 0), host over PCIe Gen3 x16. Constraints: roce_u250.xdc; Vivado
// project, IP and bitstream: build.tcl; what is and is not checked here: README.md.
//
//   host -- PCIe x16 -- xdma_0 (AXI Bridge mode, axi_aclk 250 MHz = the core clock)
//     m_axib (BAR0 accesses, 512-bit AXI4) -> roce_axi_axil -> engine s_axil (32-bit regs)
//     s_axib (AXI slave bridge to host memory) <- roce_dma_axi <- engine DMA read/write ports
//     usr_irq_req[0] <- engine irq (level; the IP sends the MSI)
//   QSFP0 -- 4 x 25.78 Gb/s -- cmac_usplus_0 (AXIS, RS-FEC; gt_txusrclk2 322.27 MHz = MAC clock)
//     rx_axis (no tready) -> frame gate -> roce_axis_async_fifo (drops whole frames when
//                            full) -> engine s_axis_rx                   [MAC -> core clock]
//     tx_axis <- frame gate <- roce_axis_async_fifo (store and forward: no gap inside a
//                frame, which the CMAC would underflow on) <- frame gate <- engine
//                m_axis_tx                                              [core -> MAC clock]
//   clk_300 (board oscillator) -> MMCM -> 100 MHz free-running init/DRP clock of the CMAC
//
// Clock domains: core (xdma axi_aclk, 250 MHz), mac (cmac gt_txusrclk2, 322.265625 MHz; the
// CMAC's RX is clocked by rx_clk = gt_txusrclk2, its RX elastic buffer being on), init
// (100 MHz). Crossings, all through hdl/rtl blocks with their constraints in roce_u250.xdc:
// the two async FIFOs (Gray read pointer + write-pointer handshake), roce_sync_level for the
// status bits (MAC aligned -> core; link up -> MAC), roce_rst_sync reset bridges.
//
// Resets. core_rst: the engine and the bridges, from axi_aresetn (PCIe link reset or
// PERST#). The FIFOs' two sides must reset together (roce_axis_async_fifo header): both come
// from one source, fifo_arst = core reset | MAC user resets | init clock not locked,
// through a reset bridge into each domain. While a FIFO is in reset its frame gates
// discard whole frames, so neither side ever sees the tail of a frame cut by a reset: the
// engine's TX frames are dropped while the MAC is down (as a wire would lose them), the MAC's
// RX frames while the core is in reset.
// CMAC bring-up (its PG203 sequence): after usr_tx_reset falls, transmit remote-fault
// (ctl_tx_send_rfi) until stat_rx_aligned, then ctl_tx_enable; engine frames go to the MAC
// only while it is enabled, and whole (frame gate on the MAC side of the TX FIFO).
//
// Not wired yet: roce_dma_axi's wr_error (a write that did not reach host memory) should
// raise the engine's FATAL, which roce_engine ties low internally; here it latches LED 2.
// PFC / pause frames: the CMAC is built without flow control. Inline doorbells: the
// BlueFlame window (BAR2) is not mapped yet, so the engine is built with BF=0 (CAPS.BF
// clear; drivers use SQ_DB).
//
// Parameters: the engine's sizes (roce_engine), passed through.

`resetall
`default_nettype none

module roce_u250_top #(
  parameter int LOG_MAX_QP = 10,
  parameter int LOG_MAX_CQ = 8,
  parameter int LOG_MAX_MR = 10,
  parameter int MAX_MTU = 5
) (
  // PCIe edge connector (GTY quads 224-227), 100 MHz reference, PERST#
  input  wire logic [15:0] pcie_rx_p,
  input  wire logic [15:0] pcie_rx_n,
  output      logic [15:0] pcie_tx_p,
  output      logic [15:0] pcie_tx_n,
  input  wire logic        pcie_refclk_p,
  input  wire logic        pcie_refclk_n,
  input  wire logic        pcie_reset_n,

  // 300 MHz board oscillator (SYSCLK0)
  input  wire logic        clk_300_p,
  input  wire logic        clk_300_n,

  // QSFP28 cage 0 (GTY quad 231), 161.1328125 MHz reference (MGTREFCLK1, from the SI5335
  // with FS = 0b10), module sideband
  input  wire logic [3:0]  qsfp0_rx_p,
  input  wire logic [3:0]  qsfp0_rx_n,
  output      logic [3:0]  qsfp0_tx_p,
  output      logic [3:0]  qsfp0_tx_n,
  input  wire logic        qsfp0_refclk_p,
  input  wire logic        qsfp0_refclk_n,
  output      logic        qsfp0_modsell,
  output      logic        qsfp0_resetl,
  output      logic        qsfp0_lpmode,
  output      logic        qsfp0_refclk_reset,
  output      logic [1:0]  qsfp0_fs,
  input  wire logic        qsfp0_modprsl,
  input  wire logic        qsfp0_intl,

  // user LEDs: 0 PCIe link up, 1 100G link aligned, 2 DMA write error / MAC TX underflow (sticky)
  output      logic [2:0]  led
);

  localparam int DMA_TAG_W = 4;
  localparam int AXI_ID_W = 4;
  localparam int FIFO_DEPTH = 512;        // beats: 32 KiB per direction, three 9 KiB frames

  // QSFP28 sideband: module selected, out of reset, high power; reference clock at 161 MHz
  assign qsfp0_modsell = 1'b0;
  assign qsfp0_resetl = 1'b1;
  assign qsfp0_lpmode = 1'b0;
  assign qsfp0_refclk_reset = 1'b0;
  assign qsfp0_fs = 2'b10;

  // ================================================================ clocks and resets
  logic pcie_refclk_gt, pcie_refclk_div;
  IBUFDS_GTE4 #(.REFCLK_EN_TX_PATH(1'b0), .REFCLK_HROW_CK_SEL(2'b00), .REFCLK_ICNTL_RX(2'b00))
  u_pcie_refclk (
    .I(pcie_refclk_p), .IB(pcie_refclk_n), .CEB(1'b0), .O(pcie_refclk_gt), .ODIV2(pcie_refclk_div)
  );

  // init clock: 300 MHz -> MMCM (VCO 1200 MHz) -> 100 MHz
  logic clk_300_ibuf, clk_300, mmcm_fb, clk_init_mmcm, clk_init, mmcm_locked;
  IBUFDS u_clk_300_ibuf (.I(clk_300_p), .IB(clk_300_n), .O(clk_300_ibuf));
  BUFG u_clk_300_bufg (.I(clk_300_ibuf), .O(clk_300));
  MMCME4_BASE #(
    .CLKIN1_PERIOD(3.333), .CLKFBOUT_MULT_F(4.0), .DIVCLK_DIVIDE(1), .CLKOUT0_DIVIDE_F(12.0)
  ) u_mmcm (
    .CLKIN1(clk_300), .CLKFBIN(mmcm_fb), .RST(1'b0), .PWRDWN(1'b0),
    .CLKOUT0(clk_init_mmcm), .CLKFBOUT(mmcm_fb), .LOCKED(mmcm_locked)
  );
  BUFG u_clk_init_bufg (.I(clk_init_mmcm), .O(clk_init));
  logic init_rst;
  roce_rst_sync u_init_rst (.clk(clk_init), .arst(!mmcm_locked), .rst_out(init_rst));

  logic clk;              // core clock: xdma axi_aclk, 250 MHz
  logic axi_aresetn, user_lnk_up;
  logic core_rst;
  roce_rst_sync u_core_rst (.clk, .arst(!axi_aresetn), .rst_out(core_rst));

  logic mac_clk;          // cmac gt_txusrclk2, 322.265625 MHz
  logic usr_tx_reset, usr_rx_reset;
  logic mac_rst;
  roce_rst_sync u_mac_rst (.clk(mac_clk), .arst(usr_tx_reset || usr_rx_reset), .rst_out(mac_rst));

  // one reset for both sides of both FIFOs
  logic fifo_arst, fifo_rst_core, fifo_rst_mac;
  assign fifo_arst = !axi_aresetn || usr_tx_reset || usr_rx_reset || init_rst;
  roce_rst_sync u_fifo_rst_core (.clk, .arst(fifo_arst), .rst_out(fifo_rst_core));
  roce_rst_sync u_fifo_rst_mac (.clk(mac_clk), .arst(fifo_arst), .rst_out(fifo_rst_mac));

  // ================================================================ PCIe: xdma_0
  logic irq;
  logic [0:0] usr_irq_ack;

  logic [AXI_ID_W-1:0] bar_awid, bar_bid, bar_arid, bar_rid;
  logic [63:0]  bar_awaddr, bar_araddr;
  logic [7:0]   bar_awlen, bar_arlen;
  logic [2:0]   bar_awsize, bar_arsize, bar_awprot, bar_arprot;
  logic [1:0]   bar_awburst, bar_arburst, bar_bresp, bar_rresp;
  logic         bar_awlock, bar_arlock;
  logic [3:0]   bar_awcache, bar_arcache;
  logic         bar_awvalid, bar_awready, bar_wlast, bar_wvalid, bar_wready, bar_bvalid,
                bar_bready, bar_arvalid, bar_arready, bar_rlast, bar_rvalid, bar_rready;
  logic [511:0] bar_wdata, bar_rdata;
  logic [63:0]  bar_wstrb;

  logic [AXI_ID_W-1:0] dma_awid, dma_bid, dma_arid, dma_rid;
  logic [63:0]  dma_awaddr, dma_araddr;
  logic [7:0]   dma_awlen, dma_arlen;
  logic [2:0]   dma_awsize, dma_arsize;
  logic [1:0]   dma_awburst, dma_arburst, dma_bresp, dma_rresp;
  logic         dma_awvalid, dma_awready, dma_wlast, dma_wvalid, dma_wready, dma_bvalid,
                dma_bready, dma_arvalid, dma_arready, dma_rlast, dma_rvalid, dma_rready;
  logic [511:0] dma_wdata, dma_rdata;
  logic [63:0]  dma_wstrb;

  xdma_0 u_xdma (
    .sys_clk(pcie_refclk_div), .sys_clk_gt(pcie_refclk_gt), .sys_rst_n(pcie_reset_n),
    .pci_exp_txp(pcie_tx_p), .pci_exp_txn(pcie_tx_n), .pci_exp_rxp(pcie_rx_p),
    .pci_exp_rxn(pcie_rx_n),
    .user_lnk_up, .axi_aclk(clk), .axi_aresetn,
    .usr_irq_req(irq), .usr_irq_ack,

    .m_axib_awid(bar_awid), .m_axib_awaddr(bar_awaddr), .m_axib_awlen(bar_awlen),
    .m_axib_awsize(bar_awsize), .m_axib_awburst(bar_awburst), .m_axib_awprot(bar_awprot),
    .m_axib_awlock(bar_awlock), .m_axib_awcache(bar_awcache), .m_axib_awvalid(bar_awvalid),
    .m_axib_awready(bar_awready), .m_axib_wdata(bar_wdata), .m_axib_wstrb(bar_wstrb),
    .m_axib_wlast(bar_wlast), .m_axib_wvalid(bar_wvalid), .m_axib_wready(bar_wready),
    .m_axib_bid(bar_bid), .m_axib_bresp(bar_bresp), .m_axib_bvalid(bar_bvalid),
    .m_axib_bready(bar_bready), .m_axib_arid(bar_arid), .m_axib_araddr(bar_araddr),
    .m_axib_arlen(bar_arlen), .m_axib_arsize(bar_arsize), .m_axib_arburst(bar_arburst),
    .m_axib_arprot(bar_arprot), .m_axib_arlock(bar_arlock), .m_axib_arcache(bar_arcache),
    .m_axib_arvalid(bar_arvalid), .m_axib_arready(bar_arready), .m_axib_rid(bar_rid),
    .m_axib_rdata(bar_rdata), .m_axib_rresp(bar_rresp), .m_axib_rlast(bar_rlast),
    .m_axib_rvalid(bar_rvalid), .m_axib_rready(bar_rready),

    .s_axib_awid(dma_awid), .s_axib_awaddr(dma_awaddr), .s_axib_awregion(4'd0),
    .s_axib_awlen(dma_awlen), .s_axib_awsize(dma_awsize), .s_axib_awburst(dma_awburst),
    .s_axib_awvalid(dma_awvalid), .s_axib_awready(dma_awready), .s_axib_wdata(dma_wdata),
    .s_axib_wstrb(dma_wstrb), .s_axib_wlast(dma_wlast), .s_axib_wvalid(dma_wvalid),
    .s_axib_wready(dma_wready), .s_axib_bid(dma_bid), .s_axib_bresp(dma_bresp),
    .s_axib_bvalid(dma_bvalid), .s_axib_bready(dma_bready), .s_axib_arid(dma_arid),
    .s_axib_araddr(dma_araddr), .s_axib_arregion(4'd0), .s_axib_arlen(dma_arlen),
    .s_axib_arsize(dma_arsize), .s_axib_arburst(dma_arburst), .s_axib_arvalid(dma_arvalid),
    .s_axib_arready(dma_arready), .s_axib_rid(dma_rid), .s_axib_rdata(dma_rdata),
    .s_axib_rresp(dma_rresp), .s_axib_rlast(dma_rlast), .s_axib_rvalid(dma_rvalid),
    .s_axib_rready(dma_rready)
  );

  // ================================================================ BAR0 -> registers
  logic [15:0] axil_awaddr, axil_araddr;
  logic [31:0] axil_wdata, axil_rdata;
  logic [3:0]  axil_wstrb;
  logic [1:0]  axil_bresp, axil_rresp;
  logic        axil_awvalid, axil_awready, axil_wvalid, axil_wready, axil_bvalid, axil_bready,
               axil_arvalid, axil_arready, axil_rvalid, axil_rready;

  roce_axi_axil #(.DATA_W(512), .ID_W(AXI_ID_W), .S_ADDR_W(64), .ADDR_W(16)) u_bar (
    .clk, .rst(core_rst),
    .s_axi_awid(bar_awid), .s_axi_awaddr(bar_awaddr), .s_axi_awlen(bar_awlen),
    .s_axi_awsize(bar_awsize), .s_axi_awburst(bar_awburst), .s_axi_awvalid(bar_awvalid),
    .s_axi_awready(bar_awready), .s_axi_wdata(bar_wdata), .s_axi_wstrb(bar_wstrb),
    .s_axi_wlast(bar_wlast), .s_axi_wvalid(bar_wvalid), .s_axi_wready(bar_wready),
    .s_axi_bid(bar_bid), .s_axi_bresp(bar_bresp), .s_axi_bvalid(bar_bvalid),
    .s_axi_bready(bar_bready), .s_axi_arid(bar_arid), .s_axi_araddr(bar_araddr),
    .s_axi_arlen(bar_arlen), .s_axi_arsize(bar_arsize), .s_axi_arburst(bar_arburst),
    .s_axi_arvalid(bar_arvalid), .s_axi_arready(bar_arready), .s_axi_rid(bar_rid),
    .s_axi_rdata(bar_rdata), .s_axi_rresp(bar_rresp), .s_axi_rlast(bar_rlast),
    .s_axi_rvalid(bar_rvalid), .s_axi_rready(bar_rready),
    .m_axil_awaddr(axil_awaddr), .m_axil_awvalid(axil_awvalid), .m_axil_awready(axil_awready),
    .m_axil_wdata(axil_wdata), .m_axil_wstrb(axil_wstrb), .m_axil_wvalid(axil_wvalid),
    .m_axil_wready(axil_wready), .m_axil_bresp(axil_bresp), .m_axil_bvalid(axil_bvalid),
    .m_axil_bready(axil_bready), .m_axil_araddr(axil_araddr), .m_axil_arvalid(axil_arvalid),
    .m_axil_arready(axil_arready), .m_axil_rdata(axil_rdata), .m_axil_rresp(axil_rresp),
    .m_axil_rvalid(axil_rvalid), .m_axil_rready(axil_rready)
  );

  // ================================================================ the engine
  logic [511:0] rx_tdata, tx_tdata;
  logic [63:0]  rx_tkeep, tx_tkeep;
  logic         rx_tvalid, rx_tready, rx_tlast, rx_tuser;
  logic         tx_tvalid, tx_tready, tx_tlast, tx_tuser;

  logic                 rdq_valid, rdq_ready, rd_tvalid, rd_tready, rd_tlast, rd_tuser;
  roce_rec_pkg::dma_req_t rdq, wrq;
  logic [DMA_TAG_W-1:0] rdq_tag, rd_tid;
  logic [511:0]         rd_tdata, wr_tdata;
  logic                 wrq_valid, wrq_ready, wr_tvalid, wr_tready, wr_tlast;
  logic [63:0]          wr_tkeep;
  logic                 link_up_core;
  logic                 bf_tready_unused;  // BF=0: no BlueFlame window on this board yet

  roce_engine #(
    .LOG_MAX_QP(LOG_MAX_QP), .LOG_MAX_CQ(LOG_MAX_CQ), .LOG_MAX_MR(LOG_MAX_MR),
    .MAX_MTU(MAX_MTU), .DMA_TAG_W(DMA_TAG_W), .BF(0)
  ) u_engine (
    .clk, .rst(core_rst),
    .s_axil_awaddr(axil_awaddr), .s_axil_awvalid(axil_awvalid), .s_axil_awready(axil_awready),
    .s_axil_wdata(axil_wdata), .s_axil_wstrb(axil_wstrb), .s_axil_wvalid(axil_wvalid),
    .s_axil_wready(axil_wready), .s_axil_bresp(axil_bresp), .s_axil_bvalid(axil_bvalid),
    .s_axil_bready(axil_bready), .s_axil_araddr(axil_araddr), .s_axil_arvalid(axil_arvalid),
    .s_axil_arready(axil_arready), .s_axil_rdata(axil_rdata), .s_axil_rresp(axil_rresp),
    .s_axil_rvalid(axil_rvalid), .s_axil_rready(axil_rready),
    .irq,
    .s_axis_bf_tdata('0), .s_axis_bf_tvalid(1'b0), .s_axis_bf_tready(bf_tready_unused),
    .s_axis_bf_tlast(1'b0),
    .s_axis_rx_tdata(rx_tdata), .s_axis_rx_tkeep(rx_tkeep), .s_axis_rx_tvalid(rx_tvalid),
    .s_axis_rx_tready(rx_tready), .s_axis_rx_tlast(rx_tlast), .s_axis_rx_tuser(rx_tuser),
    .m_axis_tx_tdata(tx_tdata), .m_axis_tx_tkeep(tx_tkeep), .m_axis_tx_tvalid(tx_tvalid),
    .m_axis_tx_tready(tx_tready), .m_axis_tx_tlast(tx_tlast), .m_axis_tx_tuser(tx_tuser),
    .m_dma_rd_valid(rdq_valid), .m_dma_rd_ready(rdq_ready), .m_dma_rd(rdq),
    .m_dma_rd_tag(rdq_tag),
    .s_dma_rd_tdata(rd_tdata), .s_dma_rd_tvalid(rd_tvalid), .s_dma_rd_tready(rd_tready),
    .s_dma_rd_tlast(rd_tlast), .s_dma_rd_tuser(rd_tuser), .s_dma_rd_tid(rd_tid),
    .m_dma_wr_valid(wrq_valid), .m_dma_wr_ready(wrq_ready), .m_dma_wr(wrq),
    .m_axis_dma_wr_tdata(wr_tdata), .m_axis_dma_wr_tkeep(wr_tkeep),
    .m_axis_dma_wr_tvalid(wr_tvalid), .m_axis_dma_wr_tready(wr_tready),
    .m_axis_dma_wr_tlast(wr_tlast),
    .status_link_up(link_up_core)
  );

  // ================================================================ DMA -> host memory
  logic dma_rd_error, dma_wr_error;
  roce_dma_axi #(.TAG_W(DMA_TAG_W), .ID_W(AXI_ID_W), .MAX_BURST(64), .RD_QUEUE(16),
                 .WR_QUEUE(4), .WR_ID(0)) u_dma (
    .clk, .rst(core_rst),
    .s_dma_rd_valid(rdq_valid), .s_dma_rd_ready(rdq_ready), .s_dma_rd(rdq),
    .s_dma_rd_tag(rdq_tag),
    .m_dma_rd_tdata(rd_tdata), .m_dma_rd_tvalid(rd_tvalid), .m_dma_rd_tready(rd_tready),
    .m_dma_rd_tlast(rd_tlast), .m_dma_rd_tuser(rd_tuser), .m_dma_rd_tid(rd_tid),
    .s_dma_wr_valid(wrq_valid), .s_dma_wr_ready(wrq_ready), .s_dma_wr(wrq),
    .s_axis_dma_wr_tdata(wr_tdata), .s_axis_dma_wr_tkeep(wr_tkeep),
    .s_axis_dma_wr_tvalid(wr_tvalid), .s_axis_dma_wr_tready(wr_tready),
    .s_axis_dma_wr_tlast(wr_tlast),
    .m_axi_arid(dma_arid), .m_axi_araddr(dma_araddr), .m_axi_arlen(dma_arlen),
    .m_axi_arsize(dma_arsize), .m_axi_arburst(dma_arburst), .m_axi_arvalid(dma_arvalid),
    .m_axi_arready(dma_arready), .m_axi_rid(dma_rid), .m_axi_rdata(dma_rdata),
    .m_axi_rresp(dma_rresp), .m_axi_rlast(dma_rlast), .m_axi_rvalid(dma_rvalid),
    .m_axi_rready(dma_rready),
    .m_axi_awid(dma_awid), .m_axi_awaddr(dma_awaddr), .m_axi_awlen(dma_awlen),
    .m_axi_awsize(dma_awsize), .m_axi_awburst(dma_awburst), .m_axi_awvalid(dma_awvalid),
    .m_axi_awready(dma_awready), .m_axi_wdata(dma_wdata), .m_axi_wstrb(dma_wstrb),
    .m_axi_wlast(dma_wlast), .m_axi_wvalid(dma_wvalid), .m_axi_wready(dma_wready),
    .m_axi_bid(dma_bid), .m_axi_bresp(dma_bresp), .m_axi_bvalid(dma_bvalid),
    .m_axi_bready(dma_bready),
    .rd_error(dma_rd_error), .wr_error(dma_wr_error)
  );

  // ================================================================ 100G MAC: cmac_usplus_0
  logic         cmac_rx_tvalid, cmac_rx_tlast, cmac_rx_tuser, stat_rx_aligned;
  logic [511:0] cmac_rx_tdata, cmac_tx_tdata;
  logic [63:0]  cmac_rx_tkeep, cmac_tx_tkeep;
  logic         cmac_tx_tvalid, cmac_tx_tready, cmac_tx_tlast, cmac_tx_tuser;
  logic         tx_ovfout, tx_unfout;
  logic [15:0]  drp_do;
  logic         drp_rdy;
  logic         ctl_tx_enable, ctl_tx_send_rfi;

  cmac_usplus_0 u_cmac (
    .gt_rxp_in(qsfp0_rx_p), .gt_rxn_in(qsfp0_rx_n), .gt_txp_out(qsfp0_tx_p),
    .gt_txn_out(qsfp0_tx_n), .gt_ref_clk_p(qsfp0_refclk_p), .gt_ref_clk_n(qsfp0_refclk_n),
    .init_clk(clk_init), .sys_reset(init_rst), .gt_txusrclk2(mac_clk),
    .gt_loopback_in(12'd0), .gtwiz_reset_tx_datapath(1'b0), .gtwiz_reset_rx_datapath(1'b0),

    .rx_clk(mac_clk), .core_rx_reset(1'b0), .usr_rx_reset,
    .rx_axis_tvalid(cmac_rx_tvalid), .rx_axis_tdata(cmac_rx_tdata),
    .rx_axis_tlast(cmac_rx_tlast), .rx_axis_tkeep(cmac_rx_tkeep), .rx_axis_tuser(cmac_rx_tuser),
    .stat_rx_aligned,
    .ctl_rx_enable(1'b1), .ctl_rx_force_resync(1'b0), .ctl_rx_test_pattern(1'b0),
    .ctl_rsfec_ieee_error_indication_mode(1'b0), .ctl_rx_rsfec_enable(1'b1),
    .ctl_rx_rsfec_enable_correction(1'b1), .ctl_rx_rsfec_enable_indication(1'b1),

    .core_tx_reset(1'b0), .usr_tx_reset,
    .tx_axis_tready(cmac_tx_tready), .tx_axis_tvalid(cmac_tx_tvalid),
    .tx_axis_tdata(cmac_tx_tdata), .tx_axis_tlast(cmac_tx_tlast), .tx_axis_tkeep(cmac_tx_tkeep),
    .tx_axis_tuser(cmac_tx_tuser), .tx_preamblein(56'd0), .tx_ovfout, .tx_unfout,
    .ctl_tx_enable, .ctl_tx_send_idle(1'b0), .ctl_tx_send_rfi, .ctl_tx_send_lfi(1'b0),
    .ctl_tx_test_pattern(1'b0), .ctl_tx_rsfec_enable(1'b1),

    .core_drp_reset(1'b0), .drp_clk(clk_init), .drp_addr(10'd0), .drp_di(16'd0),
    .drp_en(1'b0), .drp_we(1'b0), .drp_do, .drp_rdy
  );

  // bring-up: remote fault until aligned, then transmit
  logic rx_aligned_mac;
  roce_sync_level u_aligned_mac (.clk(mac_clk), .d(stat_rx_aligned), .q(rx_aligned_mac));
  always_ff @(posedge mac_clk) begin
    ctl_tx_enable <= rx_aligned_mac;
    ctl_tx_send_rfi <= !rx_aligned_mac;
    if (mac_rst) begin
      ctl_tx_enable <= 1'b0;
      ctl_tx_send_rfi <= 1'b0;
    end
  end
  roce_sync_level u_link_core (.clk, .d(stat_rx_aligned), .q(link_up_core));

  // ---- RX: MAC -> gate -> FIFO (drops whole frames when full) -> engine
  logic rx_gate_tvalid, rx_gate_tready;
  logic rx_drop, rx_fifo_tready;   // DROP_WHEN_FULL: tready always high
  roce_axis_frame_gate u_rx_gate (
    .clk(mac_clk), .rst(mac_rst), .en(!fifo_rst_mac),
    .s_axis_tvalid(cmac_rx_tvalid), .s_axis_tready(rx_gate_tready), .s_axis_tlast(cmac_rx_tlast),
    .m_axis_tvalid(rx_gate_tvalid), .m_axis_tready(1'b1)
  );
  roce_axis_async_fifo #(
    .DATA_W(512), .USER_W(1), .DEPTH(FIFO_DEPTH), .FRAME(1), .DROP_WHEN_FULL(1)
  ) u_rx_fifo (
    .clk(mac_clk), .rst(fifo_rst_mac),
    .s_axis_tdata(cmac_rx_tdata), .s_axis_tkeep(cmac_rx_tkeep), .s_axis_tvalid(rx_gate_tvalid),
    .s_axis_tready(rx_fifo_tready), .s_axis_tlast(cmac_rx_tlast), .s_axis_tuser(cmac_rx_tuser),
    .s_drop(rx_drop),
    .m_clk(clk), .m_rst(fifo_rst_core),
    .m_axis_tdata(rx_tdata), .m_axis_tkeep(rx_tkeep), .m_axis_tvalid(rx_tvalid),
    .m_axis_tready(rx_tready), .m_axis_tlast(rx_tlast), .m_axis_tuser(rx_tuser)
  );

  // ---- TX: engine -> gate (FIFO out of reset) -> FIFO (store and forward) -> gate (MAC
  // transmitting) -> MAC
  logic txf_s_tvalid, txf_s_tready, txf_m_tvalid, txf_m_tready, txf_m_tlast, txf_m_tuser;
  logic [511:0] txf_m_tdata;
  logic [63:0]  txf_m_tkeep;
  logic         tx_drop_unused;
  roce_axis_frame_gate u_tx_gate_core (
    .clk, .rst(core_rst), .en(!fifo_rst_core),
    .s_axis_tvalid(tx_tvalid), .s_axis_tready(tx_tready), .s_axis_tlast(tx_tlast),
    .m_axis_tvalid(txf_s_tvalid), .m_axis_tready(txf_s_tready)
  );
  roce_axis_async_fifo #(
    .DATA_W(512), .USER_W(1), .DEPTH(FIFO_DEPTH), .FRAME(1), .DROP_WHEN_FULL(0)
  ) u_tx_fifo (
    .clk, .rst(fifo_rst_core),
    .s_axis_tdata(tx_tdata), .s_axis_tkeep(tx_tkeep), .s_axis_tvalid(txf_s_tvalid),
    .s_axis_tready(txf_s_tready), .s_axis_tlast(tx_tlast), .s_axis_tuser(tx_tuser),
    .s_drop(tx_drop_unused),
    .m_clk(mac_clk), .m_rst(fifo_rst_mac),
    .m_axis_tdata(txf_m_tdata), .m_axis_tkeep(txf_m_tkeep), .m_axis_tvalid(txf_m_tvalid),
    .m_axis_tready(txf_m_tready), .m_axis_tlast(txf_m_tlast), .m_axis_tuser(txf_m_tuser)
  );
  roce_axis_frame_gate u_tx_gate_mac (
    .clk(mac_clk), .rst(fifo_rst_mac), .en(ctl_tx_enable),
    .s_axis_tvalid(txf_m_tvalid), .s_axis_tready(txf_m_tready), .s_axis_tlast(txf_m_tlast),
    .m_axis_tvalid(cmac_tx_tvalid), .m_axis_tready(cmac_tx_tready)
  );
  assign cmac_tx_tdata = txf_m_tdata;
  assign cmac_tx_tkeep = txf_m_tkeep;
  assign cmac_tx_tlast = txf_m_tlast;
  assign cmac_tx_tuser = txf_m_tuser;

  // ================================================================ status LEDs
  logic dma_err_sticky, tx_unf_sticky, tx_unf_core;
  always_ff @(posedge clk) begin
    if (dma_wr_error) dma_err_sticky <= 1'b1;
    if (core_rst) dma_err_sticky <= 1'b0;
  end
  always_ff @(posedge mac_clk) begin
    if (tx_unfout) tx_unf_sticky <= 1'b1;
    if (mac_rst) tx_unf_sticky <= 1'b0;
  end
  roce_sync_level u_unf_core (.clk, .d(tx_unf_sticky), .q(tx_unf_core));
  assign led = {dma_err_sticky || tx_unf_core, link_up_core, user_lnk_up};

  logic unused;
  assign unused = ^{usr_irq_ack, bar_awprot, bar_awlock, bar_awcache, bar_arprot, bar_arlock,
                    bar_arcache, dma_rd_error, tx_ovfout, drp_do, drp_rdy, rx_gate_tready,
                    rx_drop, rx_fifo_tready, tx_drop_unused, qsfp0_modprsl, qsfp0_intl};

endmodule

`resetall
