#!/usr/bin/env bash
# `cmax train log` on one long TorchTitan log: wall time and peak RSS of the whole command (read,
# analyse, record), on a synthetic log of STEPS metric lines in TorchTitan's format.
# Usage: bench/train_log_scale.sh [STEPS] [BINARY]   (default 1000000, build/release/bin/cmax)
set -euo pipefail
cd "$(dirname "$0")/.."
steps=${1:-1000000}
bin=${2:-build/release/bin/cmax}
[ -x "$bin" ] || { echo "no binary at $bin: make build, or name one" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$steps" > "$dir/train.log" <<'PY'
import sys
print("[titan] 2024-04-16 10:00:00,000 - root - INFO - Training starts at step 1")
for i in range(1, int(sys.argv[1]) + 1):
    print(f"[titan] 2024-04-16 10:01:50,663 - root - INFO - step: {i}  loss:  {5 - i * 1e-6:.4f}"
          "  memory: 34.87GiB(44.07%)  tps: 2,813  tflops: 160.1  mfu: 36.24%")
PY
echo "log: $(wc -c < "$dir/train.log") bytes, $steps steps"
/usr/bin/time -f "wall %e s, peak RSS %M KB, exit %x" "$bin" --db "$dir/cmax.db" -q train log \
  "$dir/train.log" > /dev/null
