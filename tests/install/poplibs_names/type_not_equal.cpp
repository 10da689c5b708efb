// PopLibs programs compare Type, Target, Tensor and OptionFlags with != (C++17 has no rewritten
// comparisons, so each needs its own operator!=).
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/OptionFlags.hpp>

#include <cstdlib>
#include <iostream>

int main() {
  using namespace poplar;
  Type dataType = HALF;
  bool ok = dataType != FLOAT && !(dataType != HALF);
  IPUModel model;
  Device device = model.createDevice();
  Target target = device.getTarget();
  ok = ok && !(target != device.getTarget());
  Graph graph(target);
  Tensor a = graph.addVariable(FLOAT, {4}, "a");
  Tensor b = graph.addVariable(FLOAT, {4}, "b");
  ok = ok && a != b && !(a != a);
  OptionFlags x{{"availableMemoryProportion", "0.5"}}, y;
  ok = ok && x != y && !(x != x);
  std::cout << (ok ? "type_not_equal ok" : "type_not_equal FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
