#!/usr/bin/env bash
# Install what the Soft-RoCE VM tests need on Debian bookworm (safe to run again).
# QEMU: bookworm-backports if apt knows that suite, else bookworm's own 7.2 (which has
# `-netdev dgram`, all the harness needs). Adapted from the shared rxe-vm README's install
# steps (steering repo, tools/rxe-vm/README.md).
set -euo pipefail
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
pkgs=(busybox-static ibverbs-utils ibverbs-providers rdma-core perftest iproute2 tcpdump kmod cpio util-linux)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ] || ! command -v qemu-system-x86_64 >/dev/null; then
  $SUDO apt-get update -qq
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v qemu-system-x86_64 >/dev/null; then
  if apt-cache policy qemu-system-x86 | grep -q bookworm-backports; then
    $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
  else
    echo "install-deps: no bookworm-backports in apt's sources; using bookworm's qemu-system-x86"
    $SUDO apt-get install -y -qq --no-install-recommends qemu-system-x86 >/dev/null
  fi
fi
echo "install-deps: $(qemu-system-x86_64 --version | head -1); perftest $(dpkg-query -W -f='${Version}' perftest); rdma-core $(dpkg-query -W -f='${Version}' rdma-core)"
