#!/usr/bin/env bash
# Interop with Linux Soft-RoCE: boot the rdma_rxe VM (QEMU, tests/rxevm/) and run rdma-core's
# tools in it against the engine on the host (the model, or the Verilated HDL engine).
#   scripts/interop.sh [--op pingpong|pingpong-client|pingpong-server|write|read|all]
#                      [--size N[,N...]] [--iters N] [--mtu 256|512|1024|2048|4096]
#                      [--engine model|hdl|both]
# pingpong-client: the VM is the ibv_rc_pingpong client; pingpong-server: the VM is the server;
# write/read: the VM runs ib_write_bw / ib_read_bw against the engine's memory (the last
# --size is used). --engine hdl runs the Verilated engine as the VM's peer (responder,
# and in ping-pong requester and completer too). Needs scripts/setup.sh (QEMU, VM packages).
set -euo pipefail
cd "$(dirname "$0")/.."
op=all
engine=both
while [ $# -gt 0 ]; do
  case "$1" in
    --op) op=$2; shift 2 ;;
    --size) export ROCE_INTEROP_SIZES=$2; shift 2 ;;
    --iters) export ROCE_INTEROP_ITERS=$2; shift 2 ;;
    --mtu) export ROCE_INTEROP_MTU=$2; shift 2 ;;
    --engine) engine=$2; shift 2 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "interop: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$op" in
  pingpong) filter=pingpong ;;
  pingpong-client) filter=pingpong_vm_client ;;
  pingpong-server) filter=pingpong_vm_server ;;
  write) filter=perftest_write ;;
  read) filter=perftest_read ;;
  all) filter="" ;;
  *) echo "interop: --op must be pingpong, pingpong-client, pingpong-server, write, read or all" >&2; exit 2 ;;
esac
skip=()
case "$engine" in
  both) ;;
  model) skip=(--skip hdl_engine) ;;
  hdl)
    case "$op" in
      write) filter=perftest_write_bw_vm_writes_hdl ;;
      read) filter=perftest_read_bw_vm_reads_hdl ;;
      pingpong-client) filter=pingpong_vm_client_hdl ;;
      pingpong-server) filter=pingpong_vm_server_hdl ;;
      pingpong) filter=pingpong; skip=(--skip client_engine --skip server_engine) ;;
      all) filter=hdl_engine ;;
    esac ;;
  *) echo "interop: --engine must be model, hdl or both" >&2; exit 2 ;;
esac
ROCE_RXEVM=1 exec cargo test -q -p roce-tests --test interop_rxe -- --test-threads=1 --nocapture $filter "${skip[@]}"
