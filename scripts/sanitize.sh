#!/usr/bin/env bash
# Builds Aspen (the libraries, codelets and tests) with sanitizers, using Debian's clang, and runs
# the tests under them. A sanitizer's first report fails the test it happens in.
#
# Usage: scripts/sanitize.sh [MODE] [ctest arguments...]
#   address  (default) AddressSanitizer + UndefinedBehaviorSanitizer, the whole suite
#            (build directory build-asan)
#   thread   ThreadSanitizer, the tests of the thread pool, streams, engines in parallel and the
#            planning cache (build-tsan)
#   ci       what CI runs: ASan + UBSan on the unit and error tests, then a short run of every
#            libFuzzer harness on its seed corpus (build-asan-ci, at -O0)
# Extra arguments go to ctest, e.g. scripts/sanitize.sh address -L correctness -R LSTM
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-address}
[ $# -gt 0 ] && shift

scripts/install-packages.sh clang libclang-rt-14-dev

# -O1 keeps the instrumented suite fast; CI's own tree is built at -O0, which halves the
# compile time its 30 minutes need, and its unit and error tests run in under a minute anyway.
optimise=-O1
case "$mode" in
  address) sanitizers=address,undefined build_dir=build-asan ;;
  ci) sanitizers=address,undefined build_dir=build-asan-ci optimise=-O0 ;;
  thread) sanitizers=thread build_dir=build-tsan ;;
  *) echo "sanitize.sh: unknown mode '$mode' (address, thread or ci)" >&2; exit 2 ;;
esac

# The usual set-up (Debian packages), without building the default tree.
ASPEN_SETUP_ONLY=1 scripts/setup.sh

fuzzers=OFF
[ "$mode" != thread ] && fuzzers=ON
# Assertions stay on (no NDEBUG). CUDA is left out: the sanitizers run on the CPU executor.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimise -gline-tables-only" \
  -DASPEN_SANITIZE="$sanitizers" -DASPEN_CUDA=OFF -DASPEN_BUILD_EXAMPLES=OFF \
  -DASPEN_BUILD_BENCHMARKS=OFF -DASPEN_BUILD_PYTHON=OFF -DASPEN_BUILD_FUZZERS="$fuzzers" >/dev/null

jobs=${ASPEN_BUILD_JOBS:-$(nproc)}
# Not run under sanitizers: the exported-symbol check (instrumented libraries export the
# sanitizers' hooks) and the installed-package consumer (a plain compiler cannot link them).
not_sanitized='^(library_exports|install_consumer)$'
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan.supp}
export LSAN_OPTIONS=${LSAN_OPTIONS:-use_tls=0:suppressions=$PWD/scripts/lsan.supp:print_suppressions=0}

case "$mode" in
  address)
    cmake --build "$build_dir" -j "$jobs"
    ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -E "$not_sanitized" "$@"
    ;;
  thread)
    # OpenBLAS's own threads synchronise in ways TSan cannot see: one thread (the executor's
    # threads still split the work).
    export OPENBLAS_NUM_THREADS=1
    cmake --build "$build_dir" -j "$jobs" --target aspen_correctness_tests \
      aspen_correctness_internal_tests aspen_unit_tests aspen_unit_internal_tests ported_streams
    # The tests where threads meet: engines and graphs in parallel threads, one engine from two
    # threads, replicas meeting at collectives (working on each other's memory between
    # barriers), the thread pool itself, thread counts and worker orders, block codelets' fibers,
    # streams and their callbacks, the disk cache and the planning cache, and the time limit's
    # watchdog.
    # Not the time limit's stops of spinning codelets: TSan holds a signal back until the thread
    # calls into its runtime, which code it did not instrument (codelets) never does.
    ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -L 'unit|correctness' \
      -R 'ThreadPool|thread|parallel|stream|cache|time limit|loops for ever|timeLimit|bit-identical|block|launch|replica|collective|allReduce' \
      -E 'never returns|spinning' "$@"
    ;;
  ci)
    cmake --build "$build_dir" -j "$jobs" --target aspen_unit_tests aspen_unit_internal_tests \
      aspen_error_tests aspen_error_internal_tests aspen_fuzzers
    ctest --test-dir "$build_dir" --output-on-failure -j "$(nproc)" -L 'unit|error' \
      -E "$not_sanitized" "$@"
    fuzz/run.sh "$build_dir" smoke
    ;;
esac
