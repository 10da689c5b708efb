// poplar::append(t, u) without a dimension appends u as one more element of t's first
// dimension (Poplar's Tensor.hpp); append(t, u, d) along d. A u of the wrong shape raises
// poplar::shape_error.
#include "ModelGraph.hpp"

#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>

#include <cstdlib>
#include <iostream>
#include <vector>

namespace {
// The flat positions in `var` of t's elements, in order.
std::vector<std::size_t> positions(const poplar::Tensor &t) {
  std::vector<std::size_t> result;
  for (const auto &run : t.getVarRegions())
    for (std::size_t i = run.interval.begin(); i < run.interval.end(); ++i)
      result.push_back(i);
  return result;
}
} // namespace

int main() {
  ModelGraph model(4);
  poplar::Graph &graph = model.graph;
  poplar::Tensor ab = graph.addVariable(poplar::FLOAT, {8}, "ab");
  poplar::Tensor t = ab.slice(0, 6).reshape({2, 3}); // elements 0..5 of ab
  poplar::Tensor u = ab.slice(5, 8);                  // elements 5, 6, 7
  poplar::Tensor rows = poplar::append(t, u);
  bool ok = rows.shape() == std::vector<std::size_t>{3, 3} &&
            positions(rows) == std::vector<std::size_t>{0, 1, 2, 3, 4, 5, 5, 6, 7};
  poplar::Tensor cols = poplar::append(t, ab.slice(6, 8), 1); // a column of 6, 7
  ok = ok && cols.shape() == std::vector<std::size_t>{2, 4} &&
       positions(cols) == std::vector<std::size_t>{0, 1, 2, 6, 3, 4, 5, 7};
  bool refused = false;
  try {
    poplar::append(t, ab.slice(0, 2)); // a row of 2 onto rows of 3
  } catch (const poplar::shape_error &) {
    refused = true;
  }
  ok = ok && refused;
  std::cout << (ok ? "append_default_dim ok" : "append_default_dim FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
