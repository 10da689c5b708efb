#!/usr/bin/env bash
# expect_failure.sh SECONDS COMMAND...: passes when COMMAND fails (non-zero status) within
# SECONDS; fails when it succeeds or is still running then (a hang).
set -u
limit=$1
shift
start=$(date +%s)
timeout "$limit" "$@"
status=$?
elapsed=$(( $(date +%s) - start ))
if [ "$status" -eq 124 ]; then
  echo "expect_failure: still running after ${limit} s (a hang)"
  exit 1
fi
if [ "$status" -eq 0 ]; then
  echo "expect_failure: the command succeeded"
  exit 1
fi
echo "expect_failure: failed as expected (status ${status}) in ${elapsed} s"
