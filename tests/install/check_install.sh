#!/usr/bin/env bash
# The installed package, used the ways a user uses it, from a prefix that is not /usr:
#  1. an unrelated CMake project (find_package(Aspen), C++17): the native API (consumer), a
#     PopLibs program through Aspen::compat (tests/compat/ported_lstm.cpp), and one program for
#     each PopLibs name or rule a port relies on (tests/install/poplibs_names);
#  2. the same PopLibs program from a plain Makefile (-std=c++17, -lpoplar -lpopops ...);
#  3. the prefix copied elsewhere and the original removed: the installed layer drivers run with
#     an environment that knows nothing of the build tree (libraries found through RUNPATH), and
#     the PopLibs program builds with pkg-config (aspen-compat.pc) and through CMake again.
# Each PopLibs program must print exactly tests/compat/ported_lstm.expected; the pkg-config build
# also proves the installed headers compile without a warning (-Wall -Wextra -Werror).
# Usage: check_install.sh BUILD_DIR CONSUMER_SOURCE_DIR
set -euo pipefail
build_dir=$1
source_dir=$2
tests_dir=$(cd "$source_dir/../.." && pwd)
program=$tests_dir/compat/ported_lstm.cpp
expected=$tests_dir/compat/ported_lstm.expected
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
  echo "check_install: $*"
  exit 1
}
# Runs a program with nothing of the build tree in its environment; its output must be
# ported_lstm.expected.
run_ported() {
  local what=$1
  shift
  (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" ASPEN_CACHE_DIR="$work/cache" "$@") \
    >"$work/out.txt" 2>"$work/err.txt" || { cat "$work/err.txt"; fail "$what failed"; }
  diff -u "$expected" "$work/out.txt" || fail "$what does not print ported_lstm.expected"
  echo "  $what: prints ported_lstm.expected"
}
run_drivers() {
  local prefix=$1
  for driver in lstm_layer gru_layer rnn_layer; do
    (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" ASPEN_CACHE_DIR="$work/cache" \
       "$prefix/bin/$driver" --input-size 3 --output-size 4 --batch-size 2 --phase all \
       | grep -q "$driver: PASS") || fail "installed $driver ($prefix) failed"
  done
  echo "  lstm_layer, gru_layer, rnn_layer from $prefix: PASS"
  # The planner CLI runs a small LSTM from the prefix and writes its JSON report.
  (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" ASPEN_CACHE_DIR="$work/cache" \
     "$prefix/bin/aspen-plan" lstm --input-size 3 --output-size 4 --batch-size 2 --phase all \
     --target ipu2 --tiles 4 --run --runs 1 --json "$work/plan.json" >"$work/plan.txt" \
     && grep -q '"schema": *"aspen.profile/1"' "$work/plan.json" \
     && grep -q "^Memory" "$work/plan.txt") || { cat "$work/plan.txt"; fail "installed aspen-plan ($prefix) failed"; }
  echo "  aspen-plan from $prefix: plans and runs an LSTM"
  # The MPI transport, when built, is a plugin beside libaspen that finds it from there.
  local plugin
  plugin=$(find "$prefix" -path '*/aspen/libaspen_mpi.so' -print -quit)
  if [ -n "$plugin" ]; then
    ! ldd "$plugin" | grep -q 'not found' || { ldd "$plugin"; fail "installed $plugin: a library not found"; }
    ldd "$plugin" | grep -q "libaspen.so.* => $prefix" || fail "installed $plugin does not find $prefix's libaspen"
    echo "  MPI plugin in $prefix: finds its libaspen"
  fi
}
cmake_consumer() {
  local prefix=$1 build=$2
  cmake -S "$source_dir" -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$prefix" \
    -DASPEN_PORTED_PROGRAM="$program" -DASPEN_POPLIBS_NAMES_DIR="$tests_dir/install/poplibs_names" \
    >"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "configuring the consumer against $prefix failed"; }
  cmake --build "$build" >"$work/build.log" 2>&1 || { cat "$work/build.log"; fail "building the consumer against $prefix failed"; }
}

cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null

echo "== 1. CMake, find_package(Aspen), prefix $work/prefix"
cmake_consumer "$work/prefix" "$work/build"
(cd "$work" && "$work/build/consumer") || fail "the native consumer failed"
run_ported "Aspen::compat program" "$work/build/ported_lstm"
# The PopLibs names and behaviours of tests/install/poplibs_names, each built as C++17.
for source in "$tests_dir"/install/poplibs_names/*.cpp; do
  name=$(basename "$source" .cpp)
  (cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" ASPEN_CACHE_DIR="$work/cache" \
     "$work/build/names_$name") | grep -qx "$name ok" || fail "poplibs_names/$name failed"
done
echo "  $(ls "$tests_dir"/install/poplibs_names/*.cpp | wc -l) PopLibs-name programs (C++17): ok"

echo "== 2. a plain Makefile, -std=c++17 -lpoplar -lpopops -lpoplin -lpopnn -lpoputil"
make -s -C "$tests_dir/install/makefile" PREFIX="$work/prefix" SRC="$program" \
  OUT="$work/make_ported_lstm" >"$work/make.log" 2>&1 || { cat "$work/make.log"; fail "make failed"; }
run_ported "Makefile program" "$work/make_ported_lstm"

echo "== 3. the prefix copied to $work/moved, the original removed"
cp -a "$work/prefix" "$work/moved"
rm -rf "$work/prefix" "$work/build" "$work/make_ported_lstm"
run_drivers "$work/moved"
pc_dir=$(dirname "$(find "$work/moved" -name aspen-compat.pc -print -quit)")
[ -d "$pc_dir" ] || fail "no aspen-compat.pc in the install"
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs aspen-compat)
case "$flags" in *"$work/moved"*) ;; *) fail "pkg-config does not follow the moved prefix: $flags" ;; esac
# shellcheck disable=SC2086 # the flags are words
g++ -Wall -Wextra -Werror "$program" -o "$work/pc_ported_lstm" $flags || fail "building with pkg-config failed"
run_ported "pkg-config program (moved prefix)" "$work/pc_ported_lstm"
# A C99 program on the backend's C ABI, built with the C compiler and pkg-config.
flags=$(PKG_CONFIG_PATH="$pc_dir" pkg-config --cflags --libs aspen)
# shellcheck disable=SC2086 # the flags are words
cc -std=c99 -Wall -Wextra -Werror "$tests_dir/install/backend_consumer.c" -o "$work/backend_c" \
  $flags -lm || fail "building the C backend consumer failed"
(cd "$work" && env -i PATH=/usr/bin:/bin HOME="$work" ASPEN_CACHE_DIR="$work/cache" \
   "$work/backend_c") | grep -q "backend C consumer ok" || fail "the C backend consumer failed"
echo "  C99 program on aspen/backend.h (pkg-config, moved prefix): ok"
cmake_consumer "$work/moved" "$work/build-moved"
run_ported "Aspen::compat program (moved prefix)" "$work/build-moved/ported_lstm"
echo "installed drivers ok"
