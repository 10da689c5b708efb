#include "GraphState.hpp"
#include "TensorRegions.hpp"

#include <fmt/format.h>

namespace aspen::detail {

void GraphState::requireOwnTensor(const Tensor &t, const char *what) const {
  if (!t.valid())
    throw graph_connection_error(fmt::format("{}: the tensor is invalid (default-constructed)", what));
  if (graphOf(t) != this)
    throw graph_connection_error(fmt::format("{}: tensor {} belongs to another graph", what, t.getVarStr()));
}

std::string GraphState::variableName(unsigned var) const {
  if (var >= variables.size())
    return fmt::format("#{}", var);
  const Variable &v = variables[var];
  return v.name.empty() ? fmt::format("#{}", var) : fmt::format("'{}'", v.name);
}

std::string GraphState::vertexName(unsigned vertex) const {
  if (vertex >= vertices.size())
    return fmt::format("vertex {}", vertex);
  const VertexRecord &v = vertices[vertex];
  const std::string cs =
      v.computeSet < computeSets.size() ? computeSets[v.computeSet].name : std::string("?");
  return fmt::format("vertex {} ({}) in compute set '{}'", vertex, v.type ? v.type->name : "?", cs);
}

} // namespace aspen::detail

namespace aspen {

std::string DataStream::handle() const {
  if (!graph_ || id_ >= graph_->streams.size())
    throw error("DataStream::handle: the stream is invalid (default-constructed)");
  return graph_->streams[id_].handle;
}

std::size_t DataStream::numElements() const {
  if (!graph_ || id_ >= graph_->streams.size())
    throw error("DataStream::numElements: the stream is invalid (default-constructed)");
  return graph_->streams[id_].numElements;
}

} // namespace aspen
