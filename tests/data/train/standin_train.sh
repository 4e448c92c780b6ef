#!/bin/sh
# A stand-in for a TorchTitan training job (named as one: it trains nothing). It prints
# TorchTitan's log lines as torchrun --role rank --tee 3 shows them, then behaves as its first
# argument says:
#   finish N     steps 1, 10 ... N, "Training completed", exit 0
#   forever      steps 1, 10, 20 ... until SIGTERM, which it answers like TorchTitan's
#                signal handler: a last line, exit 0
#   hang N       steps up to N, then waits in a "collective" that never returns
#   crash N      steps up to N, then rank 3's out-of-memory traceback and torchrun's report,
#                exit 1
#   segv-once F  as a launcher that crashes as it starts: while file F does not exist, makes it,
#                says so on stderr and dies of SIGSEGV; then "finish 20"
#   fail-once F  the same, but failing to start its daemons: a message and exit 1
#   segv-late    its lines on stderr (as TorchTitan's logger writes them): the start, step 1,
#                then dies of SIGSEGV
mode=$1
last=${2:-50}
if [ "$mode" = segv-once ] || [ "$mode" = fail-once ]; then
  if [ ! -e "$2" ]; then
    : > "$2"
    if [ "$mode" = fail-once ]; then
      echo "ORTE was unable to reliably start one or more daemons." >&2
      exit 1
    fi
    echo "[stand-in:00001] *** Process received signal ***" >&2
    echo "stand-in:1:1 [0] NCCL WARN a line a job's log would count" >&2
    kill -SEGV $$
  fi
  mode=finish
  last=20
fi
line() {
  printf '[rank0]:[titan] 2025-06-16 22:%02d:%02d,000 - root - INFO - %s\n' \
    $(( $1 / 60 % 60 )) $(( $1 % 60 )) "$2"
}
step() {
  tps=5800
  [ "$1" -eq 1 ] && tps=1200
  line "$1" "step: $1  loss: $(( 12 - $1 / 20 )).1000  grad_norm:  1.0000  memory: 49.66GiB(52.28%)  tps: $tps  tflops: 335.00  mfu: 33.87%"
}
trap 'line 0 "Received SIGTERM: saving and stopping"; exit 0' TERM
[ "$mode" = segv-late ] && exec 1>&2
line 0 "Training starts at step 1"
s=1
if [ "$mode" = forever ]; then
  while :; do step $s; s=$(( s == 1 ? 10 : s + 10 )); done
fi
if [ "$mode" = segv-late ]; then step 1; kill -SEGV $$; fi
while [ "$s" -le "$last" ]; do
  step $s
  s=$(( s == 1 ? 10 : s + 10 ))
done
case $mode in
  finish) line 99 "Training completed"; exit 0 ;;
  hang) sleep 3600 & wait ;;
  crash)
    {
      echo "[rank3]:[rank3]: Traceback (most recent call last):"
      echo '[rank3]:[rank3]:   File "train.py", line 612, in <module>'
      echo "[rank3]:[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."
      echo "Root Cause (first observed failure):"
      echo "[0]:"
      echo "  host      : stand-in"
      echo "  rank      : 3 (local_rank: 3)"
      echo "  exitcode  : 1 (pid: 4242)"
      echo "============================================================"
    } >&2
    exit 1 ;;
esac
