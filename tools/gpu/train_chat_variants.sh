#!/usr/bin/env bash
# Runs ON THE GPU MACHINE after tools/gpu/build_and_test.sh has built unmask-train: trains the
# pre-training stage of models/unmask-kjv once (tools/train_model.sh's shape, data, seed and
# schedule, on cuda), then several chat-stage recipes from that same step-4400 checkpoint, in
# parallel on the one GPU, and measures each with bench_model_quality's chat section. Every
# variant is exactly what `tools/train_model.sh` with its options would train (a run resumed at
# 4400 continues as the uninterrupted one), so the winner is reproduced by one command.
#   tools/gpu/train_chat_variants.sh OUTDIR 'name:unmask-train options' ...
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu/env.sh
out=$1
shift
work=/tmp/unmask-train-work
mkdir -p "$work" "$out"
[ -f "$work/kjv.txt" ] || xz -dc .device/kjv.txt.xz > "$work/kjv.txt"
train() {  # train WORKDIR OUTDIR extra options...
  local w=$1 o=$2
  shift 2
  "$BUILD/tools/train/unmask-train" --corpus "$work/kjv.txt" --out "$o" --work "$w" --vocab-size 4096 --held-out-every 50 \
    --d-model 256 --n-layers 8 --n-heads 4 --mlp-hidden-size 704 --rope-theta 10000 --seq-len 256 --chat-len 128 \
    --batch 16 --pretrain-steps 4400 --lr 1e-3 --warmup-steps 200 --weight-decay 0.1 --seed 1 --compute bf16 \
    --log-every 100 --eval-every 500 --checkpoint-every 200 --device cuda "$@"
}
start=$(date +%s)
train "$work/pre" "$work/model-pre" --chat-steps 0 > "$out/pre.log" 2>&1
echo "pre-training: $(( $(date +%s) - start )) s"; tail -2 "$out/pre.log"
pids=()
for spec in "$@"; do
  name=${spec%%:*}
  rm -rf "$work/$name" && cp -r "$work/pre" "$work/$name"
  # shellcheck disable=SC2086
  train "$work/$name" "$work/model-$name" ${spec#*:} > "$out/$name.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
echo "chat variants: $(( $(date +%s) - start )) s in all"
for model in pre "$@"; do
  name=${model%%:*}
  tail -1 "$out/$name.log"
  "$BUILD/bench/engine/bench_model_quality" --model "$work/model-$name" --corpus "$work/kjv.txt" --sections chat \
    > "$out/$name.chat.md" 2>/dev/null
  echo "== $name: ${model#*:}"; grep '^|' "$out/$name.chat.md"
done
touch "$out/DONE"
