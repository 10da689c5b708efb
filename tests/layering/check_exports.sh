#!/bin/sh
# What Aspen's shared libraries export (hidden visibility, ASPEN_API): each library exports its
# public API — a sample of it is looked for by name — and no function, object, vtable or
# type_info of a `detail` namespace (the compiler, the executors, the support layer), which
# would mean a private header's code leaked into the ABI. The MPI plugin exports its entry point
# only, and libaspen does not link libmpi.
# Usage: check_exports.sh LIBRARY_DIR
dir=${1:?usage: check_exports.sh LIBRARY_DIR}
status=0
fail() {
  echo "$*"
  status=1
}
# The demangled names of the symbols a library defines and exports, without their parameters.
exported() {
  nm -D --defined-only "$dir/$1" | c++filt | cut -d' ' -f3- |
    sed -e 's/^\(typeinfo name for\|typeinfo for\|vtable for\|guard variable for\) //' -e 's/(.*//'
}
for lib in libaspen.so libaspen_util.so libaspen_ops.so libaspen_linalg.so libaspen_nn.so \
  libaspen_backend.so; do
  [ -f "$dir/$lib" ] || { fail "$lib: not found in $dir"; continue; }
  leaked=$(exported "$lib" | grep -E '^aspen::([A-Za-z_0-9]+::)*detail::' | sort -u)
  [ -z "$leaked" ] || fail "$lib exports private code: $(echo "$leaked" | head -5 | tr '\n' ' ')"
done
# The MPI transport is a plugin libaspen opens (engine/mpi/MpiPlugin.hpp): libaspen never links
# libmpi, and the plugin, when built, exports its entry point and no private code.
if readelf -d "$dir/libaspen.so" | grep -q 'NEEDED.*libmpi'; then
  fail "libaspen.so links libmpi: the MPI transport belongs in aspen/libaspen_mpi.so"
fi
if [ -f "$dir/aspen/libaspen_mpi.so" ]; then
  nm -D --defined-only "$dir/aspen/libaspen_mpi.so" | grep -qw aspen_mpi_plugin ||
    fail "aspen/libaspen_mpi.so does not export aspen_mpi_plugin"
  leaked=$(exported aspen/libaspen_mpi.so | grep -E '^aspen::([A-Za-z_0-9]+::)*detail::' | sort -u)
  [ -z "$leaked" ] || fail "aspen/libaspen_mpi.so exports private code: $(echo "$leaked" | head -5 | tr '\n' ' ')"
fi
# A sample of the public API, one or more per library.
expect() {
  exported "$1" | grep -qxF "$2" || fail "$1 does not export $2"
}
expect libaspen.so "aspen::Graph::addVariable"
expect libaspen.so "aspen::Engine::run"
expect libaspen.so "aspen::program::Gemm::Gemm"
expect libaspen.so "aspen::shape_error"
expect libaspen_util.so "aspen::util::mapTensorLinearly"
expect libaspen_ops.so "void aspen::ops::fill<float>"
expect libaspen_linalg.so "aspen::linalg::matMul"
expect libaspen_nn.so "aspen::nn::lstm::lstmFwd"
expect libaspen_nn.so "aspen::nn::gru::gruFwd"
# The backend's C ABI: plain C names.
for f in aspen_backend_create aspen_rnn_forward aspen_rnn_backward aspen_matmul aspen_last_error; do
  expect libaspen_backend.so "$f"
done
[ "$status" -eq 0 ] && echo "exports ok"
exit "$status"
