#!/usr/bin/env bash
# `cmax health --passive --slurm-healthcheck` against LBNL NHC with comparable checks, side by
# side on one healthy kernel log, as Slurm's HealthCheckProgram would run them.
#   NHC: build it outside the repository from https://github.com/mej/nhc (./autogen.sh &&
#   ./configure --prefix=/opt/nhc --sysconfdir=/opt/nhc/etc --libexecdir=/opt/nhc/libexec &&
#   make install), or point NHC_PREFIX at another install.
# Usage: bench/health_vs_nhc.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-20}
bin=build/release/bin/cmax
nhc_prefix=${NHC_PREFIX:-/opt/nhc}
[ -x "$bin" ] || { echo "build the release binary first: make build" >&2; exit 1; }
[ -x "$nhc_prefix/sbin/nhc" ] || { echo "no NHC at $nhc_prefix (see the header of $0)" >&2; exit 1; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# A healthy kernel log: this machine's, without any health event in it.
dmesg | grep -v -E 'Xid|SXid|fallen off|soft lockup|blocked for more|stall|AER|Link down|not responding|Out of memory|Hardware Error|EDAC|Lustre' > "$dir/clean.log"
lines=$(wc -l < "$dir/clean.log")

# NHC: root filesystem read-write, CPU and memory shape, loopback up, and the same log
# scanned for Xid lines (NHC has no kernel-log check of its own; check_cmd_output is the way).
sockets=$(lscpu | awk -F: '/^Socket\(s\)/ {gsub(/ /, "", $2); print $2}')
cores=$(nproc)
cat > "$dir/nhc.conf" <<CONF
* || export MARK_OFFLINE=0
* || check_fs_mount_rw -f /
* || check_hw_cpuinfo ${sockets:-1} $cores $cores
* || check_hw_physmem 1gb 100tb
* || check_hw_eth lo
* || check_cmd_output -t 5 -m '!/NVRM: Xid/' -e 'cat $dir/clean.log'
CONF
nhc() {
  "$nhc_prefix/sbin/nhc" -c "$dir/nhc.conf" -l "$dir/nhc.log" -t 30 CONFDIR="$nhc_prefix/etc/nhc" \
    INCDIR="$nhc_prefix/etc/nhc/scripts" HELPERDIR="$nhc_prefix/libexec/nhc" \
    ONLINE_NODE=: OFFLINE_NODE=: NHC_RM=none
}
# cmax: the kernel log parsed and classified (Xid, SXid, lockups, AER, NIC, filesystems ...),
# PCIe link widths, InfiniBand ports, and network filesystems probed with a timeout.
cmax() {
  "$bin" health --passive --slurm-healthcheck --since 3650d --from-file "$dir/clean.log" \
    --db "$dir/cmax.db"
}
nhc || { echo "NHC fails on this machine; fix its config first" >&2; exit 1; }
cmax || { echo "cmax health fails on this log" >&2; exit 1; }

measure() {  # prints "wall user+sys" in ms, median over $runs
  local name=$1 walls=() cpus=()
  for _ in $(seq "$runs"); do
    local t
    t=$( { TIMEFORMAT='%R %U %S'; time "$name" >/dev/null 2>&1; } 2>&1 )
    read -r real user sys <<< "$t"
    walls+=("$(awk -v r="$real" 'BEGIN { printf "%.1f", r * 1000 }')")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.1f", (u + s) * 1000 }')")
  done
  local wall cpu
  wall=$(printf '%s\n' "${walls[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  cpu=$(printf '%s\n' "${cpus[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  echo "$wall $cpu"
}
read -r nhc_wall nhc_cpu <<< "$(measure nhc)"
read -r cmax_wall cmax_cpu <<< "$(measure cmax)"
echo "healthy node, kernel log of $lines lines, median of $runs runs:"
printf '  %-44s wall %7.1f ms  cpu %7.1f ms\n' "LBNL NHC $(cd "$nhc_prefix" && ls etc/nhc >/dev/null && echo '(5 checks)')" "$nhc_wall" "$nhc_cpu"
printf '  %-44s wall %7.1f ms  cpu %7.1f ms\n' "cmax health --passive --slurm-healthcheck" "$cmax_wall" "$cmax_cpu"
awk -v a="$nhc_wall" -v b="$cmax_wall" -v c="$nhc_cpu" -v d="$cmax_cpu" \
  'BEGIN { printf "  cmax is %.0fx faster in wall time and uses %.0fx less CPU\n", a / b, (d > 0 ? c / d : 0) }'
