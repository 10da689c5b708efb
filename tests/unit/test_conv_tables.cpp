// The readings of a convolution call's index tables that libraries need (support/ConvTables):
// the ordinary-convolution form oneDNN and cuDNN take, whether cuDNN's one padding a dimension
// reproduces it, and the tables read backwards for the GPU's col2im gather. The tables are made
// here from ConvParams through poplin's getInputIndex, as the convolution builders make them.
#include "support/ConvTables.hpp"

#include <aspen/linalg/ConvParams.hpp>
#include <aspen/linalg/ConvUtil.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <optional>
#include <vector>

using namespace aspen;
using aspen::linalg::ConvParams;

namespace {

using Dims = std::vector<unsigned>;

// One field dimension's convolution: F inputs, a kernel of `kernel` taps, the transforms.
struct Dim {
  std::size_t F = 1, kernel = 1;
  unsigned padLower = 0, padUpper = 0, stride = 1, dilation = 1, inputDilation = 1;
  unsigned truncLower = 0;
  bool flip = false;
};

ConvParams paramsOf(const std::vector<Dim> &dims) {
  std::vector<std::size_t> field, kernel;
  ConvParams::InputTransform in(dims.size()), k(dims.size());
  ConvParams::OutputTransform out(dims.size());
  for (std::size_t d = 0; d < dims.size(); ++d) {
    field.push_back(dims[d].F), kernel.push_back(dims[d].kernel);
    in.paddingLower[d] = dims[d].padLower, in.paddingUpper[d] = dims[d].padUpper;
    in.dilation[d] = dims[d].inputDilation, in.truncationLower[d] = dims[d].truncLower;
    in.flip[d] = dims[d].flip;
    k.dilation[d] = dims[d].dilation;
    out.stride[d] = dims[d].stride;
  }
  return ConvParams(FLOAT, FLOAT, 1, field, kernel, 1, 1, 1, in, k, out);
}

program::ConvGeometry geometryOf(const ConvParams &p) {
  program::ConvGeometry g;
  g.batch = 1, g.groups = 1, g.inChans = 1, g.outChans = 1;
  for (unsigned d = 0; d < p.getNumFieldDims(); ++d) {
    const std::size_t outputs = p.getOutputSize(d), taps = p.getTruncatedKernelSize(d);
    g.inputField.push_back(p.inputFieldShape[d]);
    g.outputField.push_back(outputs);
    g.taps.push_back(taps);
    std::vector<std::int64_t> index;
    for (std::size_t o = 0; o < outputs; ++o)
      for (std::size_t t = 0; t < taps; ++t) {
        const std::optional<std::size_t> i = linalg::getInputIndex(d, o, t, p);
        index.push_back(i ? std::int64_t(*i) : -1);
      }
    g.inputIndex.push_back(index);
  }
  return g;
}

} // namespace

TEST_CASE("ordinary convolutions have a standard form with their own stride, dilation and "
          "padding",
          "[unit][conv]") {
  // 9 inputs, 3 taps, stride 2, padding 1 both ends: 5 outputs; the last reads (4*2 + 2) - 1 =
  // 9, one past the field, so the upper padding used is 1.
  {
    const program::ConvGeometry g = geometryOf(paramsOf({{9, 3, 1, 1, 2, 1}}));
    REQUIRE(g.outputField == std::vector<std::uint64_t>{5});
    const std::optional<detail::ConvStandardForm> f = detail::convStandardForm(g);
    REQUIRE(f);
    CHECK(f->stride == std::vector<std::int64_t>{2});
    CHECK(f->dilation == std::vector<std::int64_t>{1});
    CHECK(f->padLower == std::vector<std::int64_t>{1});
    CHECK(f->padUpper == std::vector<std::int64_t>{1});
    CHECK(detail::convSymmetricPaddingFits(*f, g));
  }
  // 8 inputs: 4 outputs, the last reads 6 + 2 - 1 = 7, so no upper padding is used; cuDNN's
  // symmetric padding of 1 still gives floor((8 + 2 - 3) / 2) + 1 = 4 outputs.
  {
    const program::ConvGeometry g = geometryOf(paramsOf({{8, 3, 1, 1, 2, 1}}));
    const std::optional<detail::ConvStandardForm> f = detail::convStandardForm(g);
    REQUIRE(f);
    CHECK(f->padUpper == std::vector<std::int64_t>{0});
    CHECK(detail::convSymmetricPaddingFits(*f, g));
  }
  // Kernel dilation 2 and two dimensions: 7 inputs, 3 taps 2 apart, padding 2: 7 outputs.
  {
    const program::ConvGeometry g =
        geometryOf(paramsOf({{7, 3, 2, 2, 1, 2}, {6, 2, 0, 0, 1, 1}}));
    const std::optional<detail::ConvStandardForm> f = detail::convStandardForm(g);
    REQUIRE(f);
    CHECK(f->dilation == std::vector<std::int64_t>{2, 1});
    CHECK(f->padLower == std::vector<std::int64_t>{2, 0});
    CHECK(f->padUpper == std::vector<std::int64_t>{2, 0});
    CHECK(detail::convSymmetricPaddingFits(*f, g));
  }
}

TEST_CASE("padding cuDNN cannot reproduce with one value a dimension is recognised",
          "[unit][conv]") {
  // 5 inputs, 2 taps: padding (0, 1) gives 5 outputs, and one padding of 0 on both ends gives 4.
  const program::ConvGeometry upper = geometryOf(paramsOf({{5, 2, 0, 1, 1, 1}}));
  const std::optional<detail::ConvStandardForm> fu = detail::convStandardForm(upper);
  REQUIRE(fu);
  CHECK(fu->padLower == std::vector<std::int64_t>{0});
  CHECK(fu->padUpper == std::vector<std::int64_t>{1});
  CHECK_FALSE(detail::convSymmetricPaddingFits(*fu, upper));
  // Padding (1, 0): 5 outputs, and one padding of 1 gives 6.
  const program::ConvGeometry lower = geometryOf(paramsOf({{5, 2, 1, 0, 1, 1}}));
  const std::optional<detail::ConvStandardForm> fl = detail::convStandardForm(lower);
  REQUIRE(fl);
  CHECK_FALSE(detail::convSymmetricPaddingFits(*fl, lower));
}

TEST_CASE("tables that are not an ordinary convolution have no standard form", "[unit][conv]") {
  Dim dilated{6, 3, 1, 1, 1, 1};
  dilated.inputDilation = 2; // a transposed convolution's holes
  Dim flipped{6, 3, 1, 1, 1, 1};
  flipped.flip = true;
  Dim truncated{6, 3, 0, 0, 1, 1};
  truncated.truncLower = 1; // reads start one element in: a negative padding
  for (const Dim &d : {dilated, flipped, truncated}) {
    const program::ConvGeometry g = geometryOf(paramsOf({d}));
    INFO("F " << d.F << " input dilation " << d.inputDilation << " flip " << d.flip
              << " truncation " << d.truncLower);
    CHECK_FALSE(detail::convStandardForm(g));
  }
}

TEST_CASE("the tables read backwards name, for each element and tap, the output reading it",
          "[unit][conv]") {
  Dim strided{11, 3, 2, 1, 3, 2};
  Dim dilated{5, 3, 1, 2, 1, 1};
  dilated.inputDilation = 2;
  Dim flipped{7, 4, 0, 3, 2, 1};
  flipped.flip = true;
  for (const std::vector<Dim> &dims :
       {std::vector<Dim>{strided}, std::vector<Dim>{dilated, flipped}, std::vector<Dim>{}}) {
    const program::ConvGeometry g = geometryOf(paramsOf(dims));
    std::uint64_t F = 1, P = 1, T = 1;
    for (std::size_t d = 0; d < g.inputField.size(); ++d)
      F *= g.inputField[d], P *= g.outputField[d], T *= g.taps[d];
    const std::vector<std::int64_t> offsets = detail::flatInputOffsets(g);
    const std::optional<std::vector<std::int64_t>> readers = detail::convInputReaders(g);
    INFO(dims.size() << " dimensions");
    REQUIRE(readers);
    REQUIRE(readers->size() == T * F);
    // Every (tap, output) that reads an element is that element's reader through the tap, and
    // there are no other readers.
    std::uint64_t reads = 0, named = 0;
    for (std::uint64_t t = 0; t < T; ++t)
      for (std::uint64_t p = 0; p < P; ++p)
        if (const std::int64_t f = offsets[t * P + p]; f >= 0) {
          ++reads;
          CHECK((*readers)[t * F + std::uint64_t(f)] == std::int64_t(p));
        }
    for (std::int64_t r : *readers)
      named += r >= 0;
    CHECK(named == reads);
    CHECK(reads > 0);
  }
  // Two outputs reading one element through one tap: no single reader.
  program::ConvGeometry twice;
  twice.batch = twice.groups = twice.inChans = twice.outChans = 1;
  twice.inputField = {3}, twice.outputField = {2}, twice.taps = {1};
  twice.inputIndex = {{1, 1}};
  CHECK_FALSE(detail::convInputReaders(twice));
}
