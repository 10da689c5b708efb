// Determinism of every library builder: the same graph gives bit-identical results whatever the
// CPU executor's thread count and worker order, and from one run to the next. Each builder's
// outputs are compared byte for byte across five engines (1 to 4 threads, workers forward and
// reversed) and two runs; any order-dependent reduction or race shows up as a differing byte.
// CTest runs it twice: with OpenBLAS's default threads, and with OPENBLAS_NUM_THREADS=1, where
// the CPU executor cuts large library products over its own threads.
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Gru.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/DynamicSlice.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Quarter.hpp>
#include <aspen/ops/Reduce.hpp>
#include <aspen/ops/ScaledAdd.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::program;
namespace ex = aspen::ops::expr;

namespace {

struct Io {
  std::vector<std::pair<Tensor, unsigned>> inputs; // integer inputs hold values below the bound
  std::vector<Tensor> outputs;
  void in(const Tensor &t, unsigned bound = 0) { inputs.push_back({t, bound}); }
  void out(const Tensor &t) { outputs.push_back(t); }
};
using Builder = std::function<void(Graph &, Sequence &, Io &)>;

// Bytes of random values for t: normal floats, integers below `bound`.
std::vector<std::uint8_t> randomBytes(const Tensor &t, unsigned bound, std::mt19937 &rng) {
  const std::size_t n = t.numElements();
  std::vector<std::uint8_t> bytes(n * t.elementType().size());
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint8_t *p = bytes.data() + i * t.elementType().size();
    if (t.elementType() == FLOAT) {
      const float v = normal(rng);
      std::memcpy(p, &v, 4);
    } else if (t.elementType() == HALF) {
      const half v(normal(rng));
      std::memcpy(p, &v, 2);
    } else {
      const unsigned v = bound ? unsigned(rng() % bound) : unsigned(rng());
      std::memcpy(p, &v, 4);
    }
  }
  return bytes;
}

// Every output's bytes after each of `runs` runs with `options`.
std::vector<std::vector<std::uint8_t>> outputsOf(const Builder &build, const OptionFlags &options,
                                                 unsigned runs) {
  Graph g(Target::createGeneric(4));
  ops::addCodelets(g);
  linalg::addCodelets(g);
  nn::addCodelets(g);
  Sequence prog;
  Io io;
  build(g, prog, io);
  for (std::size_t i = 0; i < io.inputs.size(); ++i)
    g.createHostWrite("in" + std::to_string(i), io.inputs[i].first);
  for (std::size_t i = 0; i < io.outputs.size(); ++i)
    g.createHostRead("out" + std::to_string(i), io.outputs[i]);
  Engine e(g, prog, options);
  e.load(test::deviceFor(g.getTarget()));
  std::mt19937 rng(1234);
  for (std::size_t i = 0; i < io.inputs.size(); ++i) {
    const auto bytes = randomBytes(io.inputs[i].first, io.inputs[i].second, rng);
    e.writeTensor("in" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
  }
  std::vector<std::vector<std::uint8_t>> result;
  for (unsigned r = 0; r < runs; ++r) {
    // The same inputs each run: rewrite them, as outputs may alias inputs (in-place builders).
    if (r > 0) {
      std::mt19937 again(1234);
      for (std::size_t i = 0; i < io.inputs.size(); ++i) {
        const auto bytes = randomBytes(io.inputs[i].first, io.inputs[i].second, again);
        e.writeTensor("in" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
      }
    }
    e.run();
    for (std::size_t i = 0; i < io.outputs.size(); ++i) {
      std::vector<std::uint8_t> bytes(io.outputs[i].numElements() *
                                      io.outputs[i].elementType().size());
      e.readTensor("out" + std::to_string(i), bytes.data(), bytes.data() + bytes.size());
      result.push_back(std::move(bytes));
    }
  }
  return result;
}

Tensor linear(Graph &g, Type type, std::vector<std::size_t> shape, const char *name) {
  Tensor t = g.addVariable(type, shape, name);
  util::mapTensorLinearly(g, t);
  return t;
}

const std::vector<std::pair<const char *, Builder>> kBuilders = {
    {"map (fused)",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor a = linear(g, FLOAT, {37, 29}, "a"), b = linear(g, FLOAT, {37, 29}, "b");
       io.in(a), io.in(b);
       io.out(ops::map(g, ex::Add(ex::Mul(ex::_1, ex::_2), ex::Exp(ex::_1)), {a, b}, p));
     }},
    {"reduce",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor a = linear(g, FLOAT, {64, 301}, "a");
       io.in(a);
       io.out(ops::reduce(g, a, {1}, {ops::Operation::ADD}, p));
       io.out(ops::reduce(g, a, {0}, {ops::Operation::SQUARE_ADD}, p));
       io.out(ops::reduce(g, a, {0, 1}, {ops::Operation::MAX}, p));
     }},
    {"scaledAdd",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor a = linear(g, HALF, {1000}, "a"), b = linear(g, FLOAT, {1000}, "b");
       io.in(a), io.in(b);
       ops::scaledAddTo(g, a, b, 0.3f, p);
       io.out(a);
     }},
    {"matMul (vertex plan and library plan)",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor a = linear(g, FLOAT, {33, 70}, "a"), b = linear(g, FLOAT, {70, 45}, "b");
       io.in(a), io.in(b);
       io.out(linalg::matMul(g, a, b, p, DebugContext("v"),
                             {{"planConstraints", R"({"method": "vertices"})"}}));
       io.out(linalg::matMul(g, a, b, p, DebugContext("l"),
                             {{"planConstraints", R"({"method": "library"})"}}));
     }},
    {"matMul library plans large enough to cut over threads",
     [](Graph &g, Sequence &p, Io &io) {
       // 3.6M MACs each: with OpenBLAS on one thread (this test's second process) the CPU
       // executor cuts each into two slices of columns (the first) or rows (the second).
       Tensor a = linear(g, FLOAT, {40, 150}, "a"), b = linear(g, FLOAT, {150, 600}, "b");
       Tensor c = linear(g, FLOAT, {600, 150}, "c"), d = linear(g, FLOAT, {150, 40}, "d");
       io.in(a), io.in(b), io.in(c), io.in(d);
       const OptionFlags library{{"planConstraints", R"({"method": "library"})"}};
       io.out(linalg::matMul(g, a, b, p, DebugContext("wide"), library));
       io.out(linalg::matMul(g, c, d, p, DebugContext("tall"), library));
     }},
    {"non-linearities",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor a = linear(g, FLOAT, {12, 50}, "a");
       io.in(a);
       io.out(nn::nonLinearity(g, nn::NonLinearityType::SOFTMAX_STABLE, a, p));
       io.out(nn::nonLinearity(g, nn::NonLinearityType::GELU, a, p));
     }},
    {"casts, quarter included",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor a = linear(g, FLOAT, {500}, "a");
       io.in(a);
       io.out(ops::cast(g, a, HALF, p));
       Tensor md = ops::createConstantMetadataTensor(g, QuarterMetadata::Format::F143, -2);
       io.out(ops::cast(g, ops::cast(g, a, QUARTER, md, p), FLOAT, p));
     }},
    {"dynamicSlice",
     [](Graph &g, Sequence &p, Io &io) {
       Tensor t = linear(g, FLOAT, {40, 16}, "t");
       Tensor offset = g.addVariable(UNSIGNED_INT, {1}, "offset");
       g.setTileMapping(offset, 0);
       io.in(t), io.in(offset, 35);
       io.out(ops::dynamicSlice(g, t, offset, {0}, {5}, p));
     }},
    {"LSTM forward, backward and weight update",
     [](Graph &g, Sequence &p, Io &io) {
       nn::lstm::LstmParams params(FLOAT, 3, 4, {5, 6});
       Tensor in = nn::lstm::createInput(g, params, "in");
       nn::lstm::LstmState init = nn::lstm::createInitialState(g, params, "init");
       nn::lstm::LstmWeights w = nn::lstm::createWeights(g, params, "w");
       Tensor inter;
       Tensor out = nn::lstm::lstmFwd(g, params, p, init, w, in, &inter);
       Tensor outGrad = g.clone(out, "outGrad");
       Tensor inGrad;
       nn::lstm::LstmWeights wGrad;
       nn::lstm::LstmState initGrad = nn::lstm::lstmBwdWithWU(g, params, p, init, inter, w, in, out,
                                                              outGrad, nullptr, &inGrad, wGrad);
       for (const Tensor &t :
            {in, init.output, init.cellState, w.inputWeights, w.outputWeights, w.biases, outGrad})
         io.in(t);
       for (const Tensor &t : {out, inGrad, initGrad.output, initGrad.cellState, wGrad.inputWeights,
                               wGrad.outputWeights, wGrad.biases})
         io.out(t);
     }},
    {"GRU forward",
     [](Graph &g, Sequence &p, Io &io) {
       nn::gru::GruParams params(FLOAT, 2, 5, {4, 7});
       Tensor in = nn::gru::createInput(g, params, "in");
       Tensor init = nn::gru::createInitialState(g, params, "init");
       nn::gru::GruWeights w = nn::gru::createWeights(g, params, "w");
       Tensor out = nn::gru::gruFwd(g, params, init, in, w, nullptr, p);
       for (const Tensor &t : {in, init, w.inputWeights, w.outputWeights, w.biases})
         io.in(t);
       io.out(out);
     }},
};

} // namespace

TEST_CASE("every library builder is bit-identical across thread counts, worker orders and runs",
          "[correctness][determinism]") {
  const std::vector<OptionFlags> configs = {
      {{"aspen.cpu.threads", "1"}},
      // Every compute set split over the threads, however small, and then the default (small
      // ones on the calling thread).
      {{"aspen.cpu.threads", "2"},
       {"aspen.cpu.workerOrder", "reverse"},
       {"aspen.cpu.inlineElements", "0"}},
      {{"aspen.cpu.threads", "3"}, {"aspen.cpu.inlineElements", "0"}},
      {{"aspen.cpu.threads", "4"},
       {"aspen.cpu.workerOrder", "reverse"},
       {"aspen.cpu.inlineElements", "0"}},
      {{"aspen.cpu.threads", "4"}},
  };
  for (const auto &[name, build] : kBuilders) {
    INFO("builder: " << name);
    const auto reference = outputsOf(build, configs[0], 2);
    const std::size_t perRun = reference.size() / 2;
    REQUIRE(perRun > 0);
    for (std::size_t i = 0; i < perRun; ++i) { // the second run repeats the first
      INFO("output " << i);
      REQUIRE(reference[perRun + i] == reference[i]);
    }
    for (std::size_t c = 1; c < configs.size(); ++c) {
      const auto other = outputsOf(build, configs[c], 1);
      REQUIRE(other.size() == perRun);
      for (std::size_t i = 0; i < perRun; ++i) {
        INFO("config " << c << ", output " << i);
        REQUIRE(other[i] == reference[i]);
      }
    }
  }
}
