#!/usr/bin/env bash
# Installs what Aspen needs from Debian's packages (when missing), then configures and builds.
# Usage: scripts/setup.sh [build-dir]   (default: build). Extra CMake flags via ASPEN_CMAKE_FLAGS.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:-build}

# chromium and python3-jsonschema: the tests of aspen-plan's HTML and JSON reports; pybind11-dev
# and python3-torch: the aspen_torch package and its tests against torch.nn; libdnnl-dev: the
# header of oneDNN, which the CPU executor's convolution calls open at run time; libopenmpi-dev
# and openmpi-bin: the MPI transport of the collectives and mpiexec for its tests.
packages=(build-essential cmake ninja-build pkgconf libfmt-dev libspdlog-dev catch2 libopenblas-dev
  patchelf libblas3 chromium python3-jsonschema pybind11-dev python3-torch libdnnl-dev
  libopenmpi-dev openmpi-bin)
scripts/install-packages.sh "${packages[@]}"

# ASPEN_SETUP_ONLY=1: the packages only (scripts/sanitize.sh configures its own trees).
[ -n "${ASPEN_SETUP_ONLY:-}" ] && exit 0

jobs=${ASPEN_BUILD_JOBS:-$(nproc)}
echo "== configuring ${build_dir}"
# Release (-O3, no debug information): the demo, the tests and the benchmarks run optimised code,
# and the build takes about a fifth less time than with -g. ASPEN_BUILD_TYPE chooses another.
# shellcheck disable=SC2086
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${ASPEN_BUILD_TYPE:-Release}" \
  ${ASPEN_CMAKE_FLAGS:-}
echo "== building with ${jobs} jobs"
cmake --build "$build_dir" -j "$jobs"
