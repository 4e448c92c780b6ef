# Sourced by the endpoint benchmarks: a temporary folder, and `serve DECODE_MS`, which (re)starts
# serve-sim on CPU 0 at $port with a fresh cache (further arguments go to serve-sim) and waits
# until it listens. Needs $bin, $port.
ulimit -n "$(ulimit -Hn)"
dir=$(mktemp -d)
sim=0
cleanup() { [ "$sim" = 0 ] || kill "$sim" 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
serve() {
  [ "$sim" = 0 ] || { kill "$sim"; wait "$sim" 2>/dev/null || true; }
  taskset -c 0 "$bin" endpoint serve-sim --port "$port" --decode-ms "$1" "${@:2}" > "$dir/sim.log" 2>&1 &
  sim=$!
  for _ in $(seq 100); do grep -q listening "$dir/sim.log" && return; sleep 0.05; done
  echo "serve-sim did not start" >&2
  exit 1
}
