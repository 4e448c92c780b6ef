#!/usr/bin/env bash
# Start-up cost of a one-shot command (issue 14): `cmax --version` against /bin/true and an empty
# C++ program, all started the same way (posix_spawn + waitpid, in turn: build/release/bin/
# spawn_bench), the shared objects each command loads, and the idle agent's memory.
# Usage: bench/startup.sh [RUNS]   (release build: make build)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-500}
bin=build/release/bin/cmax
spawn=build/release/bin/spawn_bench
[ -x "$bin" ] && [ -x "$spawn" ] || { echo "build the release binaries first: make build" >&2; exit 1; }
dir=$(mktemp -d)
trap 'kill "${agent:-}" 2>/dev/null || true; rm -rf "$dir"' EXIT

libs() {  # shared objects the dynamic loader maps for a command
  LD_DEBUG=libs "$@" 2>&1 >/dev/null | grep -c 'calling init:' || true
}

# The C++ runtime alone: what any C++ program linked to the shared libstdc++ pays here.
printf '#include <iostream>\nint main() { std::cout << "x\\n"; }\n' >"$dir/empty.cpp"
g++ -O2 "$dir/empty.cpp" -o "$dir/empty-c++"
echo "one-shot start, $runs starts each, in turn:"
"$spawn" "$runs" -- /bin/true -- "$dir/empty-c++" -- "$bin" --version -- "$bin" --help \
  -- "$bin" health --help
printf '  %-36s %s shared objects\n' "cmax --version" "$(libs "$bin" --version)"
printf '  %-36s %s shared objects (libcurl loaded on demand)\n' "cmax endpoint run (loads libcurl)" \
  "$(libs "$bin" endpoint run --url http://127.0.0.1:1 --model m --requests 1 --db "$dir/e.db")"

# The idle agent: no NVML (none here), no metrics traffic, past its first watchdog tick.
"$bin" agent --db "$dir/cmax.db" --node startup-bench --no-nvml --metrics-listen none \
  >"$dir/agent.log" 2>&1 &
agent=$!
for _ in $(seq 200); do grep -q 'agent ready' "$dir/agent.log" && break; sleep 0.05; done
sleep 11
awk '/VmRSS/ { printf "idle agent: RSS %.1f MB\n", $2 / 1024 }' "/proc/$agent/status"
