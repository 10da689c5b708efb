#!/usr/bin/env bash
# Does all set-up (packages, configure, build), then runs the LSTM demo on the default device (the
# first GPU when the CUDA executor has one, otherwise the CPU executor modelling an H200): one
# LSTM layer built with aspen::nn::lstm, its plan, a run on random data checked against the
# double-precision host model, its time beside torch.nn.LSTM's (when /usr/bin/python3 has torch)
# and a one-line verdict. Arguments pass to the demo (examples/lstm_demo.cpp: --steps, --batch,
# --input, --hidden, --runs, --device). The first-steps example is build/examples/first_steps.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
# One OpenBLAS thread on both sides: the fastest setting for each on a few cores (bench/torch_modules.py).
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
build/examples/lstm_demo --torch-script examples/python/time_torch_lstm.py "$@"
