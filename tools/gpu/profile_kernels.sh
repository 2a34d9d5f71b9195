#!/usr/bin/env bash
# Where a GPU step's time goes, kernel by kernel (issue 32): builds unmask-engine and writes the
# LLaDA-8B-shaped checkpoint as tools/gpu/measure.sh does, then has Nsight Compute (ncu) time every
# kernel of a stretch of steady steps, eagerly (the kernels a CUDA graph replays are the same), with
# the clocks and the L2 cache left as they run (ncu's default flushes L2 before every kernel):
#   dual   dual_cache, gen_length 64: kernels 5000.. are cached 32-row steps of the first block;
#   ref    reference, gen_length 1024, one step a block: a 1056-row forward.
# Each profile is $OUT/NAME.csv (ncu's) and $OUT/NAME.md (bench/gpu/kernel_table.py's table).
#   tools/gpu/profile_kernels.sh     # there, carrying what measure.sh carries
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
export OUT=${OUT:-/tmp/unmask-gpu-out}
STAGES=none tools/gpu/measure.sh || exit 1
export GPUDEPS=.device/gpudeps-slim.tar.xz
source tools/gpu/env.sh
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
[ -n "$NCU" ] || { echo "no ncu" | tee -a "$OUT/log.txt"; exit 1; }
PROMPT=$(seq -s, 100 131)

profile() {  # NAME SKIP COUNT ENGINE-ARGS...
  local name=$1 skip=$2 count=$3
  shift 3
  timeout 120 "$NCU" --clock-control none --cache-control none --launch-skip "$skip" --launch-count "$count" \
    --metrics gpu__time_duration.sum --csv "$BUILD/tools/unmask_engine/unmask-engine" generate \
    --model /tmp/unmask-m8b --device cuda --precision bf16 --prompt-ids "$PROMPT" --block-length 32 "$@" \
    > "$OUT/$name.csv" 2> "$OUT/$name.err"
  echo "$name: ncu exit $?" | tee -a "$OUT/log.txt"
  python3 bench/gpu/kernel_table.py "$OUT/$name.csv" | tee "$OUT/$name.md"
}

profile dual 5000 2400 --sampler dual_cache --gen-length 64 --steps 64
profile ref 3000 1500 --sampler reference --gen-length 1024 --steps 32
