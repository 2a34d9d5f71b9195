#!/usr/bin/env bash
# The device tool carries the working tree (tracked files included) plus the carried paths, 64 MiB
# in all, and the tracked tree alone is about 62 MiB, most of it test and model weights that the
# GPU scripts (measure.sh, profile_kernels.sh) never read: they build the engine without tests and
# write their own checkpoint. Before a lease's `run`, move those weights into .device/aside/
# (ignored and not carried); after it, put them back:
#   tools/gpu/weights_aside.sh out [KEEP...]  # here, before the run; KEEP: folders whose weights stay
#                                             # (tests/data/tiny-llada for fused_ops_test, say)
#   tools/gpu/weights_aside.sh back    # here, after it (also what `status` asks for)
#   tools/gpu/weights_aside.sh status  # which are aside
# build_and_test.sh runs every test and needs them all: run it with the tests it needs kept and
# only those selected (ctest -R), or not at all.
set -euo pipefail
cd "$(dirname "$0")/../.."
aside=.device/aside
case "${1:-}" in
  out)
    shift
    mapfile -t files < <(git ls-files 'tests/data/*.safetensors' 'models/*.safetensors')
    moved=0
    for f in "${files[@]}"; do
      [ -f "$f" ] || continue
      for keep in "$@"; do [[ "$f" == "${keep%/}/"* ]] && continue 2; done
      moved=$((moved + 1))
      mkdir -p "$aside/$(dirname "$f")"
      mv "$f" "$aside/$f"
    done
    echo "moved $moved weight files to $aside; tools/gpu/weights_aside.sh back puts them back"
    ;;
  back)
    [ -d "$aside" ] || { echo "nothing aside"; exit 0; }
    (cd "$aside" && find . -type f -name '*.safetensors' -print0) | while IFS= read -r -d '' f; do
      mkdir -p "$(dirname "$f")"
      mv "$aside/$f" "$f"
    done
    find "$aside" -depth -type d -empty -delete
    if ! git diff --quiet -- tests/data models; then
      git status --short tests/data models
      exit 1
    fi
    echo "all weights back"
    ;;
  status)
    if [ -d "$aside" ]; then find "$aside" -name '*.safetensors' | sed "s|^$aside/||"; fi
    ;;
  *)
    echo "usage: $0 out|back|status" >&2
    exit 2
    ;;
esac
