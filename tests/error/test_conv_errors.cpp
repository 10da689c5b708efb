// Misuse of aspen::linalg's convolution builders and of the convolution calls: the user error
// naming the tensor, its shape and the rule, for shapes, types, options, plan constraints, scales
// and geometries; afterwards the same graph still builds, compiles and runs a good convolution.
#include "correctness/test_fill_harness.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/Convolution.hpp>
#include <aspen/ops/Codelets.hpp>

#include <catch2/catch.hpp>

#include <vector>

using namespace aspen;
using dmtest::requireError;
using linalg::ConvParams;

TEST_CASE("convolution builders reject bad tensors, options and constraints", "[error][conv]") {
  Graph g(Target::createGeneric(4));
  ops::addCodelets(g);
  linalg::addCodelets(g);
  const ConvParams p(FLOAT, 2, {5, 6}, {3, 3}, 2, 3, 1); // out [2, 3, 3, 4]
  const Tensor in = linalg::createInput(g, p, "in"), w = linalg::createWeights(g, p, "w");
  const Tensor out = linalg::createConvOutput(g, p, "out");
  auto var = [&](Type t, std::vector<std::size_t> shape, const char *name) {
    Tensor x = g.addVariable(t, shape, name);
    g.setTileMapping(x, 0);
    return x;
  };
  const Tensor wrongIn = var(FLOAT, {2, 2, 5, 7}, "wrongIn");
  const Tensor halfW = var(HALF, {1, 3, 2, 3, 3}, "halfW");
  const Tensor wrongOut = var(FLOAT, {2, 3, 4, 4}, "wrongOut");
  program::Sequence prog;
  requireError<shape_error>([&] { linalg::convolution(g, wrongIn, w, p, false, prog); },
                            {"convolution", "in", "wrongIn", "[2,2,5,7]", "[2,2,5,6]"});
  requireError<type_error>([&] { linalg::convolution(g, in, halfW, p, false, prog); },
                           {"weights", "halfW", "half", "float"});
  requireError<shape_error>([&] { linalg::convolution(g, in, w, p, true, prog); },
                            {"weights", "[1,3,2,3,3]", "[1,2,3,3,3]"});
  requireError<shape_error>(
      [&] { linalg::convolutionWithOutput(g, in, w, wrongOut, p, false, prog); },
      {"out", "wrongOut", "[2,3,4,4]", "[2,3,3,4]"});
  requireError<invalid_option>(
      [&] { linalg::convolution(g, in, w, p, false, prog, "c", {{"notAnOption", "1"}}); },
      {"notAnOption"});
  requireError<invalid_option>(
      [&] { linalg::convolution(g, in, w, p, false, prog, "c", {{"pass", "SIDEWAYS"}}); },
      {"pass", "SIDEWAYS", "TRAINING_WU"});
  requireError<invalid_option>(
      [&] {
        linalg::convolution(g, in, w, p, false, prog, "c", {{"availableMemoryProportion", "0"}});
      },
      {"availableMemoryProportion"});
  requireError<invalid_option>(
      [&] { linalg::convolution(g, in, w, p, false, prog, "c", {{"partialsType", "half"}}); },
      {"partialsType", "half", "FLOAT"});
  requireError<invalid_option>(
      [&] { linalg::convolution(g, in, w, p, false, prog, "c", {{"enableFastReduce", "maybe"}}); },
      {"enableFastReduce", "maybe"});
  const std::pair<const char *, std::vector<std::string>> constraints[] = {
      {R"({"method": "winograd"})", {"planConstraints.method", "winograd", "library", "gemm"}},
      {R"({"serial": {"batch": 0}})", {"planConstraints.serial.batch", "positive"}},
      {R"({"serial": {"batch": 3}})", {"planConstraints.serial.batch = 3", "batch is 2"}},
      {R"({"serial": {"field": 2}})", {"planConstraints.serial.field", "unknown key"}},
      {R"({"tiles": 4})", {"planConstraints.tiles", "unknown key"}},
      {R"({"matMul": {"method": "fast"}})", {"planConstraints.method", "fast"}},
      {R"([1, 2])", {"planConstraints", "JSON object"}},
  };
  for (const auto &constraint : constraints) {
    const std::string json = constraint.first; // a copy: clang 14 lambdas capture no bindings
    INFO(json);
    requireError<invalid_option>(
        [&] {
          linalg::convolution(g, in, w, p, false, prog, "c", {{"planConstraints", json}});
        },
        constraint.second);
  }
  // PopLibs' own constraint keys and IPU-only options are accepted.
  linalg::convolutionValidateOptions(
      {{"planConstraints", R"({"method": "AMP", "inChansPerGroup": 8, "0": {"partition": {}}})"},
       {"use128BitConvUnitLoad", "true"},
       {"enableConvDithering", "false"},
       {"pass", "TRAINING_FWD"}});
  requireError<invalid_option>([&] { linalg::convolutionValidateOptions({{"bogus", "1"}}); },
                               {"bogus"});
  linalg::convolutionValidateOptions({{"allowTF32", "true"}});
  requireError<invalid_option>(
      [&] { linalg::convolutionValidateOptions({{"allowTF32", "sometimes"}}); },
      {"allowTF32", "sometimes"});

  const Tensor zDeltas = linalg::createConvOutput(g, p, "zDeltas");
  const Tensor badScale = var(HALF, {1}, "badScale");
  requireError<type_error>(
      [&] { linalg::convolutionWeightUpdate(g, zDeltas, w, in, p, badScale, prog); },
      {"convolutionWeightUpdate", "scale", "FLOAT"});
  requireError<shape_error>(
      [&] { linalg::calculateWeightDeltas(g, wrongOut, in, p, prog); },
      {"calculateWeightDeltas", "zDeltas", "wrongOut"});
  const Tensor wrongBiases = var(FLOAT, {4}, "wrongBiases");
  requireError<shape_error>(
      [&] { linalg::convolutionBiasUpdate(g, zDeltas, wrongBiases, 0.1f, {}, prog); },
      {"convolutionBiasUpdate", "biases", "{4}", "[3]"});
  requireError<shape_error>([&] { linalg::addBias(g, out, wrongBiases, prog); },
                            {"addBias", "biases", "{4}", "[3]"});
  requireError<shape_error>(
      [&] { linalg::weightsTransposeChansFlipXY(g, w, w, prog); },
      {"weightsTransposeChansFlipXY", "weightsOut", "[1,2,3,3,3]"});

  // Bad parameters are ConvParams::validate()'s errors.
  ConvParams tooBig = p;
  tooBig.kernelShape = {7, 3};
  requireError<shape_error>([&] { linalg::createInput(g, tooBig, "x"); }, {"kernel"});

  // The same graph still builds a good convolution, which compiles and runs.
  const Tensor y = linalg::convolution(g, in, w, p, false, prog, "good");
  g.createHostWrite("in", in);
  g.createHostWrite("w", w);
  g.createHostRead("y", y);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  const std::vector<float> ones(in.numElements(), 1.0f), weights(w.numElements(), 0.5f);
  e.writeTensor("in", ones.data(), ones.data() + ones.size());
  e.writeTensor("w", weights.data(), weights.data() + weights.size());
  e.run(0);
  std::vector<float> result(y.numElements());
  e.readTensor("y", result.data(), result.data() + result.size());
  for (float v : result)
    REQUIRE(v == 9.0f); // 2 channels x 9 taps x 1 x 0.5, no padding
}

TEST_CASE("convolution calls reject geometries that disagree with their operands",
          "[error][conv]") {
  Graph g(Target::createGeneric(2));
  auto var = [&](std::vector<std::size_t> shape, const char *name) {
    Tensor x = g.addVariable(FLOAT, shape, name);
    g.setTileMapping(x, 0);
    return x;
  };
  program::ConvGeometry geo;
  geo.batch = 1, geo.groups = 1, geo.inChans = 2, geo.outChans = 3;
  geo.inputField = {4}, geo.outputField = {2}, geo.taps = {3};
  geo.inputIndex = {{0, 1, 2, 1, 2, 3}};
  const Tensor in = var({1, 2, 4}, "in"), w = var({1, 3, 6}, "w"), out = var({1, 3, 2}, "out");
  program::ConvForward ok(in, w, out, geo, "ok");
  requireError<shape_error>([&] { program::ConvForward(in, w, var({1, 3, 3}, "o3"), geo, "c"); },
                            {"ConvForward", "out", "o3", "[1,3,2]"});
  program::ConvGeometry badIndex = geo;
  badIndex.inputIndex[0][5] = 4;
  requireError<index_error>([&] { program::ConvForward(in, w, out, badIndex, "c"); },
                            {"ConvForward", "input index 4 of 4"});
  program::ConvGeometry badTable = geo;
  badTable.inputIndex[0].pop_back();
  requireError<shape_error>([&] { program::ConvForward(in, w, out, badTable, "c"); },
                            {"5 index entries", "2 outputs x 3 taps"});
  program::ConvGeometry badDims = geo;
  badDims.taps.push_back(1);
  requireError<shape_error>([&] { program::ConvBackwardData(out, w, in, badDims, "c"); },
                            {"ConvBackwardData", "must agree"});
  requireError<type_error>(
      [&] {
        program::ConvBackwardFilter(out, in, w, geo, {var({2}, "twoScales"), true}, "c");
      },
      {"ConvBackwardFilter", "scale"});
  // A backward call writes in its operands' one type: half gradients into a float input
  // gradient are refused, not written as half bits.
  Tensor halfOut = g.addVariable(HALF, {1, 3, 2}, "halfOut"),
         halfW = g.addVariable(HALF, {1, 3, 6}, "halfW");
  g.setTileMapping(halfOut, 0);
  g.setTileMapping(halfW, 0);
  requireError<type_error>([&] { program::ConvBackwardData(halfOut, halfW, in, geo, "c"); },
                           {"ConvBackwardData", "outGrad, weights and inGrad", "one type"});
}
