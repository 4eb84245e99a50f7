#!/usr/bin/env bash
# perftest on roce-verbs' libibverbs.so.1 between two processes, each with a simulated engine
# (the model or the Verilated engine), with each engine's figures (ROCE_VERBS_STATS=1: cycles
# from its first to its last RoCE frame, frames, bytes). BENCHMARKS.md has the results.
# Usage: scripts/bench-verbs.sh [SERVER_ENGINE CLIENT_ENGINE] (sim|sim-hdl; default sim sim)
#   PROGS="ib_write_bw ..." SIZE=65536 N=200 LAT_SIZE=64 LAT_N=200 MTU=4096 override the runs;
#   ARGS="..." adds perftest options to both sides (e.g. ARGS="-o 8"); TIMEOUT=600 (s) per side.
# The figures: perftest's own (wall clock, bound by simulation speed), then per engine the
# engine cycles from its first to its last RoCE frame (the Verilated engine: also the cycles it
# was busy; the model runs on the wall clock at 250 MHz, so its cycles are wall time), its
# frame and byte counters, and the bytes its DMA moved from and into the application's
# registered memory (zero copy: the payload, once).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
[ -f "$root/target/verbs/libibverbs.so.1" ] || "$root/scripts/build-verbs.sh"
se=${1:-sim}; ce=${2:-sim}
dir=$(mktemp -d /tmp/bench-verbs.XXXXXX)
trap 'rm -rf "$dir"' EXIT
port=$((20000 + RANDOM % 20000))
for p in ${PROGS:-ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat}; do
  case $p in *_lat) s=${LAT_SIZE:-64}; n=${LAT_N:-200} ;; *) s=${SIZE:-65536}; n=${N:-200} ;; esac
  port=$((port + 1))
  # shellcheck disable=SC2206 # ARGS is split on purpose
  args=(-x 0 -m "${MTU:-4096}" -s "$s" -n "$n" -p "$port" ${ARGS:-})
  env LD_LIBRARY_PATH="$root/target/verbs" ROCE_VERBS_STATS=1 \
    ROCE_VERBS_DEVICE="$se:$dir/a.sock:$dir/b.sock:192.0.2.1" timeout "${TIMEOUT:-600}" "$p" "${args[@]}" >"$dir/srv" 2>"$dir/srv.err" &
  sleep 1
  env LD_LIBRARY_PATH="$root/target/verbs" ROCE_VERBS_STATS=1 \
    ROCE_VERBS_DEVICE="$ce:$dir/b.sock:$dir/a.sock:192.0.2.2" timeout "${TIMEOUT:-600}" "$p" "${args[@]}" 127.0.0.1 >"$dir/cli" 2>"$dir/cli.err" || true
  wait || true
  echo "== $p -s $s -n $n -m ${MTU:-4096} ${ARGS:-}, server $se, client $ce"
  grep -A1 "#bytes" "$dir/cli" | tail -1 || true
  grep -h "roce-verbs stats" "$dir/srv.err" "$dir/cli.err" | sed 's/^roce-verbs stats: /   /'  || true
done
