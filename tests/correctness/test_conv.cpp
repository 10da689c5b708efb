// Convolutions (aspen/linalg/Convolution.hpp) against the independent double-precision model of
// tests/ConvReference.hpp: forward (with bias), backward data through getGradientParams and
// transposed, flipped weights, weight deltas, the weight update and the bias update, in one
// engine per case, over a sweep of transforms (stride, asymmetric padding, dilation of the
// input and of the kernel, truncation, flip, output padding), kernels 1/3/5/7, groups 1, 2 and
// depthwise, batch 1-5, 1-D, 2-D and 3-D fields, odd sizes, FLOAT and HALF; both matmul
// methods, the serial batch split, and the same bits for any CPU thread count.
#include "ConvReference.hpp"
#include "TestDevice.hpp"
#include "correctness/test_reduce_harness.hpp" // encode / decode / rounded

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/ConvUtil.hpp>
#include <aspen/linalg/Convolution.hpp>
#include <aspen/ops/Codelets.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace aspen;
using linalg::ConvParams;
using Shape = std::vector<std::size_t>;

struct Results {
  std::vector<double> out, inGrad, deltas, updatedWeights, updatedBiases;
  std::string plan, profile;
};

struct Inputs {
  std::vector<double> in, weights, biases, outGrad;
};

std::vector<double> randomValues(std::mt19937 &rng, std::size_t n, Type type) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = u(rng);
  return reducetest::rounded(type, v);
}

constexpr float kWeightScale = -0.5f, kBiasScale = 0.25f;

// Every pass of p in one engine on the CPU executor (or the test device).
Results runAll(const ConvParams &p, const Inputs &x, const OptionFlags &convOptions = {},
               const OptionFlags &engineOptions = {}, unsigned tiles = 4) {
  const Target target = Target::createGeneric(tiles, 4);
  Graph g(target);
  ops::addCodelets(g);
  linalg::addCodelets(g);
  program::Sequence prog;
  linalg::PlanningCache cache;
  const Tensor in = linalg::createInput(g, p, "in", convOptions, &cache);
  const Tensor w = linalg::createWeights(g, p, "w", convOptions, &cache);
  const Tensor out = linalg::convolution(g, in, w, p, false, prog, "fwd", convOptions, &cache);
  const Tensor biases = linalg::createBiases(g, out, p, "biases", convOptions, &cache);
  const Tensor outGrad = linalg::createConvOutput(g, p, "outGrad", convOptions, &cache);
  linalg::addBias(g, out, biases, prog, "bias");
  const ConvParams bwd = linalg::getGradientParams(p);
  const Tensor inGrad =
      linalg::convolution(g, outGrad, w, bwd, true, prog, "bwd", convOptions, &cache);
  const Tensor deltas =
      linalg::calculateWeightDeltas(g, outGrad, in, p, prog, "wu", convOptions, &cache);
  linalg::convolutionWeightUpdate(g, outGrad, w, in, p, kWeightScale, prog, "update",
                                  convOptions, &cache);
  linalg::convolutionBiasUpdate(g, outGrad, biases, kBiasScale, convOptions, prog, "biasUpdate");
  const std::pair<const char *, Tensor> written[] = {
      {"in", in}, {"w", w}, {"biases", biases}, {"outGrad", outGrad}};
  for (const auto &[name, t] : written)
    g.createHostWrite(name, t);
  const std::pair<const char *, Tensor> read[] = {
      {"out", out}, {"inGrad", inGrad}, {"deltas", deltas}, {"w-read", w}, {"b-read", biases}};
  for (const auto &[name, t] : read)
    g.createHostRead(name, t);
  Engine e(g, prog, engineOptions);
  e.load(test::deviceFor(target));
  const std::vector<double> *values[] = {&x.in, &x.weights, &x.biases, &x.outGrad};
  for (std::size_t i = 0; i < std::size(written); ++i) {
    const auto bytes = reducetest::encode(written[i].second.elementType(), *values[i]);
    e.writeTensor(written[i].first, bytes.data(), bytes.data() + bytes.size());
  }
  e.run(0);
  Results r;
  std::vector<double> *outputs[] = {&r.out, &r.inGrad, &r.deltas, &r.updatedWeights,
                                    &r.updatedBiases};
  for (std::size_t i = 0; i < std::size(read); ++i) {
    const Tensor &t = read[i].second;
    std::vector<unsigned char> bytes(t.numElements() * t.elementType().size());
    e.readTensor(read[i].first, bytes.data(), bytes.data() + bytes.size());
    *outputs[i] = reducetest::decode(t.elementType(), bytes);
  }
  std::ostringstream plan, profile;
  linalg::reportPlanInfo(plan, g, p, convOptions, &cache);
  r.plan = plan.str();
  e.printProfileSummary(profile);
  r.profile = profile.str();
  return r;
}

// |got - want| <= tol * (1 + |want|) everywhere; tol grows with the terms a sum has.
void requireClose(const char *what, const std::vector<double> &got, const std::vector<double> &want,
                  Type type, std::size_t terms) {
  REQUIRE(got.size() == want.size());
  const double tol = (type == HALF ? 4e-3 : 2e-6) * std::sqrt(double(terms) + 1);
  for (std::size_t i = 0; i < want.size(); ++i) {
    INFO(what << "[" << i << "]: Aspen " << got[i] << ", model " << want[i]);
    REQUIRE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])));
  }
}

void checkOne(const ConvParams &p, const OptionFlags &convOptions, unsigned seed,
              const OptionFlags &engineOptions = {}) {
  std::mt19937 rng(seed);
  Inputs x;
  x.in = randomValues(rng, convref::inputElements(p), p.inputType);
  x.weights = randomValues(rng, convref::weightElements(p), p.inputType);
  x.biases = randomValues(rng, p.numConvGroups * p.outputChannelsPerConvGroup, p.outputType);
  x.outGrad = randomValues(rng, convref::outputElements(p), p.outputType);
  const Results r = runAll(p, x, convOptions, engineOptions);
  INFO("plan:\n" << r.plan);

  std::vector<double> out = convref::forward(p, x.in, x.weights);
  const std::size_t outChans = p.numConvGroups * p.outputChannelsPerConvGroup;
  const std::size_t perChannel = outChans && p.batchSize ? out.size() / (p.batchSize * outChans) : 0;
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] += x.biases[(i / perChannel) % outChans];
  std::size_t kernel = 1;
  for (std::size_t k : p.kernelShape)
    kernel *= k;
  const std::size_t fwdTerms = p.inputChannelsPerConvGroup * kernel;
  requireClose("output", r.out, out, p.outputType, fwdTerms);
  requireClose("input gradient", r.inGrad, convref::backwardData(p, x.outGrad, x.weights),
               p.outputType, p.outputChannelsPerConvGroup * kernel);
  const std::vector<double> deltas = convref::weightDeltas(p, x.outGrad, x.in);
  const std::size_t wuTerms = p.batchSize * perChannel; // a weight's delta sums B * P terms
  requireClose("weight deltas", r.deltas, deltas, p.inputType, wuTerms);
  std::vector<double> updated = x.weights;
  for (std::size_t i = 0; i < updated.size(); ++i)
    updated[i] += kWeightScale * deltas[i];
  requireClose("updated weights", r.updatedWeights, updated, p.inputType, wuTerms);
  std::vector<double> biases = x.biases;
  const std::vector<double> db = convref::biasDeltas(p, x.outGrad);
  for (std::size_t i = 0; i < biases.size(); ++i)
    biases[i] += kBiasScale * db[i];
  requireClose("updated biases", r.updatedBiases, biases, p.outputType, wuTerms);
}

// Without options: both methods (the generic target plans "library"; "gemm" pinned), the
// library calls both ways the CPU executor runs them (oneDNN where it applies, and im2col +
// BLAS always).
void checkCase(const ConvParams &p, const OptionFlags &convOptions = {}, unsigned seed = 1) {
  if (convOptions.begin() != convOptions.end()) {
    checkOne(p, convOptions, seed);
    return;
  }
  const auto pinned = [](const char *method) {
    return OptionFlags{{"planConstraints", std::string(R"({"method": ")") + method + R"("})"}};
  };
  std::size_t taps = 1;
  for (std::size_t k : p.kernelShape)
    taps *= k;
  if (std::max(p.inputChannelsPerConvGroup, p.outputChannelsPerConvGroup) * taps <= 64) {
    INFO("method direct"); // forward and backward data; the weight update plans gemm
    checkOne(p, pinned("direct"), seed);
  }
  if (test::gpuRequested()) { // the CUDA executor's calls: cuDNN where it applies, im2col
    for (const char *calls : {"auto", "gemm"}) {
      INFO("method library, aspen.cuda.convolutions " << calls);
      checkOne(p, pinned("library"), seed, {{"aspen.cuda.convolutions", calls}});
    }
    INFO("method gemm");
    checkOne(p, pinned("gemm"), seed);
    return;
  }
  for (const char *calls : {"auto", "blas"}) {
    INFO("method library, aspen.cpu.convolutions " << calls);
    checkOne(p, pinned("library"), seed, {{"aspen.cpu.convolutions", calls}});
  }
  INFO("method gemm");
  checkOne(p, pinned("gemm"), seed);
}

ConvParams::InputTransform inputTransform(std::vector<unsigned> truncLower,
                                          std::vector<unsigned> truncUpper,
                                          std::vector<unsigned> dilation,
                                          std::vector<unsigned> padLower,
                                          std::vector<unsigned> padUpper, std::vector<bool> flip) {
  return {std::move(truncLower), std::move(truncUpper), std::move(dilation),
          std::move(padLower),   std::move(padUpper),   std::move(flip)};
}

// A 2-D convolution as PyTorch spells it: symmetric padding, stride, kernel dilation, groups.
ConvParams torchStyle(Type type, std::size_t B, Shape field, Shape kernel, std::size_t Ci,
                      std::size_t Co, std::size_t G, std::vector<unsigned> padLower,
                      std::vector<unsigned> padUpper, std::vector<unsigned> stride,
                      std::vector<unsigned> dilation) {
  const std::size_t dims = field.size();
  const std::vector<unsigned> zeros(dims, 0), ones(dims, 1);
  const std::vector<bool> noFlip(dims, false);
  return ConvParams(type, type, B, std::move(field), std::move(kernel), Ci, Co, G,
                    inputTransform(zeros, zeros, ones, padLower, padUpper, noFlip),
                    inputTransform(zeros, zeros, dilation, zeros, zeros, noFlip),
                    {zeros, zeros, stride, zeros, zeros});
}

} // namespace

TEST_CASE("convolution passes match the double model: strides, padding, dilation, kernels 1-7",
          "[correctness][conv]") {
  struct Row {
    Shape field, kernel;
    std::vector<unsigned> padLower, padUpper, stride, dilation;
    std::size_t B, Ci, Co, G;
  };
  const Row rows[] = {
      {{7, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, 3, 4, 1},
      {{9, 8}, {3, 3}, {0, 2}, {3, 1}, {2, 3}, {1, 1}, 1, 2, 3, 1},
      {{11, 10}, {5, 5}, {2, 2}, {2, 2}, {3, 2}, {1, 1}, 3, 2, 2, 1},
      {{13, 12}, {7, 7}, {3, 3}, {3, 3}, {2, 2}, {1, 1}, 1, 3, 2, 1},
      {{9, 11}, {3, 3}, {2, 2}, {2, 2}, {1, 2}, {2, 2}, 2, 2, 3, 1},
      {{6, 7}, {1, 1}, {0, 0}, {0, 0}, {1, 1}, {1, 1}, 5, 4, 3, 1},
      {{9, 9}, {1, 1}, {1, 0}, {0, 1}, {2, 3}, {1, 1}, 2, 3, 2, 1},
      {{8, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 2, 2, 3, 2},  // groups 2
      {{9, 7}, {3, 5}, {1, 2}, {1, 2}, {2, 1}, {1, 2}, 3, 1, 1, 5},  // depthwise
      {{17}, {5}, {2}, {3}, {3}, {2}, 4, 3, 2, 1},                   // 1-D
      {{5, 6, 7}, {3, 3, 3}, {1, 0, 1}, {1, 2, 0}, {1, 2, 1}, {1, 1, 2}, 2, 2, 2, 1}, // 3-D
  };
  for (Type type : {FLOAT, HALF})
    for (const Row &r : rows) {
      const ConvParams p = torchStyle(type, r.B, r.field, r.kernel, r.Ci, r.Co, r.G, r.padLower,
                                      r.padUpper, r.stride, r.dilation);
      std::ostringstream text;
      text << p;
      INFO(type.toString() << " " << text.str());
      checkCase(p);
    }
}

TEST_CASE("convolution passes match the double model with every transform",
          "[correctness][conv]") {
  // Input truncation, dilation and flip; kernel truncation, padding and flip; output
  // truncation and padding -- the shapes a gradient or weight-update pass produces.
  ConvParams p(FLOAT, FLOAT, 2, {10, 9}, {3, 4}, 2, 3, 1,
               inputTransform({1, 0}, {0, 2}, {2, 1}, {1, 0}, {2, 1}, {true, false}),
               inputTransform({0, 1}, {1, 0}, {1, 2}, {1, 0}, {0, 1}, {false, true}),
               {{1, 0}, {0, 2}, {2, 1}, {1, 0}, {0, 2}});
  checkCase(p);
  // Gradient-shaped parameters (input dilation = stride) used as a forward convolution.
  const ConvParams strided = torchStyle(HALF, 2, {9, 8}, {3, 3}, 2, 3, 1, {1, 1}, {1, 1},
                                        {2, 2}, {1, 1});
  checkCase(linalg::getGradientParams(strided), {}, 2);
  checkCase(linalg::getWeightUpdateParams(strided), {}, 3);
}

TEST_CASE("convolution with batch 0, no channels and no field dimensions", "[correctness][conv]") {
  checkCase(torchStyle(FLOAT, 0, {5, 5}, {3, 3}, 2, 3, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  checkCase(torchStyle(FLOAT, 2, {5, 5}, {3, 3}, 0, 3, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  checkCase(torchStyle(FLOAT, 2, {5, 5}, {3, 3}, 2, 0, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}));
  checkCase(ConvParams(FLOAT, 3, {}, {}, 4, 5, 2)); // a grouped fully connected layer
}

TEST_CASE("convolution plans: both matmul methods, the serial batch split and its pin",
          "[correctness][conv]") {
  const ConvParams p = torchStyle(FLOAT, 5, {9, 8}, {3, 3}, 3, 4, 1, {1, 1}, {1, 1}, {2, 1},
                                  {1, 1});
  for (const char *method : {"vertices", "library"})
    checkCase(p, {{"planConstraints", std::string(R"({"matMul": {"method": ")") + method +
                                          R"("}})"}});
  // Pinned: 3 chunks of 2, 2 and 1 images.
  checkCase(p, {{"planConstraints", R"({"method": "gemm", "serial": {"batch": 3}})"}});
  // A budget (0.003 of 4 x 624 KiB, 7667 bytes) under two images' lowered input (2 x 4320
  // bytes): one image a chunk.
  const Target target = Target::createGeneric(4, 4);
  Graph g(target);
  const OptionFlags tiny = {{"availableMemoryProportion", "0.003"},
                            {"planConstraints", R"({"method": "gemm"})"}};
  const linalg::ConvPlan plan = linalg::getConvPlan(g, p, tiny);
  REQUIRE(plan.batchSerial == 5);
  REQUIRE(plan.batchPerChunk == 1);
  checkCase(p, tiny);
  const linalg::ConvPlan whole = linalg::getConvPlan(g, p, {{"planConstraints", R"({"method": "gemm"})"}});
  REQUIRE(whole.batchSerial == 1);
  REQUIRE(whole.loweredBytes == 5 * (5 * 8) * 3 * 9 * 4); // B * P * Ci * taps * 4 bytes
}

TEST_CASE("convolution passes are bit-identical across CPU thread counts",
          "[correctness][conv][determinism]") {
  if (test::skipOnGpuRun())
    return;
  const ConvParams p = torchStyle(FLOAT, 3, {12, 11}, {3, 3}, 4, 6, 2, {1, 1}, {1, 1}, {1, 2},
                                  {1, 1});
  std::mt19937 rng(7);
  Inputs x;
  x.in = randomValues(rng, convref::inputElements(p), FLOAT);
  x.weights = randomValues(rng, convref::weightElements(p), FLOAT);
  x.biases = randomValues(rng, 12, FLOAT);
  x.outGrad = randomValues(rng, convref::outputElements(p), FLOAT);
  // The library calls (oneDNN and BLAS) and gemm's products (vertices and a Gemm call).
  const std::pair<const char *, const char *> methods[] = {
      {R"({"method": "library"})", "auto"},
      {R"({"method": "library"})", "blas"},
      {R"({"matMul": {"method": "vertices"}})", "auto"},
      {R"({"matMul": {"method": "library"}})", "auto"}};
  for (const auto &[constraints, calls] : methods) {
    const OptionFlags conv = {{"planConstraints", constraints}};
    const Results one = runAll(p, x, conv,
                               {{"aspen.cpu.threads", "1"}, {"aspen.cpu.convolutions", calls}});
    for (const char *threads : {"2", "3"}) {
      const Results other = runAll(
          p, x, conv, {{"aspen.cpu.threads", threads}, {"aspen.cpu.convolutions", calls}});
      INFO(constraints << ", " << calls << ", " << threads << " threads");
      REQUIRE(other.out == one.out);
      REQUIRE(other.inGrad == one.inGrad);
      REQUIRE(other.deltas == one.deltas);
      REQUIRE(other.updatedWeights == one.updatedWeights);
      REQUIRE(other.updatedBiases == one.updatedBiases);
    }
  }
}

TEST_CASE("convolution plans by target: library calls on CPU and GPU targets, portable "
          "methods on the IPU models",
          "[correctness][conv]") {
  const ConvParams p = torchStyle(FLOAT, 2, {9, 8}, {3, 3}, 3, 4, 1, {1, 1}, {1, 1}, {2, 2},
                                  {1, 1});
  const ConvParams wide = torchStyle(FLOAT, 8, {56, 56}, {3, 3}, 64, 64, 1, {1, 1}, {1, 1},
                                     {1, 1}, {1, 1});
  {
    Graph g(Target::createModel("ipu2"));
    const linalg::ConvPlan plan = linalg::getConvPlan(g, p);
    INFO("ipu2: " << plan.reason);
    // 3 input channels x 9 taps: the direct vertices; 64 x 9: the product.
    REQUIRE(plan.method == "direct");
    REQUIRE(plan.reason.find("no convolution calls") != std::string::npos);
    REQUIRE(linalg::getConvPlan(g, wide).method == "gemm");
    REQUIRE_THROWS_AS(
        linalg::getConvPlan(g, wide, {{"planConstraints", R"({"method": "direct"})"}}),
        invalid_option);
    REQUIRE_THROWS_AS(
        linalg::getConvPlan(g, p, {{"planConstraints", R"({"method": "library"})"}}),
        invalid_option);
  }
  for (const Target &target : {Target::createGeneric(4, 4), Target::createCPUTarget(),
                               Target::createModel("h200")}) {
    Graph g(target);
    const linalg::ConvPlan plan = linalg::getConvPlan(g, p);
    INFO(target.getName() << ": " << plan.reason);
    REQUIRE(plan.method == "library");
    REQUIRE(plan.estimatedCycles > 0);
    REQUIRE(plan.toJson().find(R"("library")") != std::string::npos);
  }
  // Mixed types have no convolution call: the direct vertices (3 channels x 9 taps), and a
  // library pin is refused.
  ConvParams mixed = p;
  mixed.inputType = HALF;
  Graph g(Target::createGeneric(4, 4));
  REQUIRE(linalg::getConvPlan(g, mixed).method == "direct");
  REQUIRE_THROWS_AS(
      linalg::getConvPlan(g, mixed, {{"planConstraints", R"({"method": "library"})"}}),
      invalid_option);
}

TEST_CASE("the library method runs backward data as the forward's ConvBackwardData",
          "[correctness][conv]") {
  if (test::skipOnGpuRun()) // the CPU executor's calls
    return;
  const ConvParams p = torchStyle(FLOAT, 2, {9, 8}, {3, 3}, 2, 3, 1, {1, 1}, {1, 1}, {2, 2},
                                  {1, 1});
  Inputs x;
  std::mt19937 rng(5);
  x.in = randomValues(rng, convref::inputElements(p), FLOAT);
  x.weights = randomValues(rng, convref::weightElements(p), FLOAT);
  x.biases = randomValues(rng, 3, FLOAT);
  x.outGrad = randomValues(rng, convref::outputElements(p), FLOAT);
  const Results r = runAll(p, x);
  INFO(r.profile);
  REQUIRE(r.plan.find("method:        library") != std::string::npos);
  for (const char *kind : {"ConvForward", "ConvBackwardData", "ConvBackwardFilter"})
    REQUIRE(r.profile.find(kind) != std::string::npos);
  requireClose("input gradient", r.inGrad, convref::backwardData(p, x.outGrad, x.weights), FLOAT,
               27);
}

TEST_CASE("GPU convolution calls: cuDNN pinned runs ordinary convolutions and refuses the rest",
          "[correctness][conv]") {
  if (!test::gpuRequested()) { // the CUDA executor's cuDNN path: the suite's GPU run checks it
    std::printf("%s: a GPU test, run with ASPEN_TEST_DEVICE=gpu\n", test::kSkipMarker);
    return;
  }
  const OptionFlags library = {{"planConstraints", R"({"method": "library"})"}};
  const OptionFlags cudnn = {{"aspen.cuda.convolutions", "cudnn"}};
  // Grouped, strided, padded, dilated, float and half: cuDNN's own form.
  for (const Type type : {FLOAT, HALF}) {
    INFO(type.toString());
    checkOne(torchStyle(type, 3, {11, 10}, {3, 3}, 4, 6, 2, {1, 1}, {1, 1}, {2, 1}, {1, 2}),
             library, 11, cudnn);
  }
  // Input dilation (a transposed convolution's forward) is not: the load says why.
  ConvParams dilated = torchStyle(FLOAT, 2, {5, 5}, {3, 3}, 2, 3, 1, {1, 1}, {1, 1}, {1, 1},
                                  {1, 1});
  dilated.inputTransform.dilation = {2, 2};
  try {
    checkOne(dilated, library, 12, cudnn);
    FAIL("cuDNN pinned loaded a convolution with input dilation");
  } catch (const error &e) {
    INFO(e.what());
    REQUIRE(std::string(e.what()).find("cuDNN cannot run it") != std::string::npos);
  }
}
