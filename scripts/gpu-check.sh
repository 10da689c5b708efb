#!/usr/bin/env bash
# The GPU acceptance run. On a machine with an NVIDIA GPU and the CUDA toolkit: installs missing
# Debian packages and builds Aspen for sm_90 in build-gpu (scripts/setup.sh), records nvidia-smi,
# runs the GPU tests (ctest -L "gpu|gpu_codegen"), the CPU suite (everything else) and the GPU
# benchmarks, and writes OUTDIR/summary.txt (counts, times, benchmark numbers) and OUTDIR/logs/*.
# Exits non-zero on any failure; with a GPU present, a skipped GPU test or benchmark is a failure
# too (it checked nothing). Every step has a time limit and the whole run stays under 8 minutes.
#
# Usage: scripts/gpu-check.sh [--no-gpu-ok] OUTDIR
#   --no-gpu-ok  dry run on a machine without a GPU: builds and runs everything, and then expects
#                the GPU tests and benchmarks to report themselves skipped (never passed).
# Environment: ASPEN_GPU_BUILD_DIR (default build-gpu), ASPEN_BUILD_JOBS (default: all cores),
#              ASPEN_GPU_CHECK_SECONDS (the whole run's limit, default 470), ASPEN_GPU_CHECK_SLOW
#              (multiplies every step's limit, default 1: for dry runs on small machines).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2

no_gpu_ok=0
if [ "${1:-}" = "--no-gpu-ok" ]; then
  no_gpu_ok=1
  shift
fi
if [ $# -ne 1 ]; then
  echo "usage: scripts/gpu-check.sh [--no-gpu-ok] OUTDIR" >&2
  exit 2
fi
out=$(mkdir -p "$1" && cd "$1" && pwd)
logs="$out/logs"
mkdir -p "$logs"
summary="$out/summary.txt"
build_dir=${ASPEN_GPU_BUILD_DIR:-build-gpu}
jobs=${ASPEN_BUILD_JOBS:-$(nproc)}
slow=${ASPEN_GPU_CHECK_SLOW:-1}
deadline=$((SECONDS + ${ASPEN_GPU_CHECK_SECONDS:-470}))
failures=0

note() { echo "$*" | tee -a "$summary"; }
fail() {
  note "FAIL: $*"
  failures=$((failures + 1))
}
# Seconds a step may take: its own limit, or what is left of the whole run if that is less.
limit() {
  local own=$(($1 * slow)) left=$((deadline - SECONDS))
  [ "$left" -lt "$own" ] && echo $((left > 1 ? left : 1)) || echo "$own"
}
finish() {
  note "== result: $([ "$failures" -eq 0 ] && echo PASS || echo "FAIL ($failures failures)")," \
    "$SECONDS s in all; logs in $logs"
  exit $((failures > 0))
}

: >"$summary"
note "# Aspen GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, commit" \
  "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"

# --- The machine: a GPU is what this script is for; without one it stops here unless told. ---
have_gpu=0
if command -v nvidia-smi >/dev/null && nvidia-smi >"$logs/nvidia-smi.txt" 2>&1 &&
  nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  have_gpu=1
  note "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
    --format=csv,noheader 2>/dev/null | head -n 1)"
else
  note "gpu: none (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'finds no GPU' || echo 'is missing'))"
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then
  note "toolkit: $("$nvcc" --version | grep -m1 release)"
else
  fail "no CUDA toolkit (nvcc not on PATH nor in /usr/local/cuda/bin)"
  finish
fi
if [ "$have_gpu" -eq 0 ] && [ "$no_gpu_ok" -eq 0 ]; then
  fail "there is no GPU on this machine: nothing to check (use --no-gpu-ok for a dry run)"
  finish
fi
PATH="$(dirname "$nvcc"):$PATH"
export PATH

# --- Set-up and build: Debian packages when missing, then CMake for sm_90 with all cores. ---
start=$SECONDS
if ASPEN_BUILD_JOBS=$jobs ASPEN_CMAKE_FLAGS="-DASPEN_CUDA=ON -DASPEN_CUDA_ARCHITECTURES=90" \
  timeout "$(limit 300)" scripts/setup.sh "$build_dir" >"$logs/build.log" 2>&1; then
  note "build: ok in $((SECONDS - start)) s ($build_dir, $jobs jobs)"
else
  fail "build (exit $?, $((SECONDS - start)) s; 124 = time limit): see logs/build.log"
  tail -n 20 "$logs/build.log" | sed 's/^/  /' | tee -a "$summary"
  finish
fi

# Runs ctest with the given arguments into logs/$1.log and notes the counts; $2 is the time
# limit; skipped tests are allowed only when $3 is 1.
run_ctest() {
  local name=$1 seconds=$2 skips_ok=$3
  shift 3
  local start=$SECONDS rc=0
  timeout "$(limit "$seconds")" ctest --test-dir "$build_dir" --output-on-failure --timeout $((120 * slow)) \
    "$@" >"$logs/$name.log" 2>&1 || rc=$?
  local passed skipped failed total
  passed=$(grep -c ' Passed ' "$logs/$name.log")
  skipped=$(grep -c '\*\*\*Skipped' "$logs/$name.log")
  failed=$(grep -cE '\*\*\*(Failed|Timeout|Exception)|Not Run' "$logs/$name.log")
  total=$(grep -oE 'tests failed out of [0-9]+' "$logs/$name.log" | grep -oE '[0-9]+$' || echo 0)
  note "$name: $passed passed, $failed failed, $skipped skipped of ${total:-0} ($((SECONDS - start)) s)"
  if [ "$rc" -ne 0 ]; then
    fail "$name: ctest exit $rc (124 = time limit): see logs/$name.log"
    grep -E '\*\*\*(Failed|Timeout|Exception)' "$logs/$name.log" | head -n 20 | sed 's/^/  /' |
      tee -a "$summary"
  fi
  [ "${total:-0}" -gt 0 ] || fail "$name: no tests ran"
  if [ "$skipped" -gt 0 ] && [ "$skips_ok" -eq 0 ]; then
    fail "$name: $skipped tests skipped on a machine with a GPU"
    grep '\*\*\*Skipped' "$logs/$name.log" | head -n 10 | sed 's/^/  /' | tee -a "$summary"
  fi
}

skips_ok=$((1 - have_gpu))
run_ctest gpu-tests 150 "$skips_ok" -L 'gpu|gpu_codegen' -j 8
run_ctest cpu-tests 120 1 -LE gpu -j "$jobs"
if [ "$have_gpu" -eq 0 ]; then
  # Without a GPU every test that needs one must say so; none may pass or fail instead.
  gpu_only=$(grep -cE 'Test +#[0-9]+: gpu' "$logs/gpu-tests.log")
  gpu_skipped=$(grep -E 'Test +#[0-9]+: gpu' "$logs/gpu-tests.log" | grep -c '\*\*\*Skipped')
  [ "$gpu_only" -eq "$gpu_skipped" ] ||
    fail "gpu-tests: $((gpu_only - gpu_skipped)) of the $gpu_only gpu: tests did not skip without a GPU"
fi

# --- GPU benchmarks: each prints its numbers (or "no GPU: skipped" and exits 0 without one). ---
# Runs benchmark $2 with arguments $3... into logs/<name>.log, $1 being its time limit.
run_bench() {
  local seconds=$1 bench=$2
  shift 2
  local name start=$SECONDS rc=0
  name=$(basename "$bench")
  timeout "$(limit "$seconds")" "$bench" "$@" >"$logs/$name.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "$name: exit $rc (124 = time limit): see logs/$name.log"
    tail -n 20 "$logs/$name.log" | sed 's/^/  /' | tee -a "$summary"
  elif grep -q 'no GPU: skipped' "$logs/$name.log" && [ "$have_gpu" -eq 1 ]; then
    fail "$name: skipped on a machine with a GPU"
  else
    note "$name${*:+ $*} ($((SECONDS - start)) s):"
    sed 's/^/  /' "$logs/$name.log" | tee -a "$summary"
  fi
}
for bench in "$build_dir"/bench/bench_gpu_*; do
  [ -x "$bench" ] || { fail "no GPU benchmarks in $build_dir/bench"; break; }
  case "$(basename "$bench")" in
  bench_gpu_lstm | bench_gpu_gru) continue ;; # below, at a size for their limits
  esac
  run_bench 60 "$bench"
done
# LSTM vs cuDNN at T = 50 for H <= 512 (8 shapes; all 12 without --max-h).
run_bench 60 "$build_dir/bench/bench_gpu_lstm" --max-h 512
# GRU vs cuDNN at T = 50 for H = 256 (4 shapes): what is left of the run's 8 minutes by then.
run_bench 60 "$build_dir/bench/bench_gpu_gru" --max-h 256

finish
