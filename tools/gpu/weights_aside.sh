#!/usr/bin/env bash
# The device tool carries the working tree (tracked files included) plus the carried paths, 64 MiB
# in all, and the tracked tree alone is about 62 MiB, most of it test and model weights that the
# GPU scripts (measure.sh, profile_kernels.sh) never read: they build the engine without tests and
# write their own checkpoint. Before a lease's `run`, move those weights into .device/aside/
# (ignored and not carried); after it, put them back:
#   tools/gpu/weights_aside.sh out     # here, before the run
#   tools/gpu/weights_aside.sh back    # here, after it (also what `status` asks for)
#   tools/gpu/weights_aside.sh status  # which are aside
# build_and_test.sh runs the tests and needs them: it cannot travel this way.
set -euo pipefail
cd "$(dirname "$0")/../.."
aside=.device/aside
case "${1:-}" in
  out)
    mapfile -t files < <(git ls-files 'tests/data/*.safetensors' 'models/*.safetensors')
    for f in "${files[@]}"; do
      [ -f "$f" ] || continue
      mkdir -p "$aside/$(dirname "$f")"
      mv "$f" "$aside/$f"
    done
    echo "moved ${#files[@]} weight files to $aside; tools/gpu/weights_aside.sh back puts them back"
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
