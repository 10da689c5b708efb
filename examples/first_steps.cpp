// First steps with Aspen: variables and constants, copies into views, custom vertices from a
// codelet file, PrintTensor and host streams, run on the default device.
//
// Usage: first_steps [cpu|gpu]   (default: the default device: the first GPU when there is one,
// else the CPU executor modelling an H200). The printed values do not depend on the device.
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/Target.hpp>

#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::program;

namespace {
// The device named on the command line; "cpu" is the CPU executor modelling the H200 target that
// the default device models when there is no GPU.
Device deviceNamed(const std::string &name) {
  if (name.empty())
    return Device::createDefaultDevice();
  if (name == "cpu")
    return Device::createModelDevice(Target::createModel("h200"));
  if (name == "gpu")
    return Device::createGpuDevice(0);
  throw invalid_option("first_steps: unknown device '" + name + "' (expected 'cpu' or 'gpu')");
}

// The example's codelets: next to its source, or where ASPEN_EXAMPLES_DIR says (a bundle).
std::string codeletFile() {
  const char *dir = std::getenv("ASPEN_EXAMPLES_DIR");
  return std::string(dir && *dir ? dir : ASPEN_EXAMPLES_DIR) + "/codelets/first_steps_codelets.cpp";
}
} // namespace

int runExample(const std::string &deviceName) {
  Device device = deviceNamed(deviceName);
  std::cout << "Running on " << device.describe() << "\n";
  Graph graph(device.getTarget());
  graph.addCodelets(codeletFile());

  // A 4x4 matrix spread over four tiles, one row each.
  Tensor m = graph.addVariable(FLOAT, {4, 4}, "m");
  for (unsigned row = 0; row < 4; ++row)
    graph.setTileMapping(m[row], row);

  // Copies into views: a constant into the diagonal (every 5th element of the flattened matrix)
  // and, reversed, into the top of the last column. No data moves until the program runs.
  Tensor c = graph.addConstant<float>(FLOAT, {4}, {1, 2, 3, 4}, "c");
  graph.setTileMapping(c, 0);
  Sequence prog;
  prog.add(Copy(c, m.flatten().subSample(5, 0)));
  prog.add(Copy(c.reverse(0).slice(0, 3), m.slice({0, 3}, {3, 4}).flatten()));
  prog.add(PrintTensor("m", m));

  // A host stream feeds x; ScaleShift computes y = 2x + 1 on tile 0; y streams back.
  Tensor x = graph.addVariable(FLOAT, {4}, "x");
  Tensor y = graph.addVariable(FLOAT, {4}, "y");
  graph.setTileMapping(x, 0);
  graph.setTileMapping(y, 0);
  DataStream in = graph.addHostToDeviceFIFO("x-in", FLOAT, 4);
  DataStream out = graph.addDeviceToHostFIFO("y-out", FLOAT, 4);

  ComputeSet scale = graph.addComputeSet("scale");
  VertexRef scaler = graph.addVertex(scale, "ScaleShift", {{"in", x}, {"out", y}});
  graph.setInitialValue(scaler["scale"], 2.0f);
  graph.setInitialValue(scaler["offset"], 1.0f);
  graph.setTileMapping(scaler, 0);

  // RowSums (a MultiVertex: workers share the rows) adds up each row of m on its tile.
  Tensor sums = graph.addVariable(FLOAT, {4}, "row sums");
  ComputeSet rowSums = graph.addComputeSet("row sums");
  for (unsigned row = 0; row < 4; ++row) {
    graph.setTileMapping(sums[row], row);
    VertexRef v = graph.addVertex(rowSums, "RowSums");
    graph.connect(v["rows"], {m[row]});
    graph.connect(v["sums"], sums.slice(row, row + 1));
    graph.setTileMapping(v, row);
  }

  prog.add(Copy(in, x));
  prog.add(Execute(scale));
  prog.add(Execute(rowSums));
  prog.add(PrintTensor("y", y));
  prog.add(PrintTensor("row sums", sums));
  prog.add(Copy(y, out));

  Engine engine(graph, prog);
  engine.load(device);

  // Two runs through a circular input buffer of two chunks: each run takes the next chunk.
  std::vector<float> inputs = {0, 1, 2, 3, 10, 20, 30, 40};
  std::vector<float> result(4);
  engine.connectStream("x-in", inputs.data(), inputs.data() + inputs.size());
  engine.connectStream("y-out", result.data());
  for (int run = 0; run < 2; ++run) {
    engine.run(0);
    std::cout << "run " << run << ": y streamed back = [";
    for (float v : result)
      std::cout << ' ' << v;
    std::cout << " ]\n";
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 2) {
    std::cerr << "usage: first_steps [cpu|gpu]\n";
    return 2;
  }
  try {
    return runExample(argc == 2 ? argv[1] : "");
  } catch (const aspen::error &e) {
    std::cerr << "first_steps: " << e.what() << "\n";
    return 1;
  }
}
