// aspen::linalg::addCodelets: the precompiled linalg codelet families, and ops' (matmuls zero,
// cast and reduce with its vertices).
#include "layersupport/AddLibraryCodelets.hpp"

#include <aspen/linalg/Codelets.hpp>
#include <aspen/ops/Codelets.hpp>

namespace aspen::linalg {
void addCodelets(Graph &graph) {
  ops::addCodelets(graph);
  aspen::detail::addLibraryCodelets(graph, "linalg");
}
} // namespace aspen::linalg
