#!/usr/bin/env bash
# Installs the dependencies, builds canopy and runs its main program.
# Usage: scripts/run.sh [program arguments...]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
build=${BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja ${CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j "$(nproc)" --target canopy-info
exec "$build/apps/canopy-info" "$@"
