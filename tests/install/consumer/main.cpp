// Uses an installed Aspen from C++17: a copy through a reversed view, a Gemm kernel, a
// matMul pinned to a library plan, and a block codelet from this project's own file; every
// result is compared with values computed by hand.
#include <aspen/BlockCodelets.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>

#include <cstdio>
#include <vector>

int main() {
  using namespace aspen;
  Device device = Device::createCPUDevice();
  Graph graph(device.getTarget());
  linalg::addCodelets(graph);
  graph.addCodelets(CONSUMER_BLOCK_CODELET);
  Tensor c = graph.addConstant<float>(FLOAT, {3}, {1.5f, 2.5f, 3.5f}, "c");
  Tensor v = graph.addVariable(FLOAT, {3}, "v");
  Tensor a = graph.addVariable(FLOAT, {2, 3}, "a"), b = graph.addVariable(FLOAT, {3, 2}, "b");
  Tensor ab = graph.addVariable(FLOAT, {2, 2}, "ab"), r = graph.addVariable(FLOAT, {8}, "r");
  for (const Tensor &t : {c, v, a, b, ab, r})
    graph.setTileMapping(t, 0);
  ComputeSet reverse = graph.addComputeSet("reverse");
  graph.setTileMapping(graph.addVertex(reverse, "Reverse", {{"in", r}, {"out", r}}), 0);
  program::Sequence prog{program::Copy(c.reverse(0), v), program::Gemm(a, b, ab),
                         program::Launch(reverse, {1, 8, 8 * sizeof(float)})};
  Tensor m = linalg::matMul(graph, ab, ab, prog, "m",
                            {{"planConstraints", R"({"method": "library"})"}});
  for (const char *name : {"a", "b", "r"})
    graph.createHostWrite(name, name[0] == 'a' ? a : name[0] == 'b' ? b : r);
  graph.createHostRead("v", v);
  graph.createHostRead("m", m);
  graph.createHostRead("r-read", r);
  Engine engine(graph, prog);
  engine.load(device);
  const std::vector<float> av{1, 2, 3, 4, 5, 6}, bv{1, 0, 0, 1, 1, 1},
      rv{0, 1, 2, 3, 4, 5, 6, 7};
  engine.writeTensor("a", av.data(), av.data() + av.size());
  engine.writeTensor("b", bv.data(), bv.data() + bv.size());
  engine.writeTensor("r", rv.data(), rv.data() + rv.size());
  engine.run(0);
  float out[3], mv[4], rr[8];
  engine.readTensor("v", out, out + 3);
  engine.readTensor("m", mv, mv + 4);
  engine.readTensor("r-read", rr, rr + 8);
  // a.b = [[4, 5], [10, 11]]; its square = [[66, 75], [150, 171]]; r reversed.
  bool ok = out[0] == 3.5f && out[1] == 2.5f && out[2] == 1.5f;
  ok = ok && mv[0] == 66 && mv[1] == 75 && mv[2] == 150 && mv[3] == 171;
  for (int i = 0; i < 8; ++i)
    ok = ok && rr[i] == float(7 - i);
  std::printf("%s\n", ok ? "consumer ok" : "consumer WRONG");
  return ok ? 0 : 1;
}
