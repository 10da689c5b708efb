// A small Poplar-style program using the PopLibs header names of the data-movement builders
// (popops/Fill, Zero, Iota, ScaledAdd, DynamicSlice, Pad, Loop.hpp) through include/compat.
#include <poplar/DeviceManager.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <popops/DynamicSlice.hpp>
#include <popops/Fill.hpp>
#include <popops/Iota.hpp>
#include <popops/Loop.hpp>
#include <popops/Pad.hpp>
#include <popops/ScaledAdd.hpp>
#include <popops/Zero.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <catch2/catch.hpp>

using namespace poplar;
using namespace poplar::program;

TEST_CASE("a Poplar-style program runs through the popops data-movement headers",
          "[correctness][loop][compat]") {
  IPUModel ipuModel;
  Device device = ipuModel.createDevice();
  Graph graph(device.getTarget());
  popops::addCodelets(graph);

  Tensor table = graph.addVariable(FLOAT, {8, 4}, "table");
  Tensor acc = graph.addVariable(FLOAT, {1, 4}, "acc");
  Tensor ids = graph.addVariable(UNSIGNED_INT, {8}, "ids");
  Tensor idSum = graph.addVariable(UNSIGNED_INT, {1}, "idSum");
  Tensor out = graph.addVariable(FLOAT, {1, 5}, "out");
  for (const Tensor &t : {table, acc, ids, idSum, out})
    poputil::mapTensorLinearly(graph, t);

  Sequence prog;
  popops::fill(graph, table, prog, 0.5f);
  popops::zero(graph, acc, prog);
  popops::zero(graph, idSum, prog);
  popops::iota(graph, ids, 0u, prog);
  // Rows and ids 0, 2, 4, 6 are summed, the offsets coming from the loop index on device.
  prog.add(popops::countedLoop(graph, 0, 8, 2, [&](const Tensor &i) {
    Sequence body;
    Tensor row = popops::dynamicSlice(graph, table, i, {0}, {1}, body, "row");
    Tensor id = popops::dynamicSlice(graph, ids, i, {0}, {1}, body, "id");
    popops::scaledAddTo(graph, acc, row, 1.0f, body, "acc", {{"optimizeForSpeed", "true"}});
    popops::scaledAddTo(graph, idSum, id, 1.0f, body);
    return body;
  }));
  prog.add(Copy(popops::pad(graph, acc, {0, 0}, {0, 1}, 7.0f), out));
  graph.createHostRead("out", out);
  graph.createHostRead("idSum", idSum);

  Engine engine(graph, prog);
  engine.load(device);
  engine.run(0);
  std::vector<float> result(5);
  engine.readTensor("out", result.data(), result.data() + result.size());
  REQUIRE(result == std::vector<float>{2, 2, 2, 2, 7});
  unsigned sum = 0;
  engine.readTensor("idSum", &sum, &sum + 1);
  REQUIRE(sum == 12u);
}
