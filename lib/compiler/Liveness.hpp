// Liveness: which variables need bytes of their own for the engine's lifetime, and when the
// others hold a value, so that memory layout can let buffers whose values are never held at the
// same time share bytes.
//
// Always live (Buffer::alwaysLive):
//  - constants, variables behind host handles, stream copies, printed tensors, control-flow
//    predicates and Switch controls (executors touch them outside the steps that name them);
//  - the variables a Cached step's body reads or writes (CachedStep);
//  - variables used by more than one program: their values persist between Engine::run calls;
//  - variables some byte of which may be read before this run of their program wrote it. This is
//    backward liveness over byte ranges: a read makes its bytes live, a write kills the bytes it
//    writes for certain (contiguous runs, or strided runs of at most kMaxStridedKill elements),
//    WriteUndef kills its bytes without touching them; If/Switch join their branches and loops
//    iterate to a fixed point. A variable live at its program's entry is always live;
//  - the variables of a program that calls itself or unrolls to more than kMaxSteps steps.
// Every other variable gets a live range: its program's steps (CompiledGraph::steps, walked from
// the program's root) are numbered in the order they run with calls inlined, If/Switch branches
// one after the other and loop bodies once; the range runs
// from the variable's first to its last access (WriteUndef is no access), widened to a whole loop
// when the variable is live at the loop's head (its value crosses the back edge or comes from
// before the loop). A variable no program accesses gets an empty range.
// Vertex state and scratch buffers are not variables and keep Buffer's defaults.
// Assumes a verified graph; runs on the lowered steps and what the lowering passes recorded of
// each compute set's, kernel's and step's accesses (Lowering.hpp) and the copies' plans.
#pragma once

#include "CompiledGraph.hpp"
#include "Lowering.hpp"
#include "core/GraphState.hpp"

namespace aspen::detail {

void analyseLiveness(const GraphState &graph, const LoweringState &state, CompiledGraph &out);

} // namespace aspen::detail
