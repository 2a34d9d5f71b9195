#!/usr/bin/env bash
# Writes the training corpus of unmask's own model: the King James Version as Debian's
# bible-kjv package prints it, one verse per line ("Ge1:1 In the beginning ..."), 31102 verses.
# Usage: tools/make_corpus.sh OUT_FILE   (tools/setup.sh installs bible-kjv)
set -euo pipefail
out=${1:?usage: tools/make_corpus.sh OUT_FILE}
if ! command -v bible >/dev/null; then
  echo "make_corpus: the 'bible' program is missing; run tools/setup.sh (package bible-kjv)" >&2
  exit 1
fi
mkdir -p "$(dirname "$out")"
bible -f 'Gen1:1-Rev22:21' > "$out.tmp"
lines=$(wc -l < "$out.tmp")
if [ "$lines" -ne 31102 ]; then
  echo "make_corpus: expected 31102 verses, got $lines" >&2
  exit 1
fi
mv "$out.tmp" "$out"
echo "make_corpus: $out ($lines verses)"
