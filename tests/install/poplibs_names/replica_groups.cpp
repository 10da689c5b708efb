// GCL's replica groups and Poplar's BROADCAST streams, built through Aspen::compat as C++17:
// gcl::CommGroup{gcl::CommGroupType::ORTHOGONAL, 2} on gcl::allReduceCrossReplica over four
// replicas, gcl::allToAllCrossReplica, and addHostToDeviceFIFO(..., ReplicatedStreamMode::
// BROADCAST) connected once for every replica. Each replica's sums (its orthogonal pair's:
// {0, 2} and {1, 3}) and exchanged rows are checked against the host's.
#include <gcl/Collectives.hpp>
#include <poplar/Device.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/ReplicatedStreamMode.hpp>

#include <cstdlib>
#include <iostream>

int main() {
  using namespace poplar;
  Device device = Device::createCPUDevice();
  Graph graph(device, replication_factor(4));
  Tensor x = graph.addVariable(FLOAT, {4}, "x");
  Tensor scale = graph.addVariable(FLOAT, {4}, "scale");
  graph.setTileMapping(x, 0);
  graph.setTileMapping(scale, 0);
  program::Sequence prog;
  prog.add(program::Copy(
      graph.addHostToDeviceFIFO("scale", FLOAT, 4, ReplicatedStreamMode::BROADCAST), scale));
  Tensor pairs = gcl::allReduceCrossReplica(graph, x, gcl::CollectiveOperator::ADD, prog,
                                            {gcl::CommGroupType::ORTHOGONAL, 2}, "pairs");
  Tensor rows = gcl::allToAllCrossReplica(graph, x, prog, {}, "rows");
  graph.createHostWrite("x", x);
  graph.createHostRead("pairs", pairs);
  graph.createHostRead("rows", rows);
  graph.createHostRead("scaleOut", scale);
  Engine engine(graph, prog);
  engine.load(device);
  float data[4][4];
  for (unsigned r = 0; r < 4; ++r) {
    for (unsigned i = 0; i < 4; ++i)
      data[r][i] = float(10 * r + i);
    engine.writeTensor("x", r, data[r], data[r] + 4);
  }
  float shared[4] = {0.5f, 1.5f, 2.5f, 3.5f};
  engine.connectStream("scale", shared);
  engine.run();
  bool ok = true;
  for (unsigned r = 0; r < 4; ++r) {
    float sum[4], row[4], s[4];
    engine.readTensor("pairs", r, sum, sum + 4);
    engine.readTensor("rows", r, row, row + 4);
    engine.readTensor("scaleOut", r, s, s + 4);
    for (unsigned i = 0; i < 4; ++i)
      ok = ok && sum[i] == data[r][i] + data[r ^ 2][i] && row[i] == data[i][r] &&
           s[i] == shared[i];
  }
  std::cout << (ok ? "replica_groups ok" : "replica_groups FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
