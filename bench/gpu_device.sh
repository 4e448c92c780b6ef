#!/usr/bin/env bash
# bench/gpu_device.sh: the figures only a GPU gives (issue 19), in one go, in under 8 minutes,
# on a machine with an NVIDIA GPU and nothing else asked of it (no network needed):
#   1. builds what it lacks: libcmax-probes.so with this machine's nvcc (its cuBLAS, its
#      driver's CUDA); cmax and cmax-probe from build/release when they were carried there,
#      else with cmake when the machine has what cmax builds with;
#   2. cmax health --active --force --burn 60 --deadline 120: the quick pass (each check's wall
#      time) and a one-minute burn watched through NVML; each probe's figure against the part's
#      published peak (H200: dense BF16 989 TFLOP/s, HBM3e 4.8 TB/s);
#   3. cmax's NVML reads (cmax health --passive) beside nvidia-smi's, field by field.
# Writes everything under $OUT (default: a new folder in /tmp) and a summary on stdout.
# Exit 0 when it measured, 2 when there is no GPU here, 1 when a step could not run.
# Usage: bash bench/gpu_device.sh [SECONDS_OF_BURN]
set -uo pipefail
cd "$(dirname "$0")/.."
burn_s=${1:-60}
OUT=${OUT:-$(mktemp -d /tmp/cmax-gpu-device.XXXXXX)}
mkdir -p "$OUT"
started=$(date +%s)
say() { printf '%s\n' "$*" | tee -a "$OUT/summary.txt"; }
stamp() { say "[$(($(date +%s) - started)) s] $*"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$OUT/gpus.txt" 2>&1; then
  echo "gpu_device: no NVIDIA GPU here (nvidia-smi -L: $(head -1 "$OUT/gpus.txt" 2>/dev/null))"
  exit 2
fi
stamp "GPUs: $(tr '\n' ';' <"$OUT/gpus.txt")"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,clocks.max.sm,power.limit \
  --format=csv | tee -a "$OUT/summary.txt"

# 1. What runs: cmax and cmax-probe (carried or built), the probe library built here.
bin=${CMAX_BIN:-build/release/bin}
if [ ! -x "$bin/cmax" ] || [ ! -x "$bin/cmax-probe" ]; then
  stamp "building cmax and cmax-probe (cmake --preset release)"
  if ! { cmake --preset release >"$OUT/build.log" 2>&1 &&
    cmake --build --preset release --target cmax cmax-probe >>"$OUT/build.log" 2>&1; }; then
    say "gpu_device: cannot build cmax here (see $OUT/build.log); carry build/release/bin"
    exit 1
  fi
fi
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
if [ -n "$nvcc" ]; then
  cuda_root=$(dirname "$(dirname "$nvcc")")
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')
  stamp "building libcmax-probes.so with $nvcc for sm_$arch"
  if ! "$nvcc" -O3 -std=c++17 -shared -Xcompiler -fPIC,-fvisibility=hidden -Isrc \
    -gencode "arch=compute_$arch,code=sm_$arch" -Xlinker -rpath -Xlinker "$cuda_root/lib64" \
    -o "$OUT/libcmax-probes.so" src/cuda_probes/cuda_probes.cu -lcublas >"$OUT/nvcc.log" 2>&1; then
    say "gpu_device: nvcc failed (see $OUT/nvcc.log)"
    exit 1
  fi
  export CMAX_PROBES_LIB=$OUT/libcmax-probes.so
elif [ -f "$bin/../lib/libcmax-probes.so" ]; then
  export CMAX_PROBES_LIB=$bin/../lib/libcmax-probes.so
  stamp "no nvcc here: using the carried $CMAX_PROBES_LIB"
else
  say "gpu_device: no nvcc here and no libcmax-probes.so carried: the probes cannot run"
  exit 1
fi
"$bin/cmax-probe" quick >"$OUT/cmax-probe-quick.jsonl" 2>"$OUT/cmax-probe-quick.err"
stamp "cmax-probe quick alone: exit $?, $(wc -l <"$OUT/cmax-probe-quick.jsonl") lines"

# 2. The active pass cmax runs, with a burn; --force because nothing else of ours runs here.
stamp "cmax health --active --force --burn $burn_s --deadline 120"
"$bin/cmax" --db "$OUT/cmax.db" health --active --force --burn "$burn_s" --deadline 120 \
  --json >"$OUT/active.json" 2>"$OUT/active.err"
stamp "cmax health --active: exit $?"

# 3. NVML as cmax reads it, then as nvidia-smi does, a moment apart.
"$bin/cmax" --db "$OUT/cmax.db" health --passive --since 10m --json >"$OUT/passive.json" \
  2>"$OUT/passive.err"
nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,ecc.mode.current,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total \
  --format=csv,noheader,nounits >"$OUT/nvidia-smi.csv" 2>&1

python3 - "$OUT" <<'PY' | tee -a "$OUT/summary.txt"
import csv, json, sys
out = sys.argv[1]
try:
    active = json.load(open(f"{out}/active.json"))
except Exception as e:  # a run that printed no report
    print(f"active: no report ({e}); see {out}/active.err")
    active = {"findings": [], "metrics": []}
print("\n== cmax health --active: each figure against its threshold and the published peak")
for f in active["findings"]:
    print(f"  {f['status']:7} {f['check_id']:30} {f['message']}")
print("\n== wall time per check (quick pass, then the burn)")
for m in active["metrics"]:
    if m["name"] == "active.check_seconds":
        print(f"  {m['labels']['check']:24} {m['value']:8.1f} s")
print("\n== figures per GPU")
for m in active["metrics"]:
    if m["name"] != "active.check_seconds":
        print(f"  {m['name']}{{gpu={m['labels'].get('gpu')}}} = {m['value']:.1f} {m['unit']}")

print("\n== cmax's NVML reads beside nvidia-smi's")
try:
    passive = json.load(open(f"{out}/passive.json"))
    nvml = passive["evidence"]["gpu.nvml"]
except Exception as e:
    print(f"  no NVML evidence from cmax ({e}); see {out}/passive.err")
    sys.exit(0)
smi = {}
for row in csv.reader(open(f"{out}/nvidia-smi.csv")):
    row = [c.strip() for c in row]
    if len(row) >= 12 and row[0].isdigit():
        smi[int(row[0])] = row
def num(text):
    try:
        return float(text)
    except ValueError:
        return None
agree = disagree = 0
for g in nvml.get("gpus", []):
    s = smi.get(g["index"])
    if s is None:
        print(f"  GPU {g['index']}: not in nvidia-smi's list"); disagree += 1; continue
    bus = s[3].lower()[4:] if len(s[3]) == 16 else s[3].lower()
    pairs = [
        ("uuid", g["uuid"], s[1], 0), ("name", g["name"], s[2], 0), ("pci", g["pci"], bus, 0),
        ("temperature C", g["temperature_c"], num(s[4]), 3),
        ("power W", (g["power_mw"] or 0) / 1000, num(s[5]), 0.15),
        ("power limit W", (g["power_limit_mw"] or 0) / 1000, num(s[6]), 0.01),
        ("SM clock MHz", g["sm_clock_mhz"], num(s[7]), 0.10),
        ("max SM clock MHz", g["max_sm_clock_mhz"], num(s[8]), 0),
        ("ECC SBE volatile", g["ecc_sbe_volatile"], num(s[10]), 0),
        ("ECC DBE volatile", g["ecc_dbe_volatile"], num(s[11]), 0)]
    for name, ours, theirs, tolerance in pairs:
        if isinstance(ours, str) or isinstance(theirs, str) or ours is None or theirs is None:
            ok = ours == theirs
        elif tolerance >= 1:  # absolute (degrees)
            ok = abs(ours - theirs) <= tolerance
        else:                 # relative: a reading that moves between the two reads
            ok = abs(ours - theirs) <= tolerance * max(abs(theirs), 1)
        agree += ok; disagree += not ok
        print(f"  GPU {g['index']} {name:18} cmax {ours!s:40.40} nvidia-smi {theirs!s:40.40} "
              f"{'same' if ok else 'DIFFERENT'}")
print(f"  {agree} agree, {disagree} differ")
PY
stamp "done; everything is in $OUT"
