#!/usr/bin/env bash
# `cmax run --lab` end to end for each provider profile (the issue's bar: under 3 minutes on
# this 2-core machine), with the tier each one gets. Needs root. Usage: bench/lab_run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=build/release/bin/cmax
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
for profile in good slow negligent; do
  start=$(date +%s%N)
  rc=0
  "$bin" --db "$dir/$profile.db" run --lab --provider-profile "$profile" --lab-dir "$dir/$profile" \
    --lab-port 38817 --html "$dir/$profile.html" > "$dir/$profile.out" 2> "$dir/$profile.err" || rc=$?
  end=$(date +%s%N)
  # 0 or 1 (this host's own audit may find faults); anything else is a failed evaluation.
  if [ "$rc" -gt 1 ]; then cat "$dir/$profile.err" >&2; exit "$rc"; fi
  tier=$(grep '^Tier:' "$dir/$profile.out")
  awk -v p="$profile" -v ms=$(( (end - start) / 1000000 )) -v t="$tier" \
    'BEGIN { printf "cmax run --lab --provider-profile %-9s %6.1f s  %s\n", p, ms / 1000, t }'
done
