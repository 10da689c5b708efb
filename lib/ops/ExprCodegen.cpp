#include "ops/ExprCodegen.hpp"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>

namespace aspen::ops::detail {

namespace {

using Kind = ExprNode::Kind;

const char *const kUnaryFns[] = {
#define ASPEN_EW_FN(e, node, fn, types, result) #e,
    ASPEN_EW_UNARY_OPS(ASPEN_EW_FN)};
const char *const kBinaryFns[] = {ASPEN_EW_BINARY_OPS(ASPEN_EW_FN)};
const char *const kTernaryFns[] = {ASPEN_EW_TERNARY_OPS(ASPEN_EW_FN)
#undef ASPEN_EW_FN
};

std::uint64_t fnv1a(const std::string &s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s)
    h = (h ^ c) * 1099511628211ull;
  return h;
}

// A (converted) constant as a C++ expression of type ew::Compute<type>, exactly.
std::string literal(const ExprNode &c) {
  if (c.type == FLOAT || c.type == HALF) {
    const float f = static_cast<float>(c.floatValue);
    std::uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return fmt::format("::aspen::detail::bitsFloat(0x{:08x}u) /* {} */", bits, f);
  }
  if (c.type == BOOL)
    return c.intValue ? "true" : "false";
  return fmt::format("static_cast<{}>({}LL)", c.type.toString(), c.intValue);
}

// A type as spelled outside namespace aspen.
std::string qualified(Type t) { return t == HALF ? "::aspen::half" : t.toString(); }

std::string narrowed(Type t, const std::string &value) {
  return t == HALF ? "ew::narrow<half>(" + value + ")" : value;
}

// The statements computing every node for element j; the result is v<root>.
std::string elementStatements(const LoweredExpr &e) {
  std::string out;
  for (std::size_t k = 0; k < e.nodes.size(); ++k) {
    const ExprNode &n = e.nodes[k];
    std::string value;
    const std::string T = n.operandType.toString();
    switch (n.kind) {
    case Kind::Input:
      value = fmt::format("x{}", n.input);
      break;
    case Kind::Const:
      value = literal(n);
      break;
    case Kind::Cast:
      value = fmt::format("ew::cast<{}, {}>(v{})", n.type.toString(), T, n.args[0]);
      break;
    case Kind::Unary:
      value = narrowed(n.type, fmt::format("ew::{}<{}>(v{})", kUnaryFns[n.op], T, n.args[0]));
      break;
    case Kind::Binary:
      value = narrowed(n.type, fmt::format("ew::{}<{}>(v{}, v{})", kBinaryFns[n.op], T,
                                           n.args[0], n.args[1]));
      break;
    case Kind::Ternary:
      value = narrowed(n.type, fmt::format("ew::{}<{}>(v{}, v{}, v{})", kTernaryFns[n.op], T,
                                           n.args[0], n.args[1], n.args[2]));
      break;
    }
    out += fmt::format("        const ew::Compute<{}> v{} = {};\n", n.type.toString(), k, value);
  }
  return out;
}

} // namespace

GeneratedExpr generateExpr(const LoweredExpr &e, const std::vector<CodegenOperand> &operands) {
  const std::string outType = e.root().type.toString();
  std::string templateParams = "class Out", params = "const Out &out", fieldDecls, fieldArgs,
              kernelArgs, scalarLoads, pointerLoads, elementLoads;
  fieldDecls += fmt::format("  Vector<Output<Vector<{}>>> out;\n", outType);
  fieldArgs += "out";
  kernelArgs += fmt::format("        ::aspen::Vector<::aspen::Output<::aspen::Vector<{}>>>(f[0])",
                            qualified(e.root().type));
  unsigned numFields = 1;
  for (std::size_t i = 0; i < operands.size(); ++i) {
    const CodegenOperand &o = operands[i];
    if (!o.used)
      continue;
    const std::string T = o.type.toString();
    templateParams += fmt::format(", class In{}", i);
    params += fmt::format(", const In{0} &in{0}", i);
    fieldArgs += fmt::format(", in{}", i);
    const std::string Q = qualified(o.type);
    std::string fieldType, kernelType;
    if (o.scalar) {
      fieldType = fmt::format("Input<{}>", T);
      kernelType = fmt::format("Input<{}>", Q);
    } else if (o.perRow) {
      fieldType = fmt::format("Input<Vector<{}>>", T);
      kernelType = fmt::format("Input<::aspen::Vector<{}>>", Q);
    } else {
      fieldType = fmt::format("Vector<Input<Vector<{}>>>", T);
      kernelType = fmt::format("Vector<::aspen::Input<::aspen::Vector<{}>>>", Q);
    }
    fieldDecls += fmt::format("  {} in{};\n", fieldType, i);
    kernelArgs += fmt::format(",\n        ::aspen::{}(f[{}])", kernelType, numFields);
    ++numFields;
    if (o.scalar) {
      scalarLoads += fmt::format("    const ew::Compute<{0}> x{1} = ew::load(*in{1});\n", T, i);
    } else if (o.perRow) {
      pointerLoads += fmt::format("      const ew::Compute<{0}> x{1} = ew::load(in{1}[r]);\n", T, i);
    } else {
      pointerLoads += fmt::format("      const {0} *p{1} = in{1}[r].data();\n", T, i);
      elementLoads += fmt::format("        const ew::Compute<{0}> x{1} = ew::load(p{1}[j]);\n", T, i);
    }
  }
  const std::string body = fmt::format(
      "  template <{}>\n"
      "  ASPEN_HD static void run(unsigned workerId, unsigned numWorkers, {}) {{\n"
      "{}"
      "    ew::forEachWorkerRange(out, workerId, numWorkers,\n"
      "                           [&](unsigned r, unsigned long long b, unsigned long long e) {{\n"
      "      {} *o = out[r].data();\n"
      "{}"
      "      for (unsigned long long j = b; j < e; ++j) {{\n"
      "{}{}"
      "        o[j] = ew::store<{}>(v{});\n"
      "      }}\n"
      "    }});\n"
      "  }}\n",
      templateParams, params, scalarLoads, outType, pointerLoads, elementLoads,
      elementStatements(e), outType, e.nodes.size() - 1);
  const std::string hash = fmt::format("{:016x}", fnv1a(body));

  GeneratedExpr g;
  g.vertexName = "aspen::ops::GeneratedExpr_" + hash;
  g.kernelName = "aspen_expr_" + hash;
  g.numFields = numFields;
  const std::string helper = fmt::format(
      "#include <aspen/Vertex.hpp>\n"
      "#include <aspen/ops/codelets/ElementwiseKernel.hpp>\n"
      "#include <aspen/ops/codelets/ElementwiseMath.hpp>\n\n"
      "namespace aspen::ops::generated {{\n"
      "struct Expr_{} {{\n{}}};\n"
      "}} // namespace aspen::ops::generated\n",
      hash, body);
  g.codeletSource = helper + fmt::format("\nnamespace aspen::ops {{\n"
                                         "class GeneratedExpr_{} : public MultiVertex {{\n"
                                         "public:\n{}"
                                         "  bool compute(unsigned workerId) {{\n"
                                         "    generated::Expr_{}::run(workerId, numWorkers(), {});\n"
                                         "    return true;\n"
                                         "  }}\n"
                                         "}};\n"
                                         "}} // namespace aspen::ops\n",
                                         hash, fieldDecls, hash, fieldArgs);
  g.cudaSource = helper + fmt::format("\nextern \"C\" __global__ void {}(const ::aspen::detail::FieldDesc "
                                      "*fields) {{\n"
                                      "  const ::aspen::detail::FieldDesc *f = fields + blockIdx.x * {};\n"
                                      "  ::aspen::ops::generated::Expr_{}::run(threadIdx.x, blockDim.x,\n{});\n"
                                      "}}\n",
                                      g.kernelName, numFields, hash, kernelArgs);
  return g;
}

} // namespace aspen::ops::detail
