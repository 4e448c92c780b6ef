#!/usr/bin/env bash
# Time for `cmax lab up --nodes 8` until every node is idle (the issue's bar: under 20 s),
# and for `cmax lab down`. Needs root. Usage: bench/lab_up.sh [REPEATS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/bin/cmax
repeats=${1:-5}
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
dir=$(mktemp -d)
trap '"$bin" lab down --dir "$dir/lab" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
for i in $(seq "$repeats"); do
  start=$(date +%s%N)
  "$bin" lab up --dir "$dir/lab" --nodes 8 --port-base 36817 --json > "$dir/up.json"
  mid=$(date +%s%N)
  "$bin" lab down --dir "$dir/lab" >/dev/null
  end=$(date +%s%N)
  awk -v i="$i" -v up=$(( (mid - start) / 1000 )) -v down=$(( (end - mid) / 1000 )) \
    'BEGIN { printf "repeat %d: lab up --nodes 8 (all idle) %.0f ms, lab down %.0f ms\n", i, up / 1000, down / 1000 }'
done
