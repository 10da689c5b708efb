// Poplar's <poplar/CSRFunctions.hpp>: the IPU's floating-point control registers. Aspen's
// executors (the CPU's and the GPU's) compute with IEEE-754 defaults that these cannot change,
// so the functions are accepted and add nothing to the program:
//   - no exception traps: an invalid operation gives NaN, a division by zero or an overflow
//     gives an infinity, as with inv, div0 and oflo off on the IPU;
//   - rounding is always to nearest even (esr, stochastic rounding, has no effect);
//   - an overflow gives an infinity, not NaN (nanoo has no effect).
// getAndModifyFloatingPointBehaviour returns a scalar UNSIGNED_INT constant (0) on tile 0 that
// setFloatingPointBehaviour accepts back, as the saved state it stands for.
#pragma once

#include <poplar/Graph.hpp>
#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <poplar/Program.hpp>

namespace poplar {

struct FloatingPointBehaviour {
  bool inv = true;   // trap on invalid operations
  bool div0 = true;  // trap on division by zero
  bool oflo = true;  // trap on overflow
  bool esr = true;   // stochastic rounding
  bool nanoo = true; // NaN on overflow
  FloatingPointBehaviour(bool inv = true, bool div0 = true, bool oflo = true, bool esr = true,
                         bool nanoo = true)
      : inv(inv), div0(div0), oflo(oflo), esr(esr), nanoo(nanoo) {}
  FloatingPointBehaviour operator!() const { return {!inv, !div0, !oflo, !esr, !nanoo}; }
};

inline void setFloatingPointBehaviour(Graph &, program::Sequence &,
                                      const FloatingPointBehaviour &,
                                      const DebugContext & = {}) {}

inline void setFloatingPointBehaviour(Graph &graph, program::Sequence &, const Tensor &behaviour,
                                      const DebugContext & = {}) {
  if (!behaviour.valid() || behaviour.numElements() != 1 ||
      behaviour.elementType() != UNSIGNED_INT)
    throw poplar_error("setFloatingPointBehaviour: the behaviour tensor " +
                       (behaviour.valid() ? behaviour.getDebugStr() : std::string("(invalid)")) +
                       " must be one getAndModifyFloatingPointBehaviour returned (one "
                       "UNSIGNED_INT element)");
  (void)graph;
}

inline void setStochasticRounding(Graph &, program::Sequence &, bool,
                                  const DebugContext & = {}) {}

inline Tensor getAndModifyFloatingPointBehaviour(Graph &graph, program::Sequence &,
                                                 const FloatingPointBehaviour & /*clear*/,
                                                 const FloatingPointBehaviour & /*set*/,
                                                 const DebugContext &debug = {}) {
  Tensor state = graph.addConstant(UNSIGNED_INT, {}, 0u, {debug, "floatingPointBehaviour"});
  graph.setTileMapping(state, 0);
  return state;
}

} // namespace poplar
