#!/usr/bin/env bash
# Boot one Soft-RoCE VM whose eth0 is a QEMU dgram link to a unix datagram socket that a HOST
# engine binds (one Ethernet frame per datagram, no FCS). For manual work; the Rust harness
# (tests/src/rxevm.rs) does the same from code.
# Usage: run-peer.sh CACHE_DIR HOST_SOCK VM_SOCK "VM_CMD" [OUT.pcap]
#   The engine binds HOST_SOCK and sends to VM_SOCK (QEMU binds VM_SOCK).
#   Env: VM_IP (192.0.2.1) VM_MAC (52:54:00:00:00:01) PEER_IP (192.0.2.2)
#        PEER_MAC (52:54:00:00:00:02; a static neighbour in the VM, so ARP is optional)
#        MTU (eth0, default 1500) FWD_PORT (18515) HOSTFWD_PORT (18516) VM_TIMEOUT (600)
#        ACCEL (tcg); FWD_PORT=off / HOSTFWD_PORT=off drop that forward (QEMU refuses to
#        start when nothing listens on FWD_PORT).
#   Side channel on eth1 (QEMU user networking): the VM's 10.0.2.100:18515 reaches the host's
#   127.0.0.1:$FWD_PORT (VM as client; QEMU connects to it at start, so listen first);
#   the host's 127.0.0.1:$HOSTFWD_PORT reaches the VM's port 18515 (VM as server).
# Adapted from the shared rxe-vm/run-peer.sh (steering repo, tools/rxe-vm): same QEMU
# set-up, plus the kernel command line of tests/rxevm/build-image.sh's /init.
set -u
C=$(readlink -f "$1"); HS=$2; VS=$3; CMD=$4; P=${5:-}
VM_IP=${VM_IP:-192.0.2.1}; VM_MAC=${VM_MAC:-52:54:00:00:00:01}
PEER_IP=${PEER_IP:-192.0.2.2}; PEER_MAC=${PEER_MAC:-52:54:00:00:00:02}
FWD=${FWD_PORT:-18515}; HFWD=${HOSTFWD_PORT:-18516}
USERNET="user,id=n1,net=10.0.2.0/24,restrict=on"
[ "$HFWD" = off ] || USERNET="$USERNET,hostfwd=tcp:127.0.0.1:$HFWD-10.0.2.15:18515"
[ "$FWD" = off ] || USERNET="$USERNET,guestfwd=tcp:10.0.2.100:18515-tcp:127.0.0.1:$FWD"
APPEND="console=ttyS0 quiet panic=-1 ipaddr=$VM_IP/24 peer=$PEER_IP,$PEER_MAC runb64=$(printf '%s' "$CMD" | base64 -w0)"
[ -n "${MTU:-}" ] && APPEND="$APPEND mtu=$MTU"
exec timeout "${VM_TIMEOUT:-600}" qemu-system-x86_64 -accel "${ACCEL:-tcg}" -m 512 -smp 1 \
  -nographic -monitor none -serial stdio -no-reboot \
  -kernel "$C/vmlinuz" -initrd "$C/initramfs.gz" -append "$APPEND" \
  -netdev "dgram,id=n0,local.type=unix,local.path=$VS,remote.type=unix,remote.path=$HS" \
  -device "virtio-net-pci,netdev=n0,mac=$VM_MAC,romfile=" ${P:+-object filter-dump,id=f0,netdev=n0,file=$P} \
  -netdev "$USERNET" \
  -device "virtio-net-pci,netdev=n1,mac=52:54:00:00:01:01,romfile="
