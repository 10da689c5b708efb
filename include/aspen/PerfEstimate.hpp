// Performance estimates of vertices (Poplar's PerfEstimateFunc and VertexIntrospector).
//
// Graph::setPerfEstimate gives one vertex a cycle count; Graph::registerPerfEstimator gives a
// vertex type a function that computes the estimate of each of its vertices from how its fields
// are connected and set. The compiler asks the function for every vertex without its own
// estimate; the profile reports each compute set's estimate beside its measured time.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/Export.hpp>
#include <aspen/Target.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace aspen {

namespace detail {
struct FieldInfo;
struct FieldBinding;
struct VertexRecord;
} // namespace detail

struct VertexPerfEstimate {
  VertexPerfEstimate() = default;
  VertexPerfEstimate(std::uint64_t cycles, std::uint64_t flops = 0) : cycles(cycles), flops(flops) {}
  std::uint64_t cycles = 0;
  std::uint64_t flops = 0;
};

// One field of one vertex, as the graph has connected or set it.
class ASPEN_API FieldData {
public:
  FieldData(const detail::FieldInfo &info, const detail::FieldBinding &binding, std::size_t edge);
  // Elements of a vector edge; edges of a vector-of-vectors field (or elements of its edge i
  // after operator[]); values of a plain Vector member; 1 for scalars.
  std::size_t size() const;
  // Edge i of a vector-of-vectors field.
  FieldData operator[](std::size_t i) const;
  // The value of a plain scalar member, converted to T.
  template <class T> T getInitialValue(const Target &) const {
    return static_cast<T>(initialValueAsDouble());
  }
  double initialValueAsDouble() const;

private:
  static constexpr std::size_t kWhole = ~std::size_t(0);
  const detail::FieldInfo *info_;
  const detail::FieldBinding *binding_;
  std::size_t edge_;
};

class ASPEN_API VertexIntrospector {
public:
  explicit VertexIntrospector(const detail::VertexRecord &vertex) : vertex_(&vertex) {}
  // Raises unknown_field naming the vertex type when it has no such field.
  FieldData getFieldInfo(StringRef name) const;

private:
  const detail::VertexRecord *vertex_;
};

using PerfEstimateFunc = std::function<VertexPerfEstimate(const VertexIntrospector &, const Target &)>;

} // namespace aspen
