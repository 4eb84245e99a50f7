#!/usr/bin/env bash
# Install what building and testing the engine needs on Debian bookworm, then fetch the Rust
# dependencies. Safe to run again. Usage: scripts/setup.sh [--no-vm]
#   Verilator 5.006 + Yosys 0.23 (Debian), tshark (test oracle), zlib (FST waveforms),
#   Python scapy (test oracle), and for the interop tests with Linux Soft-RoCE: QEMU and the
#   VM's packages (tests/rxevm/install-deps.sh; --no-vm skips them). For roce-verbs (the
#   drop-in libibverbs.so.1): libibverbs-dev (the headers its layout test compiles against),
#   binutils (objdump, the symbol check), and Debian's own verbs programs it runs
#   (ibverbs-utils, perftest).
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive

pkgs=(verilator yosys tshark zlib1g-dev g++ make python3 python3-pip libibverbs-dev binutils ibverbs-utils perftest)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  # tshark asks whether non-root users may capture; the noninteractive default (no) is fine.
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if [ "${1:-}" != "--no-vm" ]; then
  tests/rxevm/install-deps.sh
fi

if ! python3 -c "import scapy.contrib.roce" 2>/dev/null; then
  echo "setup: installing scapy"
  python3 -m pip install -q scapy 2>/dev/null \
    || python3 -m pip install -q --break-system-packages scapy 2>/dev/null \
    || $SUDO apt-get install -y -qq python3-scapy >/dev/null
fi
python3 -c "import scapy.contrib.roce" || { echo "setup: scapy is not importable" >&2; exit 1; }

echo "setup: $(verilator --version), $(yosys -V), $(tshark -v 2>/dev/null | head -1), scapy $(python3 -c 'import scapy; print(scapy.__version__)')"
cargo fetch --quiet
