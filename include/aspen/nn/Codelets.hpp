// Adds the codelets of aspen::nn and of the libraries it builds on, aspen::linalg and aspen::ops
// (popnn::addCodelets): everything the nn builders, the recurrent layers included, need.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/Graph.hpp>

namespace aspen::nn {
ASPEN_API void addCodelets(Graph &graph);
}
