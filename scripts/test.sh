#!/usr/bin/env bash
# The full default test suite (what CI runs): HDL lint, generated-file drift, Rust tests
# (unit, cosimulation, oracles), clippy (early: it is quick and fails fast), and the Yosys synthesis check with its report.
# The interop tests boot a Soft-RoCE VM (QEMU) when it is installed (scripts/setup.sh does);
# ROCE_RXEVM=0 skips them. ROCE_SYNTH_FAMILIES (default "xcup") picks the Xilinx families of
# the synthesis report. Longer runs are opt-in: ROCE_SOAK=1, see README "Soak and fuzz".
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
vm=${ROCE_RXEVM:-}
if [ -z "$vm" ] && command -v qemu-system-x86_64 >/dev/null; then
  vm=1
fi

step "HDL lint (verilator --lint-only -Wall)"
scripts/lint-hdl.sh

step "generated HDL is current"
cargo run -q -p roce-model --bin roce-gen-hdl -- --check

step "cargo clippy"
cargo clippy -q --workspace --all-targets -- -D warnings

step "cargo test (workspace)"
ROCE_RXEVM=0 cargo test --workspace

if [ "$vm" = 1 ]; then
  step "interop with Linux Soft-RoCE in QEMU (one VM at a time)"
  ROCE_RXEVM=1 cargo test -p roce-tests --test interop_rxe --test rxevm_smoke --test vfio_vm -- --test-threads=1
  step "Debian's verbs programs on roce-verbs' libibverbs.so.1 against Soft-RoCE in QEMU"
  ROCE_RXEVM=1 cargo test -p roce-verbs --test vm -- --test-threads=1
else
  step "interop with Linux Soft-RoCE: SKIPPED (no qemu-system-x86_64; scripts/setup.sh installs it)"
fi

# CI time: the Xilinx estimate runs for UltraScale+ (the 100G target) only, without the
# generic `synth -top` pass (synth_xilinx checks what it checks; the whole engine's generic
# pass alone costs 6 CPU minutes): about 12 minutes on two cores, the whole engine (10 of
# them) started first. ROCE_SYNTH_FAMILIES="xc7 xcup" adds 7-series; ROCE_SYNTH_QUICK=1
# skips the blocks the whole engine synthesizes anyway (--skip-covered; its report goes to
# the log only).
step "Yosys synthesis check and resource report"
synth=(--no-generic)
for f in ${ROCE_SYNTH_FAMILIES:-xcup}; do synth+=(--family "$f"); done
[ "${ROCE_SYNTH_QUICK:-0}" = 1 ] && synth+=(--skip-covered)
cargo run -q --release -p roce-boards --bin roce-synth -- "${synth[@]}"
