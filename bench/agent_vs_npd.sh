#!/usr/bin/env bash
# The cmax agent and Kubernetes node-problem-detector side by side on the same Xid injections:
# each Xid is written once to /dev/kmsg and both daemons' Prometheus counters are polled until
# they move. Then both sit idle for a while: resident memory and CPU.
#   NPD: v0.8.12 (the newest Debian's Go 1.19 builds), built outside the repository:
#     git archive v0.8.12 -- . ':(exclude)vendor/google.golang.org/api/compute' | tar -x -C DIR
#     cd DIR && GOFLAGS=-mod=vendor CGO_ENABLED=0 go build -tags disable_stackdriver_exporter \
#       -o npd ./cmd/nodeproblemdetector
# Usage: NPD=/path/to/npd bench/agent_vs_npd.sh [COUNT] [IDLE_SECONDS]   (needs root)
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-300}
idle=${2:-30}
npd=${NPD:-/tmp/npd-src/npd}
bin=build/release/bin/cmax
bench=build/release/bin/agent_bench
[ -x "$bin" ] && [ -x "$bench" ] || { echo "build first: make build" >&2; exit 1; }
[ -x "$npd" ] || { echo "no node-problem-detector at $npd (see the header of $0)" >&2; exit 1; }
dir=$(mktemp -d)
knob=/proc/sys/kernel/printk_devkmsg
saved=$(cat $knob)
cleanup() { kill "${cmax_pid:-}" "${npd_pid:-}" 2>/dev/null || true; echo "$saved" > $knob; rm -rf "$dir"; }
trap cleanup EXIT
cat > "$dir/kernel-monitor.json" <<'JSON'
{"plugin": "kmsg", "logPath": "/dev/kmsg", "lookback": "1m", "bufferSize": 10,
 "source": "kernel-monitor", "conditions": [],
 "rules": [{"type": "temporary", "reason": "XidError",
            "pattern": "NVRM: Xid \\(PCI:[0-9a-fA-F:.]+\\): \\d+,.*"}]}
JSON
"$bin" agent --db "$dir/cmax.db" --node side --metrics-listen 127.0.0.1:0 --no-nvml > "$dir/cmax.log" 2>&1 &
cmax_pid=$!
"$npd" --config.system-log-monitor="$dir/kernel-monitor.json" --enable-k8s-exporter=false \
  --prometheus-address=127.0.0.1 --prometheus-port=20257 --address=127.0.0.1 --port=20256 \
  --logtostderr > "$dir/npd.log" 2>&1 &
npd_pid=$!
for _ in $(seq 100); do grep -q metrics "$dir/cmax.log" && curl -sf http://127.0.0.1:20257/metrics > /dev/null && break; sleep 0.1; done
port=$(grep -o ':[0-9]*/metrics' "$dir/cmax.log" | tr -dc 0-9)
echo on > $knob
"$bench" side-by-side "$port" 20257 "$count" 5
sleep 12  # past the agent's first watchdog tick, which checkpoints what the run wrote
c0=$(awk '{print $1}' /proc/$cmax_pid/schedstat); n0=$(awk '{print $1}' /proc/$npd_pid/schedstat)
sleep "$idle"
c1=$(awk '{print $1}' /proc/$cmax_pid/schedstat); n1=$(awk '{print $1}' /proc/$npd_pid/schedstat)
for who in cmax npd; do
  pid_var=${who}_pid
  rss=$(awk '/VmRSS/ {print $2}' /proc/${!pid_var}/status)
  if [ $who = cmax ]; then a=$c0; b=$c1; name="cmax agent"; else a=$n0; b=$n1; name="node-problem-detector"; fi
  awk -v n="$name" -v r="$rss" -v a="$a" -v b="$b" -v s="$idle" \
    'BEGIN { printf "%-22s idle %d s: RSS %.1f MB, CPU %.3f%% of a core\n", n, s, r/1024, (b-a)/1e9/s*100 }'
done
