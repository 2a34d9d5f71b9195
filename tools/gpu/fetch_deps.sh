#!/usr/bin/env bash
# Runs HERE, on the Debian 12 development machine (it has apt and network), before a GPU run.
# The GPU machine of the `device` tool has CUDA, nvcc, CMake, Ninja and PyTorch's CUDA LibTorch
# but no apt, no network and none of the engine's other build dependencies. This packs them
# from Debian's own packages into .device/ (ignored by git), which the GPU run carries:
#   .device/gpudeps.tar.xz  GoogleTest, CLI11, nlohmann/json, PCRE2, ICU (headers, .so), pkgconf
#   .device/gpudeps-slim.tar.xz  the same without GoogleTest and ICU's data (tools/gpu/measure.sh)
#   .device/kjv.txt.xz      the training corpus (tools/make_corpus.sh), for training there
# Then, on the GPU machine: tools/gpu/build_and_test.sh (see there).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=.device
mkdir -p "$out/debs"
packages=(libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev libpcre2-dev libpcre2-8-0 libicu-dev libicu72
          pkgconf pkgconf-bin libpkgconf3)
if ! (cd "$out/debs" && apt-get download "${packages[@]}" >/dev/null 2>&1); then
  apt-get update -qq
  (cd "$out/debs" && apt-get download "${packages[@]}")
fi
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
for deb in "$out"/debs/*.deb; do dpkg -x "$deb" "$stage"; done
lib=$stage/usr/lib/x86_64-linux-gnu
# Only what the engine links (icu-uc, pcre2-8) and the tests (gtest, gmock): the rest of ICU and
# PCRE2, the static ICU archives (40 MB) and the documentation stay behind, to fit the 64 MiB
# the device tool carries.
rm -rf "$stage/usr/share/doc" "$stage/usr/share/man" "$lib"/libicu*.a "$lib"/libpcre2-{16,32,posix}* \
  "$lib"/libicu{i18n,io,test,tu}* "$stage/usr/sbin"
find "$stage/usr/bin" -type f -o -type l | grep -v -E '/(pkgconf|pkg-config|x86_64-linux-gnu-pkgconf)$' | xargs rm -f
tar cJf "$out/gpudeps.tar.xz" -C "$stage" usr
# The slim pack for tools/gpu/measure.sh, small enough to travel beside the tracked tree (the device
# tool carries 64 MiB in all): no GoogleTest, and ICU's 31 MB data library replaced by a stub that
# only defines its one symbol. unmask-engine links ICU for the tokenizer; measure.sh gives token
# ids and its checkpoints have no tokenizer.json, so ICU's data is never read there.
rm -rf "$stage/usr/include/gtest" "$stage/usr/include/gmock" "$lib"/libgtest* "$lib"/libgmock* "$lib"/pkgconfig/g{test,mock}*
echo 'const char icudt72_dat[16] = {0};' |
  gcc -shared -fPIC -Wl,-soname,libicudata.so.72 -x c -o "$lib/libicudata.so.72.1" -
tar cJf "$out/gpudeps-slim.tar.xz" -C "$stage" usr
corpus=build/corpus/kjv.txt
[ -f "$corpus" ] || tools/make_corpus.sh "$corpus"
xz -9 -c "$corpus" > "$out/kjv.txt.xz"
ls -l "$out/gpudeps.tar.xz" "$out/gpudeps-slim.tar.xz" "$out/kjv.txt.xz"
