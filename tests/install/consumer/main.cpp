// Uses an installed Aspen: builds a graph with a copy and reads the result back.
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <cstdio>

int main() {
  using namespace aspen;
  Device device = Device::createCPUDevice();
  Graph graph(device.getTarget());
  Tensor c = graph.addConstant<float>(FLOAT, {3}, {1.5f, 2.5f, 3.5f}, "c");
  Tensor v = graph.addVariable(FLOAT, {3}, "v");
  graph.setTileMapping(c, 0);
  graph.setTileMapping(v, 0);
  graph.createHostRead("v", v);
  Engine engine(graph, program::Copy(c.reverse(0), v));
  engine.load(device);
  engine.run(0);
  float out[3];
  engine.readTensor("v", out, out + 3);
  const bool ok = out[0] == 3.5f && out[1] == 2.5f && out[2] == 1.5f;
  std::printf("%s\n", ok ? "consumer ok" : "consumer WRONG");
  return ok ? 0 : 1;
}
