#!/usr/bin/env bash
# Installs everything unmask needs on a fresh Debian 12 machine (run as root, or with sudo on PATH).
# Safe to run again: apt-get skips what is already installed.
#
#   tools/setup.sh               everything: the build, the tests, fuzzing, benchmarks, the chart renderer
#   tools/setup.sh --build-only  only what a Release build of the binaries with
#                                -DUNMASK_BUILD_TESTS=OFF -DUNMASK_BUILD_BENCH=OFF needs (the images'
#                                build stage: deploy/Dockerfile.cpu)
set -euo pipefail

BUILD_ONLY=0
case "${1:-}" in
  "") ;;
  --build-only) BUILD_ONLY=1 ;;
  *) echo "setup: unknown argument '$1' (--build-only or nothing)" >&2; exit 2 ;;
esac

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

BUILD_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config git
  # engine. OpenBLAS built with OpenMP: it runs on LibTorch's OpenMP pool instead of beside it
  # (common/model/threading.h); its pthreads build is supported too, held to one thread.
  libtorch-dev libopenblas0-openmp
  # libsleef.so to link against (LibTorch's own libsleef3 has no link name): the CPU SwiGLU loops
  # call the expf that ATen's CPU vectors call
  libsleef-dev
  # services
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libhiredis-dev prometheus-cpp-dev libabsl-dev
  # API keys: SHA-256 and random bytes from libcrypto
  libssl-dev
  # the scheduler's OpenAI-compatible HTTP API
  libcpp-httplib-dev
  # libraries used by common/
  nlohmann-json3-dev libpcre2-dev libicu-dev libcli11-dev
)
TEST_PACKAGES=(
  # libopenblas0-pthread: only for the tests of the pthreads path (model_tests_pthreads_openblas, sampler_tests_pthreads_openblas)
  libopenblas0-pthread
  # the job store's tests run a real redis-server; curl runs the README's examples (a test)
  redis-server curl
  # tests and benchmarks (the TLS tests make their CA and certificates with the openssl command;
  # qemu-user runs the engine's kernel tests on emulated CPUs this machine is not)
  libgtest-dev libgmock-dev libbenchmark-dev python3 openssl qemu-user
  # fuzzing (tools/fuzz.sh): clang; its libFuzzer package is added below, matching its version
  clang
  # the Python client (clients/python): its runtime; its stubs come from protoc and
  # grpc_python_plugin (protobuf-compiler, protobuf-compiler-grpc above)
  python3-grpcio python3-protobuf
  # the official generate() loop in eager PyTorch that bench/engine/bench_official.py times
  python3-torch
  # the corpus unmask trains its own model on (tools/make_corpus.sh)
  bible-kjv bible-kjv-text
  # helm chart renderer (tools/helmrender): Helm's template engine from Debian's Go packages
  # (sprig v3 templates, draft-07 JSON Schema, sigs.k8s.io/yaml), built offline in GOPATH mode
  golang-go golang-github-masterminds-sprig-dev golang-github-xeipuuv-gojsonschema-dev
  golang-k8s-sigs-yaml-dev
)

# Node.js runs Hugging Face's tokenizers.js (from npm), which checks the tokenizer.json files
# unmask writes. A machine may already have a Node.js of its own (NodeSource's bundles npm and
# conflicts with Debian's npm package): Debian's packages are installed only where node or npm
# is missing.
command -v node >/dev/null || TEST_PACKAGES+=(nodejs)
command -v npm >/dev/null || TEST_PACKAGES+=(npm)
PACKAGES=("${BUILD_PACKAGES[@]}")
if [ "$BUILD_ONLY" = 0 ]; then PACKAGES+=("${TEST_PACKAGES[@]}"); fi

export DEBIAN_FRONTEND=noninteractive
# On a fresh machine something else (unattended-upgrades, cloud-init) may hold the package
# manager's lock for minutes: wait for it instead of failing with "Could not get lock". apt
# waits for dpkg's lock by itself (DPkg::Lock::Timeout); the package lists' lock, which
# `apt-get update` takes, is retried here. UNMASK_APT_LOCK_WAIT: seconds in all (default 1200).
apt_get() {
  local waited=0 limit=${UNMASK_APT_LOCK_WAIT:-1200} log
  log=$(mktemp)
  while true; do
    # pipefail (set above): the pipeline fails when apt-get does.
    if $SUDO apt-get -o DPkg::Lock::Timeout="$limit" "$@" 2>&1 | tee "$log"; then
      rm -f "$log"
      return 0
    fi
    if ! grep -qE "Could not get lock|Unable to lock|is another process using it" "$log" || [ "$waited" -ge "$limit" ]; then
      rm -f "$log"
      return 1
    fi
    echo "setup: the package manager is busy (another apt or dpkg holds its lock); waiting (${waited}s of ${limit}s)" >&2
    sleep 10
    waited=$((waited + 10))
  done
}
apt_get update -q
apt_get install -y -q --no-install-recommends "${PACKAGES[@]}"
if [ "$BUILD_ONLY" = 0 ]; then
  # libFuzzer of the installed clang's major version (libfuzzer-14-dev with Debian 12's clang 14).
  clang_major=$(clang --version | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1)
  apt_get install -y -q --no-install-recommends "libfuzzer-${clang_major}-dev"
fi
# With the reference BLAS float32 matmul is ~30x slower, and OpenBLAS's pthreads build spins
# beside LibTorch's OpenMP pool: make sure the OpenMP OpenBLAS is the one in use, under all three
# names (LibTorch links libblas.so.3, liblapack.so.3 and libopenblas.so.0 itself: one left on the
# pthreads build would load both builds into every process).
if command -v update-alternatives >/dev/null; then
  for alt in libblas.so.3-x86_64-linux-gnu liblapack.so.3-x86_64-linux-gnu libopenblas.so.0-x86_64-linux-gnu; do
    cand=$(update-alternatives --list "$alt" 2>/dev/null | grep openblas-openmp | head -n1 || true)
    if [ -n "$cand" ]; then $SUDO update-alternatives --set "$alt" "$cand" >/dev/null; fi
  done
fi
if [ "$BUILD_ONLY" = 1 ]; then echo "setup: done (build only)"; exit 0; fi
# npm packages the tests use, pinned by their package-lock.json (the npm registry is reachable):
# Hugging Face's tokenizers.js and the official openai SDK.
for dir in tests/tokenizer/tokenizers_js tests/http/openai_sdk; do
  (cd "$(dirname "$0")/../$dir" && npm ci --no-audit --no-fund --loglevel=error)
done
echo "setup: done"
