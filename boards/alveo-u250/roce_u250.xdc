# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Constraints for roce_u250_top on the Xilinx Alveo U250 (xcu250-figd2104-2L-e).
# Read by build.tcl. NOT CHECKED HERE: no open-source tool reads XDC; the pin list follows
# the U250 board's published pinout (UG1289) and must be checked against the board files of
# the Vivado version used. The IP cores (xdma_0, cmac_usplus_0) bring their own constraints
# for their transceivers and internal clocks; this file adds the board, the clocks entering
# the FPGA and the clock-domain crossings of the design.

# ---------------------------------------------------------------- configuration (QSPI flash)
set_property CFGBVS GND                                [current_design]
set_property CONFIG_VOLTAGE 1.8                        [current_design]
set_property BITSTREAM.GENERAL.COMPRESS true           [current_design]
set_property BITSTREAM.CONFIG.CONFIGFALLBACK ENABLE    [current_design]
set_property BITSTREAM.CONFIG.EXTMASTERCCLK_EN DISABLE [current_design]
set_property BITSTREAM.CONFIG.CONFIGRATE 63.8          [current_design]
set_property BITSTREAM.CONFIG.SPI_32BIT_ADDR YES       [current_design]
set_property BITSTREAM.CONFIG.SPI_BUSWIDTH 4           [current_design]
set_property BITSTREAM.CONFIG.SPI_FALL_EDGE YES        [current_design]
set_property BITSTREAM.CONFIG.UNUSEDPIN PULLUP         [current_design]

# ---------------------------------------------------------------- clocks into the FPGA
# 300 MHz board oscillator (SYSCLK0): the MMCM making the CMAC's 100 MHz init/DRP clock
set_property -dict {PACKAGE_PIN AY37 IOSTANDARD LVDS} [get_ports clk_300_p]
set_property -dict {PACKAGE_PIN AY38 IOSTANDARD LVDS} [get_ports clk_300_n]
create_clock -period 3.333 -name clk_300 [get_ports clk_300_p]

# PCIe reference clock, 100 MHz (MGTREFCLK0 of quad 226), and PERST#
set_property PACKAGE_PIN AM11 [get_ports pcie_refclk_p]
set_property PACKAGE_PIN AM10 [get_ports pcie_refclk_n]
create_clock -period 10.000 -name pcie_refclk [get_ports pcie_refclk_p]
set_property -dict {PACKAGE_PIN BD21 IOSTANDARD LVCMOS12 PULLUP true} [get_ports pcie_reset_n]
set_false_path -from [get_ports pcie_reset_n]
# The 16 PCIe lanes (quads 224-227) are placed by the xdma_0 IP (pcie_blk_locn, select_quad
# in build.tcl); their package pins follow from the GT sites.

# QSFP28 cage 0 reference clock, 161.1328125 MHz from the SI5335 with FS = 0b10
# (MGTREFCLK1 of quad 231)
set_property PACKAGE_PIN K11 [get_ports qsfp0_refclk_p]
set_property PACKAGE_PIN K10 [get_ports qsfp0_refclk_n]
create_clock -period 6.206 -name qsfp0_refclk [get_ports qsfp0_refclk_p]

# The clocks the IP makes (xdma axi_aclk 250 MHz = core clock; cmac gt_txusrclk2
# 322.265625 MHz = MAC clock) and the MMCM output are derived by Vivado from the above.

# ---------------------------------------------------------------- QSFP28 cage 0
# lanes: GTY quad 231, channels X1Y44..X1Y47 (cmac_usplus_0 GT_GROUP_SELECT in build.tcl)
set_property PACKAGE_PIN N4 [get_ports {qsfp0_rx_p[0]}]
set_property PACKAGE_PIN N3 [get_ports {qsfp0_rx_n[0]}]
set_property PACKAGE_PIN N9 [get_ports {qsfp0_tx_p[0]}]
set_property PACKAGE_PIN N8 [get_ports {qsfp0_tx_n[0]}]
set_property PACKAGE_PIN M2 [get_ports {qsfp0_rx_p[1]}]
set_property PACKAGE_PIN M1 [get_ports {qsfp0_rx_n[1]}]
set_property PACKAGE_PIN M7 [get_ports {qsfp0_tx_p[1]}]
set_property PACKAGE_PIN M6 [get_ports {qsfp0_tx_n[1]}]
set_property PACKAGE_PIN L4 [get_ports {qsfp0_rx_p[2]}]
set_property PACKAGE_PIN L3 [get_ports {qsfp0_rx_n[2]}]
set_property PACKAGE_PIN L9 [get_ports {qsfp0_tx_p[2]}]
set_property PACKAGE_PIN L8 [get_ports {qsfp0_tx_n[2]}]
set_property PACKAGE_PIN K2 [get_ports {qsfp0_rx_p[3]}]
set_property PACKAGE_PIN K1 [get_ports {qsfp0_rx_n[3]}]
set_property PACKAGE_PIN K7 [get_ports {qsfp0_tx_p[3]}]
set_property PACKAGE_PIN K6 [get_ports {qsfp0_tx_n[3]}]

# module sideband and the reference clock generator's controls
set_property -dict {PACKAGE_PIN BE16 IOSTANDARD LVCMOS12} [get_ports qsfp0_modsell]
set_property -dict {PACKAGE_PIN BE17 IOSTANDARD LVCMOS12} [get_ports qsfp0_resetl]
set_property -dict {PACKAGE_PIN BE20 IOSTANDARD LVCMOS12} [get_ports qsfp0_modprsl]
set_property -dict {PACKAGE_PIN BE21 IOSTANDARD LVCMOS12} [get_ports qsfp0_intl]
set_property -dict {PACKAGE_PIN BD18 IOSTANDARD LVCMOS12} [get_ports qsfp0_lpmode]
set_property -dict {PACKAGE_PIN AT22 IOSTANDARD LVCMOS12} [get_ports qsfp0_refclk_reset]
set_property -dict {PACKAGE_PIN AT20 IOSTANDARD LVCMOS12} [get_ports {qsfp0_fs[0]}]
set_property -dict {PACKAGE_PIN AU22 IOSTANDARD LVCMOS12} [get_ports {qsfp0_fs[1]}]
# static levels and unused inputs: no timing
set_false_path -to [get_ports {qsfp0_modsell qsfp0_resetl qsfp0_lpmode qsfp0_refclk_reset qsfp0_fs[*]}]
set_false_path -from [get_ports {qsfp0_modprsl qsfp0_intl}]

# ---------------------------------------------------------------- LEDs
set_property -dict {PACKAGE_PIN BC21 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[0]}]
set_property -dict {PACKAGE_PIN BB21 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[1]}]
set_property -dict {PACKAGE_PIN BA20 IOSTANDARD LVCMOS12 SLEW SLOW DRIVE 8} [get_ports {led[2]}]
set_false_path -to [get_ports {led[*]}]

# ---------------------------------------------------------------- clock-domain crossings
# Core (250 MHz, 4.0 ns) <-> MAC (322.27 MHz, 3.103 ns). The domains are NOT declared
# asynchronous with set_clock_groups (that would drop the bounds below); instead each
# crossing gets a datapath-only bound of one period of the faster clock, so no crossing
# takes longer than a synchronizer stage waits, and everything else stays timed.
#
# roce_axis_async_fifo (u_tx_fifo: core -> MAC, u_rx_fifo: MAC -> core), see its header:
#   rp_gray -> rp_gray_sync1       Gray-coded read pointer, one bit changes at a time
#   xfer_tog -> tog_sync1          write-pointer handshake request
#   m_ack_tog -> ack_sync1         write-pointer handshake acknowledge
#   wp_xfer -> wp_r                the committed write pointer, stable from the request
#                                  until the acknowledge (at least two destination cycles)
# The FIFO memory (block RAM, one clock per port) has no timed path between its ports; a
# beat is read only after its pointer crossed.
# (written out per FIFO: XDC accepts no loops)
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_tx_fifo/rp_gray_reg*}] -to [get_cells -hier -filter {NAME =~ *u_tx_fifo/rp_gray_sync1_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_tx_fifo/xfer_tog_reg*}] -to [get_cells -hier -filter {NAME =~ *u_tx_fifo/tog_sync1_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_tx_fifo/m_ack_tog_reg*}] -to [get_cells -hier -filter {NAME =~ *u_tx_fifo/ack_sync1_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_tx_fifo/wp_xfer_reg*}] -to [get_cells -hier -filter {NAME =~ *u_tx_fifo/wp_r_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_rx_fifo/rp_gray_reg*}] -to [get_cells -hier -filter {NAME =~ *u_rx_fifo/rp_gray_sync1_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_rx_fifo/xfer_tog_reg*}] -to [get_cells -hier -filter {NAME =~ *u_rx_fifo/tog_sync1_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_rx_fifo/m_ack_tog_reg*}] -to [get_cells -hier -filter {NAME =~ *u_rx_fifo/ack_sync1_reg*}]
set_max_delay -datapath_only 3.100 -from [get_cells -hier -filter {NAME =~ *u_rx_fifo/wp_xfer_reg*}] -to [get_cells -hier -filter {NAME =~ *u_rx_fifo/wp_r_reg*}]

# roce_sync_level (status bits: MAC aligned -> core and -> MAC, TX underflow -> core): single
# bits whose arrival time does not matter beyond the synchronizer; first stage is sync_ff[0].
set_false_path -to [get_cells {u_link_core/sync_ff_reg[0]}]
set_false_path -to [get_cells {u_aligned_mac/sync_ff_reg[0]}]
set_false_path -to [get_cells {u_unf_core/sync_ff_reg[0]}]

# roce_rst_sync (reset bridges): asynchronous assertion through the flip-flops' preset pins,
# from any domain (the FIFO reset is the OR of resets from three domains); release is
# synchronous to each bridge's clock.
set_false_path -to [get_pins -hier -filter {NAME =~ *rst*/rst_sync_reg*/PRE}]
