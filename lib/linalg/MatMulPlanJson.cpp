// How plans and their parameters print and compare: MatMulPlan::toString (aligned text),
// toJson (the plan and its derived numbers), constraintsJson (only the pinnable keys, which fed
// back as option "planConstraints" reproduce the plan), and MatMulParams' ordering.
#include "support/Json.hpp"

#include <aspen/linalg/MatMulPlan.hpp>

#include <fmt/format.h>

#include <tuple>

namespace aspen::linalg {

namespace json = aspen::support::json;

namespace {

auto tie(const MatMulParams &p) {
  return std::tie(p.inputType, p.outputType, p.aShape, p.bShape);
}

json::Value number(std::uint64_t n) { return json::Value::number(n); }

json::Value pinnable(const MatMulPlan &plan) {
  json::Value root = json::Value::object();
  root.set("method", json::Value::string(toString(plan.method)));
  if (plan.method == MatMulMethod::Library) { // one call: nothing is split
    root.set("partialsType", json::Value::string(plan.partialsType.toString()));
    return root;
  }
  root.set("partition", json::Value::object({{"groups", number(plan.partition.groups)},
                                             {"m", number(plan.partition.m)},
                                             {"k", number(plan.partition.k)},
                                             {"n", number(plan.partition.n)}}));
  root.set("serial", json::Value::object({{"m", number(plan.serial.m)},
                                          {"k", number(plan.serial.k)},
                                          {"n", number(plan.serial.n)}}));
  root.set("partialsType", json::Value::string(plan.partialsType.toString()));
  return root;
}

} // namespace

const char *toString(MatMulMethod method) {
  return method == MatMulMethod::Library ? "library" : "vertices";
}

bool operator<(const MatMulParams &a, const MatMulParams &b) { return tie(a) < tie(b); }
bool operator==(const MatMulParams &a, const MatMulParams &b) { return tie(a) == tie(b); }

std::string MatMulPlan::constraintsJson() const { return pinnable(*this).write(); }

std::string MatMulPlan::toJson() const {
  json::Value root = pinnable(*this);
  root.set("params", json::Value::object({{"G", number(G)},
                                          {"M", number(M)},
                                          {"K", number(K)},
                                          {"N", number(N)},
                                          {"inputType", json::Value::string(inputType.toString())},
                                          {"outputType",
                                           json::Value::string(outputType.toString())}}));
  root.set("tilesUsed", number(tilesUsed));
  root.set("maxTileBytes", number(maxTileBytes));
  root.set("meanTileBytes", json::Value::number(meanTileBytes));
  root.set("exchangeBytes", number(exchangeBytes));
  root.set("estimatedCycles", number(estimatedCycles));
  return root.write();
}

std::string MatMulPlan::toString() const {
  return fmt::format(
      "matMul plan: {}, G {} x M {} x K {} x N {}, {} inputs, {} partials, {} output\n"
      "  partition   groups {}, m {}, k {}, n {} ({} tiles)\n"
      "  serial      m {}, k {}, n {} ({} steps)\n"
      "  tile bytes  max {}, mean {:.0f}\n"
      "  exchange    {} bytes\n"
      "  cycles      {} (estimated)\n",
      linalg::toString(method), G, M, K, N, inputType.toString(), partialsType.toString(),
      outputType.toString(),
      partition.groups, partition.m, partition.k, partition.n, tilesUsed, serial.m, serial.k,
      serial.n, serialSteps(), maxTileBytes, meanTileBytes, exchangeBytes, estimatedCycles);
}

} // namespace aspen::linalg
