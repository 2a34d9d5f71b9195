#!/usr/bin/env bash
# The one prepared run of a GPU lease (issue 32): builds unmask-engine and make-model, writes an
# LLaDA-8B-shaped random bf16 checkpoint, then measures side by side on the one GPU
#   - the official generate() over the official modeling code (bench/gpu/official_llada.py),
#   - unmask's reference mode, eager and with CUDA graphs (--cuda-graphs), and with the fused
#     elementwise kernels (the default on cuda) against ATen's operators (--no-fused-kernels),
#   - dual_cache and dual_cache+threshold, eager and with graphs,
#   - gen_length 1024, batches of 8 and 32 prompts (one generation of several rows), and 32
#     generations 8 and 32 at once as the executor batches them (bench_step_batch),
#   - int8 and int4 weights (--weights), dequantized by ATen's operators and by one fused kernel a
#     layer (--fused-kernels), peak GPU memory of every run (nvidia-smi, polled).
# Every unmask run is one line of $OUT/results.jsonl; bench/gpu/gpu_report.py turns them and
# $OUT/official.json into the tables of docs/benchmarks.md. Stages run in order of importance and
# a stage that would start after LIMIT seconds is skipped, so a lease always brings back figures.
#
#   tools/gpu/stage_official.sh && tools/gpu/fetch_deps.sh    # here, before the lease
#   tools/gpu/weights_aside.sh out                            # here: the tree must fit the 64 MiB carry
#   tools/gpu/measure.sh       # there: device run carrying .device/gpudeps-slim.tar.xz and .device/official
#   tools/gpu/weights_aside.sh back                           # here, after the lease
#   tools/gpu/measure.sh --dry                                # here: tiny shapes on the CPU, the
#                                                             # same steps, so no lease is spent on a typo
# Environment: OUT (default /tmp/unmask-gpu-out), LIMIT (seconds, default 470), MODEL_DIR,
# STAGES (names of the stages to run, e.g. "official ref_long_eager"; default all).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
DRY=0
[ "${1:-}" = --dry ] && DRY=1
OUT=${OUT:-/tmp/unmask-gpu-out}
LIMIT=${LIMIT:-470}
mkdir -p "$OUT"
: > "$OUT/results.jsonl"
START=$(date +%s)
log() { echo "[$(($(date +%s) - START)) s] $*" | tee -a "$OUT/log.txt"; }
left() { echo $((LIMIT - ($(date +%s) - START))); }

if [ "$DRY" = 1 ]; then
  BUILD=build
  DEVICE=cpu PRECISION=fp32 DTYPE=fp32 STANDINS=--standins PY=/usr/bin/python3  # Debian's, with torch 1.13
  MODEL_DIR=${MODEL_DIR:-/tmp/unmask-gpu-dry-model}
  SHAPE=(--d-model 128 --n-layers 2 --n-heads 4 --mlp-hidden-size 256 --vocab-size 126464)
  SHORT=64 LONG=128 LONG_STEPS=32 BATCH_TOKENS=16
  HEAD_SCALE=80  # the LM head's logits spread as below: 0.02 x 80 x sqrt(128) = 18
  log "dry run on the CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  flock .build.lock ninja -C "$BUILD" unmask-engine make-model bench_step_batch > "$OUT/build.log" 2>&1 ||
    { log "build failed"; exit 1; }
  # The binaries run on the slim pack's libraries, as there (its ICU data is a stub).
  rm -rf /tmp/unmask-gpudeps-dry && mkdir -p /tmp/unmask-gpudeps-dry &&
    tar xJf .device/gpudeps-slim.tar.xz -C /tmp/unmask-gpudeps-dry || { log "no .device/gpudeps-slim.tar.xz"; exit 1; }
  export LD_LIBRARY_PATH=/tmp/unmask-gpudeps-dry/usr/lib/x86_64-linux-gnu
else
  export GPUDEPS=.device/gpudeps-slim.tar.xz  # read by env.sh
  source tools/gpu/env.sh
  DEVICE=cuda PRECISION=bf16 DTYPE=bf16 STANDINS='' PY=python3  # PyTorch 2.11 with CUDA
  MODEL_DIR=${MODEL_DIR:-/tmp/unmask-m8b}
  # LLaDA-8B: d_model 4096, 32 layers, 32 heads, MLP 12288, vocabulary 126464 (8.02 B parameters).
  SHAPE=(--d-model 4096 --n-layers 32 --n-heads 32 --mlp-hidden-size 12288 --vocab-size 126464 --shards 4)
  SHORT=256 LONG=1024 LONG_STEPS=256 BATCH_TOKENS=32
  # The confident model's LM head x14: logits spread 0.02 x 14 x sqrt(4096) = 18, as
  # bench_samplers' confident model (x40 at d_model 512), whose threshold rule fired.
  HEAD_SCALE=14
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader | tee -a "$OUT/log.txt"
  BENCH=ON  # for bench_step_batch; a configure that fails with the benchmarks is retried without
  configure() {
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUNMASK_ENGINE_ONLY=ON -DUNMASK_BUILD_TESTS=OFF \
      -DUNMASK_BUILD_BENCH=$BENCH -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr" \
      -DCMAKE_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu" -DCMAKE_CXX_FLAGS="-isystem $DEPS/usr/include" \
      -DCMAKE_CUDA_ARCHITECTURES=90 ${PKG_CONFIG_EXECUTABLE:+-DPKG_CONFIG_EXECUTABLE=$PKG_CONFIG_EXECUTABLE} "$@"
  }
  if ! configure > "$OUT/build.log" 2>&1; then
    log "configure with the benchmarks failed; without them"
    BENCH=OFF
    configure >> "$OUT/build.log" 2>&1
  fi
  TARGETS=(unmask-engine make-model)
  [ "$BENCH" = ON ] && TARGETS+=(bench_step_batch)
  ninja -C "$BUILD" -k 0 "${TARGETS[@]}" >> "$OUT/build.log" 2>&1
  if [ ! -x "$BUILD/tools/unmask_engine/unmask-engine" ]; then
    log "build with CUDA graphs and kernels failed (tail of build.log below); building without them"
    grep -E "error|FAILED" "$OUT/build.log" | head -20 | tee -a "$OUT/log.txt"
    BENCH=OFF
    configure -DUNMASK_CUDA_GRAPHS=OFF -DUNMASK_CUDA_KERNELS=OFF >> "$OUT/build.log" 2>&1 &&
      ninja -C "$BUILD" unmask-engine make-model >> "$OUT/build.log" 2>&1 ||
      { log "build failed"; tail -30 "$OUT/build.log"; exit 1; }
  fi
  log "built"
fi
ENGINE=$BUILD/tools/unmask_engine/unmask-engine
PROMPT=$(seq -s, 100 131)

t0=$(date +%s)
rm -rf "$MODEL_DIR"
"$BUILD/tools/make_model/make-model" --out "$MODEL_DIR" --fast-init "${SHAPE[@]}" >> "$OUT/log.txt" 2>&1 ||
  { log "make-model failed"; exit 1; }
log "checkpoint written in $(($(date +%s) - t0)) s: $(du -sh "$MODEL_DIR" | cut -f1)"

# nvidia-smi's memory.used (MiB) every 50 ms while a command runs; the peak above the idle
# figure before it is the command's (the CUDA context included).
POLL_PID=
poll_start() {
  [ "$DRY" = 1 ] && return
  BASE_MIB=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
  nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 > "$OUT/poll.txt" 2>/dev/null &
  POLL_PID=$!
}
poll_peak() {  # prints the peak MiB above the idle figure, or null
  [ -n "$POLL_PID" ] || { echo null; return; }
  kill "$POLL_PID" 2>/dev/null; wait "$POLL_PID" 2>/dev/null; POLL_PID=
  sort -n "$OUT/poll.txt" | tail -1 | awk -v b="$BASE_MIB" '{ print ($1 == "" ? "null" : $1 - b) }'
}

wanted() { [ -z "${STAGES:-}" ] || [[ " $STAGES " == *" $1 "* ]]; }

official() {
  wanted official || return
  [ "$(left)" -gt 120 ] || { log "skip official (time)"; return; }
  poll_start
  PYTHONUNBUFFERED=1 "$PY" bench/gpu/official_llada.py $STANDINS --model "$MODEL_DIR" --device "$DEVICE" \
    --dtype "$DTYPE" --prompt-ids "$PROMPT" --runs "$SHORT:$SHORT:32" "$LONG:$LONG_STEPS:32" --repeat 1 \
    --out "$OUT/official.json" >> "$OUT/log.txt" 2>&1 || log "official failed (log.txt)"
  log "official done, peak $(poll_peak) MiB"
}

# run NAME ENGINE-ARGS...: one unmask-engine generate, one line of results.jsonl.
run() {
  local name=$1
  shift
  wanted "$name" || return
  [ "$(left)" -gt 25 ] || { log "skip $name (time)"; return; }
  local t
  t=$(date +%s)
  poll_start
  "$ENGINE" generate --model "$MODEL_DIR" --device "$DEVICE" --precision "$PRECISION" --json "$@" \
    > "$OUT/run.json" 2> "$OUT/run.err"
  local rc=$? peak
  peak=$(poll_peak)
  python3 - "$name" "$rc" "$peak" "$(($(date +%s) - t))" "$*" "$OUT" <<'EOF' | tee -a "$OUT/log.txt"
import json, sys
name, rc, peak, wall, args, out = sys.argv[1:]
rec = {"name": name, "rc": int(rc), "peak_mib": None if peak == "null" else float(peak), "wall_s": int(wall),
       "args": args, "stderr": open(f"{out}/run.err").read()[-1500:]}
try:
    j = json.load(open(f"{out}/run.json"))
    j.pop("unmasked_per_step", None)
    rec["engine"] = j
except Exception as e:
    rec["engine"] = None
    rec["error"] = str(e)
open(f"{out}/results.jsonl", "a").write(json.dumps(rec) + "\n")
e = rec["engine"] or {}
print(f"{name}: rc {rc}, runs {e.get('runs_seconds')}, forward {e.get('forward_seconds')}, "
      f"steps {e.get('steps_run')}, graphs {e.get('cuda_graphs')}, peak {peak} MiB, wall {wall} s")
EOF
}

# Concurrent generations as the executor batches them (sampler::StepTogether: one packed forward a
# step, each job its own sampler work), against the same generations one after another:
# bench_step_batch's table in $OUT/step_batch.md.
step_batch() {
  wanted step_batch || return
  [ "$(left)" -gt 60 ] || { log "skip step_batch (time)"; return; }
  local bin=$BUILD/bench/engine/bench_step_batch
  [ -x "$bin" ] || { log "skip step_batch (not built)"; return; }
  poll_start
  "$bin" --model "$MODEL_DIR" --device "$DEVICE" --precision "$PRECISION" --jobs 8,32 --requests 32 --rounds 1 \
    --max-tokens "$BATCH_TOKENS" --cuda-graphs > "$OUT/step_batch.md" 2> "$OUT/step_batch.err" || log "step_batch failed"
  log "step_batch done, peak $(poll_peak) MiB"
}

# A random model never passes the threshold (256 forwards for 256 tokens in every mode), so the
# threshold rule's speed on the GPU, and its multi-token steps there, need a model that is sure of
# itself: the same draws with the LM head scaled (make-model --head-scale; the argmax unchanged).
# The reference on that model is what its rows are compared with (ids agreement, per-token speed).
confident() {
  wanted confident || return
  [ "$(left)" -gt 90 ] || { log "skip confident (time)"; return; }
  local STAGES=  # run's own names below
  local dir=$MODEL_DIR-confident t0
  t0=$(date +%s)
  rm -rf "$dir"
  "$BUILD/tools/make_model/make-model" --out "$dir" --fast-init "${SHAPE[@]}" --head-scale "$HEAD_SCALE" \
    >> "$OUT/log.txt" 2>&1 || { log "make-model --head-scale failed"; return; }
  log "confident checkpoint (head x$HEAD_SCALE) written in $(($(date +%s) - t0)) s"
  MODEL_DIR=$dir run ref_conf --sampler reference "${G[@]}" --repeat 2 --cuda-graphs
  MODEL_DIR=$dir run dualthr_conf --sampler dual_cache+threshold "${G[@]}" --repeat 2 --cuda-graphs
  MODEL_DIR=$dir run thr_conf --sampler threshold "${G[@]}" --repeat 2 --cuda-graphs
  rm -rf "$dir"
}

G=(--prompt-ids "$PROMPT" --gen-length "$SHORT" --block-length 32 --steps "$SHORT")
official
run ref_eager --sampler reference "${G[@]}" --repeat 2
run ref_graphs --sampler reference "${G[@]}" --repeat 2 --cuda-graphs --no-fused-kernels
# The fused elementwise kernels are the default on cuda since the 2026-11-28 lease; the runs named
# *_fk name them (--fused-kernels), their pairs turn them off (--no-fused-kernels): the ids must
# stay the official's, and the same both ways. Every other run has them.
run ref_graphs_fk --sampler reference "${G[@]}" --repeat 2 --cuda-graphs --fused-kernels
run dual_graphs --sampler dual_cache "${G[@]}" --repeat 2 --cuda-graphs --no-fused-kernels
run dual_graphs_fk --sampler dual_cache "${G[@]}" --repeat 2 --cuda-graphs --fused-kernels
run dualthr_graphs --sampler dual_cache+threshold "${G[@]}" --repeat 2 --cuda-graphs
# Where a step's time goes: the forward (waited for on the device) against the sampler's rest.
run dual_graphs_timed --sampler dual_cache "${G[@]}" --repeat 2 --cuda-graphs --time-forwards
run ref_graphs_timed --sampler reference "${G[@]}" --repeat 2 --cuda-graphs --time-forwards
L=(--prompt-ids "$PROMPT" --gen-length "$LONG" --block-length 32 --steps "$LONG_STEPS")
run ref_long_graphs --sampler reference "${L[@]}" --repeat 2 --cuda-graphs --no-fused-kernels
run ref_long_graphs_fk --sampler reference "${L[@]}" --repeat 2 --cuda-graphs --fused-kernels
confident
step_batch
BATCH8=() BATCH32=()
for i in $(seq 8); do BATCH8+=(--prompt-ids "$(seq -s, $((100 + i)) $((131 + i)))"); done
for i in $(seq 32); do BATCH32+=(--prompt-ids "$(seq -s, $((100 + i)) $((131 + i)))"); done
B=(--gen-length "$SHORT" --block-length 32 --steps "$SHORT" --cuda-graphs)
run dualthr_batch8 --sampler dual_cache+threshold "${BATCH8[@]}" "${B[@]}" --repeat 2
run dualthr_batch32 --sampler dual_cache+threshold "${BATCH32[@]}" "${B[@]}" --repeat 1
run int4_dualthr --weights int4:g64 --sampler dual_cache+threshold "${G[@]}" --repeat 1 --cuda-graphs --no-fused-kernels
# The same with each layer dequantized by one fused kernel (--fused-kernels): the speed, the peak
# memory without ATen's temporaries (the 8 GiB goal), and ids equal to the line above.
run int4_dualthr_fk --weights int4:g64 --sampler dual_cache+threshold "${G[@]}" --repeat 1 --cuda-graphs \
  --fused-kernels
# The embedding table and the LM head quantized too (2 GiB of bf16 tables become 0.6 GiB).
run int4eh_dualthr_fk --weights int4:g64:emb:head --sampler dual_cache+threshold "${G[@]}" --repeat 1 --cuda-graphs \
  --fused-kernels
# The official Monte Carlo likelihood (get_log_likelihood: 128 samples of a 32-token answer after
# a 32-token prompt), never run on a GPU before: that it runs, its time and its memory.
run likelihood_mc128 --prompt-ids "$(seq -s, 100 163)" --continuation-tokens 32 --mc-num 128 --mc-batch-size 32
# Measured in earlier leases; last, so that a short lease skips them first.
run dual_eager --sampler dual_cache "${G[@]}" --repeat 2
run dualthr_eager --sampler dual_cache+threshold "${G[@]}" --repeat 2
run ref_long_eager --sampler reference "${L[@]}" --repeat 2
run dual_long_graphs --sampler dual_cache "${L[@]}" --repeat 2 --cuda-graphs
run int8_dualthr --weights int8 --sampler dual_cache+threshold "${G[@]}" --repeat 1 --cuda-graphs --no-fused-kernels
run int8_dualthr_fk --weights int8 --sampler dual_cache+threshold "${G[@]}" --repeat 1 --cuda-graphs --fused-kernels
# Memory at the long length: one step per block is enough to reach the peak.
run int4_long_mem --weights int4:g64 --sampler reference --prompt-ids "$PROMPT" --gen-length "$LONG" \
  --block-length 32 --steps $((LONG / 32)) --repeat 1
run int8_long_mem --weights int8 --sampler reference --prompt-ids "$PROMPT" --gen-length "$LONG" \
  --block-length 32 --steps $((LONG / 32)) --repeat 1
log "done"
[ "$DRY" = 1 ] && rm -rf "$MODEL_DIR" "$MODEL_DIR-confident"
exit 0
