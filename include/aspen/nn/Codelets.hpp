// Adds the codelets of aspen::nn, and those of aspen::ops it builds on (popnn::addCodelets).
#pragma once

#include <aspen/Graph.hpp>

namespace aspen::nn {
void addCodelets(Graph &graph);
}
