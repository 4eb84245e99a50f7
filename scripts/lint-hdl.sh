#!/usr/bin/env bash
# Verilator lint (-Wall) of the HDL. Exits non-zero on any warning or error.
#
#   scripts/lint-hdl.sh              lint everything (JOBS=n parallel runs, default nproc)
#   VERILATOR=/path/verilator scripts/lint-hdl.sh
#
# What is linted:
#   1. every top-level configuration in hdl/configs.txt (the list roce-synth and sim/build.rs
#      also read; `config`, `synth`, `model` and `board` lines alike), with its parameters
#      and exactly its file list, so the lists stay complete;
#   2. every module file hdl/rtl/*.sv and hdl/rtl/gen/*.sv that is not a package, standalone
#      at its default parameters: all packages (in dependency order) plus the file, with both
#      folders as the library path for the modules it instantiates. The top module must be
#      named after the file (one module per file);
#   3. all packages together;
#   4. when Yosys is installed (YOSYS=/path/yosys, else `yosys` on PATH), Yosys's front end
#      over all packages and module files (`read_verilog -sv`, which elaborates every module
#      at its default parameters, then `proc`): Verilator accepts SystemVerilog that Yosys
#      0.23 rejects (int'() casts, local unpacked or multi-dimensional packed arrays,
#      whole-array assignment), and roce-synth would only find out minutes later.
# One waiver, for all runs: UNUSEDPARAM in *_pkg.sv (a package's constants serve many modules).
# No file list is written here: new files under hdl/rtl/ are picked up by (2) and (3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rtl=$root/hdl/rtl
gen=$rtl/gen
configs=$root/hdl/configs.txt
njobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}
VERILATOR=${VERILATOR:-verilator}
YOSYS=${YOSYS:-yosys}

die() { echo "lint-hdl: $*" >&2; exit 2; }

command -v "$VERILATOR" >/dev/null || die "$VERILATOR not found (Debian: apt-get install verilator)"
[[ -f $configs ]] || die "missing $configs"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The only waiver: a package holds constants for many modules, so a run that uses some of
# them is not a defect. Everything else in a package is still linted.
cat >"$tmp/waivers.vlt" <<'VLT'
`verilator_config
lint_off -rule UNUSEDPARAM -file "*_pkg.sv"
VLT
start=$SECONDS
names=()

# run_cmd NAME CMD...: queue one command; all start after parsing.
run_cmd() {
  local name=$1
  shift
  names+=("$name")
  printf '%s\0' "$@" >"$tmp/$name.args"
}
# run NAME ARG...: queue one `verilator --lint-only -Wall ARG...`.
run() {
  local name=$1
  shift
  run_cmd "$name" "$VERILATOR" --lint-only -Wall "$tmp/waivers.vlt" "$@"
}

# --- 1. configurations from hdl/configs.txt (grammar: see that file) -------------------------
declare -A fileset=()
expand() { # expand LINE ITEM...: files (absolute) of fileset references and plain files
  local line=$1 item
  shift
  for item in "$@"; do
    [[ $item =~ ^@?[A-Za-z0-9_./-]+$ ]] || die "$configs:$line: bad file item '$item'"
    if [[ $item == @* ]]; then
      [[ -n ${fileset[${item#@}]:-} ]] || die "$configs:$line: unknown fileset '$item'"
      printf '%s ' ${fileset[${item#@}]}
    elif [[ $item == */* ]]; then # a path from the repository root (board files)
      [[ /$item/ != */../* && /$item/ != */./* && $item != /* ]] || die "$configs:$line: bad file item '$item'"
      printf '%s ' "$root/$item"
    elif [[ -f $gen/$item ]]; then # generated
      printf '%s ' "$gen/$item"
    else
      printf '%s ' "$rtl/$item"
    fi
  done
}

nconfigs=0
lineno=0
while IFS= read -r line || [[ -n $line ]]; do
  lineno=$((lineno + 1))
  line=${line%%#*}
  read -r -a w <<<"$line"
  ((${#w[@]} > 0)) || continue
  case ${w[0]} in
    fileset)
      ((${#w[@]} >= 3)) || die "$configs:$lineno: usage: fileset NAME ITEM..."
      fileset[${w[1]}]=$(expand "$lineno" "${w[@]:2}")
      ;;
    config | synth | model | board)
      ((${#w[@]} >= 5)) || die "$configs:$lineno: usage: ${w[0]} NAME TOP PARAMS ITEM..."
      name=${w[1]} top=${w[2]} params=${w[3]}
      [[ $name =~ ^[A-Za-z0-9_-]+$ ]] || die "$configs:$lineno: bad config name '$name'"
      args=(--top-module "$top")
      if [[ $params != - ]]; then
        IFS=, read -r -a kvs <<<"$params"
        for kv in "${kvs[@]}"; do
          [[ $kv =~ ^[A-Za-z_][A-Za-z0-9_]*=[^=\"]+$ ]] || die "$configs:$lineno: bad parameter '$kv'"
          args+=("-G$kv")
        done
      fi
      # shellcheck disable=SC2207 # items were checked above: no spaces or globs
      files=($(expand "$lineno" "${w[@]:4}"))
      run "config.$name" "${args[@]}" "${files[@]}"
      nconfigs=$((nconfigs + 1))
      ;;
    *) die "$configs:$lineno: unknown directive '${w[0]}' (expected fileset, config, synth, model or board)" ;;
  esac
done <"$configs"

# --- 2./3. every file under hdl/rtl/ and hdl/rtl/gen/ ---------------------------------------
shopt -s nullglob
all_pkgs=("$rtl"/*_pkg.sv "$gen"/*_pkg.sv)
modules=()
for f in "$rtl"/*.sv "$gen"/*.sv; do
  [[ $f == *_pkg.sv ]] || modules+=("$f")
done

# Packages in dependency order: a package goes after the packages it names as `other_pkg::`.
pkgs=()
left=("${all_pkgs[@]}")
while ((${#left[@]} > 0)); do
  next=()
  for p in "${left[@]}"; do
    ready=1
    for dep in $(grep -oE '\b[A-Za-z0-9_]+_pkg::' "$p" | sed 's/::$//' | sort -u); do
      [[ $dep == "$(basename "$p" .sv)" ]] && continue
      for q in "${left[@]}"; do
        [[ $(basename "$q" .sv) == "$dep" ]] && ready=0
      done
    done
    if ((ready)); then pkgs+=("$p"); else next+=("$p"); fi
  done
  if ((${#next[@]} == ${#left[@]})); then # a cycle: keep going, Verilator will report it
    pkgs+=("${next[@]}")
    break
  fi
  left=("${next[@]}")
done

for f in "${modules[@]}"; do
  top=$(basename "$f" .sv)
  run "module.$top" -y "$rtl" -y "$gen" +libext+.sv -I"$rtl" --top-module "$top" "${pkgs[@]}" "$f"
done
if ((${#pkgs[@]} > 0)); then
  run packages -I"$rtl" "${pkgs[@]}"
fi
yosys_note=""
if command -v "$YOSYS" >/dev/null; then
  run_cmd yosys-frontend "$YOSYS" -q -p "read_verilog -sv ${pkgs[*]} ${modules[*]}; proc"
else
  yosys_note=", Yosys front end skipped ($YOSYS not found)"
fi

for name in "${names[@]}"; do
  while (($(jobs -rp | wc -l) >= njobs)); do wait -n || true; done
  mapfile -d '' cmd <"$tmp/$name.args"
  ( "${cmd[@]}" >"$tmp/$name.out" 2>&1; echo $? >"$tmp/$name.rc" ) &
done
wait

failed=0
for name in "${names[@]}"; do
  rc=$(cat "$tmp/$name.rc" 2>/dev/null || echo 255)
  if [[ $rc != 0 ]] || grep -q '%Warning' "$tmp/$name.out"; then
    failed=$((failed + 1))
    mapfile -d '' cmd <"$tmp/$name.args"
    echo "FAIL $name: ${cmd[*]}"
    sed 's/^/    /' "$tmp/$name.out"
  fi
done

summary="${#names[@]} runs ($nconfigs configs, ${#modules[@]} module files, ${#pkgs[@]} packages$yosys_note) in $((SECONDS - start)) s"
if ((failed > 0)); then
  echo "lint-hdl: $failed of $summary failed" >&2
  exit 1
fi
echo "lint-hdl: clean, $summary"
