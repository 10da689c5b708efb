// The matrix product aspen-plan plans: C[G,M,N] = A[G,M,K] . B[G,K,N] with poplin's planner
// (aspen::linalg::matMul, or matMulGrouped when G > 1), its inputs made by
// createMatMulInputLHS/RHS so that they have the plan's layout.
#pragma once

#include "rnn_common/LayerDriver.hpp"

#include <aspen/linalg/MatMul.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace matmullayer {

using namespace rnnlayer;

// The sizes live in CommonConfig's fields so that the shared flag parser reads them:
// M = batchSize, K = inputSize, N = outputSize; groups is G.
struct Config : CommonConfig {
  std::size_t groups = 1;
  std::size_t m() const { return batchSize; }
  std::size_t k() const { return inputSize; }
  std::size_t n() const { return outputSize; }
};

// The shared flags a product has (help, data and partials types, the memory proportion) and its
// own.
inline std::vector<Flag<Config>> layerFlagTable() {
  using F = Flag<Config>;
  const std::vector<std::string> shared = {"help", "data-type", "partials-type",
                                           "available-memory-proportion"};
  std::vector<F> t;
  for (F &f : layerFlags<Config>("matmul"))
    if (std::find(shared.begin(), shared.end(), f.name) != shared.end())
      t.push_back(std::move(f));
  const std::vector<F> own = {
      F{"m", "64", "M, the rows of A and C",
        [](Config &c, auto &f, auto &v) { c.batchSize = parsePositive(f, v); }},
      F{"k", "64", "K, the columns of A and rows of B",
        [](Config &c, auto &f, auto &v) { c.inputSize = parsePositive(f, v); }},
      F{"n", "64", "N, the columns of B and C",
        [](Config &c, auto &f, auto &v) { c.outputSize = parsePositive(f, v); }},
      F{"groups", "1", "G, independent products (matMulGrouped when above 1)",
        [](Config &c, auto &f, auto &v) { c.groups = parsePositive(f, v); }},
      F{"pass", nullptr,
        "INFERENCE_FWD | TRAINING_FWD | TRAINING_BWD | TRAINING_WU (option fullyConnectedPass)",
        layerOption<Config>("fullyConnectedPass",
                            [](auto &f, auto &v) {
                              return parseChoice(f, v,
                                                 {"NONE", "INFERENCE_FWD", "TRAINING_FWD",
                                                  "TRAINING_BWD", "TRAINING_WU"});
                            })},
  };
  t.insert(t.end(), own.begin(), own.end());
  return t;
}

inline std::vector<std::size_t> aShape(const Config &c) {
  return c.groups > 1 ? std::vector<std::size_t>{c.groups, c.m(), c.k()}
                      : std::vector<std::size_t>{c.m(), c.k()};
}
inline std::vector<std::size_t> bShape(const Config &c) {
  return c.groups > 1 ? std::vector<std::size_t>{c.groups, c.k(), c.n()}
                      : std::vector<std::size_t>{c.k(), c.n()};
}

// The product's graph: inputs A and B, result C. `plan` receives the planner's choice.
inline BuiltLayer build(aspen::Graph &graph, const Config &c, aspen::linalg::PlanningCache &cache,
                        aspen::linalg::MatMulPlan &plan) {
  using namespace aspen;
  namespace linalg = aspen::linalg;
  const Type type = c.dataType;
  const OptionFlags &options = c.layerOptions;
  plan = linalg::getMatMulPlan(graph, type, type, aShape(c), bShape(c), options, &cache);
  BuiltLayer layer;
  Tensor a, b, result;
  if (c.groups > 1) {
    a = linalg::createMatMulGroupedInputLHS(graph, type, type, aShape(c), bShape(c), "A", options,
                                            &cache);
    b = linalg::createMatMulGroupedInputRHS(graph, type, type, aShape(c), bShape(c), "B", options,
                                            &cache);
    result = linalg::matMulGrouped(graph, a, b, layer.program, type, "C", options, &cache);
  } else {
    a = linalg::createMatMulInputLHS(graph, type, type, aShape(c), bShape(c), "A", options,
                                     &cache);
    b = linalg::createMatMulInputRHS(graph, type, type, aShape(c), bShape(c), "B", options,
                                     &cache);
    result = linalg::matMul(graph, a, b, layer.program, type, "C", options, &cache);
  }
  layer.inputs = {{"A", a}, {"B", b}};
  layer.results = {{"C", result}};
  layer.flops = 2 * std::uint64_t(c.groups) * c.m() * c.k() * c.n();
  addHostHandles(graph, layer);
  return layer;
}

} // namespace matmullayer
