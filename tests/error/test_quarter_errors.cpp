// Misuse of QUARTER tensors: each raises an aspen::error naming the object and the rule, and the
// graph stays usable (a correct cast built afterwards compiles and runs).
#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/TypeConversion.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/ops/ElementWise.hpp>
#include <aspen/ops/Fill.hpp>
#include <aspen/ops/Quarter.hpp>
#include <aspen/ops/Reduce.hpp>

#include <catch2/catch.hpp>

#include <vector>

using namespace aspen;
using namespace aspen::program;
using Catch::Contains;
using Format = QuarterMetadata::Format;

TEST_CASE("quarter misuse gives clear errors and leaves the graph usable", "[error][quarter]") {
  Graph g(Target::createGeneric(2));
  ops::addCodelets(g);
  Tensor q = g.addVariable(QUARTER, {4}, VariableMappingMethod::LINEAR, "q");
  Tensor f = g.addVariable(FLOAT, {4}, VariableMappingMethod::LINEAR, "f");
  Tensor i = g.addVariable(INT, {4}, VariableMappingMethod::LINEAR, "i");
  Tensor md = ops::createVariableMetadataTensor(g, Format::F143, 1, "md");
  Sequence prog;

  // Element-wise work needs numbers, which quarter codes are not without their metadata.
  REQUIRE_THROWS_AS(ops::add(g, q, q, prog), type_error);
  REQUIRE_THROWS_WITH(ops::add(g, q, q, prog), Contains("quarter") && Contains("q"));
  REQUIRE_THROWS_WITH(ops::map(g, ops::expr::Cast(ops::expr::_1, QUARTER), {f}, prog),
                      Contains("quarter") && Contains("metadata"));
  REQUIRE_THROWS_AS(ops::reduce(g, q, {0}, {ops::Operation::ADD}, prog), error);
  REQUIRE_THROWS_AS(ops::fill(g, q, prog, 1.0f), type_error);
  // Casts: to QUARTER needs metadata; quarter converts with float and half only.
  REQUIRE_THROWS_WITH(ops::cast(g, f, QUARTER, prog), Contains("metadata tensor"));
  REQUIRE_THROWS_WITH(ops::cast(g, i, QUARTER, md, prog),
                      Contains("float and half") && Contains("int"));
  REQUIRE_THROWS_WITH(ops::cast(g, q, INT, prog), Contains("float and half"));
  REQUIRE_THROWS_WITH(ops::cast(g, f, HALF, md, prog), Contains("only for casts to QUARTER"));
  REQUIRE_THROWS_WITH(ops::cast(g, f, QUARTER, f, prog),
                      Contains("'f'") && Contains("one QUARTER_METADATA element"));
  REQUIRE_THROWS_WITH(ops::castWithOutput(g, f, q.slice(0, 2), prog), Contains("shape"));
  // Metadata tensors.
  REQUIRE_THROWS_WITH(g.addVariable(FLOAT, md, {2}, "x"), Contains("only QUARTER"));
  REQUIRE_THROWS_WITH(g.addVariable(QUARTER, f, {2}, "x"), Contains("QUARTER_METADATA"));
  REQUIRE_THROWS_WITH(ops::createConstantMetadataTensor(g, Format::F152, 32),
                      Contains("scale 32") && Contains("[-32, 31]"));
  REQUIRE_THROWS_WITH(ops::setMetadataTensor(g, Format::F143, f[0], md, prog),
                      Contains("integral"));
  Tensor constantMd = ops::createConstantMetadataTensor(g, Format::F143, 0);
  REQUIRE_THROWS_WITH(ops::setMetadataTensor(g, Format::F143, i[0], constantMd, prog),
                      Contains("constant"));
  REQUIRE_THROWS_AS(f.getMetadata(), type_error);
  REQUIRE_THROWS_AS(g.addVariable(UNSIGNED_CHAR, {4}).reinterpret(QUARTER).getMetadata(),
                    tensor_creation_error);
  // Values: quarter constants and fills from numbers need metadata.
  REQUIRE_THROWS_WITH(g.addConstant(QUARTER, {2}, 1.0f), Contains("metadata"));
  REQUIRE_THROWS_AS(QuarterMetadata(Format::F143, 100), type_error);

  // Still usable: a cast built now compiles and runs, and the failed calls added nothing to it.
  Tensor out = ops::cast(g, f, QUARTER, md, prog, "out");
  g.createHostWrite("f", f);
  g.createHostRead("out", out);
  Engine e(g, prog);
  e.load(test::deviceFor(g.getTarget()));
  const std::vector<float> values{2.0f, -1.0f, 0.0f, 1000.0f}; // scale 1: codes of 1, -0.5, 0, NaN
  e.writeTensor("f", values.data(), values.data() + 4);
  e.run();
  std::vector<unsigned char> codes(4);
  QuarterMetadata m;
  e.readTensor("out", m, codes.data(), codes.data() + 4);
  REQUIRE(m == QuarterMetadata(Format::F143, 1));
  REQUIRE(codes == std::vector<unsigned char>{0x40, 0xb8, 0x00, 0x80});
  // Engine: metadata only with QUARTER handles.
  REQUIRE_THROWS_WITH(e.writeTensor("f", m, values.data(), values.data() + 4),
                      Contains("'f'") && Contains("not QUARTER"));
}
