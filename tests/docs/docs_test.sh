#!/usr/bin/env bash
# The project stands on its own and its architecture page is true: no file points outside the
# repository (a user who clones it has only it), and docs/ARCHITECTURE.md shows the library
# graph that src/CMakeLists.txt builds.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
status=0
# This file names the pattern it looks for; every other tracked file must not hold it.
rc=0
outside=$(git grep -n -I -e '\.\./shared' -- . ':!tests/docs/docs_test.sh') || rc=$?
if [ "$rc" -eq 0 ]; then
  echo "docs_test: files point outside the repository:" >&2
  echo "$outside" >&2
  status=1
elif [ "$rc" -ne 1 ]; then  # 1: nothing found; more: git could not look
  echo "docs_test: git grep failed (exit $rc)" >&2
  status=1
fi
bash scripts/library_graph.sh --check || status=1
exit $status
