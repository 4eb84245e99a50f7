#!/usr/bin/env bash
# Interop with Linux Soft-RoCE: boot the rdma_rxe VM (QEMU, tests/rxevm/) and run rdma-core's
# and perftest's tools in it against the engine on the host (the model, the Verilated engine,
# or the Verilated engine with the model beside it).
#   scripts/interop.sh [--op ping-vm-client|ping-vm-server|write|read|send|all]...
#                      [--size N[,N...]] [--iters N] [--mtu M[,M...]] [--engine model|hdl|cosim|both]
#                      [--netem "loss 3% reorder 2% delay 50us"] [--pcap DIR]
#                      [--drop-out N[,N...]] [--drop-in N[,N...]]
#   scripts/interop.sh --short | --full [--engine model|hdl|cosim|both]
# Every combination of the ops, MTUs and sizes given runs, in one VM boot per engine (defaults:
# all ops, MTU 1024, sizes 64,5000, 5 iterations, both engines). --netem impairs the VM's
# side of the link; --drop-out/--drop-in lose the engine's / the VM's Nth frames of each case
# on the host side; --pcap writes the VM's capture and the engine's own (engine cycles) per
# case. --short is the default suite's matrix, --full the whole one (README of tests/rxevm).
# Needs scripts/setup.sh (QEMU, VM packages).
set -euo pipefail
cd "$(dirname "$0")/.."
ops=()
sizes=64,5000
mtus=1024
iters=5
engine=both
test=custom
while [ $# -gt 0 ]; do
  case "$1" in
    --op) ops+=("$2"); shift 2 ;;
    --size) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --mtu) mtus=$2; shift 2 ;;
    --engine) engine=$2; shift 2 ;;
    --netem) export ROCE_INTEROP_NETEM=$2; shift 2 ;;
    --drop-out) export ROCE_INTEROP_DROP_OUT=$2; shift 2 ;;
    --drop-in) export ROCE_INTEROP_DROP_IN=$2; shift 2 ;;
    --pcap) mkdir -p "$2"; ROCE_INTEROP_PCAP=$(realpath "$2"); export ROCE_INTEROP_PCAP; shift 2 ;;
    --short) test=interop_short; shift ;;
    --full) test=interop_full_matrix; export ROCE_INTEROP_FULL=1; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "interop: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#ops[@]} -eq 0 ] || [ "${ops[*]}" = all ] && ops=(ping-vm-client ping-vm-server write read send)
for o in "${ops[@]}"; do
  case "$o" in
    ping-vm-client|ping-vm-server|write|read|send) ;;
    *) echo "interop: --op must be ping-vm-client, ping-vm-server, write, read, send or all" >&2; exit 2 ;;
  esac
done
case "$engine" in
  model|hdl|both) ;;
  cosim) engine=hdl; export ROCE_INTEROP_COSIM=1 ;;
  *) echo "interop: --engine must be model, hdl, cosim or both" >&2; exit 2 ;;
esac
cases=()
for m in ${mtus//,/ }; do
  for s in ${sizes//,/ }; do
    for o in "${ops[@]}"; do cases+=("$o:$m:$s:$iters"); done
  done
done
export ROCE_INTEROP_CASES="${cases[*]}" ROCE_INTEROP_ENGINE=$engine
exact=(--exact)
[ "$test" = interop_short ] && exact=()
ROCE_RXEVM=1 exec cargo test -q -p roce-tests --test interop_rxe -- --test-threads=1 --nocapture "${exact[@]}" "$test"
