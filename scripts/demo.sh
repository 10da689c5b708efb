#!/usr/bin/env bash
# Does all set-up (packages, configure, build), then runs the first-steps demo on the default
# device (the first GPU when the CUDA executor has one, otherwise the CPU executor modelling an H200).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
build/examples/first_steps "$@"
