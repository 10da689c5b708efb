// Adds the codelets of aspen::ops (popops::addCodelets) to a graph.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>

namespace aspen::ops {
ASPEN_API void addCodelets(Graph &graph);
}
