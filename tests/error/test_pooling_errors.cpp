// Misuse of aspen::nn's pooling builders: the user error naming the argument and the rule, for
// parameters, shapes, types, options and unmapped inputs; afterwards the same graph still
// builds, compiles and runs a good pooling.
#include "correctness/test_fill_harness.hpp"

#include <aspen/Engine.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Pooling.hpp>

#include <catch2/catch.hpp>

#include <vector>

using namespace aspen;
using dmtest::requireError;
using nn::PoolingType;
using nn::pooling::PoolParams;

TEST_CASE("pooling builders reject bad parameters, tensors and options", "[error][pooling]") {
  Graph g(Target::createGeneric(2));
  nn::addCodelets(g);
  const PoolParams p(PoolingType::MAX, {4, 4}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 3, 2, FLOAT);
  auto var = [&](Type t, std::vector<std::size_t> shape, const char *name) {
    Tensor x = g.addVariable(t, shape, name);
    g.setTileMapping(x, 0);
    return x;
  };
  const Tensor in = var(FLOAT, {2, 3, 4, 4}, "in");
  program::Sequence prog;
  requireError<shape_error>([&] { nn::pooling::pool(g, p, var(FLOAT, {2, 3, 4, 5}, "wide"), prog); },
                            {"pool", "in", "wide", "{2,3,4,5}", "[2,3,4,4]"});
  requireError<type_error>([&] { nn::pooling::pool(g, p, var(HALF, {2, 3, 4, 4}, "h"), prog); },
                           {"pool", "in", "half", "float"});
  PoolParams noOutput = p;
  noOutput.kernelShape = {5, 2};
  requireError<invalid_option>([&] { nn::pooling::pool(g, noOutput, in, prog); },
                               {"PoolParams", "dimension 0", "fewer than the kernel's 5"});
  PoolParams zeroStride = p;
  zeroStride.stride = {1, 0};
  requireError<invalid_option>([&] { nn::pooling::pool(g, zeroStride, in, prog); },
                               {"dimension 1", "stride of 0"});
  requireError<invalid_option>(
      [&] { nn::pooling::pool(g, p, in, prog, "p", {{"maxPoolGradient", "last"}}); },
      {"maxPoolGradient", "last"});
  requireError<invalid_option>(
      [&] { nn::pooling::pool(g, p, in, prog, "p", {{"avgIncludePaddin", "true"}}); },
      {"avgIncludePaddin"});
  const Tensor unmapped = g.addVariable(FLOAT, {2, 3, 4, 4}, "unmapped");
  requireError<invalid_tile_mapping>([&] { nn::pooling::pool(g, p, unmapped, prog); },
                                     {"unmapped"});
  // The gradients: MAX needs the forward's tensors, and each must have its shape.
  const Tensor dy = var(FLOAT, {2, 3, 2, 2}, "dy");
  requireError<invalid_option>([&] { nn::pooling::poolInputGradient(g, p, 1, dy, prog); },
                               {"MAX", "forward's input and output"});
  requireError<shape_error>(
      [&] {
        nn::pooling::poolInputGradient(g, p, in, var(FLOAT, {2, 3, 3, 2}, "badOut"), dy, false,
                                       prog);
      },
      {"poolInputGradient", "pooled", "badOut", "{2,3,3,2}", "[2,3,2,2]"});
  PoolParams avg = p;
  avg.poolingType = PoolingType::AVG;
  requireError<invalid_option>([&] { nn::pooling::poolInputGradient(g, avg, 2, dy, prog); },
                               {"fwdChansPerGroup = 2", "3 channels"});

  // Still usable: a good pooling runs (2x2/2 max of 0..15 in each channel: 5, 7, 13, 15).
  const Tensor pooled = nn::pooling::pool(g, p, in, prog, "good");
  g.createHostWrite("in", in);
  g.createHostRead("pooled", pooled);
  Engine e(g, prog);
  e.load(Device::createModelDevice(g.getTarget()));
  std::vector<float> values(in.numElements());
  for (std::size_t i = 0; i < values.size(); ++i)
    values[i] = float(i % 16);
  e.writeTensor("in", values.data(), values.data() + values.size());
  e.run(0);
  std::vector<float> result(pooled.numElements());
  e.readTensor("pooled", result.data(), result.data() + result.size());
  for (std::size_t i = 0; i < result.size(); ++i)
    REQUIRE(result[i] == std::vector<float>{5, 7, 13, 15}[i % 4]);
}
