// A host program written against Poplar's API (a tutorial-style first program), built against
// Aspen's include/compat with no source change. Its output is compared with expected_output.txt.
#include <poplar/DeviceManager.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/exceptions.hpp>

using namespace poplar;
using namespace poplar::program;

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: ported_program codelets.cpp\n";
    return 1;
  }
  IPUModel ipuModel;
  ipuModel.tilesPerIPU = 8;
  Device device = ipuModel.createDevice();
  Target target = device.getTarget();
  std::cout << "Tiles: " << target.getNumTiles()
            << ", workers: " << target.getNumWorkerContexts() << "\n";

  Graph graph(target);
  graph.addCodelets(argv[1]);

  Tensor v1 = graph.addVariable(FLOAT, {4}, "v1");
  Tensor v2 = graph.addVariable(FLOAT, {4}, "v2");
  for (unsigned i = 0; i < 4; ++i) {
    graph.setTileMapping(v1[i], i);
    graph.setTileMapping(v2[i], i);
  }
  Tensor v3 = graph.addVariable(FLOAT, {4, 4}, "v3");
  Tensor v4 = graph.addVariable(INT, {10}, "v4");
  graph.setTileMapping(v3, 0);
  graph.setTileMapping(v4, 0);

  Tensor c1 = graph.addConstant<float>(FLOAT, {4}, {1.0, 1.5, 2.0, 2.5});
  graph.setTileMapping(c1, 0);

  Sequence prog;
  prog.add(Copy(c1, v1));
  prog.add(PrintTensor("v1-debug", v1));
  prog.add(Copy(v1, v2));
  prog.add(PrintTensor("v2-debug", v2));

  graph.createHostWrite("v3-write", v3);
  graph.createHostRead("v3-read", v3);
  prog.add(Copy(v1.slice(0, 3), v3.slice({1, 1}, {2, 4})));

  // A vertex from the Poplar-style codelet file sums v1 into a scalar.
  Tensor total = graph.addVariable(FLOAT, {}, "total");
  graph.setTileMapping(total, 0);
  ComputeSet cs = graph.addComputeSet("sum");
  VertexRef vtx = graph.addVertex(cs, "SumVertex", {{"in", v1}, {"out", total}});
  graph.setTileMapping(vtx, 0);
  prog.add(Execute(cs));
  prog.add(PrintTensor("total", total));

  DataStream inStream = graph.addHostToDeviceFIFO("v4-input-stream", INT, 10);
  prog.add(Copy(inStream, v4));
  prog.add(PrintTensor("v4-0", v4));
  prog.add(Copy(inStream, v4));
  prog.add(PrintTensor("v4-1", v4));

  Engine engine(graph, prog);
  engine.load(device);

  std::vector<float> h3(4 * 4, 0);
  engine.writeTensor("v3-write", h3.data(), h3.data() + h3.size());
  std::vector<int> inData(10 * 3);
  for (unsigned i = 0; i < 10 * 3; ++i)
    inData[i] = i;
  engine.connectStream("v4-input-stream", &inData[0], &inData[10 * 3]);

  engine.run(0);
  engine.readTensor("v3-read", h3.data(), h3.data() + h3.size());
  std::cout << "\nh3 data:\n";
  for (unsigned i = 0; i < 4; ++i) {
    std::cout << "  ";
    for (unsigned j = 0; j < 4; ++j)
      std::cout << h3[i * 4 + j] << " ";
    std::cout << "\n";
  }

  // The circular stream buffer carries on from where the first run stopped.
  engine.run(0);

  try {
    graph.addVariable(FLOAT, {2}, "late").slice(0, 5);
  } catch (const poplar_error &e) {
    std::cout << "poplar_error caught\n";
  }
  std::cout << "Program complete\n";
  return 0;
}
