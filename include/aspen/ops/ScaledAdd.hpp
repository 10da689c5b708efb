// Scaled additions in place (popops/ScaledAdd.hpp).
//
//   scaledAddTo(graph, A, B, scaleB, prog, debug, options)           A = A + scaleB * B
//   scaledAddTo(graph, A, scaleA, B, scaleB, prog, debug, options)   A = scaleA * A + scaleB * B
//   scaledAddTo(graph, A, scaleA, B, scaleB, prog, speciality, debug, options)
//       DEFAULT: as above; X_MINUS_AX_PLUS_BY: A = A - scaleA * A + scaleB * B (popops' form of
//       (1 - scaleA) A + scaleB B, computed as written, in the same arithmetic)
//   scaledSubtractFrom(graph, A, B, scaleB, ...)                     A = A - scaleB * B
//   scaledSubtractFrom(graph, A, scaleA, B, scaleB, ...)             A = scaleA * A - scaleB * B
//
// A and B: the same shape (aspen::shape_error otherwise; no broadcasting), completely mapped;
// A writable (no aliases, no constants: graph_connection_error). The work follows A's tile
// mapping; B is read from wherever it lives. Empty tensors are accepted (nothing is added).
// Types (A, B), aspen::type_error for any other pair:
//   (FLOAT, FLOAT), (HALF, HALF), (FLOAT, HALF), (HALF, FLOAT): arithmetic in float, the result
//       rounded once to A's type (so half data with a float scale keeps the scale's precision);
//   (INT, INT), (UNSIGNED_INT, UNSIGNED_INT): 32-bit arithmetic that wraps on overflow.
// Scales: host floats (converted to the scale type, which must hold them exactly enough: a
// fraction or out-of-range value for integer data raises type_error), or scalar tensors
// (one element, any shape) on the device: FLOAT or HALF for floating-point data, A's type for
// integer data; both scale tensors of one call have the same type.
// options (popops'), accepted without effect: "optimizeForSpeed" (true/false; there is one
// implementation) and "scaleFloatToHalfTolerance" (a number >= 0, default 1e-6; popops computes
// in float when a float scale cast to half would be off by more, and Aspen always computes
// half data in float with the float scale). Any other key raises aspen::invalid_option, as does
// a speciality that is neither enumerator.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>

namespace aspen::ops {

enum class ScaledAddSpecialisation { DEFAULT, X_MINUS_AX_PLUS_BY };

ASPEN_API void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &B, float scaleB,
                           program::Sequence &prog, const DebugContext &debug = {},
                           const OptionFlags &options = {});
ASPEN_API void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &B, const Tensor &scaleB,
                           program::Sequence &prog, const DebugContext &debug = {},
                           const OptionFlags &options = {});
ASPEN_API void scaledAddTo(Graph &graph, const Tensor &A, float scaleA, const Tensor &B,
                           float scaleB, program::Sequence &prog, const DebugContext &debug = {},
                           const OptionFlags &options = {});
ASPEN_API void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &scaleA, const Tensor &B,
                           const Tensor &scaleB, program::Sequence &prog,
                           const DebugContext &debug = {}, const OptionFlags &options = {});
ASPEN_API void scaledAddTo(Graph &graph, const Tensor &A, const Tensor &scaleA, const Tensor &B,
                           const Tensor &scaleB, program::Sequence &prog,
                           ScaledAddSpecialisation speciality, const DebugContext &debug = {},
                           const OptionFlags &options = {});
ASPEN_API void scaledAddTo(Graph &graph, const Tensor &A, float scaleA, const Tensor &B,
                           float scaleB, program::Sequence &prog,
                           ScaledAddSpecialisation speciality, const DebugContext &debug = {},
                           const OptionFlags &options = {});

ASPEN_API void scaledSubtractFrom(Graph &graph, const Tensor &A, const Tensor &B, float scaleB,
                                  program::Sequence &prog, const DebugContext &debug = {},
                                  const OptionFlags &options = {});
ASPEN_API void scaledSubtractFrom(Graph &graph, const Tensor &A, const Tensor &B,
                                  const Tensor &scaleB, program::Sequence &prog,
                                  const DebugContext &debug = {}, const OptionFlags &options = {});
ASPEN_API void scaledSubtractFrom(Graph &graph, const Tensor &A, float scaleA, const Tensor &B,
                                  float scaleB, program::Sequence &prog,
                                  const DebugContext &debug = {}, const OptionFlags &options = {});
ASPEN_API void scaledSubtractFrom(Graph &graph, const Tensor &A, const Tensor &scaleA,
                                  const Tensor &B, const Tensor &scaleB, program::Sequence &prog,
                                  const DebugContext &debug = {}, const OptionFlags &options = {});

} // namespace aspen::ops
