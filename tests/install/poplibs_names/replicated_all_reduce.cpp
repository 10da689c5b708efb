// A replicated Poplar graph with a GCL all-reduce, built through Aspen::compat as C++17:
// poplar::replication_factor, Graph::addReplicationIndexConstant, gcl::allReduceInPlaceCrossReplica
// and gcl::CollectiveOperator; each replica's data and results through Aspen's replica forms of
// writeTensor and readTensor. The two replicas' sums and indices are checked against the host's.
#include <gcl/Collectives.hpp>
#include <poplar/Device.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>

#include <cstdlib>
#include <iostream>

int main() {
  using namespace poplar;
  Device device = Device::createCPUDevice();
  Graph graph(device, replication_factor(2));
  Tensor x = graph.addVariable(FLOAT, {3}, "x");
  graph.setTileMapping(x, 0);
  Tensor index = graph.addReplicationIndexConstant("index");
  graph.setTileMapping(index, 0);
  program::Sequence prog;
  gcl::allReduceInPlaceCrossReplica(graph, x, gcl::CollectiveOperator::ADD, prog, "sum");
  graph.createHostWrite("x", x);
  graph.createHostRead("sum", x);
  graph.createHostRead("index", index);
  Engine engine(graph, prog);
  engine.load(device);
  const float data[2][3] = {{1, 2, 3}, {10, 20, 30}};
  for (unsigned r = 0; r < 2; ++r)
    engine.writeTensor("x", r, data[r], data[r] + 3);
  engine.run();
  bool ok = graph.getReplicationFactor() == 2;
  for (unsigned r = 0; r < 2; ++r) {
    float sum[3];
    unsigned replica = 99;
    engine.readTensor("sum", r, sum, sum + 3);
    engine.readTensor("index", r, &replica, &replica + 1);
    ok = ok && replica == r;
    for (int i = 0; i < 3; ++i)
      ok = ok && sum[i] == data[0][i] + data[1][i];
  }
  std::cout << (ok ? "replicated_all_reduce ok" : "replicated_all_reduce FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
