// Reductions (popops Reduce.hpp): reduce, reduceWithOutput, reduceMany.
//
// in: any shape [d0, ..., dn-1] and element type; dims: the dimensions to reduce, any subset
// (none: an element-wise copy with the operation's map (SQUARE_ADD squares), scale and update;
// all: a scalar). The result has in's shape with the reduced dimensions removed.
//   out = scale * op_{reduced dims}(in)            (update false)
//   out = op(out, scale * op_{reduced dims}(in))   (update true: ADD and SQUARE_ADD add,
//                                                   MUL multiplies, MIN/MAX take min/max, ...)
// LOG_ADD computes log(sum(exp(in))) and works in the log domain throughout, as popops does:
// the scale is a log multiply (out = scale + result) and update is a log add.
// An empty reduction gives the operation's identity (0, 1, +inf/largest, -inf/smallest, true,
// false; -inf for LOG_ADD). MIN and MAX propagate NaN.
// Types (in -> out):  ADD, MUL, MIN, MAX, SQUARE_ADD: float/half -> float or half,
//                     int -> int, unsigned int -> unsigned int;
//                     LOGICAL_AND, LOGICAL_OR: bool -> bool;  LOG_ADD: float/half -> float or half.
// Float and half accumulate in float with compensated (TwoSum) sums. The order of accumulation
// is a function of in's shape and dims alone: each output's reduced elements, in the flattened
// order of the reduced dimensions, are cut into fixed blocks (sizes from the number of reduced
// elements only), each reduced in order, and the block results are merged in block order.
// Results are therefore bit-identical for any tile mapping of in and out (1 tile or many, any
// intervals, any order), any target (tile and worker counts), any number of threads and any
// scheduling of workers.
// scale: a FLOAT tensor of one element (not for LOGICAL_AND / LOGICAL_OR).
// Errors: type_error (types above, scale type), index_error (a dim out of range or repeated),
// shape_error (out's shape, scale not one element). A failed call leaves the graph unchanged.
// Options (all builders): "minElementsPerWorker" (unsigned, default 256): the smallest share of
// a tile's input that the plan gives one worker.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/ops/Operation.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace aspen::ops {

struct ReduceParams {
  ReduceParams() = default;
  ReduceParams(Operation op, bool update = false) : op(op), update(update) {}
  ReduceParams(Operation op, bool update, Tensor scale)
      : op(op), update(update), useScale(true), scale(std::move(scale)) {}
  // As in popops: a float scale must be a tensor (graph.addConstant(FLOAT, {}, s)).
  ReduceParams(Operation op, float constantScale, bool update = false) = delete;

  Operation op = Operation::ADD;
  bool update = false;
  bool useScale = false;
  Tensor scale;
};

// One reduction of reduceMany: out type = in's unless useOutType.
struct SingleReduceOp {
  SingleReduceOp(Tensor in, std::vector<std::size_t> dims, ReduceParams params, Type outType,
                 std::string debugName = "")
      : in(std::move(in)), dims(std::move(dims)), params(std::move(params)), useOutType(true),
        outType(outType), debugName(std::move(debugName)) {}
  SingleReduceOp(Tensor in, std::vector<std::size_t> dims, ReduceParams params,
                 std::string debugName = "")
      : in(std::move(in)), dims(std::move(dims)), params(std::move(params)),
        debugName(std::move(debugName)) {}

  Tensor in;
  std::vector<std::size_t> dims;
  ReduceParams params;
  bool useOutType = false;
  Type outType;
  std::string debugName;
};

// The compute-set forms use css[0] and css[1] (creating those missing, appended to css), as
// popops does; the caller adds program::Execute(cs) for each. Reductions that share css run in
// the same compute sets, so none may read another's output. The Sequence forms append them.
ASPEN_API Tensor reduce(Graph &graph, const Tensor &in, const Type &outType,
                        const std::vector<std::size_t> &dims, ReduceParams params,
                        program::Sequence &prog, const DebugContext &debug = {},
                        const OptionFlags &options = {});
ASPEN_API Tensor reduce(Graph &graph, const Tensor &in, const std::vector<std::size_t> &dims,
                        ReduceParams params, program::Sequence &prog,
                        const DebugContext &debug = {}, const OptionFlags &options = {});
ASPEN_API Tensor reduce(Graph &graph, const Tensor &in, const Type &outType,
                        const std::vector<std::size_t> &dims, ReduceParams params,
                        std::vector<ComputeSet> &css, const DebugContext &debug = {},
                        const OptionFlags &options = {});
ASPEN_API Tensor reduce(Graph &graph, const Tensor &in, const std::vector<std::size_t> &dims,
                        ReduceParams params, std::vector<ComputeSet> &css,
                        const DebugContext &debug = {}, const OptionFlags &options = {});

// out: shape of in without dims, type per the rules above; read as well when params.update.
ASPEN_API void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                                const std::vector<std::size_t> &dims, ReduceParams params,
                                program::Sequence &prog, const DebugContext &debug = {},
                                const OptionFlags &options = {});
ASPEN_API void reduceWithOutput(Graph &graph, const Tensor &in, const Tensor &out,
                                const std::vector<std::size_t> &dims, ReduceParams params,
                                std::vector<ComputeSet> &css, const DebugContext &debug = {},
                                const OptionFlags &options = {});

// Several reductions in the same two compute sets. outputs: empty (new tensors are created and
// returned in it, mapped linearly) or one tensor per reduction (used as reduceWithOutput's out).
ASPEN_API void reduceMany(Graph &graph, const std::vector<SingleReduceOp> &reductions,
                          std::vector<Tensor> &outputs, program::Sequence &prog,
                          const DebugContext &debug = {}, const OptionFlags &options = {});
// The same, returning new outputs.
ASPEN_API std::vector<Tensor> reduceMany(Graph &graph,
                                         const std::vector<SingleReduceOp> &reductions,
                                         program::Sequence &prog, const DebugContext &debug = {},
                                         const OptionFlags &options = {});

} // namespace aspen::ops
