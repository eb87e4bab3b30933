#!/usr/bin/env bash
# Installs the dependencies, builds canopy and opens canopy-viewer on the default scene: a wave
# sphere (1M triangles on CUDA, 64K on the host backend) whose BVH is rebuilt every frame.
# With no display ($DISPLAY and $WAYLAND_DISPLAY unset) the viewer runs headless through EGL and
# this script prints where the screenshot and the per-frame timings went.
# Usage: scripts/run.sh [canopy-viewer arguments...]   (e.g. --backend host, --scene bunnies)
# Output folder of a headless run: $CANOPY_OUT, default <build>/viewer-out.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" --target canopy-viewer
viewer="$build/apps/canopy-viewer"
if [ -n "${DISPLAY:-}" ] || [ -n "${WAYLAND_DISPLAY:-}" ]; then
  exec "$viewer" "$@"
fi
out=${CANOPY_OUT:-$build/viewer-out}
mkdir -p "$out"
echo "run.sh: no display (DISPLAY and WAYLAND_DISPLAY unset): running canopy-viewer headless through EGL"
"$viewer" --headless --frames 30 --screenshot "$out/viewer.png" --timings "$out/viewer-timings.json" "$@"
echo "run.sh: screenshot: $out/viewer.png"
echo "run.sh: timings (per frame, per stage, ms): $out/viewer-timings.json"
