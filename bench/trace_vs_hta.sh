#!/usr/bin/env bash
# `cmax train trace`'s analysis against Holistic Trace Analysis (HTA) on the same traces, and a
# trace of a gigabyte on one core (issue 18's figures):
#   - wall time and peak memory of HTA's communication/computation overlap (TraceAnalysis, then
#     get_comm_comp_overlap; bench/hta_overlap.py) and of cmax's reading and analysis
#     (bench/trace_bench.cpp: train::ReadAndAnalyzeTraces, what the command runs);
#   - both tools' exposed communication per rank (merged communication x (1 - overlap)), and
#     how far apart they are;
#   - a 1 GB trace (plain JSON) on one core (taskset, one worker): MB/s and peak RSS.
# The traces are synthetic (bench/trace_gen.cpp) and written to a temporary folder.
#   bash bench/trace_vs_hta.sh HTA_CHECKOUT [ROUNDS]   (release build: make build)
# HTA_CHECKOUT: github.com/facebookresearch/HolisticTraceAnalysis, outside this repository, run by
# Debian's python3 with python3-pandas, -plotly, -networkx, -pydot and -psutil installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
hta=${1:?usage: trace_vs_hta.sh HTA_CHECKOUT [ROUNDS]}
rounds=${2:-3}
gen=$root/build/release/bin/trace_gen
bench=$root/build/release/bin/trace_bench
for b in "$gen" "$bench"; do
  [ -x "$b" ] || { echo "no $b (cmake --build --preset release --target trace_gen trace_bench)" >&2; exit 2; }
done
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# case NAME: folders of traces, one file per rank
mkdir -p "$tmp/plain_3mb" "$tmp/gzip_40mb" "$tmp/ranks_8x10mb"
"$gen" "$tmp/plain_3mb/rank0_trace.json" 3 0 8
"$gen" "$tmp/gzip_40mb/rank0_trace.json.gz" 40 0 8 --gzip
for r in 0 1 2 3 4 5 6 7; do "$gen" "$tmp/ranks_8x10mb/rank${r}_trace.json.gz" 10 "$r" 8 --gzip; done
cases="plain_3mb gzip_40mb ranks_8x10mb"
# HTA's own small sample, a real A100 trace (9.8 MB of JSON, 0.75 MB gzip), where the checkout has it.
sample=$hta/tests/data/nccl_parser_config/nccl_data.json.gz
if [ -f "$sample" ]; then
  mkdir -p "$tmp/hta_sample" && cp "$sample" "$tmp/hta_sample/"
  cases="hta_sample $cases"
fi

printf '%-14s %9s %10s %10s %10s %8s %9s %9s %7s %12s\n' case "MB" "cmax s" "HTA s" "HTA* s" "faster" "cmax MB" "HTA MB" "memory" "exposed diff"
for case in $cases; do
  : >"$tmp/$case.cmax"
  : >"$tmp/$case.hta"
  for _ in $(seq "$rounds"); do
    "$bench" "$tmp/$case"/* >>"$tmp/$case.cmax"
    (cd "$tmp" && PYTHONPATH=$hta "$py" "$root/bench/hta_overlap.py" "$tmp/$case" 2>/dev/null) >>"$tmp/$case.hta"
  done
  "$py" - "$case" "$tmp/$case.cmax" "$tmp/$case.hta" <<'PY'
import json, statistics, sys
case, cmax_file, hta_file = sys.argv[1:]
cmax = [json.loads(l) for l in open(cmax_file)]
hta = [json.loads(l) for l in open(hta_file)]
med = lambda rows, key: statistics.median(r[key] for r in rows)
diff = 0.0
for rank, c in cmax[0]["ranks"].items():
    h = hta[0]["ranks"][rank]
    diff = max(diff, abs(c["exposed_communication_s"] - h["exposed_communication_s"]) / h["exposed_communication_s"])
print(f"{case:<14} {cmax[0]['bytes'] / 1e6:9.1f} {med(cmax, 'wall_s'):10.3f} {med(hta, 'wall_s'):10.2f} "
      f"{med(hta, 'analysis_s'):10.2f} {med(hta, 'wall_s') / med(cmax, 'wall_s'):7.0f}x "
      f"{med(cmax, 'peak_rss_mb'):9.1f} {med(hta, 'peak_rss_mb'):9.1f} "
      f"{med(cmax, 'peak_rss_mb') / med(hta, 'peak_rss_mb'):7.3f} {100 * diff:11.2f}%")
PY
done
echo "(HTA s: with importing HTA and pandas, what a user waits; HTA* s: after the import;"
echo " memory: cmax's peak RSS over HTA's; exposed diff: the largest over the ranks, relative)"
"$py" -c 'import json, sys; print("cmax inflated gzip with", json.loads(open(sys.argv[1]).readline())["inflater"])' "$tmp/gzip_40mb.cmax"

# A trace of a gigabyte, one core, one worker.
"$gen" "$tmp/one_gb.json" 1000 0 8
rm -rf "$tmp/hta_sample" "$tmp/plain_3mb" "$tmp/gzip_40mb" "$tmp/ranks_8x10mb"
for _ in $(seq "$rounds"); do taskset -c 0 "$bench" --jobs 1 "$tmp/one_gb.json"; done >"$tmp/gb"
"$py" - "$tmp/gb" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"1 GB trace ({rows[0]['bytes'] / 1e9:.2f} GB) on one core: "
      f"{statistics.median(r['mb_per_s'] for r in rows):.0f} MB/s (median of {len(rows)}; "
      f"{min(r['mb_per_s'] for r in rows):.0f}-{max(r['mb_per_s'] for r in rows):.0f}), "
      f"peak RSS {max(r['peak_rss_mb'] for r in rows):.0f} MB")
PY
