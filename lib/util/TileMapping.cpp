#include "support/LinearMapping.hpp"

#include <aspen/Error.hpp>
#include <aspen/util/TileMapping.hpp>

#include <fmt/format.h>

#include <algorithm>

namespace aspen::util {

namespace {

std::size_t product(ArrayRef<std::size_t> shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

std::size_t defaultMinElements(Type type) { return (128 + type.size() - 1) / type.size(); }

// Tile k of the linear order, starting at `offset` and going up or (from the last tile) down.
unsigned orderedTile(unsigned k, unsigned numTiles, unsigned offset, bool ascending) {
  return ascending ? (offset + k) % numTiles : numTiles - 1 - ((offset + k) % numTiles);
}

TileToTensorMapping linearMappingFrom(unsigned numTiles, std::size_t numElements,
                                      std::size_t minElementsPerTile, std::size_t grainSize,
                                      unsigned offset, bool ascending) {
  TileToTensorMapping mapping(numTiles);
  for (const auto &r : detail::linearMapping(numTiles, numElements, grainSize, minElementsPerTile))
    mapping[orderedTile(r.tile, numTiles, offset, ascending)].emplace_back(r.begin, r.end);
  return mapping;
}

} // namespace

TileToTensorMapping calcLinearTileMapping(const Graph &graph, ArrayRef<std::size_t> shape,
                                          std::size_t minElementsPerTile, std::size_t grainSize) {
  if (grainSize == 0)
    throw invalid_option("calcLinearTileMapping: the grain size must be at least 1");
  return linearMappingFrom(graph.getTarget().getNumTiles(), product(shape), minElementsPerTile,
                           grainSize, 0, true);
}

TileToTensorMapping calcLinearTileMapping(const Graph &graph, const Tensor &t) {
  const Target &target = graph.getTarget();
  return calcLinearTileMapping(graph, t.shape(), defaultMinElements(t.elementType()),
                               target.getVectorWidth(t.elementType()));
}

void mapTensorLinearly(Graph &graph, const Tensor &t) {
  graph.setTileMapping(t, calcLinearTileMapping(graph, t));
}

void mapTensorLinearly(Graph &graph, const Tensor &t, std::size_t minElementsPerTile,
                       std::size_t grainSize) {
  graph.setTileMapping(t, calcLinearTileMapping(graph, t.shape(), minElementsPerTile, grainSize));
}

void mapTensorLinearlyWithOffset(Graph &graph, const Tensor &t, unsigned offset,
                                 bool ascendingOrder) {
  mapTensorLinearlyWithOffset(graph, t, defaultMinElements(t.elementType()),
                              graph.getTarget().getVectorWidth(t.elementType()), offset,
                              ascendingOrder);
}

void mapTensorLinearlyWithOffset(Graph &graph, const Tensor &t, std::size_t minElementsPerTile,
                                 std::size_t grainSize, unsigned offset, bool ascendingOrder) {
  if (grainSize == 0)
    throw invalid_option("mapTensorLinearlyWithOffset: the grain size must be at least 1");
  const unsigned numTiles = graph.getTarget().getNumTiles();
  graph.setTileMapping(t, linearMappingFrom(numTiles, t.numElements(), minElementsPerTile,
                                            grainSize, offset % numTiles, ascendingOrder));
}

std::vector<std::vector<Interval>> getTileContiguousRegions(const Graph &graph, const Tensor &t) {
  // Flat positions where one contiguous run of a variable ends and the next begins.
  std::vector<std::size_t> cuts;
  const auto elementBytes = static_cast<std::int64_t>(t.elementType().size());
  std::size_t flat = 0;
  for (const StridedVarRegion &r : t.getStridedVarRegions()) {
    if (r.byteStride == elementBytes || r.count == 1)
      cuts.push_back(flat);
    else
      for (std::size_t i = 0; i < r.count; ++i)
        cuts.push_back(flat + i);
    flat += r.count;
  }
  auto mapping = graph.getTileMapping(t);
  for (auto &intervals : mapping) {
    std::vector<Interval> split;
    for (const Interval &i : intervals) {
      std::size_t begin = i.begin();
      auto cut = std::upper_bound(cuts.begin(), cuts.end(), begin);
      for (; cut != cuts.end() && *cut < i.end(); ++cut) {
        split.emplace_back(begin, *cut);
        begin = *cut;
      }
      split.emplace_back(begin, i.end());
    }
    intervals = std::move(split);
  }
  return mapping;
}

std::vector<std::vector<Interval>> splitRegions(const std::vector<Interval> &regions,
                                                unsigned grainSize, unsigned maxPartitions,
                                                unsigned minElementsPerPartition,
                                                unsigned maxElementsPerPartition) {
  if (grainSize == 0 || maxPartitions == 0)
    throw invalid_option(fmt::format("splitRegions: grain size ({}) and maximum partitions ({}) "
                                     "must be at least 1",
                                     grainSize, maxPartitions));
  std::size_t totalGrains = 0, total = 0;
  for (const Interval &r : regions) {
    totalGrains += (r.size() + grainSize - 1) / grainSize;
    total += r.size();
  }
  if (total == 0)
    return {};
  // As many partitions as the minimum size allows, at most maxPartitions, and at least as many
  // as the maximum size needs.
  std::size_t partitions = std::min<std::size_t>(
      maxPartitions, std::max<std::size_t>(1, total / std::max(1u, minElementsPerPartition)));
  const std::size_t needed = (total + maxElementsPerPartition - 1) / std::max(1u, maxElementsPerPartition);
  partitions = std::max(partitions, std::min<std::size_t>(needed, totalGrains));
  partitions = std::min(partitions, totalGrains);

  std::vector<std::vector<Interval>> result(partitions);
  const std::size_t grainsEach = totalGrains / partitions, extra = totalGrains % partitions;
  std::size_t part = 0, grainsLeft = grainsEach + (extra > 0 ? 1 : 0);
  for (const Interval &r : regions) {
    std::size_t begin = r.begin();
    while (begin < r.end()) {
      const std::size_t grains = (r.end() - begin + grainSize - 1) / grainSize;
      const std::size_t take = std::min(grains, grainsLeft);
      const std::size_t end = std::min(r.end(), begin + take * grainSize);
      result[part].emplace_back(begin, end);
      begin = end;
      grainsLeft -= take;
      if (grainsLeft == 0 && part + 1 < partitions) {
        ++part;
        grainsLeft = grainsEach + (part < extra ? 1 : 0);
      }
    }
  }
  return result;
}

std::vector<std::vector<Interval>> splitRegionsBetweenWorkers(const Target &target,
                                                              const std::vector<Interval> &regions,
                                                              unsigned grainSize,
                                                              unsigned minElementsPerPartition,
                                                              unsigned maxElementsPerPartition) {
  return splitRegions(regions, grainSize, target.getNumWorkerContexts(), minElementsPerPartition,
                      maxElementsPerPartition);
}

} // namespace aspen::util
