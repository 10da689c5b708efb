#!/usr/bin/env bash
# Runs a program and compares its standard output with an expected file, showing a diff.
set -euo pipefail
expected=$1
shift
actual=$(mktemp)
trap 'rm -f "$actual"' EXIT
"$@" >"$actual"
diff -u "$expected" "$actual"
