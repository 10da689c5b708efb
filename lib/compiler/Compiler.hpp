// The compiler: a Graph and its programs in, a self-contained CompiledGraph out.
#pragma once

#include "CompileReport.hpp"
#include "CompiledGraph.hpp"
#include "core/GraphState.hpp"

#include <aspen/ArrayRef.hpp>
#include <aspen/Program.hpp>
#include <aspen/ProgressFunc.hpp>

#include <memory>

namespace aspen::detail {

struct CompileOptions {
  bool allowOutOfMemory = false; // debug.allowOutOfMemory
};

// Raises the aspen::error subclass of the first misuse found (see Verify.hpp). Each pass is timed
// and logged at debug level (ASPEN_LOG_LEVEL=debug); `progress` sees (pass, number of passes).
// With the environment variable ASPEN_COMPILER_DUMP set, the CompiledGraph after each pass and
// the pass's time are written as text (Dump.hpp): to stderr when it is "-", otherwise to
// <folder>/<NN>-<pass>.txt, the folder created if needed (invalid_option when it cannot be).
// `report`, when given, receives the passes' times, the run order and the estimates
// (CompileReport.hpp).
std::unique_ptr<CompiledGraph> compile(const GraphState &graph,
                                       ArrayRef<program::Program> programs,
                                       const CompileOptions &options,
                                       const ProgressFunc &progress = {},
                                       CompileReport *report = nullptr);

} // namespace aspen::detail
