#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, writes a demo checkpoint in the
# LLaDA layout (random weights: real ones cannot be downloaded here, so the text is gibberish),
# starts loader, executor and scheduler on this machine with the embedded job queue (no Redis),
# and generates through the `unmask` CLI. Extra arguments go to `unmask generate`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
BIN=${BUILD_DIR:-build}
ROOT=${MODEL_ROOT:-$BIN/demo-models}
MODEL=demo-llada
if [ ! -f "$ROOT/$MODEL/config.json" ]; then
  "$BIN/tools/make_model/make-model" --out "$ROOT/$MODEL" --d-model 256 --n-layers 4 --n-heads 8 \
    --mlp-hidden-size 704 --vocab-size 126464 --shards 2 --seed 7 --active-vocab 466 \
    --tokenizer tests/data/tokenizers/llada-like.tokenizer.json
fi

LOG=$(mktemp -d)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT
"$BIN/services/loader/unmask-loader" --listen 127.0.0.1:50052 --model-root "$ROOT" >"$LOG/loader.log" 2>&1 &
pids+=($!)
"$BIN/services/executor/unmask-executor" --listen 127.0.0.1:50053 --loader 127.0.0.1:50052 --model "$MODEL" \
  --precision bf16 >"$LOG/executor.log" 2>&1 &
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
"$CLI" generate --model "$MODEL" --chat "Write a haiku about masks." \
  --gen-length 64 --block-length 32 --steps 64 "$@"
