// A CompiledGraph as readable text, for looking at what each compiler pass produced
// (ASPEN_COMPILER_DUMP, see Compiler.hpp): every member as Members<T> (CompiledGraph.hpp)
// describes it, one item a line (long lists cut after kDumpItems), then each program's step tree.
#pragma once

#include "CompiledGraph.hpp"

#include <cstddef>
#include <ostream>

namespace aspen::detail {

inline constexpr std::size_t kDumpItems = 64;

void dumpCompiledGraph(const CompiledGraph &graph, std::ostream &out);

} // namespace aspen::detail
