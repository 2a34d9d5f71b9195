# Sourced by the tools/gpu scripts on the GPU machine: unpacks the carried build dependencies
# (tools/gpu/fetch_deps.sh) once and points the compiler, linker, pkg-config and loader at them.
BUILD=${BUILD:-build-gpu}
DEPS=${DEPS:-/tmp/unmask-gpudeps}
GPUDEPS=${GPUDEPS:-.device/gpudeps.tar.xz}  # measure.sh: the slim pack
if [ ! -d "$DEPS/usr" ]; then
  [ -f "$GPUDEPS" ] || { echo "no $GPUDEPS: run tools/gpu/fetch_deps.sh here and carry it" >&2; exit 2; }
  mkdir -p "$DEPS" && tar xJf "$GPUDEPS" -C "$DEPS"
fi
export LD_LIBRARY_PATH=$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$DEPS/usr/lib/x86_64-linux-gnu/pkgconfig:$DEPS/usr/share/pkgconfig
export PKG_CONFIG_SYSROOT_DIR=$DEPS PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
command -v pkg-config >/dev/null || PKG_CONFIG_EXECUTABLE=$DEPS/usr/bin/pkgconf
TORCH_PREFIX=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
