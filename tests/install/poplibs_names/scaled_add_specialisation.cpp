// popops::ScaledAddSpecialisation and the scaledAddTo overloads taking it (popops/ScaledAdd.hpp):
// X_MINUS_AX_PLUS_BY computes A = A - scaleA * A + scaleB * B, DEFAULT A = scaleA * A + scaleB
// * B, with constant and with tensor scales; values worked out by hand (exact in float). A
// speciality that is neither enumerator raises poplar::invalid_option.
#include "ModelGraph.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <popops/ScaledAdd.hpp>
#include <popops/codelets.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

int main() {
  ModelGraph model(2);
  poplar::Graph &graph = model.graph;
  popops::addCodelets(graph);
  auto variable = [&](const char *name) {
    poplar::Tensor t = graph.addVariable(poplar::FLOAT, {4}, name);
    graph.setTileMapping(t.slice(0, 2), 0);
    graph.setTileMapping(t.slice(2, 4), 1);
    return t;
  };
  poplar::Tensor x = variable("x"), y = variable("y"), z = variable("z");
  poplar::Tensor a = graph.addConstant(poplar::FLOAT, {}, 0.25f, "a");
  poplar::Tensor b = graph.addConstant(poplar::FLOAT, {}, 2.0f, "b");
  graph.setTileMapping(a, 0);
  graph.setTileMapping(b, 1);
  poplar::program::Sequence prog;
  // x = x - 0.25 x + 0.5 y, z = z - 0.25 z + 2 y (tensor scales), y = 0.25 y + 2 x (DEFAULT).
  popops::scaledAddTo(graph, x, 0.25f, y, 0.5f, prog,
                      popops::ScaledAddSpecialisation::X_MINUS_AX_PLUS_BY, "xmax");
  popops::scaledAddTo(graph, z, a, y, b, prog, popops::ScaledAddSpecialisation::X_MINUS_AX_PLUS_BY,
                      "zmax");
  popops::scaledAddTo(graph, y, a, x, b, prog, popops::ScaledAddSpecialisation::DEFAULT,
                      "ydefault");
  for (const char *name : {"x", "y", "z"}) {
    poplar::Tensor t = std::string(name) == "x" ? x : std::string(name) == "y" ? y : z;
    graph.createHostWrite(std::string(name) + "_in", t);
    graph.createHostRead(std::string(name) + "_out", t);
  }
  bool refused = false;
  try {
    poplar::program::Sequence unused;
    popops::scaledAddTo(graph, x, 1.0f, y, 1.0f, unused,
                        static_cast<popops::ScaledAddSpecialisation>(7));
  } catch (const poplar::invalid_option &) {
    refused = true;
  }

  poplar::Engine engine(graph, prog);
  engine.load(model.device);
  const std::vector<float> x0{1, 2, 3, 4}, y0{10, 20, 30, 40}, z0{8, 4, -4, 0};
  engine.writeTensor("x_in", x0.data(), x0.data() + 4);
  engine.writeTensor("y_in", y0.data(), y0.data() + 4);
  engine.writeTensor("z_in", z0.data(), z0.data() + 4);
  engine.run(0);
  std::vector<float> x1(4), y1(4), z1(4);
  engine.readTensor("x_out", x1.data(), x1.data() + 4);
  engine.readTensor("y_out", y1.data(), y1.data() + 4);
  engine.readTensor("z_out", z1.data(), z1.data() + 4);
  // x: 0.75 x0 + 0.5 y0; z: 0.75 z0 + 2 y0; y: 0.25 y0 + 2 x1.
  const std::vector<float> x1Expected{5.75f, 11.5f, 17.25f, 23.0f};
  const std::vector<float> z1Expected{26.0f, 43.0f, 57.0f, 80.0f};
  const std::vector<float> y1Expected{14.0f, 28.0f, 42.0f, 56.0f};
  const bool ok = refused && x1 == x1Expected && z1 == z1Expected && y1 == y1Expected;
  std::cout << (ok ? "scaled_add_specialisation ok" : "scaled_add_specialisation FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
