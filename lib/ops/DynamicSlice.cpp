// Dynamic and multi slices. The sliced dimensions of t are moved outermost (in `dims` order)
// and the rest flattened into columns: base = [numBaseRows, width]. Slices are
// [N * numSubRows, width]. One vertex per tile that owns columns of base row 0 gathers those
// columns of every base row; the codelet reads the offsets at run time.
#include "FillRegions.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/ops/DynamicSlice.hpp>
#include <aspen/util/TileMapping.hpp>
#include <aspen/util/VertexTemplates.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <numeric>
#include <optional>

namespace aspen::ops {

namespace {

// "{a,b,c}", as shapes are written in messages.
std::string listString(const std::vector<std::size_t> &v) {
  return fmt::format("{{{}}}", fmt::join(v, ","));
}

struct SliceLayout {
  std::vector<unsigned> permutation; // dims first, then the others in order
  std::vector<unsigned> baseDims, subDims;
  std::size_t numBaseRows = 1, numSubRows = 1, width = 1;
  std::vector<std::size_t> movedSubShape; // sizes, then the other dimensions
};

SliceLayout layoutOf(const std::string &op, const Tensor &t, const std::vector<std::size_t> &dims,
                     const std::vector<std::size_t> &sizes) {
  if (dims.empty())
    throw shape_error(
        fmt::format("{}: no dimension of tensor {} to slice (dims is empty)", op, t.getDebugStr()));
  if (dims.size() != sizes.size())
    throw shape_error(
        fmt::format("{}: dims {} and sizes {} must have the same length", op, dims, sizes));
  SliceLayout l;
  std::vector<bool> sliced(t.rank(), false);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= t.rank())
      throw index_error(fmt::format("{}: dimension {} is out of range for tensor {} of shape {}",
                                    op, dims[i], t.getDebugStr(), t.shapeToString()));
    if (sliced[dims[i]])
      throw index_error(
          fmt::format("{}: dimension {} appears twice in dims {}", op, dims[i], listString(dims)));
    if (sizes[i] > t.dim(dims[i]))
      throw index_error(fmt::format("{}: slice size {} in dimension {} exceeds that dimension's "
                                    "size {} in tensor {} of shape {}",
                                    op, sizes[i], dims[i], t.dim(dims[i]), t.getDebugStr(),
                                    t.shapeToString()));
    sliced[dims[i]] = true;
    l.permutation.push_back(static_cast<unsigned>(dims[i]));
    l.baseDims.push_back(static_cast<unsigned>(t.dim(dims[i])));
    l.subDims.push_back(static_cast<unsigned>(sizes[i]));
    l.numBaseRows *= t.dim(dims[i]);
    l.numSubRows *= sizes[i];
    l.movedSubShape.push_back(sizes[i]);
  }
  for (unsigned d = 0; d < t.rank(); ++d)
    if (!sliced[d]) {
      l.permutation.push_back(d);
      l.width *= t.dim(d);
      l.movedSubShape.push_back(t.dim(d));
    }
  return l;
}

void requireOffsets(const std::string &op, const Tensor &offsets,
                    const std::vector<std::size_t> &expectedShape) {
  if (offsets.elementType() != UNSIGNED_INT)
    throw type_error(fmt::format("{}: offsets tensor {} must have type unsigned int, not {}", op,
                                 offsets.getDebugStr(), offsets.elementType().toString()));
  if (offsets.shape() != expectedShape)
    throw shape_error(fmt::format("{}: offsets tensor {} must have shape {}, but has {}", op,
                                  offsets.getDebugStr(), listString(expectedShape),
                                  offsets.shapeToString()));
}

// [N, natural dims...] of a tensor laid out as [N, movedSubShape...]: the inverse shuffle.
Tensor naturalOrder(const Tensor &moved, const SliceLayout &l) {
  std::vector<unsigned> inverse(l.permutation.size() + 1, 0);
  for (unsigned i = 0; i < l.permutation.size(); ++i)
    inverse[1 + l.permutation[i]] = i + 1;
  return moved.dimShuffle(inverse);
}

// The [N * numSubRows, width] view of a natural-order [N, ...] tensor.
Tensor movedRows(const Tensor &natural, const SliceLayout &l) {
  std::vector<unsigned> permutation{0};
  for (unsigned d : l.permutation)
    permutation.push_back(d + 1);
  return natural.dimShuffle(permutation).reshape({natural.dim(0) * l.numSubRows, l.width});
}

Tensor baseRows(const Tensor &t, const SliceLayout &l) {
  return t.dimShuffle(l.permutation).reshape({l.numBaseRows, l.width});
}

enum class Kind { Slice, Update, UpdateAdd };

// The compute set that moves `numSlices` slices between base and sub (both [rows, width]).
// newSub: map sub's columns with the vertex that computes them.
void addSliceVertices(Graph &graph, const SliceLayout &l, Kind kind, bool wrap, const Tensor &base,
                      const Tensor &sub, const Tensor &offsets, const Tensor *scale, bool newSub,
                      program::Sequence &prog, const DebugContext &debug, const std::string &op) {
  ComputeSet cs = graph.addComputeSet({debug, op});
  if (base.numElements() > 0 && sub.numElements() > 0) {
    const char *name = kind == Kind::Slice    ? "aspen::ops::DynamicSlice"
                       : kind == Kind::Update ? "aspen::ops::DynamicUpdate"
                                              : "aspen::ops::DynamicUpdateAdd";
    const std::string vertexType = util::templateVertex(name, base.elementType());
    const auto columns = util::getTileContiguousRegions(graph, base[0]);
    for (unsigned tile = 0; tile < columns.size(); ++tile) {
      if (columns[tile].empty())
        continue;
      std::vector<Tensor> baseRegions, subRegions;
      for (const Interval &c : columns[tile]) {
        baseRegions.push_back(base.slice(c, 1).flatten());
        subRegions.push_back(sub.slice(c, 1).flatten());
        if (newSub)
          graph.setTileMapping(sub.slice(c, 1), tile);
      }
      VertexRef v = graph.addVertex(cs, vertexType);
      graph.setTileMapping(v, tile);
      graph.connect(v["offsets"], offsets.flatten());
      graph.connect(v["baseT"], baseRegions);
      graph.connect(v["subT"], subRegions);
      graph.setInitialValue(v["baseDims"], l.baseDims);
      graph.setInitialValue(v["subDims"], l.subDims);
      if (kind == Kind::UpdateAdd)
        graph.connect(v["scale"], scale->reshape({}));
      else
        graph.setInitialValue(v["wrap"], wrap);
    }
  }
  prog.add(program::Execute(cs, debug));
}

void requireNoOptions(const std::string &op, const OptionFlags &options) {
  aspen::detail::OptionSpec(op).parse(options);
}

Tensor sliceImpl(Graph &graph, const Tensor &t, const Tensor &offsets, std::size_t numSlices,
                 const SliceLayout &l, bool wrap, program::Sequence &prog,
                 const DebugContext &debug, const std::string &op) {
  std::vector<std::size_t> movedShape{numSlices};
  movedShape.insert(movedShape.end(), l.movedSubShape.begin(), l.movedSubShape.end());
  // Slices of QUARTER data keep reading their codes with the source's metadata.
  const bool quarterWithMetadata = t.elementType() == QUARTER && t.numElements() > 0 && [&] {
    try {
      (void)t.getMetadata();
      return true;
    } catch (const error &) {
      return false;
    }
  }();
  Tensor moved = quarterWithMetadata
                     ? graph.addVariable(QUARTER, t.getMetadata(), movedShape, {debug, op})
                     : graph.addVariable(t.elementType(), movedShape, {debug, op});
  Tensor result = naturalOrder(moved, l);
  addSliceVertices(graph, l, Kind::Slice, wrap, baseRows(t, l), movedRows(result, l), offsets,
                   nullptr, true, prog, debug, op);
  return result;
}

void requireUpdate(const std::string &op, const Tensor &t, const Tensor &s,
                   const std::vector<std::size_t> &expectedShape) {
  if (s.elementType() != t.elementType())
    throw type_error(fmt::format("{}: update tensor {} has type {} but tensor {} has type {}", op,
                                 s.getDebugStr(), s.elementType().toString(), t.getDebugStr(),
                                 t.elementType().toString()));
  if (s.shape() != expectedShape)
    throw shape_error(fmt::format("{}: update tensor {} must have shape {}, but has {}", op,
                                  s.getDebugStr(), listString(expectedShape), s.shapeToString()));
  detail::requireWritable(t, op);
}

std::vector<std::size_t> slicedShape(const Tensor &t, const std::vector<std::size_t> &dims,
                                     const std::vector<std::size_t> &sizes,
                                     std::optional<std::size_t> numSlices) {
  std::vector<std::size_t> shape = t.shape();
  for (std::size_t i = 0; i < dims.size(); ++i)
    shape[dims[i]] = sizes[i];
  if (numSlices)
    shape.insert(shape.begin(), *numSlices);
  return shape;
}

} // namespace

Tensor dynamicSlice(Graph &graph, const Tensor &t, const Tensor &offset,
                    const std::vector<std::size_t> &dims, const std::vector<std::size_t> &sizes,
                    program::Sequence &prog, const DebugContext &debug) {
  const std::string op = "dynamicSlice";
  const SliceLayout l = layoutOf(op, t, dims, sizes);
  requireOffsets(op, offset, {dims.size()});
  return sliceImpl(graph, t, offset, 1, l, true, prog, debug, op)[0];
}

void dynamicUpdate(Graph &graph, const Tensor &t, const Tensor &s, const Tensor &offset,
                   const std::vector<std::size_t> &dims, const std::vector<std::size_t> &sizes,
                   program::Sequence &prog, const DebugContext &debug) {
  const std::string op = "dynamicUpdate";
  const SliceLayout l = layoutOf(op, t, dims, sizes);
  requireOffsets(op, offset, {dims.size()});
  requireUpdate(op, t, s, slicedShape(t, dims, sizes, std::nullopt));
  addSliceVertices(graph, l, Kind::Update, true, baseRows(t, l), movedRows(s.expand({0}), l),
                   offset, nullptr, false, prog, debug, op);
}

Tensor multiSlice(Graph &graph, const Tensor &t, const Tensor &offsets,
                  const std::vector<std::size_t> &dims, const std::vector<std::size_t> &sizes,
                  program::Sequence &prog, const SlicePlan &, const OptionFlags &options,
                  const DebugContext &debug) {
  const std::string op = "multiSlice";
  requireNoOptions(op, options);
  const SliceLayout l = layoutOf(op, t, dims, sizes);
  const std::size_t n = offsets.rank() > 0 ? offsets.dim(0) : 0;
  requireOffsets(op, offsets, {n, dims.size()});
  return sliceImpl(graph, t, offsets, n, l, false, prog, debug, op);
}

void multiUpdate(Graph &graph, const Tensor &t, const Tensor &sMulti, const Tensor &offsets,
                 const std::vector<std::size_t> &dims, const std::vector<std::size_t> &sizes,
                 program::Sequence &prog, const SlicePlan &, const OptionFlags &options,
                 const DebugContext &debug) {
  const std::string op = "multiUpdate";
  requireNoOptions(op, options);
  const SliceLayout l = layoutOf(op, t, dims, sizes);
  const std::size_t n = offsets.rank() > 0 ? offsets.dim(0) : 0;
  requireOffsets(op, offsets, {n, dims.size()});
  requireUpdate(op, t, sMulti, slicedShape(t, dims, sizes, n));
  addSliceVertices(graph, l, Kind::Update, false, baseRows(t, l), movedRows(sMulti, l), offsets,
                   nullptr, false, prog, debug, op);
}

void multiUpdateAdd(Graph &graph, const Tensor &t, const Tensor &sMulti, const Tensor &offsets,
                    const Tensor &scale, const std::vector<std::size_t> &dims,
                    const std::vector<std::size_t> &sizes, program::Sequence &prog,
                    const SlicePlan &, const OptionFlags &options, const DebugContext &debug) {
  const std::string op = "multiUpdateAdd";
  requireNoOptions(op, options);
  const SliceLayout l = layoutOf(op, t, dims, sizes);
  const std::size_t n = offsets.rank() > 0 ? offsets.dim(0) : 0;
  requireOffsets(op, offsets, {n, dims.size()});
  const Type type = t.elementType();
  if (type != FLOAT && type != HALF && type != INT && type != UNSIGNED_INT)
    throw type_error(fmt::format("{}: tensor {} has type {}; multiUpdateAdd supports float, half, "
                                 "int and unsigned int",
                                 op, t.getDebugStr(), type.toString()));
  if (scale.numElements() != 1)
    throw shape_error(fmt::format("{}: scale {} must have one element, but has shape {}", op,
                                  scale.getDebugStr(), scale.shapeToString()));
  if (scale.elementType() != type)
    throw type_error(fmt::format("{}: scale {} has type {} but must have tensor {}'s type {}", op,
                                 scale.getDebugStr(), scale.elementType().toString(),
                                 t.getDebugStr(), type.toString()));
  requireUpdate(op, t, sMulti, slicedShape(t, dims, sizes, n));
  addSliceVertices(graph, l, Kind::UpdateAdd, false, baseRows(t, l), movedRows(sMulti, l), offsets,
                   &scale, false, prog, debug, op);
}

} // namespace aspen::ops
