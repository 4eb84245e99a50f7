#!/usr/bin/env bash
# The full default test suite (what CI runs): HDL lint, generated-file drift, Rust tests
# (unit, cosimulation, oracles), clippy, and the Yosys synthesis check with its report.
# Longer runs are opt-in: ROCE_SOAK=1 (more random frames), see README "Soak and fuzz".
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }

step "HDL lint (verilator --lint-only -Wall)"
scripts/lint-hdl.sh

step "generated HDL is current"
cargo run -q -p roce-model --bin roce-gen-hdl -- --check

step "cargo test (workspace)"
cargo test --workspace

step "cargo clippy"
cargo clippy -q --workspace --all-targets -- -D warnings

step "Yosys synthesis check and resource report"
cargo run -q --release -p roce-boards --bin roce-synth
