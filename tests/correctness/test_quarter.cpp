// QUARTER tensors through graphs and engines (Poplar's quarter support): metadata tensors made
// on the host and on the device, writeTensor/readTensor with metadata, and the casts to and
// from float and half, checked code by code against the independent model of
// QuarterReference.hpp (the PopLibs QuarterTypeArithmetic sweeps among them).
#include "QuarterReference.hpp"
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/TypeConversion.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/DynamicSlice.hpp>
#include <aspen/ops/Quarter.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace aspen;
using namespace aspen::program;
using Format = QuarterMetadata::Format;

namespace {

std::vector<unsigned char> allCodes() {
  std::vector<unsigned char> codes(256);
  for (unsigned c = 0; c < 256; ++c)
    codes[c] = static_cast<unsigned char>(c);
  return codes;
}

// Casts all 256 codes written with `m` to `outType` on the device; returns them as doubles.
std::vector<double> castFromQuarter(const QuarterMetadata &m, Type outType) {
  Graph g(Target::createGeneric(4));
  ops::addCodelets(g);
  Tensor in = g.addVariable(QUARTER, {256}, "in");
  util::mapTensorLinearly(g, in, 1, 16);
  g.createHostWrite("in", in);
  Sequence prog;
  Tensor out = ops::cast(g, in, outType, prog, "castTo" + outType.toString());
  g.createHostRead("out", out);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  const std::vector<unsigned char> codes = allCodes();
  e.writeTensor("in", m, codes.data(), codes.data() + codes.size());
  e.run();
  std::vector<double> result(256);
  if (outType == FLOAT) {
    std::vector<float> v(256);
    e.readTensor("out", v.data(), v.data() + v.size());
    std::copy(v.begin(), v.end(), result.begin());
  } else {
    std::vector<half> v(256);
    e.readTensor("out", v.data(), v.data() + v.size());
    for (unsigned i = 0; i < 256; ++i)
      result[i] = float(v[i]);
  }
  return result;
}

bool sameValue(double a, double b) { return std::isnan(a) ? std::isnan(b) : a == b; }

} // namespace

TEST_CASE("casts from quarter decode every code with the tensor's metadata",
          "[correctness][quarter]") {
  // PopLibs' sweeps: scales that keep quarter inside half, and the extremes into float.
  const struct {
    Format format;
    int scale;
    Type out;
  } cases[] = {{Format::F143, -14, HALF},  {Format::F143, 8, HALF},    {Format::F152, -7, HALF},
               {Format::F152, 0, HALF},    {Format::F143, -32, FLOAT}, {Format::F143, 31, FLOAT},
               {Format::F152, -32, FLOAT}, {Format::F152, 31, FLOAT}};
  for (const auto &c : cases) {
    const QuarterMetadata m(c.format, c.scale);
    const std::vector<double> got = castFromQuarter(m, c.out);
    for (unsigned code = 0; code < 256; ++code) {
      INFO(m << " to " << c.out << ", code " << code);
      double expected = test::referenceDecode(code, c.format, c.scale);
      if (c.out == HALF) // every such value is exact in half; check that, then compare
        REQUIRE(sameValue(float(half(static_cast<float>(expected))), expected));
      REQUIRE(sameValue(got[code], expected));
    }
  }
}

TEST_CASE("casts to quarter round with a metadata tensor read at run time",
          "[correctness][quarter]") {
  Graph g(Target::createGeneric(3));
  ops::addCodelets(g);
  const std::size_t n = 600;
  Tensor inF = g.addVariable(FLOAT, {n}, "inF");
  Tensor inH = g.addVariable(HALF, {n}, "inH");
  util::mapTensorLinearly(g, inF, 1, 32);
  util::mapTensorLinearly(g, inH, 1, 32);
  g.createHostWrite("inF", inF);
  g.createHostWrite("inH", inH);
  // One metadata variable with a value from the host, one whose scale is computed on the device.
  Tensor metadata = ops::createVariableMetadataTensor(g, Format::F152, -3, "md");
  Tensor scale = g.addVariable(INT, {}, "scale");
  g.setTileMapping(scale, 2);
  g.createHostWrite("scale", scale);
  Sequence prog;
  Tensor deviceMetadata = ops::createVariableMetadataTensor(g, Format::F143, scale, prog, "dmd");
  Tensor outF = ops::cast(g, inF, QUARTER, metadata, prog, "outF");
  Tensor outH = ops::cast(g, inH, QUARTER, deviceMetadata, prog, "outH");
  REQUIRE(outF.getMetadata() == metadata);
  REQUIRE(outH.getMetadata() == deviceMetadata);
  g.createHostRead("outF", outF);
  g.createHostRead("outH", outH);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));

  std::mt19937 rng(7);
  std::vector<float> f(n);
  std::vector<half> h(n);
  for (std::size_t i = 0; i < n; ++i) {
    // Values around the formats' ranges with the scales used, specials included.
    f[i] = std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(rng() % 40) - 24);
    h[i] =
        half(std::ldexp(std::uniform_real_distribution<float>(-1, 1)(rng), int(rng() % 30) - 16));
  }
  f[0] = INFINITY, f[1] = NAN, f[2] = -0.0f, f[3] = 1e30f;
  h[0] = half(-INFINITY), h[1] = half(0.0f);
  e.writeTensor("inF", f.data(), f.data() + n);
  e.writeTensor("inH", h.data(), h.data() + n);
  for (int deviceScale : {0, -9, 5}) {
    e.writeTensor("scale", &deviceScale, &deviceScale + 1);
    e.run();
    std::vector<unsigned char> qF(n), qH(n);
    QuarterMetadata mF, mH;
    e.readTensor("outF", mF, qF.data(), qF.data() + n);
    e.readTensor("outH", mH, qH.data(), qH.data() + n);
    REQUIRE(mF == QuarterMetadata(Format::F152, -3));
    REQUIRE(mH == QuarterMetadata(Format::F143, deviceScale));
    for (std::size_t i = 0; i < n; ++i) {
      INFO("element " << i << " device scale " << deviceScale);
      REQUIRE(unsigned(qF[i]) == test::referenceEncode(f[i], Format::F152, -3));
      REQUIRE(unsigned(qH[i]) == test::referenceEncode(float(h[i]), Format::F143, deviceScale));
    }
  }
  // A scale the format cannot hold fails the run, naming the vertex; nothing wraps.
  const int bad = 40;
  e.writeTensor("scale", &bad, &bad + 1);
  REQUIRE_THROWS_WITH(e.run(), Catch::Contains("SetQuarterMetadata"));
}

TEST_CASE("quarter variables own, share and keep their metadata", "[correctness][quarter]") {
  Graph g(Target::createGeneric(2));
  ops::addCodelets(g);
  Tensor a = g.addVariable(QUARTER, {4}, "a");
  REQUIRE(a.hasMetadata());
  Tensor am = a.getMetadata();
  REQUIRE(am.elementType() == QUARTER_METADATA);
  REQUIRE(am.numElements() == 1);
  REQUIRE(a.slice(1, 3).getMetadata() == am); // views keep it
  REQUIRE(a.reshape({2, 2}).transpose()[1].getMetadata() == am);
  Tensor shared = ops::createConstantMetadataTensor(g, Format::F152, 2, "shared");
  Tensor b = g.addVariable(QUARTER, shared, {4}, VariableMappingMethod::LINEAR, "b");
  Tensor c = g.addVariable(QUARTER, shared, {2}, "c");
  g.setTileMapping(c, 1);
  REQUIRE(concat(b, c).getMetadata() == shared); // one metadata tensor: fine
  REQUIRE_THROWS_AS(concat(a, b).getMetadata(), tensor_creation_error);
  REQUIRE(g.clone(b, "bClone").getMetadata() == shared);
  REQUIRE(!g.addVariable(FLOAT, {2}).hasMetadata());

  // Copies move codes; the copy's variable reads them with its own metadata (b's constant one).
  util::mapTensorLinearly(g, a);
  g.createHostWrite("a", a);
  g.createHostRead("b", b);
  Sequence prog;
  prog.add(Copy(a, b));
  Tensor bFloat = ops::cast(g, b, FLOAT, prog, "bFloat");
  g.createHostRead("bFloat", bFloat);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  const std::vector<unsigned char> codes{0x40, 0x41, 0xc2, 0x7f};
  e.writeTensor("a", QuarterMetadata(Format::F143, 0), codes.data(), codes.data() + 4);
  e.run();
  std::vector<unsigned char> bCodes(4);
  QuarterMetadata bm;
  e.readTensor("b", bm, bCodes.data(), bCodes.data() + 4);
  REQUIRE(bCodes == codes);
  REQUIRE(bm == QuarterMetadata(Format::F152, 2));
  std::vector<float> bf(4);
  e.readTensor("bFloat", bf.data(), bf.data() + 4);
  for (unsigned i = 0; i < 4; ++i)
    REQUIRE(bf[i] == test::referenceDecode(codes[i], Format::F152, 2));
  // Metadata is only for QUARTER handles.
  REQUIRE_THROWS_AS(e.writeTensor("bFloat", QuarterMetadata(), bf.data(), bf.data() + 4),
                    stream_connection_error);
  REQUIRE_THROWS_AS(e.readTensor("bFloat", bm, bf.data(), bf.data() + 4), stream_connection_error);
}

TEST_CASE("writing a constant metadata needs the same value", "[correctness][quarter]") {
  Graph g(Target::createGeneric(1));
  Tensor md = ops::createConstantMetadataTensor(g, Format::F143, -4, "md");
  Tensor q = g.addVariable(QUARTER, md, {3}, "q");
  g.setTileMapping(q, 0);
  g.createHostWrite("q", q);
  g.createHostRead("qr", q);
  Engine e(g, Sequence{});
  e.load(test::deviceFor(g.getTarget()));
  const std::vector<unsigned char> codes{1, 2, 3}, others{7, 8, 9};
  e.writeTensor("q", QuarterMetadata(Format::F143, -4), codes.data(), codes.data() + 3);
  REQUIRE_THROWS_WITH(
      e.writeTensor("q", QuarterMetadata(Format::F152, -4), others.data(), others.data() + 3),
      Catch::Contains("constant") && Catch::Contains("F143 scale -4"));
  std::vector<unsigned char> back(3);
  QuarterMetadata m;
  e.readTensor("qr", m, back.data(), back.data() + 3);
  REQUIRE(back == codes); // the refused write changed nothing
  REQUIRE(m == QuarterMetadata(Format::F143, -4));
}

TEST_CASE("quarter data moves through streams and dynamic slices with its metadata",
          "[correctness][quarter]") {
  Graph g(Target::createGeneric(2));
  ops::addCodelets(g);
  Tensor md = ops::createVariableMetadataTensor(g, Format::F152, 4, "md");
  Tensor table = g.addVariable(QUARTER, md, {6, 3}, VariableMappingMethod::LINEAR, "table");
  DataStream fill = g.addHostToDeviceFIFO("fill", QUARTER, 18);
  Tensor offset = g.addVariable(UNSIGNED_INT, {1}, "offset");
  g.setTileMapping(offset, 1);
  g.createHostWrite("offset", offset);
  Sequence prog;
  prog.add(Copy(fill, table));
  Tensor row = ops::dynamicSlice(g, table, offset, {0}, {1}, prog, "row");
  REQUIRE(row.getMetadata() == md); // the slice reads its codes as the table does
  Tensor update = g.addVariable(QUARTER, md, {1, 3}, "update");
  g.setTileMapping(update, 0);
  g.createHostWrite("update", update);
  ops::dynamicUpdate(g, table, update, offset, {0}, {1}, prog, "put");
  Tensor rowFloat = ops::cast(g, row, FLOAT, prog, "rowFloat");
  g.createHostRead("table", table);
  g.createHostRead("rowFloat", rowFloat);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  std::vector<unsigned char> codes(18);
  for (unsigned i = 0; i < 18; ++i)
    codes[i] = static_cast<unsigned char>(0x30 + 3 * i);
  e.connectStream("fill", codes.data());
  const unsigned four = 4;
  e.writeTensor("offset", &four, &four + 1);
  const std::vector<unsigned char> put{0x01, 0x81, 0x7f};
  e.writeTensor("update", put.data(), put.data() + 3);
  e.run();
  std::vector<float> rf(3);
  e.readTensor("rowFloat", rf.data(), rf.data() + 3);
  for (unsigned c = 0; c < 3; ++c) // row 4 as streamed, decoded with F152 scale 4
    REQUIRE(rf[c] == test::referenceDecode(codes[12 + c], Format::F152, 4));
  std::vector<unsigned char> after(18);
  QuarterMetadata m;
  e.readTensor("table", m, after.data(), after.data() + 18);
  REQUIRE(m == QuarterMetadata(Format::F152, 4));
  for (unsigned i = 0; i < 18; ++i)
    REQUIRE(after[i] == (i / 3 == 4 ? put[i % 3] : codes[i]));
}
