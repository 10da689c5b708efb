// Reshaping boxes: merging dimensions, splitting a dimension, and joining neighbouring pieces.
// A reshape is done group by group of dimensions whose products match, each group merged into one
// dimension and split again into the new dimensions, so a box costs at most a few boxes per level.
#include "TensorImpl.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <numeric>
#include <utility>

namespace aspen::detail {

namespace {

// Pieces cut into one piece per index of `dim`.
std::vector<Piece> splitIntoRows(const Piece &piece, unsigned dim) {
  std::vector<Piece> rows;
  const BoxDim &d = piece.dims[dim];
  rows.reserve(d.size);
  for (std::size_t i = 0; i < d.size; ++i) {
    Piece row = piece;
    row.offset += static_cast<std::int64_t>(i) * d.stride;
    row.dims[dim] = {d.begin + i, 1, d.stride};
    rows.push_back(std::move(row));
  }
  return rows;
}

// Merges dimensions `outer` and outer+1 (of size innerSize) of every piece. A box merges when it
// is one row of the outer dimension, or full rows laid out one after the other; any other box is
// cut into rows first.
void mergeAdjacentPair(std::vector<Piece> &pieces, unsigned outer, std::size_t innerSize) {
  std::vector<Piece> result;
  result.reserve(pieces.size());
  auto merge = [&](Piece p) {
    const BoxDim o = p.dims[outer], in = p.dims[outer + 1];
    p.dims[outer] = o.size == 1 ? BoxDim{o.begin * innerSize + in.begin, in.size, in.stride}
                                : BoxDim{o.begin * innerSize, o.size * innerSize, in.stride};
    p.dims.erase(p.dims.begin() + outer + 1);
    result.push_back(std::move(p));
  };
  for (Piece &p : pieces) {
    const BoxDim o = p.dims[outer], in = p.dims[outer + 1];
    const bool rowsFollowEachOther =
        in.size == innerSize && o.stride == in.stride * static_cast<std::int64_t>(innerSize);
    if (o.size == 1 || rowsFollowEachOther) {
      merge(std::move(p));
    } else {
      for (Piece &row : splitIntoRows(p, outer))
        merge(std::move(row));
    }
  }
  pieces = std::move(result);
}

// Splits dimension `dim` of every piece into (outer, inner) with the inner of size innerSize.
// A range [a, b) becomes at most three boxes: a partial first row, full rows, a partial last row.
void splitIntoPair(std::vector<Piece> &pieces, unsigned dim, std::size_t innerSize) {
  std::vector<Piece> result;
  result.reserve(pieces.size());
  const auto r = static_cast<std::int64_t>(innerSize);
  for (const Piece &p : pieces) {
    const BoxDim d = p.dims[dim];
    const std::size_t a = d.begin, b = d.begin + d.size;
    auto emit = [&](std::size_t from, std::size_t to, bool fullRows) {
      Piece q = p;
      q.offset += static_cast<std::int64_t>(from - a) * d.stride;
      const BoxDim outerDim{from / innerSize, fullRows ? (to - from) / innerSize : 1, d.stride * r};
      const BoxDim innerDim = fullRows ? BoxDim{0, innerSize, d.stride}
                                       : BoxDim{from % innerSize, to - from, d.stride};
      q.dims[dim] = outerDim;
      q.dims.insert(q.dims.begin() + dim + 1, innerDim);
      result.push_back(std::move(q));
    };
    for (std::size_t pos = a; pos < b;) {
      if (pos % innerSize != 0 || b - pos < innerSize) {
        const std::size_t rowEnd = std::min(b, (pos / innerSize + 1) * innerSize);
        emit(pos, rowEnd, false);
        pos = rowEnd;
      } else {
        const std::size_t fullEnd = b / innerSize * innerSize;
        emit(pos, fullEnd, true);
        pos = fullEnd;
      }
    }
  }
  pieces = std::move(result);
}

std::vector<std::size_t> withoutOnes(const std::vector<std::size_t> &shape) {
  std::vector<std::size_t> result;
  std::copy_if(shape.begin(), shape.end(), std::back_inserter(result),
               [](std::size_t n) { return n != 1; });
  return result;
}

// Dimension groups of two shapes (neither with 1s) whose products match: pairs of
// [oldBegin, oldEnd) and [newBegin, newEnd).
struct DimGroup {
  unsigned oldBegin, oldEnd, newBegin, newEnd;
};

std::vector<DimGroup> matchingGroups(const std::vector<std::size_t> &from,
                                     const std::vector<std::size_t> &to) {
  std::vector<DimGroup> groups;
  unsigned i = 0, j = 0;
  while (i < from.size() && j < to.size()) {
    DimGroup g{i, i + 1, j, j + 1};
    std::size_t a = from[i++], b = to[j++];
    while (a != b) {
      if (a < b)
        a *= from[i++];
      else
        b *= to[j++];
    }
    g.oldEnd = i;
    g.newEnd = j;
    groups.push_back(g);
  }
  return groups;
}

bool continues(const Piece &first, const Piece &second, unsigned dim) {
  if (first.var != second.var || first.dims.size() != second.dims.size())
    return false;
  for (unsigned d = 0; d < first.dims.size(); ++d) {
    if (d == dim)
      continue;
    const BoxDim &x = first.dims[d], &y = second.dims[d];
    if (x.begin != y.begin || x.size != y.size || !stridesAgree(x, y))
      return false;
  }
  const BoxDim &x = first.dims[dim], &y = second.dims[dim];
  if (x.begin + x.size != y.begin)
    return false;
  const std::int64_t gap =
      second.offset - (first.offset + static_cast<std::int64_t>(x.size - 1) * x.stride);
  return (x.size == 1 || x.stride == gap) && (y.size == 1 || y.stride == gap);
}

// Orders pieces so that continuing ones are neighbours: by variable, then the box outside `dim`,
// then the position along `dim`.
bool beforeAlong(const Piece &a, const Piece &b, unsigned dim) {
  if (a.var != b.var)
    return a.var < b.var;
  for (unsigned d = 0; d < a.dims.size(); ++d) {
    if (d != dim && a.dims[d].begin != b.dims[d].begin)
      return a.dims[d].begin < b.dims[d].begin;
  }
  return a.dims[dim].begin < b.dims[dim].begin;
}

} // namespace

void mergeDims(std::vector<Piece> &pieces, std::vector<std::size_t> &shape, unsigned first,
               unsigned last) {
  for (unsigned outer = last - 1; outer-- > first;) {
    mergeAdjacentPair(pieces, outer, shape[outer + 1]);
    shape[outer] *= shape[outer + 1];
    shape.erase(shape.begin() + outer + 1);
  }
}

void splitDim(std::vector<Piece> &pieces, std::vector<std::size_t> &shape, unsigned dim,
              const std::vector<std::size_t> &newDims) {
  for (std::size_t k = newDims.size(); k-- > 1;) {
    splitIntoPair(pieces, dim, newDims[k]);
    shape[dim] /= newDims[k];
    shape.insert(shape.begin() + dim + 1, newDims[k]);
  }
}

std::vector<Piece> reshapePieces(std::vector<Piece> pieces, const std::vector<std::size_t> &oldShape,
                                 const std::vector<std::size_t> &newShape) {
  if (pieces.empty() || oldShape == newShape)
    return pieces;
  // Size-1 dimensions carry no structure: drop them first, insert the new ones last.
  for (Piece &p : pieces) {
    std::vector<BoxDim> kept;
    for (unsigned d = 0; d < oldShape.size(); ++d)
      if (oldShape[d] != 1)
        kept.push_back(p.dims[d]);
    p.dims = std::move(kept);
  }
  std::vector<std::size_t> shape = withoutOnes(oldShape);
  const std::vector<std::size_t> target = withoutOnes(newShape);
  const std::vector<DimGroup> groups = matchingGroups(shape, target);
  // From the last group back, so the positions of the groups before stay valid.
  for (auto g = groups.rbegin(); g != groups.rend(); ++g) {
    const std::vector<std::size_t> newDims(target.begin() + g->newBegin, target.begin() + g->newEnd);
    if (g->oldEnd - g->oldBegin == 1 && newDims.size() == 1)
      continue;
    mergeDims(pieces, shape, g->oldBegin, g->oldEnd);
    splitDim(pieces, shape, g->oldBegin, newDims);
  }
  for (Piece &p : pieces) {
    std::vector<BoxDim> dims;
    auto next = p.dims.begin();
    for (std::size_t n : newShape)
      dims.push_back(n == 1 ? BoxDim{0, 1, 0} : *next++);
    p.dims = std::move(dims);
  }
  return pieces;
}

void coalesceAlong(std::vector<Piece> &pieces, unsigned dim) {
  if (pieces.size() < 2)
    return;
  std::sort(pieces.begin(), pieces.end(),
            [dim](const Piece &a, const Piece &b) { return beforeAlong(a, b, dim); });
  std::vector<Piece> result;
  result.reserve(pieces.size());
  for (Piece &p : pieces) {
    if (!result.empty() && continues(result.back(), p, dim)) {
      Piece &last = result.back();
      BoxDim &x = last.dims[dim];
      const std::int64_t gap =
          p.offset - (last.offset + static_cast<std::int64_t>(x.size - 1) * x.stride);
      x.size += p.dims[dim].size;
      x.stride = gap;
      continue;
    }
    result.push_back(std::move(p));
  }
  pieces = std::move(result);
}

std::size_t product(const std::vector<std::size_t> &dims) {
  return std::accumulate(dims.begin(), dims.end(), std::size_t{1}, std::multiplies<>());
}

std::string shapeString(const std::vector<std::size_t> &shape) {
  std::string s = "{";
  for (std::size_t i = 0; i < shape.size(); ++i)
    s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "}";
}

} // namespace aspen::detail
