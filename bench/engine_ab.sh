#!/usr/bin/env bash
# Two builds of cmax's endpoint client side by side, runs interleaved (A, B, A, B, ...) against
# a fresh serve-sim (CPU 0) each, the client pinned to CPU 1: client CPU per output token and per
# request, and the TTFT error against serve-sim's send stamp, as the median of the pairs. For a
# change to the engine, A is the build before it, B the build after (the VM drifts by ±10% from
# one half hour to the next: only interleaved runs compare).
# Usage: bench/engine_ab.sh A_CMAX B_CMAX [PAIRS] [SETTING-SUBSTRING]
set -euo pipefail
cd "$(dirname "$0")/.."
a=${1:?usage: bench/engine_ab.sh A_CMAX B_CMAX [PAIRS]}
b=${2:?usage: bench/engine_ab.sh A_CMAX B_CMAX [PAIRS]}
pairs=${3:-5}
only=${4:-}
# shellcheck disable=SC2034  # bin and port: read by serve_sim.sh
bin=$a  # serve-sim is always A's, so that the server is the same for both
port=18933
# shellcheck source=bench/serve_sim.sh
source bench/serve_sim.sh
printf '%-30s %-2s %8s %14s %14s %14s %14s\n' SETTING "" RUNS "US/TOKEN" "US/REQUEST" "TTFT ERR P99" "TTFT P50"
while read -r name decode conc requests output server_extra client_extra; do
  [ "$server_extra" = - ] && server_extra=
  [ "$client_extra" = - ] && client_extra=
  client_extra=${client_extra//@DIR@/"$dir"}  # a file in the run's own folder
  [[ "$name" == *"$only"* ]] || continue
  for side in A B; do : > "$dir/$side.txt"; done
  for _ in $(seq "$pairs"); do
    for side in A B; do
      client=$a; [ "$side" = B ] && client=$b
      # shellcheck disable=SC2086  # the extras: options, word-split on purpose
      serve "$decode" $server_extra
      # shellcheck disable=SC2086
      taskset -c 1 "$client" --db "$dir/cmax.db" -q endpoint run --url "http://127.0.0.1:$port" \
        --model sim --concurrency "$conc" --requests "$requests" --input-len 200 \
        --output-len "$output" $client_extra --output-file "$dir/r.json" > /dev/null
      python3 - "$dir/r.json" >> "$dir/$side.txt" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = r['cmax']['client']
err = r['cmax'].get('ttft_error_vs_server_ms', {}).get('p99', float('nan'))
print(c['cpu_us_per_output_token'], c['cpu_s'] * 1e6 / max(1, r['completed']), err, r['median_ttft_ms'])
PY
    done
  done
  for side in A B; do
    python3 - "$name" "$side" "$dir/$side.txt" <<'PY'
import statistics, sys
rows = [list(map(float, line.split())) for line in open(sys.argv[3])]
med = lambda i: statistics.median(r[i] for r in rows)
print(f"{sys.argv[1]:<30} {sys.argv[2]:<2} {len(rows):>8} {med(0):>14.3f} {med(1):>14.1f} {med(2):>14.3f} {med(3):>14.2f}")
PY
  done
done <<'RUNS'
answers-at-once-c64 0 64 2000 200 - -
answers-at-once-c64-libcurl 0 64 2000 200 - --http-client libcurl
token-writes-c64 0 64 2000 200 --token-writes -
5-token-answers-c64 0 64 4000 5 - -
5-token-answers-c64-libcurl 0 64 4000 5 - --http-client libcurl
10ms-per-token-c1024 10 1024 2048 200 - -
5-token-answers-c64-requests-file 0 64 4000 5 - --requests-file=@DIR@/requests.jsonl
10ms-per-token-c1024-requests-file 10 1024 2048 200 - --requests-file=@DIR@/requests.jsonl
RUNS
