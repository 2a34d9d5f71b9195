#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, starts loader, executor and
# scheduler on this machine with the embedded job queue (no Redis), serving unmask's own trained
# model (models/unmask-kjv: a small LLaDA-architecture model trained on the King James Bible, see
# its README), and generates through the `unmask` CLI: a continuation that unmasks step by step,
# then a question in chat form whose answer stops by itself. Extra arguments go to both
# `unmask generate` calls (e.g. --sampler dual_cache+threshold).
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
BIN=${BUILD_DIR:-build}
ROOT=${MODEL_ROOT:-models}
MODEL=${MODEL:-unmask-kjv}

LOG=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
"$BIN/services/loader/unmask-loader" --listen 127.0.0.1:50052 --model-root "$ROOT" >"$LOG/loader.log" 2>&1 &
pids+=($!)
# No --precision: the executor computes in what this CPU is fast at (`unmask models` says which and why).
"$BIN/services/executor/unmask-executor" --listen 127.0.0.1:50053 --loader 127.0.0.1:50052 --model "$MODEL" \
  >"$LOG/executor.log" 2>&1 &
pids+=($!)
"$BIN/services/scheduler/unmask-scheduler" --listen 127.0.0.1:50051 --executors 127.0.0.1:50053 \
  --model-root "$ROOT" >"$LOG/scheduler.log" 2>&1 &
pids+=($!)
CLI="$BIN/tools/unmask_cli/unmask"
for service in 127.0.0.1:50052 127.0.0.1:50053 127.0.0.1:50051; do
  for _ in $(seq 1 300); do
    "$CLI" health --addr "$service" >/dev/null 2>&1 && break
    sleep 0.2
  done
  "$CLI" health --addr "$service" >/dev/null || { echo "$service did not start; logs in $LOG" >&2; exit 1; }
done
for _ in $(seq 1 50); do
  "$CLI" models | grep -q "$MODEL" && break
  sleep 0.2
done
echo "loader, executor and scheduler are serving (logs in $LOG)"
"$CLI" models
echo; echo "== unmask generate --prompt 'And God said unto Moses,'"
"$CLI" generate --model "$MODEL" --prompt "And God said unto Moses," --gen-length 64 --block-length 32 --steps 64 "$@"
echo; echo "== unmask generate --chat 'What does John 3:16 say?'"
"$CLI" generate --model "$MODEL" --chat "What does John 3:16 say?" --gen-length 64 --block-length 8 --steps 64 "$@"
