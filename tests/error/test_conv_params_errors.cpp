// Misuse of ConvParams and ConvUtil: unsupported types, zero groups, dilations and strides,
// vectors of the wrong length, truncation past what it truncates, kernels larger than the input,
// sizes that overflow, and indices or ranges out of range. Each raises its aspen::error subclass
// with a message naming the field, the dimension and the values; canonicalize and the backward
// passes' parameters raise what validate() raises.
#include <aspen/Error.hpp>
#include <aspen/linalg/ConvParams.hpp>
#include <aspen/linalg/ConvUtil.hpp>

#include <catch2/catch.hpp>

#include <functional>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::linalg;
using Catch::Contains;

namespace {

// The message of the expected error type raised by f; fails when none is raised.
template <class E> std::string messageOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const E &e) {
    return e.what();
  }
  FAIL("no error of the expected type");
  return {};
}

void checkWords(const std::string &message, const std::vector<std::string> &words) {
  INFO(message);
  for (const auto &w : words)
    CHECK_THAT(message, Contains(w));
}

// validate(), canonicalize() and both backward passes' parameters all raise E naming `words`.
template <class E> void checkRefused(const ConvParams &p, const std::vector<std::string> &words) {
  checkWords(messageOf<E>([&] { p.validate(); }), words);
  checkWords(messageOf<E>([&] { p.canonicalize(); }), words);
  checkWords(messageOf<E>([&] { getGradientParams(p); }), words);
  checkWords(messageOf<E>([&] { getWeightUpdateParams(p); }), words);
}

ConvParams conv2d() { return ConvParams(FLOAT, 2, {7, 6}, {3, 3}, 4, 8, 2); }

} // namespace

TEST_CASE("conv params with unsupported types are refused, naming both types", "[error][conv]") {
  checkRefused<type_error>(ConvParams(FLOAT, HALF, 1, {5}, {3}, 1, 1, 1),
                           {"inputType float", "outputType half", "half and float"});
  checkRefused<type_error>(ConvParams(INT, 1, {5}, {3}, 1, 1, 1), {"inputType int"});
  checkRefused<type_error>(ConvParams(HALF, UNSIGNED_INT, 1, {5}, {3}, 1, 1, 1),
                           {"outputType unsigned int"});
  CHECK_NOTHROW(ConvParams(HALF, FLOAT, 1, {5}, {3}, 1, 1, 1).validate());
  CHECK_NOTHROW(ConvParams(HALF, 1, {5}, {3}, 1, 1, 1).validate());
}

TEST_CASE("conv params with zero groups, dilation or stride are refused", "[error][conv]") {
  ConvParams p = conv2d();
  p.numConvGroups = 0;
  checkRefused<invalid_option>(p, {"numConvGroups", "0", "at least 1"});

  p = conv2d();
  p.inputTransform.dilation = {1, 0};
  checkRefused<invalid_option>(p, {"inputTransform.dilation[1] is 0", "at least 1"});
  p = conv2d();
  p.kernelTransform.dilation = {0, 1};
  checkRefused<invalid_option>(p, {"kernelTransform.dilation[0] is 0"});
  p = conv2d();
  p.outputTransform.stride = {2, 0};
  checkRefused<invalid_option>(p, {"outputTransform.stride[1] is 0"});
}

TEST_CASE("conv params whose vectors do not match the field dimensions are refused",
          "[error][conv]") {
  ConvParams p = conv2d();
  p.kernelShape = {3};
  checkRefused<shape_error>(p, {"kernelShape {3}", "1 dimensions", "inputFieldShape {7,6}", "2"});

  using Setter = std::function<void(ConvParams &)>;
  const std::vector<std::pair<std::string, Setter>> vectors = {
      {"inputTransform.truncationLower",
       [](ConvParams &c) { c.inputTransform.truncationLower = {0}; }},
      {"inputTransform.truncationUpper",
       [](ConvParams &c) { c.inputTransform.truncationUpper = {0}; }},
      {"inputTransform.dilation", [](ConvParams &c) { c.inputTransform.dilation = {1}; }},
      {"inputTransform.paddingLower", [](ConvParams &c) { c.inputTransform.paddingLower = {0}; }},
      {"inputTransform.paddingUpper", [](ConvParams &c) { c.inputTransform.paddingUpper = {0}; }},
      {"inputTransform.flip", [](ConvParams &c) { c.inputTransform.flip = {false}; }},
      {"kernelTransform.truncationLower",
       [](ConvParams &c) { c.kernelTransform.truncationLower = {0}; }},
      {"kernelTransform.truncationUpper",
       [](ConvParams &c) { c.kernelTransform.truncationUpper = {0}; }},
      {"kernelTransform.dilation", [](ConvParams &c) { c.kernelTransform.dilation = {1}; }},
      {"kernelTransform.paddingLower", [](ConvParams &c) { c.kernelTransform.paddingLower = {0}; }},
      {"kernelTransform.paddingUpper", [](ConvParams &c) { c.kernelTransform.paddingUpper = {0}; }},
      {"kernelTransform.flip", [](ConvParams &c) { c.kernelTransform.flip = {false}; }},
      {"outputTransform.truncationLower",
       [](ConvParams &c) { c.outputTransform.truncationLower = {0}; }},
      {"outputTransform.truncationUpper",
       [](ConvParams &c) { c.outputTransform.truncationUpper = {0}; }},
      {"outputTransform.stride", [](ConvParams &c) { c.outputTransform.stride = {1}; }},
      {"outputTransform.paddingLower", [](ConvParams &c) { c.outputTransform.paddingLower = {0}; }},
      {"outputTransform.paddingUpper", [](ConvParams &c) { c.outputTransform.paddingUpper = {0}; }},
  };
  for (const auto &[name, shorten] : vectors) {
    p = conv2d();
    shorten(p);
    checkRefused<shape_error>(p, {name, "has 1 elements", "2 field dimensions"});
  }
}

TEST_CASE("conv params that truncate past a size or whose kernel outgrows the input are refused",
          "[error][conv]") {
  ConvParams p = conv2d();
  p.inputTransform.truncationLower = {0, 4};
  p.inputTransform.truncationUpper = {0, 3};
  checkRefused<shape_error>(p, {"inputTransform.truncationLower[1] + "
                                "inputTransform.truncationUpper[1] = 4 + 3 exceeds "
                                "inputFieldShape[1] = 6"});
  p = conv2d();
  p.kernelTransform.truncationUpper = {4, 0};
  checkRefused<shape_error>(p,
                            {"kernelTransform.truncationLower[0]", "0 + 4", "kernelShape[0] = 3"});
  p = conv2d();
  p.outputTransform.truncationLower = {3, 0};
  p.outputTransform.truncationUpper = {3, 0};
  checkRefused<shape_error>(
      p, {"outputTransform.truncationLower[0]", "3 + 3", "the 5 elements", "dimension 0"});

  // PopLibs refuses a transformed kernel larger than the transformed input, and an empty one.
  p = ConvParams(FLOAT, 1, {4, 3}, {3, 5}, 1, 1, 1);
  checkRefused<shape_error>(p, {"dimension 1", "transformed kernel (size 5", "kernelShape[1] = 5",
                                "transformed input (size 3", "inputFieldShape[1] = 3"});
  p.inputTransform.paddingUpper = {0, 2}; // 5: now it fits
  CHECK_NOTHROW(p.validate());
  p.kernelTransform.dilation = {1, 2}; // 9 again does not
  checkRefused<shape_error>(p, {"transformed kernel (size 9"});
  p = conv2d();
  p.kernelTransform.truncationLower = {0, 2};
  p.kernelTransform.truncationUpper = {0, 1};
  checkRefused<shape_error>(p,
                            {"dimension 1", "transformed kernel is empty", "kernelShape[1] = 3"});
}

TEST_CASE("conv params whose sizes overflow are refused", "[error][conv]") {
  const std::size_t big = std::size_t(1) << 40;
  checkRefused<shape_error>(ConvParams(FLOAT, big, {big}, {1}, 1, 1, 1),
                            {"inputFieldShape[0] = 1099511627776", "2^32 - 1"});
  checkRefused<shape_error>(ConvParams(FLOAT, big, {1 << 20}, {1}, big, 1, 1),
                            {"activations", "more than 2^64 elements"});
  checkRefused<shape_error>(ConvParams(FLOAT, 1, {1}, {1}, big, big, 1),
                            {"weights", "more than 2^64 elements"});
  checkRefused<shape_error>(ConvParams(FLOAT, big, {1}, {1}, 1, big, 1),
                            {"output", "more than 2^64 elements"});
  ConvParams p(FLOAT, 1, {1u << 20}, {1}, 1, 1, 1);
  p.inputTransform.dilation = {1u << 20};
  checkRefused<shape_error>(
      p, {"dimension 0", "inputFieldShape[0] = 1048576", "dilation 1048576", "exceeds 2^32 - 1"});
  p = ConvParams(FLOAT, 1, {5}, {1}, 1, 1, 1);
  p.outputTransform.paddingLower = {~0u};
  p.outputTransform.paddingUpper = {~0u};
  checkRefused<shape_error>(p, {"dimension 0", "output size", "exceeds 2^32 - 1"});
}

TEST_CASE("conv index helpers refuse dimensions, indices and ranges out of range",
          "[error][conv]") {
  const ConvParams p = conv2d(); // output {5, 4}
  checkWords(messageOf<index_error>([&] { getInputIndex(2, 0, 0, p); }),
             {"getInputIndex", "dimension 2", "2 field dimensions"});
  checkWords(messageOf<index_error>([&] { getInputIndex(0, 5, 0, p); }),
             {"output index 5 (of 5)", "dimension 0"});
  checkWords(messageOf<index_error>([&] { getInputIndex(1, 0, 3, p); }),
             {"kernel index 3 (of 3)", "dimension 1"});
  checkWords(messageOf<index_error>([&] {
               getInputRange(0, {0, 6}, {0, 3}, p);
             }),
             {"getInputRange", "output range [0, 6)", "[0, 5)"});
  checkWords(messageOf<index_error>([&] {
               getOutputRangeForKernelRange(1, {0, 4}, {2, 1}, p);
             }),
             {"getOutputRangeForKernelRange", "kernel range [2, 1)"});
  checkWords(messageOf<index_error>([&] {
               getKernelRange(1, {0, 4}, {0, 7}, p);
             }),
             {"getKernelRange", "input range [0, 7)", "[0, 6)"});
}
