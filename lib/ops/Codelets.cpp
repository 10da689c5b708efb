#include "layersupport/AddLibraryCodelets.hpp"

#include <aspen/ops/Codelets.hpp>

namespace aspen::ops {
void addCodelets(Graph &graph) { detail::addLibraryCodelets(graph, "ops"); }
} // namespace aspen::ops
