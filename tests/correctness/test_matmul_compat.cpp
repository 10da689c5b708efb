// A Poplar-style matmul through include/compat: poplin::matMul with a debug string (which must
// pick the DebugContext overload, not the output-type one), matMulAcc and createMatMulInputLHS.
#include "TestDevice.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplin/MatMul.hpp>
#include <poplin/codelets.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <vector>

TEST_CASE("poplin matMul and matMulAcc through the compat headers", "[correctness][matmul]") {
  poplar::Graph graph(poplar::Target::createGeneric(4));
  popops::addCodelets(graph);
  poplin::addCodelets(graph);
  poplin::PlanningCache cache;
  poplar::Tensor A =
      poplin::createMatMulInputLHS(graph, poplar::FLOAT, {2, 3}, {3, 2}, "A", {}, &cache);
  poplar::Tensor B = graph.addVariable(poplar::FLOAT, {3, 2}, "B");
  poputil::mapTensorLinearly(graph, B);
  poplar::program::Sequence prog;
  poplar::Tensor C = poplin::matMul(graph, A, B, prog, "m4");
  poplin::matMulAcc(graph, C, 2.0f, A, B, prog, "acc", {{"partialsType", "float"}}, &cache);
  graph.createHostWrite("A", A);
  graph.createHostWrite("B", B);
  graph.createHostRead("C", C);
  poplar::Engine engine(graph, prog);
  engine.load(aspen::test::deviceFor(graph.getTarget()));
  const std::vector<float> a{1, 2, 3, 4, 5, 6}, b{1, 0, 0, 1, 1, 1};
  engine.writeTensor("A", a.data(), a.data() + a.size());
  engine.writeTensor("B", b.data(), b.data() + b.size());
  engine.run();
  std::vector<float> c(4);
  engine.readTensor("C", c.data(), c.data() + c.size());
  // A.B = [[4, 5], [10, 11]]; C = A.B + 2 A.B.
  REQUIRE(c == std::vector<float>{12, 15, 30, 33});
}
