// Handles to objects owned by a Graph: compute sets, vertices, vertex fields, functions, streams.
// They are small values; using one with another graph is an error.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>

#include <cstddef>
#include <limits>
#include <string>

namespace aspen {

namespace detail {
struct GraphState;
}

inline constexpr unsigned kInvalidId = std::numeric_limits<unsigned>::max();

class ComputeSet {
public:
  ComputeSet() = default;
  ComputeSet(detail::GraphState *graph, unsigned id) : graph_(graph), id_(id) {}
  unsigned getId() const { return id_; }
  detail::GraphState *graph() const { return graph_; }

private:
  detail::GraphState *graph_ = nullptr;
  unsigned id_ = kInvalidId;
};

class ASPEN_API FieldRef {
public:
  FieldRef() = default;
  FieldRef(detail::GraphState *graph, unsigned vertex, std::string name)
      : graph_(graph), vertex_(vertex), name_(std::move(name)) {}
  // Element i of a vector-of-edges (2-D) field.
  FieldRef operator[](std::size_t i) const {
    FieldRef f = *this;
    f.index_ = i;
    return f;
  }
  detail::GraphState *graph() const { return graph_; }
  unsigned vertexId() const { return vertex_; }
  const std::string &name() const { return name_; }
  bool isIndexed() const { return index_ != kNoIndex; }
  std::size_t index() const { return index_; }

private:
  static constexpr std::size_t kNoIndex = std::numeric_limits<std::size_t>::max();
  detail::GraphState *graph_ = nullptr;
  unsigned vertex_ = kInvalidId;
  std::string name_;
  std::size_t index_ = kNoIndex;
};

class VertexRef {
public:
  VertexRef() = default;
  VertexRef(detail::GraphState *graph, unsigned id) : graph_(graph), id_(id) {}
  FieldRef operator[](StringRef field) const { return FieldRef(graph_, id_, std::string(field)); }
  unsigned getId() const { return id_; }
  detail::GraphState *graph() const { return graph_; }

private:
  detail::GraphState *graph_ = nullptr;
  unsigned id_ = kInvalidId;
};

class Function {
public:
  Function() = default;
  Function(detail::GraphState *graph, unsigned id) : graph_(graph), id_(id) {}
  unsigned getId() const { return id_; }
  detail::GraphState *graph() const { return graph_; }

private:
  detail::GraphState *graph_ = nullptr;
  unsigned id_ = kInvalidId;
};

// A first-in first-out stream between the host and the device, made by
// Graph::addHostToDeviceFIFO / addDeviceToHostFIFO and used as a Copy source or destination.
class ASPEN_API DataStream {
public:
  DataStream() = default;
  DataStream(detail::GraphState *graph, unsigned id) : graph_(graph), id_(id) {}
  unsigned getId() const { return id_; }
  detail::GraphState *graph() const { return graph_; }
  std::string handle() const;
  std::size_t numElements() const;

private:
  detail::GraphState *graph_ = nullptr;
  unsigned id_ = kInvalidId;
};

} // namespace aspen
