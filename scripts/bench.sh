#!/usr/bin/env bash
# Does all set-up (packages, including the peers: NumPy with OpenBLAS, PyTorch for bench_lstm,
# bench_gru and bench/torch_modules.py, and oneDNN for bench_lstm and bench_gru; configure,
# build), then runs every benchmark in bench/ (the programs, then torch_conv.py with
# ASPEN_BENCH_CONV_ARGS, default "--quick", and torch_modules.py with ASPEN_BENCH_TORCH_ARGS,
# default "--max-h 256") and writes their output to
# bench-results/<date>.txt. The full shape sets of bench_lstm and
# bench_gru take long on a small machine: they run with ASPEN_BENCH_LSTM_ARGS and
# ASPEN_BENCH_GRU_ARGS, each by default "--max-h 512" (set one empty for its full set).
set -euo pipefail
cd "$(dirname "$0")/.."
peers=(python3-numpy libopenblas0 python3-torch libdnnl-dev)
scripts/install-packages.sh "${peers[@]}"
scripts/setup.sh build
read -ra lstm_args <<<"${ASPEN_BENCH_LSTM_ARGS---max-h 512}"
read -ra gru_args <<<"${ASPEN_BENCH_GRU_ARGS---max-h 512}"
mkdir -p bench-results
out="bench-results/$(date +%Y-%m-%d).txt"
{
  echo "# $(date -u) on $(nproc) cores: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
  for b in build/bench/bench_*; do
    name=$(basename "$b")
    args=()
    [ "$name" = bench_lstm ] && args=("${lstm_args[@]}")
    [ "$name" = bench_gru ] && args=("${gru_args[@]}")
    echo "## $name${args[*]:+ ${args[*]}}"
    # bench_collectives measures the MPI transport: two ranks under mpiexec (as root too).
    launch=()
    [ "$name" = bench_collectives ] &&
      launch=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
        OMPI_MCA_mpi_yield_when_idle=1 mpiexec --oversubscribe -n 2)
    # A benchmark that finds a wrong result exits non-zero; the others still run.
    "${launch[@]}" "$b" "${args[@]}" 2>&1 || echo "($name exited with status $?)"
  done
  # Convolutions against torch's (bench/torch_conv.py), ResNet-50 at B = 1 and 8 by default.
  read -ra conv_args <<<"${ASPEN_BENCH_CONV_ARGS---quick}"
  echo "## torch_conv.py ${conv_args[*]}"
  /usr/bin/python3 bench/torch_conv.py --bench build/bench/bench_conv "${conv_args[@]}" 2>&1 ||
    echo "(torch_conv.py exited with status $?)"
  # aspen_torch against torch.nn (bench/torch_modules.py), when the package was built.
  if [ -d build/python/aspen_torch ]; then
    read -ra torch_args <<<"${ASPEN_BENCH_TORCH_ARGS---max-h 256}"
    echo "## torch_modules.py ${torch_args[*]}"
    PYTHONPATH=build/python /usr/bin/python3 bench/torch_modules.py "${torch_args[@]}" 2>&1 ||
      echo "(torch_modules.py exited with status $?)"
  fi
} | tee "$out"
echo "written to $out"
