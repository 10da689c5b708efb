// Graph: variables and constants mapped to tiles, compute sets of vertices, host handles,
// streams, functions and codelets; what an Engine compiles.
#pragma once

#include <aspen/ArrayRef.hpp>
#include <aspen/DebugContext.hpp>
#include <aspen/Device.hpp>
#include <aspen/Error.hpp>
#include <aspen/Export.hpp>
#include <aspen/GraphElements.hpp>
#include <aspen/Interval.hpp>
#include <aspen/PerfEstimate.hpp>
#include <aspen/Program.hpp>
#include <aspen/ReplicatedStreamMode.hpp>
#include <aspen/Target.hpp>
#include <aspen/Tensor.hpp>
#include <aspen/Type.hpp>

#include <cstdint>
#include <istream>
#include <memory>
#include <ostream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace aspen {

// For each tile, the intervals of the flattened tensor it owns.
using TileToTensorMapping = std::vector<std::vector<Interval>>;

enum class VariableMappingMethod { NONE, LINEAR };

enum class TensorCloneMethod {
  PRESERVE_ORDER_UNLESS_ALIASES,
  PRESERVE_ORDER_AND_ALIASES,
  CREATE_NEW_ORDER,
  GATHER_AND_PRESERVE_TILE_ORDER_AND_ALIASES,
};

// How Graph::serializeTensors writes tensors (Poplar's SerializationFormat). Aspen writes and
// reads one self-describing JSON document whichever is given (Graph::serializeTensors).
enum class SerializationFormat { Binary, JSON };

enum class CodeletFileType {
  Auto,          // from the extension: .gp/.so precompiled by aspen-cc, anything else is source
  CppSource,     // C++ source compiled on the host when addCodelets is called
  Precompiled,   // a file written by aspen-cc
};

// Poplar's replication factor: Graph(target, replication_factor(r)) is one graph compiled once
// for r replicas, each a copy of every tensor and program with its own memory
// (docs/architecture.md, "Replicated graphs").
class replication_factor {
public:
  explicit replication_factor(unsigned value) : value_(value) {}
  operator unsigned() const { return value_; }

private:
  unsigned value_;
};

class ASPEN_API Graph {
public:
  using TileToTensorMapping = aspen::TileToTensorMapping; // Poplar spells it Graph::...

  explicit Graph(const Target &target);
  explicit Graph(const Device &device);
  // A graph replicated r ways (r >= 1; 0 raises invalid_option). Its target describes one
  // replica. An Engine runs the replicas it is given (target.firstRuntimeReplica,
  // target.numberRuntimeReplica; all of them by default), each with its own memory.
  Graph(const Target &target, replication_factor r);
  Graph(const Device &device, replication_factor r);
  Graph(Graph &&) noexcept;
  Graph &operator=(Graph &&) noexcept;
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  // The target this graph plans for; for a virtual graph, its tiles only.
  const Target &getTarget() const;
  // The r of Graph(target, replication_factor(r)); 1 for a graph made without one. A virtual
  // graph has its parent's.
  unsigned getReplicationFactor() const;

  // A graph over tiles [lowerTile, upperTile) of this one: it shares the variables, vertices and
  // programs, and numbers its tiles from 0 (its tile i is this graph's tile lowerTile + i).
  Graph createVirtualGraph(unsigned lowerTile, unsigned upperTile);
  // Poplar's replicated sub-graph, as far as Aspen's model allows: a graph sharing this one's
  // variables, vertices and programs, replicated replicationFactor ways, whose target is one
  // replica's share of this graph's: its first tiles / replicationFactor tiles (the factor must
  // divide this graph's tile count). Tensors, collectives and streams made through it are a
  // replicated graph's, and an Engine of either graph runs the replicas.
  // Where it differs from Poplar: Aspen replicates a whole graph, never part of one, so this
  // graph becomes replicated too (its getReplicationFactor() is replicationFactor afterwards,
  // where Poplar's parent keeps 1, and tensors it makes are replicated, where Poplar's parent
  // makes single tensors spanning all replicas' tiles). So that no tensor predates the
  // replication, it is refused (invalid_option) on a graph that already has tensors, or is
  // already replicated (Poplar nests replicated graphs; Aspen does not).
  Graph createReplicatedGraph(unsigned replicationFactor);

  // --- Tensors ---------------------------------------------------------------------------
  // A new variable of `shape` ({} is a scalar). Its elements must be mapped to tiles before an
  // Engine uses it.
  Tensor addVariable(Type type, ArrayRef<std::size_t> shape, const DebugContext &debug = {});
  // LINEAR maps the variable over all tiles as mapTensorLinearly would.
  Tensor addVariable(Type type, ArrayRef<std::size_t> shape, VariableMappingMethod method,
                     const DebugContext &debug = {});
  // QUARTER variables (<aspen/Quarter.hpp>) read their values with a metadata tensor: one
  // QUARTER_METADATA element of this graph, which several variables may share. Without one,
  // addVariable(QUARTER, shape) makes the variable its own metadata variable, "<name>/metadata",
  // F143 scale 0 until written (Engine::writeTensor with a QuarterMetadata), mapped to this
  // graph's first tile; Tensor::getMetadata() returns it.
  Tensor addVariable(Type type, const Tensor &metadata, ArrayRef<std::size_t> shape,
                     const DebugContext &debug = {});
  Tensor addVariable(Type type, const Tensor &metadata, ArrayRef<std::size_t> shape,
                     VariableMappingMethod method, const DebugContext &debug = {});

  // A constant from one host value per element. The host type may differ from `type`; each value
  // is converted and must be representable.
  template <class T>
  Tensor addConstant(Type type, ArrayRef<std::size_t> shape, ArrayRef<T> values,
                     const DebugContext &debug = {}) {
    return addConstantFromHost(type, shape, detail::hostTypeOf<T>(), values.data(), values.size(),
                               debug);
  }
  template <class T>
  Tensor addConstant(Type type, ArrayRef<std::size_t> shape, const T *values,
                     const DebugContext &debug = {}) {
    return addConstantFromHost(type, shape, detail::hostTypeOf<T>(), values,
                               shapeElements(shape), debug);
  }
  // A constant with every element equal to `value`.
  template <class T, class = std::enable_if_t<std::is_arithmetic_v<T> || std::is_enum_v<T> ||
                                              std::is_same_v<T, half>>>
  Tensor addConstant(Type type, ArrayRef<std::size_t> shape, T value,
                     const DebugContext &debug = {}) {
    return addConstantFromHost(type, shape, detail::hostTypeOf<T>(), &value, 1, debug);
  }
  // `values` converted from hostType; count is 1 (fill) or the element count of shape.
  // A scalar UNSIGNED_INT constant whose value in each replica is that replica's index in
  // [0, r) (in the whole replicated graph, not only among those one Engine runs). Like any
  // constant it must be mapped to a tile and no program may write it.
  Tensor addReplicationIndexConstant(const DebugContext &debug = {});
  Tensor addConstantFromHost(Type type, ArrayRef<std::size_t> shape, detail::HostType hostType,
                             const void *values, std::size_t count, const DebugContext &debug);

  // A new variable with t's shape and type (or `type`), mapped like t.
  Tensor clone(const Tensor &t, const DebugContext &debug = {},
               TensorCloneMethod method = TensorCloneMethod::PRESERVE_ORDER_UNLESS_ALIASES);
  Tensor clone(Type type, const Tensor &t, const DebugContext &debug = {},
               TensorCloneMethod method = TensorCloneMethod::PRESERVE_ORDER_UNLESS_ALIASES);
  bool isConstant(const Tensor &t) const { return t.containsConstant(); }
  // Poplar's reorderToSimplify: reorders the elements of *t so that runs of the same variable
  // come in the order they lie in it (fewer, longer regions for the element-wise work that
  // follows) and applies the same reordering to each tensor in `others`, so element i of *t
  // still goes with element i of each of them. All become flat (rank 1); nothing is copied, and
  // no element is dropped or repeated. requireSimplestOrder is accepted for Poplar's signature
  // (the order is the same either way). Raises shape_error when an other's element count differs
  // from t's, and the usual errors for invalid tensors or tensors of another graph.
  void reorderToSimplify(Tensor *t, ArrayRef<Tensor *> others,
                         bool requireSimplestOrder = true) const;

  // --- Tile mapping ------------------------------------------------------------------------
  void setTileMapping(const Tensor &t, unsigned tile);
  // mapping[tile] lists intervals of the flattened tensor owned by `tile`.
  void setTileMapping(const Tensor &t, const TileToTensorMapping &mapping);
  void setTileMapping(VertexRef v, unsigned tile);
  // For `regions` of t's flattened elements, the same elements grouped into runs that are
  // consecutive in memory, the groups sorted by variable and address. With
  // removeAliasedIntervals, elements seen before are dropped (and their positions recorded in
  // aliases when given).
  std::vector<std::vector<Interval>>
  getSortedContiguousRegions(const Tensor &t, ArrayRef<Interval> regions,
                             bool removeAliasedIntervals = false,
                             std::vector<std::size_t> *aliases = nullptr) const;
  // The whole of a variable, with the shape it was created with.
  Tensor getVariable(VariableRef v) const;
  // The smallest tensor that t is a broadcast of: each dimension along which every element is
  // the same variable element shrinks to size 1.
  Tensor findUnbroadcastTensor(const Tensor &t) const;

  // Which tile owns each element of t. Raises invalid_tile_mapping naming the tensor when some
  // element is unmapped and requireComplete is true.
  TileToTensorMapping getTileMapping(const Tensor &t, bool requireComplete = true) const;

  // Writes `tensors` of this graph to `out` as Aspen's JSON tensor document: each one's type,
  // shape and view of the variables it lies in, and those variables' names, types, shapes and
  // tile mappings (not their values). Raises serialization_error for an invalid tensor or one
  // containing constants. Both formats write the same document.
  void serializeTensors(std::ostream &out, ArrayRef<Tensor> tensors,
                        SerializationFormat format) const;
  // Reads such a document into this graph: new variables with the written names, types, shapes
  // and tile mappings, and tensors viewing them as the written ones viewed theirs (aliases
  // included), in the written order. Anything else, Poplar's own tensor files included, raises
  // serialization_error saying what is wrong; a tile this graph lacks, invalid_tile_mapping.
  std::vector<Tensor> deserializeTensors(std::istream &in, SerializationFormat format);

  // --- Compute ---------------------------------------------------------------------------
  ComputeSet addComputeSet(const DebugContext &debug = {});
  // vertexType is a class from a codelet file added with addCodelets, e.g. "ns::V<float>".
  VertexRef addVertex(ComputeSet cs, StringRef vertexType);
  VertexRef addVertex(ComputeSet cs, StringRef vertexType,
                      std::initializer_list<std::pair<std::string, Tensor>> connections);
  void connect(FieldRef field, const Tensor &t);
  // A vector-of-edges (2-D) field: one tensor per edge.
  void connect(FieldRef field, ArrayRef<Tensor> tensors);
  void connect(FieldRef field, std::initializer_list<Tensor> tensors) {
    connect(field, ArrayRef<Tensor>(tensors));
  }
  void setFieldSize(FieldRef field, std::size_t size);
  // A plain (non-edge) vertex member. The host value is converted to the member's type.
  template <class T> void setInitialValue(FieldRef field, T value) {
    if constexpr (std::is_same_v<T, const char *> || std::is_same_v<T, std::string>)
      static_assert(sizeof(T) == 0, "vertex fields hold numbers, not strings");
    setInitialValueFromHost(field, detail::hostTypeOf<T>(), &value, 1, false);
  }
  // A plain Vector<T> member.
  template <class T> void setInitialValue(FieldRef field, ArrayRef<T> values) {
    setInitialValueFromHost(field, detail::hostTypeOf<T>(), values.data(), values.size(), true);
  }
  template <class T> void setInitialValue(FieldRef field, const std::vector<T> &values) {
    setInitialValue(field, ArrayRef<T>(values));
  }
  void setInitialValueFromHost(FieldRef field, detail::HostType hostType, const void *values,
                               std::size_t count, bool isVector);
  // The value variables hold when an engine is loaded, until a program writes them (Poplar's
  // Graph::setInitialValue): every element of t set to `value`, or to `values` in t's row-major
  // order (one per element), converted to t's element type. t is a view of this graph's
  // variables: slices set part of a variable; elements never set start at 0. A later call
  // overwrites what it sets. Raises graph_connection_error for constants and for views with an
  // element twice (broadcasts), shape_error for a wrong number of values, type_error for a value
  // t's type cannot hold; a failed call changes nothing.
  template <class T> void setInitialValue(const Tensor &t, T value) {
    if constexpr (std::is_same_v<T, const char *> || std::is_same_v<T, std::string>)
      static_assert(sizeof(T) == 0, "tensors hold numbers, not strings");
    setInitialValueFromHost(t, detail::hostTypeOf<T>(), &value, 1);
  }
  template <class T> void setInitialValue(const Tensor &t, ArrayRef<T> values) {
    setInitialValueFromHost(t, detail::hostTypeOf<T>(), values.data(), values.size());
  }
  template <class T> void setInitialValue(const Tensor &t, const std::vector<T> &values) {
    setInitialValue(t, ArrayRef<T>(values));
  }
  void setInitialValueFromHost(const Tensor &t, detail::HostType hostType, const void *values,
                               std::size_t count);
  void setPerfEstimate(VertexRef v, std::uint64_t cycles, std::uint64_t flops = 0);
  void setPerfEstimate(VertexRef v, const VertexPerfEstimate &estimate) {
    setPerfEstimate(v, estimate.cycles, estimate.flops);
  }
  // The estimate of every vertex of `vertexType` without one of its own, computed when the
  // graph is compiled. Replaces an earlier estimator of the same type.
  void registerPerfEstimator(StringRef vertexType, PerfEstimateFunc estimator);

  // Compiles (or loads, when precompiled by aspen-cc) a codelet file and makes its vertex
  // classes available to addVertex. Raises codelet_error with the compiler's message on failure.
  bool addCodelets(StringRef path, CodeletFileType type = CodeletFileType::Auto,
                   StringRef compileFlags = {});
  // Codelets given as source text; `name` stands for the file name in messages.
  bool addCodeletsFromString(StringRef source, StringRef name = "<string>",
                             StringRef compileFlags = {});
  bool hasCodelet(StringRef vertexType) const;
  // The largest size Aspen allows for dimension dimIndex of a field (no layout limits apply:
  // vectors are addressed with 64-bit sizes), and the largest value of a plain member.
  double getMaxFieldDim(StringRef vertexType, StringRef field, unsigned dimIndex) const;
  double getMaxVertexFieldValue(StringRef vertexType, StringRef field) const;

  // --- Host access -------------------------------------------------------------------------
  void createHostWrite(StringRef handle, const Tensor &t, bool rearrangeOnHost = false);
  void createHostRead(StringRef handle, const Tensor &t, bool rearrangeOnHost = false);
  // A host-to-device stream of numElements a transfer. In a replicated graph, REPLICATE (the
  // default) gives each replica a stream of its own (Engine::connectStream(handle, replica,
  // ...)); BROADCAST gives the replicas one stream, whose every transfer each replica receives
  // alike: it is connected once, with or without a replica index (any replica the engine
  // runs), and the host's data is taken once a transfer. Poplar's parameter order.
  DataStream addHostToDeviceFIFO(StringRef handle, Type type, std::size_t numElements,
                                 ReplicatedStreamMode replicatedMode = ReplicatedStreamMode::REPLICATE,
                                 const OptionFlags &options = {});
  DataStream addHostToDeviceFIFO(StringRef handle, Type type, std::size_t numElements,
                                 const OptionFlags &options);
  DataStream addDeviceToHostFIFO(StringRef handle, Type type, std::size_t numElements,
                                 const OptionFlags &options = {});

  Function addFunction(const program::Program &program);

  detail::GraphState &state() { return *state_; }
  const detail::GraphState &state() const { return *state_; }

private:
  Graph(std::shared_ptr<detail::GraphState> state, Target target, unsigned tileOffset);
  static std::size_t shapeElements(ArrayRef<std::size_t> shape);
  // This graph's tile `tile` in the whole target's numbering; raises invalid_tile_mapping, naming
  // `what`, when the tile is not one of this graph's.
  unsigned absoluteTile(unsigned tile, const std::string &what) const;

  std::shared_ptr<detail::GraphState> state_;
  Target target_;           // the whole target, or a virtual graph's part of it
  unsigned tileOffset_ = 0; // this graph's tile 0 in the whole target
};

} // namespace aspen
