#!/usr/bin/env bash
# Runs the libFuzzer harnesses built in BUILD_DIR (scripts/sanitize.sh builds them).
# Usage: fuzz/run.sh BUILD_DIR [smoke | SECONDS] [harness names...]
#   smoke    each harness replays its seed corpus, then runs 3,000 inputs from a fixed seed (what
#            CI runs: the same inputs every time, so a CI run cannot fail by chance)
#   SECONDS  each harness fuzzes for that long (the recorded runs in docs/reliability.md)
# New inputs go to BUILD_DIR/fuzz-work/<name> (the tree's corpus is only read); a finding is
# written to BUILD_DIR/fuzz-work/<name>-crash-* and ends the run with a failure.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build_dir=$(cd "${1:?usage: fuzz/run.sh BUILD_DIR [smoke|SECONDS] [names...]}" && pwd)
mode=${2:-smoke}
shift $(($# >= 2 ? 2 : $#))
names=("$@")
[ ${#names[@]} -gt 0 ] || names=(codelet_parser deserialize json_plan options tensor_views)
limits=(-seed=1 -runs=3000 -max_total_time=120)
seconds=smoke
if [ "$mode" != smoke ]; then
  seconds=$mode
  limits=(-max_total_time="$mode")
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-use_tls=0:suppressions=$here/../scripts/lsan.supp:print_suppressions=0}
printf '%-16s %10s %12s %10s %s\n' harness seconds executions corpus result
status=0
for name in "${names[@]}"; do
  exe="$build_dir/fuzz/fuzz_$name"
  work="$build_dir/fuzz-work/$name"
  mkdir -p "$work"
  log="$build_dir/fuzz-work/$name.log"
  set +e
  "$exe" "$work" "$here/corpus/$name" "${limits[@]}" -max_len=4096 -timeout=20 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$build_dir/fuzz-work/$name-" \
    >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  units=$(find "$work" -type f | wc -l)
  result=ok
  if [ $rc -ne 0 ]; then
    result="FINDING (rc $rc), see $log"
    status=1
    tail -40 "$log" >&2
  fi
  printf '%-16s %10s %12s %10s %s\n' "$name" "$seconds" "${runs:-?}" "$units" "$result"
done
exit $status
