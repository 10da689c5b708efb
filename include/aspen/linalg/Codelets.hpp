// Adds the codelets of aspen::linalg (poplin::addCodelets) to a graph: the matmul block product
// and partial-sum reduction vertices (codelets/linalg/matmul.cpp), and aspen::ops' codelets,
// which matmuls use too.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>

namespace aspen::linalg {
ASPEN_API void addCodelets(Graph &graph);
}
