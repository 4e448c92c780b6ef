#!/usr/bin/env bash
# What the CPU lab's own cores cost its curves: `cmax nccl sweep --netns-lab HOSTS` with no link
# slowed, ROUNDS times, each round's all_reduce bus bandwidth at 1 MiB over 2 hosts and over
# HOSTS, and the drop between them. Every host of the lab shares this machine's cores, so some
# drop is the machine's; this measures how much. Root.
#   sudo bash bench/netns_contention.sh [HOSTS] [ROUNDS]     (release build: make build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hosts=${1:-4}
rounds=${2:-3}
cmax=$root/build/release/bin/cmax
[ -x "$cmax" ] && [ -x "$root/build/release/bin/cmax-mpi-perf" ] ||
  { echo "no release cmax (cmake --build --preset release --target cmax cmax-mpi-perf)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "$hosts namespace hosts, no link slowed; $(nproc) cores; $(mpirun --version | head -1)"
for round in $(seq "$rounds"); do
  start=$(date +%s.%N)
  "$cmax" --db "$tmp/cmax.db" -q nccl sweep --netns-lab "$hosts" --collectives all_reduce \
    -b 256K -e 1M -n 3 -w 1 --step-timeout 120 --json --out "$tmp/sweep-$round" >"$tmp/$round.json" || true
  end=$(date +%s.%N)
  python3 - "$tmp/$round.json" "$round" "$start" "$end" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
figures = {c["nodes"]: c["largest_size_busbw_gbs"] for c in doc["analysis"]["curves"]}
counts = sorted(figures)
if len(counts) < 2:
    print(f"round {sys.argv[2]}: no figures ({sorted(figures.items())})"); sys.exit(0)
low, high = figures[counts[0]], figures[counts[-1]]
print(f"round {sys.argv[2]}: {counts[0]} hosts {low:.2f} GB/s, {counts[-1]} hosts {high:.2f} GB/s, "
      f"{100 * (1 - high / low):.0f} % lower; {float(sys.argv[4]) - float(sys.argv[3]):.1f} s")
PY
done
