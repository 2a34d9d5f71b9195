#!/usr/bin/env bash
# Configures and builds unmask into build/ (Ninja, ccache). Extra arguments go to CMake's
# configure step, e.g. tools/build.sh -DUNMASK_ENGINE_ONLY=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@"
cmake --build "$BUILD_DIR" -j "$JOBS"
