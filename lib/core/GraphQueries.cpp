// Graph queries that Poplar code uses: contiguous regions, variables, unbroadcasting, field
// limits.
#include "GraphState.hpp"
#include "TensorRegions.hpp"

#include <aspen/Graph.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace aspen {

using detail::FieldShape;
using detail::GraphState;
using detail::Variable;

namespace {
const detail::FieldInfo &fieldInfoOf(const GraphState &g, StringRef vertexType, StringRef field,
                                     const char *what) {
  const detail::VertexTypeInfo *type = g.codelets.find(vertexType);
  if (!type)
    throw unknown_vertex_type(fmt::format("{}: no vertex type '{}' is known to this graph", what, vertexType));
  const int index = type->fieldIndex(field);
  if (index < 0)
    throw unknown_field(fmt::format("{}: vertex type '{}' has no field '{}'", what, type->name, field));
  return type->fields[index];
}
} // namespace

double Graph::getMaxFieldDim(StringRef vertexType, StringRef field, unsigned dimIndex) const {
  const auto &info = fieldInfoOf(*state_, vertexType, field, "getMaxFieldDim");
  const unsigned dims = info.shape == FieldShape::VectorOfVectors ? 2 : info.shape == FieldShape::Vector ? 1 : 0;
  if (dimIndex >= dims)
    throw index_error(fmt::format("getMaxFieldDim: field '{}' of '{}' has {} dimensions, not {}", field,
                                  vertexType, dims, dimIndex + 1));
  return static_cast<double>(std::numeric_limits<std::uint64_t>::max());
}

namespace {
// The largest value of H, or -1 for a type without one (quarter: it depends on metadata).
template <class H> double maxValueOf() {
  if constexpr (std::numeric_limits<H>::is_specialized)
    return static_cast<double>(std::numeric_limits<H>::max());
  else
    return -1;
}
} // namespace

double Graph::getMaxVertexFieldValue(StringRef vertexType, StringRef field) const {
  const auto &info = fieldInfoOf(*state_, vertexType, field, "getMaxVertexFieldValue");
  if (info.isEdge())
    throw graph_connection_error(fmt::format(
        "getMaxVertexFieldValue: field '{}' of '{}' is an edge, not a plain member", field, vertexType));
  switch (info.elementType.id()) {
#define ASPEN_MAX_VALUE(e, c, n, h, s, f, sg)                                                    \
  case TypeId::e:                                                                                \
    if (const double m = maxValueOf<h>(); m >= 0)                                                \
      return m;                                                                                  \
    break;
    ASPEN_FOR_EACH_TYPE(ASPEN_MAX_VALUE)
#undef ASPEN_MAX_VALUE
  case TypeId::Invalid:
    break;
  }
  throw type_error(fmt::format("getMaxVertexFieldValue: field '{}' of '{}' is not of an Aspen element type with a maximum (quarter values depend on their metadata)",
                               field, vertexType));
}

std::vector<std::vector<Interval>>
Graph::getSortedContiguousRegions(const Tensor &t, ArrayRef<Interval> regions,
                                  bool removeAliasedIntervals, std::vector<std::size_t> *aliases) const {
  state_->requireOwnTensor(t, "getSortedContiguousRegions");
  const std::size_t n = t.numElements();
  // Where each flattened element lives: (variable, byte address).
  struct Element {
    unsigned var;
    std::int64_t byte;
    std::size_t flat;
  };
  std::vector<Element> address(n);
  std::size_t flat = 0;
  for (const auto &r : detail::flatRegions(t))
    for (std::size_t i = 0; i < r.count; ++i, ++flat)
      address[flat] = {r.var, r.byteOffset + static_cast<std::int64_t>(i) * r.byteStride, flat};
  std::vector<Element> chosen;
  for (const Interval &i : regions) {
    if (i.end() > n || i.begin() > i.end())
      throw index_error(fmt::format("getSortedContiguousRegions of {}: interval [{},{}) is outside its {} elements",
                                    t.getVarStr(), i.begin(), i.end(), n));
    chosen.insert(chosen.end(), address.begin() + i.begin(), address.begin() + i.end());
  }
  std::stable_sort(chosen.begin(), chosen.end(), [](const Element &a, const Element &b) {
    return a.var != b.var ? a.var < b.var : a.byte < b.byte;
  });
  const auto elementBytes = static_cast<std::int64_t>(t.elementType().size());
  std::vector<std::vector<Interval>> result;
  const Element *previous = nullptr;
  for (const Element &e : chosen) {
    if (previous && previous->var == e.var && previous->byte == e.byte && removeAliasedIntervals) {
      if (aliases)
        aliases->push_back(e.flat);
      continue;
    }
    const bool continues = previous && previous->var == e.var && previous->byte + elementBytes == e.byte;
    if (!continues)
      result.emplace_back();
    auto &group = result.back();
    if (!group.empty() && group.back().end() == e.flat)
      group.back() = Interval(group.back().begin(), e.flat + 1);
    else
      group.emplace_back(e.flat, e.flat + 1);
    previous = &e;
  }
  return result;
}

Tensor Graph::getVariable(VariableRef v) const {
  if (v.id >= state_->variables.size())
    throw index_error(fmt::format("getVariable: variable #{} does not exist; the graph has {} variables", v.id,
                                  state_->variables.size()));
  const Variable &var = state_->variables[v.id];
  return detail::makeVariableTensor(state_.get(), v.id, var.type, var.shape);
}

Tensor Graph::findUnbroadcastTensor(const Tensor &t) const {
  state_->requireOwnTensor(t, "findUnbroadcastTensor");
  Tensor result = t;
  for (unsigned d = 0; d < result.rank(); ++d) {
    const std::size_t size = result.dim(d);
    if (size > 1 && result.slice(0, 1, d).broadcast(static_cast<unsigned>(size), d) == result)
      result = result.slice(0, 1, d);
  }
  return result;
}

} // namespace aspen
