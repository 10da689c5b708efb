#include "LowerComputeSets.hpp"

#include "LowerCopies.hpp"
#include "Regions.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <optional>
#include <unordered_map>
#include <vector>

namespace aspen::detail {

namespace {

std::uint64_t alignUp(std::uint64_t x, std::uint64_t a) { return (x + a - 1) / a * a; }

// Temporaries are aligned for any element type a codelet may vectorise over.
constexpr std::uint64_t kTemporaryAlignment = 16;

class ComputeSetLowering {
public:
  ComputeSetLowering(const GraphState &graph, CompiledGraph &out, LoweringState &state)
      : graph_(graph), out_(out), lowering_(state) {
    stateBuffer_ = static_cast<std::uint32_t>(out_.buffers.size());
    out_.buffers.push_back({BufferKind::VertexState, "vertex state", 0, 0});
  }

  void lower(unsigned csId) {
    const ComputeSetRecord &record = graph_.computeSets[csId];
    cs_ = CompiledComputeSet{};
    cs_.name = record.name;
    accesses_ = AccessList{};
    copies_ = Rearrangement{};
    scratchBuffer_ = static_cast<std::uint32_t>(out_.buffers.size());
    scratchBytes_ = 0;

    std::vector<unsigned> order = record.vertices;
    std::stable_sort(order.begin(), order.end(), [&](unsigned a, unsigned b) {
      return graph_.vertices[a].tile < graph_.vertices[b].tile;
    });
    cs_.vertices.reserve(order.size());
    for (unsigned v : order)
      lowerVertex(v);
    for (std::uint32_t i = 0; i < cs_.vertices.size(); ++i) {
      if (cs_.tiles.empty() || cs_.tiles.back().tile != cs_.vertices[i].tile)
        cs_.tiles.push_back({cs_.vertices[i].tile, i, i});
      cs_.tiles.back().end = i + 1;
    }
    estimateCycles();
    for (const std::vector<CopyPlan> *plans : {&copies_.gathers, &copies_.scatters})
      for (const CopyPlan &p : *plans)
        cs_.rearrangedBytes += p.src.bytes();
    if (scratchBytes_ > 0)
      out_.buffers.push_back({BufferKind::Scratch, "scratch of compute set '" + cs_.name + "'",
                              scratchBytes_, 0});
    out_.computeSets.push_back(std::move(cs_));
    lowering_.computeSetAccesses.push_back(std::move(accesses_));
    lowering_.computeSetCopies.push_back(std::move(copies_));
  }

  void finish() {
    out_.buffers[stateBuffer_].bytes = state_.size();
    if (!state_.empty())
      out_.initialValues.push_back({stateBuffer_, 0, std::move(state_)});
  }

private:
  // A vertex's own estimate (setPerfEstimate), else its type's estimator, else none.
  std::optional<VertexPerfEstimate> estimate(const VertexRecord &vertex) const {
    if (vertex.hasPerfEstimate)
      return VertexPerfEstimate(vertex.perfEstimate, vertex.perfEstimateFlops);
    const auto it = graph_.perfEstimators.find(vertex.type->name);
    if (it == graph_.perfEstimators.end())
      return std::nullopt;
    return it->second(VertexIntrospector(vertex), graph_.target);
  }

  void estimateCycles() {
    for (const TileGroup &tile : cs_.tiles) {
      std::uint64_t cycles = 0;
      for (std::uint32_t i = tile.begin; i < tile.end; ++i) {
        const auto e = estimate(graph_.vertices[cs_.vertices[i].id]);
        cycles += e ? e->cycles : 0;
        cs_.estimatedFlops += e ? e->flops : 0;
        cs_.verticesWithoutEstimate += e ? 0 : 1;
      }
      cs_.estimatedCycles = std::max(cs_.estimatedCycles, cycles);
    }
  }

  // A non-contiguous tensor's contiguous copy in the scratch buffer. Fields connected to the
  // same tensor (operator==: same type, shape and elements) share it.
  struct Temporary {
    Type type;
    std::vector<std::size_t> shape;
    RegionList regions;
    std::uint64_t offset;
    bool gather, scatter;
  };

  void lowerVertex(unsigned v) {
    const VertexRecord &vertex = graph_.vertices[v];
    const VertexTypeInfo &type = *vertex.type;
    cs_.vertices.push_back({typeIndex(type), static_cast<std::uint32_t>(cs_.fields.size()),
                            vertex.tile, v});
    temporaries_.clear();
    if (!temporaryIndex_.empty()) // a fresh map: clear() would cost its buckets on every vertex
      temporaryIndex_ = decltype(temporaryIndex_)();
    for (std::size_t f = 0; f < type.fields.size(); ++f) {
      const FieldInfo &info = type.fields[f];
      const FieldBinding &binding = vertex.fields[f];
      if (!info.isEdge()) {
        cs_.fields.push_back(plainMember(info, binding));
      } else if (info.shape != FieldShape::VectorOfVectors) {
        cs_.fields.push_back(edge(info, binding.tensor));
      } else {
        cs_.fields.push_back({DescTemplate::Nested, 0, cs_.nested.size(), binding.edges.size()});
        for (const Tensor &t : binding.edges)
          cs_.nested.push_back(edge(info, t));
      }
    }
    for (Temporary &temp : temporaries_) {
      RegionList scratch = contiguousScratch(temp.regions, temp.offset);
      if (temp.gather)
        copies_.gathers.push_back(makeCopyPlan(temp.regions, scratch));
      if (temp.scatter)
        copies_.scatters.push_back(makeCopyPlan(std::move(scratch), std::move(temp.regions)));
    }
  }

  DescTemplate plainMember(const FieldInfo &info, const FieldBinding &binding) {
    // An unset scalar member reads as zero; an unset Vector member is empty.
    const std::size_t count = binding.hasValue ? binding.valueCount
                              : info.shape == FieldShape::Scalar ? 1 : 0;
    const std::uint64_t bytes = std::max<std::uint64_t>(count * info.elementBytes,
                                                        binding.hasValue ? binding.value.size() : 0);
    const std::uint64_t offset = alignUp(state_.size(), std::max(8u, info.elementBytes));
    state_.resize(offset + bytes);
    if (binding.hasValue)
      std::copy(binding.value.begin(), binding.value.end(), state_.begin() + offset);
    return {DescTemplate::Arena, stateBuffer_, offset, count};
  }

  DescTemplate edge(const FieldInfo &info, const Tensor &t) {
    const std::uint64_t n = t.numElements();
    if (n == 0)
      return {DescTemplate::Null, 0, 0, 0};
    RegionList regions = regionsOf(t);
    if (isContiguous(regions)) {
      const ByteRun &run = regions.runs.front();
      if (info.reads())
        accesses_.add(AccessKind::Read, run, regions.elementBytes);
      if (info.writes())
        accesses_.add(AccessKind::Write, run, regions.elementBytes);
      return {DescTemplate::Arena, run.buffer, std::uint64_t(run.offset), n};
    }
    // Matching by hash, then exactly, keeps lowering linear in the edges of a vertex (comparing
    // with every earlier temporary was quadratic: issue 34).
    const Type type = t.elementType();
    std::vector<std::size_t> shape = t.shape();
    std::uint64_t key = hashMix(hashElements(regions), static_cast<std::uint64_t>(type.id()));
    for (std::size_t d : shape)
      key = hashMix(key, d);
    std::vector<std::uint32_t> &candidates = temporaryIndex_[key];
    for (std::uint32_t i : candidates) {
      Temporary &temp = temporaries_[i];
      if (temp.type == type && temp.shape == shape && sameElements(temp.regions, regions)) {
        temp.gather |= info.reads();
        temp.scatter |= info.writes();
        return {DescTemplate::Arena, scratchBuffer_, temp.offset, n};
      }
    }
    const std::uint64_t offset = alignUp(scratchBytes_, kTemporaryAlignment);
    scratchBytes_ = offset + regions.bytes();
    candidates.push_back(static_cast<std::uint32_t>(temporaries_.size()));
    temporaries_.push_back(
        {type, std::move(shape), std::move(regions), offset, info.reads(), info.writes()});
    return {DescTemplate::Arena, scratchBuffer_, offset, n};
  }

  RegionList contiguousScratch(const RegionList &regions, std::uint64_t offset) const {
    RegionList list;
    list.elementBytes = regions.elementBytes;
    list.numElements = regions.numElements;
    list.runs.push_back({scratchBuffer_, std::int64_t(offset), std::int64_t(list.elementBytes),
                         list.numElements});
    return list;
  }

  std::uint32_t typeIndex(const VertexTypeInfo &type) {
    auto it = typeIndex_.find(&type);
    if (it != typeIndex_.end())
      return it->second;
    std::uint32_t library = 0;
    while (library < out_.libraries.size() && out_.libraries[library].get() != type.library)
      ++library;
    if (library == out_.libraries.size()) {
      const auto &libs = graph_.codelets.libraries();
      auto lib = std::find_if(libs.begin(), libs.end(),
                              [&](const auto &l) { return l.get() == type.library; });
      if (lib == libs.end())
        throw internal_error("vertex type " + type.name + " comes from no library of its graph");
      out_.libraries.push_back(*lib);
    }
    const auto index = static_cast<std::uint32_t>(out_.vertexTypes.size());
    out_.vertexTypes.push_back({type.name, library, type.isMultiVertex, type.isBlockVertex});
    typeIndex_.emplace(&type, index);
    return index;
  }

  const GraphState &graph_;
  CompiledGraph &out_;
  LoweringState &lowering_;
  AccessList accesses_;  // of the compute set being lowered: its edges used in place
  Rearrangement copies_; // its gathers and scatters
  std::uint32_t stateBuffer_ = 0;
  std::vector<std::uint8_t> state_;
  std::unordered_map<const VertexTypeInfo *, std::uint32_t> typeIndex_;
  CompiledComputeSet cs_;
  std::uint32_t scratchBuffer_ = 0;
  std::uint64_t scratchBytes_ = 0;
  std::vector<Temporary> temporaries_; // of the vertex being lowered, in order of first use
  // Hash of (type, shape, elements) -> indices into temporaries_ with that hash.
  std::unordered_map<std::uint64_t, std::vector<std::uint32_t>> temporaryIndex_;
};

} // namespace

void lowerComputeSets(const GraphState &graph, CompiledGraph &out, LoweringState &state) {
  ComputeSetLowering lowering(graph, out, state);
  for (unsigned cs : state.computeSetIds)
    lowering.lower(cs);
  lowering.finish();
}

} // namespace aspen::detail
