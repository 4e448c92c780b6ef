#!/usr/bin/env bash
# scripts/setup.sh's install path, which CI never takes (its machine has every package). Stand-ins
# (named as such) for dpkg-query, apt-get, id and sudo go first on PATH; each case sets which
# packages are "installed", whether a policy-rc.d is already there, who runs it and whether the
# install fails, then asserts the exit code, what apt-get was asked and what is left behind.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"

# Stand-in dpkg-query: a package is installed unless named in $work/missing ("ALL": none is).
cat >"$work/bin/dpkg-query" <<STUB
#!/bin/sh
for last; do :; done
grep -qx ALL "$work/missing" && exit 1
grep -qx "\$last" "$work/missing" && exit 1
printf 'install ok installed'
STUB
# Stand-in apt-get: records its arguments; fails the install when $work/fail-install exists; the
# policy-rc.d must be in place while it runs (or the packages' daemons would start).
cat >"$work/bin/apt-get" <<STUB
#!/bin/sh
echo "\$*" >>"$work/apt.log"
[ -e "\$CMAX_POLICY_RC_D" ] || { echo "policy-rc.d missing during install" >&2; exit 1; }
case "\$1" in install) [ ! -e "$work/fail-install" ] || { echo "E: stand-in failure" >&2; exit 100; } ;; esac
exit 0
STUB
# Stand-in id: prints the uid in $work/uid (0 unless a case says otherwise).
cat >"$work/bin/id" <<STUB
#!/bin/sh
cat "$work/uid"
STUB
# Stand-in sudo: records that it was used and runs the command.
cat >"$work/bin/sudo" <<STUB
#!/bin/sh
echo "\$1" >>"$work/sudo.log"
exec "\$@"
STUB
chmod +x "$work/bin/"*

fail() { echo "setup_test: $case: $*" >&2; exit 1; }

# run_setup CASE MISSING UID POLICY(existing|none) INSTALL(ok|fail): runs setup.sh, sets $rc, $out.
run_setup() {
  case=$1
  printf '%s\n' $2 >"$work/missing"
  echo "$3" >"$work/uid"
  rm -f "$work/apt.log" "$work/sudo.log" "$work/fail-install" "$work/policy"
  touch "$work/apt.log" "$work/sudo.log"
  [ "$4" = existing ] && printf '#!/bin/sh\nexit 0\n' >"$work/policy"
  [ "$5" = fail ] && touch "$work/fail-install"
  rc=0
  out=$(CMAX_POLICY_RC_D="$work/policy" PATH="$work/bin:$PATH" bash "$root/scripts/setup.sh" 2>&1) || rc=$?
}
existing_policy_kept() {
  [ "$(cat "$work/policy")" = "$(printf '#!/bin/sh\nexit 0')" ] || fail "the existing policy-rc.d changed"
}

# Everything installed: nothing fetched, nothing touched, exit 0.
run_setup everything-installed "" 0 none ok
[ "$rc" -eq 0 ] || fail "exit $rc: $out"
[ ! -s "$work/apt.log" ] || fail "apt-get called: $(cat "$work/apt.log")"
[ ! -e "$work/policy" ] || fail "a policy-rc.d was written"
grep -q 'setup: all [0-9]* packages present' <<<"$out" || fail "no summary: $out"

# Nothing installed (a fresh machine), no policy-rc.d: every package asked for, policy added
# for the install and removed after it.
run_setup nothing-installed ALL 0 none ok
[ "$rc" -eq 0 ] || fail "exit $rc: $out"
grep -q '^update' "$work/apt.log" || fail "no apt-get update"
grep -q 'install -y -q --no-install-recommends .*cmake .*slurmd .*prometheus' "$work/apt.log" ||
  fail "not every package asked for: $(cat "$work/apt.log")"
[ ! -e "$work/policy" ] || fail "the policy-rc.d it added was left behind"
grep -q '^setup: done$' <<<"$out" || fail "no done line: $out"

# One package missing and a policy-rc.d already there (images made from container images ship
# one): exit 0, only that package asked for, the existing file kept as it was.
run_setup policy-present cmake 0 existing ok
[ "$rc" -eq 0 ] || fail "exit $rc: $out"
grep -qx 'install -y -q --no-install-recommends cmake' "$work/apt.log" || fail "apt: $(cat "$work/apt.log")"
existing_policy_kept

# The install fails: setup.sh fails with apt-get's code, does not say done, removes its policy.
run_setup install-fails cmake 0 none fail
[ "$rc" -eq 100 ] || fail "exit $rc, expected apt-get's 100: $out"
! grep -q 'setup: done' <<<"$out" || fail "said done after a failed install"
[ ! -e "$work/policy" ] || fail "the policy-rc.d it added was left behind after the failure"

# The install fails with a policy-rc.d already there: still kept.
run_setup install-fails-policy-present cmake 0 existing fail
[ "$rc" -eq 100 ] || fail "exit $rc: $out"
existing_policy_kept

# Not root, sudo available: every privileged step goes through sudo, exit 0.
run_setup through-sudo "cmake git" 1000 none ok
[ "$rc" -eq 0 ] || fail "exit $rc: $out"
grep -qx apt-get "$work/sudo.log" || fail "apt-get not through sudo: $(cat "$work/sudo.log")"
grep -qx tee "$work/sudo.log" && grep -qx rm "$work/sudo.log" ||
  fail "policy-rc.d not written and removed through sudo: $(cat "$work/sudo.log")"
[ ! -e "$work/policy" ] || fail "the policy-rc.d it added was left behind"

# Not root and no sudo: a clear error naming what is missing, nothing run. PATH holds only the
# stand-ins and links to the few tools the script and they use, so a sudo installed on this
# machine is not found (bash itself is run by its path).
mkdir -p "$work/nosudo"
for tool in dpkg-query apt-get id; do ln -s "$work/bin/$tool" "$work/nosudo/$tool"; done
for tool in grep cat; do ln -s "$(command -v "$tool")" "$work/nosudo/$tool"; done
case=no-sudo
printf 'cmake\n' >"$work/missing"; echo 1000 >"$work/uid"; : >"$work/apt.log"
rc=0
out=$(CMAX_POLICY_RC_D="$work/policy" PATH="$work/nosudo" "$BASH" "$root/scripts/setup.sh" 2>&1) || rc=$?
[ "$rc" -eq 1 ] || fail "exit $rc: $out"
grep -q 'need root or sudo to install: cmake' <<<"$out" || fail "unclear error: $out"
[ ! -s "$work/apt.log" ] || fail "apt-get called without rights"

echo "setup_test: 7 cases passed"
