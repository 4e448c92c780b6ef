#!/usr/bin/env bash
# Peak memory (max RSS) of the release binary on the hostile inputs of issue 13, against the
# bound of 100 MB. Each line: the case, the exit code, the peak in MB. Needs the release build
# (make build), GNU time (Debian package time) and python3 (the hostile server and clients).
#   bash bench/hostile_memory.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=$PWD/build/release/bin/cmax
[ -x "$BIN" ] || { echo "hostile_memory: build first (make build)" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "hostile_memory: needs GNU time (apt install time)" >&2; exit 2; }
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
export CMAX_DB="$work/cmax.db"

# Runs a command under GNU time; prints "case  exit  peak MB".
measure() {
  local name=$1
  shift
  /usr/bin/time -f '%x %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || true
  read -r code kb < <(tail -1 "$work/time")
  printf '%-58s exit %-3s %6.1f MB\n' "$name" "$code" "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
}

xid='[    2.000000] NVRM: Xid (PCI:0000:17:00): 79, pid=1, name=a, GPU has fallen off the bus.'

mkfifo "$work/kern.fifo"
{ printf '[    1.000000] '; head -c 300M /dev/zero | tr '\0' z; printf '\n%s\n' "$xid"; } \
  >"$work/kern.fifo" &
measure "health --from-file: 300 MB line, then Xid 79 (FIFO)" \
  "$BIN" health --passive --from-file "$work/kern.fifo"

{ printf '[    1.000000] '; head -c 50M /dev/zero | tr '\0' z; printf '\n%s\n' "$xid"; } \
  >"$work/kern.log"
measure "health --from-file: 50 MB line, then Xid 79 (file)" \
  "$BIN" health --passive --from-file "$work/kern.log"
measure "health --from-file /dev/zero, SIGINT after 3 s" \
  timeout --preserve-status -s INT 3 "$BIN" health --passive --from-file /dev/zero
measure "health --slurm-healthcheck --from-file /dev/zero, SIGTERM" \
  timeout --preserve-status -s TERM 3 "$BIN" health --passive --slurm-healthcheck --from-file /dev/zero
measure "health --xid-catalog /dev/zero" "$BIN" health --passive --xid-catalog /dev/zero
measure "reliability run --scenario /dev/zero" "$BIN" reliability run --scenario /dev/zero
measure "endpoint replay /dev/zero" \
  "$BIN" endpoint replay /dev/zero --url http://127.0.0.1:9/ --model m
measure "endpoint run --prompts /dev/zero" \
  "$BIN" endpoint run --url http://127.0.0.1:9/ --model m --prompts /dev/zero
measure "endpoint run --prices /dev/zero" \
  "$BIN" endpoint run --url http://127.0.0.1:9/ --model m --prices /dev/zero

# A hostile server: every answer has a 100 MB header line; then one that never ends its head.
cat >"$work/hostile_server.py" <<'EOF'
import socket, sys, threading
mode = sys.argv[1]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 0))
s.listen(64)
print(s.getsockname()[1], flush=True)
chunk = b"a" * (1 << 20)
def serve(c):
    try:
        c.recv(65536)
        if mode == "header":
            c.sendall(b"HTTP/1.1 200 OK\r\nX-Big: ")
            for _ in range(100):
                c.sendall(chunk)
        else:  # a status line and bytes, never a line end
            c.sendall(b"HTTP/1.1 200 OK")
            while True:
                c.sendall(chunk)
    except OSError:
        pass
    finally:
        c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
for mode in header endless; do
  python3 "$work/hostile_server.py" $mode >"$work/port.$mode" &
  pids+=($!)
  until [ -s "$work/port.$mode" ]; do sleep 0.05; done
  port=$(head -1 "$work/port.$mode")
  for client in cmax libcurl; do
    measure "endpoint run, 50 requests, server: $mode head ($client)" \
      "$BIN" endpoint run --url "http://127.0.0.1:$port" --model m --requests 50 \
      --concurrency 10 --timeout 20 --http-client "$client"
  done
done

# serve-sim under hostile clients: 2,000 idle connections, 10 MB heads, slowloris, floods.
"$BIN" endpoint serve-sim --port 0 --idle-timeout 2 --header-timeout 1 \
  --max-connections 3000 >"$work/sim.out" 2>&1 &
sim=$!
pids+=($sim)
until grep -q listening "$work/sim.out"; do sleep 0.05; done
port=$(sed -n 's/.*127.0.0.1:\([0-9]*\).*/\1/p' "$work/sim.out" | head -1)
python3 - "$port" <<'EOF'
import socket, sys, time
port = int(sys.argv[1])
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(2000)]
for _ in range(20):  # 10 MB heads
    c = socket.create_connection(("127.0.0.1", port))
    try:
        c.sendall(b"POST / HTTP/1.1\r\nX: " + b"a" * (10 << 20))
    except OSError:
        pass
    c.close()
slow = [socket.create_connection(("127.0.0.1", port)) for _ in range(500)]
for i in range(30):  # slowloris: a byte each 0.1 s until the header timeout
    for c in slow:
        try:
            c.send(b"P")
        except OSError:
            pass
    time.sleep(0.1)
for c in idle + slow:
    c.close()
EOF
kb=$(awk '/VmHWM/ {print $2}' /proc/$sim/status)
printf '%-58s %-8s %6.1f MB\n' "serve-sim: 2,000 idle, 20 x 10 MB heads, 500 slowloris" "" \
  "$(awk -v k="$kb" 'BEGIN { print k / 1024 }')"
kill -INT $sim
wait $sim || true
grep 'serve-sim:' "$work/sim.out" || true
