// A CompiledGraph as readable text, for looking at what each compiler pass produced
// (ASPEN_COMPILER_DUMP, see Compiler.hpp): buffers with their offsets and live ranges, compute
// sets, copy plans, stream copies and each program's step tree.
#pragma once

#include "CompiledGraph.hpp"

#include <ostream>

namespace aspen::detail {

void dumpCompiledGraph(const CompiledGraph &graph, std::ostream &out);

} // namespace aspen::detail
