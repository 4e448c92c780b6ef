#!/usr/bin/env bash
# Installs every build, test and runtime dependency of cmax from Debian 12's apt.
# Idempotent: packages already present are not touched, and nothing is fetched when all are.
set -euo pipefail

packages=(
  # build
  build-essential cmake ninja-build pkg-config git
  # libraries the code links
  libcli11-dev libfmt-dev nlohmann-json3-dev libyaml-cpp-dev
  libexpected-dev libsqlite3-dev sqlite3 libcurl4-openssl-dev
  zlib1g-dev   # gzip profiler traces (cmax train trace)
  libisal-dev  # ISA-L's igzip: the same traces inflated about 3x faster (loaded at run time; zlib without it)
  # tests, benchmarks, fuzzing, sanitizers, lint
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  clang clang-format clang-tidy libclang-rt-14-dev
  # the lab cluster and CPU collectives
  slurmctld slurmd slurm-client munge openmpi-bin libopenmpi-dev
  # what the host inventory reads with; curl and prometheus for the agent's metrics tests
  pciutils procps util-linux iproute2 curl prometheus
  # the TLS tests make their own certificate and servers (openssl s_server; nghttpd for HTTP/2)
  openssl nghttp2-server
  # the audit's read-only test traces every program it starts and every file it writes
  strace
  # the JSON Schema test validates the reports against the published schemas with Debian's validator
  python3 python3-jsonschema
  # the report's browser test loads the HTML page in Debian's headless Chromium
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi

echo "setup: installing ${missing[*]}"
# Keep the packages' own daemons (munged, slurmctld, slurmd, prometheus) from starting: the
# lab and the tests run their own. policy-rc.d is removed again afterwards.
# CMAX_POLICY_RC_D: for tests/setup/setup_test.sh, which must not touch the real one.
policy=${CMAX_POLICY_RC_D:-/usr/sbin/policy-rc.d}
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
  $sudo chmod 755 "$policy"
  added_policy=1
fi
# An if, not `[ ... ] && ...`: as the trap's last command a false test would become the exit code.
cleanup() { if [ "$added_policy" -eq 1 ]; then $sudo rm -f "$policy"; fi; }
trap cleanup EXIT

export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: done"
