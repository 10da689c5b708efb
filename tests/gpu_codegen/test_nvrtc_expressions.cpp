// The CUDA source generated for element-wise expressions compiles with NVRTC for sm_90 (and,
// where ptxas is found, assembles): every unary, binary and ternary operation at least once, on
// float, half and integer types, casts between all twelve element types, scalar operands and
// constants.
// Needs the CUDA toolkit (NVRTC), not a GPU. Aspen's include folder is the one codelets compile with.
#include "TestPaths.hpp"
#include "codelets/HostCompiler.hpp"
#include "ops/ExprCodegen.hpp"
#include "ops/ExprLowering.hpp"

#include <aspen/ops/Expr.hpp>

#include <catch2/catch.hpp>
#include <nvrtc.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

using namespace aspen;
using namespace aspen::ops;
namespace ex = aspen::ops::expr;
namespace dt = aspen::ops::detail;

namespace {

struct Case {
  ex::Any expr;
  std::vector<Type> types;
  bool secondIsScalar = false;
  bool laterPerRow = false; // operands after the first: one element a row of the output
};

std::vector<Case> representativeExpressions() {
  std::vector<Case> cases;
  static UnaryOpType unary;
  static BinaryOpType binary;
#define NVRTC_UNARY(e, node, fn, types, result)                                                 \
  unary = UnaryOpType::e;                                                                       \
  for (Type t : {FLOAT, HALF, INT, BOOL, UNSIGNED_INT})                                         \
    if (supportsType(unary, t)) {                                                               \
      cases.push_back({ex::node(ex::_1), {t}});                                                 \
      break;                                                                                    \
    }
  ASPEN_EW_UNARY_OPS(NVRTC_UNARY)
#undef NVRTC_UNARY
#define NVRTC_BINARY(e, node, fn, types, result)                                                \
  binary = BinaryOpType::e;                                                                     \
  for (Type t : {HALF, INT, BOOL, UNSIGNED_SHORT})                                              \
    if (supportsType(binary, t)) {                                                              \
      cases.push_back({ex::node(ex::_1, ex::_2), {t, t}, true});                                \
      break;                                                                                    \
    }
  ASPEN_EW_BINARY_OPS(NVRTC_BINARY)
#undef NVRTC_BINARY
  cases.push_back({ex::Clamp(ex::_1, ex::_2, ex::Const(6)), {FLOAT, FLOAT}});
  cases.push_back({ex::Select(ex::_1, ex::_2, ex::_1 < ex::_2), {SHORT, SHORT}});
  // Casts: all 144 pairs of the twelve element types, a 64-bit scalar operand, and a chain
  // through the types only casts accept.
  const std::vector<Type> all = {FLOAT, HALF, INT, UNSIGNED_INT, SHORT, UNSIGNED_SHORT, CHAR,
                                 UNSIGNED_CHAR, BOOL, SIGNED_CHAR, LONGLONG, UNSIGNED_LONGLONG};
  for (Type from : all)
    for (Type to : all)
      cases.push_back({ex::Cast(ex::_1, to), {from}});
  cases.push_back({ex::Cast(ex::_1, FLOAT) + ex::Cast(ex::_2, FLOAT), {HALF, UNSIGNED_LONGLONG}, true});
  cases.push_back({ex::Cast(ex::Cast(ex::Cast(ex::_1, SIGNED_CHAR), LONGLONG), HALF), {FLOAT}});
  cases.push_back({ex::Sigmoid(ex::_1 * 2 + ex::Exp(ex::_2)) - ex::ConstHalf(0.5f), {HALF, HALF}, true});
  // A channel's scale and shift read once a row (perRow operands 2 and 3).
  cases.push_back({ex::Cast(ex::_1, FLOAT) * ex::_2 + ex::_3, {HALF, FLOAT, FLOAT}, false, true});
  return cases;
}

} // namespace

TEST_CASE("generated CUDA sources compile with NVRTC for sm_90", "[gpu_codegen][nvrtc]") {
  std::string source;
  std::vector<std::string> kernels;
  for (const Case &c : representativeExpressions()) {
    std::vector<std::string> names(c.types.size(), "t");
    const dt::LoweredExpr lowered = dt::lowerExpr(c.expr, c.types, names, "nvrtc test");
    std::vector<dt::CodegenOperand> operands;
    for (std::size_t i = 0; i < c.types.size(); ++i)
      operands.push_back({c.types[i], c.secondIsScalar && i == 1, true, c.laterPerRow && i > 0});
    const dt::GeneratedExpr g = dt::generateExpr(lowered, operands);
    source += g.cudaSource;
    kernels.push_back(g.kernelName);
  }
  REQUIRE(kernels.size() >= 34 + 26 + 2);

  nvrtcProgram prog;
  REQUIRE(nvrtcCreateProgram(&prog, source.c_str(), "expressions.cu", 0, nullptr, nullptr) ==
          NVRTC_SUCCESS);
  const std::string include = "-I" + aspen::detail::HostCompiler::get().includeDir;
  const char *options[] = {"--gpu-architecture=compute_90", "--std=c++20", include.c_str()};
  const nvrtcResult compiled = nvrtcCompileProgram(prog, 3, options);
  std::size_t logSize = 0;
  nvrtcGetProgramLogSize(prog, &logSize);
  std::string log(logSize, '\0');
  nvrtcGetProgramLog(prog, log.data());
  INFO(log);
  REQUIRE(compiled == NVRTC_SUCCESS);
  std::size_t ptxSize = 0;
  REQUIRE(nvrtcGetPTXSize(prog, &ptxSize) == NVRTC_SUCCESS);
  std::string ptx(ptxSize, '\0');
  REQUIRE(nvrtcGetPTX(prog, ptx.data()) == NVRTC_SUCCESS);
  nvrtcDestroyProgram(&prog);
  for (const std::string &k : kernels)
    CHECK(ptx.find(".entry " + k) != std::string::npos);

  // ptxas, where the toolkit has it, must accept the PTX for sm_90.
  const char *cudaHome = std::getenv("CUDA_HOME");
  const std::string ptxas = std::string(cudaHome ? cudaHome : "/usr/local/cuda") + "/bin/ptxas";
  if (std::FILE *f = std::fopen(ptxas.c_str(), "r")) {
    std::fclose(f);
    const std::string ptxPath = aspen::test::binaryDir() + "/nvrtc_expressions.ptx";
    std::ofstream(ptxPath) << ptx.c_str();
    const std::string command = ptxas + " -arch=sm_90 -o /dev/null " + ptxPath;
    CHECK(std::system(command.c_str()) == 0);
  } else {
    WARN("ptxas not found; PTX assembled by NVRTC only");
  }
}
