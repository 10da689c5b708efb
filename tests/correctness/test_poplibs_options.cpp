// Options PopLibs documents, through the compat names: accepted (validated for their form) and,
// where Aspen has nothing for them to change, without effect on the results, which are checked
// against values worked out by hand. Bad values still raise invalid_option naming the key.
#include "TestDevice.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplin/MatMul.hpp>
#include <poplin/codelets.hpp>
#include <popops/ElementWise.hpp>
#include <popops/ScaledAdd.hpp>
#include <popops/codelets.hpp>
#include <poputil/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <functional>
#include <vector>

using namespace poplar;
using namespace poplar::program;
namespace pe = popops::expr;

namespace {
Tensor input(Graph &g, const std::string &name, std::size_t n) {
  Tensor t = g.addVariable(FLOAT, {n}, name);
  poputil::mapTensorLinearly(g, t);
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
  return t;
}
} // namespace

TEST_CASE("popops and poplin options PopLibs documents are accepted", "[correctness][compat]") {
  Graph g(Target::createGeneric(2));
  popops::addCodelets(g);
  poplin::addCodelets(g);
  Sequence prog;
  Tensor x = input(g, "x", 4), y = input(g, "y", 4);
  // map: x * 2 + y, with and without popops' expression optimisations.
  const auto expr = pe::Add(pe::Mul(pe::_1, pe::Const(2.0f)), pe::_2);
  Tensor m1 = popops::map(g, expr, {x, y}, prog, "m1", {{"enableExpressionOptimizations", "true"}});
  Tensor m2 = popops::map(g, expr, {x, y}, prog, "m2", {{"enableExpressionOptimizations", "false"}});
  // scaledAddTo: y += 0.5 x, with popops' tolerance for casting the scale to half.
  popops::scaledAddTo(g, y, x, 0.5f, prog, "axpy", {{"scaleFloatToHalfTolerance", "1e-3"}});
  // matMul: [2, 2] x [2, 2] with poplin's output remapping and fast-reduce flags and a PopLibs
  // planConstraints object.
  Tensor a = g.addVariable(FLOAT, {2, 2}, "a"), b = g.addVariable(FLOAT, {2, 2}, "b");
  poputil::mapTensorLinearly(g, a);
  poputil::mapTensorLinearly(g, b);
  g.createHostWrite("a", a);
  g.createHostWrite("b", b);
  const OptionFlags mmOptions{
      {"remapOutputTensor", "false"},
      {"enableFastReduce", "true"},
      {"planConstraints", R"({"method": "AMP", "inChansPerGroup": 16, "partialChansPerGroup": 8,
                             "0": {"transform": {"swapOperands": true},
                                   "partition": {"fieldSplit": {"0": 1},
                                                 "inChanSplit": {"parallel": 1, "serial": 1}}}})"}};
  Tensor c = poplin::matMul(g, a, b, prog, FLOAT, "mm", mmOptions);
  REQUIRE(poplin::getMatMulPlan(g, FLOAT, FLOAT, {2, 2}, {2, 2}, mmOptions).method ==
          aspen::linalg::MatMulMethod::Vertices); // PopLibs' AMP: an on-tile (vertex) plan
  g.createHostRead("m1", m1);
  g.createHostRead("m2", m2);
  g.createHostRead("c", c);

  Engine e(g, prog);
  e.load(aspen::test::deviceFor(g.getTarget()));
  const std::vector<float> xv{1, 2, 3, 4}, yv{10, 20, 30, 40}, av{1, 2, 3, 4}, bv{5, 6, 7, 8};
  e.writeTensor("x", xv.data(), xv.data() + 4);
  e.writeTensor("y", yv.data(), yv.data() + 4);
  e.writeTensor("a", av.data(), av.data() + 4);
  e.writeTensor("b", bv.data(), bv.data() + 4);
  e.run();
  std::vector<float> m1v(4), m2v(4), y2(4), cv(4);
  e.readTensor("m1", m1v.data(), m1v.data() + 4);
  e.readTensor("m2", m2v.data(), m2v.data() + 4);
  e.readTensor("y-read", y2.data(), y2.data() + 4);
  e.readTensor("c", cv.data(), cv.data() + 4);
  REQUIRE(m1v == std::vector<float>{12, 24, 36, 48});
  REQUIRE(m2v == m1v);
  REQUIRE(y2 == std::vector<float>{10.5f, 21, 31.5f, 42});
  // [[1, 2], [3, 4]] x [[5, 6], [7, 8]] = [[19, 22], [43, 50]].
  REQUIRE(cv == std::vector<float>{19, 22, 43, 50});
}

TEST_CASE("bad values of PopLibs' options are refused, naming the key", "[correctness][compat]") {
  Graph g(Target::createGeneric(2));
  popops::addCodelets(g);
  poplin::addCodelets(g);
  Sequence prog;
  Tensor x = input(g, "x", 4), y = input(g, "y", 4);
  const auto refused = [](const std::function<void()> &f, const std::string &key) {
    try {
      f();
      FAIL("accepted a bad " << key);
    } catch (const poplar::invalid_option &e) {
      REQUIRE_THAT(e.what(), Catch::Contains(key));
    }
  };
  refused([&] { popops::map(g, pe::_1, {x}, prog, "", {{"enableExpressionOptimizations", "maybe"}}); },
          "enableExpressionOptimizations");
  refused([&] { popops::scaledAddTo(g, y, x, 0.5f, prog, "", {{"scaleFloatToHalfTolerance", "-1"}}); },
          "scaleFloatToHalfTolerance");
  Tensor a = g.addVariable(FLOAT, {2, 2}, "a");
  poputil::mapTensorLinearly(g, a);
  for (const auto &[key, value] : std::vector<std::pair<std::string, std::string>>{
           {"remapOutputTensor", "yes"},
           {"enableFastReduce", "2"},
           {"planConstraints", R"({"method": "WINOGRAD"})"},
           {"planConstraints", R"({"inChansPerGroup": -1})"},
           // A string where a number belongs (found by fuzz/fuzz_json_plan: it escaped as an
           // internal error).
           {"planConstraints", R"({"slicWindowWidth": "vertices"})"},
           {"planConstraints", R"({"0": {"shuffle": {}}})"},
           {"planConstraints", R"({"0": {"partition": 3}})"}}) {
    INFO(key << " = " << value);
    const std::string k = key, v = value; // a lambda captures variables, not bindings (clang 14)
    refused([&] { poplin::matMul(g, a, a, prog, FLOAT, "", {{k, v}}); },
            value.find("WINOGRAD") != std::string::npos  ? "method"
            : value.find("inChans") != std::string::npos ? "inChansPerGroup"
            : value.find("slicWindow") != std::string::npos ? "slicWindowWidth"
            : value.find("shuffle") != std::string::npos ? "shuffle"
            : value.find("partition") != std::string::npos ? "partition"
                                                          : key);
  }
}
