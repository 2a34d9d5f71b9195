#!/usr/bin/env bash
# Builds and runs the libFuzzer targets of fuzz/ (Debian's clang and libFuzzer; tools/setup.sh
# installs them) in their own build tree, build-fuzz/ (FUZZ_BUILD_DIR).
#
#   tools/fuzz.sh build                 configure and build the targets
#   tools/fuzz.sh --brief [SECONDS]     build, then run every target over its seed corpus and its
#                                       regression inputs, SECONDS in all (default 60); the seeds
#                                       are read only, new inputs go to a scratch directory
#   tools/fuzz.sh --long TARGET [RUNS [SECONDS]]
#                                       one long run: stops after RUNS executions (default 10
#                                       million) or SECONDS (default 1800), whichever comes first;
#                                       resumable (the work corpus build-fuzz/work/TARGET is kept
#                                       and reloaded); log build-fuzz/logs/TARGET.log; one result
#                                       line appended to build-fuzz/logs/results.tsv
#   tools/fuzz.sh --long-all [RUNS [SECONDS]]   --long for every target, one after the other
#   tools/fuzz.sh --list                the targets
#
# Long runs on a shared machine: setsid nice -n 19 tools/fuzz.sh --long-all > fuzz.out 2>&1 &
# A crash, leak or sanitizer report stops a run and leaves the input in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
JOBS=${JOBS:-$(nproc)}
TARGETS=(safetensors sharded_index config_json tokenizer_json slow_tokenizer chat_template jinja_template manifest segment request_validation tool_calls http_request hole_template)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=1}
# The file-reading targets write each input to a scratch file: memory-backed where there is one.
default_tmp=${TMPDIR:-/tmp}
[ -d /dev/shm ] && [ -w /dev/shm ] && default_tmp=/dev/shm
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

clang_major() { clang++ --version | sed -n 's/.*clang version \([0-9][0-9]*\).*/\1/p' | head -n1; }

build() {
  command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (tools/setup.sh installs it)" >&2; exit 1; }
  if [ ! -f "$BUILD_DIR/build.ninja" ]; then
    cmake -S . -B "$BUILD_DIR" -G Ninja -DUNMASK_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=None >/dev/null
  fi
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

# The dictionary of a target: JSON syntax plus its own field names.
dict_of() {
  local t=$1 out="$BUILD_DIR/dicts/$1.dict"
  mkdir -p "$BUILD_DIR/dicts"
  : > "$out"
  case $t in request_validation|chat_template|hole_template) ;; *) cat fuzz/dicts/json.dict >> "$out" ;; esac
  [ -f "fuzz/dicts/$t.dict" ] && cat "fuzz/dicts/$t.dict" >> "$out"
  echo "$out"
}

# Runs target $1 for at most $2 executions and $3 seconds with work corpus $4; prints libFuzzer's
# output to stdout. Extra corpus directories (read only) follow.
run_target() {
  local t=$1 runs=$2 secs=$3 work=$4
  shift 4
  local extra=() dict
  for d in "$@"; do [ -d "$d" ] && extra+=("$d"); done
  dict=$(dict_of "$t")
  [ -s "$dict" ] && extra=(-dict="$dict" "${extra[@]}")
  mkdir -p "$work" "$BUILD_DIR/artifacts/$t"
  TMPDIR=${FUZZ_TMPDIR:-$default_tmp} "${FUZZ_BINARY:-$BUILD_DIR/fuzz/fuzz_$t}" -runs="$runs" -max_total_time="$secs" -timeout=30 -rss_limit_mb=2048 \
    -artifact_prefix="$BUILD_DIR/artifacts/$t/" -print_final_stats=1 \
    "$work" "${extra[@]}"
}

brief() {
  local total=${1:-60}
  local per=$(( total / ${#TARGETS[@]} ))
  [ "$per" -ge 1 ] || per=1
  build
  local failed=()
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  for t in "${TARGETS[@]}"; do
    if run_target "$t" 100000000 "$per" "$scratch/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" > "$scratch/$t.log" 2>&1; then
      echo "fuzz $t: ok ($(grep -o 'stat::number_of_executed_units: *[0-9]*' "$scratch/$t.log" | awk '{print $2}') runs in ${per}s, $(grep -E '^#[0-9]+' "$scratch/$t.log" | tail -n1 | grep -o 'cov: [0-9]* ft: [0-9]*'))"
    else
      echo "fuzz $t: FAILED"; tail -n 40 "$scratch/$t.log"; failed+=("$t")
    fi
  done
  if [ ${#failed[@]} -ne 0 ]; then echo "fuzz --brief: ${#failed[@]} failed: ${failed[*]}"; exit 1; fi
  echo "fuzz --brief: ${#TARGETS[@]} targets, no finding"
}

# Under setsid the kernel's autogroup gives the new session a full CPU share whatever the
# processes' nice value: give the group the nice value of this process (nice -n 19 then means it).
lower_autogroup() {
  [ -w /proc/self/autogroup ] && echo "$(nice)" > /proc/self/autogroup 2>/dev/null || true
}

long() {
  local t=$1 runs=${2:-10000000} secs=${3:-1800}
  local log="$BUILD_DIR/logs/$t.log" start end rc=0
  mkdir -p "$BUILD_DIR/logs"
  # A copy of the binary runs, so that rebuilding build-fuzz meanwhile does not disturb it.
  mkdir -p "$BUILD_DIR/long-bin"
  cp "$BUILD_DIR/fuzz/fuzz_$t" "$BUILD_DIR/long-bin/fuzz_$t"
  start=$(date +%s)
  FUZZ_BINARY="$BUILD_DIR/long-bin/fuzz_$t" run_target "$t" "$runs" "$secs" "$BUILD_DIR/work/$t" "fuzz/corpus/$t" "fuzz/regressions/$t" > "$log" 2>&1 || rc=$?
  end=$(date +%s)
  local execs rate covft finding
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}' || true)
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | awk '{print $2}' || true)
  covft=$(grep -E '^#[0-9]+' "$log" | tail -n1 | grep -o 'cov: [0-9]* ft: [0-9]*' || true)
  finding=none
  [ "$rc" -eq 0 ] || finding="exit $rc: $(grep -m1 -oE 'ERROR: [A-Za-z]+: [a-z-]+|SUMMARY: .*|fuzz property violated.*|deadly signal|Test unit written to .*' "$log" | head -n1)"
  [ -f "$BUILD_DIR/logs/results.tsv" ] || printf 'date\ttarget\texecutions\texec_per_s\tcov_ft\tseconds\tfinding\tclang\n' > "$BUILD_DIR/logs/results.tsv"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "${execs:-?}" "${rate:-?}" "${covft:-?}" \
    "$((end - start))" "$finding" "$(clang_major)" >> "$BUILD_DIR/logs/results.tsv"
  tail -n1 "$BUILD_DIR/logs/results.tsv"
  return "$rc"
}

case ${1:-} in
  build) build ;;
  --brief) brief "${2:-60}" ;;
  --long) lower_autogroup; [ -n "${2:-}" ] || { echo "usage: $0 --long TARGET [RUNS [SECONDS]]" >&2; exit 2; }; build >/dev/null; long "$2" "${3:-}" "${4:-}" ;;
  --long-all)
    lower_autogroup
    build >/dev/null
    status=0
    for t in "${TARGETS[@]}"; do long "$t" "${2:-}" "${3:-}" || status=1; done
    exit $status ;;
  --list) printf '%s\n' "${TARGETS[@]}" ;;
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
