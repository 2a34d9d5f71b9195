#!/usr/bin/env bash
# Runs ON THE GPU MACHINE (the `device` tool), from a clean tree: builds the engine alone
# (-DUNMASK_ENGINE_ONLY=ON: no gRPC, no Redis) and its tests against PyTorch's CUDA LibTorch,
# then runs every test; the GPU tests (CUDA IPC across two processes, the model on cuda against
# the CPU, quantized linears on cuda, training on cuda) run there and skip on CPU machines.
# Needs .device/gpudeps.tar.xz from tools/gpu/fetch_deps.sh (carried with the call).
#   tools/gpu/build_and_test.sh [ctest arguments...]
# Environment: BUILD (default build-gpu), DEPS (where the dependencies unpack, /tmp/unmask-gpudeps),
# BUILD_ONLY=1 (configure and build, no tests), TARGETS (what ninja builds; default all: with
# ctest -R, a few test binaries, say TARGETS="model_tests cli_tests" for a short lease).
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/gpu/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
nvcc --version | tail -2
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DUNMASK_ENGINE_ONLY=ON \
  -DCMAKE_PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr" -DCMAKE_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu" \
  -DCMAKE_CXX_FLAGS="-isystem $DEPS/usr/include" -DCMAKE_CUDA_ARCHITECTURES=90 ${PKG_CONFIG_EXECUTABLE:+-DPKG_CONFIG_EXECUTABLE=$PKG_CONFIG_EXECUTABLE}
# The whole build log under $OUT (the device tool brings it back); on failure its errors here,
# the linker's undefined references included.
LOG=${OUT:-/tmp}/build.log
if ! ninja -C "$BUILD" ${TARGETS:-} > "$LOG" 2>&1; then
  grep -E -B2 -A6 "error|FAILED|undefined reference" "$LOG" | head -80
  exit 1
fi
[ -n "${BUILD_ONLY:-}" ] && exit 0
ctest --test-dir "$BUILD" --output-on-failure -j 8 "$@"
