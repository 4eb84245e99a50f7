# SPDX-License-Identifier: Apache-2.0 OR MIT
#
# Vivado build of roce_u250_top for the Alveo U250: project, IP (xdma_0, cmac_usplus_0),
# synthesis, implementation, bitstream, reports. NOT RUN HERE (no Vivado in this project's
# CI): written for Vivado 2022.x-2023.x; the IP property names are those of xdma 4.1 and
# cmac_usplus 3.1 and must be checked against the version used (README.md).
#
#   vivado -mode batch -source boards/alveo-u250/build.tcl -tclargs [STEP [OUT [JOBS]]]
#
#   STEP  project | synth | impl | bitstream (default bitstream): how far to go
#   OUT   output directory (default target/vivado-u250 in the repository)
#   JOBS  parallel runs (default 4)
#
# Reports land in OUT/reports/: utilization (flat and hierarchical), timing summary, clock
# interaction and CDC after synthesis and after implementation. The run fails on a
# synthesis or implementation error and, after implementation, on negative slack.

set here [file dirname [file normalize [info script]]]
set root [file normalize [file join $here .. ..]]
set step [expr {$argc >= 1 ? [lindex $argv 0] : "bitstream"}]
set out  [expr {$argc >= 2 ? [file normalize [lindex $argv 1]] : [file join $root target vivado-u250]}]
set jobs [expr {$argc >= 3 ? [lindex $argv 2] : 4}]
if {$step ni {project synth impl bitstream}} {
  error "build.tcl: STEP must be project, synth, impl or bitstream, not '$step'"
}
set part xcu250-figd2104-2L-e
set reports [file join $out reports]
file mkdir $reports

# ---------------------------------------------------------------- sources
# The file list is the `board u250_top` line of hdl/configs.txt (the list the lint
# and Yosys checks read), without the black-box stubs, which stand in for the IP below.
proc config_files {path name} {
  set fh [open $path r]
  set sets [dict create]
  set files {}
  set found 0
  while {[gets $fh line] >= 0} {
    set line [string trim [lindex [split $line "#"] 0]]
    if {$line eq ""} { continue }
    set w [regexp -all -inline {\S+} $line]
    set kind [lindex $w 0]
    switch -- $kind {
      fileset { set items [lrange $w 2 end] }
      config - synth - model - board { set items [lrange $w 4 end] }
      default { close $fh; error "$path: unknown directive '$kind'" }
    }
    set expanded {}
    foreach item $items {
      if {[string index $item 0] eq "@"} {
        lappend expanded {*}[dict get $sets [string range $item 1 end]]
      } elseif {[string first "/" $item] >= 0} {
        lappend expanded $item
      } elseif {[file exists [file join $::root hdl rtl gen $item]]} {
        lappend expanded "hdl/rtl/gen/$item"
      } else {
        lappend expanded "hdl/rtl/$item"
      }
    }
    if {$kind eq "fileset"} {
      dict set sets [lindex $w 1] $expanded
    } elseif {[lindex $w 1] eq $name} {
      set files $expanded
      set found 1
    }
  }
  close $fh
  if {!$found} { error "$path: no configuration '$name'" }
  return $files
}

set sources {}
foreach f [config_files [file join $root hdl configs.txt] u250_top] {
  if {[string match "*vendor_stubs.sv" $f]} { continue }
  lappend sources [file join $root $f]
}

create_project -force roce_u250 [file join $out project] -part $part
# The board files, where installed, give Vivado the U250's PCIe and QSFP interfaces.
set board_parts [lsort [get_board_parts -quiet -latest_file_version {*au250*}]]
if {[llength $board_parts] > 0} {
  set_property board_part [lindex $board_parts end] [current_project]
}
set_property target_language Verilog [current_project]
add_files -norecurse $sources
set_property file_type SystemVerilog [get_files *.sv]
set_property top roce_u250_top [current_fileset]
add_files -fileset constrs_1 -norecurse [file join $here roce_u250.xdc]

# ---------------------------------------------------------------- IP: PCIe (xdma_0)
# DMA/Bridge Subsystem in AXI Bridge mode: Gen3 x16, 512-bit AXI at 250 MHz (axi_aclk is the
# engine's clock). BAR0 (64 KiB, the engine's registers) -> m_axib at AXI address 0;
# s_axib (the engine's DMA) -> host memory with the AXI address = the bus address (one AXI
# BAR covering the whole 64-bit space, no translation). One user interrupt (MSI).
create_ip -name xdma -vendor xilinx.com -library ip -module_name xdma_0
set_property -dict [list \
  CONFIG.functional_mode {AXI_Bridge} \
  CONFIG.mode_selection {Advanced} \
  CONFIG.device_port_type {PCI_Express_Endpoint_device} \
  CONFIG.pl_link_cap_max_link_width {X16} \
  CONFIG.pl_link_cap_max_link_speed {8.0_GT/s} \
  CONFIG.ref_clk_freq {100_MHz} \
  CONFIG.axi_data_width {512_bit} \
  CONFIG.axisten_freq {250} \
  CONFIG.axi_addr_width {64} \
  CONFIG.en_axi_master_if {true} \
  CONFIG.en_axi_slave_if {true} \
  CONFIG.xdma_axilite_slave {false} \
  CONFIG.pf0_device_id {903f} \
  CONFIG.pf0_base_class_menu {Network_controller} \
  CONFIG.pf0_class_code_base {02} \
  CONFIG.pf0_class_code_sub {80} \
  CONFIG.pf0_class_code_interface {00} \
  CONFIG.pf0_bar0_64bit {true} \
  CONFIG.pf0_bar0_scale {Kilobytes} \
  CONFIG.pf0_bar0_size {64} \
  CONFIG.pciebar2axibar_0 {0x0000000000000000} \
  CONFIG.axibar_num {1} \
  CONFIG.axibar_0 {0x0000000000000000} \
  CONFIG.axibar_highaddr_0 {0xFFFFFFFFFFFFFFFF} \
  CONFIG.axibar2pciebar_0 {0x0000000000000000} \
  CONFIG.pf0_msi_enabled {true} \
  CONFIG.xdma_num_usr_irq {1} \
] [get_ips xdma_0]
if {[llength $board_parts] > 0} {
  set_property -dict [list \
    CONFIG.PCIE_BOARD_INTERFACE {pci_express_x16} \
    CONFIG.SYS_RST_N_BOARD_INTERFACE {pcie_perstn} \
  ] [get_ips xdma_0]
}

# ---------------------------------------------------------------- IP: 100G MAC (cmac_usplus_0)
# QSFP28 cage 0 (GTY quad 231, channels X1Y44..47, CMAC site CMACE4_X0Y8), CAUI-4 4 x 25.78
# Gb/s from a 161.1328125 MHz reference, AXI4-Stream user interface (512 bits at
# gt_txusrclk2), RS-FEC (100GBASE-SR4/CR4 need it), no pause frames, 100 MHz init/DRP clock.
# FCS: inserted on TX and removed on RX (the IP's defaults; roce_engine neither makes nor
# expects one, and takes rx tuser as "bad FCS").
create_ip -name cmac_usplus -vendor xilinx.com -library ip -module_name cmac_usplus_0
set_property -dict [list \
  CONFIG.CMAC_CAUI4_MODE {1} \
  CONFIG.NUM_LANES {4x25} \
  CONFIG.GT_REF_CLK_FREQ {161.1328125} \
  CONFIG.USER_INTERFACE {AXIS} \
  CONFIG.GT_DRP_CLK {100} \
  CONFIG.INCLUDE_RS_FEC {1} \
  CONFIG.TX_FLOW_CONTROL {0} \
  CONFIG.RX_FLOW_CONTROL {0} \
  CONFIG.CMAC_CORE_SELECT {CMACE4_X0Y8} \
  CONFIG.GT_GROUP_SELECT {X1Y44~X1Y47} \
  CONFIG.LANE1_GT_LOC {X1Y44} \
  CONFIG.LANE2_GT_LOC {X1Y45} \
  CONFIG.LANE3_GT_LOC {X1Y46} \
  CONFIG.LANE4_GT_LOC {X1Y47} \
  CONFIG.ENABLE_PIPELINE_REG {1} \
] [get_ips cmac_usplus_0]

generate_target all [get_ips]
export_ip_user_files -of_objects [get_ips] -no_script -sync -force -quiet
if {$step eq "project"} { return }

# ---------------------------------------------------------------- synthesis
proc run_ok {run} {
  set status [get_property STATUS [get_runs $run]]
  if {[get_property PROGRESS [get_runs $run]] ne "100%" || [string match "*ERROR*" $status]} {
    error "build.tcl: $run failed: $status"
  }
}
proc report_all {reports tag} {
  report_utilization -file [file join $reports "${tag}_utilization.rpt"]
  report_utilization -hierarchical -hierarchical_depth 3 \
    -file [file join $reports "${tag}_utilization_hier.rpt"]
  report_timing_summary -max_paths 20 -report_unconstrained \
    -file [file join $reports "${tag}_timing_summary.rpt"]
  report_clock_interaction -file [file join $reports "${tag}_clock_interaction.rpt"]
  report_cdc -details -file [file join $reports "${tag}_cdc.rpt"]
}

launch_runs synth_1 -jobs $jobs
wait_on_run synth_1
run_ok synth_1
open_run synth_1 -name synth_1
report_all $reports synth
close_design
if {$step eq "synth"} { return }

# ---------------------------------------------------------------- implementation
if {$step eq "impl"} {
  launch_runs impl_1 -jobs $jobs
} else {
  launch_runs impl_1 -to_step write_bitstream -jobs $jobs
}
wait_on_run impl_1
run_ok impl_1
open_run impl_1 -name impl_1
report_all $reports impl
report_route_status -file [file join $reports impl_route_status.rpt]
set wns [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -setup]]
set whs [get_property SLACK [get_timing_paths -max_paths 1 -nworst 1 -hold]]
puts "build.tcl: WNS $wns ns, WHS $whs ns; reports in $reports"
if {$wns < 0 || $whs < 0} {
  error "build.tcl: timing not met (WNS $wns ns, WHS $whs ns)"
}
if {$step eq "bitstream"} {
  set bit [glob -nocomplain [file join $out project roce_u250.runs impl_1 *.bit]]
  puts "build.tcl: bitstream $bit"
}
