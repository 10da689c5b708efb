#include "layersupport/AddLibraryCodelets.hpp"

#include <aspen/linalg/Codelets.hpp>
#include <aspen/nn/Codelets.hpp>

namespace aspen::nn {
// Every codelet library the nn builders use: the recurrent layers call linalg's matmuls, which
// need ops' vertices in turn (linalg::addCodelets adds them).
void addCodelets(Graph &graph) {
  linalg::addCodelets(graph);
  detail::addLibraryCodelets(graph, "nn");
}
} // namespace aspen::nn
