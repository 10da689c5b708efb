#!/usr/bin/env bash
# The GPU bundle (scripts/gpu-bundle.sh) works wherever it is copied, with neither the build nor
# the source tree: made from BUILD_DIR, moved (tar) under another path, no RUNPATH in it names
# either tree; then, with an environment that knows nothing of them (env -i, the CUDA toolkit's
# libraries only) and, where unprivileged `unshare -rm` works, with both trees hidden under empty
# folders, ldd finds every library of every program in the bundle or the system, and lstm_layer,
# first_steps, two correctness tests and the bundle's own gpu-check.sh --no-gpu-ok (a dry run:
# GPU tests skipped, gpu_codegen tests and examples passing) run from it. Prints "bundle ok".
#
# Usage: tests/bundle/check_bundle.sh BUILD_DIR SOURCE_DIR   (CTest: gpu_bundle, label correctness)
# Environment: ASPEN_GPU_CHECK_SLOW (passed to the dry run, default 3: CI machines are small).
set -euo pipefail
[ $# -eq 2 ] || {
  echo "usage: tests/bundle/check_bundle.sh BUILD_DIR SOURCE_DIR" >&2
  exit 2
}
build=$(cd "$1" && pwd -P)
source=$(cd "$2" && pwd -P)
started=$SECONDS
fail() {
  echo "check_bundle: FAIL: $*"
  exit 1
}
step() { echo "== $* ($((SECONDS - started)) s)"; }

# The scratch space must not lie in either tree: they get hidden.
base=${TMPDIR:-/tmp}
case "$base/" in "$build"/* | "$source"/*) base=/tmp ;; esac
work=$(mktemp -d "$base/aspen-bundle-check.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

step "making a bundle of $build"
if ! "$source/scripts/gpu-bundle.sh" --build-dir "$build" "$work/first/bundle" >"$work/bundle.log" 2>&1; then
  tail -n 40 "$work/bundle.log"
  fail "scripts/gpu-bundle.sh failed"
fi
grep -E '^== total|bundled:|substituted:|warning' "$work/bundle.log" || true

step "moving it (tar) to another path"
mkdir -p "$work/second/elsewhere"
(cd "$work/first" && tar cf - bundle) | (cd "$work/second/elsewhere" && tar xf -)
rm -rf "$work/first"
bundle=$(cd "$work/second/elsewhere/bundle" && pwd -P)

step "RUNPATH and RPATH of every ELF file"
elves=0
while IFS= read -r f; do
  readelf -h "$f" >/dev/null 2>&1 || continue
  elves=$((elves + 1))
  for path in $(readelf -d "$f" | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p' | tr ':' ' '); do
    case "$path/" in
    "$build"/* | "$source"/*) fail "${f#"$bundle"/} has RUNPATH/RPATH $path" ;;
    esac
  done
done < <(find "$bundle" -type f)
echo "  $elves ELF files, none with a RUNPATH or RPATH into $build or $source"

# The CUDA toolkit's libraries: the only thing the bare environment gets on LD_LIBRARY_PATH.
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || fail "no CUDA toolkit (nvcc)"
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
cuda_libs=""
for d in "$cuda_home/lib64" "$cuda_home/lib" "$cuda_home/targets/x86_64-linux/lib"; do
  if [ -d "$d" ]; then cuda_libs=${cuda_libs:+$cuda_libs:}$d; fi
done

# What runs in the bare environment, with the trees hidden when that is possible: a script of
# its own, so that nothing of it is read from the source tree once that is hidden.
cat >"$work/bare.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
bundle=$1 build=$2 source=$3 work=$4 cuda_home=$5 cuda_libs=$6 hide=$7 slow=$8
started=$SECONDS
fail() {
  echo "check_bundle: FAIL: $*"
  exit 1
}
step() { echo "== $* ($((SECONDS - started)) s)"; }
if [ "$hide" -eq 1 ]; then
  mkdir -p "$work/empty"
  # The outer tree first; one inside it is gone with it.
  for tree in $(printf '%s\n' "$build" "$source" | sort); do
    if [ -d "$tree" ] && [ -n "$(ls -A "$tree")" ]; then
      mount --bind "$work/empty" "$tree" || fail "cannot hide $tree"
    fi
  done
  for tree in "$build" "$source"; do
    if [ -d "$tree" ] && [ -n "$(ls -A "$tree")" ]; then fail "$tree is still visible"; fi
  done
  echo "  $build and $source are hidden (empty or gone) from here on"
fi
mkdir -p "$work/home" "$work/scratch" "$work/cache"
bare=(env -i PATH=/usr/bin:/bin HOME="$work/home" LD_LIBRARY_PATH="$cuda_libs")
# The bundle's contract with its programs (what gpu-check.sh sets).
contract=(ASPEN_CACHE_DIR="$work/cache" ASPEN_TEST_CODELETS_DIR="$bundle/src/tests/codelets"
  ASPEN_TEST_BINARY_DIR="$work/scratch" ASPEN_TEST_PRECOMPILED_CODELETS="$bundle/share/cc_fields.gp"
  ASPEN_EXAMPLES_DIR="$bundle/src/examples" ASPEN_BENCH_DIR="$bundle/src/bench"
  ASPEN_INCLUDE_DIR="$bundle/include" ASPEN_CODELETS_DIR="$bundle/lib/aspen/codelets"
  ASPEN_CODELETS_SOURCE_DIR="$bundle/src/codelets"
  CUDA_HOME="$cuda_home" ASPEN_CUDA_INCLUDE_DIR="$cuda_home/include")
cp -R "$bundle/cache/." "$work/cache/"

step "ldd of every program and library in the bundle"
checked=0
while IFS= read -r f; do
  readelf -h "$f" >/dev/null 2>&1 || continue
  checked=$((checked + 1))
  libraries=$("${bare[@]}" ldd "$f" 2>&1) || fail "ldd ${f#"$bundle"/}: $libraries"
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    [ "$path" != not ] || fail "ldd ${f#"$bundle"/}: $name not found"
    real=$(readlink -f "$path")
    case "$real/" in
    "$build"/* | "$source"/*) fail "ldd ${f#"$bundle"/}: $name from $real" ;;
    "$bundle"/*) ;;
    *) [[ $name != libaspen* ]] || fail "ldd ${f#"$bundle"/}: $name from outside the bundle ($real)" ;;
    esac
  done <<<"$libraries"
done < <(find "$bundle/bin" "$bundle/lib" "$bundle/share" -type f)
echo "  $checked ELF files: every library found, none from either tree"

step "an installed driver with nothing set: lstm_layer"
(cd "$work/scratch" && "${bare[@]}" "$bundle/bin/lstm_layer" --input-size 3 --output-size 4 \
  --batch-size 2 --phase all) >"$work/lstm_layer.log" 2>&1 || true
grep -q "PASS" "$work/lstm_layer.log" || {
  tail -n 20 "$work/lstm_layer.log"
  fail "bin/lstm_layer did not print PASS"
}
grep "PASS" "$work/lstm_layer.log" | tail -n 1 | sed 's/^/  /'

step "first_steps cpu"
(cd "$work/scratch" && "${bare[@]}" "${contract[@]}" "$bundle/bin/first_steps" cpu) \
  >"$work/first_steps.out" 2>"$work/first_steps.err" || {
  cat "$work/first_steps.out" "$work/first_steps.err" | tail -n 20
  fail "bin/first_steps cpu failed"
}
diff <(tail -n +2 "$bundle/src/examples/first_steps.expected") <(tail -n +2 "$work/first_steps.out") ||
  fail "bin/first_steps cpu does not print what first_steps.expected says"
echo "  prints what first_steps.expected says"

step "correctness tests on the CPU"
# program|test: one of the tests of internals (linked with the archives) and one of the tests
# linked with the bundled shared libraries.
for entry in "aspen_correctness_internal_tests|compiled metadata matches the declared fields" \
  "aspen_correctness_internal_tests|aspen-cc output (aspen_add_codelets) loads with loadPrecompiled" \
  "aspen_correctness_tests|Gemm of whole float variables equals the double product and the vertex plan"; do
  program=${entry%%|*}
  test=${entry#*|}
  (cd "$work/scratch" && "${bare[@]}" "${contract[@]}" "$bundle/bin/$program" "$test") \
    >"$work/test.log" 2>&1 || {
    tail -n 30 "$work/test.log"
    fail "bin/$program '$test' failed"
  }
  grep -q "All tests passed" "$work/test.log" || fail "bin/$program '$test' ran no test"
  echo "  passed: $program: $test"
done

step "the bundle's gpu-check.sh --no-gpu-ok (a dry run)"
if "${bare[@]}" ASPEN_GPU_CHECK_SLOW="$slow" "$bundle/gpu-check.sh" --no-gpu-ok "$work/out" \
  >"$work/gpu-check.log" 2>&1; then
  sed 's/^/  /' "$work/out/summary.txt"
else
  sed 's/^/  /' "$work/out/summary.txt" 2>/dev/null || tail -n 30 "$work/gpu-check.log"
  grep -B2 -A25 -E '^==== \[[0-9]+/[0-9]+\] (FAILED|TIMEOUT)' "$work/out/tests.log" 2>/dev/null | head -n 80 || true
  fail "gpu-check.sh --no-gpu-ok failed"
fi
files=$(find "$work/out" -type f | wc -l)
[ "$files" -le 8 ] || fail "gpu-check.sh wrote $files files (at most 8)"
EOF
chmod +x "$work/bare.sh"

hide=0
if unshare -rm true 2>/dev/null; then
  hide=1
  run=(unshare -rm)
else
  echo "== unprivileged 'unshare -rm' does not work here: the build and source trees stay visible" \
    "(hiding them skipped)"
  run=()
fi
"${run[@]}" "$work/bare.sh" "$bundle" "$build" "$source" "$work" "$cuda_home" "$cuda_libs" "$hide" \
  "${ASPEN_GPU_CHECK_SLOW:-3}"
echo "bundle ok ($((SECONDS - started)) s)"
