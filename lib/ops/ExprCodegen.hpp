// Code generation for a lowered expression: one codelet that evaluates the whole expression in
// one pass over memory, no temporaries.
//
// The element loop is emitted once, as a static member function template of a helper struct
//   aspen::ops::generated::Expr_<hash>::run(workerId, numWorkers, out, in...)
// that takes the fields as they bind on any target. Two sources wrap it:
//   - codeletSource: a MultiVertex aspen::ops::GeneratedExpr_<hash> for graph.addCodelets-
//     FromString (the CPU executor; the CUDA executor compiles the same source with NVRTC);
//   - cudaSource: the helper plus a kernel `extern "C" __global__ void <kernelName>(const
//     aspen::detail::FieldDesc *fields)` in which block b runs tile b's vertex, reading its
//     field descriptors at fields[b * numFields ...] (out, then the inputs in field order), with
//     workerId = threadIdx.x.
// Fields: `out` (list of regions of the result type) and, for each tensor the expression reads,
// `in<i>` (i = placeholder index - 1): a list of regions, a scalar edge when `scalar`, or one
// element for each region of `out` when `perRow` (a channel's value over a row of its elements).
#pragma once

#include "ops/ExprLowering.hpp"

#include <string>
#include <vector>

namespace aspen::ops::detail {

struct CodegenOperand {
  Type type;
  bool scalar = false; // one element, read once (Input<T>) instead of per region
  bool used = false;   // the expression reads it
  bool perRow = false; // one element per region of `out` (Input<Vector<T>>), read once a region
};

struct GeneratedExpr {
  std::string vertexName;  // "aspen::ops::GeneratedExpr_<hash>"
  std::string kernelName;  // "aspen_expr_<hash>"
  std::string codeletSource;
  std::string cudaSource;
  unsigned numFields = 0;
};

GeneratedExpr generateExpr(const LoweredExpr &e, const std::vector<CodegenOperand> &operands);

} // namespace aspen::ops::detail
