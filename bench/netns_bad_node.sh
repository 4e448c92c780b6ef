#!/usr/bin/env bash
# The CPU lab end to end, as a user runs it (issue 17: "a sweep over 1, 2, 4, 8 namespace hosts
# with one link slowed by tbf finds the slow link and names it, in under 3 minutes"): the real
# `cmax nccl sweep` and `cmax nccl find-bad-node`, each making its own namespace lab with one
# host's link slowed, timed whole (lab up and down included). Root.
#   sudo bash bench/netns_bad_node.sh [HOSTS] [SLOW_HOST] [RATE]     (release build: make build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hosts=${1:-8}
slow=${2:-h5}
rate=${3:-200mbit}
cmax=$root/build/release/bin/cmax
[ -x "$cmax" ] && [ -x "$root/build/release/bin/cmax-mpi-perf" ] ||
  { echo "no release cmax (cmake --build --preset release --target cmax cmax-mpi-perf)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--netns-lab "$hosts" --slow-link "$slow:$rate" -n 3 -w 1 --step-timeout 120)
now() { date +%s.%N; }
echo "$hosts namespace hosts, $slow's link at $rate; $(nproc) cores; $(mpirun --version | head -1)"
t0=$(now)
set +e
"$cmax" --db "$tmp/cmax.db" -q nccl sweep "${common[@]}" --collectives all_reduce \
  -b 256K -e 1M --out "$tmp/sweep" >"$tmp/sweep.txt"
sweep_rc=$?
t1=$(now)
"$cmax" --db "$tmp/cmax.db" -q nccl find-bad-node "${common[@]}" -b 1M -e 1M --tolerance 80 \
  --out "$tmp/find" >"$tmp/find.txt"
find_rc=$?
t2=$(now)
set -e
grep -E "^(  ok|  FAILED|DROP|all_reduce)" "$tmp/sweep.txt" || true
grep -E "^SLOW|^NCCL|no node" "$tmp/find.txt" || true
awk -v a="$t0" -v b="$t1" -v c="$t2" -v s="$sweep_rc" -v f="$find_rc" 'BEGIN {
  printf "sweep %.1f s (exit %d), find-bad-node %.1f s (exit %d), %.1f s in all\n", b - a, s, c - b, f, c - a }'
if grep -q "^SLOW   $slow:" "$tmp/find.txt"; then echo "named: $slow"; else echo "NOT named: $slow"; exit 1; fi
