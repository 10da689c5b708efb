#include "core/LibraryCodelets.hpp"

#include <aspen/nn/Codelets.hpp>
#include <aspen/ops/Codelets.hpp>

namespace aspen::nn {
void addCodelets(Graph &graph) {
  ops::addCodelets(graph);
  detail::addLibraryCodelets(graph, "nn");
}
} // namespace aspen::nn
