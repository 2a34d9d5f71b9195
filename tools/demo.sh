#!/usr/bin/env bash
# The README's run command: installs what is missing, builds, writes a demo checkpoint in the
# LLaDA layout (random weights: the real ones cannot be downloaded here) and generates from it
# with the engine in-process.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
tools/build.sh
BIN=${BUILD_DIR:-build}
MODEL=${MODEL:-$BIN/demo-model}
if [ ! -f "$MODEL/config.json" ]; then
  "$BIN/tools/make_model/make-model" --out "$MODEL" --d-model 256 --n-layers 4 --n-heads 8 \
    --mlp-hidden-size 704 --vocab-size 126464 --shards 2 --seed 7
fi
"$BIN/tools/unmask_engine/unmask-engine" generate --model "$MODEL" \
  --prompt-ids 126080,126346,3840,126347,198,198,2903,1099,1260,126348,126346,598,126347,198,198 \
  --gen-length 32 --block-length 16 --steps 32 --precision bf16 "$@"
