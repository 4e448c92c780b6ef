#!/usr/bin/env bash
# cmax-mpi-perf's all_reduce against OpenMPI's own MPI_Allreduce in the plainest timing loop
# (bench/mpi_allreduce_reference.c), on the same ranks of this machine, alternating A and B so
# that the machine's drift falls on both: the stand-in's busbw should be within 10% of the
# reference's (issue 17), or the benchmark, not MPI, is what it measures.
# Each size is measured by a fresh pair of programs (PER_SIZE=1, the default): in one sweep the
# stand-in also runs in place and checks results between sizes, the reference does neither, so
# a size's figure would carry what the previous size left in the caches, not the loop's cost
# (seen at 8 MiB: 0.83 within a sweep, 1.03 alone). PER_SIZE=0 compares whole sweeps.
#   bash bench/mpi_perf_vs_reference.sh [RANKS] [ROUNDS]      (release build: make build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
ranks=${1:-2}
rounds=${2:-3}
perf=$root/build/release/bin/cmax-mpi-perf
ref=$root/build/release/bin/mpi_allreduce_reference
for b in "$perf" "$ref"; do
  [ -x "$b" ] || { echo "no $b (cmake --build --preset release --target cmax-mpi-perf mpi_allreduce_reference)" >&2; exit 2; }
done
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# One rank per core where the cores suffice (a rank sharing a core with a polling peer
# measures the scheduler); else unbound.
bind=(--bind-to core)
[ "$ranks" -le "$(nproc)" ] || bind=(--oversubscribe --bind-to none)
mpi=(mpirun -np "$ranks" "${bind[@]}" --mca btl self,vader,tcp)
min=$((1 << 16)) max=$((1 << 26)) iters=20
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sweep() {   # FROM TO: one round of both programs
  "${mpi[@]}" "$perf" all_reduce -b "$1" -e "$2" -n "$iters" -w 5 |
    awk '!/^#/ && NF >= 13 {print $1, $8}' >>"$tmp/perf"   # size, out-of-place busbw
  "${mpi[@]}" "$ref" "$1" "$2" "$iters" >>"$tmp/ref"
}
for r in $(seq "$rounds"); do
  if [ "${PER_SIZE:-1}" = 1 ]; then
    for ((s = min; s <= max; s *= 2)); do sweep "$s" "$s"; done
  else
    sweep "$min" "$max"
  fi
done
echo "all_reduce on $ranks ranks, $rounds rounds each, median busbw (GB/s) per size"
echo "(noise: the reference's odd rounds against its even rounds, the same program against itself)"
printf '%12s %12s %12s %8s %8s\n' size cmax-mpi-perf reference ratio noise
awk 'NR == FNR {p[$1] = p[$1] " " $2; next}
     {r[$1] = r[$1] " " $2; n[$1]++; if (n[$1] % 2) odd[$1] = odd[$1] " " $2; else even[$1] = even[$1] " " $2}
     function median(list,   n, a, i, j, t) {
       n = split(list, a, " ")
       for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) {t = a[i]; a[i] = a[j]; a[j] = t}
       return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
     }
     END {
       for (s in p) if (s in r) {
         ratio = median(p[s]) / median(r[s])
         noise = (s in even) ? median(odd[s]) / median(even[s]) : 1
         printf "%12d %12.3f %12.3f %8.3f %8.3f\n", s, median(p[s]), median(r[s]), ratio, noise
       }
     }' "$tmp/perf" "$tmp/ref" | sort -n | tee "$tmp/table"
awk '{ratio += $4; lo = (NR == 1 || $4 < lo) ? $4 : lo; hi = (NR == 1 || $4 > hi) ? $4 : hi
      d = $5 < 1 ? 1 / $5 : $5; spread = (d > spread) ? d : spread}
     END {printf "ratio: mean %.3f, %.3f-%.3f; the reference against itself: up to %.0f%% apart\n",
                 ratio / NR, lo, hi, (spread - 1) * 100}' "$tmp/table"
