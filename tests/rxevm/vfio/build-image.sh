#!/usr/bin/env bash
# Build the VFIO test VM: Debian's kernel (VFIO as modules, intel-iommu built in) + a busybox
# initramfs carrying one test program. Usage: build-image.sh CACHE_DIR [PROBE_BINARY]
# Writes CACHE_DIR/vmlinuz and CACHE_DIR/initramfs.gz; PROBE_BINARY (a static or dynamic
# x86_64 ELF) goes to /usr/bin/vfio-probe in the image, with the shared libraries `ldd` lists.
# Cached: does nothing when both outputs exist and are newer than this script and the probe.
#
# Same approach as ../build-image.sh (Soft-RoCE image; not used or changed here): the kernel
# .deb from Debian's archive (reused from the parent folder of CACHE_DIR, where that script
# keeps it, when it is there), busybox-static, depmod, cpio. Only the VFIO modules are kept.
# The /init loads vfio-pci, binds every QEMU `edu` device (1234:11e8) to it and runs the
# command of the kernel command line, with the same markers as the Soft-RoCE image:
# `=== VM READY`, `=== RUN BEGIN`, `=== RUN EXIT <rc>`, `=== VM HALT`.
#
# Needs on the host: busybox-static, kmod (depmod), cpio, and apt access to Debian's archive
# for the kernel package unless it is already cached.
set -euo pipefail
OUT=${1:?usage: build-image.sh CACHE_DIR [PROBE_BINARY]}
PROBE=${2:-}
mkdir -p "$OUT"; OUT=$(readlink -f "$OUT")
SELF=$(readlink -f "$0")
[ -z "$PROBE" ] || PROBE=$(readlink -f "$PROBE")
exec 9>"$OUT/.build.lock"; flock 9
fresh() { [ "$1" -nt "$SELF" ] && { [ -z "$PROBE" ] || [ "$1" -nt "$PROBE" ]; }; }
if fresh "$OUT/vmlinuz" && fresh "$OUT/initramfs.gz" && [ -z "$PROBE" -o -e "$OUT/.with-probe" ]; then
  echo "vfio build-image: cached $OUT/vmlinuz $OUT/initramfs.gz"
  exit 0
fi
for t in busybox depmod cpio ldd; do
  command -v "$t" >/dev/null || [ -x /usr/sbin/$t ] || [ -x /bin/$t ] || {
    echo "vfio build-image: missing host tool '$t' (apt-get install busybox-static kmod cpio)" >&2; exit 1; }
done
[ -z "$PROBE" ] || [ -x "$PROBE" ] || { echo "vfio build-image: $PROBE is not an executable" >&2; exit 1; }

W=$OUT/work; rm -rf "$W"; mkdir -p "$W/kdeb" "$W/root"
pkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image/{print $2; exit}')
[ -n "$pkg" ] || { echo "vfio build-image: apt-cache knows no linux-image-amd64 (apt-get update?)" >&2; exit 1; }
deb=$(ls "$OUT"/"$pkg"_*.deb "$(dirname "$OUT")"/"$pkg"_*.deb 2>/dev/null | head -1 || true)
if [ -z "$deb" ]; then
  (cd "$OUT" && apt-get download "$pkg")
  deb=$(ls "$OUT"/"$pkg"_*.deb | head -1)
fi
dpkg -x "$deb" "$W/kdeb"
K=${pkg#linux-image-}
M=lib/modules/$K
R=$W/root
mkdir -p "$R"/{bin,sbin,etc,proc,sys,dev,tmp,run,root,usr/bin,usr/sbin,lib64,$M/kernel}
for d in drivers/vfio virt/lib/irqbypass.ko; do
  [ -e "$W/kdeb/$M/kernel/$d" ] || { echo "vfio build-image: $d not in $deb" >&2; exit 1; }
  mkdir -p "$R/$M/kernel/$(dirname "$d")"
  cp -a "$W/kdeb/$M/kernel/$d" "$R/$M/kernel/$(dirname "$d")/"
done
cp "$W/kdeb/$M"/modules.order "$W/kdeb/$M"/modules.builtin* "$R/$M/" 2>/dev/null || true
depmod -b "$R" "$K"

cp /bin/busybox "$R/bin/busybox"
for a in sh mount umount sleep cat echo ls poweroff modprobe insmod dmesg grep sed awk timeout \
         sync mkdir tr head tail wc base64 env true false test printf kill readlink basename \
         uname hexdump; do
  ln -sf busybox "$R/bin/$a"
done
if [ -n "$PROBE" ]; then
  cp -L "$PROBE" "$R/usr/bin/vfio-probe"
  for l in $(ldd "$PROBE" 2>/dev/null | awk '/=>/ {print $3} /ld-linux/ {print $1}'); do
    mkdir -p "$R$(dirname "$l")"; cp -L "$l" "$R$l"
  done
fi
echo 'root:x:0:0:root:/root:/bin/sh' > "$R/etc/passwd"; echo 'root:x:0:' > "$R/etc/group"

cat > "$R/init" <<'INIT'
#!/bin/sh
# PID 1 of the VFIO test VM (tests/rxevm/vfio/build-image.sh). Kernel command-line words:
#   runb64=BASE64   the command, base64 of a busybox-sh script
#   vfio_unsafe=1   load vfio_iommu_type1 with allow_unsafe_interrupts=1 (no IRQ remapping)
# Serial console markers (one per line): "=== VM READY ...", "=== RUN BEGIN",
# "=== RUN EXIT <rc>", "=== VM HALT". The command's stdout and stderr come between RUN BEGIN
# and RUN EXIT. EDU_ADDRS holds the PCI addresses of the edu devices bound to vfio-pci.
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /tmp /run
echo 1 > /proc/sys/kernel/printk
PATH=/usr/sbin:/usr/bin:/sbin:/bin; export PATH
arg() { sed -n "s/.*\b$1=\([^ ]*\).*/\1/p" /proc/cmdline; }
runb64=$(arg runb64); unsafe=$(arg vfio_unsafe)
if [ "$unsafe" = 1 ]; then
  modprobe vfio_iommu_type1 allow_unsafe_interrupts=1
else
  modprobe vfio_iommu_type1
fi
modprobe vfio-pci
EDU_ADDRS=""
for d in /sys/bus/pci/devices/*; do
  [ "$(cat $d/vendor)" = 0x1234 ] && [ "$(cat $d/device)" = 0x11e8 ] || continue
  a=${d##*/}
  echo vfio-pci > "$d/driver_override"
  echo "$a" > /sys/bus/pci/drivers_probe
  EDU_ADDRS="$EDU_ADDRS $a"
done
EDU_ADDRS=${EDU_ADDRS# }; export EDU_ADDRS
groups=""
for a in $EDU_ADDRS; do
  g=$(readlink /sys/bus/pci/devices/$a/iommu_group 2>/dev/null); groups="$groups ${g##*/}"
done
echo "=== VM READY edu=$EDU_ADDRS groups=${groups# } vfio=$(ls /dev/vfio 2>/dev/null | tr '\n' ' ')"
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
if [ -n "$PROBE" ]; then touch "$OUT/.with-probe"; else rm -f "$OUT/.with-probe"; fi
rm -rf "$W"
echo "$K" > "$OUT/kernel-version"
ls -la "$OUT/vmlinuz" "$OUT/initramfs.gz"
