#!/usr/bin/env bash
# Remediation figures on the real lab (issue 4): an Xid written to /dev/kmsg, seen by the agent,
# acted on by the controller. Per trial: kmsg -> drain acknowledged by slurmctld, kmsg -> first
# `sinfo` that shows the node out of service, and the full loop kmsg -> drain -> GPU reset ->
# validation job in the node's reservation -> resume (REINTRODUCED), every step from the
# store's timestamps. The reset command and the validation are quick stand-ins ("true").
# Needs root and the release build. Usage: bench/remediate_lab.sh [TRIALS]
set -euo pipefail
cd "$(dirname "$0")/.."
trials=${1:-10}
bin=$PWD/build/release/bin/cmax
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
dir=$(mktemp -d)
db=$dir/cmax.db
cleanup() {
  for p in ${agent:-} ${controller:-}; do kill "$p" 2>/dev/null || true; done
  "$bin" lab down --dir "$dir/lab" > /dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
"$bin" lab up --dir "$dir/lab" --nodes 4 --spares 1 --port-base 31817 > /dev/null
export SLURM_CONF=$dir/lab/etc/slurm.conf
"$bin" --db "$db" agent --node gpu1 --no-nvml --metrics-listen none > "$dir/agent.log" 2>&1 &
agent=$!
# Every trial faults a different GPU of the same node, and probation is short: the escalation
# rules (repeated faults -> REPAIR) are tested elsewhere and would end the loop here.
"$bin" --db "$db" remediate run --act --interval 0.05 --validation-command true \
  --reset-command true --probation 0.02 --escalation-faults 100 --rate-limit 1000 \
  > "$dir/controller.log" 2>&1 &
controller=$!
sleep 1
state() { sqlite3 "$db" "SELECT state FROM remediation_nodes WHERE node = 'gpu1'" 2>/dev/null || true; }
ms_since() {  # milliseconds from $1 (epoch ms) to the ISO time the query returns
  sqlite3 "$db" "SELECT CAST(round((julianday(($2)) - julianday($1 / 1000.0, 'unixepoch')) * 86400000) AS INT)"
}
drains=() sinfos=() loops=()
for i in $(seq "$trials"); do
  dev=$(printf '0000:%02x:00' $((16 + i)))
  last=$(sqlite3 "$db" "SELECT coalesce(max(id), 0) FROM remediation_actions" 2>/dev/null || echo 0)
  lasth=$(sqlite3 "$db" "SELECT coalesce(max(id), 0) FROM remediation_history" 2>/dev/null || echo 0)
  t0=$(date +%s%3N)
  echo "<3>NVRM: Xid (PCI:$dev): 48, pid=1, name=bench, An uncorrectable double bit error" > /dev/kmsg
  seen=""
  for _ in $(seq 500); do
    s=$(sinfo -h -n gpu1 -o %T)
    case "$s" in drain*|maint*|reserved*|mix*|alloc*) seen=$(date +%s%3N); break ;; esac
    sleep 0.005
  done
  for _ in $(seq 300); do [ "$(state)" = REINTRODUCED ] || [ "$(state)" = HEALTHY ] && break; sleep 0.05; done
  drain=$(ms_since "$t0" "SELECT finished_at FROM remediation_actions WHERE id > $last AND action = 'drain' AND outcome = 'done'")
  loop=$(ms_since "$t0" "SELECT min(at) FROM remediation_history WHERE id > $lasth AND to_state = 'REINTRODUCED'")
  drains+=("$drain"); loops+=("$loop"); sinfos+=("$(( ${seen:-0} - t0 ))")
  echo "trial $i: drain acknowledged ${drain} ms, seen out of service in sinfo ${sinfos[-1]} ms, back in service ${loop} ms"
  for _ in $(seq 200); do [ "$(state)" = HEALTHY ] && break; sleep 0.05; done
done
median() { printf '%s\n' "$@" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
echo "median over $trials: kmsg -> drain acknowledged $(median "${drains[@]}") ms; -> sinfo shows it $(median "${sinfos[@]}") ms; -> validated and resumed $(median "${loops[@]}") ms"
echo "last trial, from the store (cmax remediate history gpu1):"
"$bin" --db "$db" remediate history gpu1 -n 9 | tail -9
