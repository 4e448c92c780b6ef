#!/usr/bin/env bash
# Reliability harness figures (issue 5) on the real lab: `cmax reliability run` with three
# scenarios (Xid 79, Xid 48, fatal SXid on three nodes) against cmax's own agents as the
# provider, then the same run without a provider. For each step the error budget of the harness:
# the detection time it reports against the moment the provider really took the node out (the
# drain the agent recorded, finished), which must differ by at most the poll interval plus one
# look at the scheduler. Needs root and the release build.
# Usage: bench/reliability_lab.sh [RUNS] [POLL_S]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
poll=${2:-0.2}
bin=$PWD/build/release/bin/cmax
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
dir=$(mktemp -d)
agents=()
cleanup() {
  for p in "${agents[@]}"; do kill "$p" 2>/dev/null || true; done
  "$bin" lab down --dir "$dir/lab" > /dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
cat > "$dir/scenario.yaml" <<YAML
name: three faults
bars: {detect_s: 10, out_of_service_s: 10}
poll_s: $poll
steps:
  - {name: xid79, inject: xid, code: 79, node: gpu1, gpu: "0000:17:00.0"}
  - {name: xid48, inject: xid, code: 48, node: gpu2, gpu: "0000:3b:00.0"}
  - {name: sxid, inject: sxid, code: 12028, node: gpu3, switch_pci: "0000:05:00.0", fatal: true}
YAML
fresh_lab() {
  "$bin" lab down --dir "$dir/lab" > /dev/null 2>&1 || true
  rm -rf "$dir/lab" "$dir"/*.db*
  "$bin" lab up --dir "$dir/lab" --nodes 4 --spares 1 --port-base 31917 > /dev/null
}
fresh_lab
export SLURM_CONF=$dir/lab/etc/slurm.conf
ms() { sqlite3 "$1" "SELECT CAST(round((julianday('$3') - julianday('$2')) * 86400000) AS INT)"; }
errors=() walls=()
for run in $(seq "$runs"); do
  fresh_lab
  agents=()
  for n in gpu1:0000:17:00.0 gpu2:0000:3b:00.0 gpu3:0000:05:00.0; do
    "$bin" --db "$dir/${n%%:*}.db" agent --node "${n%%:*}" --no-nvml --metrics-listen none \
      --devices "${n#*:}" --remediate --validation-command 'sleep 30' --reset-command true \
      --breaker-percent 100 -q > /dev/null 2>&1 &
    agents+=($!)
  done
  sleep 1
  t0=$(date +%s%N)
  "$bin" --db "$dir/cmax.db" reliability run --scenario "$dir/scenario.yaml" > "$dir/run.log" || {
    cat "$dir/run.log"; exit 1; }
  walls+=($(( ($(date +%s%N) - t0) / 1000000 )))
  for p in "${agents[@]}"; do kill "$p"; done
  wait 2>/dev/null || true
  for step in xid79:gpu1 xid48:gpu2 sxid:gpu3; do
    name=${step%%:*} node=${step#*:}
    injected=$(sqlite3 "$dir/cmax.db" "SELECT time FROM events WHERE source = 'inject' AND node = '$node' ORDER BY id DESC LIMIT 1")
    drained=$(sqlite3 "$dir/$node.db" "SELECT finished_at FROM remediation_actions WHERE action = 'drain' AND outcome = 'done' ORDER BY id LIMIT 1")
    observed=$(sqlite3 "$dir/cmax.db" "SELECT CAST(round(value * 1000) AS INT) FROM metrics WHERE name = 'reliability.detect' AND labels LIKE '%\"$name\"%' ORDER BY id DESC LIMIT 1")
    true_ms=$(ms "$dir/cmax.db" "$injected" "$drained")
    errors+=($((observed - true_ms)))
    printf 'run %d %-6s provider drained after %4d ms, harness reported %4d ms, error %4d ms\n' \
      "$run" "$name" "$true_ms" "$observed" $((observed - true_ms))
  done
done
sorted=$(printf '%s\n' "${errors[@]}" | sort -n)
n=${#errors[@]}
echo "harness error over $n steps (poll ${poll}s): min $(echo "$sorted" | head -1) ms," \
  "median $(echo "$sorted" | sed -n "$(( (n + 1) / 2 ))p") ms, max $(echo "$sorted" | tail -1) ms"
echo "three-scenario run with the provider: $(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(( (${#walls[@]} + 1) / 2 ))p") ms (median of $runs)"
fresh_lab
t0=$(date +%s%N)
"$bin" --db "$dir/cmax.db" reliability run --scenario "$dir/scenario.yaml" > "$dir/off.log" || true
echo "three-scenario run without a provider: $(( ($(date +%s%N) - t0) / 1000000 )) ms;" \
  "verdicts: $(grep -cE '^(xid79|xid48|sxid) .* FAIL ' "$dir/off.log") FAIL of 3," \
  "$(grep -c 'no drain within' "$dir/off.log") 'no drain' reasons"
