#include "Verify.hpp"

#include "CompiledGraph.hpp"
#include "ProgramWalk.hpp"
#include "core/TensorRegions.hpp"
#include "support/Writability.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace aspen::detail {

namespace {

std::string quoted(const std::string &s) { return "'" + s + "'"; }

class Verifier {
public:
  explicit Verifier(const GraphState &graph) : graph_(graph) {}

  // `what` names the use in messages, e.g. "Copy 'step' destination".
  void checkTensor(const Tensor &t, const std::string &what) {
    if (!t.valid())
      throw control_program_error(what + " is an invalid (default-constructed) tensor");
    if (graphOf(t) != &graph_)
      throw control_program_error(what + " is a tensor of another graph; an engine compiles "
                                         "the tensors of one graph only");
    checkMapped(t, what);
  }

  // `what`: a string, or a callable making one only when the error is raised.
  template <class Error = control_program_error, class What>
  static void checkWritable(const Tensor &t, const What &what) {
    requireWritable<Error>(t, what);
  }

  void checkPredicate(const Tensor &t, const std::string &what, bool integralOnly) {
    checkTensor(t, what);
    if (t.numElements() != 1)
      throw control_program_error(what + " must be a scalar (one element), but has shape " +
                                  t.shapeToString());
    const Type type = t.elementType();
    if (integralOnly ? !type.isIntegral() : !type.valid())
      throw control_program_error(what + " must have an integral type" +
                                  (integralOnly ? "" : ", bool or a floating-point type") +
                                  ", not " + type.toString());
  }

  void checkProgram(const ProgramNode &node) {
    const std::string name = std::string(programName(node)) +
                             (node.debugName.empty() ? "" : " " + quoted(node.debugName));
    switch (node.kind) {
    case ProgramKind::Execute:
      if (node.graph != &graph_ || node.id >= graph_.computeSets.size())
        throw control_program_error(name + " executes compute set #" + std::to_string(node.id) +
                                    " of another graph");
      useComputeSet(node.id);
      for (unsigned v : graph_.computeSets[node.id].vertices)
        if (graph_.vertices[v].type->isBlockVertex)
          throw control_program_error(
              name + " executes compute set " + quoted(graph_.computeSets[node.id].name) +
              ", which holds block codelet " + quoted(graph_.vertices[v].type->name) +
              " (vertex " + std::to_string(v) + "); a block codelet runs only through "
              "program::Launch");
      break;
    case ProgramKind::Launch:
      checkLaunch(node, name);
      break;
    case ProgramKind::Copy:
      checkTensor(node.tensor, name + " source");
      checkTensor(node.dst, name + " destination");
      checkCopyShape(name, node.tensor.elementType(), node.tensor.numElements(),
                     node.dst.elementType(), node.dst.numElements());
      checkWritable(node.dst, name + " destination");
      break;
    case ProgramKind::StreamToTensor:
    case ProgramKind::TensorToStream: {
      const bool toTensor = node.kind == ProgramKind::StreamToTensor;
      const Tensor &t = toTensor ? node.dst : node.tensor;
      checkTensor(t, name + (toTensor ? " destination" : " source"));
      if (node.graph != &graph_ || node.id >= graph_.streams.size())
        throw control_program_error(name + " uses a stream of another graph");
      const StreamRecord &s = graph_.streams[node.id];
      if (s.hostToDevice != toTensor)
        throw control_program_error(name + " uses stream " + quoted(s.handle) + " in the wrong "
                                    "direction: it is a " +
                                    (s.hostToDevice ? "host-to-device" : "device-to-host") +
                                    " stream");
      const std::string stream = "stream " + quoted(s.handle);
      if (toTensor)
        checkCopyShape(name, s.type, s.numElements, t.elementType(), t.numElements());
      else
        checkCopyShape(name, t.elementType(), t.numElements(), s.type, s.numElements);
      if (toTensor)
        checkWritable(t, name + " destination");
      break;
    }
    case ProgramKind::RepeatWhileTrue:
    case ProgramKind::RepeatWhileFalse:
    case ProgramKind::If:
    case ProgramKind::AbortOnCondition:
      checkPredicate(node.tensor, name + " predicate", false);
      break;
    case ProgramKind::Switch:
      checkPredicate(node.tensor, name + " control", true);
      break;
    case ProgramKind::Call:
      if (node.graph != &graph_ || node.id >= graph_.functions.size())
        throw control_program_error(name + " calls function #" + std::to_string(node.id) +
                                    " of another graph");
      break;
    case ProgramKind::WriteUndef:
    case ProgramKind::PrintTensor:
      checkTensor(node.tensor, name + " tensor");
      break;
    case ProgramKind::Kernel: {
      const ArrayRef<OperandInfo> operands = kernelOperands(node.kernel);
      if (node.operands.size() != operands.size())
        throw internal_error(name + " has " + std::to_string(node.operands.size()) +
                             " operands, its kernel " + std::to_string(operands.size()));
      for (std::size_t i = 0; i < operands.size(); ++i) {
        const Tensor &t = node.operands[i];
        const std::string what = name + " " + operands[i].name;
        if (!t.valid() && operands[i].presence == OperandPresence::Optional)
          continue;
        checkTensor(t, what);
        if (operands[i].writes())
          checkWritable(t, what);
      }
      break;
    }
    case ProgramKind::Empty:
    case ProgramKind::Sequence:
    case ProgramKind::Repeat:
    case ProgramKind::Sync:
    case ProgramKind::Cached: // its body's rules need the lowered steps: Caches.cpp
      break;
    }
  }

  // The largest dynamic shared memory a block may ask for: the GPU target's opt-in limit, else
  // the largest any current GPU gives (227 KiB on sm_90), so that a graph planned for a model
  // also runs on a real card.
  std::uint64_t maxSharedBytes() const {
    const GpuProperties &gpu = graph_.target.getGpuProperties();
    return graph_.target.isGpu() ? gpu.sharedMemoryPerBlockOptin : 232448;
  }

  // On a GPU target, the blocks that fit on the device at once by threads and shared memory
  // (the executor checks registers at load, when the kernel is built). Other targets run
  // every block as fibers of the host, so any number is co-resident there.
  void checkCoResident(const ProgramNode &node, const std::string &what, unsigned threads) {
    if (!graph_.target.isGpu())
      return;
    const GpuProperties &gpu = graph_.target.getGpuProperties();
    const std::string target = "target " + quoted(graph_.target.getName());
    if (!gpu.cooperativeLaunch)
      throw control_program_error(what + ": a co-resident launch needs cooperative launches, "
                                         "which " + target + " does not support");
    std::uint64_t perSm = 32; // resident blocks a multiprocessor holds at most (sm_50 on)
    if (gpu.maxThreadsPerMultiprocessor != 0)
      perSm = std::min<std::uint64_t>(perSm, gpu.maxThreadsPerMultiprocessor / threads);
    // CUDA reserves 1 KiB of shared memory per resident block.
    if (gpu.sharedMemoryPerMultiprocessor != 0)
      perSm = std::min<std::uint64_t>(perSm, gpu.sharedMemoryPerMultiprocessor /
                                                 (node.launch.sharedBytes + 1024));
    const std::uint64_t fit = perSm * gpu.multiProcessorCount;
    if (node.launch.blocks > fit)
      throw control_program_error(
          what + ": " + std::to_string(node.launch.blocks) +
          " blocks cannot all be resident at once on " + target + ": " +
          std::to_string(gpu.multiProcessorCount) + " multiprocessors hold " +
          std::to_string(perSm) + " blocks each of " + std::to_string(threads) + " threads and " +
          std::to_string(node.launch.sharedBytes) + " bytes of shared memory, " +
          std::to_string(fit) + " in all");
  }

  void checkLaunch(const ProgramNode &node, const std::string &name) {
    if (node.graph != &graph_ || node.id >= graph_.computeSets.size())
      throw control_program_error(name + " launches compute set #" + std::to_string(node.id) +
                                  " of another graph");
    const ComputeSetRecord &cs = graph_.computeSets[node.id];
    const std::string what = name + " of compute set " + quoted(cs.name);
    if (cs.vertices.size() != 1 || !graph_.vertices[cs.vertices[0]].type->isBlockVertex)
      throw control_program_error(
          what + ": the compute set must hold exactly one vertex of a block codelet (a class "
                 "deriving from BlockVertex), but holds " +
          std::to_string(cs.vertices.size()) + " vertices" +
          (cs.vertices.empty() ? std::string()
                               : ", the first of class " +
                                     quoted(graph_.vertices[cs.vertices[0]].type->name)));
    const unsigned threads = launchThreads(node.launch, graph_.target);
    const unsigned maxThreads =
        graph_.target.isGpu() ? graph_.target.getGpuProperties().maxThreadsPerBlock
                              : kMaxBlockThreads;
    if (threads > maxThreads)
      throw control_program_error(what + ": " + std::to_string(threads) +
                                  " threads a block is more than the " +
                                  std::to_string(maxThreads) + " a block of target " +
                                  quoted(graph_.target.getName()) + " may have");
    if (node.launch.sharedBytes > maxSharedBytes())
      throw control_program_error(what + ": " + std::to_string(node.launch.sharedBytes) +
                                  " bytes of shared memory a block is more than the " +
                                  std::to_string(maxSharedBytes()) + " target " +
                                  quoted(graph_.target.getName()) + " allows");
    const VertexTypeInfo &type = *graph_.vertices[cs.vertices[0]].type;
    if (type.maxThreadsPerBlock != 0 && threads > type.maxThreadsPerBlock)
      throw control_program_error(what + ": " + std::to_string(threads) +
                                  " threads a block is more than the " +
                                  std::to_string(type.maxThreadsPerBlock) + " block codelet " +
                                  quoted(type.name) + " declares (maxThreadsPerBlock)");
    if (type.coResident && !node.launch.coResident)
      throw control_program_error(
          what + ": block codelet " + quoted(type.name) +
          " declares coResident (its blocks wait for each other), so its launch must set "
          "LaunchShape::coResident");
    if (node.launch.coResident)
      checkCoResident(node, what, threads);
    useComputeSet(node.id);
  }

  void checkHostHandles() {
    for (const auto *handles : {&graph_.hostWrites, &graph_.hostReads})
      for (const auto &[handle, t] : *handles) {
        const std::string what = std::string(handles == &graph_.hostWrites ? "host write" : "host read") +
                                 " handle " + quoted(handle);
        checkTensor(t, what);
        if (const Tensor m = uniqueMetadata(t); m.valid())
          checkTensor(m, "the metadata of " + what);
      }
  }

  void checkComputeSet(unsigned cs) {
    writes_.clear();
    for (unsigned v : graph_.computeSets[cs].vertices)
      checkVertex(v);
    checkDisjointWrites(cs);
  }

  const std::vector<unsigned> &usedComputeSets() const { return computeSets_; }

private:
  struct Write {
    unsigned var;
    std::int64_t begin, end; // bytes
    unsigned vertex;
  };

  void useComputeSet(unsigned cs) {
    if (usedSet_.insert(cs).second)
      computeSets_.push_back(cs);
  }

  static void checkCopyShape(const std::string &name, Type srcType, std::size_t srcElements,
                             Type dstType, std::size_t dstElements) {
    if (srcElements != dstElements)
      throw shape_error(name + ": source has " + std::to_string(srcElements) +
                        " elements but destination has " + std::to_string(dstElements) +
                        "; a copy needs equal element counts");
    if (srcType != dstType)
      throw type_error(name + ": source type " + srcType.toString() +
                       " differs from destination type " + dstType.toString() +
                       "; a copy does not convert");
  }

  // Names in messages are made only when one is raised: formatting them for every vertex and
  // edge was a good part of compiling a graph of many vertices.
  void checkVertex(unsigned v) {
    const VertexRecord &vertex = graph_.vertices[v];
    const auto name = [&] { return graph_.vertexName(v); };
    if (vertex.tile == kInvalidId)
      throw invalid_tile_mapping(name() + " has no tile; map it with "
                                          "Graph::setTileMapping(vertex, tile)");
    if (vertex.tile >= graph_.target.getNumTiles())
      throw invalid_tile_mapping(name() + " is mapped to tile " + std::to_string(vertex.tile) +
                                 " but the target has " +
                                 std::to_string(graph_.target.getNumTiles()) + " tiles");
    const auto &fields = vertex.type->fields;
    for (std::size_t f = 0; f < fields.size(); ++f) {
      const FieldInfo &info = fields[f];
      if (!info.isEdge())
        continue;
      const FieldBinding &binding = vertex.fields[f];
      const auto field = [&] { return name() + " field " + quoted(info.name); };
      if (info.shape != FieldShape::VectorOfVectors) {
        checkEdge(v, info, binding.tensor, field);
        continue;
      }
      if (!binding.sizeSet)
        throw graph_connection_error(field() + " is a vector of edges whose size was never set "
                                               "(Graph::setFieldSize or connect with a list)");
      for (std::size_t e = 0; e < binding.edges.size(); ++e)
        checkEdge(v, info, binding.edges[e],
                  [&] { return field() + "[" + std::to_string(e) + "]"; });
    }
  }

  template <class Name>
  void checkEdge(unsigned v, const FieldInfo &info, const Tensor &t, const Name &field) {
    if (!t.valid())
      throw graph_connection_error(field() + " is not connected; every edge field needs a tensor");
    if (graphOf(t) != &graph_)
      throw graph_connection_error(field() + " is connected to a tensor of another graph");
    if (info.elementType.valid() && t.elementType() != info.elementType)
      throw graph_connection_error(field() + " has element type " + info.elementType.toString() +
                                   " but is connected to a tensor of type " +
                                   t.elementType().toString());
    if (info.shape == FieldShape::Scalar && t.numElements() != 1)
      throw graph_connection_error(field() + " is a scalar edge but is connected to a tensor of "
                                             "shape " + t.shapeToString());
    const std::vector<VarRegion> regions = flatRegions(t); // once for every check below
    checkMapped(regions, field);
    if (!info.writes())
      return;
    checkWritable<graph_connection_error>(t, field);
    const std::int64_t eb = static_cast<std::int64_t>(t.elementType().size());
    for (const VarRegion &r : regions) {
      if (r.count == 1 || r.byteStride == eb) {
        writes_.push_back({r.var, r.byteOffset, r.byteOffset + eb * std::int64_t(r.count), v});
      } else if (r.byteStride == -eb) {
        const std::int64_t low = r.byteOffset - eb * std::int64_t(r.count - 1);
        writes_.push_back({r.var, low, r.byteOffset + eb, v});
      } else {
        for (std::size_t i = 0; i < r.count; ++i) {
          const std::int64_t at = r.byteOffset + r.byteStride * std::int64_t(i);
          writes_.push_back({r.var, at, at + eb, v});
        }
      }
    }
  }

  // Sorted by start, an overlap between two vertices always shows against the write that
  // reaches furthest so far.
  void checkDisjointWrites(unsigned cs) {
    std::sort(writes_.begin(), writes_.end(), [](const Write &a, const Write &b) {
      return a.var != b.var ? a.var < b.var : a.begin < b.begin;
    });
    const Write *furthest = nullptr;
    for (const Write &w : writes_) {
      if (furthest && furthest->var == w.var && w.begin < furthest->end) {
        if (furthest->vertex != w.vertex) {
          const std::size_t elementBytes = graph_.variables[w.var].type.size();
          throw graph_connection_error(
              graph_.vertexName(furthest->vertex) + " and " + graph_.vertexName(w.vertex) +
              " both write variable " + graph_.variableName(w.var) + " element " +
              std::to_string(std::max(w.begin, furthest->begin) / std::int64_t(elementBytes)) +
              " in compute set " + quoted(graph_.computeSets[cs].name) +
              "; the vertices of one compute set must write disjoint elements");
        }
        if (w.end <= furthest->end)
          continue;
      }
      furthest = &w;
    }
  }

  // Unmapped element intervals of a variable, computed once per variable.
  const std::vector<Interval> &unmappedOf(unsigned var) {
    auto it = unmapped_.find(var);
    if (it != unmapped_.end())
      return it->second;
    std::vector<Interval> gaps;
    std::size_t next = 0;
    for (const TileMap::Run &run : graph_.variables[var].mapping.runs()) {
      if (run.begin > next)
        gaps.emplace_back(next, run.begin);
      next = std::max(next, run.end);
    }
    if (next < graph_.variables[var].numElements)
      gaps.emplace_back(next, graph_.variables[var].numElements);
    return unmapped_.emplace(var, std::move(gaps)).first->second;
  }

  void checkMapped(const Tensor &t, const std::string &what) {
    checkMapped(flatRegions(t), [&] { return what; });
  }
  // `regions`: a tensor's flatRegions; `what()` names the use in the message.
  template <class What>
  void checkMapped(const std::vector<VarRegion> &regions, const What &what) {
    std::size_t element = 0; // of the tensor, for the message
    for (const VarRegion &r : regions) {
      const std::vector<Interval> &gaps = unmappedOf(r.var);
      if (gaps.empty()) {
        element += r.count;
        continue;
      }
      const std::int64_t varBytes = std::int64_t(graph_.variables[r.var].type.size());
      for (std::size_t i = 0; i < r.count; ++i, ++element) {
        const std::size_t e = std::size_t((r.byteOffset + r.byteStride * std::int64_t(i)) / varBytes);
        auto gap = std::upper_bound(gaps.begin(), gaps.end(), e,
                                    [](std::size_t x, const Interval &g) { return x < g.end(); });
        if (gap != gaps.end() && gap->begin() <= e)
          throw invalid_tile_mapping(what() + ": element " + std::to_string(element) +
                                     " (variable " + graph_.variableName(r.var) + " element " +
                                     std::to_string(e) +
                                     ") is not mapped to a tile; every element an engine uses "
                                     "must be mapped with Graph::setTileMapping");
      }
    }
  }

  const GraphState &graph_;
  std::vector<unsigned> computeSets_;
  std::unordered_set<unsigned> usedSet_;
  std::unordered_map<unsigned, std::vector<Interval>> unmapped_;
  std::vector<Write> writes_;
};

} // namespace

void verifyGraph(const GraphState &graph, ArrayRef<program::Program> programs,
                 std::uint32_t &walks) {
  Verifier verifier(graph);
  ++walks;
  forEachProgramNode(graph, programs, [&](const ProgramNode &n) { verifier.checkProgram(n); });
  verifier.checkHostHandles();
  for (unsigned cs : verifier.usedComputeSets())
    verifier.checkComputeSet(cs);
}

} // namespace aspen::detail
