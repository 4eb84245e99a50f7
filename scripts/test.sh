#!/usr/bin/env bash
# The default test suite, what CI runs (.ci/run = scripts/setup.sh, then this). Steps:
#   rustfmt --check; HDL lint (Verilator -Wall over every configuration of hdl/configs.txt,
#   Yosys's front end over every module); generated HDL current; clippy (-D warnings, every
#   unsafe block with a SAFETY comment); cargo test --workspace; the Soft-RoCE VM interop when
#   QEMU is installed; and the Yosys check: the whole engine and every configuration it does
#   not contain (roce-synth --skip-covered, UltraScale+), no netlist deeper than 8 logic
#   levels. Yosys runs in the background from the start (the engine alone is about 11 CPU
#   minutes), beside the Rust steps. One cargo profile (dev, optimized) for tests and tools.
# Each step prints its time, and a summary closes the run. Switches (README, "Tests"):
#   ROCE_RXEVM=0          skip the VM interop tests
#   ROCE_SYNTH=0          skip Yosys
#   ROCE_SYNTH_FULL=1     synthesize every configuration and rewrite boards/synth/REPORT.md
#   ROCE_SYNTH_FAMILIES   Xilinx families for Yosys (default "xcup"; "xc7 xcup" adds 7-series)
#   ROCE_SOAK=1           the tests' longer randomized runs (README, "Soak and fuzz")
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
times=()
cur=""
t0=$SECONDS
step() {
  if [ -n "$cur" ]; then
    times+=("$(printf '%5d s  %s' $((SECONDS - t0)) "$cur")")
    printf '   (%d s)\n' $((SECONDS - t0))
  fi
  cur=$*
  t0=$SECONDS
  [ -z "$cur" ] || printf '\n== %s\n' "$cur"
}
summary() {
  step ""
  printf '\n== times\n'
  printf '%s\n' "${times[@]}"
  printf '%5d s  total\n' $((SECONDS - start))
}

vm=${ROCE_RXEVM:-}
if [ -z "$vm" ] && command -v qemu-system-x86_64 >/dev/null; then
  vm=1
fi
synth_log=target/ci/synth.log
synth_pid=""
trap '[ -n "$synth_pid" ] && kill "$synth_pid" 2>/dev/null; true' EXIT

step "cargo fmt --check"
cargo fmt --all --check

step "HDL lint (verilator --lint-only -Wall)"
scripts/lint-hdl.sh

if [ "${ROCE_SYNTH:-1}" != 0 ]; then
  step "Yosys synthesis: build roce-synth, start it in the background"
  synth=(--no-generic --max-levels 8)
  for f in ${ROCE_SYNTH_FAMILIES:-xcup}; do synth+=(--family "$f"); done
  if [ "${ROCE_SYNTH_FULL:-0}" != 1 ]; then
    synth+=(--skip-covered)
  fi
  cargo build -q -p roce-boards --bin roce-synth
  mkdir -p "$(dirname "$synth_log")"
  target/debug/roce-synth "${synth[@]}" >"$synth_log" 2>&1 &
  synth_pid=$!
  echo "roce-synth ${synth[*]}: log in $synth_log"
fi

step "generated HDL is current"
cargo run -q -p roce-model --bin roce-gen-hdl -- --check

step "cargo clippy"
cargo clippy -q --workspace --all-targets -- -D warnings -D clippy::undocumented_unsafe_blocks

step "cargo test (workspace)"
ROCE_RXEVM=0 cargo test --workspace

if [ "$vm" = 1 ]; then
  step "interop with Linux Soft-RoCE in QEMU (one VM at a time)"
  ROCE_RXEVM=1 cargo test -p roce-tests --test interop_rxe --test rxevm_smoke --test vfio_vm -- --test-threads=1
  step "Debian's verbs programs on roce-verbs' libibverbs.so.1 against Soft-RoCE in QEMU"
  ROCE_RXEVM=1 cargo test -p roce-verbs --test vm -- --test-threads=1
elif [ "$vm" = 0 ]; then
  step "interop with Linux Soft-RoCE: SKIPPED (ROCE_RXEVM=0)"
else
  step "interop with Linux Soft-RoCE: SKIPPED (no qemu-system-x86_64; scripts/setup.sh installs it)"
fi

if [ -n "$synth_pid" ]; then
  step "Yosys synthesis: wait for it"
  rc=0
  wait "$synth_pid" || rc=$?
  synth_pid=""
  grep -E '^\[|roce-synth:' "$synth_log" || true
  if [ "$rc" != 0 ]; then
    echo "roce-synth failed (exit $rc); the whole log: $synth_log" >&2
    tail -n 40 "$synth_log" >&2
    exit "$rc"
  fi
fi

summary
