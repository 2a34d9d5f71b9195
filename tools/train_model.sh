#!/usr/bin/env bash
# Reproduces models/unmask-kjv: writes the corpus (tools/make_corpus.sh), then trains the
# tokenizer and the model with unmask-train and writes the checkpoint into OUT (default
# models/unmask-kjv). Interrupted, it is simply run again: the work directory keeps the
# tokenizer and a checkpoint every 200 steps, and the run continues from the last one.
# Needs a build (tools/build.sh). Extra arguments go to unmask-train (e.g. --device cuda on a GPU
# machine: the committed checkpoint was trained that way, on an H100, in 5 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BUILD_DIR:-build}
OUT=${OUT:-models/unmask-kjv}
WORK=${WORK:-$BIN/train-work/unmask-kjv}
CORPUS=$BIN/corpus/kjv.txt
[ -f "$CORPUS" ] || tools/make_corpus.sh "$CORPUS"
exec "$BIN/tools/train/unmask-train" --corpus "$CORPUS" --out "$OUT" --work "$WORK" \
  --vocab-size 4096 --held-out-every 50 \
  --d-model 256 --n-layers 8 --n-heads 4 --mlp-hidden-size 704 --rope-theta 10000 \
  --seq-len 256 --chat-len 128 --batch 16 --pretrain-steps 4400 --chat-steps 1400 \
  --lr 1e-3 --chat-lr 1e-3 --chat-padding batch --warmup-steps 200 --weight-decay 0.1 --seed 1 --compute bf16 \
  --log-every 25 --eval-every 250 --checkpoint-every 200 "$@"
