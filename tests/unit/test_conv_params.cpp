// ConvParams and ConvUtil on the host: output sizes worked out by hand for each transform, the
// double-precision reference (tests/ConvReference.hpp) against hand-computed values and its own
// adjoints, canonicalize() keeping what the convolution computes, equality, order and hashing,
// and getGradientParams / getWeightUpdateParams run through the reference with the operand
// arrangements ConvUtil.hpp documents, against the reference's exact adjoints.
#include "ConvReference.hpp"

#include <aspen/linalg/ConvParams.hpp>
#include <aspen/linalg/ConvUtil.hpp>
#include <poplin/ConvParams.hpp>
#include <poplin/ConvUtil.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <unordered_set>
#include <vector>

using namespace aspen;
using namespace aspen::linalg;

namespace {

using Shape = std::vector<std::size_t>;
using U = std::vector<unsigned>;

ConvParams conv1d(std::size_t in, std::size_t kernel, std::size_t ci = 1, std::size_t co = 1,
                  std::size_t groups = 1, std::size_t batch = 1) {
  return ConvParams(FLOAT, batch, {in}, {kernel}, ci, co, groups);
}

std::vector<double> randomValues(std::size_t n, std::mt19937 &rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<double> v(n);
  for (double &x : v)
    x = u(rng);
  return v;
}

double dot(const std::vector<double> &a, const std::vector<double> &b) {
  REQUIRE(a.size() == b.size());
  double s = 0;
  for (std::size_t i = 0; i != a.size(); ++i)
    s += a[i] * b[i];
  return s;
}

void requireClose(const std::vector<double> &actual, const std::vector<double> &expected) {
  REQUIRE(actual.size() == expected.size());
  for (std::size_t i = 0; i != actual.size(); ++i) {
    INFO("element " << i);
    REQUIRE(actual[i] == Approx(expected[i]).margin(1e-12));
  }
}

// Random valid parameters from a seeded generator: the common layer transforms (stride, padding,
// kernel dilation) and, with `everything`, every other transform too. Drawn until valid.
ConvParams randomParams(std::mt19937 &rng, std::size_t dims, bool everything) {
  const auto pick = [&](unsigned lo, unsigned hi) {
    return std::uniform_int_distribution<unsigned>(lo, hi)(rng);
  };
  for (;;) {
    const std::size_t kernels[] = {1, 3, 5};
    Shape field(dims), kernel(dims);
    for (std::size_t d = 0; d != dims; ++d) {
      field[d] = 2 * pick(1, dims == 3 ? 2 : 5) + 1; // 3-D fields stay small
      kernel[d] = kernels[pick(0, 2)];
    }
    ConvParams p(FLOAT, pick(1, 2), field, kernel, pick(1, 3), pick(1, 3), pick(1, 2));
    for (std::size_t d = 0; d != dims; ++d) {
      p.outputTransform.stride[d] = pick(1, 3);
      p.inputTransform.paddingLower[d] = pick(0, 3);
      p.inputTransform.paddingUpper[d] = pick(0, 3);
      p.kernelTransform.dilation[d] = pick(1, 2);
      if (!everything)
        continue;
      p.inputTransform.truncationLower[d] = pick(0, 2);
      p.inputTransform.truncationUpper[d] = pick(0, 2);
      p.inputTransform.dilation[d] = pick(1, 2);
      p.inputTransform.flip[d] = pick(0, 1);
      p.kernelTransform.truncationLower[d] = pick(0, 1);
      p.kernelTransform.truncationUpper[d] = pick(0, 1);
      p.kernelTransform.paddingLower[d] = pick(0, 1);
      p.kernelTransform.paddingUpper[d] = pick(0, 1);
      p.kernelTransform.flip[d] = pick(0, 1);
      p.outputTransform.truncationLower[d] = pick(0, 2);
      p.outputTransform.truncationUpper[d] = pick(0, 2);
      p.outputTransform.paddingLower[d] = pick(0, 2);
      p.outputTransform.paddingUpper[d] = pick(0, 2);
    }
    try {
      p.validate();
      return p;
    } catch (const error &) {
    }
  }
}

// The layer sweep of the brief for 1-D: every stride 1-3, padding 0-3 at each end, kernel
// dilation 1-2, kernel 1/3/5 and groups 1/2 on an odd field, where valid.
std::vector<ConvParams> layerSweep1d() {
  std::vector<ConvParams> all;
  for (unsigned stride = 1; stride <= 3; ++stride)
    for (unsigned lower = 0; lower <= 3; ++lower)
      for (unsigned upper = 0; upper <= 3; ++upper)
        for (unsigned dilation = 1; dilation <= 2; ++dilation)
          for (std::size_t kernel : {1, 3, 5})
            for (std::size_t groups : {1, 2}) {
              ConvParams p = conv1d(7 + 2 * (lower % 2), kernel, 2, 3, groups, 2);
              p.outputTransform.stride = {stride};
              p.inputTransform.paddingLower = {lower};
              p.inputTransform.paddingUpper = {upper};
              p.kernelTransform.dilation = {dilation};
              if (p.getTransformedInputSize(0) >= p.getTransformedKernelSize(0))
                all.push_back(p);
            }
  return all;
}

// The input gradient through getGradientParams, run by the reference as ConvUtil.hpp says.
void checkGradientParams(const ConvParams &fwd, std::mt19937 &rng) {
  INFO(fwd);
  const ConvParams bwd = getGradientParams(fwd);
  INFO("gradient params " << bwd);
  REQUIRE(bwd.inputFieldShape == fwd.getOutputFieldShape());
  REQUIRE(bwd.getOutputFieldShape() == fwd.inputFieldShape);
  REQUIRE(bwd.canonicalize() == bwd);
  const auto weights = randomValues(convref::weightElements(fwd), rng);
  const auto outGrad = randomValues(convref::outputElements(fwd), rng);
  requireClose(convref::forward(bwd, outGrad, convref::transposeAndFlipWeights(fwd, weights)),
               convref::backwardData(fwd, outGrad, weights));
}

// The weight deltas through getWeightUpdateParams, with the arrangement ConvUtil.hpp documents.
void checkWeightUpdateParams(const ConvParams &fwd, std::mt19937 &rng) {
  INFO(fwd);
  const ConvParams wu = getWeightUpdateParams(fwd);
  INFO("weight update params " << wu);
  REQUIRE(wu.kernelShape == fwd.getOutputFieldShape());
  REQUIRE(wu.getOutputFieldShape() == fwd.kernelShape);
  REQUIRE(wu.canonicalize() == wu);
  const auto acts = randomValues(convref::inputElements(fwd), rng);
  const auto outGrad = randomValues(convref::outputElements(fwd), rng);
  const auto wuOut = convref::forward(wu, convref::weightUpdateInput(fwd, acts),
                                      convref::weightUpdateWeights(fwd, outGrad));
  requireClose(convref::weightDeltasFromUpdate(fwd, wuOut),
               convref::weightDeltas(fwd, outGrad, acts));
}

} // namespace

TEST_CASE("conv output sizes follow each transform, worked out by hand", "[unit][conv]") {
  // Length 5, kernel 3, padding 1 each side, stride 2: 7 padded, 5 positions, 3 kept.
  ConvParams p = conv1d(5, 3);
  p.inputTransform.paddingLower = {1};
  p.inputTransform.paddingUpper = {1};
  p.outputTransform.stride = {2};
  CHECK(p.getTransformedInputSize(0) == 7);
  CHECK(p.getUntransformedOutputSize(0) == 5);
  CHECK(p.getOutputFieldShape() == Shape{3});

  // Asymmetric padding 0 and 2, stride 3: 9 padded, 7 positions, kept 0, 3, 6.
  p = conv1d(7, 3);
  p.inputTransform.paddingUpper = {2};
  p.outputTransform.stride = {3};
  CHECK(p.getOutputSize(0) == 3);

  // Kernel dilation 2: kernel 3 spans 5, length 9 gives 5 positions.
  p = conv1d(9, 3);
  p.kernelTransform.dilation = {2};
  CHECK(p.getTransformedKernelSize(0) == 5);
  CHECK(p.getOutputSize(0) == 5);

  // Input dilation 2: length 4 becomes 7; kernel 2 gives 6 positions.
  p = conv1d(4, 2);
  p.inputTransform.dilation = {2};
  CHECK(p.getTransformedInputSize(0) == 7);
  CHECK(p.getOutputSize(0) == 6);

  // Truncation everywhere: input 10 minus 2 and 1 is 7, kernel 4 minus 1 is 3, 5 positions,
  // output truncated by 1 and 1 to 3, strided by 2 to 2, padded by 1 before: 3.
  p = conv1d(10, 4);
  p.inputTransform.truncationLower = {2};
  p.inputTransform.truncationUpper = {1};
  p.kernelTransform.truncationUpper = {1};
  p.outputTransform.truncationLower = {1};
  p.outputTransform.truncationUpper = {1};
  p.outputTransform.stride = {2};
  p.outputTransform.paddingLower = {1};
  CHECK(p.getTruncatedInputSize(0) == 7);
  CHECK(p.getTruncatedKernelSize(0) == 3);
  CHECK(p.getUntransformedOutputSize(0) == 5);
  CHECK(p.getOutputSize(0) == 3);
  p.inputTransform.flip = {true};
  p.kernelTransform.flip = {true};
  CHECK(p.getOutputSize(0) == 3); // flipping moves elements, not sizes

  // 2-D: {7, 6} with kernel {3, 2}, stride {2, 1}, padding {1, 0} below and {1, 2} above:
  // dimension 0: 9 padded, 7 positions, 4 kept; dimension 1: 8 padded, 7 positions.
  p = ConvParams(HALF, FLOAT, 2, {7, 6}, {3, 2}, 3, 4, 2);
  p.inputTransform.paddingLower = {1, 0};
  p.inputTransform.paddingUpper = {1, 2};
  p.outputTransform.stride = {2, 1};
  CHECK(p.getOutputFieldShape() == Shape{4, 7});
  CHECK(p.getNumInputChans() == 6);
  CHECK(p.getNumOutputChans() == 8);

  // 3-D: {4, 5, 6} with kernel {1, 2, 3}, stride {1, 2, 3}, kernel dilation 2 in the last:
  // 4 positions; 4 kept 2; kernel spans 5, 2 positions, kept 1.
  p = ConvParams(FLOAT, 1, {4, 5, 6}, {1, 2, 3}, 1, 1, 1);
  p.outputTransform.stride = {1, 2, 3};
  p.kernelTransform.dilation = {1, 1, 2};
  CHECK(p.getOutputFieldShape() == Shape{4, 2, 1});

  // 0-D, batch 0 and 0 channels are valid.
  ConvParams scalar(FLOAT, 3, {}, {}, 2, 5, 1);
  CHECK_NOTHROW(scalar.validate());
  CHECK(scalar.getOutputFieldShape().empty());
  CHECK(convref::forward(scalar, {1, 2, 3, 4, 5, 6}, {1, 0, 0, 1, 1, 1, 2, 0, 0, 0}) ==
        std::vector<double>{1, 2, 3, 2, 0, 3, 4, 7, 6, 0, 5, 6, 11, 10, 0});
  const ConvParams empty(FLOAT, 0, {5, 5}, {3, 3}, 0, 0, 4);
  CHECK_NOTHROW(empty.validate());
  CHECK(empty.getOutputFieldShape() == Shape{3, 3});
  CHECK_NOTHROW(getGradientParams(empty).validate());
  CHECK_NOTHROW(getWeightUpdateParams(empty).validate());

  // The reference works out every output shape above on its own.
  std::mt19937 rng(7);
  for (int i = 0; i != 200; ++i) {
    const ConvParams r = randomParams(rng, 1 + i % 3, true);
    INFO(r);
    REQUIRE(convref::outputField(r) == r.getOutputFieldShape());
  }
}

TEST_CASE("the conv reference gives hand-computed values", "[unit][conv]") {
  // [1 2 3 4 5] padded to [0 1 2 3 4 5 0], kernel [1 10 100], stride 2: positions 0, 2, 4.
  ConvParams p = conv1d(5, 3);
  p.inputTransform.paddingLower = {1};
  p.inputTransform.paddingUpper = {1};
  p.outputTransform.stride = {2};
  const std::vector<double> in{1, 2, 3, 4, 5}, w{1, 10, 100};
  CHECK(convref::forward(p, in, w) == std::vector<double>{210, 432, 54});
  p.kernelTransform.flip = {true}; // kernel [100 10 1]
  CHECK(convref::forward(p, in, w) == std::vector<double>{12, 234, 450});
  p.kernelTransform.flip = {false};
  p.outputTransform.paddingLower = {1};
  p.outputTransform.paddingUpper = {2};
  CHECK(convref::forward(p, in, w) == std::vector<double>{0, 210, 432, 54, 0, 0});
  // Its adjoints, by hand: out = [210 432 54] reads x0..x4 as 10x0+100x1, x1+10x2+100x3,
  // x3+10x4 (padding dropped), and w through [0 1 2], [2 3 4], [4 5 0].
  p.outputTransform.paddingLower = {0};
  p.outputTransform.paddingUpper = {0};
  CHECK(convref::backwardData(p, {1, 2, 3}, w) == std::vector<double>{10, 102, 20, 203, 30});
  CHECK(convref::weightDeltas(p, {1, 2, 3}, in) == std::vector<double>{16, 22, 10});

  // Input dilation 2: [1 0 2 0 3] with kernel [1 10].
  p = conv1d(3, 2);
  p.inputTransform.dilation = {2};
  CHECK(convref::forward(p, {1, 2, 3}, {1, 10}) == std::vector<double>{1, 20, 2, 30});
  // Truncation: [1 2 3 4 5] truncated to [2 3 4], kernel [1 10 100] truncated to [10 100].
  p = conv1d(5, 3);
  p.inputTransform.truncationLower = {1};
  p.inputTransform.truncationUpper = {1};
  p.kernelTransform.truncationLower = {1};
  CHECK(convref::forward(p, in, w) == std::vector<double>{320, 430});

  // 2-D: 3x3 of 1..9 with the 2x2 identity kernel.
  const ConvParams q(FLOAT, 1, {3, 3}, {2, 2}, 1, 1, 1);
  CHECK(convref::forward(q, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 0, 1}) ==
        std::vector<double>{6, 8, 12, 14});

  // Two groups of one channel: each group sees only its own channel and weights.
  const ConvParams g = conv1d(2, 1, 1, 1, 2, 1);
  CHECK(convref::forward(g, {1, 2, 3, 4}, {10, 100}) == std::vector<double>{10, 20, 300, 400});

  // Bias deltas sum over batch and field: outGrad [2, 2, 2].
  CHECK(convref::biasDeltas(conv1d(2, 1, 1, 2, 1, 2), {1, 2, 3, 4, 5, 6, 7, 8}) ==
        std::vector<double>{14, 22});
}

TEST_CASE("the conv reference's backward passes are the adjoints of its forward pass",
          "[unit][conv]") {
  std::mt19937 rng(11);
  for (int i = 0; i != 150; ++i) {
    const ConvParams p = randomParams(rng, 1 + i % 3, true);
    INFO(p);
    const auto x = randomValues(convref::inputElements(p), rng);
    const auto w = randomValues(convref::weightElements(p), rng);
    const auto dy = randomValues(convref::outputElements(p), rng);
    const double forward = dot(convref::forward(p, x, w), dy);
    CHECK(dot(x, convref::backwardData(p, dy, w)) == Approx(forward).margin(1e-12));
    CHECK(dot(w, convref::weightDeltas(p, dy, x)) == Approx(forward).margin(1e-12));
  }
}

TEST_CASE("canonicalize keeps what a convolution computes", "[unit][conv]") {
  // Stride 2 over 6 positions keeps 0, 2, 4: position 5 and input element 5 go.
  ConvParams p = conv1d(6, 1);
  p.outputTransform.stride = {2};
  ConvParams expected = p;
  expected.inputTransform.truncationUpper = {1};
  CHECK(p.canonicalize() == expected);

  // Padding 3 each side of 5 with kernel 3: the first and last positions see only padding and
  // become output padding; the padding the kernel cannot reach goes.
  p = conv1d(5, 3);
  p.inputTransform.paddingLower = {3};
  p.inputTransform.paddingUpper = {3};
  expected = p;
  expected.inputTransform.paddingLower = {2};
  expected.inputTransform.paddingUpper = {2};
  expected.outputTransform.paddingLower = {1};
  expected.outputTransform.paddingUpper = {1};
  CHECK(p.canonicalize() == expected);

  // A kernel that is all padding gives PopLibs' zero convolution.
  p = ConvParams(FLOAT, 2, {4, 3}, {3, 2}, 1, 1, 1);
  p.kernelTransform.truncationUpper = {3, 0};
  p.kernelTransform.paddingLower = {1, 0};
  const ConvParams zero = p.canonicalize();
  CHECK(zero.inputTransform ==
        ConvParams::InputTransform({0, 0}, {4, 3}, {1, 1}, {1, 1}, {0, 0}, {false, false}));
  CHECK(zero.kernelTransform ==
        ConvParams::InputTransform({0, 0}, {3, 2}, {1, 1}, {1, 1}, {0, 0}, {false, false}));
  CHECK(zero.outputTransform ==
        ConvParams::OutputTransform({0, 0}, {1, 1}, {1, 1}, {0, 0}, {4, 2}));
  CHECK(zero.getOutputFieldShape() == p.getOutputFieldShape());

  // Random parameters: same output shape and values, and canonical forms are fixed points.
  std::mt19937 rng(13);
  for (int i = 0; i != 300; ++i) {
    const ConvParams r = randomParams(rng, 1 + i % 3, true);
    const ConvParams c = r.canonicalize();
    INFO(r << "canonical " << c);
    REQUIRE(c.getOutputFieldShape() == r.getOutputFieldShape());
    REQUIRE(c.canonicalize() == c);
    const auto x = randomValues(convref::inputElements(r), rng);
    const auto w = randomValues(convref::weightElements(r), rng);
    requireClose(convref::forward(c, x, w), convref::forward(r, x, w));
  }
}

TEST_CASE("getInputIndex and the ranges agree with the reference's multiply-accumulates",
          "[unit][conv]") {
  std::mt19937 rng(17);
  for (int i = 0; i != 200; ++i) {
    ConvParams p = randomParams(rng, 1, true);
    p.batchSize = 1;
    p.numConvGroups = 1;
    p.inputChannelsPerConvGroup = 1;
    p.outputChannelsPerConvGroup = 1;
    INFO(p);
    // The reference's 1-D meetings, as (output, kernel) -> input.
    std::vector<std::vector<long long>> meets(p.getOutputSize(0),
                                              std::vector<long long>(p.kernelShape[0], -1));
    convref::forEachMac(p, [&](std::size_t o, std::size_t in, std::size_t k) {
      meets[o][k] = static_cast<long long>(in);
    });
    std::size_t outFirst = SIZE_MAX, outEnd = 0, inFirst = SIZE_MAX, inEnd = 0, kFirst = SIZE_MAX,
                kEnd = 0;
    for (std::size_t o = 0; o != meets.size(); ++o)
      for (std::size_t k = 0; k != meets[o].size(); ++k) {
        const auto index = getInputIndex(0, o, k, p);
        REQUIRE(index.has_value() == (meets[o][k] >= 0));
        if (!index)
          continue;
        REQUIRE(*index == static_cast<std::size_t>(meets[o][k]));
        outFirst = std::min(outFirst, o), outEnd = std::max(outEnd, o + 1);
        inFirst = std::min(inFirst, *index), inEnd = std::max(inEnd, *index + 1);
        kFirst = std::min(kFirst, k), kEnd = std::max(kEnd, k + 1);
      }
    const std::pair<std::size_t, std::size_t> none{0, 0};
    const auto hull = [&](std::size_t first, std::size_t end) {
      return first < end ? std::pair<std::size_t, std::size_t>{first, end} : none;
    };
    const std::pair<std::size_t, std::size_t> outputs{0, p.getOutputSize(0)},
        kernel{0, p.kernelShape[0]}, inputs{0, p.inputFieldShape[0]};
    CHECK(getOutputRangeForKernelRange(0, outputs, kernel, p) == hull(outFirst, outEnd));
    CHECK(getInputRange(0, outputs, kernel, p) == hull(inFirst, inEnd));
    CHECK(getKernelRange(0, outputs, inputs, p) == hull(kFirst, kEnd));
  }
  CHECK(getDilatedSize(0, 3) == 0);
  CHECK(getDilatedSize(1, 3) == 1);
  CHECK(getDilatedSize(4, 3) == 10);
}

TEST_CASE("conv params compare, order and hash by every field", "[unit][conv]") {
  ConvParams base(FLOAT, 2, {5, 6}, {3, 3}, 4, 8, 2);
  base.inputTransform.paddingLower = {1, 1};
  std::vector<ConvParams> variants(17, base);
  variants[1].inputType = HALF;
  variants[2].outputType = HALF;
  variants[3].batchSize = 3;
  variants[4].inputFieldShape = {5, 7};
  variants[5].kernelShape = {3, 1};
  variants[6].inputChannelsPerConvGroup = 5;
  variants[7].outputChannelsPerConvGroup = 9;
  variants[8].numConvGroups = 1;
  variants[9].inputTransform.truncationLower = {0, 1};
  variants[10].inputTransform.dilation = {2, 1};
  variants[11].inputTransform.flip = {false, true};
  variants[12].kernelTransform.paddingUpper = {1, 0};
  variants[13].kernelTransform.flip = {true, false};
  variants[14].outputTransform.stride = {1, 2};
  variants[15].outputTransform.paddingLower = {0, 1};
  variants[16].outputTransform.truncationUpper = {1, 0};
  std::unordered_set<ConvParams> set(variants.begin(), variants.end());
  CHECK(set.size() == variants.size());
  for (std::size_t i = 1; i != variants.size(); ++i) {
    INFO("variant " << i);
    CHECK(variants[i] != base);
    CHECK((variants[i] < base) != (base < variants[i]));
    CHECK(std::hash<ConvParams>()(variants[i]) != std::hash<ConvParams>()(base));
  }
  ConvParams copy = base;
  CHECK(copy == base);
  CHECK_FALSE(copy < base);
  CHECK(std::hash<ConvParams>()(copy) == std::hash<ConvParams>()(base));
  CHECK(std::hash<ConvParams::InputTransform>()(copy.inputTransform) ==
        hash_value(base.inputTransform));
  CHECK(std::hash<ConvParams::OutputTransform>()(copy.outputTransform) ==
        hash_value(base.outputTransform));

  std::ostringstream os;
  os << base;
  for (const char *word :
       {"inputType", "float", "batchSize", "inputFieldShape", "{5,6}", "inputPaddingLower", "{1,1}",
        "kernelFlip", "stride", "outputFieldShape", "{4,5}"})
    CHECK_THAT(os.str(), Catch::Contains(word));
}

TEST_CASE("getGradientParams is the adjoint in the input, with transposed flipped weights",
          "[unit][conv]") {
  std::mt19937 rng(19);
  for (const ConvParams &p : layerSweep1d())
    checkGradientParams(p, rng);
  for (int i = 0; i != 150; ++i)
    checkGradientParams(randomParams(rng, 2, false), rng);
  for (int i = 0; i != 200; ++i)
    checkGradientParams(randomParams(rng, 1 + i % 3, true), rng);
}

TEST_CASE("getWeightUpdateParams is the adjoint in the weights, with rearranged operands",
          "[unit][conv]") {
  std::mt19937 rng(23);
  for (const ConvParams &p : layerSweep1d())
    checkWeightUpdateParams(p, rng);
  for (int i = 0; i != 150; ++i)
    checkWeightUpdateParams(randomParams(rng, 2, false), rng);
  for (int i = 0; i != 200; ++i)
    checkWeightUpdateParams(randomParams(rng, 1 + i % 3, true), rng);
}

TEST_CASE("poplin's conv params names are Aspen's", "[unit][conv][compat]") {
  poplin::ConvParams p(poplar::HALF, 1, {8}, {3}, 2, 2, 1);
  p.outputTransform.stride = {2};
  CHECK(p.getOutputFieldShape() == Shape{3});
  CHECK(poplin::getGradientParams(p).getOutputFieldShape() == Shape{8});
  CHECK(poplin::getWeightUpdateParams(p).getOutputFieldShape() == Shape{3});
}
