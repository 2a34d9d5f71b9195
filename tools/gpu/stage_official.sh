#!/usr/bin/env bash
# Runs HERE, before a GPU run of bench/gpu/official_llada.py. Stages the OFFICIAL LLaDA code,
# read at run time from the local git mirrors (never copied into tracked files), into
# .device/official/ (ignored by git; the device tool carries .device/):
#   .device/official/generate.py                        ML-GSAI/LLaDA      generate.py
#   .device/official/llada_official/__init__.py         (empty: makes the package)
#   .device/official/llada_official/modeling_llada.py   ZHZisZZ/dllm       dllm/pipelines/llada/models/modeling_llada.py
#   .device/official/llada_official/configuration_llada.py  ZHZisZZ/dllm   dllm/pipelines/llada/models/configuration_llada.py
#   .device/official/SOURCES                            repo, commit and path of each file
# The commits are pinned (the mirrors' HEADs when this was written); override with
# LLADA_COMMIT / DLLM_COMMIT (any revision the mirror has, e.g. HEAD), and the mirror folder
# with MIRROR (default /work/.mirror). Idempotent: every run rewrites the whole folder.
#   tools/gpu/stage_official.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
mirror=${MIRROR:-/work/.mirror}
llada_git=$mirror/ML-GSAI+LLaDA/repo
dllm_git=$mirror/ZHZisZZ+dllm/repo
llada_rev=${LLADA_COMMIT:-b7e6c3565f194352da44b38dd12b6970597309f3}
dllm_rev=${DLLM_COMMIT:-ca176752fbceec49c6b4777a2c18ae88e4eb10ed}
out=.device/official

for g in "$llada_git" "$dllm_git"; do
  if ! git --git-dir="$g" rev-parse --git-dir >/dev/null 2>&1; then
    echo "stage_official.sh: no git mirror at $g (set MIRROR)" >&2
    exit 1
  fi
done

resolve() {  # git dir, revision -> full commit hash
  if ! git --git-dir="$1" rev-parse --verify --quiet "$2^{commit}"; then
    echo "stage_official.sh: revision $2 not in $1" >&2
    exit 1
  fi
}
llada_commit=$(resolve "$llada_git" "$llada_rev")
dllm_commit=$(resolve "$dllm_git" "$dllm_rev")

stage=$(mktemp -d "${TMPDIR:-/tmp}/stage_official.XXXXXX")
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/llada_official"
: >"$stage/llada_official/__init__.py"
sources=()

take() {  # git dir, repo name, commit, path in repo, path under .device/official
  if ! git --git-dir="$1" show "$3:$4" >"$stage/$5"; then
    echo "stage_official.sh: $2 has no $4 at $3" >&2
    exit 1
  fi
  sources+=("$(printf '%s\t%s\t%s\t%s' "$5" "$2" "$3" "$4")")
}
take "$llada_git" ML-GSAI/LLaDA "$llada_commit" generate.py generate.py
take "$dllm_git" ZHZisZZ/dllm "$dllm_commit" dllm/pipelines/llada/models/modeling_llada.py \
  llada_official/modeling_llada.py
take "$dllm_git" ZHZisZZ/dllm "$dllm_commit" dllm/pipelines/llada/models/configuration_llada.py \
  llada_official/configuration_llada.py
{
  printf '# staged file\trepository\tcommit\tpath in repository\n'
  printf '%s\n' "${sources[@]}"
} >"$stage/SOURCES"

mkdir -p .device
rm -rf "$out"
mv "$stage" "$out"
chmod -R a+rX "$out"
trap - EXIT
echo "staged into $out:"
cat "$out/SOURCES"
