// Adds the codelets of aspen::linalg (poplin::addCodelets) to a graph: the matmul block product
// and partial-sum reduction vertices (codelets/linalg/matmul.cpp), and aspen::ops' codelets,
// which matmuls use too.
#pragma once

#include <aspen/Graph.hpp>

namespace aspen::linalg {
void addCodelets(Graph &graph);
}
