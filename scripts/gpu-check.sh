#!/usr/bin/env bash
# The GPU acceptance run, from a bundle made by scripts/gpu-bundle.sh: it builds, installs and
# fetches nothing, so it runs on a bare machine with an NVIDIA GPU, the CUDA toolkit and python3.
# Records the GPU, runs the bundle's GPU tests (tests.tsv: ctest -L 'gpu|gpu_codegen') in
# parallel, control flow first, reruns the failures with CUDA_MODULE_LOADING=EAGER, runs the
# examples, aspen-plan on an LSTM and the GPU benchmarks, and writes in OUTDIR: summary.txt
# (counts, times, failures, the PASS/FAIL line), nvidia-smi.txt, tests.log, reruns.log,
# examples.log, bench.log, performance.md (the benchmarks' figures, to paste into
# docs/performance.md) and aspen-plan-lstm.html (the LSTM's profile page, its JSON report
# inside): eight files, the most a device machine returns.
# Exits non-zero on any failure; with a GPU present, a skipped GPU test or benchmark is a failure
# too (it checked nothing). Every step has a time limit and the whole run stays under 7 minutes.
# Then aspen_torch: built there against the machine's PyTorch, its CUDA tests and the PyTorch
# module benchmark on CUDA (into tests.log and bench.log).
#
# Usage: gpu-check.sh [--no-gpu-ok] BUNDLE OUTDIR    (BUNDLE/gpu-check.sh or scripts/gpu-check.sh;
#        BUNDLE/gpu-check.sh [--no-gpu-ok] OUTDIR      run from the bundle, BUNDLE may be left out)
#   --no-gpu-ok  dry run on a machine without a GPU: the 'gpu' tests and the benchmarks must
#                report themselves skipped (never pass), the gpu_codegen tests must pass (they
#                need only the toolkit), and the examples run on the CPU.
# Environment: ASPEN_GPU_CHECK_SECONDS (the whole run's limit, default 400), ASPEN_GPU_CHECK_SLOW
#              (multiplies every limit, the whole run's too, default 1: for dry runs on small
#              machines), ASPEN_GPU_CHECK_JOBS (tests at once, default 8, or the cores if fewer).
# The programs get ASPEN_CACHE_DIR (a copy of BUNDLE/cache), ASPEN_TEST_CODELETS_DIR,
# ASPEN_TEST_BINARY_DIR, ASPEN_TEST_PRECOMPILED_CODELETS, ASPEN_TEST_CACHE_WORKER,
# ASPEN_TEST_MEMORY_WORKER, ASPEN_EXAMPLES_DIR, ASPEN_BENCH_DIR,
# ASPEN_INCLUDE_DIR and ASPEN_CODELETS_DIR (all in the bundle or a temporary folder),
# ASPEN_CODELETS_SOURCE_DIR, CUDA_HOME and ASPEN_CUDA_INCLUDE_DIR (nvcc's toolkit), and the
# toolkit's libraries on LD_LIBRARY_PATH (not for the benchmarks' python3: ASPEN_BENCH_PYTHON).
set -uo pipefail

usage() {
  echo "usage: gpu-check.sh [--no-gpu-ok] BUNDLE OUTDIR   (BUNDLE may be left out when run as BUNDLE/gpu-check.sh)" >&2
  exit 2
}
no_gpu_ok=0
if [ "${1:-}" = "--no-gpu-ok" ]; then
  no_gpu_ok=1
  shift
fi
script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# BUNDLE/gpu-check.sh OUTDIR: the bundle is the script's own folder.
if [ $# -eq 1 ] && [ -f "$script_dir/VERSION" ] && [ -f "$script_dir/tests.tsv" ]; then
  set -- "$script_dir" "$1"
fi
[ $# -eq 2 ] || usage
bundle=$(cd "$1" 2>/dev/null && pwd) || {
  echo "gpu-check: no folder '$1'" >&2
  exit 2
}
for f in VERSION tests.tsv bin; do
  [ -e "$bundle/$f" ] || {
    echo "gpu-check: '$1' is not a bundle from scripts/gpu-bundle.sh (no $f)" >&2
    exit 2
  }
done
out=$(mkdir -p "$2" && cd "$2" && pwd) || exit 2
slow=${ASPEN_GPU_CHECK_SLOW:-1}
seconds=${ASPEN_GPU_CHECK_SECONDS:-400}
cores=$(nproc)
jobs=${ASPEN_GPU_CHECK_JOBS:-$((cores < 8 ? cores : 8))}
for n in "$slow" "$seconds" "$jobs"; do
  case "$n" in '' | *[!0-9]* | 0)
    echo "gpu-check: ASPEN_GPU_CHECK_* must be positive whole numbers" >&2
    exit 2
    ;;
  esac
done
# The steps end 15 s before the whole run's limit: the reports after them need a moment.
deadline=$((SECONDS + seconds * slow - 15))
failures=0
summary=$out/summary.txt
work=$(mktemp -d "${TMPDIR:-/tmp}/aspen-gpu-check.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/scratch" "$work/examples" "$work/bench"

note() { echo "$*" | tee -a "$summary"; }
fail() {
  note "FAIL: $*"
  failures=$((failures + 1))
}
# Seconds a step may take: its own limit, or what is left of the whole run if that is less.
limit() {
  local own=$(($1 * slow)) left=$((deadline - SECONDS))
  if [ "$left" -lt "$own" ]; then echo $((left > 1 ? left : 1)); else echo "$own"; fi
}
version() { sed -n "s/^$1: //p" "$bundle/VERSION" | head -n 1; }
# The Python helpers beside this script (scripts/ or the bundle), else the bundle's.
helper() { if [ -f "$script_dir/$1" ]; then echo "$script_dir/$1"; else echo "$bundle/$1"; fi; }
card="no GPU"
reported=0
bench_report() {
  reported=1
  local about
  about="$(version build_type) build for sm_$(version cuda_architectures), CUDA $(version toolkit),"
  about+=" $cores cores; scripts/gpu-check.sh runs each benchmark once at the sizes shown, and"
  about+=" each ratio is against the peer measured in the same run."
  timeout 15 python3 "$(helper gpu_bench_report.py)" --index "$work/bench/index.tsv" \
    --out "$out/performance.md" --date "$(date -u +%Y-%m-%d)" --card "$card" \
    --commit "$(version commit)" --about "$about" ||
    fail "performance.md: gpu_bench_report.py failed"
}
finish() {
  [ "$reported" -eq 1 ] || bench_report
  for f in tests.log reruns.log examples.log bench.log nvidia-smi.txt; do
    [ -f "$out/$f" ] || echo "(not reached)" >"$out/$f"
  done
  note "== result: $([ "$failures" -eq 0 ] && echo PASS || echo "FAIL ($failures failures)")," \
    "$SECONDS s in all; logs in $out"
  exit $((failures > 0))
}

: >"$summary"
: >"$work/bench/index.tsv"
note "# Aspen GPU check, $(date -u '+%Y-%m-%d %H:%M UTC'), $cores cores, $(hostname 2>/dev/null)"
note "bundle: $bundle: commit $(version commit), $(version build_type), sm_$(version \
  cuda_architectures), made $(version date) with CUDA $(version toolkit)"

# --- The machine: a GPU is what this run is for; without one it stops here unless told. ---
have_gpu=0
if command -v nvidia-smi >/dev/null && timeout "$(limit 30)" nvidia-smi >"$out/nvidia-smi.txt" 2>&1 &&
  timeout "$(limit 30)" nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
  have_gpu=1
  gpu=$(timeout "$(limit 30)" nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap \
    --format=csv,noheader 2>/dev/null | head -n 1)
  card=$(echo "$gpu" | awk -F', ' '{printf "%s, driver %s", $1, $2}')
  note "gpu: $gpu ($(nvidia-smi -L 2>/dev/null | grep -c '^GPU ') in all)"
else
  command -v nvidia-smi >/dev/null || echo "nvidia-smi: not found" >"$out/nvidia-smi.txt"
  note "gpu: none (nvidia-smi $(command -v nvidia-smi >/dev/null && echo 'finds no GPU' || echo 'is missing'))"
fi
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ -x "$nvcc" ]; then
  CUDA_HOME=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  note "toolkit: $(timeout "$(limit 30)" "$nvcc" --version | grep -m1 release) ($CUDA_HOME)"
else
  fail "no CUDA toolkit (nvcc not on PATH nor in /usr/local/cuda/bin): the programs need its libraries"
  finish
fi
# Codelets compiled from source (the tests' own) need a host C++ compiler too: c++, or ASPEN_CXX.
# The programs were built knowing the build machine's compiler path; this machine's may differ,
# so the first of ASPEN_CXX, c++, g++, clang++ found here is the one they get.
cxx=""
for candidate in ${ASPEN_CXX:-} c++ g++ clang++; do
  if command -v "$candidate" >/dev/null; then
    cxx=$(command -v "$candidate")
    break
  fi
done
if [ -n "$cxx" ]; then
  export ASPEN_CXX=$cxx
  note "host compiler: $(timeout "$(limit 30)" "$cxx" --version 2>&1 | head -n 1) ($cxx)"
else
  note "host compiler: none (no ${ASPEN_CXX:+$ASPEN_CXX, }c++, g++ or clang++): codelets compiled from source will fail"
fi
command -v python3 >/dev/null || {
  fail "no python3: the test runner needs it"
  finish
}
if [ "$have_gpu" -eq 0 ] && [ "$no_gpu_ok" -eq 0 ]; then
  fail "there is no GPU on this machine: nothing to check (use --no-gpu-ok for a dry run)"
  finish
fi

# --- The programs' environment: everything in the bundle, a scratch folder, and the toolkit. ---
cuda_libs=""
for d in "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib"; do
  [ -d "$d" ] && cuda_libs=${cuda_libs:+$cuda_libs:}$d
done
export CUDA_HOME
export ASPEN_CUDA_INCLUDE_DIR=$CUDA_HOME/include
# cuDNN for the convolution calls: the toolkit's when it has one, else the one PyTorch's wheels
# bring (libaspen opens it from ASPEN_CUDNN_LIBRARY; the tests then check the cuDNN path).
if [ -z "${ASPEN_CUDNN_LIBRARY:-}" ]; then
  cudnn=$(find "$CUDA_HOME/lib64" "$CUDA_HOME/lib" "$CUDA_HOME/targets/x86_64-linux/lib" \
    -maxdepth 1 -name 'libcudnn.so.9' 2>/dev/null | head -n 1)
  if [ -z "$cudnn" ]; then
    site=$(timeout "$(limit 30)" python3 -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2>/dev/null)
    [ -n "$site" ] && [ -d "$site/nvidia" ] &&
      cudnn=$(find "$site/nvidia" -name 'libcudnn.so.9' 2>/dev/null | head -n 1)
  fi
  if [ -n "$cudnn" ]; then
    export ASPEN_CUDNN_LIBRARY=$cudnn
    cuda_libs=${cuda_libs:+$cuda_libs:}$(dirname "$cudnn") # its sub-libraries beside it
  fi
fi
note "cuDNN: ${ASPEN_CUDNN_LIBRARY:-none found (convolution calls run im2col + cuBLASLt)}"
# The benchmarks' peer (PyTorch, through python3) brings its own CUDA libraries: it gets the
# library path this run started with, not the toolkit's.
original_ld_path=${LD_LIBRARY_PATH:-}
if [ -z "${ASPEN_BENCH_PYTHON:-}" ]; then
  if [ -n "${LD_LIBRARY_PATH:-}" ]; then
    ASPEN_BENCH_PYTHON="env LD_LIBRARY_PATH='$LD_LIBRARY_PATH' python3"
  else
    ASPEN_BENCH_PYTHON="env -u LD_LIBRARY_PATH python3"
  fi
  export ASPEN_BENCH_PYTHON
fi
export LD_LIBRARY_PATH=$cuda_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
PATH=$(dirname "$nvcc"):$PATH
export PATH
export ASPEN_CACHE_DIR=$work/cache
export ASPEN_TEST_CODELETS_DIR=$bundle/src/tests/codelets
export ASPEN_TEST_BINARY_DIR=$work/scratch
export ASPEN_TEST_PRECOMPILED_CODELETS=$bundle/share/cc_fields.gp
export ASPEN_TEST_CACHE_WORKER=$bundle/bin/aspen_cache_worker
export ASPEN_TEST_MEMORY_WORKER=$bundle/bin/aspen_memory_worker
export ASPEN_EXAMPLES_DIR=$bundle/src/examples
export ASPEN_BENCH_DIR=$bundle/src/bench
export ASPEN_INCLUDE_DIR=$bundle/include
# The bundle carries the build machine's libstdc++; where this machine has a newer one (they are
# backward compatible) the programs get that instead, so that codelets compiled here by a newer
# compiler can be loaded into them.
glibcxx() { grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$1" 2>/dev/null | sort -uV | tail -n 1; }
system_cxx=""
for c in $(ldconfig -p 2>/dev/null | awk '/libstdc\+\+\.so\.6 \(libc6,x86-64/ {print $NF}') \
  /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib64/libstdc++.so.6; do
  if [ -f "$c" ]; then
    system_cxx=$(readlink -f "$c")
    break
  fi
done
if [ -f "$bundle/lib/libstdc++.so.6" ] && [ -n "$system_cxx" ]; then
  ours=$(glibcxx "$bundle/lib/libstdc++.so.6") theirs=$(glibcxx "$system_cxx")
  if [ -n "$theirs" ] && [ "$theirs" != "$ours" ] &&
    [ "$(printf '%s\n' "$ours" "$theirs" | sort -V | tail -n 1)" = "$theirs" ]; then
    mkdir -p "$work/lib"
    ln -s "$system_cxx" "$work/lib/libstdc++.so.6"
    gcc_s=$(dirname "$system_cxx")/libgcc_s.so.1
    [ -f "$gcc_s" ] && ln -s "$gcc_s" "$work/lib/libgcc_s.so.1"
    LD_LIBRARY_PATH=$work/lib:$LD_LIBRARY_PATH
    note "libstdc++: this machine's ($theirs, $system_cxx) is newer than the bundle's ($ours): used instead"
  else
    note "libstdc++: the bundle's ($ours; this machine's: ${theirs:-none})"
  fi
fi
codelets_dir=$(version codelets_dir)
export ASPEN_CODELETS_DIR=$bundle/${codelets_dir:-lib/aspen/codelets}
export ASPEN_CODELETS_SOURCE_DIR=$bundle/src/codelets
# The bundle may be read-only: the programs get a copy of its warm cache.
start=$SECONDS
if [ -d "$bundle/cache" ]; then
  if ! timeout "$(limit 60)" cp -R "$bundle/cache" "$ASPEN_CACHE_DIR" ||
    ! chmod -R u+w "$ASPEN_CACHE_DIR"; then
    fail "copying the bundle's codelet cache"
  fi
fi
mkdir -p "$ASPEN_CACHE_DIR"
note "cache: $(find "$ASPEN_CACHE_DIR" -type f | wc -l) files from the bundle ($((SECONDS - start)) s)"

# --- The GPU tests: run_bundle_tests.py notes the counts and every kind of failure. ---
start=$SECONDS
tests_limit=$(limit 150)
expect=gpu
[ "$have_gpu" -eq 1 ] || expect=no-gpu
rc=0
timeout -k 10 "$tests_limit" python3 "$(helper run_bundle_tests.py)" --bundle "$bundle" \
  --log "$out/tests.log" --rerun-log "$out/reruns.log" -j "$jobs" --timeout $((120 * slow)) \
  --deadline $((tests_limit > 20 ? tests_limit - 10 : tests_limit)) --expect "$expect" \
  --workdir "$work/scratch" >"$work/tests.txt" || rc=$?
tee -a "$summary" <"$work/tests.txt"
failures=$((failures + $(grep -c '^FAIL:' "$work/tests.txt")))
if [ "$rc" -ne 0 ] && ! grep -q '^FAIL:' "$work/tests.txt"; then
  fail "tests: the runner exited $rc (124 = time limit) after $((SECONDS - start)) s: see tests.log"
fi

# --- The examples: first_steps prints what first_steps.expected says (on the GPU when there is
# --- one), logistic_regression agrees with its host model, mlp's loss falls, the LSTM demo passes
# --- on the default device (the GPU). ---
# Runs example $2 (arguments $3...) with time limit $1 into examples.log; its output in
# $work/examples/<name>.out (standard output) and .err.
run_example() {
  local seconds=$1 name=$2 rc=0 start=$SECONDS
  shift 2
  timeout -k 5 "$(limit "$seconds")" "$bundle/bin/$name" "$@" \
    >"$work/examples/$name.out" 2>"$work/examples/$name.err" </dev/null || rc=$?
  {
    echo "==== $name${*:+ $*}: exit $rc, $((SECONDS - start)) s"
    cat "$work/examples/$name.out"
    [ -s "$work/examples/$name.err" ] && echo "---- standard error" && cat "$work/examples/$name.err"
  } >>"$out/examples.log"
  [ "$rc" -eq 0 ] || fail "example $name${*:+ $*}: exit $rc (124 = time limit): see examples.log"
  return "$rc"
}
: >"$out/examples.log"
start=$SECONDS
device=cpu
[ "$have_gpu" -eq 1 ] && device=gpu
if run_example 30 first_steps "$device"; then
  if diff <(tail -n +2 "$bundle/src/examples/first_steps.expected") \
    <(tail -n +2 "$work/examples/first_steps.out") >"$work/examples/first_steps.diff"; then
    note "example first_steps $device: ok (prints what first_steps.expected says)"
  else
    fail "example first_steps $device: its output differs from first_steps.expected (diff in examples.log)"
    { echo "---- diff first_steps.expected output"; cat "$work/examples/first_steps.diff"; } >>"$out/examples.log"
  fi
fi
for example in "logistic_regression:(agrees)" "mlp:(loss falls)" "lstm_demo:Verdict: PASS"; do
  name=${example%%:*} expected=${example#*:}
  if run_example 30 "$name"; then
    if grep -qF "$expected" "$work/examples/$name.out"; then
      note "example $name: ok ($(grep -F "$expected" "$work/examples/$name.out" | tail -n 1))"
    else
      fail "example $name: no '$expected' in its output: see examples.log"
    fi
  fi
done
# The data-parallel LSTM with NCCL's all-reduce on the GPU (a world of one: this machine has no
# mpiexec), within rounding of the run on the CPU.
if [ "$have_gpu" -eq 1 ] && run_example 60 data_parallel_lstm --gpu; then
  if grep -qx "PASS" "$work/examples/data_parallel_lstm.out"; then
    note "example data_parallel_lstm --gpu: ok ($(grep -F "NCCL's all-reduce" "$work/examples/data_parallel_lstm.out" | sed 's/^ *//'))"
  else
    fail "example data_parallel_lstm --gpu: no PASS in its output: see examples.log"
  fi
fi
note "examples: done in $((SECONDS - start)) s"

# --- aspen-plan: an LSTM planned, run twice and profiled on the device. Its HTML page (which
# --- holds the whole JSON report) goes to OUTDIR; the JSON and the trace stay in the work folder,
# --- since a device machine returns at most 8 files. ---
start=$SECONDS
plan_out="$work/aspen-plan-lstm"
if run_example 90 aspen-plan lstm --input-size 128 --output-size 128 --batch-size 16 \
  --sequence-size 32 --phase all --target "$device" --run --runs 2 --quiet \
  --json "$plan_out.json" --trace "$plan_out.trace.json" --html "$out/aspen-plan-lstm.html"; then
  if grep -q '"schema": *"aspen.profile/1"' "$plan_out.json" &&
    grep -q '"traceEvents"' "$plan_out.trace.json" &&
    grep -q 'aspen.profile/1' "$out/aspen-plan-lstm.html"; then
    note "aspen-plan lstm $device: ok, its profile page in aspen-plan-lstm.html ($((SECONDS - start)) s)"
  else
    fail "aspen-plan lstm $device: its reports are missing or incomplete"
  fi
fi

# --- GPU benchmarks: each prints its figures (or "no GPU: skipped" and exits 0 without one). ---
# Runs benchmark $2 with arguments $3... into bench.log and $work/bench/<name>.out, $1 being its
# time limit, and lists it in $work/bench/index.tsv for performance.md.
run_bench() {
  local seconds=$1 name=$2 rc=0 start=$SECONDS
  shift 2
  local output=$work/bench/$name.out
  if [ ! -x "$bundle/bin/$name" ]; then
    fail "$name: not in the bundle"
    return
  fi
  timeout -k 5 "$(limit "$seconds")" "$bundle/bin/$name" "$@" >"$output" 2>&1 </dev/null || rc=$?
  local took=$((SECONDS - start))
  { echo "==== $name${*:+ $*}: exit $rc, $took s"; cat "$output"; } >>"$out/bench.log"
  printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$*" "$took" "$rc" "$output" >>"$work/bench/index.tsv"
  if [ "$rc" -ne 0 ]; then
    fail "$name${*:+ $*}: exit $rc (124 = time limit) after $took s: see bench.log"
    tail -n 10 "$output" | sed 's/^/  /' | tee -a "$summary"
  elif grep -q 'no GPU: skipped' "$output"; then
    if [ "$have_gpu" -eq 1 ]; then
      fail "$name: skipped on a machine with a GPU"
    else
      note "$name${*:+ $*}: no GPU: skipped, as it should be without one ($took s)"
    fi
  elif [ "$have_gpu" -eq 0 ]; then
    fail "$name: did not say 'no GPU: skipped' on a machine without a GPU: see bench.log"
  else
    note "$name${*:+ $*} ($took s):"
    grep -v '^RESULT ' "$output" | sed 's/^/  /' | tee -a "$summary"
  fi
}
: >"$out/bench.log"
start=$SECONDS
run_bench 20 bench_gpu_launch
run_bench 20 bench_gpu_copy
run_bench 60 bench_gpu_matmul
# LSTM vs cuDNN at T = 50 for H <= 512 (8 shapes; all 12 without --max-h).
run_bench 90 bench_gpu_lstm --max-h 512
# GRU vs cuDNN at T = 50 for H = 256 (4 shapes).
run_bench 70 bench_gpu_gru --max-h 256
# Convolutions vs torch's cuDNN, benchmark mode off and on (6 ResNet-50 layers, B = 1 and 32).
run_bench 90 bench_gpu_conv
# The persistent recurrent kernels: flag round trip and gridSync latency, then the anchor
# (LSTM half H = 768, B = 16, T = 1024) and two more shapes, per-step and persistent, vs cuDNN.
run_bench 120 bench_gpu_persistent --quick
for bench in "$bundle"/bin/bench_gpu_*; do
  case "${bench##*/}" in
  bench_gpu_launch | bench_gpu_copy | bench_gpu_matmul | bench_gpu_lstm | bench_gpu_gru | \
    bench_gpu_conv | bench_gpu_persistent) ;;
  *) run_bench 30 "${bench##*/}" ;;
  esac
done
note "benchmarks: done in $((SECONDS - start)) s"

# --- aspen_torch on the GPU: its pybind11 module built here against this machine's PyTorch
# --- (pybind11 from torch's own headers), then python/tests/test_aspen_torch_cuda.py (into
# --- tests.log) and bench/torch_modules.py --cuda --quick (into bench.log). Without PyTorch
# --- with CUDA, Python's headers or a compiler it is noted as not run. ---
aspen_torch_check() {
  local src=$bundle/src/python pkg=$work/aspen_torch_pkg rc=0 start=$SECONDS
  # The library path this run started with (PyTorch's), then the toolkit's (the cudart and
  # NVRTC libaspen needs, where PyTorch has not loaded them already).
  local -a py=(env "LD_LIBRARY_PATH=${original_ld_path}${original_ld_path:+:}$cuda_libs" python3)
  if [ ! -f "$src/aspen_torch/_backend.cpp" ]; then
    fail "aspen_torch: not in the bundle (src/python)"
    return
  fi
  if [ "$have_gpu" -eq 0 ]; then
    note "aspen_torch on CUDA: not run (no GPU)"
    return
  fi
  local paths
  paths=$(timeout "$(limit 60)" "${py[@]}" -c 'import sysconfig, torch, torch.utils.cpp_extension as e
assert torch.cuda.is_available(), "torch.cuda.is_available() is False"
print(sysconfig.get_paths()["include"]); print(sysconfig.get_config_var("EXT_SUFFIX"))
print(" ".join("-I" + p for p in e.include_paths()))' 2>"$work/aspen_torch.err") || {
    note "aspen_torch on CUDA: not run (no PyTorch with CUDA: $(tail -n 1 "$work/aspen_torch.err"))"
    return
  }
  local include suffix torch_includes
  include=$(sed -n 1p <<<"$paths") suffix=$(sed -n 2p <<<"$paths")
  torch_includes=$(sed -n 3p <<<"$paths")
  if [ ! -f "$include/Python.h" ] || [ -z "$cxx" ]; then
    note "aspen_torch on CUDA: not run (no Python.h in $include, or no C++ compiler)"
    return
  fi
  mkdir -p "$pkg/aspen_torch"
  cp "$src/aspen_torch/"*.py "$pkg/aspen_torch/"
  # Without -fopenmp (use_openmp then answers False): pip's torch carries its own libgomp, and a
  # module linked to the system's would start a second OpenMP team beside torch's rather than
  # share it. The CUDA tests run Aspen's CPU work on its own threads.
  # shellcheck disable=SC2086 # torch_includes is a list of -I flags
  timeout "$(limit 90)" "$cxx" -O2 -std=c++17 -shared -fPIC -I"$include" $torch_includes \
    -I"$bundle/include" "$src/aspen_torch/_backend.cpp" -L"$bundle/lib" -laspen_backend \
    -Wl,-rpath,"$bundle/lib" -o "$pkg/aspen_torch/_backend$suffix" >"$work/aspen_torch.build" 2>&1 || {
    fail "aspen_torch: building _backend$suffix against this machine's PyTorch failed"
    tail -n 15 "$work/aspen_torch.build" | sed 's/^/  /' | tee -a "$summary"
    return
  }
  note "aspen_torch: built against this machine's PyTorch ($((SECONDS - start)) s)"
  start=$SECONDS
  {
    echo "==== python/tests/test_aspen_torch_cuda.py"
    PYTHONPATH=$pkg timeout -k 5 "$(limit 120)" "${py[@]}" -m unittest discover -v -s "$src/tests" \
      -p 'test_aspen_torch_cuda.py' 2>&1
  } >>"$out/tests.log" || rc=$?
  if [ "$rc" -ne 0 ]; then
    fail "aspen_torch on CUDA: test_aspen_torch_cuda.py exit $rc (124 = time limit): see tests.log"
  elif grep -q 'skipped' <(tail -n 3 "$out/tests.log"); then
    fail "aspen_torch on CUDA: test_aspen_torch_cuda.py skipped on a machine with a GPU"
  else
    note "aspen_torch on CUDA: test_aspen_torch_cuda.py passed ($((SECONDS - start)) s)"
  fi
  start=$SECONDS rc=0
  {
    echo "==== bench/torch_modules.py --cuda --quick"
    PYTHONPATH=$pkg timeout -k 5 "$(limit 90)" "${py[@]}" "$bundle/src/bench/torch_modules.py" --cuda \
      --quick --reps 5 --settle 0 2>&1
  } >"$work/torch_modules.out" || rc=$?
  cat "$work/torch_modules.out" >>"$out/bench.log"
  if [ "$rc" -ne 0 ]; then
    fail "torch_modules.py --cuda: exit $rc (124 = time limit): see bench.log"
  else
    note "torch_modules.py --cuda --quick ($((SECONDS - start)) s):"
    grep -v '^RESULT ' "$work/torch_modules.out" | sed 's/^/  /' | tee -a "$summary"
  fi
  start=$SECONDS rc=0
  {
    echo "==== bench/torch_cnn.py --cuda --quick"
    PYTHONPATH=$pkg timeout -k 5 "$(limit 90)" "${py[@]}" "$bundle/src/bench/torch_cnn.py" --cuda \
      --quick 2>&1
  } >"$work/torch_cnn.out" || rc=$?
  cat "$work/torch_cnn.out" >>"$out/bench.log"
  if [ "$rc" -ne 0 ]; then
    fail "torch_cnn.py --cuda: exit $rc (124 = time limit): see bench.log"
  else
    note "torch_cnn.py --cuda --quick ($((SECONDS - start)) s):"
    grep -v '^RESULT ' "$work/torch_cnn.out" | sed 's/^/  /' | tee -a "$summary"
  fi
}
aspen_torch_check
bench_report
finish
