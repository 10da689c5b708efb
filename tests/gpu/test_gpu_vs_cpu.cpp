// The same graph run on the CPU model device (the reference executor) and on the GPU in both
// control-flow modes ("graph": the whole program as one CUDA graph; "host": driven from the host),
// results compared: byte for byte for integer, copy and control-flow programs, within 1e-6
// relative for float arithmetic (vertices, element-wise ops, a fused expression, reduce, softmax,
// matMul). Hand-computed values check the CPU side too, so a test cannot
// pass by both backends agreeing on nonsense. Every test here needs a GPU and prints
// ASPEN-SKIPPED without one (CTest: "Skipped").
#include "TestDevice.hpp"
#include "TestPaths.hpp"
#include "TestRandom.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using namespace aspen;
using namespace aspen::program;
using aspen::test::skipWithoutGpu;

namespace {

using Bytes = std::vector<std::uint8_t>;

enum class Backend { Cpu, GpuGraph, GpuHost };
const Backend kGpuBackends[] = {Backend::GpuGraph, Backend::GpuHost};

const char *nameOf(Backend b) {
  return b == Backend::Cpu ? "cpu model" : b == Backend::GpuGraph ? "gpu, graph" : "gpu, host";
}

OptionFlags optionsFor(Backend b) {
  if (b == Backend::Cpu)
    return {};
  return {{"aspen.cuda.controlFlow", b == Backend::GpuGraph ? "graph" : "host"}};
}

Device deviceFor(Backend b, const Graph &g) {
  return b == Backend::Cpu ? Device::createModelDevice(g.getTarget()) : Device::createGpuDevice(0);
}

template <class T> Bytes bytesOf(const std::vector<T> &v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

template <class T> std::vector<T> valuesOf(const Bytes &b) {
  std::vector<T> v(b.size() / sizeof(T));
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

// One run: host writes first (handle, bytes), then program `program`.
struct Step {
  std::vector<std::pair<std::string, Bytes>> writes;
  unsigned program = 0;
};

// Runs the steps on one engine (memory persists between them) and reads every handle of `reads`
// (handle, bytes) after each step: result[step][read].
std::vector<std::vector<Bytes>> runSteps(Backend backend, Graph &g,
                                         const std::vector<Program> &programs,
                                         const std::vector<Step> &steps,
                                         const std::vector<std::pair<std::string, std::size_t>> &reads) {
  Engine e(g, programs, optionsFor(backend));
  e.load(deviceFor(backend, g));
  std::vector<std::vector<Bytes>> results;
  for (const Step &step : steps) {
    for (const auto &[handle, bytes] : step.writes)
      e.writeTensor(handle, bytes.data(), bytes.data() + bytes.size());
    e.run(step.program);
    std::vector<Bytes> afterStep;
    for (const auto &[handle, size] : reads) {
      Bytes b(size);
      e.readTensor(handle, b.data(), b.data() + size);
      afterStep.push_back(std::move(b));
    }
    results.push_back(std::move(afterStep));
  }
  return results;
}

// Runs on the CPU and on the GPU in both modes; every GPU byte must equal the CPU's. Returns the
// CPU results for hand-computed checks.
std::vector<std::vector<Bytes>> requireIdentical(Graph &g, const std::vector<Program> &programs,
                                                 const std::vector<Step> &steps,
                                                 const std::vector<std::pair<std::string, std::size_t>> &reads) {
  const auto cpu = runSteps(Backend::Cpu, g, programs, steps, reads);
  for (Backend b : kGpuBackends) {
    const auto gpu = runSteps(b, g, programs, steps, reads);
    for (std::size_t s = 0; s < steps.size(); ++s)
      for (std::size_t r = 0; r < reads.size(); ++r) {
        INFO(nameOf(b) << ", step " << s << ", handle " << reads[r].first);
        REQUIRE(gpu[s][r] == cpu[s][r]);
      }
  }
  return cpu;
}

// |gpu - cpu| <= 1e-6 * max(|gpu|, |cpu|) element by element; both finite.
void requireClose(const std::vector<float> &gpu, const std::vector<float> &cpu, const std::string &what) {
  REQUIRE(gpu.size() == cpu.size());
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    INFO(what << " element " << i << ": gpu " << gpu[i] << ", cpu " << cpu[i]);
    REQUIRE(std::isfinite(cpu[i]));
    REQUIRE(std::fabs(double(gpu[i]) - double(cpu[i])) <=
            1e-6 * std::max(std::fabs(double(gpu[i])), std::fabs(double(cpu[i]))));
  }
}

// Float results of the CPU and of both GPU modes for handles holding `sizes` floats each; the GPU
// must be within 1e-6 relative of the CPU. Returns the CPU values.
std::vector<std::vector<float>> requireCloseFloats(Graph &g, const Program &program,
                                                   const std::vector<std::pair<std::string, Bytes>> &writes,
                                                   const std::vector<std::pair<std::string, std::size_t>> &floatReads) {
  std::vector<std::pair<std::string, std::size_t>> reads;
  for (const auto &[handle, n] : floatReads)
    reads.emplace_back(handle, n * sizeof(float));
  const std::vector<Step> steps = {{writes, 0}};
  const auto cpu = runSteps(Backend::Cpu, g, {program}, steps, reads);
  std::vector<std::vector<float>> cpuValues;
  for (const Bytes &b : cpu[0])
    cpuValues.push_back(valuesOf<float>(b));
  for (Backend b : kGpuBackends) {
    const auto gpu = runSteps(b, g, {program}, steps, reads);
    for (std::size_t r = 0; r < reads.size(); ++r)
      requireClose(valuesOf<float>(gpu[0][r]), cpuValues[r], std::string(nameOf(b)) + " " + reads[r].first);
  }
  return cpuValues;
}

using aspen::test::randomFloats;

// A scalar on `tile` with a write handle `name` and a read handle `name`-read.
Tensor scalar(Graph &g, Type type, const std::string &name, unsigned tile) {
  Tensor t = g.addVariable(type, {}, name);
  g.setTileMapping(t, tile);
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
  return t;
}

Tensor intConstant(Graph &g, int value, unsigned tile) {
  Tensor c = g.addConstant(INT, {}, value);
  g.setTileMapping(c, tile);
  return c;
}

Graph programGraph(unsigned tiles) {
  Graph g(Target::createGeneric(tiles));
  g.addCodelets(aspen::test::codelet("prog_basic.cpp"));
  return g;
}

} // namespace

TEST_CASE("gpu and cpu agree exactly on Repeat, RepeatWhileTrue/False, If, Switch and nesting",
          "[gpu]") {
  if (skipWithoutGpu())
    return;
  // count/more/done: a Counter with limit 4 on tile 2; x and y incremented on tiles 1 and 3.
  Graph g = programGraph(4);
  Tensor count = scalar(g, INT, "count", 2), more = scalar(g, BOOL, "more", 2);
  Tensor done = scalar(g, BOOL, "done", 2), x = scalar(g, INT, "x", 1), y = scalar(g, INT, "y", 3);
  Tensor flag = scalar(g, BOOL, "flag", 0), control = scalar(g, INT, "control", 0);
  ComputeSet step = g.addComputeSet("count"), incX = g.addComputeSet("incX"),
             incY = g.addComputeSet("incY");
  VertexRef counter = g.addVertex(step, "Counter", {{"count", count}, {"more", more}, {"done", done}});
  g.setInitialValue(counter["limit"], 4);
  g.setTileMapping(counter, 2);
  g.setTileMapping(g.addVertex(incX, "Increment", {{"x", x}}), 1);
  g.setTileMapping(g.addVertex(incY, "Increment", {{"x", y}}), 3);

  // Body after each count 1..3: y += 1, then x += 2 (flag) or y += 1 (no flag).
  Sequence body({Execute(incY), If(flag, Repeat(2, Execute(incX)), Execute(incY))});
  Switch sw(control, Execute(incY), "sw");
  sw.add(1, Repeat(5, Execute(incX)));
  sw.add(-3, Copy(intConstant(g, 42, 0), x));
  const Program whileTrue = Sequence({Copy(intConstant(g, 0, 2), count),
                                      RepeatWhileTrue(Execute(step), more, body), sw});
  const Program whileFalse = Sequence({Copy(intConstant(g, 0, 2), count),
                                       RepeatWhileFalse(Execute(step), done, body), sw});

  const Bytes zero = bytesOf<int>({0}), yes = Bytes{1}, no = Bytes{0};
  // Memory persists between steps: x and y carry over, only the steps' writes change them.
  const std::vector<Step> steps = {
      {{{"x", zero}, {"y", zero}, {"flag", yes}, {"control", bytesOf<int>({1})}}, 0},
      {{{"flag", no}, {"control", bytesOf<int>({-3})}}, 1},
      {{{"flag", yes}, {"control", bytesOf<int>({7})}}, 0},
      {{{"control", bytesOf<int>({0})}}, 1}};
  const std::vector<std::pair<std::string, std::size_t>> reads = {
      {"x-read", 4}, {"y-read", 4}, {"count-read", 4}, {"more-read", 1}, {"done-read", 1}};
  const auto cpu = requireIdentical(g, {whileTrue, whileFalse}, steps, reads);
  // x, y after each step, by hand: 3 bodies a run.
  const int expectedX[4] = {6 + 5, 42, 42 + 6, 42 + 12};
  const int expectedY[4] = {3, 3 + 6, 9 + 3 + 1, 13 + 3 + 1};
  for (std::size_t s = 0; s < steps.size(); ++s) {
    INFO("step " << s);
    REQUIRE(valuesOf<int>(cpu[s][0])[0] == expectedX[s]);
    REQUIRE(valuesOf<int>(cpu[s][1])[0] == expectedY[s]);
    REQUIRE(valuesOf<int>(cpu[s][2])[0] == 4);
  }
}

TEST_CASE("gpu and cpu agree exactly on copies through views across tiles", "[gpu]") {
  if (skipWithoutGpu())
    return;
  Graph g = programGraph(5);
  Tensor a = g.addVariable(INT, {6, 8}, "a"), b = g.addVariable(INT, {8, 6}, "b");
  Tensor c = g.addVariable(INT, {4, 8}, "c"), h = g.addVariable(HALF, {40}, "h");
  Tensor h2 = g.addVariable(HALF, {40}, "h2");
  for (Tensor t : {a, b, c, h, h2})
    util::mapTensorLinearly(g, t, 1, 1);
  g.createHostWrite("a", a);
  g.createHostWrite("h", h);
  for (auto [name, t] : {std::pair{"b", b}, std::pair{"c", c}, std::pair{"h2", h2}})
    g.createHostRead(name, t);
  // b = a transposed; c = rows 0 and 1 of a with columns reversed, then rows 2 and 4;
  // h2 = h reversed in two halves, element pairs swapped (a 2-byte type's copy plan).
  const Program copies = Sequence(
      {Copy(a.transpose(), b),
       Copy(concat({a.subSample(2, 0).slice(1, 3).reverse(0), a.slice(0, 2).reverse(1)}).reverse(0),
            c),
       Copy(concat({h.slice(20, 40), h.slice(0, 20)}).reshape({20, 2}).reverse(1).flatten(), h2)});
  std::vector<int> av(48);
  for (int i = 0; i < 48; ++i)
    av[i] = i * 7 - 100;
  std::vector<std::uint16_t> hv(40);
  for (int i = 0; i < 40; ++i)
    hv[i] = static_cast<std::uint16_t>(0x3c00 + i * 17); // halves from 1.0 upwards
  const auto cpu = requireIdentical(g, {copies}, {{{{"a", bytesOf(av)}, {"h", bytesOf(hv)}}, 0}},
                                    {{"b", 48 * 4}, {"c", 32 * 4}, {"h2", 40 * 2}});
  const auto bv = valuesOf<int>(cpu[0][0]);
  for (int r = 0; r < 8; ++r)
    for (int col = 0; col < 6; ++col)
      REQUIRE(bv[r * 6 + col] == av[col * 8 + r]);
  const auto h2v = valuesOf<std::uint16_t>(cpu[0][2]);
  REQUIRE(h2v[0] == hv[21]);
  REQUIRE(h2v[1] == hv[20]);
  REQUIRE(h2v[39] == hv[18]);
}

TEST_CASE("a vertex returning false raises runtime_error naming it on the gpu", "[gpu]") {
  if (skipWithoutGpu())
    return;
  Graph g = programGraph(3);
  Tensor xs = g.addVariable(INT, {3}, "xs");
  g.createHostWrite("xs", xs);
  ComputeSet cs = g.addComputeSet("check");
  for (unsigned i = 0; i < 3; ++i) {
    g.setTileMapping(xs[i], i);
    g.setTileMapping(g.addVertex(cs, "FailOn13", {{"in", xs[i]}}), i);
  }
  for (Backend b : kGpuBackends) {
    INFO(nameOf(b));
    // Inside control flow too: the check runs in a Repeat.
    Engine e(g, Repeat(2, Execute(cs)), optionsFor(b));
    e.load(Device::createGpuDevice(0));
    const std::vector<int> good = {1, 2, 3}, bad = {1, 2, 13};
    e.writeTensor("xs", good.data(), good.data() + 3);
    REQUIRE_NOTHROW(e.run());
    e.writeTensor("xs", bad.data(), bad.data() + 3);
    REQUIRE_THROWS_AS(e.run(), aspen::runtime_error);
    REQUIRE_THROWS_WITH(e.run(), Catch::Contains("FailOn13") && Catch::Contains("'check'") &&
                                     Catch::Contains("tile 2"));
    e.writeTensor("xs", good.data(), good.data() + 3);
    REQUIRE_NOTHROW(e.run()); // still usable
  }
}

TEST_CASE("gpu and cpu agree within 1e-6 on vertices with vectors, vector lists and workers",
          "[gpu]") {
  if (skipWithoutGpu())
    return;
  Graph g = programGraph(4);
  Tensor in = g.addVariable(FLOAT, {4, 50}, "in"), sq = g.addVariable(FLOAT, {4, 50}, "sq");
  Tensor scaled = g.addVariable(FLOAT, {4, 50}, "scaled"), sums = g.addVariable(FLOAT, {4}, "sums");
  ComputeSet square = g.addComputeSet("square"), scale = g.addComputeSet("scale");
  ComputeSet sum = g.addComputeSet("sum");
  for (unsigned t = 0; t < 4; ++t) {
    for (Tensor x : {in[t], sq[t], scaled[t], sums[t]})
      g.setTileMapping(x, t);
    g.setTileMapping(g.addVertex(square, "SquareMulti", {{"in", in[t]}, {"out", sq[t]}}), t);
    VertexRef s = g.addVertex(scale, "Scale", {{"in", sq[t]}, {"out", scaled[t]}});
    g.setInitialValue(s["factor"], 0.75f);
    g.setInitialValue(s["offset"], -2.5f);
    g.setTileMapping(s, t);
  }
  // One vertex sums the rows of all tiles through a vector list (the rows are on other tiles).
  VertexRef summer = g.addVertex(sum, "SumRows", {{"sums", sums}});
  g.connect(summer["rows"], {scaled[3], scaled[2], scaled[1].reverse(0), scaled[0]});
  g.setTileMapping(summer, 0);
  g.createHostWrite("in", in);
  g.createHostRead("scaled", scaled);
  g.createHostRead("sums", sums);
  // in * in - i stays above 50 and the scaled values above 35: no cancellation, so contracting
  // a multiply-add on the GPU stays within 1e-6.
  const std::vector<float> inv = randomFloats(200, 11, 10.0f, 20.0f);
  const auto cpu = requireCloseFloats(g, Sequence({Execute(square), Execute(scale), Execute(sum)}),
                                      {{"in", bytesOf(inv)}}, {{"scaled", 200}, {"sums", 4}});
  for (std::size_t i = 0; i < 200; ++i) {
    const double expected = (double(inv[i]) * inv[i] - double(i % 50)) * 0.75 - 2.5;
    REQUIRE(cpu[0][i] == Approx(expected).epsilon(1e-5));
  }
}

TEST_CASE("gpu and cpu agree within 1e-6 on element-wise ops, a fused expression, reduce and "
          "softmax",
          "[gpu]") {
  if (skipWithoutGpu())
    return;
  namespace ex = aspen::ops::expr;
  // 37 tiles: rows split unevenly, so blocks do different amounts of work.
  Graph g(Target::createGeneric(37));
  ops::addCodelets(g);
  nn::addCodelets(g);
  const std::size_t rows = 24, cols = 333;
  Tensor a = g.addVariable(FLOAT, {rows, cols}, "a"), b = g.addVariable(FLOAT, {rows, cols}, "b");
  util::mapTensorLinearly(g, a);
  util::mapTensorLinearly(g, b);
  g.createHostWrite("a", a);
  g.createHostWrite("b", b);
  Sequence prog;
  Tensor sum = ops::add(g, a, b, prog);
  Tensor fused = ops::map(g,
                          ex::Exp(ex::Neg(ex::Abs(ex::_1))) * 2.0f + ex::Sqrt(ex::Abs(ex::_2)) +
                              ex::Max(ex::_1, ex::_2),
                          {a, b}, prog);
  Tensor rowSums = ops::reduce(g, fused, {1}, ops::ReduceParams(ops::Operation::ADD), prog);
  Tensor softmax = nn::nonLinearity(g, nn::NonLinearityType::SOFTMAX_STABLE, a, prog);
  for (auto [name, t] : {std::pair{"sum", sum}, std::pair{"fused", fused},
                         std::pair{"rowSums", rowSums}, std::pair{"softmax", softmax}})
    g.createHostRead(name, t);

  // Positive data: no cancellation, so 1e-6 relative is a fair bound for any operation order.
  const std::vector<float> av = randomFloats(rows * cols, 21, 0.1f, 4.0f);
  const std::vector<float> bv = randomFloats(rows * cols, 22, 0.1f, 4.0f);
  const auto cpu = requireCloseFloats(g, prog, {{"a", bytesOf(av)}, {"b", bytesOf(bv)}},
                                      {{"sum", rows * cols}, {"fused", rows * cols},
                                       {"rowSums", rows}, {"softmax", rows * cols}});
  // The CPU against double-precision host models (its own tolerance is the CPU suites' job).
  for (std::size_t r = 0; r < rows; ++r) {
    double rowTotal = 0, expTotal = 0;
    for (std::size_t c = 0; c < cols; ++c) {
      const double x = av[r * cols + c], y = bv[r * cols + c];
      rowTotal += std::exp(-x) * 2 + std::sqrt(y) + std::max(x, y);
      expTotal += std::exp(x);
    }
    REQUIRE(cpu[2][r] == Approx(rowTotal).epsilon(1e-5));
    REQUIRE(cpu[3][r * cols] == Approx(std::exp(double(av[r * cols])) / expTotal).epsilon(1e-5));
  }
  REQUIRE(cpu[0][5] == av[5] + bv[5]);
}

TEST_CASE("gpu and cpu agree within 1e-6 on matMul", "[gpu]") {
  if (skipWithoutGpu())
    return;
  Graph g(Target::createGeneric(16));
  ops::addCodelets(g);
  linalg::addCodelets(g);
  const std::size_t m = 40, k = 70, n = 24;
  // The matmul codelets on both sides (a library plan is cuBLASLt against OpenBLAS, which sum in
  // different orders; test_kernels checks both against a double product).
  const OptionFlags vertices{{"planConstraints", R"({"method": "vertices"})"}};
  Tensor a = linalg::createMatMulInputLHS(g, FLOAT, {m, k}, {k, n}, "a", vertices);
  Tensor b = linalg::createMatMulInputRHS(g, FLOAT, {m, k}, {k, n}, "b", vertices);
  g.createHostWrite("a", a);
  g.createHostWrite("b", b);
  Sequence prog;
  Tensor c = linalg::matMul(g, a, b, prog, "c", vertices);
  g.createHostRead("c", c);
  // Positive inputs: the dot products cannot cancel.
  const std::vector<float> av = randomFloats(m * k, 31, 0.0f, 1.0f);
  const std::vector<float> bv = randomFloats(k * n, 32, 0.0f, 1.0f);
  const auto cpu = requireCloseFloats(g, prog, {{"a", bytesOf(av)}, {"b", bytesOf(bv)}}, {{"c", m * n}});
  for (std::size_t i = 0; i < m; i += 13)
    for (std::size_t j = 0; j < n; j += 5) {
      double dot = 0;
      for (std::size_t q = 0; q < k; ++q)
        dot += double(av[i * k + q]) * bv[q * n + j];
      REQUIRE(cpu[0][i * n + j] == Approx(dot).epsilon(1e-5));
    }
}

namespace {
// Fills transfer k with k * 10 + i, by prefetch or by fetch (when and how often an executor
// prefetches is its own choice; the data must arrive in order either way).
class CountingSource : public StreamCallback {
public:
  Result prefetch(void *p) noexcept override {
    fill(p);
    return Result::Success;
  }
  void fetch(void *p) noexcept override { fill(p); }
  void complete() noexcept override {}

private:
  void fill(void *p) {
    auto *f = static_cast<float *>(p);
    for (int i = 0; i < 4; ++i)
      f[i] = float(next_ * 10 + i);
    ++next_;
  }
  int next_ = 0;
};

struct StreamResults {
  std::vector<float> ring;     // circular device-to-host buffer after both runs
  std::vector<float> received; // y after the last run: the last chunk the callback fed, scaled
};

// A callback feeds "in" (3 transfers a run), a circular buffer of 4 chunks receives "out"
// (x * 2 + 1), over two runs of program 0 and one of program 1 (which reads nothing).
StreamResults runStreams(Backend backend) {
  Graph g = programGraph(2);
  Tensor x = g.addVariable(FLOAT, {4}, "x"), y = g.addVariable(FLOAT, {4}, "y");
  g.setTileMapping(x, 0);
  g.setTileMapping(y, 1);
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 4);
  DataStream out = g.addDeviceToHostFIFO("out", FLOAT, 4);
  ComputeSet cs = g.addComputeSet("scale");
  VertexRef v = g.addVertex(cs, "Scale", {{"in", x}, {"out", y}});
  g.setInitialValue(v["factor"], 2.0f);
  g.setInitialValue(v["offset"], 1.0f);
  g.setTileMapping(v, 1);
  g.createHostRead("y", y);
  const Program transfers = Repeat(3, Sequence({Copy(in, x), Execute(cs), Copy(y, out)}));
  const Program computeOnly = Execute(cs);
  Engine e(g, {transfers, computeOnly}, optionsFor(backend));
  e.load(deviceFor(backend, g));
  e.connectStreamToCallback("in", std::make_unique<CountingSource>());
  StreamResults results;
  results.ring.assign(16, -1);
  e.connectStream("out", results.ring.data(), results.ring.data() + results.ring.size());
  e.run(0);
  e.run(1);
  e.run(0);
  results.received.resize(4);
  e.readTensor("y", results.received.data(), results.received.data() + 4);
  return results;
}
} // namespace

TEST_CASE("gpu and cpu agree on streams, circular buffers and callbacks across runs", "[gpu]") {
  if (skipWithoutGpu())
    return;
  const StreamResults cpu = runStreams(Backend::Cpu);
  // Six transfers: chunk k holds (k * 10 + i) * 2 + 1; transfers 4 and 5 wrap onto chunks 0, 1.
  std::vector<float> expectedRing(16);
  for (int k = 0; k < 6; ++k)
    for (int i = 0; i < 4; ++i)
      expectedRing[(k % 4) * 4 + i] = float((k * 10 + i) * 2 + 1);
  REQUIRE(cpu.ring == expectedRing);
  REQUIRE(cpu.received == std::vector<float>{101, 103, 105, 107});
  for (Backend b : kGpuBackends) {
    INFO(nameOf(b));
    const StreamResults gpu = runStreams(b);
    REQUIRE(gpu.ring == cpu.ring);
    REQUIRE(gpu.received == cpu.received);
  }
}

TEST_CASE("GPUs are listed by the device manager, and asking for a missing one is a clear error",
          "[gpu][nogpu]") {
  // Runs everywhere: without a GPU (or a CUDA executor) the list is empty and createGpuDevice(0)
  // raises aspen::error; with GPUs, the ordinal just past the last one does.
  const unsigned count = Device::gpuCount();
  const std::vector<Device> listed = DeviceManager::createDeviceManager().getDevices(TargetType::GPU, 1);
  REQUIRE(listed.size() == count);
  for (const Device &d : listed)
    REQUIRE(d.getKind() == DeviceKind::Gpu);
  // A program written for IPU hardware gets the GPUs (none without one), for any IPU count, and
  // the model and CPU types list no hardware.
  for (unsigned numIPUs : {1u, 4u}) {
    const std::vector<Device> ipus =
        DeviceManager::createDeviceManager().getDevices(TargetType::IPU, numIPUs);
    REQUIRE(ipus.size() == count);
    for (const Device &d : ipus)
      REQUIRE(d.getKind() == DeviceKind::Gpu);
  }
  REQUIRE(DeviceManager::createDeviceManager().getDevices(TargetType::IPU_MODEL, 1).empty());
  REQUIRE(DeviceManager::createDeviceManager().getDevices(TargetType::CPU, 1).empty());
  REQUIRE_THROWS_AS(Device::createGpuDevice(count), aspen::error);
  REQUIRE_THROWS_WITH(Device::createGpuDevice(count),
                      Catch::Contains("createGpuDevice(" + std::to_string(count) + ")"));
}

// The time limit on the GPU: a kernel that runs past aspen.timeLimit cannot be stopped, so the
// run raises runtime_error naming it, the engine refuses further calls, and destroying it does
// not wait for the kernel (which ends by itself here, counting to 2^25 through global memory:
// seconds, past the 0.5 s limit).
TEST_CASE("a kernel past the time limit is abandoned with a clear error on the gpu", "[gpu]") {
  if (skipWithoutGpu())
    return;
  Graph g(Target::createGeneric(2));
  g.addCodelets(aspen::test::codelet("time_limit.cpp"));
  Tensor counter = g.addVariable(UNSIGNED_INT, {}, "counter");
  Tensor n = g.addVariable(UNSIGNED_INT, {}, "n");
  g.setTileMapping(counter, 0);
  g.setTileMapping(n, 0);
  g.createHostWrite("n", n);
  ComputeSet cs = g.addComputeSet("spin");
  g.setTileMapping(g.addVertex(cs, "SpinFor", {{"counter", counter}, {"n", n}}), 0);
  {
    Engine e(g, Execute(cs), {{"aspen.timeLimit", "0.5"}, {"aspen.cuda.controlFlow", "host"}});
    e.load(Device::createGpuDevice(0));
    const unsigned iterations = 1u << 25;
    e.writeTensor("n", &iterations, &iterations + 1);
    REQUIRE_THROWS_WITH(e.run(), Catch::Contains("time limit of 0.5 s") &&
                                     Catch::Contains("'spin'") && Catch::Contains("abandoned"));
    REQUIRE_THROWS_WITH(e.run(), Catch::Contains("abandoned"));
  }
  // Other engines on the device still work.
  Graph small = programGraph(2);
  Tensor x = small.addVariable(FLOAT, {4}, "x");
  small.setTileMapping(x, 0);
  small.createHostWrite("x", x);
  small.createHostRead("x", x);
  Engine other(small, Copy(x.reverse(0), x));
  other.load(Device::createGpuDevice(0));
  const std::vector<float> in{1, 2, 3, 4};
  other.writeTensor("x", in.data(), in.data() + 4);
  other.run();
  std::vector<float> out(4);
  other.readTensor("x", out.data(), out.data() + 4);
  REQUIRE(out == std::vector<float>{4, 3, 2, 1});
}

// More tensor bytes than the GPU has: with debug.allowOutOfMemory the compile passes and the
// load's cudaMalloc fails, as graph_memory_allocation_error with the device's free and total
// bytes; the device is then still usable.
TEST_CASE("a graph larger than the gpu's memory fails to load with a clear error", "[gpu]") {
  if (skipWithoutGpu())
    return;
  const Device gpu = Device::createGpuDevice(0);
  const std::size_t bytes = std::size_t(gpu.getTarget().getMemoryBytes()) + (std::size_t(1) << 30);
  Graph g(gpu.getTarget());
  Tensor big = g.addVariable(FLOAT, {bytes / 4}, VariableMappingMethod::LINEAR, "big");
  g.createHostWrite("big", big);
  Engine e(g, Sequence{}, {{"debug.allowOutOfMemory", "true"}});
  REQUIRE_THROWS_AS(e.load(gpu), graph_memory_allocation_error);
  REQUIRE_THROWS_WITH(e.load(gpu), Catch::Contains("GPU memory") && Catch::Contains("free"));
  Graph small = programGraph(2);
  Tensor x = small.addVariable(FLOAT, {4}, "x");
  small.setTileMapping(x, 0);
  small.createHostRead("x", x);
  Engine ok(small, Sequence{});
  REQUIRE_NOTHROW(ok.load(gpu));
}

// --- The persistent recurrent kernels (rnnPersistentKernel true) on the GPU against the CPU
// executor, on one graph with one launch (5 blocks of 64 threads over H = 40 units): the exact
// variant's loops give the same bits on both (its sums run in one order through correctly
// rounded fma), forward; the tensor variant (half, mma.sync on the GPU, the host's emulation on
// the CPU) agrees within half's rounding; the float training step (the loops, then the weight
// gradients and dx as library products, which sum in other orders on each side) within 1e-5 of
// the largest value. Rows of lengths 0, T and in between. ---

namespace {

Bytes dataBytes(Type type, std::size_t n, unsigned seed, float scale) {
  const std::vector<float> v = randomFloats(n, seed, -scale, scale);
  if (type == FLOAT)
    return bytesOf(v);
  std::vector<half> h(v.begin(), v.end());
  return bytesOf(h);
}

std::vector<float> floatsOf(Type type, const Bytes &b) {
  if (type == FLOAT)
    return valuesOf<float>(b);
  const std::vector<half> h = valuesOf<half>(b);
  return std::vector<float>(h.begin(), h.end());
}

// |gpu - cpu| <= bound * max |cpu| element by element.
void requireNormClose(const std::vector<float> &gpu, const std::vector<float> &cpu, double bound,
                      const std::string &what) {
  REQUIRE(gpu.size() == cpu.size());
  double largest = 0;
  for (float v : cpu)
    largest = std::max(largest, std::fabs(double(v)));
  REQUIRE(largest > 0);
  for (std::size_t i = 0; i < cpu.size(); ++i) {
    INFO(what << " element " << i << ": gpu " << gpu[i] << ", cpu " << cpu[i]);
    REQUIRE(std::fabs(double(gpu[i]) - double(cpu[i])) <= bound * largest);
  }
}

struct RecurrentCase {
  bool gru = false, resetAfter = true, training = false;
  Type type = FLOAT;
  std::string arithmetic = "exact";
};

constexpr std::size_t kT = 6, kB = 5, kI = 7, kH = 40;

// Builds the layer on `g` (host writes for every input, reads for every result) and returns the
// writes and the reads (handle, bytes).
std::pair<std::vector<std::pair<std::string, Bytes>>, std::vector<std::pair<std::string, std::size_t>>>
buildRecurrent(Graph &g, const RecurrentCase &c, Sequence &prog) {
  nn::addCodelets(g);
  ops::addCodelets(g);
  linalg::addCodelets(g);
  const OptionFlags options{{"rnnPersistentKernel", "true"},
                            {"rnnPersistentArithmetic", c.arithmetic},
                            {"rnnPersistentBlocks", "5"},
                            {"rnnPersistentThreadsPerBlock", "64"},
                            {"rnnStepsPerWU", "0"},
                            {"inferenceOnly", c.training ? "false" : "true"}};
  Tensor lengths = g.addVariable(UNSIGNED_INT, {kB}, "lengths");
  g.setTileMapping(lengths, 0);
  const std::vector<unsigned> lengthValues = {0, unsigned(kT), 3, 1, 5};
  std::vector<std::pair<std::string, Bytes>> writes = {{"lengths", bytesOf(lengthValues)}};
  std::vector<std::pair<std::string, std::size_t>> reads;
  const std::size_t bytes = c.type == HALF ? 2 : 4;
  unsigned seed = 70;
  auto write = [&](const Tensor &t, const std::string &name, float scale) {
    g.createHostWrite(name, t);
    writes.emplace_back(name, dataBytes(c.type, t.numElements(), seed++, scale));
  };
  auto read = [&](const Tensor &t, const std::string &name) {
    g.createHostRead(name, t);
    reads.emplace_back(name, t.numElements() * bytes);
  };
  g.createHostWrite("lengths", lengths);
  const float weightScale = 1.0f / std::sqrt(float(kH));
  if (!c.gru) {
    namespace lstm = aspen::nn::lstm;
    lstm::LstmParams params(c.type, kB, kT, lengths, {kI, kH});
    Tensor in = lstm::createInput(g, params, "in", options);
    lstm::LstmState init = lstm::createInitialState(g, params, "init", options);
    lstm::LstmWeights w = lstm::createWeights(g, params, "w", options);
    write(in, "in", 1.0f);
    write(init.output, "h0", 1.0f);
    write(init.cellState, "c0", 1.0f);
    write(w.inputWeights, "wi", weightScale);
    write(w.outputWeights, "wo", weightScale);
    write(w.biases, "b", 0.5f);
    Tensor inter;
    auto [out, cell] = lstm::lstmFwd(g, params, init, in, w, c.training ? &inter : nullptr, prog,
                                     "fwd", options);
    read(out, "out");
    read(cell, "cell");
    if (c.training) {
      Tensor dy = g.clone(out, "dy");
      write(dy, "dy", 1.0f);
      Tensor dx;
      lstm::LstmWeights dw;
      lstm::LstmState dInit = lstm::lstmBwdWithWU(g, params, prog, init, inter, w, in, out, dy,
                                                  static_cast<const Tensor *>(nullptr), &dx, dw,
                                                  "bwd", options);
      read(dx, "dx");
      read(dw.outputWeights, "dwo");
      read(dw.inputWeights, "dwi");
      read(dw.biases, "db");
      read(dInit.output, "dh0");
      read(dInit.cellState, "dc0");
    }
  } else {
    nn::gru::GruParams params(c.type, kB, kT, lengths, {kI, kH});
    params.resetAfter = c.resetAfter;
    Tensor in = nn::gru::createInput(g, params, "in", options);
    Tensor init = nn::gru::createInitialState(g, params, "init", options);
    nn::gru::GruWeights w = nn::gru::createWeights(g, params, "w", options);
    write(in, "in", 1.0f);
    write(init, "h0", 1.0f);
    write(w.inputWeights, "wi", weightScale);
    write(w.outputWeights, "wo", weightScale);
    write(w.biases, "b", 0.5f);
    Tensor inter;
    Tensor out = nn::gru::gruFwd(g, params, init, in, w, c.training ? &inter : nullptr, prog,
                                 "fwd", options);
    read(out, "out");
    if (c.training) {
      Tensor dy = g.clone(out, "dy");
      write(dy, "dy", 1.0f);
      Tensor dx;
      nn::gru::GruWeights dw;
      Tensor dInit = nn::gru::gruBwdWithWU(g, params, prog, init, inter, w, in, out, dy, &dx,
                                           dw, "bwd", options);
      read(dx, "dx");
      read(dw.outputWeights, "dwo");
      read(dw.inputWeights, "dwi");
      read(dw.biases, "db");
      read(dInit, "dh0");
    }
  }
  return {writes, reads};
}

} // namespace

TEST_CASE("the persistent LSTM and GRU loops give the cpu's bits on the gpu (exact variant), and "
          "agree within rounding with tensor cores and in training",
          "[gpu]") {
  // The CPU side runs everywhere (the graphs build and run, their outputs are not zero); the
  // comparison where there is a GPU.
  const bool haveGpu = Device::gpuCount() > 0;
  std::vector<RecurrentCase> cases;
  for (Type type : {FLOAT, HALF}) {
    cases.push_back({false, true, false, type, "exact"});
    cases.push_back({true, true, false, type, "exact"});
    cases.push_back({true, false, false, type, "exact"});
  }
  for (bool gru : {false, true}) {
    cases.push_back({gru, false, false, HALF, "tensor"});
    cases.push_back({gru, true, true, FLOAT, "exact"});
  }
  cases.push_back({false, true, true, HALF, "tensor"});
  for (const RecurrentCase &c : cases) {
    INFO((c.gru ? (c.resetAfter ? "GRU (resetAfter)" : "GRU") : "LSTM")
         << ", " << c.type.toString() << ", " << c.arithmetic
         << (c.training ? ", training" : ", inference"));
    Graph g(Target::createGeneric(4));
    Sequence prog;
    const auto [writes, reads] = buildRecurrent(g, c, prog);
    const std::vector<Step> steps = {{writes, 0}};
    const auto cpu = runSteps(Backend::Cpu, g, {prog}, steps, reads);
    for (std::size_t r = 0; r < reads.size(); ++r) {
      INFO(reads[r].first);
      const std::vector<float> v = floatsOf(c.type, cpu[0][r]);
      CHECK(std::any_of(v.begin(), v.end(), [](float e) { return e != 0.0f; }));
    }
    if (!haveGpu)
      continue;
    // Half: a step's sums in another order, rounded to half (2^-11) and carried over 6 steps;
    // float: the library products' orders. The exact variant's forward: the same bytes.
    const double bound = c.type == HALF ? 8e-3 : 1e-5;
    for (Backend b : kGpuBackends) {
      const auto gpu = runSteps(b, g, {prog}, steps, reads);
      for (std::size_t r = 0; r < reads.size(); ++r) {
        INFO(nameOf(b) << " " << reads[r].first);
        if (c.arithmetic == "exact" && !c.training)
          REQUIRE(gpu[0][r] == cpu[0][r]);
        else
          requireNormClose(floatsOf(c.type, gpu[0][r]), floatsOf(c.type, cpu[0][r]), bound,
                           std::string(nameOf(b)) + " " + reads[r].first);
      }
    }
  }
  if (!haveGpu)
    skipWithoutGpu(); // the skip marker: the comparison did not run
}
