#!/usr/bin/env bash
# Build roce-verbs' drop-in libibverbs.so.1 into target/verbs/ (then run a verbs program on
# the engine with LD_LIBRARY_PATH=target/verbs ROCE_VERBS_DEVICE=...; README "Run a verbs
# program on the engine").
#   scripts/build-verbs.sh [--debug]        cargo build (release, or dev) + link
#   scripts/build-verbs.sh --link ARCHIVE OUTDIR   link an already built libroce_verbs.a
# The library is the crate's staticlib linked with our version script (verbs/libibverbs.map,
# the symbol versions of Debian's libibverbs.so.1) and soname: rustc's cdylib would impose
# its own version script. Every exported name is passed with -u so the linker pulls it
# from the archive (and the stubs of the old versions, verbs/src/ffi/compat.rs).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
map="$root/verbs/libibverbs.map"
link() {
  local archive=$1 outdir=$2
  mkdir -p "$outdir"
  local undef=()
  while read -r s; do undef+=("-Wl,-u,$s"); done < <(sed -n 's/^\t\t\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' "$map")
  # the old-version symbols (verbs/src/ffi/compat.rs) are defined by assembly stubs
  while read -r s; do undef+=("-Wl,-u,__roce_verbs_compat_$s"); done \
    < <(sed -n 's/^    "\([A-Za-z_0-9]*\)" @ "IBVERBS_[0-9.]*" => .*/\1/p' "$root/verbs/src/ffi/compat.rs")
  ${CC:-cc} -shared -o "$outdir/libibverbs.so.1.tmp" "${undef[@]}" "$archive" \
    -Wl,--version-script="$map" -Wl,-soname,libibverbs.so.1 -Wl,-z,now -Wl,--gc-sections \
    -lstdc++ -lgcc_s -lpthread -ldl -lm -lrt -lc
  mv "$outdir/libibverbs.so.1.tmp" "$outdir/libibverbs.so.1"
  ln -sf libibverbs.so.1 "$outdir/libibverbs.so"
}
case "${1:-}" in
  --link) link "$2" "$3"; exit 0 ;;
  --debug) profile=dev; dir=debug ;;
  "") profile=release; dir=release ;;
  *) echo "usage: $0 [--debug] | --link ARCHIVE OUTDIR" >&2; exit 2 ;;
esac
cd "$root"
cargo build -q -p roce-verbs --profile "$profile"
link "${CARGO_TARGET_DIR:-$root/target}/$dir/libroce_verbs.a" "$root/target/verbs"
echo "build-verbs: $root/target/verbs/libibverbs.so.1 ($(du -h target/verbs/libibverbs.so.1 | cut -f1))"
