#!/usr/bin/env bash
# Build the Soft-RoCE test VM: Debian's kernel (with rdma_rxe) + a busybox initramfs carrying
# rdma-core's tools, from Debian packages only. Usage: build-image.sh CACHE_DIR
# Writes CACHE_DIR/vmlinuz and CACHE_DIR/initramfs.gz (and keeps the kernel .deb there).
# Cached: does nothing when both outputs exist and are newer than this script.
#
# Adapted from the team's shared tool rxe-vm/build-initramfs.sh (steering repo, tools/rxe-vm):
# same package set and module list; the /init is rewritten so a harness can drive it (see
# README.md next to this file): base64 command, eth0 MTU, static neighbour, IPv6 off on eth0,
# quiet printk, and the markers `=== VM READY`, `=== RUN BEGIN`, `=== RUN EXIT <rc>`.
#
# Needs on the host (tests/rxevm/install-deps.sh installs them): busybox-static,
# ibverbs-utils, ibverbs-providers, rdma-core, perftest, iproute2, tcpdump, kmod, cpio,
# and apt access to Debian's archive for the kernel package.
set -euo pipefail
OUT=${1:?usage: build-image.sh CACHE_DIR}
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
SELF=$(readlink -f "$0")
# one build at a time per cache folder (parallel test processes share it)
exec 9>"$OUT/.build.lock"; flock 9
if [ "$OUT/vmlinuz" -nt "$SELF" ] && [ "$OUT/initramfs.gz" -nt "$SELF" ]; then
  echo "build-image: cached $OUT/vmlinuz $OUT/initramfs.gz"
  exit 0
fi
for t in busybox depmod cpio ldd ibv_rc_pingpong ib_write_bw rdma; do
  command -v "$t" >/dev/null || [ -x /usr/sbin/$t ] || [ -x /bin/$t ] || {
    echo "build-image: missing host tool '$t' (run tests/rxevm/install-deps.sh)" >&2; exit 1; }
done

W=$OUT/work; rm -rf "$W"; mkdir -p "$W/kdeb" "$W/root"
pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image/{print $2; exit}')
[ -n "$pkg" ] || { echo "build-image: apt-cache knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
if ! ls "$OUT"/"$pkg"_*.deb >/dev/null 2>&1; then
  (cd "$OUT" && apt-get download "$pkg")
fi
deb=$(ls "$OUT"/"$pkg"_*.deb | head -1)
dpkg -x "$deb" "$W/kdeb"
K=${pkg#linux-image-}
M=lib/modules/$K
R=$W/root
mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,usr/bin,usr/sbin,lib64,$M/kernel}
for d in drivers/virtio drivers/net/virtio_net.ko drivers/net/net_failover.ko net/core/failover.ko \
         drivers/infiniband/core drivers/infiniband/sw/rxe net/ipv4/udp_tunnel.ko \
         net/ipv6/ip6_udp_tunnel.ko crypto/crc32_generic.ko net/sched; do
  [ -e "$W/kdeb/$M/kernel/$d" ] || continue
  mkdir -p "$R/$M/kernel/$(dirname "$d")"
  cp -a "$W/kdeb/$M/kernel/$d" "$R/$M/kernel/$(dirname "$d")/"
done
cp "$W/kdeb/$M"/modules.order "$W/kdeb/$M"/modules.builtin* "$R/$M/" 2>/dev/null || true
depmod -b "$R" "$K"

cp /bin/busybox "$R/bin/busybox"
for a in sh mount umount ifconfig sleep cat echo ls poweroff modprobe insmod dmesg ping grep \
         sed awk timeout sync mkdir tr head tail wc seq base64 sysctl env true false test \
         printf kill ps cut xargs uname; do
  ln -sf busybox "$R/bin/$a"
done
bins="/usr/bin/ibv_rc_pingpong /usr/bin/ibv_uc_pingpong /usr/bin/ibv_ud_pingpong /usr/bin/ibv_devinfo
      /usr/bin/ibv_devices /usr/bin/ib_write_bw /usr/bin/ib_read_bw /usr/bin/ib_send_bw
      /usr/bin/ib_write_lat /usr/bin/ib_read_lat /usr/bin/ib_send_lat /usr/bin/rdma
      /usr/bin/tcpdump /usr/sbin/tcpdump /usr/sbin/tc /usr/sbin/ip"
libs="$(ls /usr/lib/x86_64-linux-gnu/libibverbs/librxe-*.so)"
for b in $bins $libs; do
  [ -e "$b" ] || continue
  mkdir -p "$R$(dirname "$b")"; cp -L "$b" "$R$b"
  for l in $(ldd "$b" | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
    mkdir -p "$R$(dirname "$l")"; cp -L "$l" "$R$l"
  done
done
# tc's netem needs its distribution tables
[ -d /usr/lib/x86_64-linux-gnu/tc ] && mkdir -p "$R/usr/lib/x86_64-linux-gnu" \
  && cp -a /usr/lib/x86_64-linux-gnu/tc "$R/usr/lib/x86_64-linux-gnu/"
mkdir -p "$R/etc/libibverbs.d"; cp /etc/libibverbs.d/rxe.driver "$R/etc/libibverbs.d/"
echo 'root:x:0:0:root:/root:/bin/sh' > "$R/etc/passwd"; echo 'root:x:0:' > "$R/etc/group"
printf '127.0.0.1 localhost\n' > "$R/etc/hosts"
printf 'tcp 6\nudp 17\n' > "$R/etc/protocols"

cat > "$R/init" <<'INIT'
#!/bin/sh
# PID 1 of the Soft-RoCE test VM (tests/rxevm/build-image.sh). Kernel command-line words:
#   ipaddr=A.B.C.D/NN   address of eth0 (the RoCE link)
#   mtu=N               MTU of eth0 (default: the NIC's, 1500)
#   peer=IP,MAC         static neighbour on eth0 (so the host stand-in needs no ARP)
#   sideip=A.B.C.D/NN   address of eth1 (QEMU user networking, TCP side channel)
#   runb64=BASE64       the command, base64 of a busybox-sh script
# Serial console markers (one per line): "=== VM READY", "=== RUN BEGIN",
# "=== RUN EXIT <rc>", "=== VM HALT". Everything the command prints (stdout and stderr)
# comes between RUN BEGIN and RUN EXIT.
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /tmp /run
echo 1 > /proc/sys/kernel/printk
PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH
for m in virtio_pci virtio_net crc32_generic rdma_rxe ib_uverbs sch_netem; do modprobe $m 2>/dev/null; done
arg() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
ipaddr=$(arg ipaddr); mtu=$(arg mtu); peer=$(arg peer); sideip=$(arg sideip); runb64=$(arg runb64)
IP=/usr/sbin/ip
$IP link set lo up
# no IPv6 on the RoCE link: no ND/MLD noise, and rxe gets only the fe80 + IPv4 GIDs
[ -e /proc/sys/net/ipv6/conf/eth0/disable_ipv6 ] && echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6
[ -n "$mtu" ] && $IP link set eth0 mtu "$mtu"
for n in $(ls /sys/class/net); do [ "$n" = lo ] || $IP link set "$n" up; done
[ -n "$ipaddr" ] && $IP addr add "$ipaddr" dev eth0
if [ -n "$peer" ]; then
  $IP neigh replace "${peer%%,*}" lladdr "${peer#*,}" dev eth0 nud permanent
fi
if [ -e /sys/class/net/eth1 ]; then
  [ -e /proc/sys/net/ipv6/conf/eth1/disable_ipv6 ] && echo 1 > /proc/sys/net/ipv6/conf/eth1/disable_ipv6
  $IP addr add "${sideip:-10.0.2.15/24}" dev eth1
fi
/usr/bin/rdma link add rxe0 type rxe netdev eth0 && echo "rxe0 up on eth0"
# wait (at most 5 s) until the IPv4-mapped RoCEv2 GID exists
i=0; while [ $i -lt 50 ]; do
  grep -q '0000:0000:0000:0000:0000:ffff' /sys/class/infiniband/rxe0/ports/1/gids/* 2>/dev/null && break
  sleep 0.1; i=$((i+1))
done
echo "=== VM READY mtu=$(cat /sys/class/net/eth0/mtu) ip=$ipaddr"
rc=0
if [ -n "$runb64" ]; then
  echo "$runb64" | base64 -d > /tmp/run.sh
  echo "=== RUN BEGIN"
  sh /tmp/run.sh 2>&1; rc=$?
  echo ""
else
  echo "=== RUN BEGIN"
fi
echo "=== RUN EXIT $rc"
echo "=== VM HALT"
sync; poweroff -f
INIT
chmod +x "$R/init"
(cd "$R" && find . | cpio -o -H newc --quiet | gzip -1 > "$OUT/initramfs.gz.tmp")
cp "$W/kdeb/boot/vmlinuz-$K" "$OUT/vmlinuz.tmp"
mv "$OUT/initramfs.gz.tmp" "$OUT/initramfs.gz"; mv "$OUT/vmlinuz.tmp" "$OUT/vmlinuz"
rm -rf "$W"
echo "$K" > "$OUT/kernel-version"
ls -la "$OUT/vmlinuz" "$OUT/initramfs.gz"
