#!/usr/bin/env bash
# The local audit's wall and CPU time (issue 15: under 1 s): `cmax audit --local` RUNS times
# (default 21) into a throw-away store, the median, the fastest and the slowest.
# Usage: bench/audit_local.sh [RUNS]   (release build: make build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-21}
bin=build/release/bin/cmax
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for _ in $(seq "$runs"); do
  /usr/bin/time -o "$dir/times" -a -f '%e %U %S' "$bin" --db "$dir/cmax.db" audit --local \
    >/dev/null 2>&1 || true
done
median() { sort -n | awk '{ v[NR] = $1 } END { printf "%.2f", v[int((NR + 1) / 2)] }'; }
grep '^[0-9]' "$dir/times" >"$dir/ok"
wall=$(awk '{ print $1 }' "$dir/ok" | median)
cpu=$(awk '{ print $2 + $3 }' "$dir/ok" | median)
range=$(awk '{ print $1 }' "$dir/ok" | sort -n | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }')
echo "cmax audit --local, $(wc -l <"$dir/ok") runs: wall median $wall s ($range), CPU median $cpu s"
"$bin" --db "$dir/cmax.db" audit --local 2>/dev/null | tail -2
