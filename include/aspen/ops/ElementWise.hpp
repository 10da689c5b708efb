// Element-wise operations (popops' ElementWise.hpp).
//
// map(graph, expr, {t1, t2, ...}, prog, debug, options) -> Tensor
//   Evaluates `expr` (Expr.hpp) with placeholder _i standing for t_i. Shapes broadcast NumPy-style
//   to one output shape (shape_error otherwise). Operand types follow the rules in Expr.hpp
//   (type_error naming the operation, both types and the tensors); the result has the root's
//   type. The result is a new variable mapped like the first operand that has the output shape
//   (linearly when none has). Appends one compute set (or one per operation, see below) to prog.
// mapInPlace(graph, expr, {t1, ...}, prog, ...)
//   Writes the result into t1, which must be parallel-writeable and have the output shape and
//   the result type. Other operands may alias t1: element i of an operand that is element i of
//   t1 is read before it is written; any other overlap is read from a copy made first.
// mapWithOutput(graph, expr, {t1, ...}, out, prog, ...)
//   Writes into `out` (the output shape and result type; parallel-writeable).
// Options: "enableGenerateCodelet" (true | false, default true). With true, an expression of two
// or more operations runs as ONE generated codelet (one pass, no temporaries, compiled once per
// distinct expression and cached by content); a single operation always runs on the
// precompiled library codelets (no host compile). With false, every operation runs on the
// library codelets, through temporaries. "enableExpressionOptimizations" (true | false, popops',
// default true) is accepted without effect: Aspen's lowering does not rewrite expressions. Any
// other key raises invalid_option.
//
// Named builders, one per row of the operation table (ExprOp.hpp), each in three forms:
//   Tensor X(graph, a[, b[, c]], prog, debug = {}, options = {})    a new tensor, as map
//   void   XInPlace(graph, a[, b[, c]], prog, ...)                   the result into a
//   void   XWithOutput(graph, a[, b[, c]], out, prog, ...)           the result into out
// Binary builders also take an arithmetic scalar on either side (a constant of the tensor's
// type on tile 0). Ternary: clamp(x, lo, hi) and select(a, b, predicate).
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/ops/Expr.hpp>

#include <type_traits>
#include <vector>

namespace aspen::ops {

ASPEN_API Tensor map(Graph &graph, const expr::Expr &expr, const std::vector<Tensor> &ts,
                     program::Sequence &prog, const DebugContext &debug = {},
                     const OptionFlags &options = {});
ASPEN_API void mapInPlace(Graph &graph, const expr::Expr &expr, const std::vector<Tensor> &ts,
                          program::Sequence &prog, const DebugContext &debug = {},
                          const OptionFlags &options = {});
ASPEN_API void mapWithOutput(Graph &graph, const expr::Expr &expr, const std::vector<Tensor> &ts,
                             const Tensor &out, program::Sequence &prog,
                             const DebugContext &debug = {}, const OptionFlags &options = {});

namespace detail {
// A scalar constant of `type` holding `value`, mapped to tile 0.
template <class T> Tensor scalarConstant(Graph &graph, Type type, T value) {
  Tensor c = graph.addConstant(type, {}, value);
  graph.setTileMapping(c, 0);
  return c;
}
} // namespace detail

template <class T> using IfScalar = std::enable_if_t<std::is_arithmetic_v<T>, int>;

#define ASPEN_EW_DECLARE_UNARY(e, node, fn, types, result)                                      \
  inline Tensor fn(Graph &g, const Tensor &a, program::Sequence &p, const DebugContext &d = {},  \
                   const OptionFlags &o = {}) {                                                  \
    return map(g, expr::node(expr::_1), {a}, p, d, o);                                          \
  }                                                                                             \
  inline void fn##InPlace(Graph &g, const Tensor &a, program::Sequence &p,                      \
                          const DebugContext &d = {}, const OptionFlags &o = {}) {              \
    mapInPlace(g, expr::node(expr::_1), {a}, p, d, o);                                          \
  }                                                                                             \
  inline void fn##WithOutput(Graph &g, const Tensor &a, const Tensor &out, program::Sequence &p, \
                             const DebugContext &d = {}, const OptionFlags &o = {}) {           \
    mapWithOutput(g, expr::node(expr::_1), {a}, out, p, d, o);                                  \
  }

#define ASPEN_EW_DECLARE_BINARY(e, node, fn, types, result)                                     \
  inline Tensor fn(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &p,            \
                   const DebugContext &d = {}, const OptionFlags &o = {}) {                     \
    return map(g, expr::node(expr::_1, expr::_2), {a, b}, p, d, o);                             \
  }                                                                                             \
  template <class T, IfScalar<T> = 0>                                                           \
  Tensor fn(Graph &g, const Tensor &a, T b, program::Sequence &p, const DebugContext &d = {},   \
            const OptionFlags &o = {}) {                                                        \
    return fn(g, a, detail::scalarConstant(g, a.elementType(), b), p, d, o);                    \
  }                                                                                             \
  template <class T, IfScalar<T> = 0>                                                           \
  Tensor fn(Graph &g, T a, const Tensor &b, program::Sequence &p, const DebugContext &d = {},   \
            const OptionFlags &o = {}) {                                                        \
    return fn(g, detail::scalarConstant(g, b.elementType(), a), b, p, d, o);                    \
  }                                                                                             \
  inline void fn##InPlace(Graph &g, const Tensor &a, const Tensor &b, program::Sequence &p,     \
                          const DebugContext &d = {}, const OptionFlags &o = {}) {              \
    mapInPlace(g, expr::node(expr::_1, expr::_2), {a, b}, p, d, o);                             \
  }                                                                                             \
  template <class T, IfScalar<T> = 0>                                                           \
  void fn##InPlace(Graph &g, const Tensor &a, T b, program::Sequence &p,                        \
                   const DebugContext &d = {}, const OptionFlags &o = {}) {                     \
    fn##InPlace(g, a, detail::scalarConstant(g, a.elementType(), b), p, d, o);                  \
  }                                                                                             \
  inline void fn##WithOutput(Graph &g, const Tensor &a, const Tensor &b, const Tensor &out,     \
                             program::Sequence &p, const DebugContext &d = {},                  \
                             const OptionFlags &o = {}) {                                       \
    mapWithOutput(g, expr::node(expr::_1, expr::_2), {a, b}, out, p, d, o);                     \
  }                                                                                             \
  template <class T, IfScalar<T> = 0>                                                           \
  void fn##WithOutput(Graph &g, const Tensor &a, T b, const Tensor &out, program::Sequence &p,  \
                      const DebugContext &d = {}, const OptionFlags &o = {}) {                  \
    fn##WithOutput(g, a, detail::scalarConstant(g, a.elementType(), b), out, p, d, o);          \
  }                                                                                             \
  template <class T, IfScalar<T> = 0>                                                           \
  void fn##WithOutput(Graph &g, T a, const Tensor &b, const Tensor &out, program::Sequence &p,  \
                      const DebugContext &d = {}, const OptionFlags &o = {}) {                  \
    fn##WithOutput(g, detail::scalarConstant(g, b.elementType(), a), b, out, p, d, o);          \
  }

#define ASPEN_EW_DECLARE_TERNARY(e, node, fn, types, result)                                    \
  inline Tensor fn(Graph &g, const Tensor &a, const Tensor &b, const Tensor &c,                 \
                   program::Sequence &p, const DebugContext &d = {}, const OptionFlags &o = {}) { \
    return map(g, expr::node(expr::_1, expr::_2, expr::_3), {a, b, c}, p, d, o);                \
  }                                                                                             \
  inline void fn##InPlace(Graph &g, const Tensor &a, const Tensor &b, const Tensor &c,          \
                          program::Sequence &p, const DebugContext &d = {},                     \
                          const OptionFlags &o = {}) {                                          \
    mapInPlace(g, expr::node(expr::_1, expr::_2, expr::_3), {a, b, c}, p, d, o);                \
  }                                                                                             \
  inline void fn##WithOutput(Graph &g, const Tensor &a, const Tensor &b, const Tensor &c,       \
                             const Tensor &out, program::Sequence &p, const DebugContext &d = {}, \
                             const OptionFlags &o = {}) {                                       \
    mapWithOutput(g, expr::node(expr::_1, expr::_2, expr::_3), {a, b, c}, out, p, d, o);        \
  }

ASPEN_EW_UNARY_OPS(ASPEN_EW_DECLARE_UNARY)
ASPEN_EW_BINARY_OPS(ASPEN_EW_DECLARE_BINARY)
ASPEN_EW_TERNARY_OPS(ASPEN_EW_DECLARE_TERNARY)
#undef ASPEN_EW_DECLARE_UNARY
#undef ASPEN_EW_DECLARE_BINARY
#undef ASPEN_EW_DECLARE_TERNARY

} // namespace aspen::ops
