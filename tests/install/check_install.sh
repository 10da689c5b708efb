#!/usr/bin/env bash
# Installs the build tree into a fresh prefix, then configures, builds and runs an unrelated
# project that uses find_package(Aspen), and runs the installed layer drivers with an
# environment that knows nothing of the build tree (their libraries found through RUNPATH).
set -euo pipefail
build_dir=$1
source_dir=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null
cmake -S "$source_dir" -B "$work/build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
for driver in lstm_layer gru_layer rnn_layer; do
  (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" ASPEN_CACHE_DIR="$work/cache" \
     "$work/prefix/bin/$driver" --input-size 3 --output-size 4 --batch-size 2 --phase all \
     | grep -q "$driver: PASS") || { echo "installed $driver failed"; exit 1; }
done
echo "installed drivers ok"
