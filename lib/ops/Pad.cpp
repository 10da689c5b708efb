// pad: views of t with pad slabs concatenated dimension by dimension. Constant slabs are new
// constants (or a broadcast scalar tensor); edge and reflect slabs are slices of t itself.
#include <aspen/ops/Pad.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <functional>

namespace aspen::ops {

namespace {

// The pad slab of `amount` elements along `dim` on one side of t (upper when `upper`).
using SlabMaker =
    std::function<Tensor(const Tensor &t, std::size_t amount, unsigned dim, bool upper)>;

void requireAmounts(const Tensor &t, std::size_t lowerCount, std::size_t upperCount) {
  if (lowerCount != t.rank() || upperCount != t.rank())
    throw shape_error(fmt::format("pad: tensor {} of shape {} needs one padding amount per "
                                  "dimension ({}), but {} lower and {} upper amounts were given",
                                  t.getDebugStr(), t.shapeToString(), t.rank(), lowerCount,
                                  upperCount));
}

// Truncates (negative amounts) or pads (positive) one dimension.
Tensor padDim(const Tensor &t, std::ptrdiff_t lower, std::ptrdiff_t upper, unsigned dim,
              const SlabMaker &slab) {
  if (dim >= t.rank())
    throw index_error(fmt::format("pad: dimension {} is out of range for tensor {} of shape {}",
                                  dim, t.getDebugStr(), t.shapeToString()));
  const auto size = static_cast<std::ptrdiff_t>(t.dim(dim));
  const std::ptrdiff_t cutLower = lower < 0 ? -lower : 0, cutUpper = upper < 0 ? -upper : 0;
  if (cutLower + cutUpper > size)
    throw index_error(fmt::format("pad: padding {} (lower) and {} (upper) in dimension {} removes "
                                  "more than the {} elements of tensor {}",
                                  lower, upper, dim, size, t.getDebugStr()));
  Tensor r =
      t.slice(static_cast<std::size_t>(cutLower), static_cast<std::size_t>(size - cutUpper), dim);
  std::vector<Tensor> parts;
  if (lower > 0)
    parts.push_back(slab(r, static_cast<std::size_t>(lower), dim, false));
  parts.push_back(r);
  if (upper > 0)
    parts.push_back(slab(r, static_cast<std::size_t>(upper), dim, true));
  return parts.size() == 1 ? r : concat(parts, dim);
}

Tensor padAll(const Tensor &t, const std::vector<std::ptrdiff_t> &lower,
              const std::vector<std::ptrdiff_t> &upper, const SlabMaker &slab) {
  requireAmounts(t, lower.size(), upper.size());
  // Truncations are checked before any slab (constant) is made, so a failing call adds nothing.
  for (unsigned d = 0; d < t.rank(); ++d)
    padDim(t, std::min<std::ptrdiff_t>(lower[d], 0), std::min<std::ptrdiff_t>(upper[d], 0), d,
           nullptr);
  Tensor r = t;
  for (unsigned d = 0; d < t.rank(); ++d)
    r = padDim(r, lower[d], upper[d], d, slab);
  return r;
}

std::vector<std::size_t> slabShape(const Tensor &t, std::size_t amount, unsigned dim) {
  auto shape = t.shape();
  shape[dim] = amount;
  return shape;
}

// Constant slabs holding `value`, mapped by `method`.
template <class T> SlabMaker constantSlabs(Graph &graph, T value, padding::MappingMethod method) {
  return [&graph, value, method](const Tensor &t, std::size_t amount, unsigned dim, bool upper) {
    Tensor c = graph.addConstant(t.elementType(), slabShape(t, amount, dim), value,
                                 DebugContext(t.getDebugStr() + "/pad"));
    switch (method) {
    case padding::MappingMethod::NONE:
      break;
    case padding::MappingMethod::ZERO:
      graph.setTileMapping(c, 0);
      break;
    case padding::MappingMethod::EDGE: {
      if (t.dim(dim) == 0)
        throw invalid_tile_mapping(fmt::format("pad: EDGE mapping needs elements of tensor {} to "
                                               "map padding next to, but dimension {} is empty",
                                               t.getDebugStr(), dim));
      const std::size_t edge = upper ? t.dim(dim) - 1 : 0;
      const auto mapping = graph.getTileMapping(t.slice(edge, edge + 1, dim));
      for (std::size_t i = 0; i < amount; ++i)
        graph.setTileMapping(c.slice(i, i + 1, dim), mapping);
      break;
    }
    }
    return c;
  };
}

SlabMaker tensorSlabs(const Tensor &t, const Tensor &val) {
  if (val.numElements() != 1)
    throw shape_error(fmt::format("pad: padding value {} must have one element, but has shape {}",
                                  val.getDebugStr(), val.shapeToString()));
  if (val.elementType() != t.elementType())
    throw type_error(fmt::format("pad: padding value {} has type {} but tensor {} has type {}",
                                 val.getDebugStr(), val.elementType().toString(), t.getDebugStr(),
                                 t.elementType().toString()));
  return [val](const Tensor &t, std::size_t amount, unsigned dim, bool) {
    Tensor s = val.reshape(std::vector<std::size_t>(t.rank(), 1));
    for (unsigned d = 0; d < t.rank(); ++d)
      s = s.broadcast(static_cast<unsigned>(d == dim ? amount : t.dim(d)), d);
    return s;
  };
}

SlabMaker viewSlabs(padding::Type type) {
  return [type](const Tensor &t, std::size_t amount, unsigned dim, bool upper) {
    const std::size_t n = t.dim(dim);
    if (type == padding::Type::EDGE) {
      if (n == 0)
        throw index_error(fmt::format("pad: edge padding of tensor {} in dimension {}, which is "
                                      "empty, has no edge element to repeat",
                                      t.getDebugStr(), dim));
      const std::size_t edge = upper ? n - 1 : 0;
      return t.slice(edge, edge + 1, dim).broadcast(static_cast<unsigned>(amount), dim);
    }
    if (amount >= n)
      throw index_error(fmt::format("pad: reflect padding of {} in dimension {} of tensor {} needs "
                                    "more than {} elements (the dimension has {})",
                                    amount, dim, t.getDebugStr(), amount, n));
    return (upper ? t.slice(n - 1 - amount, n - 1, dim) : t.slice(1, amount + 1, dim)).reverse(dim);
  };
}

} // namespace

Tensor pad(Graph &graph, const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
           const std::vector<std::ptrdiff_t> &paddingUpper, float val,
           padding::MappingMethod mappingMethod) {
  return padAll(t, paddingLower, paddingUpper, constantSlabs(graph, val, mappingMethod));
}
Tensor pad(Graph &graph, const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
           const std::vector<std::ptrdiff_t> &paddingUpper, int val,
           padding::MappingMethod mappingMethod) {
  return padAll(t, paddingLower, paddingUpper, constantSlabs(graph, val, mappingMethod));
}
Tensor pad(Graph &, const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
           const std::vector<std::ptrdiff_t> &paddingUpper, const Tensor &val,
           padding::MappingMethod) {
  return padAll(t, paddingLower, paddingUpper, tensorSlabs(t, val));
}

Tensor pad(Graph &graph, const Tensor &t, std::ptrdiff_t paddingLower, std::ptrdiff_t paddingUpper,
           unsigned dim, float val, padding::MappingMethod mappingMethod) {
  return padDim(t, paddingLower, paddingUpper, dim, constantSlabs(graph, val, mappingMethod));
}
Tensor pad(Graph &graph, const Tensor &t, std::ptrdiff_t paddingLower, std::ptrdiff_t paddingUpper,
           unsigned dim, int val, padding::MappingMethod mappingMethod) {
  return padDim(t, paddingLower, paddingUpper, dim, constantSlabs(graph, val, mappingMethod));
}
Tensor pad(Graph &, const Tensor &t, std::ptrdiff_t paddingLower, std::ptrdiff_t paddingUpper,
           unsigned dim, const Tensor &val, padding::MappingMethod) {
  return padDim(t, paddingLower, paddingUpper, dim, tensorSlabs(t, val));
}

Tensor pad(const Tensor &t, const std::vector<std::ptrdiff_t> &paddingLower,
           const std::vector<std::ptrdiff_t> &paddingUpper, padding::Type type) {
  return padAll(t, paddingLower, paddingUpper, viewSlabs(type));
}
Tensor pad(const Tensor &t, std::ptrdiff_t paddingLower, std::ptrdiff_t paddingUpper, unsigned dim,
           padding::Type type) {
  return padDim(t, paddingLower, paddingUpper, dim, viewSlabs(type));
}

} // namespace aspen::ops
