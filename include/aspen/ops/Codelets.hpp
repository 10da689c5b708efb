// Adds the codelets of aspen::ops (popops::addCodelets) to a graph.
#pragma once

#include <aspen/Graph.hpp>

namespace aspen::ops {
void addCodelets(Graph &graph);
}
