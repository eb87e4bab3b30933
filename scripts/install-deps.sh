#!/usr/bin/env bash
# Installs canopy's build and test dependencies from Debian's packages.
# The CUDA toolkit is not a Debian package here: it is expected at /usr/local/cuda
# (or anywhere nvcc is on PATH). Without it canopy builds the host backend alone.
set -euo pipefail

packages=(
  cmake ninja-build g++ pkg-config python3
  libtbb-dev libgtest-dev
  libglfw3-dev python3-glad libglm-dev libimgui-dev
  libegl-dev libgl-dev libegl-mesa0 libgl1-mesa-dri
  libtinyobjloader-dev libstb-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
