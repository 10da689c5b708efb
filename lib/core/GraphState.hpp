// GraphState: everything a Graph holds, as plain data the compiler reads.
#pragma once

#include "TileMap.hpp"
#include "codelets/CodeletLibrary.hpp"

#include <aspen/Graph.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace aspen::detail {

struct Variable {
  std::string name;
  Type type;
  std::vector<std::size_t> shape;
  std::size_t numElements = 0;
  bool isConstant = false;
  std::vector<std::uint8_t> constantData; // numElements * type.size() bytes, constants only
  // Graph::setInitialValue: bytes() bytes written at load (empty: none set). Such a variable
  // stays live for the whole run, like a constant, so its value survives until it is used.
  std::vector<std::uint8_t> initialData;
  TileMap mapping;                         // in elements of this variable
  Tensor metadata; // QUARTER variables: their QUARTER_METADATA tensor (one element)
  std::size_t bytes() const { return numElements * type.size(); }
};

// What one field of one vertex is connected to or set to.
struct FieldBinding {
  Tensor tensor;                    // scalar and vector edge fields
  std::vector<Tensor> edges;        // 2-D fields, one tensor per edge (invalid = unconnected)
  bool sizeSet = false;             // setFieldSize (or connect with a list) fixed edges.size()
  std::vector<std::uint8_t> value;  // plain members: values in the member's type
  std::size_t valueCount = 0;
  bool hasValue = false;
};

struct VertexRecord {
  const VertexTypeInfo *type = nullptr;
  unsigned computeSet = kInvalidId;
  unsigned tile = kInvalidId;
  std::uint64_t perfEstimate = 0; // cycles
  std::uint64_t perfEstimateFlops = 0;
  bool hasPerfEstimate = false;
  std::vector<FieldBinding> fields; // indexed like type->fields
};

struct ComputeSetRecord {
  std::string name;
  std::vector<unsigned> vertices;
};

struct StreamRecord {
  std::string handle;
  Type type;
  std::size_t numElements = 0;
  bool hostToDevice = true;
  bool broadcast = false; // ReplicatedStreamMode::BROADCAST
};

struct GraphState {
  explicit GraphState(const Target &t) : target(t) {}

  Target target;
  unsigned replicationFactor = 1;
  // The variables of addReplicationIndexConstant: each replica's engine writes its index there.
  std::vector<unsigned> replicationIndexVariables;
  std::vector<Variable> variables;
  std::vector<ComputeSetRecord> computeSets;
  std::vector<VertexRecord> vertices;
  std::map<std::string, Tensor, std::less<>> hostWrites;
  std::map<std::string, Tensor, std::less<>> hostReads;
  std::vector<StreamRecord> streams;
  std::map<std::string, unsigned, std::less<>> streamByHandle;
  std::vector<program::Program> functions;
  CodeletRegistry codelets;
  std::map<std::string, PerfEstimateFunc, std::less<>> perfEstimators; // by normalised type name

  // Raises graph_connection_error, prefixed by `what`, unless t is a valid tensor of this graph.
  void requireOwnTensor(const Tensor &t, const char *what) const;

  // "'name'" or "#id" for messages.
  std::string variableName(unsigned var) const;
  std::string vertexName(unsigned vertex) const; // "vertex 3 (ns::V<float>) in compute set 'cs'"
};

} // namespace aspen::detail
