#!/usr/bin/env bash
# The Slurm audit of every node of the lab (issue 15: 8 nodes under 5 s): brings up a lab of
# NODES nodes (default 8; real slurmctld and slurmd on loopback, needs root), runs
# `cmax audit --slurm --yes` RUNS times (default 11) into a throw-away store, prints the median,
# fastest and slowest wall time and how many nodes answered, and takes the lab down.
# Usage: sudo bench/audit_slurm.sh [RUNS] [NODES]   (release build: make build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-11}
nodes=${2:-8}
bin=$PWD/build/release/bin/cmax
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || { echo "the lab needs root" >&2; exit 1; }
dir=$(mktemp -d)
trap '"$bin" lab down --dir "$dir/lab" >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT
"$bin" lab up --dir "$dir/lab" --nodes "$nodes" --spares 0 --port-base 28817 >/dev/null
export SLURM_CONF=$dir/lab/etc/slurm.conf
for _ in $(seq "$runs"); do
  /usr/bin/time -o "$dir/times" -a -f '%e' "$bin" --db "$dir/cmax.db" audit --slurm --yes \
    --exit-zero >/dev/null 2>"$dir/err"
done
sort -n "$dir/times" | awk -v runs="$runs" -v nodes="$nodes" '
  { v[NR] = $1 }
  END { printf "cmax audit --slurm, %d-node lab, %d runs: wall median %.2f s (%.2f-%.2f)\n",
        nodes, runs, v[int((NR + 1) / 2)], v[1], v[NR] }'
grep "answered" "$dir/err" | tail -1
