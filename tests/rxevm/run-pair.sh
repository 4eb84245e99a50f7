#!/usr/bin/env bash
# Boot two Soft-RoCE VMs linked by a QEMU dgram (unix socket) Ethernet link; run a server
# command in A (192.0.2.1) and a client command in B (192.0.2.2, started 3 s late); every
# frame on the link goes to OUT.pcap (filter-dump on A). Prints both commands' output.
# Usage: run-pair.sh CACHE_DIR "SERVER_CMD" "CLIENT_CMD" OUT.pcap
#   e.g. run-pair.sh target/rxevm-cache "ibv_rc_pingpong -g 1 -n 20" \
#        "ibv_rc_pingpong -g 1 -n 20 192.0.2.1" /tmp/pp.pcap
#   Env: MTU (eth0 of both), ACCEL (tcg)
# Adapted from the shared rxe-vm/run-pair.sh (steering repo, tools/rxe-vm).
set -u
C=$(readlink -f "$1"); S=$2; CL=$3; P=$(readlink -f "$4")
d=$(mktemp -d); a=$d/a.sock; b=$d/b.sock
vm() { # name mac ip peer_ip peer_mac sockL sockR cmd [dump]
  local append="console=ttyS0 quiet panic=-1 ipaddr=$3/24 peer=$4,$5 runb64=$(printf '%s' "$8" | base64 -w0)"
  [ -n "${MTU:-}" ] && append="$append mtu=$MTU"
  timeout 300 qemu-system-x86_64 -accel "${ACCEL:-tcg}" -m 512 -smp 1 \
    -nographic -monitor none -serial stdio -no-reboot \
    -kernel "$C/vmlinuz" -initrd "$C/initramfs.gz" -append "$append" \
    -netdev "dgram,id=n0,local.type=unix,local.path=$6,remote.type=unix,remote.path=$7" \
    -device "virtio-net-pci,netdev=n0,mac=$2,romfile=" ${9:+-object filter-dump,id=f0,netdev=n0,file=$9} \
    -netdev user,id=n1,net=10.0.2.0/24,restrict=on -device "virtio-net-pci,netdev=n1,romfile=" \
    < /dev/null > "$d/$1.log" 2>&1
}
vm A 52:54:00:00:00:01 192.0.2.1 192.0.2.2 52:54:00:00:00:02 "$a" "$b" "$S" "$P" & pa=$!
vm B 52:54:00:00:00:02 192.0.2.2 192.0.2.1 52:54:00:00:00:01 "$b" "$a" "sleep 3; $CL" & pb=$!
wait $pa $pb
rc=0
for n in A B; do
  echo "----- VM $n"
  tr -d '\r' < "$d/$n.log" | sed -n '/=== RUN BEGIN/,/=== RUN EXIT/p'
  tr -d '\r' < "$d/$n.log" | grep -q '^=== RUN EXIT 0$' || rc=1
done
rm -rf "$d"
exit $rc
