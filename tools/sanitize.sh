#!/usr/bin/env bash
# Builds and tests unmask under a sanitizer preset (CMakePresets.json, docs/sanitizers.md):
#   tools/sanitize.sh asan [ctest args...]   AddressSanitizer + UBSan, the whole suite, in build-asan/
#   tools/sanitize.sh tsan [ctest args...]   ThreadSanitizer, the concurrency tests, in build-tsan/
#   tools/sanitize.sh asan-ci | tsan-ci      the subsets CI runs (LibTorch-free tests; same build dirs)
# STEP=build stops after the build; STEP=test only runs the tests. JOBS as in tools/build.sh.
# Sanitizer reports go to <build>/sanitizer-logs/ (log_path), child processes' included: the run
# fails when any report was written, even by a process whose test did not look at its exit code.
set -euo pipefail
cd "$(dirname "$0")/.."
preset=${1:?usage: tools/sanitize.sh asan|tsan|asan-ci|tsan-ci [ctest args...]}
shift
case "$preset" in
  asan | tsan | asan-ci | tsan-ci) ;;
  *) echo "unknown preset '$preset' (asan, tsan, asan-ci or tsan-ci)" >&2; exit 2 ;;
esac
configure=${preset%-ci}  # the -ci presets build and test a subset of the same build tree
JOBS=${JOBS:-$(nproc)}
STEP=${STEP:-all}
logs="build-$configure/sanitizer-logs"

if [[ "$STEP" != test ]]; then
  cmake --preset "$configure"
  cmake --build --preset "$preset" -j "$JOBS"
fi
[[ "$STEP" == build ]] && exit 0

mkdir -p "$logs"
rm -f "$logs"/*
status=0
ctest --preset "$preset" -j "$JOBS" "$@" || status=$?
shopt -s nullglob
reports=("$logs"/*)
if ((${#reports[@]} > 0)); then
  echo "sanitizer reports (${#reports[@]} files in $logs):" >&2
  for f in "${reports[@]}"; do
    echo "==== $f" >&2
    cat "$f" >&2
  done
  status=1
fi
exit "$status"
