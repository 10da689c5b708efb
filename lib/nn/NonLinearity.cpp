// nonLinearity, nonLinearityInPlace and nonLinearityInputGradient: vertices per tile, dispatched
// from the table in NonLinearityTable.hpp.
#include "NnWork.hpp"
#include "layersupport/VertexPerTile.hpp"
#include "support/Writability.hpp"

#include <aspen/Error.hpp>
#include <aspen/nn/NonLinearity.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <sstream>

namespace aspen::nn {

std::string nonLinearityName(NonLinearityType type) {
  switch (type) {
#define ASPEN_NN_NAME_E(name, helper, takesInput)                                                  \
  case NonLinearityType::name:                                                                     \
    return #name;
#define ASPEN_NN_NAME_S(name, helper, stable, scaled)                                              \
  case NonLinearityType::name:                                                                     \
    return #name;
    ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_NAME_E)
    ASPEN_NN_SOFTMAX_NON_LINEARITIES(ASPEN_NN_NAME_S)
#undef ASPEN_NN_NAME_E
#undef ASPEN_NN_NAME_S
  }
  throw invalid_option("NonLinearityType " + std::to_string(static_cast<int>(type)) +
                       " is not a non-linearity (0.." + std::to_string(kNumNonLinearityTypes - 1) +
                       ")");
}

namespace {

using program::Execute;
using program::Sequence;

std::string kindArgument(NonLinearityType type) { return "NonLinearityType::" + asString(type); }

void requireElementwise(NonLinearityType type, const std::string &what) {
  if (!isSoftmax(type))
    return;
  std::string allowed;
#define ASPEN_NN_ALLOWED(name, helper, takesInput)                                                 \
  allowed += (allowed.empty() ? "" : ", ") + std::string(#name);
  ASPEN_NN_ELEMENTWISE_NON_LINEARITIES(ASPEN_NN_ALLOWED)
#undef ASPEN_NN_ALLOWED
  throw invalid_option(what + ": NonLinearityType " + asString(type) +
                       " needs a whole row and cannot be added to a single compute set; "
                       "allowed here: " +
                       allowed);
}

using aspen::detail::requireWritable;

// Element-wise vertices on every tile that owns part of `written`: one field per entry of
// `fields`, each connected to the same regions of its (flattened) tensor.
void addElementwiseVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                            const Tensor &written,
                            const std::vector<std::pair<std::string, Tensor>> &fields) {
  aspen::detail::addVertexPerTile(graph, cs, written.flatten(), vertexType,
                                [&](VertexRef v, const std::vector<Interval> &regions) {
                                  for (const auto &[name, tensor] : fields)
                                    graph.connect(v[name], tensor.flatten().slices(regions));
                                });
}

// Softmax vertices: rows of `written` (as [R, C]) on the tile owning each row's first element,
// with the float members `scalars`.
void addSoftmaxVertices(Graph &graph, ComputeSet cs, const std::string &vertexType,
                        const Tensor &written,
                        const std::vector<std::pair<std::string, float>> &scalars,
                        const std::vector<std::pair<std::string, Tensor>> &fields) {
  const Tensor rows = work::asRows(written);
  if (rows.numElements() == 0)
    return;
  const auto tileRows = work::rowsByTile(graph, rows);
  work::addRowVertices(graph, cs, vertexType, tileRows, [&](VertexRef v, const auto &rows) {
    for (const auto &[name, tensor] : fields)
      graph.connect(v[name], work::rowList(work::asRows(tensor), rows));
    for (const auto &[name, value] : scalars)
      graph.setInitialValue(v[name], value);
  });
}

void checkSoftmaxRank(NonLinearityType type, const Tensor &t, const std::string &what) {
  if (isSoftmax(type) && t.rank() == 0)
    throw shape_error(what + ": " + asString(type) + " works over the innermost dimension and " +
                      work::describe(t) + " is a scalar");
}

// Writes f(in) into out (which may be in itself) with the vertices of `type`.
void addForward(Graph &graph, NonLinearityType type, const Tensor &in, const Tensor *out,
                ComputeSet cs) {
  const Type dtype = in.elementType();
  if (isSoftmax(type)) {
    const float scale = getNonLinearityScaling(type);
    if (out)
      addSoftmaxVertices(graph, cs,
                         util::templateVertex("aspen::nn::Softmax", dtype, isStableSoftmax(type)),
                         *out, {{"outputScale", scale}}, {{"in", in}, {"out", *out}});
    else
      addSoftmaxVertices(
          graph, cs,
          util::templateVertex("aspen::nn::SoftmaxInPlace", dtype, isStableSoftmax(type)), in,
          {{"outputScale", scale}}, {{"data", in}});
    return;
  }
  if (out)
    addElementwiseVertices(
        graph, cs, util::templateVertex("aspen::nn::NonLinearity", dtype, kindArgument(type)), *out,
        {{"in", in}, {"out", *out}});
  else
    addElementwiseVertices(
        graph, cs,
        util::templateVertex("aspen::nn::NonLinearityInPlace", dtype, kindArgument(type)), in,
        {{"data", in}});
}

void checkGradientArguments(NonLinearityType type, const Tensor &act, const Tensor &outGradient,
                            const std::string &what) {
  work::requireFloatingPoint(act, what);
  if (outGradient.elementType() != act.elementType())
    throw type_error(what + ": outGradient " + work::describe(outGradient) +
                     " must have the type of act " + work::describe(act));
  if (outGradient.shape() != act.shape())
    throw shape_error(what + ": outGradient " + work::describe(outGradient) +
                      " must have the shape of act " + work::describe(act));
  checkSoftmaxRank(type, act, what);
}

Tensor addGradient(Graph &graph, NonLinearityType type, const Tensor &act,
                   const Tensor &outGradient, NonLinearityGradient derivative, ComputeSet cs,
                   const DebugContext &debug) {
  Tensor inGradient = graph.clone(act, DebugContext(debug, "inGradient"));
  const Type dtype = act.elementType();
  const std::vector<std::pair<std::string, Tensor>> fields{
      {isSoftmax(type) ? "out" : "act", act}, {"outGrad", outGradient}, {"inGrad", inGradient}};
  if (isSoftmax(type))
    addSoftmaxVertices(graph, cs, util::templateVertex("aspen::nn::SoftmaxGrad", dtype), inGradient,
                       {}, fields);
  else if (type == NonLinearityType::HARD_SIGMOID && derivative == NonLinearityGradient::Popnn)
    addElementwiseVertices(graph, cs, util::templateVertex("aspen::nn::HardSigmoidGradPopnn", dtype),
                           inGradient, fields);
  else
    addElementwiseVertices(
        graph, cs, util::templateVertex("aspen::nn::NonLinearityGrad", dtype, kindArgument(type)),
        inGradient, fields);
  return inGradient;
}

} // namespace

Tensor nonLinearity(Graph &graph, NonLinearityType type, Tensor t, Sequence &prog,
                    const DebugContext &debug) {
  const std::string what = "nonLinearity(" + asString(type) + ")";
  work::requireFloatingPoint(t, what);
  checkSoftmaxRank(type, t, what);
  Tensor out = graph.clone(t, DebugContext(debug, "out"));
  ComputeSet cs = graph.addComputeSet(DebugContext(debug, asString(type)));
  addForward(graph, type, t, &out, cs);
  prog.add(Execute(cs));
  return out;
}

Tensor nonLinearity(Graph &graph, NonLinearityType type, Tensor t, float &nonLinearityScaling,
                    Sequence &prog, const DebugContext &debug) {
  Tensor out = nonLinearity(graph, type, t, prog, debug);
  nonLinearityScaling = getNonLinearityScaling(type);
  return out;
}

void nonLinearityInPlace(Graph &graph, NonLinearityType type, Tensor t, Sequence &prog,
                         const DebugContext &debug) {
  const std::string what = "nonLinearityInPlace(" + asString(type) + ")";
  work::requireFloatingPoint(t, what);
  checkSoftmaxRank(type, t, what);
  requireWritable(t, what);
  ComputeSet cs = graph.addComputeSet(DebugContext(debug, asString(type)));
  addForward(graph, type, t, nullptr, cs);
  prog.add(Execute(cs));
}

void nonLinearityInPlace(Graph &graph, NonLinearityType type, Tensor t, float &nonLinearityScaling,
                         Sequence &prog, const DebugContext &debug) {
  nonLinearityInPlace(graph, type, t, prog, debug);
  nonLinearityScaling = getNonLinearityScaling(type);
}

void nonLinearityInPlace(Graph &graph, NonLinearityType type, Tensor t, ComputeSet &cs,
                         const DebugContext &) {
  const std::string what = "nonLinearityInPlace(" + asString(type) + ", ComputeSet)";
  requireElementwise(type, what);
  work::requireFloatingPoint(t, what);
  requireWritable(t, what);
  addForward(graph, type, t, nullptr, cs);
}

Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                 Tensor outGradient, NonLinearityGradient derivative,
                                 Sequence &prog, const DebugContext &debug) {
  const std::string what = "nonLinearityInputGradient(" + asString(type) + ")";
  checkGradientArguments(type, act, outGradient, what);
  ComputeSet cs = graph.addComputeSet(DebugContext(debug, asString(type) + "Grad"));
  Tensor inGradient = addGradient(graph, type, act, outGradient, derivative, cs, debug);
  prog.add(Execute(cs));
  return inGradient;
}

Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                 Tensor outGradient, Sequence &prog, const DebugContext &debug) {
  return nonLinearityInputGradient(graph, type, act, outGradient, NonLinearityGradient::Popnn,
                                   prog, debug);
}

Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                 Tensor outGradient, NonLinearityGradient derivative,
                                 ComputeSet &cs, const DebugContext &debug) {
  const std::string what = "nonLinearityInputGradient(" + asString(type) + ", ComputeSet)";
  requireElementwise(type, what);
  checkGradientArguments(type, act, outGradient, what);
  return addGradient(graph, type, act, outGradient, derivative, cs, debug);
}

Tensor nonLinearityInputGradient(Graph &graph, NonLinearityType type, Tensor act,
                                 Tensor outGradient, ComputeSet &cs, const DebugContext &debug) {
  return nonLinearityInputGradient(graph, type, act, outGradient, NonLinearityGradient::Popnn, cs,
                                   debug);
}

} // namespace aspen::nn
