#!/usr/bin/env bash
# Wall time of `cmax run` (release build) on this machine: the issue's bar is under 2 s.
# Usage: bench/run_wall.sh [RUNS]   (make bench runs it)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/bin/cmax
runs=${1:-20}
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" run --db "$dir/cmax.db" --no-html >/dev/null || true  # warm the page cache
times=()
for _ in $(seq "$runs"); do
  start=$(date +%s%N)
  "$bin" run --db "$dir/cmax.db" >/dev/null || { rc=$?; [ $rc -eq 1 ] || [ $rc -eq 3 ]; }  # findings
  end=$(date +%s%N)
  times+=($(( (end - start) / 1000 )))
done
sorted=($(printf '%s\n' "${times[@]}" | sort -n))
median=${sorted[$(( runs / 2 ))]}
max=${sorted[$(( runs - 1 ))]}
awk -v n="$runs" -v med="$median" -v max="$max" \
  'BEGIN { printf "cmax run (with HTML report), %d runs: median %.1f ms, max %.1f ms\n", n, med / 1000, max / 1000 }'
