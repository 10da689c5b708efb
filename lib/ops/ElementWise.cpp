// map, mapInPlace, mapWithOutput: checking, output creation, aliasing, and the choice between a
// generated codelet (ExprCodegen) and the library codelets (ElementWiseLibrary).
#include "support/OptionParsing.hpp"
#include "support/Writability.hpp"
#include "ops/ElementWiseVertices.hpp"
#include "ops/ExprCodegen.hpp"
#include "ops/ExprLowering.hpp"

#include <aspen/ops/ElementWise.hpp>
#include <aspen/util/Broadcast.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace aspen::ops {

namespace {

using detail::ExprNode;

enum class Destination { NewTensor, FirstOperand, Given };

struct MapOptions {
  bool generateCodelet = true;
  // popops' (default true): its rewrites of expressions into cheaper ones. Aspen's lowering
  // rewrites nothing, so the value only needs to be a boolean.
  bool expressionOptimizations = true;
};

MapOptions parseOptions(const OptionFlags &options) {
  MapOptions m;
  aspen::detail::OptionSpec("aspen::ops::map")
      .boolean("enableGenerateCodelet", m.generateCodelet)
      .boolean("enableExpressionOptimizations", m.expressionOptimizations)
      .parse(options);
  return m;
}

std::string shapeText(const std::vector<std::size_t> &s) { return fmt::format("{{{}}}", fmt::join(s, ",")); }

void checkDestination(const Tensor &out, const std::vector<std::size_t> &shape, Type type,
                      const std::string &caller) {
  if (out.shape() != shape)
    throw shape_error(fmt::format("{}: output tensor {} has shape {}, but the operands broadcast "
                                  "to shape {}",
                                  caller, out.getDebugStr(), out.shapeToString(), shapeText(shape)));
  if (out.elementType() != type)
    throw type_error(fmt::format("{}: output tensor {} has element type {}, but the expression "
                                 "gives {}",
                                 caller, out.getDebugStr(), out.elementType().toString(),
                                 type.toString()));
  aspen::detail::requireWritable(out, caller + " output");
}

Tensor createOutput(Graph &graph, const std::vector<Tensor> &ts,
                    const std::vector<std::size_t> &shape, Type type, const std::string &name) {
  for (const Tensor &t : ts)
    if (t.shape() == shape && t.numElements() != 0 && !t.containsAliases())
      return graph.clone(type, t, name);
  Tensor out = graph.addVariable(type, shape, name);
  util::mapTensorLinearly(graph, out);
  return out;
}

void mapImpl(Graph &graph, const expr::Expr &e, const std::vector<Tensor> &ts, Tensor *out,
             Destination destination, program::Sequence &prog, const DebugContext &debug,
             const OptionFlags &options, const std::string &caller) {
  const MapOptions opts = parseOptions(options);
  std::vector<Type> types;
  std::vector<std::string> names;
  std::vector<std::vector<std::size_t>> shapes;
  for (std::size_t i = 0; i < ts.size(); ++i) {
    if (!ts[i].valid())
      throw graph_connection_error(fmt::format("{}: tensor {} (for _{}) is not a valid tensor",
                                               caller, i + 1, i + 1));
    types.push_back(ts[i].elementType());
    names.push_back(ts[i].getDebugStr());
    shapes.push_back(ts[i].shape());
  }
  const detail::LoweredExpr lowered = detail::lowerExpr(e, types, names, caller);
  for (const ExprNode &n : lowered.nodes)
    if (n.type == QUARTER || n.type == QUARTER_METADATA)
      throw type_error(fmt::format(
          "{}: element-wise expressions do not take {} values{}; cast QUARTER data to float or "
          "half with aspen::ops::cast and its metadata first (and back with a metadata tensor)",
          caller, n.type.toString(),
          n.kind == ExprNode::Kind::Input ? fmt::format(" (tensor {} is one)", names[n.input])
                                          : std::string()));
  const Type resultType = lowered.root().type;
  const std::vector<std::size_t> shape = shapes.empty() ? std::vector<std::size_t>{}
                                                        : util::broadcastShape(shapes);
  const std::string name = debug.getPathName().empty() ? "map" : debug.getPathName();
  if (destination == Destination::NewTensor) {
    *out = createOutput(graph, ts, shape, resultType, name);
  } else {
    checkDestination(*out, shape, resultType, caller);
  }
  if (out->numElements() == 0)
    return;

  const Tensor outFlat = out->flatten();
  const std::vector<StridedVarRegion> outRegions = outFlat.getStridedVarRegions();
  // Whether `view` is the output's elements, one for one and in order (the same bytes).
  const auto sameElementsAsOut = [&](const Tensor &view) {
    return view.elementType().size() == outFlat.elementType().size() &&
           view.getStridedVarRegions() == outRegions;
  };
  std::vector<detail::ElementwiseOperand> operands(ts.size());
  std::vector<Tensor> shaped(ts.size()); // each read operand as read (its copy if it has one)
  for (const ExprNode &n : lowered.nodes) {
    if (n.kind != ExprNode::Kind::Input)
      continue;
    Tensor t = ts[n.input];
    Tensor view = t;
    util::broadcastToMatch(view, shape);
    view = view.flatten();
    const bool scalar = t.numElements() == 1;
    // An operand overlapping the output other than element for element is read from a copy.
    if (destination != Destination::NewTensor && t.intersectsWith(*out) &&
        (scalar || !sameElementsAsOut(view))) {
      t = util::duplicate(graph, t, prog, name + "/operandCopy");
      view = t;
      util::broadcastToMatch(view, shape);
      view = view.flatten();
    }
    operands[n.input] = {scalar ? t.flatten()[0] : view, scalar, true};
    shaped[n.input] = t;
  }

  if (lowered.numOperations() == 0) {
    const ExprNode &root = lowered.root();
    Tensor source = root.kind == ExprNode::Kind::Input
                        ? operands[root.input].tensor
                        : detail::constantFor(graph, root);
    if (source.numElements() == 1)
      source = source.flatten().broadcast(static_cast<unsigned>(outFlat.numElements()), 0);
    prog.add(program::Copy(source, outFlat));
    return;
  }
  // Operands broadcast along rows (a channel's value over its image): read once a row by a
  // generated codelet rather than gathered into a full-size temporary.
  std::vector<bool> candidates(ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i)
    candidates[i] = operands[i].used && !operands[i].scalar;
  const detail::RowBroadcast rows = opts.generateCodelet
                                        ? detail::findRowBroadcast(shaped, candidates, shape)
                                        : detail::RowBroadcast{};
  if (rows.rowLength > 0) {
    for (std::size_t i = 0; i < ts.size(); ++i)
      if (rows.perRow[i]) {
        Tensor view = shaped[i];
        util::broadcastToMatch(view, shape);
        const std::size_t numRows = outFlat.numElements() / rows.rowLength;
        operands[i].tensor = view.reshape({numRows, rows.rowLength}).slice(0, 1, 1).flatten();
        operands[i].perRow = true;
      }
    detail::runGenerated(graph, lowered, operands, outFlat, prog, name, rows.rowLength);
  } else if (opts.generateCodelet && lowered.numOperations() >= 2)
    detail::runGenerated(graph, lowered, operands, outFlat, prog, name);
  else
    detail::runOperationByOperation(graph, lowered, operands, outFlat, prog, name);
}

} // namespace

Tensor map(Graph &graph, const expr::Expr &expr, const std::vector<Tensor> &ts,
           program::Sequence &prog, const DebugContext &debug, const OptionFlags &options) {
  Tensor out;
  mapImpl(graph, expr, ts, &out, Destination::NewTensor, prog, debug, options, "aspen::ops::map");
  return out;
}

void mapInPlace(Graph &graph, const expr::Expr &expr, const std::vector<Tensor> &ts,
                program::Sequence &prog, const DebugContext &debug, const OptionFlags &options) {
  if (ts.empty())
    throw index_error("aspen::ops::mapInPlace: no tensors were given; the result is written "
                      "into the first");
  Tensor out = ts[0];
  mapImpl(graph, expr, ts, &out, Destination::FirstOperand, prog, debug, options,
          "aspen::ops::mapInPlace");
}

void mapWithOutput(Graph &graph, const expr::Expr &expr, const std::vector<Tensor> &ts,
                   const Tensor &out, program::Sequence &prog, const DebugContext &debug,
                   const OptionFlags &options) {
  Tensor o = out;
  mapImpl(graph, expr, ts, &o, Destination::Given, prog, debug, options,
          "aspen::ops::mapWithOutput");
}

} // namespace aspen::ops
