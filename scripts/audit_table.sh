#!/usr/bin/env bash
# The README's audit check table and docs/AUDIT_COVERAGE.md, generated from
# data/audit_catalogue.json by the built cmax (`cmax audit --show --format markdown|coverage`);
# the unit tests ShowCatalogue.TheReadmeTableIsTheCatalogues and TheCoverageDocIsTheCatalogues
# fail when either holds another one.
#   scripts/audit_table.sh [CMAX]            print the block
#   scripts/audit_table.sh --update [CMAX]   rewrite it in README.md (CMAX: build/debug/bin/cmax)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
update=0
if [ "${1:-}" = --update ]; then update=1; shift; fi
cmax=${1:-$root/build/debug/bin/cmax}
[ -x "$cmax" ] || { echo "audit_table: no cmax at $cmax (build first: make build)" >&2; exit 2; }
block=$("$cmax" audit --show --format markdown)
if [ "$update" -eq 0 ]; then printf '%s\n' "$block"; exit 0; fi
readme="$root/README.md"
grep -q '^<!-- audit-checks:begin -->$' "$readme" && grep -q '^<!-- audit-checks:end -->$' "$readme" ||
  { echo "audit_table: README.md has no audit-checks markers" >&2; exit 1; }
tmp=$(mktemp "$readme.XXXXXX")
trap 'rm -f "$tmp"' EXIT
BLOCK="$block" awk '
  /^<!-- audit-checks:begin -->$/ { print; print ENVIRON["BLOCK"]; skip = 1; next }
  /^<!-- audit-checks:end -->$/ { skip = 0 }
  !skip { print }
' "$readme" >"$tmp"
mv "$tmp" "$readme"
trap - EXIT
"$cmax" audit --show --format coverage >"$root/docs/AUDIT_COVERAGE.md"
echo "audit_table: README.md and docs/AUDIT_COVERAGE.md updated"
