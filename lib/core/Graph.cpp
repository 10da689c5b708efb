#include "GraphState.hpp"
#include "support/CheckedSize.hpp"
#include "support/LinearMapping.hpp"
#include "support/Logging.hpp"
#include "TensorRegions.hpp"
#include "support/TypeConversion.hpp"
#include "support/Writability.hpp"

#include <aspen/Graph.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

namespace aspen {

using detail::FieldBinding;
using detail::FieldInfo;
using detail::FieldShape;
using detail::GraphState;
using detail::Variable;
using detail::VertexRecord;

namespace {

std::string shapeString(ArrayRef<std::size_t> shape) { return fmt::format("{{{}}}", fmt::join(shape, ",")); }

// The element count of shape; shape_error when the count or its bytes cannot be addressed.
std::size_t elementCount(ArrayRef<std::size_t> shape, std::size_t elementBytes = 1,
                         const char *what = "shape") {
  return detail::checkedElements<shape_error>(shape, elementBytes, [&] { return std::string(what); });
}

// The variable elements [first, last] holding bytes [byteBegin, byteBegin + bytes) of `var`.
std::pair<std::size_t, std::size_t> varElementsOfBytes(const Variable &var, std::int64_t byteBegin,
                                                       std::size_t bytes) {
  const std::size_t size = var.type.size();
  const auto first = static_cast<std::size_t>(byteBegin) / size;
  const auto last = (static_cast<std::size_t>(byteBegin) + bytes - 1) / size;
  return {first, last};
}

// Calls f(flatIndex, var, varElement) for each element of t, run by run, with runs of consecutive
// variable elements reported once as f(flatBegin, var, varBegin, count).
template <class F> void forEachVarRun(const GraphState &g, const Tensor &t, F &&f) {
  const std::size_t elemBytes = t.elementType().size();
  std::size_t flat = 0;
  for (const auto &r : detail::flatRegions(t)) {
    const Variable &var = g.variables[r.var];
    if (r.byteStride == static_cast<std::int64_t>(elemBytes) && elemBytes == var.type.size()) {
      f(flat, r.var, static_cast<std::size_t>(r.byteOffset) / elemBytes, r.count);
    } else {
      for (std::size_t i = 0; i < r.count; ++i) {
        const auto [first, last] =
            varElementsOfBytes(var, r.byteOffset + static_cast<std::int64_t>(i) * r.byteStride, elemBytes);
        f(flat + i, r.var, first, last - first + 1);
      }
    }
    flat += r.count;
  }
}

} // namespace

Graph::Graph(const Target &target)
    : state_(std::make_shared<GraphState>(target)), target_(target) {}
Graph::Graph(std::shared_ptr<GraphState> state, Target target, unsigned tileOffset)
    : state_(std::move(state)), target_(std::move(target)), tileOffset_(tileOffset) {}
Graph::Graph(const Device &device) : Graph(device.getTarget()) {}
Graph::Graph(const Target &target, replication_factor r) : Graph(target) {
  if (unsigned(r) == 0)
    throw invalid_option("Graph: replication_factor must be at least 1 (one replica), not 0");
  state_->replicationFactor = r;
}
Graph::Graph(const Device &device, replication_factor r) : Graph(device.getTarget(), r) {}

unsigned Graph::getReplicationFactor() const { return state_->replicationFactor; }

Tensor Graph::addReplicationIndexConstant(const DebugContext &debug) {
  Tensor t = addConstant<unsigned>(UNSIGNED_INT, {}, 0u, debug);
  state_->replicationIndexVariables.push_back(unsigned(state_->variables.size() - 1));
  return t;
}
Graph::Graph(Graph &&) noexcept = default;
Graph &Graph::operator=(Graph &&) noexcept = default;
Graph::~Graph() = default;

const Target &Graph::getTarget() const { return target_; }

Graph Graph::createVirtualGraph(unsigned lowerTile, unsigned upperTile) {
  const unsigned tiles = target_.getNumTiles();
  if (lowerTile >= upperTile || upperTile > tiles)
    throw invalid_tile_mapping(fmt::format(
        "createVirtualGraph({}, {}): the tile range must be non-empty and within this graph's {} tiles",
        lowerTile, upperTile, tiles));
  Target part = target_.getName() == "generic"
                    ? Target::createGeneric(upperTile - lowerTile, target_.getNumWorkerContexts(),
                                            target_.getBytesPerTile())
                    : Target::createModel(target_.getName(), upperTile - lowerTile);
  return Graph(state_, std::move(part), tileOffset_ + lowerTile);
}

Graph Graph::createReplicatedGraph(unsigned replicationFactor) {
  const unsigned r = replicationFactor, tiles = target_.getNumTiles();
  const std::string what = fmt::format("createReplicatedGraph({})", r);
  if (state_->replicationFactor != 1)
    throw invalid_option(fmt::format(
        "{}: the graph is already replicated {} ways; Aspen replicates a whole graph once (no "
        "nested replicated graphs)",
        what, state_->replicationFactor));
  if (!state_->variables.empty())
    throw invalid_option(fmt::format(
        "{}: the graph already has {} tensors; Aspen replicates the whole graph, so a graph is "
        "replicated before its first tensor is made",
        what, state_->variables.size()));
  if (r == 0 || tiles % r != 0)
    throw invalid_option(fmt::format(
        "{}: the replication factor must be at least 1 and divide the graph's {} tiles (each "
        "replica has an equal share)",
        what, tiles));
  Graph replicated = createVirtualGraph(0, tiles / r);
  state_->replicationFactor = r;
  return replicated;
}

unsigned Graph::absoluteTile(unsigned tile, const std::string &what) const {
  if (tile >= target_.getNumTiles())
    throw invalid_tile_mapping(fmt::format("{}: tile {} does not exist; target {} has tiles 0..{}", what,
                                           tile, target_.getName(), target_.getNumTiles() - 1));
  return tile + tileOffset_;
}

std::size_t Graph::shapeElements(ArrayRef<std::size_t> shape) { return elementCount(shape); }

// --- Helpers that check what the caller handed in --------------------------------------------

namespace {

VertexRecord &vertexOf(GraphState &g, unsigned id, detail::GraphState *owner, const char *what) {
  if (owner != &g || id >= g.vertices.size())
    throw graph_connection_error(
        fmt::format("{}: the vertex is invalid or belongs to another graph", what));
  return g.vertices[id];
}

// The field `f` names, with its binding; unknown_field lists the vertex type's fields.
std::pair<const FieldInfo *, FieldBinding *> fieldOf(GraphState &g, const FieldRef &f,
                                                     const char *what) {
  VertexRecord &v = vertexOf(g, f.vertexId(), f.graph(), what);
  const int index = v.type->fieldIndex(f.name());
  if (index < 0) {
    std::vector<std::string> names;
    for (const auto &field : v.type->fields)
      names.push_back(field.name);
    throw unknown_field(fmt::format("{}: {} has no field '{}'; its fields are: {}", what,
                                    g.vertexName(f.vertexId()), f.name(),
                                    names.empty() ? "(none)" : fmt::format("{}", fmt::join(names, ", "))));
  }
  return {&v.type->fields[index], &v.fields[index]};
}

const char *shapeName(FieldShape s) {
  switch (s) {
  case FieldShape::Scalar: return "a scalar";
  case FieldShape::Vector: return "a vector";
  case FieldShape::VectorOfVectors: return "a vector of vectors";
  }
  return "?";
}

void checkEdgeTensor(const GraphState &g, unsigned vertex, const FieldInfo &field,
                     const Tensor &t, bool isEdgeOf2D) {
  // Messages are made only when one is raised: formatting them for every edge connected was a
  // good part of building a graph of many vertices.
  const auto where = [&] {
    return fmt::format("connect field '{}' of {}", field.name, g.vertexName(vertex));
  };
  if (!t.valid() || detail::graphOf(t) != &g)
    g.requireOwnTensor(t, where().c_str());
  if (field.elementType.valid() ? t.elementType() != field.elementType
                                : t.elementType().size() != field.elementBytes)
    throw type_error(fmt::format("{}: the field holds {} but tensor {} is {}", where(),
                                 field.elementType.valid() ? field.elementType.toString()
                                                           : fmt::format("{}-byte elements", field.elementBytes),
                                 t.getVarStr(), t.elementType().toString()));
  if (field.shape == FieldShape::Scalar && !isEdgeOf2D && t.numElements() != 1)
    throw shape_error(fmt::format("{}: the field is a scalar but tensor {} has {} elements {}",
                                  where(), t.getVarStr(), t.numElements(), t.shapeToString()));
}

} // namespace

// --- Tensors ----------------------------------------------------------------------------------

namespace {

// The element count of a new variable of `shape`, or tensor_creation_error naming it.
std::size_t variableElements(Type type, ArrayRef<std::size_t> shape, const DebugContext &debug) {
  return detail::checkedElements<tensor_creation_error>(
      shape, type.size(), [&] { return fmt::format("addVariable '{}'", debug.getPathName()); });
}

// Appends the variable; numElements is variableElements(type, shape, ...).
Tensor pushVariable(GraphState &g, Type type, ArrayRef<std::size_t> shape,
                    std::size_t numElements, const DebugContext &debug, Tensor metadata) {
  Variable var;
  var.name = debug.getPathName();
  var.type = type;
  var.shape = shape.vec();
  var.numElements = numElements;
  var.metadata = std::move(metadata);
  const auto id = static_cast<unsigned>(g.variables.size());
  g.variables.push_back(std::move(var));
  return detail::makeVariableTensor(&g, id, type, shape.vec());
}

void mapLinearly(const Target &target, unsigned tileOffset, Variable &var) {
  // poputil's defaults: grains of the vector width, at least 128 bytes a tile.
  const Type type = var.type;
  for (const auto &r : detail::linearMapping(target.getNumTiles(), var.numElements,
                                             target.getVectorWidth(type),
                                             (128 + type.size() - 1) / type.size()))
    var.mapping.assign(r.begin, r.end, r.tile + tileOffset);
}

} // namespace

Tensor Graph::addVariable(Type type, ArrayRef<std::size_t> shape, const DebugContext &debug) {
  if (!type.valid())
    throw tensor_creation_error(
        fmt::format("addVariable '{}': the element type is invalid", debug.getPathName()));
  // Checked before the metadata variable is made, so that a refused shape adds nothing.
  const std::size_t n = variableElements(type, shape, debug);
  const std::size_t before = state_->variables.size();
  try {
    Tensor metadata;
    if (type == QUARTER) {
      // Its own metadata: F143 scale 0 until written, on this graph's first tile. Made first, so
      // that the QUARTER variable is the last one, as callers of addVariable expect.
      metadata = pushVariable(*state_, QUARTER_METADATA, {}, 1, {debug, "metadata"}, {});
      Variable &m = state_->variables.back();
      m.mapping.assign(0, 1, tileOffset_);
      m.initialData.assign(1, QuarterMetadata().getBinary());
    }
    return pushVariable(*state_, type, shape, n, debug, std::move(metadata));
  } catch (const std::bad_alloc &) {
    // A QUARTER's metadata variable, if it was made, goes too.
    state_->variables.erase(state_->variables.begin() + std::ptrdiff_t(before),
                            state_->variables.end());
    throw graph_memory_allocation_error(fmt::format(
        "addVariable '{}': out of host memory (the graph has {} variables); the graph is unchanged",
        debug.getPathName(), before));
  }
}

Tensor Graph::addVariable(Type type, const Tensor &metadata, ArrayRef<std::size_t> shape,
                          const DebugContext &debug) {
  const std::string what = fmt::format("addVariable '{}'", debug.getPathName());
  if (type != QUARTER)
    throw type_error(fmt::format("{}: only QUARTER variables take a metadata tensor, not {}", what,
                                 type.toString()));
  state_->requireOwnTensor(metadata, what.c_str());
  if (metadata.elementType() != QUARTER_METADATA || metadata.numElements() != 1)
    throw type_error(fmt::format("{}: the metadata tensor {} must be one QUARTER_METADATA element; "
                                 "it is {} {}",
                                 what, metadata.getDebugStr(), metadata.elementType().toString(),
                                 metadata.shapeToString()));
  return pushVariable(*state_, type, shape, variableElements(type, shape, debug), debug,
                      metadata);
}

Tensor Graph::addVariable(Type type, ArrayRef<std::size_t> shape, VariableMappingMethod method,
                          const DebugContext &debug) {
  Tensor t = addVariable(type, shape, debug);
  if (method == VariableMappingMethod::LINEAR)
    mapLinearly(target_, tileOffset_, state_->variables.back());
  return t;
}

Tensor Graph::addVariable(Type type, const Tensor &metadata, ArrayRef<std::size_t> shape,
                          VariableMappingMethod method, const DebugContext &debug) {
  Tensor t = addVariable(type, metadata, shape, debug);
  if (method == VariableMappingMethod::LINEAR)
    mapLinearly(target_, tileOffset_, state_->variables.back());
  return t;
}

Tensor Graph::addConstantFromHost(Type type, ArrayRef<std::size_t> shape, detail::HostType hostType,
                                  const void *values, std::size_t count,
                                  const DebugContext &debug) {
  const std::size_t n = detail::checkedElements<tensor_creation_error>(
      shape, type.valid() ? type.size() : 1,
      [&] { return fmt::format("addConstant '{}'", debug.getPathName()); });
  if (count != 1 && count != n)
    throw tensor_creation_error(fmt::format(
        "addConstant '{}': {} values were given for shape {} of {} elements (give 1 or {})",
        debug.getPathName(), count, shapeString(shape), n, n));
  if (count > 0 && values == nullptr)
    throw tensor_creation_error(fmt::format("addConstant '{}': the values pointer is null", debug.getPathName()));
  Tensor t = addVariable(type, shape, debug);
  Variable &var = state_->variables.back();
  try {
    var.isConstant = true;
    var.constantData.resize(var.bytes());
    const std::string what = fmt::format("addConstant '{}'", debug.getPathName());
    if (count == 1 && n > 0) {
      detail::convertValues(hostType, values, type, var.constantData.data(), 1, what);
      for (std::size_t i = 1; i < n; ++i)
        std::copy_n(var.constantData.begin(), type.size(),
                    var.constantData.begin() + static_cast<std::ptrdiff_t>(i * type.size()));
    } else {
      detail::convertValues(hostType, values, type, var.constantData.data(), n, what);
    }
  } catch (...) {
    state_->variables.pop_back(); // leave the graph as it was
    throw;
  }
  return t;
}

void Graph::setInitialValueFromHost(const Tensor &t, detail::HostType hostType, const void *values,
                                    std::size_t count) {
  state_->requireOwnTensor(t, "setInitialValue");
  const std::string what = "setInitialValue of " + t.getDebugStr();
  if (t.containsConstant())
    throw graph_connection_error(what + ": it contains constant elements, whose values are "
                                        "given by addConstant");
  detail::requireWritable(t, what);
  const std::size_t n = t.numElements();
  if (count != 1 && count != n)
    throw shape_error(fmt::format("{}: {} values were given for shape {} of {} elements (give 1 "
                                  "or {})",
                                  what, count, t.shapeToString(), n, n));
  if (n == 0)
    return;
  if (values == nullptr)
    throw tensor_creation_error(what + ": the values pointer is null");
  // Converted in full first, so a value t's type cannot hold changes nothing.
  const std::size_t size = t.elementType().size();
  std::vector<std::uint8_t> converted(count * size);
  detail::convertValues(hostType, values, t.elementType(), converted.data(), count, what);
  std::size_t flat = 0;
  for (const detail::VarRegion &r : detail::flatRegions(t)) {
    Variable &var = state_->variables[r.var];
    if (var.initialData.empty())
      var.initialData.assign(var.bytes(), 0);
    for (std::size_t i = 0; i < r.count; ++i, ++flat) {
      const auto at = static_cast<std::size_t>(r.byteOffset + static_cast<std::int64_t>(i) * r.byteStride);
      std::copy_n(converted.begin() + static_cast<std::ptrdiff_t>(count == 1 ? 0 : flat * size),
                  size, var.initialData.begin() + static_cast<std::ptrdiff_t>(at));
    }
  }
}

void Graph::reorderToSimplify(Tensor *t, ArrayRef<Tensor *> others, bool) const {
  if (t == nullptr)
    throw tensor_creation_error("reorderToSimplify: the tensor to reorder is null");
  state_->requireOwnTensor(*t, "reorderToSimplify");
  for (std::size_t i = 0; i < others.size(); ++i) {
    if (others[i] == nullptr)
      throw tensor_creation_error(fmt::format("reorderToSimplify: other tensor {} is null", i));
    state_->requireOwnTensor(*others[i], "reorderToSimplify");
    if (others[i]->numElements() != t->numElements())
      throw shape_error(fmt::format(
          "reorderToSimplify: other tensor {} ({}) has {} elements but {} has {}; each must "
          "have as many as the tensor reordered",
          i, others[i]->getDebugStr(), others[i]->numElements(), t->getDebugStr(),
          t->numElements()));
  }
  // t's flat regions, each a run of flat positions [start, start + count), ordered by where
  // they lie (variable, then lowest byte).
  struct Run {
    unsigned var;
    std::int64_t lowest;
    std::size_t start, count;
  };
  std::vector<Run> runs;
  std::size_t flat = 0;
  for (const detail::VarRegion &r : detail::flatRegions(*t)) {
    const std::int64_t last = r.byteOffset + static_cast<std::int64_t>(r.count - 1) * r.byteStride;
    runs.push_back({r.var, std::min(r.byteOffset, last), flat, r.count});
    flat += r.count;
  }
  std::stable_sort(runs.begin(), runs.end(), [](const Run &a, const Run &b) {
    return a.var != b.var ? a.var < b.var : a.lowest < b.lowest;
  });
  std::vector<Interval> order;
  for (const Run &r : runs) {
    if (!order.empty() && order.back().end() == r.start)
      order.back() = Interval(order.back().begin(), r.start + r.count);
    else
      order.emplace_back(r.start, r.start + r.count);
  }
  const auto reorder = [&](const Tensor &x) {
    const Tensor f = x.flatten();
    return order.size() <= 1 ? f : concat(f.slices(order)); // one run (or none): as it is
  };
  std::vector<Tensor> reordered;
  for (Tensor *o : others)
    reordered.push_back(reorder(*o));
  *t = reorder(*t);
  for (std::size_t i = 0; i < others.size(); ++i)
    *others[i] = reordered[i];
}

Tensor Graph::clone(const Tensor &t, const DebugContext &debug, TensorCloneMethod method) {
  return clone(t.valid() ? t.elementType() : Type(), t, debug, method);
}

Tensor Graph::clone(Type type, const Tensor &t, const DebugContext &debug, TensorCloneMethod) {
  state_->requireOwnTensor(t, "clone");
  // A QUARTER clone of a QUARTER tensor keeps its metadata tensor when it has one.
  const Tensor metadata = type == QUARTER ? detail::uniqueMetadata(t) : Tensor();
  Tensor result = metadata.valid() ? addVariable(type, metadata, t.shape(), debug)
                                   : addVariable(type, t.shape(), debug);
  const auto id = static_cast<unsigned>(state_->variables.size() - 1);
  forEachVarRun(*state_, t, [&](std::size_t flat, unsigned var, std::size_t varBegin, std::size_t count) {
    state_->variables[var].mapping.forEachRun(varBegin, varBegin + count, [&](std::size_t b, std::size_t e, unsigned tile) {
      if (tile != kInvalidId)
        state_->variables[id].mapping.assign(flat + (b - varBegin), flat + (e - varBegin), tile);
    });
  });
  return result;
}

// --- Tile mapping -------------------------------------------------------------------------------

void Graph::setTileMapping(const Tensor &t, unsigned tile) {
  state_->requireOwnTensor(t, "setTileMapping");
  const unsigned absolute = absoluteTile(tile, "setTileMapping of tensor " + t.getVarStr());
  forEachVarRun(*state_, t, [&](std::size_t, unsigned var, std::size_t begin, std::size_t count) {
    state_->variables[var].mapping.assign(begin, begin + count, absolute);
  });
}

void Graph::setTileMapping(const Tensor &t, const TileToTensorMapping &mapping) {
  state_->requireOwnTensor(t, "setTileMapping");
  const std::size_t n = t.numElements();
  if (mapping.size() > target_.getNumTiles())
    throw invalid_tile_mapping(fmt::format(
        "setTileMapping of tensor {}: the mapping lists {} tiles but target {} has {}",
        t.getVarStr(), mapping.size(), target_.getName(), target_.getNumTiles()));
  // Flat index -> tile, as sorted disjoint runs of the tensor's own index space.
  detail::TileMap flatToTile;
  for (unsigned tile = 0; tile < mapping.size(); ++tile)
    for (const Interval &i : mapping[tile]) {
      if (i.begin() > i.end() || i.end() > n)
        throw invalid_tile_mapping(fmt::format(
            "setTileMapping of tensor {}: interval {} for tile {} is outside the tensor's {} elements",
            t.getVarStr(), fmt::format("[{},{})", i.begin(), i.end()), tile, n));
      flatToTile.assign(i.begin(), i.end(), tile + tileOffset_);
    }
  forEachVarRun(*state_, t, [&](std::size_t flat, unsigned var, std::size_t varBegin, std::size_t count) {
    for (const auto &run : flatToTile.runs()) {
      const std::size_t b = std::max(run.begin, flat), e = std::min(run.end, flat + count);
      if (b < e)
        state_->variables[var].mapping.assign(varBegin + (b - flat), varBegin + (e - flat), run.tile);
    }
  });
}

void Graph::setTileMapping(VertexRef v, unsigned tile) {
  VertexRecord &record = vertexOf(*state_, v.getId(), v.graph(), "setTileMapping");
  // The message only when it is needed (one per vertex adds up in graphs of many vertices).
  const bool exists = tile < target_.getNumTiles();
  record.tile = absoluteTile(tile, exists ? std::string()
                                          : "setTileMapping of " + state_->vertexName(v.getId()));
}

TileToTensorMapping Graph::getTileMapping(const Tensor &t, bool requireComplete) const {
  state_->requireOwnTensor(t, "getTileMapping");
  TileToTensorMapping result(target_.getNumTiles());
  auto add = [&](unsigned absolute, std::size_t b, std::size_t e) {
    if (absolute < tileOffset_ || absolute - tileOffset_ >= result.size())
      throw invalid_tile_mapping(fmt::format(
          "getTileMapping of tensor {}: element {} is on tile {}, outside this virtual graph's tiles "
          "{}..{}", t.getVarStr(), b, absolute, tileOffset_, tileOffset_ + result.size() - 1));
    auto &list = result[absolute - tileOffset_];
    if (!list.empty() && list.back().end() == b)
      list.back() = Interval(list.back().begin(), e);
    else
      list.emplace_back(b, e);
  };
  forEachVarRun(*state_, t, [&](std::size_t flat, unsigned var, std::size_t varBegin, std::size_t count) {
    state_->variables[var].mapping.forEachRun(varBegin, varBegin + count, [&](std::size_t b, std::size_t e, unsigned tile) {
      if (tile != kInvalidId)
        add(tile, flat + (b - varBegin), flat + (e - varBegin));
      else if (requireComplete)
        throw invalid_tile_mapping(fmt::format(
            "getTileMapping of tensor {}: element {} (element {} of variable {}) is not mapped to a tile",
            t.getVarStr(), flat + (b - varBegin), b, state_->variableName(var)));
    });
  });
  return result;
}

// --- Compute --------------------------------------------------------------------------------------

ComputeSet Graph::addComputeSet(const DebugContext &debug) {
  const auto id = static_cast<unsigned>(state_->computeSets.size());
  state_->computeSets.push_back({debug.empty() ? fmt::format("cs{}", id) : debug.getPathName(), {}});
  return ComputeSet(state_.get(), id);
}

VertexRef Graph::addVertex(ComputeSet cs, StringRef vertexType) {
  if (cs.graph() != state_.get() || cs.getId() >= state_->computeSets.size())
    throw graph_connection_error(fmt::format(
        "addVertex '{}': the compute set is invalid or belongs to another graph", vertexType));
  const detail::VertexTypeInfo *type = state_->codelets.find(vertexType);
  if (!type)
    throw unknown_vertex_type(fmt::format(
        "addVertex: no vertex type '{}' (normalised '{}') is known to this graph; add the codelet "
        "file that defines it with Graph::addCodelets ({} codelet files added)",
        vertexType, detail::normalizeVertexName(vertexType), state_->codelets.libraries().size()));
  const auto id = static_cast<unsigned>(state_->vertices.size());
  std::vector<unsigned> &members = state_->computeSets[cs.getId()].vertices;
  try {
    VertexRecord record;
    record.type = type;
    record.computeSet = cs.getId();
    record.fields.resize(type->fields.size());
    // Room first, so that the two lists grow together or not at all; geometrically, as
    // push_back would (reserving one more each time made building a compute set quadratic).
    if (members.size() == members.capacity())
      members.reserve(std::max<std::size_t>(16, 2 * members.capacity()));
    state_->vertices.push_back(std::move(record));
  } catch (const std::bad_alloc &) {
    throw graph_memory_allocation_error(fmt::format(
        "addVertex '{}': out of host memory (the graph has {} vertices); the graph is unchanged",
        vertexType, id));
  }
  members.push_back(id);
  return VertexRef(state_.get(), id);
}

VertexRef Graph::addVertex(ComputeSet cs, StringRef vertexType,
                           std::initializer_list<std::pair<std::string, Tensor>> connections) {
  VertexRef v = addVertex(cs, vertexType);
  try {
    for (const auto &[field, tensor] : connections)
      connect(v[field], tensor);
  } catch (...) {
    // Leave the graph as it was before the call.
    state_->computeSets[cs.getId()].vertices.pop_back();
    state_->vertices.pop_back();
    throw;
  }
  return v;
}

void Graph::connect(FieldRef f, const Tensor &t) {
  auto [field, binding] = fieldOf(*state_, f, "connect");
  const auto where = [&] {
    return fmt::format("connect field '{}' of {}", f.name(), state_->vertexName(f.vertexId()));
  };
  if (!field->isEdge())
    throw graph_connection_error(fmt::format(
        "{}: the field is a plain member, not an edge; set it with setInitialValue", where()));
  if (field->shape == FieldShape::VectorOfVectors) {
    if (!f.isIndexed())
      throw graph_connection_error(fmt::format(
          "{}: the field is a vector of vectors; connect a list of tensors or index it (field[i])", where()));
    if (binding->sizeSet && f.index() >= binding->edges.size())
      throw index_error(fmt::format("{}: edge {} is outside the field's size {}", where(), f.index(),
                                    binding->edges.size()));
    checkEdgeTensor(*state_, f.vertexId(), *field, t, true);
    if (!binding->sizeSet && f.index() >= binding->edges.size())
      binding->edges.resize(f.index() + 1);
    if (binding->edges[f.index()].valid())
      throw graph_connection_error(fmt::format("{}: edge {} is already connected", where(), f.index()));
    binding->edges[f.index()] = t;
    return;
  }
  if (f.isIndexed())
    throw graph_connection_error(fmt::format("{}: the field is {}, it cannot be indexed", where(),
                                             shapeName(field->shape)));
  checkEdgeTensor(*state_, f.vertexId(), *field, t, false);
  if (binding->tensor.valid())
    throw graph_connection_error(fmt::format("{}: the field is already connected (to {})", where(),
                                             binding->tensor.getVarStr()));
  binding->tensor = t;
}

void Graph::connect(FieldRef f, ArrayRef<Tensor> tensors) {
  auto [field, binding] = fieldOf(*state_, f, "connect");
  const auto where = fmt::format("connect field '{}' of {}", f.name(), state_->vertexName(f.vertexId()));
  if (field->shape != FieldShape::VectorOfVectors || !field->isEdge() || f.isIndexed())
    throw graph_connection_error(fmt::format(
        "{}: a list of tensors connects only to a vector-of-vectors edge field; this field is {}{}",
        where, field->isEdge() ? "" : "a plain member holding ", shapeName(field->shape)));
  if (binding->sizeSet && binding->edges.size() != tensors.size())
    throw shape_error(fmt::format("{}: {} tensors given but the field's size is {}", where,
                                  tensors.size(), binding->edges.size()));
  for (const Tensor &t : tensors)
    checkEdgeTensor(*state_, f.vertexId(), *field, t, true);
  binding->edges.assign(tensors.begin(), tensors.end());
  binding->sizeSet = true;
}

void Graph::setFieldSize(FieldRef f, std::size_t size) {
  auto [field, binding] = fieldOf(*state_, f, "setFieldSize");
  if (field->shape != FieldShape::VectorOfVectors || !field->isEdge())
    throw graph_connection_error(fmt::format(
        "setFieldSize of field '{}' of {}: only vector-of-vectors edge fields have a size to set",
        f.name(), state_->vertexName(f.vertexId())));
  if (binding->edges.size() > size)
    throw shape_error(fmt::format("setFieldSize of field '{}' of {}: edge {} is already connected, "
                                  "beyond the new size {}",
                                  f.name(), state_->vertexName(f.vertexId()), binding->edges.size() - 1, size));
  binding->edges.resize(size);
  binding->sizeSet = true;
}

void Graph::setInitialValueFromHost(FieldRef f, detail::HostType hostType, const void *values,
                                    std::size_t count, bool isVector) {
  auto [field, binding] = fieldOf(*state_, f, "setInitialValue");
  const auto where =
      fmt::format("setInitialValue of field '{}' of {}", f.name(), state_->vertexName(f.vertexId()));
  if (field->isEdge())
    throw graph_connection_error(fmt::format("{}: the field is an edge; connect a tensor to it", where));
  if (f.isIndexed())
    throw graph_connection_error(fmt::format("{}: a plain member cannot be indexed", where));
  if (isVector != (field->shape == FieldShape::Vector))
    throw graph_connection_error(fmt::format("{}: the field is {} but {} was given", where,
                                             shapeName(field->shape),
                                             isVector ? "a list of values" : "one value"));
  std::vector<std::uint8_t> bytes(count * field->elementBytes);
  if (field->elementType.valid()) {
    detail::convertValues(hostType, values, field->elementType, bytes.data(), count, where);
  } else {
    if (hostType.size() != field->elementBytes)
      throw type_error(fmt::format("{}: the member's type is not an Aspen element type and is {} "
                                   "bytes, but the value ({}) is {} bytes",
                                   where, field->elementBytes, hostType.toString(), hostType.size()));
    std::copy_n(static_cast<const std::uint8_t *>(values), bytes.size(), bytes.begin());
  }
  binding->value = std::move(bytes);
  binding->valueCount = count;
  binding->hasValue = true;
}

void Graph::setPerfEstimate(VertexRef v, std::uint64_t cycles, std::uint64_t flops) {
  VertexRecord &record = vertexOf(*state_, v.getId(), v.graph(), "setPerfEstimate");
  record.perfEstimate = cycles;
  record.perfEstimateFlops = flops;
  record.hasPerfEstimate = true;
}

void Graph::registerPerfEstimator(StringRef vertexType, PerfEstimateFunc estimator) {
  if (!estimator)
    throw graph_connection_error(fmt::format("registerPerfEstimator '{}': the estimator is empty", vertexType));
  if (!state_->codelets.find(vertexType))
    throw unknown_vertex_type(fmt::format(
        "registerPerfEstimator: no vertex type '{}' is known to this graph; add its codelets first", vertexType));
  state_->perfEstimators[detail::normalizeVertexName(vertexType)] = std::move(estimator);
}

bool Graph::addCodelets(StringRef path, CodeletFileType type, StringRef compileFlags) {
  const std::string file(path);
  if (type == CodeletFileType::Auto) {
    const auto ext = std::filesystem::path(file).extension();
    type = (ext == ".gp" || ext == ".so") ? CodeletFileType::Precompiled : CodeletFileType::CppSource;
  }
  auto lib = type == CodeletFileType::Precompiled
                 ? detail::CodeletLibrary::loadPrecompiled(file)
                 : detail::CodeletLibrary::compileFile(file, std::string(compileFlags));
  state_->codelets.add(std::move(lib));
  return true;
}

bool Graph::addCodeletsFromString(StringRef source, StringRef name, StringRef compileFlags) {
  state_->codelets.add(detail::CodeletLibrary::compileSource(std::string(name), std::string(source),
                                                             std::string(compileFlags)));
  return true;
}

bool Graph::hasCodelet(StringRef vertexType) const { return state_->codelets.find(vertexType) != nullptr; }

// --- Host access -----------------------------------------------------------------------------------

namespace {
// Host writes, host reads and streams are looked up by the engine call that uses them, so a
// write and a read may share a name (as Poplar allows); a stream's name must be unique.
enum class HandleKind { Write, Read, Stream };

void requireNewHandle(const GraphState &g, StringRef handle, HandleKind kind, const char *what) {
  if (handle.empty())
    throw stream_connection_error(fmt::format("{}: the handle name is empty", what));
  const bool taken = g.streamByHandle.count(handle) ||
                     (kind != HandleKind::Read && g.hostWrites.count(handle)) ||
                     (kind != HandleKind::Write && g.hostReads.count(handle));
  if (taken)
    throw stream_connection_error(fmt::format(
        "{}: handle '{}' is already used by another {}", what, handle,
        kind == HandleKind::Stream ? "host write, read or stream" : "handle of this kind or a stream"));
}
} // namespace

void Graph::createHostWrite(StringRef handle, const Tensor &t, bool) {
  state_->requireOwnTensor(t, "createHostWrite");
  requireNewHandle(*state_, handle, HandleKind::Write, "createHostWrite");
  if (!t.isParallelWriteable())
    throw stream_connection_error(fmt::format(
        "createHostWrite '{}': tensor {} contains aliases or constants and cannot be written", handle,
        t.getVarStr()));
  state_->hostWrites.emplace(std::string(handle), t);
}

void Graph::createHostRead(StringRef handle, const Tensor &t, bool) {
  state_->requireOwnTensor(t, "createHostRead");
  requireNewHandle(*state_, handle, HandleKind::Read, "createHostRead");
  state_->hostReads.emplace(std::string(handle), t);
}

namespace {
DataStream addStream(GraphState &g, StringRef handle, Type type, std::size_t numElements,
                     bool hostToDevice, bool broadcast = false) {
  const char *what = hostToDevice ? "addHostToDeviceFIFO" : "addDeviceToHostFIFO";
  requireNewHandle(g, handle, HandleKind::Stream, what);
  if (!type.valid())
    throw type_error(fmt::format("{} '{}': the element type is invalid", what, handle));
  detail::checkedElements<stream_connection_error>(std::vector<std::size_t>{numElements}, type.size(),
                                           [&] { return fmt::format("{} '{}'", what, handle); });
  const auto id = static_cast<unsigned>(g.streams.size());
  g.streams.push_back({std::string(handle), type, numElements, hostToDevice, broadcast});
  g.streamByHandle.emplace(std::string(handle), id);
  return DataStream(&g, id);
}
} // namespace

DataStream Graph::addHostToDeviceFIFO(StringRef handle, Type type, std::size_t numElements,
                                      ReplicatedStreamMode mode, const OptionFlags &) {
  if (mode != ReplicatedStreamMode::REPLICATE && mode != ReplicatedStreamMode::BROADCAST)
    throw invalid_option(fmt::format("addHostToDeviceFIFO '{}': ReplicatedStreamMode {} is not "
                                     "REPLICATE or BROADCAST",
                                     handle, unsigned(mode)));
  return addStream(*state_, handle, type, numElements, true,
                   mode == ReplicatedStreamMode::BROADCAST);
}

DataStream Graph::addHostToDeviceFIFO(StringRef handle, Type type, std::size_t numElements,
                                      const OptionFlags &options) {
  return addHostToDeviceFIFO(handle, type, numElements, ReplicatedStreamMode::REPLICATE, options);
}

DataStream Graph::addDeviceToHostFIFO(StringRef handle, Type type, std::size_t numElements,
                                      const OptionFlags &) {
  return addStream(*state_, handle, type, numElements, false);
}

Function Graph::addFunction(const program::Program &program) {
  const auto id = static_cast<unsigned>(state_->functions.size());
  state_->functions.push_back(program);
  return Function(state_.get(), id);
}

} // namespace aspen

