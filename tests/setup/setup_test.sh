#!/usr/bin/env bash
# scripts/setup.sh's install path, which CI never takes (its machine has every package): with
# stand-ins for dpkg-query, apt-get and sudo on PATH, one package is "missing" and is
# "installed". It must exit 0 whether or not a policy-rc.d was already there (Debian images made
# from container images ship one), leave an existing one alone and remove the one it added.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
# Stand-ins: every package installed but cmake; apt-get records what it was asked.
cat >"$work/bin/dpkg-query" <<'STUB'
#!/bin/sh
for last; do :; done
[ "$last" = cmake ] && exit 1
printf 'install ok installed'
STUB
cat >"$work/bin/apt-get" <<STUB
#!/bin/sh
echo "\$*" >>"$work/apt.log"
[ -e "\$CMAX_POLICY_RC_D" ] || { echo "policy-rc.d missing during install" >&2; exit 1; }
STUB
chmod +x "$work/bin/dpkg-query" "$work/bin/apt-get"

fail() { echo "setup_test: $*" >&2; exit 1; }

# 1. A policy-rc.d already there: kept, and exit 0 (the EXIT trap's test was the exit code).
printf '#!/bin/sh\nexit 0\n' >"$work/policy-existing"
CMAX_POLICY_RC_D="$work/policy-existing" PATH="$work/bin:$PATH" bash "$root/scripts/setup.sh" \
  >"$work/out1" 2>&1 || fail "exit $? with a policy-rc.d already there: $(cat "$work/out1")"
grep -q 'install -y -q --no-install-recommends cmake' "$work/apt.log" || fail "cmake not installed"
[ "$(cat "$work/policy-existing")" = "$(printf '#!/bin/sh\nexit 0')" ] || fail "existing policy changed"

# 2. None there: one is added for the install and removed after it.
CMAX_POLICY_RC_D="$work/policy-new" PATH="$work/bin:$PATH" bash "$root/scripts/setup.sh" \
  >"$work/out2" 2>&1 || fail "exit $? without a policy-rc.d: $(cat "$work/out2")"
[ ! -e "$work/policy-new" ] || fail "the policy-rc.d it added was left behind"
echo "setup_test: both paths exit 0"
