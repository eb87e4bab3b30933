#!/usr/bin/env bash
# Configures and builds canopy on a GPU machine that has the CUDA toolkit, CMake and ninja but no
# Debian packages. TBB and GoogleTest are then taken from .deps/root, a folder made on a Debian
# machine with: mkdir -p .deps/debs && cd .deps/debs &&
#   apt-get download libtbb-dev libtbb12 libtbbmalloc2 libtbbbind-2-5 libhwloc15 libgtest-dev &&
#   cd .. && for f in debs/*.deb; do dpkg -x $f root; done
# Source this file (". scripts/device-build.sh [targets...]") so that LD_LIBRARY_PATH stays set.
# BUILD_DIR defaults to build-gpu; CMAKE_ARGS adds configure options.
root=$(pwd)
if [ -d "$root/.deps/root/usr" ]; then
  export CMAKE_PREFIX_PATH="$root/.deps/root/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  export LD_LIBRARY_PATH="$root/.deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
export PATH="/usr/local/cuda/bin:$PATH"
BUILD_DIR=${BUILD_DIR:-build-gpu}
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_CUDA_ARCHITECTURES=90 ${CMAKE_ARGS:-} >"$BUILD_DIR.configure.log" 2>&1 \
  || { cat "$BUILD_DIR.configure.log"; return 1 2>/dev/null || exit 1; }
if [ $# -gt 0 ]; then
  for t in "$@"; do cmake --build "$BUILD_DIR" -j "$(nproc)" --target "$t" || { return 1 2>/dev/null || exit 1; }; done
else
  cmake --build "$BUILD_DIR" -j "$(nproc)" || { return 1 2>/dev/null || exit 1; }
fi
