// A Poplar host program in the style of the tutorials on devices, streams and multiple programs,
// built against include/compat with no source change. It looks for hardware and falls back to an
// IPUModel, builds four programs run by index, moves data through one-shot, circular and
// callback streams, reruns the programs from a serialized executable and checks the profile
// summary. Its output is compared with ported_streams.expected, worked out by hand.
#include <poplar/DeviceManager.hpp>
#include <poplar/Engine.hpp>
#include <poplar/Executable.hpp>
#include <poplar/Graph.hpp>
#include <poplar/IPUModel.hpp>
#include <poplar/OptionFlags.hpp>
#include <poplar/Program.hpp>
#include <poplar/StreamCallback.hpp>
#include <poplar/Target.hpp>
#include <poplar/exceptions.hpp>

#include <algorithm>
#include <memory>
#include <sstream>

using namespace poplar;
using namespace poplar::program;

enum Progs { WRITE_INPUTS, CUSTOM_PROG, READ_RESULTS, PRINT_STATE, NUM_PROGRAMS };

constexpr unsigned N = 6;

// Hardware first, as client code does; with no IPU to attach to, a two-tile IPUModel.
static Device getDevice() {
  auto manager = DeviceManager::createDeviceManager();
  auto devices = manager.getDevices(TargetType::IPU, 1);
  auto it = std::find_if(devices.begin(), devices.end(), [](Device &d) { return d.attach(); });
  Device device;
  if (it != devices.end()) {
    device = std::move(*it);
    std::cout << "Attached to IPU " << device.getId() << std::endl;
  } else {
    std::cout << "No IPU found, using IPUModel" << std::endl;
    IPUModel ipuModel;
    ipuModel.numIPUs = 1;
    ipuModel.tilesPerIPU = 2;
    ipuModel.relativeSyncDelay = IPUModel::RelativeSyncDelayType::NO_DELAY;
    device = ipuModel.createDevice();
  }
  return device;
}

static void printTargets() {
  Target ipu2 = Target::createIPUTarget(1, "ipu2");
  Target ipu1 = Target::createIPUTarget(1, "ipu1");
  Target pod = Target::createIPUTarget(2, 4, "ipu2");
  std::cout << "ipu2 tiles: " << ipu2.getNumTiles() << ", ipu1 tiles: " << ipu1.getNumTiles()
            << ", ipu2 bytes per tile: " << ipu2.getBytesPerTile() << "\n";
  std::cout << "2x4 target: " << pod.getNumTiles() << " tiles, " << pod.getNumIPUs()
            << " IPUs of " << pod.getTilesPerIPU() << "\n";
  std::cout << "workers: " << pod.getNumWorkerContexts()
            << ", exchange bytes per cycle: " << pod.getExchangeBytesPerCycle() << "\n";
  std::cout << "float: " << pod.getTypeSize(FLOAT) << " bytes, half: " << pod.getTypeSize(HALF)
            << " bytes\n";
  std::cout << "same target: " << (pod == Target::createIPUTarget(2, 4, "ipu2"))
            << ", different: " << (pod == ipu2) << "\n";
  IPUModel defaultModel;
  IPUModel mk1("ipu1");
  std::cout << "IPUModel() tilesPerIPU: " << defaultModel.tilesPerIPU
            << ", IPUModel(\"ipu1\") tiles: " << mk1.createDevice().getTarget().getNumTiles()
            << "\n";
  IPUModel twoChips;
  twoChips.numIPUs = 2;
  twoChips.tilesPerIPU = 3;
  std::cout << "IPUModel 2x3 tiles: " << twoChips.createDevice().getTarget().getNumTiles()
            << "\n";
}

static void printVector(const char *title, const std::vector<float> &v) {
  std::cout << title << ":";
  for (float f : v)
    std::cout << " " << f;
  std::cout << std::endl;
}

// Hands out N consecutive numbers a transfer, counting up from `first`.
class CountingSource : public StreamCallback {
public:
  explicit CountingSource(float first) : next_(first) {}
  Result prefetch(void *p) noexcept override {
    fill(p);
    return Result::Success;
  }
  void fetch(void *p) noexcept override { fill(p); }
  void complete() noexcept override {}

private:
  void fill(void *p) {
    float *out = static_cast<float *>(p);
    for (unsigned i = 0; i < N; ++i)
      out[i] = next_++;
  }
  float next_;
};

// Prints each transfer it receives.
class PrintingSink : public StreamCallback {
public:
  Result prefetch(void *) noexcept override { return Result::NotAvailable; }
  void fetch(void *p) noexcept override {
    const float *in = static_cast<const float *>(p);
    received_.assign(in, in + N);
  }
  void complete() noexcept override { printVector("callback received", received_); }

private:
  std::vector<float> received_;
};

int main(int argc, char **argv) {
  if (argc != 2) {
    std::cerr << "usage: ported_streams codelets.cpp\n";
    return 1;
  }
  printTargets();
  Device device = getDevice();
  std::cout << "Device tiles: " << device.getTarget().getNumTiles() << std::endl;

  Graph graph(device);
  graph.addCodelets(argv[1]);

  Tensor x = graph.addVariable(FLOAT, {N}, "x");
  Tensor y = graph.addVariable(FLOAT, {N}, "y");
  Tensor total = graph.addVariable(FLOAT, {}, "total");
  graph.setTileMapping(total, 0);

  // y = 2 x + 0.5, half of it on each tile; then total += sum(y) on tile 0.
  ComputeSet scaleCs = graph.addComputeSet("scale");
  for (unsigned tile = 0; tile < 2; ++tile) {
    Tensor xPart = x.slice(tile * N / 2, (tile + 1) * N / 2);
    Tensor yPart = y.slice(tile * N / 2, (tile + 1) * N / 2);
    graph.setTileMapping(xPart, tile);
    graph.setTileMapping(yPart, tile);
    VertexRef v = graph.addVertex(scaleCs, "ScaleOffset", {{"in", xPart}, {"out", yPart}});
    graph.setInitialValue(v["scale"], 2.0f);
    graph.setInitialValue(v["offset"], 0.5);
    graph.setTileMapping(v, tile);
    graph.setPerfEstimate(v, 20);
  }
  ComputeSet sumCs = graph.addComputeSet("sum");
  VertexRef acc = graph.addVertex(sumCs, "Accumulate");
  graph.connect(acc["in"], y);
  graph.connect(acc["total"], total);
  graph.setTileMapping(acc, 0);

  DataStream xStream = graph.addHostToDeviceFIFO("x", FLOAT, N);
  DataStream yStream = graph.addDeviceToHostFIFO("y", FLOAT, N);
  graph.createHostWrite("total-write", total);
  graph.createHostRead("total-read", total);

  std::vector<Program> progs(NUM_PROGRAMS);
  progs[WRITE_INPUTS] = Copy(xStream, x);
  progs[CUSTOM_PROG] = Sequence({Execute(scaleCs), Execute(sumCs)});
  progs[READ_RESULTS] = Copy(y, yStream);
  progs[PRINT_STATE] =
      Sequence({PrintTensor("x", x), PrintTensor("y", y.reshape({2, 3})),
                PrintTensor("total", total)});

  OptionFlags engineOptions{{"debug.instrument", "true"}};
  engineOptions.set("debug.retainDebugInformation", "true");
  for (const auto &option : engineOptions)
    std::cout << "option " << option.first << " = " << option.second << "\n";

  auto engine = Engine{graph, progs, {{"debug.instrument", "true"}}};
  engine.load(device);
  std::ostringstream printed;
  engine.setPrintStream(printed);

  // One-shot buffers: every transfer uses the whole buffer.
  float zero = 0;
  engine.writeTensor("total-write", &zero, &zero + 1);
  std::vector<float> xs{1, 2, 3, 4, 5, 6}, ys(N);
  engine.connectStream("x", xs.data());
  engine.connectStream("y", ys.data());
  engine.run(WRITE_INPUTS);
  engine.run(CUSTOM_PROG);
  engine.run(READ_RESULTS);
  printVector("one-shot", ys);
  engine.run(PRINT_STATE);
  std::cout << "captured by setPrintStream:\n" << printed.str();

  // A circular buffer of two transfers: the third run wraps back to the first.
  std::vector<float> ring{10, 11, 12, 13, 14, 15, 20, 21, 22, 23, 24, 25};
  engine.connectStream("x", ring.data(), ring.data() + ring.size());
  for (unsigned round = 0; round < 3; ++round) {
    engine.run(WRITE_INPUTS);
    engine.run(CUSTOM_PROG);
    engine.run(READ_RESULTS);
    printVector("circular", ys);
  }
  float hostTotal = 0;
  engine.readTensor("total-read", &hostTotal, &hostTotal + 1);
  std::cout << "total: " << hostTotal << std::endl;

  // Callbacks in place of buffers, reconnected between runs.
  engine.connectStreamToCallback("x", std::make_unique<CountingSource>(100));
  engine.connectStreamToCallback("y", std::make_unique<PrintingSink>());
  for (unsigned round = 0; round < 2; ++round) {
    engine.run(WRITE_INPUTS);
    engine.run(CUSTOM_PROG);
    engine.run(READ_RESULTS);
  }

  std::ostringstream summary;
  engine.printProfileSummary(summary, {{"showExecutionSteps", "true"}});
  const bool hasMemory = summary.str().find("Memory Usage:") != std::string::npos;
  std::cout << "profile summary has Memory Usage: " << (hasMemory ? "yes" : "no") << std::endl;

  try {
    engine.run(NUM_PROGRAMS);
    std::cout << "run(NUM_PROGRAMS) ran\n";
  } catch (const poplar_error &e) {
    std::cout << "run(NUM_PROGRAMS): poplar_error caught" << std::endl;
  }

  // The same programs compiled once, serialized, and run from the restored executable.
  Executable exe = compileGraph(graph, progs);
  std::stringstream blob;
  exe.serialize(blob);
  Executable restored = Executable::deserialize(blob);
  Engine replay(std::move(restored));
  replay.load(device);
  float start = 100;
  replay.writeTensor("total-write", &start, &start + 1);
  std::vector<float> xs2{-1, -0.5, 0, 0.5, 1, 1.5};
  replay.connectStream("x", xs2.data());
  replay.connectStream("y", ys.data());
  replay.run(WRITE_INPUTS);
  replay.run(CUSTOM_PROG);
  replay.run(READ_RESULTS);
  printVector("from executable", ys);
  replay.run(PRINT_STATE);

  std::cout << "Program complete" << std::endl;
  return 0;
}
