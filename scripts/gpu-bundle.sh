#!/usr/bin/env bash
# Makes the GPU bundle: one relocatable folder (under 56 MiB) holding everything
# scripts/gpu-check.sh needs to check Aspen on a bare GPU machine, where nothing is built and no
# package is installed (it needs only the CUDA toolkit, the driver and python3 there):
#   bin/        lstm_layer, gru_layer, rnn_layer, aspen-cc (installed), aspen_correctness_tests,
#               aspen_correctness_internal_tests, aspen_gpu_tests, aspen_gpu_codegen_tests,
#               bench_gpu_*, first_steps,
#               logistic_regression, mlp, lstm_demo: stripped, RUNPATH $ORIGIN/../lib
#   lib/        libaspen*, the library codelets (aspen/codelets: .gp and .fatbin) and every shared
#               library the programs need that a bare machine lacks (libfmt, libspdlog,
#               libstdc++, ...: RUNPATH $ORIGIN; Debian's reference BLAS in place of OpenBLAS,
#               36 MiB); glibc, the CUDA driver and the CUDA toolkit's libraries (cudart, nvrtc,
#               cublas: there, and large) are left out
#   include/, lib/cmake/  the installed headers and CMake package
#   src/        what the programs read: tests/codelets, codelets, examples/codelets and
#               first_steps.expected, bench (its non-C++ files), python (aspen_torch's sources
#               and its CUDA tests, built and run by gpu-check.sh against that machine's torch)
#   share/cc_fields.gp    the tests' precompiled codelets
#   cache/      a codelet cache warmed by the gpu_codegen tests (NVRTC for sm_90) and the examples
#   tests.tsv   the GPU tests (ctest -L 'gpu|gpu_codegen') with bundle-relative commands
#   gpu-check.sh, run_bundle_tests.py, gpu_bench_report.py, VERSION
# No RUNPATH in it names the build or the source tree. Prints what it bundled and its size.
#
# Usage: scripts/gpu-bundle.sh [--build-dir B] DIR
#   without --build-dir: configures and builds a Release build for sm_90 in build-bundle first
#   (scripts/setup.sh installs the Debian packages that needs); with it, bundles build B as it
#   is. DIR is emptied first, which it refuses unless DIR is empty or an earlier bundle.
# Environment: ASPEN_BUILD_JOBS (build jobs, default: all cores).
# Then: copy DIR to the GPU machine and run DIR/gpu-check.sh DIR OUT there.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$script_dir/.." && pwd)
# Under the 56 MiB a bundle may take, and with the tracked tree (4.5 MiB) under the 64 MiB a
# device run carries. 54 MiB until the LSTM projection and the activation clips (2026-12-07) made
# it 54.1 MiB; 55 MiB until the stacks' codelets (dropout, final states, the GRU's step input
# product) made it 55.1 MiB (2026-12-07); leaving out the cache's cubins that the fatbins hold
# (below) took it to about 48 MiB. The cache's PTX of the library families (about 11 MiB) is
# most of what is left to save: the gpu_codegen tests read it (ptxas), and would otherwise
# compile every family again on the device.
max_kib=$((56 * 1024 - 1))
started=$SECONDS

usage() {
  echo "usage: scripts/gpu-bundle.sh [--build-dir B] DIR" >&2
  exit 2
}
die() {
  echo "gpu-bundle: $*" >&2
  exit 1
}
is_elf() { readelf -h "$1" >/dev/null 2>&1; }
runpaths() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(R\(UN\)\{0,1\}PATH).*\[\(.*\)\]/\2/p'; }
# "ok" when path $1 is $2 or inside it.
inside() { case "$1/" in "$2"/*) return 0 ;; *) return 1 ;; esac; }

build_dir=""
while [ $# -gt 0 ]; do
  case "$1" in
  --build-dir)
    [ $# -ge 2 ] || usage
    build_dir=$2
    shift 2
    ;;
  --build-dir=*)
    build_dir=${1#--build-dir=}
    shift
    ;;
  -h | --help)
    sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}"
    exit 0
    ;;
  -*) usage ;;
  *) break ;;
  esac
done
if [ $# -ne 1 ] || [ -z "$1" ]; then usage; fi
for tool in cmake ctest patchelf readelf nm ldd strip realpath python3 du; do
  command -v "$tool" >/dev/null ||
    die "$tool is missing$([ "$tool" = patchelf ] && echo ' (apt-get install patchelf; scripts/setup.sh installs it)')"
done

# --- The CUDA toolkit: its libraries are not bundled, but the programs need them here to run. ---
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
[ -x "$nvcc" ] || die "no CUDA toolkit (nvcc is not on PATH nor in /usr/local/cuda/bin)"
cuda_home=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
cuda_libs=""
for d in "$cuda_home/lib64" "$cuda_home/lib" "$cuda_home/targets/x86_64-linux/lib"; do
  [ -d "$d" ] && cuda_libs=${cuda_libs:+$cuda_libs:}$d
done
toolkit=$("$nvcc" --version | grep -m1 release | sed 's/.*release //')

# --- The build: made here (Release, sm_90) or given. ---
if [ -z "$build_dir" ]; then
  build_dir=$repo/build-bundle
  echo "== configuring $build_dir (Release, CUDA, sm_90)"
  cmake -S "$repo" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DASPEN_CUDA=ON \
    -DASPEN_CUDA_ARCHITECTURES=90
  echo "== building with ${ASPEN_BUILD_JOBS:-$(nproc)} jobs"
  cmake --build "$build_dir" -j "${ASPEN_BUILD_JOBS:-$(nproc)}"
fi
[ -f "$build_dir/CMakeCache.txt" ] || die "'$build_dir' is not a CMake build folder"
build=$(cd "$build_dir" && pwd -P)
cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" | head -n 1; }
source=$(cache_value CMAKE_HOME_DIRECTORY)
[ -d "$source" ] || source=$repo
source=$(cd "$source" && pwd -P)
build_type=$(cache_value CMAKE_BUILD_TYPE)
architectures=$(cache_value ASPEN_CUDA_ARCHITECTURES)

# --- DIR: emptied, but only when it is empty or an earlier bundle, and never a tree we read. ---
mkdir -p "$1"
dir=$(cd "$1" && pwd -P)
for keep in / "${HOME:-/}" "$source" "$build"; do
  if inside "$keep" "$dir"; then die "refusing to empty '$dir': it holds $keep"; fi
done
if [ -n "$(ls -A "$dir")" ] && ! head -n 1 "$dir/VERSION" 2>/dev/null | grep -q '^Aspen GPU bundle'; then
  die "'$dir' is neither empty nor a bundle (no VERSION): refusing to empty it"
fi
chmod -R u+w "$dir"
find "$dir" -mindepth 1 -maxdepth 1 -exec rm -rf {} +
echo "Aspen GPU bundle (incomplete)" >"$dir/VERSION"
work=$(mktemp -d "${TMPDIR:-/tmp}/aspen-gpu-bundle.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "== bundling $build ($build_type, sm_$architectures; sources $source) into $dir"

# --- The install: libraries, codelets, headers, drivers. ---
cmake --install "$build" --prefix "$dir" --strip >"$work/install.log" 2>&1 ||
  { tail -n 20 "$work/install.log" >&2; die "cmake --install failed"; }
first_gp=$(find "$dir/lib" -name '*.gp' -print -quit)
[ -n "$first_gp" ] || die "the install holds no codelets (*.gp under lib/)"
codelets_dir=$(dirname "${first_gp#"$dir"/}")

# --- The test programs, GPU benchmarks and examples, stripped. ---
programs=(tests/aspen_correctness_tests tests/aspen_correctness_internal_tests tests/gpu/aspen_gpu_tests
  tests/gpu_codegen/aspen_gpu_codegen_tests tests/aspen_cache_worker tests/aspen_memory_worker
  examples/first_steps examples/logistic_regression examples/mlp examples/lstm_demo
  examples/data_parallel_lstm)
for b in launch copy matmul lstm gru; do
  programs+=("bench/bench_gpu_$b")
done
for b in "$build"/bench/bench_gpu_*; do # any further GPU benchmark
  case " ${programs[*]} " in
  *" bench/${b##*/} "*) ;;
  *) if [ -f "$b" ] && [ -x "$b" ]; then programs+=("bench/${b##*/}"); fi ;;
  esac
done
mkdir -p "$dir/bin"
for p in "${programs[@]}"; do
  [ -f "$build/$p" ] || die "$build/$p is missing (a build with the CUDA executor, examples, tests and benchmarks makes it)"
  cp "$build/$p" "$dir/bin/"
  strip "$dir/bin/${p##*/}"
done

# --- What the programs read at run time. ---
mkdir -p "$dir/src/tests" "$dir/src/examples" "$dir/src/bench" "$dir/share"
cp -R "$source/tests/codelets" "$dir/src/tests/codelets"
cp -R "$source/codelets" "$dir/src/codelets"
[ -d "$source/examples/codelets" ] && cp -R "$source/examples/codelets" "$dir/src/examples/codelets"
cp "$source/examples/first_steps.expected" "$dir/src/examples/"
(cd "$source/bench" && find . -type f ! -name '*.cpp' ! -name '*.hpp' ! -name '*.h' ! -name '*.cu' \
  ! -name CMakeLists.txt) | while IFS= read -r f; do
  mkdir -p "$dir/src/bench/$(dirname "$f")"
  cp "$source/bench/$f" "$dir/src/bench/$f"
done
# aspen_torch's sources and its CUDA tests: gpu-check.sh builds the module there, against that
# machine's PyTorch.
mkdir -p "$dir/src/python/aspen_torch" "$dir/src/python/tests"
cp "$source/python/aspen_torch/"*.py "$source/python/aspen_torch/_backend.cpp" \
  "$dir/src/python/aspen_torch/"
cp "$source/python/tests/test_aspen_torch_cuda.py" "$dir/src/python/tests/"
[ -f "$build/tests/cc_fields.gp" ] || die "$build/tests/cc_fields.gp is missing"
cp "$build/tests/cc_fields.gp" "$dir/share/cc_fields.gp"
for f in gpu-check.sh run_bundle_tests.py gpu_bench_report.py; do
  cp "$script_dir/$f" "$dir/$f"
  chmod +x "$dir/$f"
done

# --- RUNPATH: programs find lib/, and so do its libraries (each other) and codelets. ---
# shellcheck disable=SC2016 # $ORIGIN is for the dynamic loader, not the shell
origin='$ORIGIN'
for f in "$dir"/bin/*; do
  if is_elf "$f"; then patchelf --set-rpath "$origin/../lib" "$f"; fi
done
while IFS= read -r f; do
  if is_elf "$f"; then patchelf --set-rpath "$origin" "$f"; fi
done < <(find "$dir/lib" -maxdepth 1 -type f)
# The codelets (.gp, loaded with dlopen by absolute path) keep their RUNPATH, unless it names a
# folder (dropped) or they need more than glibc: then they find lib/ the way libaspen does.
glibc='^(ld-linux[^ ]*|lib(c|m|dl|pthread|rt|resolv|util|mvec|anl|thread_db|BrokenLocale|nss_[a-z0-9]+))\.so([.0-9]*)$'
while IFS= read -r f; do
  is_elf "$f" || continue
  if readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | grep -qvE "$glibc"; then
    patchelf --set-rpath "$origin/$(realpath --relative-to="$(dirname "$f")" "$dir/lib")" "$f"
  elif runpaths "$f" | tr ':' '\n' | grep -q '^/'; then
    patchelf --remove-rpath "$f"
  fi
done < <(find "$dir/lib" -mindepth 2 -type f; find "$dir/share" -type f)

# OpenBLAS (the linalg codelets' host products, when the build found it) is 36 MiB: the bundle
# takes Debian's reference BLAS (libblas3, 0.5 MiB, CBLAS included) in its place, for each file
# whose OpenBLAS symbols it all defines (weak ones aside: the linalg codelets ask for
# openblas_get_num_threads weakly and do without it). $1 needs $2, found at $3.
reference_blas=/usr/lib/x86_64-linux-gnu/blas/libblas.so.3
declare -A bundled=()
substituted=()
use_reference_blas() {
  local elf=$1 needed=$2 found=$3 symbol theirs ours
  [ -f "$reference_blas" ] || return 1
  theirs=$(nm -D --defined-only "$found" | awk '{print $NF}')
  ours=$(nm -D --defined-only "$reference_blas" | awk '{print $NF}')
  for symbol in $(nm -D --undefined-only "$elf" | awk '$1 == "U" {print $NF}'); do
    if grep -qxF "$symbol" <<<"$theirs" && ! grep -qxF "$symbol" <<<"$ours"; then
      return 1
    fi
  done
  patchelf --replace-needed "$needed" libblas.so.3 "$elf"
  if [ ! -e "$dir/lib/libblas.so.3" ]; then
    cp -L "$reference_blas" "$dir/lib/libblas.so.3"
    chmod u+w "$dir/lib/libblas.so.3"
    patchelf --set-rpath "$origin" "$dir/lib/libblas.so.3"
    bundled[libblas.so.3]=$(readlink -f "$reference_blas")
  fi
  substituted+=("${elf#"$dir"/}: $needed ($found) replaced by the reference libblas.so.3")
}

# --- Shared libraries a bare machine lacks: what ldd resolves outside the bundle, less glibc,
# --- the driver and the toolkit. Repeated until a pass copies nothing (each copy is checked). ---
toolkit_names='^lib(cuda|cudart|nvrtc|nvrtc-builtins|nvrtc\.alt|nvrtc-builtins\.alt|cublas|cublasLt|nvJitLink|nvptxcompiler|nvfatbin|cufft|curand|cusparse|cusolver|cupti|nvToolsExt|nvidia-[a-z-]+)\.so'
for pass in 1 2 3 4; do
  copied=0
  missing=()
  while IFS= read -r f; do
    is_elf "$f" || continue
    while read -r name arrow path _; do
      case "$arrow" in
      "=>") ;;
      *) continue ;; # the loader itself, linux-vdso, "statically linked"
      esac
      if [ "$path" = not ]; then
        missing+=("$name (for ${f#"$dir"/})")
        continue
      fi
      real=$(readlink -f "$path")
      if inside "$path" "$dir" || inside "$real" "$dir"; then continue; fi
      if [[ $name =~ $glibc ]] || [[ $name =~ $toolkit_names ]]; then continue; fi
      case "$real" in /usr/local/cuda*) continue ;; esac
      inside "$real" "$cuda_home" && continue
      if [[ $name == libopenblas.so* ]]; then
        # Decided for the file that needs it itself (in the bundle now or after this pass).
        readelf -d "$f" | grep -F '(NEEDED)' | grep -qF "[$name]" || continue
        if use_reference_blas "$f" "$name" "$real"; then
          copied=$((copied + 1))
          continue
        fi
      fi
      soname=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
      soname=${soname:-$name}
      [ -e "$dir/lib/$soname" ] && continue
      cp -L "$real" "$dir/lib/$soname"
      chmod u+w "$dir/lib/$soname"
      patchelf --set-rpath "$origin" "$dir/lib/$soname"
      [ "$name" = "$soname" ] || ln -sf "$soname" "$dir/lib/$name"
      bundled[$soname]=$real
      copied=$((copied + 1))
    done < <(LD_LIBRARY_PATH=$cuda_libs ldd "$f" 2>/dev/null)
  done < <(find "$dir/bin" "$dir/lib" "$dir/share" -type f)
  [ "$copied" -eq 0 ] && break
  [ "$pass" -lt 4 ] || die "libraries still to copy after 4 passes"
done
if [ "${#missing[@]}" -gt 0 ]; then
  printf '  %s\n' "${missing[@]}" | sort -u >&2
  die "ldd finds no file for these libraries"
fi
# Copies that nothing in the bundle needs any more (OpenBLAS's own needs, before its
# replacement) go again.
pruned=1
while [ "$pruned" -eq 1 ]; do
  pruned=0
  needed=$({ find "$dir/bin" "$dir/lib" "$dir/share" -type f -exec readelf -d {} + 2>/dev/null || true; } |
    sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u)
  for soname in "${!bundled[@]}"; do
    if ! grep -qxF "$soname" <<<"$needed"; then
      rm -f "$dir/lib/$soname"
      unset "bundled[$soname]"
      pruned=1
    fi
  done
done

# --- The test manifest, from CTest's own list of the GPU tests. ---
ctest --test-dir "$build" --show-only=json-v1 -L 'gpu|gpu_codegen' >"$work/tests.json" ||
  die "ctest --show-only failed in $build"
LD_LIBRARY_PATH=$cuda_libs python3 - "$work/tests.json" "$dir" "$build" "$source" <<'EOF' ||
import json, os, re, subprocess, sys

json_path, bundle, build, source = sys.argv[1:5]
trees = (build, source)
problems = []
rows = []
listed = {}


def nogpu_tests(program):
    """The Catch tests of `program` tagged [nogpu]: they run without a GPU too."""
    if program not in listed:
        run = subprocess.run([os.path.join(bundle, "bin", program), "[nogpu]",
                              "--list-test-names-only"], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120)
        listed[program] = {line.strip() for line in run.stdout.splitlines() if line.strip()}
    return listed[program]


def check_text(test, what, text):
    if any(c in text for c in "\t\n\r"):
        problems.append(f"{test}: {what} holds a tab or a line break")
    for tree in trees:
        if tree in text:
            problems.append(f"{test}: {what} names {tree}: the manifest must not")


def as_list(value):
    return value if isinstance(value, list) else [value]


tests = json.load(open(json_path, encoding="utf-8")).get("tests", [])
for test in tests:
    name = test["name"]
    check_text(name, "the name", name)
    properties = {p["name"]: p["value"] for p in test.get("properties", [])}
    command = test.get("command")
    if not command:
        problems.append(f"{name}: no command (not built?)")
        continue
    program = os.path.basename(command[0])
    if not os.path.isfile(os.path.join(bundle, "bin", program)):
        problems.append(f"{name}: its program {command[0]} is not in the bundle (not built?)")
        continue
    arguments = command[1:]
    for a in arguments:
        check_text(name, "an argument", a)
    labels = as_list(properties.get("LABELS", []))
    if "gpu" in labels and len(arguments) == 1:
        # Catch's filters escape , [ and ] with a backslash (catch_discover_tests).
        if re.sub(r"\\(.)", r"\1", arguments[0]) in nogpu_tests(program):
            labels = labels + ["nogpu"]
    skips = as_list(properties.get("SKIP_REGULAR_EXPRESSION", []))
    skip = skips[0] if len(skips) == 1 else "|".join(f"(?:{s})" for s in skips)
    environment = []
    for entry in as_list(properties.get("ENVIRONMENT", [])):
        if entry.startswith("ASPEN_CACHE_DIR="):
            continue  # the check's own cache, made from the bundle's
        check_text(name, "the environment", entry)
        environment.append(entry)
    for entry in as_list(properties.get("ENVIRONMENT_MODIFICATION", [])):
        variable, _, change = entry.partition("=")
        operation, _, value = change.partition(":")
        if operation == "set":
            check_text(name, "the environment", value)
            environment.append(f"{variable}={value}")
        elif operation != "reset":
            problems.append(f"{name}: ENVIRONMENT_MODIFICATION {entry}: only set: is supported")
    for e in environment:
        if ";" in e:
            problems.append(f"{name}: environment entry '{e}' holds ';', the manifest's separator")
    for unsupported in ("PASS_REGULAR_EXPRESSION", "FAIL_REGULAR_EXPRESSION", "WILL_FAIL",
                        "DISABLED", "REQUIRED_FILES", "FIXTURES_REQUIRED"):
        if unsupported in properties:
            problems.append(f"{name}: property {unsupported} is not supported by the runner")
    rows.append("\t".join([name, ";".join(labels), skip, ";".join(environment),
                           "bin/" + program] + arguments))

if problems:
    print("\n".join("  " + p for p in sorted(set(problems))[:40]), file=sys.stderr)
    sys.exit(1)
if not rows:
    print("  ctest lists no test labelled gpu or gpu_codegen", file=sys.stderr)
    sys.exit(1)
with open(os.path.join(bundle, "tests.tsv"), "w", encoding="utf-8") as out:
    out.write("# The GPU tests (ctest -L 'gpu|gpu_codegen'), made by scripts/gpu-bundle.sh, run by\n"
              "# run_bundle_tests.py. Tab-separated: name, labels (;), skip regex, environment\n"
              "# (NAME=VALUE;...), program (bundle-relative), arguments (as CTest passes them).\n"
              "# Label nogpu: a Catch test tagged [nogpu], which runs (and must pass) without a GPU.\n")
    out.write("\n".join(rows) + "\n")
EOF
  die "could not write tests.tsv from ctest's list"

# --- A warm codelet cache: the gpu_codegen tests compile the test codelets and the CUDA
# --- executor's kernels with NVRTC for sm_90; the examples run once on the CPU. ---
mkdir -p "$work/scratch" "$dir/cache"
run_env=(ASPEN_CACHE_DIR="$dir/cache" ASPEN_TEST_CODELETS_DIR="$dir/src/tests/codelets"
  ASPEN_TEST_BINARY_DIR="$work/scratch" ASPEN_TEST_PRECOMPILED_CODELETS="$dir/share/cc_fields.gp"
  ASPEN_EXAMPLES_DIR="$dir/src/examples" ASPEN_BENCH_DIR="$dir/src/bench"
  ASPEN_INCLUDE_DIR="$dir/include" ASPEN_CODELETS_DIR="$dir/$codelets_dir"
  ASPEN_CODELETS_SOURCE_DIR="$dir/src/codelets" CUDA_HOME="$cuda_home"
  ASPEN_CUDA_INCLUDE_DIR="$cuda_home/include" LD_LIBRARY_PATH="$cuda_libs")
# A program that fails here leaves the cache as warm as it got: a warning, not the bundle's end
# (gpu-check.sh runs it again and reports it), unless it could not start at all.
warnings=()
warm() {
  local log=$work/warm.log program=$1 rc=0 start=$SECONDS
  shift
  (cd "$work/scratch" && env "${run_env[@]}" timeout 1800 "$dir/bin/$program" "$@") >"$log" 2>&1 || rc=$?
  echo "== warming the cache: $program${*:+ $*}: exit $rc, $((SECONDS - start)) s"
  if [ "$rc" -ne 0 ]; then
    tail -n 15 "$log" | sed 's/^/    /' >&2
    grep -qE 'error while loading shared libraries|symbol lookup error' "$log" &&
      die "$program cannot run from the bundle"
    warnings+=("$program${*:+ $*} failed (exit $rc) while warming the cache")
  fi
}
warm_start=$SECONDS
warm aspen_gpu_codegen_tests
warm first_steps cpu
warm logistic_regression
warm mlp
rm -rf "$dir/cache/tmp"
warm_seconds=$((SECONDS - warm_start))

# --- The cache's cubins that a bundled fatbin holds byte for byte (the fatbins are built from
# --- them) go: the runtime loads those library families from their fatbins, and the tests that
# --- read a family's PTX take a cached PTX alone (gpuCodeletPtx). About 7 MiB. ---
dropped_kib=$(python3 - "$dir/cache/gpu" "$dir/$codelets_dir" <<'EOF'
import pathlib, sys
cache, codelets = (pathlib.Path(p) for p in sys.argv[1:3])
fatbins = [f.read_bytes() for f in codelets.glob("*.fatbin")]
dropped = 0
for cubin in sorted(cache.glob("*.cubin")):
    data = cubin.read_bytes()
    if data and any(data in fatbin for fatbin in fatbins):
        cubin.unlink()
        dropped += len(data)
print(dropped // 1024)
EOF
) || die "could not sort the cache's cubins"

# --- No RUNPATH may lead back to the build or the source tree. ---
bad=()
while IFS= read -r f; do
  is_elf "$f" || continue
  for path in $(runpaths "$f" | tr ':' ' '); do
    for tree in "$build" "$source" "$repo"; do
      case "$path/" in "$tree"/*) bad+=("${f#"$dir"/}: $path") ;; esac
    done
  done
done < <(find "$dir" -type f)
if [ "${#bad[@]}" -gt 0 ]; then
  printf '  %s\n' "${bad[@]}" >&2
  die "RUNPATH/RPATH naming the build or source tree"
fi

if commit=$(git -C "$source" rev-parse HEAD 2>/dev/null); then
  git -C "$source" diff --quiet HEAD 2>/dev/null || commit="$commit (modified)"
else
  commit=unknown
fi
cat >"$dir/VERSION" <<EOF
Aspen GPU bundle
commit: $commit
date: $(date -u '+%Y-%m-%d %H:%M UTC')
build_type: $build_type
cuda_architectures: $architectures
toolkit: $toolkit
codelets_dir: $codelets_dir
EOF
if [ "${#substituted[@]}" -gt 0 ]; then
  echo "blas: the reference libblas.so.3 in place of OpenBLAS for the host codelets" >>"$dir/VERSION"
fi

# --- What is in it, and how big. ---
size() { du -sh "$@" 2>/dev/null | cut -f1; }
count() { find "$@" -type f | wc -l; }
echo "== bundle $dir"
echo "  bin/ ($(size "$dir/bin")): $(cd "$dir/bin" && printf '%s ' *)"
echo "  lib/ ($(size "$dir/lib")): $(cd "$dir/lib" && printf '%s ' libaspen*.so.*.*.*)"
for soname in $(printf '%s\n' "${!bundled[@]}" | sort); do
  echo "    bundled: $soname ($(size "$dir/lib/$soname"), from ${bundled[$soname]})"
done
for s in "${substituted[@]}"; do
  echo "    substituted: $s"
done
echo "  $codelets_dir/ ($(size "$dir/$codelets_dir")): $(count "$dir/$codelets_dir" -name '*.gp') .gp," \
  "$(count "$dir/$codelets_dir" -name '*.fatbin') .fatbin"
echo "  include/ ($(size "$dir/include")): $(count "$dir/include") headers"
echo "  cache/ ($(size "$dir/cache")): $(count "$dir/cache") files, warmed in $warm_seconds s;" \
  "$dropped_kib KiB of cubins the fatbins hold left out"
echo "  src/ ($(size "$dir/src")): $(cd "$dir/src" && find . -mindepth 1 -maxdepth 2 -type d | sed 's|^\./||' | sort | tr '\n' ' ')"
echo "  share/cc_fields.gp, tests.tsv ($(grep -vc '^#' "$dir/tests.tsv") tests:" \
  "$(grep -v '^#' "$dir/tests.tsv" | cut -f2 | tr ';' '\n' | sort | uniq -c | awk '{printf "%s%s %s", s, $1, $2; s=", "}'))," \
  "gpu-check.sh, run_bundle_tests.py, gpu_bench_report.py, VERSION"
sed 's/^/    /' "$dir/VERSION"
kib=$(du -sk "$dir" | cut -f1)
echo "== total: $(size "$dir") ($kib KiB; limit $max_kib KiB), made in $((SECONDS - started)) s"
for w in "${warnings[@]}"; do
  echo "gpu-bundle: warning: $w" >&2
done
[ "$kib" -le "$max_kib" ] || die "the bundle is not under 56 MiB"
