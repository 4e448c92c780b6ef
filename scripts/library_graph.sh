#!/usr/bin/env bash
# The libraries (one per src/ folder) and what each links, read from src/CMakeLists.txt: the
# block docs/ARCHITECTURE.md shows between its library-graph markers.
#   scripts/library_graph.sh           print the block
#   scripts/library_graph.sh --check   exit 1 when docs/ARCHITECTURE.md shows another one
#   scripts/library_graph.sh --update  rewrite the block in docs/ARCHITECTURE.md
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
doc="$root/docs/ARCHITECTURE.md"

graph() {
  # cmax_library(NAME SOURCES ... DEPS a b c): NAME and its deps that are libraries of src/
  # folders (cmax_sqlite3 and the like wrap outside ones). Two passes: a library may name one
  # defined further down.
  awk '
    FNR == NR { if (match($0, /cmax_library\([a-z_]+/)) ours[substr($0, RSTART + 13, RLENGTH - 13)] = 1; next }
    /^cmax_library\(/ { sub(/^cmax_library\(/, ""); name = $1; deps = ""; in_lib = 1; start = 2 }
    in_lib {
      for (i = (start ? start : 1); i <= NF; i++) {
        word = $i; closing = sub(/\)$/, "", word)
        if (word ~ /^cmax_/) { sub(/^cmax_/, "", word); if (word in ours) deps = deps (deps == "" ? "" : ", ") word }
        if (closing) { printf "%-12s -> %s\n", name, (deps == "" ? "(nothing of ours)" : deps); in_lib = 0; break }
      }
      start = 0
    }
  ' "$root/src/CMakeLists.txt" "$root/src/CMakeLists.txt"
}

block() {
  echo '```'
  graph
  echo '```'
}

case "${1:-}" in
  "") block ;;
  --check)
    want=$(block)
    have=$(sed -n '/<!-- library-graph:begin -->/,/<!-- library-graph:end -->/p' "$doc" | sed '1d;$d')
    if [ "$want" != "$have" ]; then
      echo "docs/ARCHITECTURE.md's library graph is out of date; run scripts/library_graph.sh --update" >&2
      diff <(echo "$have") <(echo "$want") >&2 || true
      exit 1
    fi
    echo "library graph: up to date" ;;
  --update)
    tmp=$(mktemp)
    block >"$tmp"
    awk -v blockfile="$tmp" '
      /<!-- library-graph:begin -->/ { print; while ((getline line < blockfile) > 0) print line; skip = 1; next }
      /<!-- library-graph:end -->/ { skip = 0 }
      !skip { print }
    ' "$doc" >"$doc.new"
    mv "$doc.new" "$doc"
    rm -f "$tmp" ;;
  *) echo "usage: $0 [--check|--update]" >&2; exit 2 ;;
esac
