#!/usr/bin/env bash
# The local audit side by side with the public one (issue 15), on this machine, in turn: cmax's
# `cmax audit --local` (release build) and SemiAnalysis's `cmax audit --local` (Python and bash,
# github.com/SemiAnalysisAI/ClusterMAX) RUNS times each (default 5), one after the other; the
# median, fastest and slowest wall time, the median CPU, and what each found.
#
# PUBLIC_SRC is the public audit's source (its `cmax/` package and `pyproject.toml`), run with
# Debian's python3 (apt: python3-yaml python3-prompt-toolkit; jq), never installed. Its one
# outbound call on this path (curl to ipinfo.io for the server's location) is answered by a stub
# on PATH that fails, so nothing leaves the machine; its output goes to a throw-away folder.
# Usage: bench/audit_vs_public.sh PUBLIC_SRC [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
public=${1:?usage: bench/audit_vs_public.sh PUBLIC_SRC [RUNS]}
runs=${2:-5}
bin=build/release/bin/cmax
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
[ -f "$public/cmax/cli.py" ] || { echo "$public/cmax/cli.py: not the public audit's source" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
mkdir -p "$dir/stubs" "$dir/public-runs"
for tool in curl wget; do
  printf '#!/bin/sh\necho "%s: no outbound network in this measurement" >&2\nexit 7\n' "$tool" \
    >"$dir/stubs/$tool"
  chmod +x "$dir/stubs/$tool"
done
run_public() {
  (cd "$public" && env PYTHONPATH="$public" PYTHONDONTWRITEBYTECODE=1 CLUSTERMAX_PROGRESS=0 \
    NO_COLOR=1 CLUSTERMAX_RUNS_ROOT="$dir/public-runs" CLUSTER_SLUG=bench \
    PATH="$dir/stubs:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    /usr/bin/python3 -m cmax.cli audit --local --yes </dev/null)
}
for _ in $(seq "$runs"); do
  /usr/bin/time -o "$dir/cmax.times" -a -f '%e %U %S' "$bin" --db "$dir/cmax.db" audit --local \
    >"$dir/cmax.out" 2>&1 || true
  /usr/bin/time -o "$dir/public.times" -a -f '%e %U %S' bash -c "$(declare -f run_public); \
    dir=$dir public=$public run_public" >"$dir/public.out" 2>&1 || true
done
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }
summary() {
  grep '^[0-9]' "$dir/$1.times" >"$dir/$1.ok"
  local wall cpu range
  wall=$(awk '{ print $1 }' "$dir/$1.ok" | median)
  cpu=$(awk '{ print $2 + $3 }' "$dir/$1.ok" | median)
  range=$(awk '{ print $1 }' "$dir/$1.ok" | sort -n |
    awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }')
  echo "$2, $(wc -l <"$dir/$1.ok") runs: wall median $wall s ($range), CPU median $cpu s"
  echo "$wall" >"$dir/$1.median"
}
summary cmax "cmax audit --local ($("$bin" --version | head -1))"
summary public "public audit --local ($(cd "$public" && git rev-parse --short HEAD 2>/dev/null ||
  echo "source in $public"))"
awk -v a="$(cat "$dir/public.median")" -v b="$(cat "$dir/cmax.median")" \
  'BEGIN { if (b > 0) printf "cmax is %.0fx faster in wall time\n", a / b }'
echo "cmax found:"
"$bin" --db "$dir/cmax.db" audit review latest 2>/dev/null | tail -2 | sed 's/^/  /'
echo "the public audit found:"
grep -E '^[0-9]+ failed' "$dir/public.out" | tail -1 | sed 's/^/  /' || true
grep -E 'checks in [0-9]' "$dir/public.out" | tail -1 | sed 's/^/  /' || true
