#!/usr/bin/env bash
# Endpoint client figures (issue 6) against serve-sim on loopback: serve-sim on CPU 0, cmax's
# client pinned to CPU 1 (one core), a fresh server for each run so that no run finds another's
# prompts in its cache.
#   1. 10,000 concurrent streams: all complete; CPU, TTFT and its error against the server.
#   2. TTFT measurement error at 1,024 streams: the first chunk's arrival as cmax timed it minus
#      serve-sim's send time (CLOCK_MONOTONIC, same host), p50/p99, after a warm-up that opens
#      the connections.
# Usage: bench/endpoint_streams.sh [STREAMS] [DECODE_MS]
set -euo pipefail
cd "$(dirname "$0")/.."
streams=${1:-10000}
decode=${2:-200}
bin=$PWD/build/release/bin/cmax
[ -x "$bin" ] || { echo "build first: make build" >&2; exit 1; }
port=18931
source bench/serve_sim.sh
report() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); c = r["cmax"]
print(f"  completed {r['completed']} failed {r['failed']} max in flight {r['max_concurrent_requests']}"
      f" in {r['duration']:.2f} s; output {r['output_throughput']:.0f} tok/s")
print(f"  TTFT (first chunk) p50 {r['median_ttft_ms']:.2f} ms p99 {r['p99_ttft_ms']:.2f} ms;"
      f" TTFT error vs server p50 {c['ttft_error_vs_server_ms']['p50']:.3f} ms"
      f" p99 {c['ttft_error_vs_server_ms']['p99']:.3f} ms")
print(f"  client CPU {c['client']['cpu_s']:.2f} s ({100 * c['client']['cpu_share_of_core']:.0f}% of a core),"
      f" {c['client']['cpu_us_per_output_token']:.2f} us per output token;"
      f" send lateness p99 {c['client']['send_lateness_ms']['p99']:.1f} ms")
PY
}
echo "== $streams concurrent streams (decode ${decode} ms/token, 50 tokens each, one client core)"
serve "$decode"
/usr/bin/time -f "  client max RSS %M KiB" taskset -c 1 "$bin" --db "$dir/cmax.db" -q endpoint run \
  --url "http://127.0.0.1:$port" --model sim --concurrency "$streams" --requests "$streams" \
  --input-len 100 --output-len 50 --seed 1 --output-file "$dir/streams.json" > /dev/null
report "$dir/streams.json"
echo "== TTFT measurement error at 1,024 streams (decode 20 ms/token, 200 tokens, warm-up 1,024)"
serve 20
taskset -c 1 "$bin" --db "$dir/cmax.db" -q endpoint run --url "http://127.0.0.1:$port" --model sim \
  --concurrency 1024 --requests 8192 --warmup 1024 --input-len 200 --output-len 200 \
  --range-ratio 0.5 --seed 2 --output-file "$dir/ttft.json" > /dev/null
report "$dir/ttft.json"
