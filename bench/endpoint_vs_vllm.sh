#!/usr/bin/env bash
# cmax's endpoint client side by side with vLLM's benchmark client, one run after the other
# against the same serve-sim (CPU 0) with the same workload, each client pinned to CPU 1:
# CPU-seconds per streamed token and the TTFT each reports (serve-sim's prefill is 0: any TTFT
# beyond a fraction of a millisecond is the client's own). --token-writes: the server sends each
# token in its own write, streams taking turns, as a real server's step loop does.
# vLLM's client: its request function (vllm/benchmarks/lib/endpoint_request_func.py) kept
# outside this repository in VLLM_DIR, driven by bench/vllm_client_driver.py as `vllm bench
# serve --max-concurrency N` drives it; Debian's python3-aiohttp, python3-regex, python3-tqdm.
# Usage: bench/endpoint_vs_vllm.sh VLLM_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
vllm_dir=${1:?usage: bench/endpoint_vs_vllm.sh VLLM_DIR (holding endpoint_request_func.py)}
bin=$PWD/build/release/bin/cmax
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
py=/usr/bin/python3
$py -c 'import aiohttp, regex, tqdm' 2>/dev/null || {
  echo "installing Debian's python3-aiohttp python3-regex python3-tqdm" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-aiohttp python3-regex python3-tqdm > /dev/null
}
port=18932
source bench/serve_sim.sh
echo "python $($py -c 'import sys; print(sys.version.split()[0])'), aiohttp $($py -c 'import aiohttp; print(aiohttp.__version__)'), vLLM request function at commit $(grep -o '[0-9a-f]\{40\}' "$vllm_dir/endpoint_request_func.py" | head -1 || echo unknown)"
printf '%-34s %-6s %9s %10s %10s %12s\n' SETTING CLIENT COMPLETED "TTFT P50" "TTFT P99" "CPU US/TOKEN"
while read -r name decode conc requests extra; do
  # shellcheck disable=SC2086  # extra: serve-sim options, word-split on purpose
  serve "$decode" $extra
  v=$(taskset -c 1 $py bench/vllm_client_driver.py "$vllm_dir" \
        "http://127.0.0.1:$port/v1/chat/completions" sim "$conc" "$requests" 200 200)
  $py - "$name" "$v" <<'PY'
import json, sys
r = json.loads(sys.argv[2])
print(f"{sys.argv[1]:<34} {'vllm':<6} {r['completed']:>9} {r['ttft_p50_ms']:>10.2f} {r['ttft_p99_ms']:>10.2f} {r['cpu_us_per_token']:>12.2f}")
PY
  # shellcheck disable=SC2086
  serve "$decode" $extra
  taskset -c 1 "$bin" --db "$dir/cmax.db" -q endpoint run --url "http://127.0.0.1:$port" --model sim \
    --concurrency "$conc" --requests "$requests" --input-len 200 --output-len 200 \
    --output-file "$dir/c.json" > /dev/null
  $py - "$name" "$dir/c.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]:<34} {'cmax':<6} {r['completed']:>9} {r['median_ttft_ms']:>10.2f} {r['p99_ttft_ms']:>10.2f} {r['cmax']['client']['cpu_us_per_output_token']:>12.2f}")
PY
done <<'RUNS'
answers-at-once-c64 0 64 2000
token-writes-c64 0 64 2000 --token-writes
5ms-per-token-c64 5 64 640
10ms-per-token-c256 10 256 768
10ms-per-token-c1024 10 1024 2048
RUNS
