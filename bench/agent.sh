#!/usr/bin/env bash
# The agent's figures (issue 3): detection latency kmsg -> stored condition, idle footprint,
# and a 100,000 lines/s storm. Starts the release agent itself. Needs root.
# Usage: bench/agent.sh [LATENCY_COUNT] [IDLE_SECONDS] [STORM_SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
count=${1:-500}
idle=${2:-60}
storm=${3:-5}
bin=build/release/bin/cmax
bench=build/release/bin/agent_bench
[ -x "$bin" ] && [ -x "$bench" ] || { echo "build first: make build" >&2; exit 1; }
dir=$(mktemp -d)
knob=/proc/sys/kernel/printk_devkmsg
saved=$(cat $knob)
cleanup() { [ -n "${pid:-}" ] && kill "$pid" 2>/dev/null; echo "$saved" > $knob; rm -rf "$dir"; }
trap cleanup EXIT
node=bench-$$
"$bin" agent --db "$dir/cmax.db" --node "$node" --metrics-listen 127.0.0.1:0 --no-nvml > "$dir/agent.log" 2>&1 &
pid=$!
for _ in $(seq 100); do grep -q metrics "$dir/agent.log" && break; sleep 0.05; done
port=$(grep -o ':[0-9]*/metrics' "$dir/agent.log" | tr -dc 0-9)
metric() { curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 ~ "^"m"[{ ]" { print $2; exit }'; }

# The latency writes are few and spaced; "on" keeps the kernel's per-file rate limit out of it.
echo on > $knob
"$bench" latency "$dir/cmax.db" "$node" "$count" 5

# Idle: no log traffic, no NVML. CPU from schedstat (nanoseconds on a CPU), not from the
# tick-sampled utime/stime, which charge a whole tick to a process that wakes at a tick.
sleep 11  # past the first watchdog tick, which checkpoints what the latency run wrote
rss0=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
t0=$(awk '{print $1}' /proc/$pid/schedstat)
sleep "$idle"
t1=$(awk '{print $1}' /proc/$pid/schedstat)
rss1=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
awk -v a="$t0" -v b="$t1" -v s="$idle" -v r0="$rss0" -v r1="$rss1" \
  'BEGIN { printf "idle over %d s: RSS %.1f MB at start, %.1f MB at end; CPU %.3f%% of a core\n", s, r0/1024, r1/1024, (b-a)/1e9/s*100 }'

# Storm: 100,000 lines/s, an Xid every 1,000 lines.
lost0=$(metric cmax_kmsg_lost_total)
"$bench" storm 100000 "$storm" 1000
sleep 1
seen=$(curl -s "http://127.0.0.1:$port/metrics" | awk '/^cmax_xid_total/ && /pci="0000:ab:00"/ && /code="31"/ { print $2 }')
lost1=$(metric cmax_kmsg_lost_total)
echo "storm: the agent counted ${seen:-0} Xid 31 on 0000:ab:00; records overwritten before it read them: $((${lost1:-0} - ${lost0:-0}))"
"$bench" latency "$dir/cmax.db" "$node" 20 5 | sed 's/^/after the storm: /'
rss2=$(awk '/VmRSS/ {print $2}' /proc/$pid/status)
awk -v r="$rss2" 'BEGIN { printf "RSS after the storm: %.1f MB\n", r/1024 }'

# Overrun: the agent is stopped (SIGSTOP) while 20,000 lines are written, far more than the
# ring holds; when it runs again it must count what the ring overwrote and keep detecting.
lost0=$(metric cmax_kmsg_lost_total)
records0=$(metric cmax_kmsg_records_total)
kill -STOP "$pid"
"$bench" burst 20000 > /dev/null
kill -CONT "$pid"
sleep 1
lost1=$(metric cmax_kmsg_lost_total)
records1=$(metric cmax_kmsg_records_total)
echo "overrun: agent paused during 20,000 lines: read $((${records1:-0} - ${records0:-0})), counted as overwritten $((${lost1:-0} - ${lost0:-0})), sum $(( ${records1:-0} - ${records0:-0} + ${lost1:-0} - ${lost0:-0} ))"
"$bench" latency "$dir/cmax.db" "$node" 20 5 | sed 's/^/after the overrun: /'
