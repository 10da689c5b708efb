#!/usr/bin/env bash
# Installs what Aspen needs from Debian's packages (when missing), then configures and builds.
# Usage: scripts/setup.sh [build-dir]   (default: build). Extra CMake flags via ASPEN_CMAKE_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

packages=(build-essential cmake ninja-build pkgconf libfmt-dev libspdlog-dev catch2 libopenblas-dev patchelf libblas3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
fi

jobs=${ASPEN_BUILD_JOBS:-$(nproc)}
echo "== configuring ${build_dir}"
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo ${ASPEN_CMAKE_FLAGS:-}
echo "== building with ${jobs} jobs"
cmake --build "$build_dir" -j "$jobs"
