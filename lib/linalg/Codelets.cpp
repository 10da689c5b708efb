// aspen::linalg::addCodelets: the precompiled linalg codelet families.
#include "core/LibraryCodelets.hpp"

#include <aspen/linalg/Codelets.hpp>

namespace aspen::linalg {
void addCodelets(Graph &graph) { aspen::detail::addLibraryCodelets(graph, "linalg"); }
} // namespace aspen::linalg
