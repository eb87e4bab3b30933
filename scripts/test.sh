#!/usr/bin/env bash
# Installs the dependencies, configures, builds and runs canopy's test suite.
# Usage: scripts/test.sh [ctest arguments...]   e.g. scripts/test.sh -L gpu
# BUILD_DIR (default build) and CMAKE_ARGS are taken from the environment.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
jobs=$(nproc)
cmake -S . -B "$build" -G Ninja ${CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"
if [ ! -x "$build/apps/canopy-info" ]; then
  echo "test.sh: canopy-info not built (CANOPY_BUILD_APPS=OFF?): cannot say whether GPU tests will run"
elif ! why=$("$build/apps/canopy-info" --backend cuda --n 1 2>&1 >/dev/null); then
  echo "test.sh: GPU tests will be skipped here: ${why#canopy-info: }"
fi
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@"
