// What a Tensor's elements are in its variables: flattened strided runs, aliasing, intersection,
// variable intervals and descriptions. Everything here works on boxes or runs, not elements,
// except the rare aliasing checks of boxes whose strides interleave (see ElementSet).
#include "GraphState.hpp"
#include "TensorImpl.hpp"
#include "TensorRegions.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

namespace aspen {

using detail::BoxDim;
using detail::Piece;
using detail::TensorImpl;
using detail::VarRegion;

namespace {

// A strided run of elements in flattened order, before runs are merged.
struct FlatRun {
  std::size_t flatStart;
  unsigned var;
  std::int64_t offset; // elements of the tensor's type
  std::int64_t stride;
  std::size_t count;
};

std::vector<std::size_t> flatStrides(const std::vector<std::size_t> &shape) {
  std::vector<std::size_t> strides(shape.size());
  std::size_t s = 1;
  for (std::size_t d = shape.size(); d-- > 0;) {
    strides[d] = s;
    s *= shape[d];
  }
  return strides;
}

// The runs of one box: its innermost dimensions that are consecutive in flattened order and one
// strided sequence in the variable form the run; the outer dimensions are iterated.
template <class Emit>
void forEachBoxRun(const Piece &p, const std::vector<std::size_t> &shape,
                   const std::vector<std::size_t> &strides, Emit emit) {
  std::size_t runDims = p.dims.size(), count = 1;
  std::int64_t stride = 1;
  bool innerFull = true;
  while (runDims > 0 && innerFull) {
    const BoxDim &d = p.dims[runDims - 1];
    if (d.size != 1 && count == 1) {
      stride = d.stride;
      count = d.size;
    } else if (d.size != 1) {
      if (d.stride != stride * static_cast<std::int64_t>(count))
        break;
      count *= d.size;
    }
    innerFull = d.size == shape[runDims - 1];
    --runDims;
  }
  std::size_t flatStart = 0;
  for (std::size_t d = 0; d < p.dims.size(); ++d)
    flatStart += p.dims[d].begin * strides[d];
  std::vector<std::size_t> index(runDims, 0);
  std::int64_t offset = p.offset;
  while (true) {
    emit(FlatRun{flatStart, p.var, offset, stride, count});
    // Odometer over the outer dimensions of the box.
    std::size_t d = runDims;
    while (d > 0 && index[d - 1] + 1 == p.dims[d - 1].size) {
      --d;
      flatStart -= index[d] * strides[d];
      offset -= static_cast<std::int64_t>(index[d]) * p.dims[d].stride;
      index[d] = 0;
    }
    if (d == 0)
      return;
    ++index[d - 1];
    flatStart += strides[d - 1];
    offset += p.dims[d - 1].stride;
  }
}

// Appends elements to the last region while they continue its stride. Which elements share a
// region depends only on the element sequence, so equal views give equal region lists.
void appendRegion(std::vector<VarRegion> &regions, unsigned var, std::int64_t offset,
                  std::int64_t stride, std::size_t count) {
  if (!regions.empty()) {
    VarRegion &last = regions.back();
    const std::int64_t gap =
        offset - (last.byteOffset + static_cast<std::int64_t>(last.count - 1) * last.byteStride);
    if (last.var == var && (last.count == 1 || gap == last.byteStride)) {
      last.byteStride = gap;
      ++last.count;
      offset += stride;
      --count;
      if (count > 0 && stride == gap) {
        last.count += count;
        count = 0;
      }
    }
  }
  if (count > 0)
    regions.push_back({var, offset, stride, count});
}

std::string variableName(const TensorImpl &impl, unsigned var) {
  return impl.graph ? impl.graph->variableName(var) : "#" + std::to_string(var);
}

// The set of elements of one box as a sorted list of (stride, count) dimensions with positive,
// increasing strides; when each stride exceeds the span of the smaller ones (the usual case),
// membership is a mixed-radix division. Otherwise the elements are listed explicitly.
class ElementSet {
public:
  ElementSet(const Piece &p, std::int64_t unitsPerElement) : var_(p.var) {
    base_ = p.offset * unitsPerElement;
    std::vector<std::pair<std::int64_t, std::size_t>> dims;
    for (const BoxDim &d : p.dims) {
      if (d.size == 1)
        continue;
      if (d.stride == 0) {
        repeats_ = true; // a broadcast dimension repeats elements; the set is unchanged
        continue;
      }
      std::int64_t s = d.stride * unitsPerElement;
      if (s < 0) {
        base_ += s * static_cast<std::int64_t>(d.size - 1);
        s = -s;
      }
      dims.push_back({s, d.size});
    }
    if (unitsPerElement > 1)
      dims.push_back({1, static_cast<std::size_t>(unitsPerElement)});
    std::sort(dims.begin(), dims.end());
    for (const auto &d : dims) {
      if (!dims_.empty() && dims_.back().first * static_cast<std::int64_t>(dims_.back().second) ==
                                d.first)
        dims_.back().second *= d.second;
      else
        dims_.push_back(d);
    }
    last_ = base_;
    bool dominant = true;
    for (const auto &[s, n] : dims_) {
      dominant = dominant && s > last_ - base_;
      last_ += s * static_cast<std::int64_t>(n - 1);
    }
    if (!dominant)
      listElements();
  }

  unsigned var() const { return var_; }
  std::int64_t first() const { return base_; }
  std::int64_t last() const { return last_; }
  bool repeats() const { return repeats_; }
  std::size_t size() const {
    std::size_t n = 1;
    for (const auto &d : dims_)
      n *= d.second;
    return n;
  }

  bool contains(std::int64_t x) const {
    if (listed_)
      return std::binary_search(elements_.begin(), elements_.end(), x);
    std::int64_t r = x - base_;
    if (r < 0)
      return false;
    for (auto d = dims_.rbegin(); d != dims_.rend(); ++d) {
      const std::int64_t digit = r / d->first;
      if (digit >= static_cast<std::int64_t>(d->second))
        return false;
      r -= digit * d->first;
    }
    return r == 0;
  }

  // Calls f on each element until it returns true; says whether it did.
  template <class F> bool anyElement(F f) const {
    std::vector<std::size_t> index(dims_.size(), 0);
    std::int64_t x = base_;
    while (true) {
      if (f(x))
        return true;
      std::size_t d = 0;
      while (d < dims_.size() && index[d] + 1 == dims_[d].second) {
        x -= static_cast<std::int64_t>(index[d]) * dims_[d].first;
        index[d++] = 0;
      }
      if (d == dims_.size())
        return false;
      ++index[d];
      x += dims_[d].first;
    }
  }

  bool intersects(const ElementSet &other) const {
    if (var_ != other.var_ || last_ < other.base_ || other.last_ < base_)
      return false;
    const ElementSet &small = size() <= other.size() ? *this : other;
    const ElementSet &large = &small == this ? other : *this;
    return small.anyElement([&](std::int64_t x) { return large.contains(x); });
  }

private:
  // Strides that interleave: list the elements; a repeated one is an alias.
  void listElements() {
    anyElement([this](std::int64_t x) {
      elements_.push_back(x);
      return false;
    });
    std::sort(elements_.begin(), elements_.end());
    repeats_ = repeats_ || std::adjacent_find(elements_.begin(), elements_.end()) != elements_.end();
    listed_ = true;
  }

  unsigned var_;
  std::int64_t base_ = 0, last_ = 0;
  std::vector<std::pair<std::int64_t, std::size_t>> dims_;
  bool repeats_ = false;
  bool listed_ = false;
  std::vector<std::int64_t> elements_;
};

std::vector<ElementSet> elementSets(const TensorImpl &impl, std::int64_t unitsPerElement) {
  std::vector<ElementSet> sets;
  sets.reserve(impl.pieces.size());
  for (const Piece &p : impl.pieces)
    sets.emplace_back(p, unitsPerElement);
  std::sort(sets.begin(), sets.end(), [](const ElementSet &a, const ElementSet &b) {
    return a.var() != b.var() ? a.var() < b.var() : a.first() < b.first();
  });
  return sets;
}

// Calls f on each pair (i < j) of sorted sets whose ranges overlap, until it returns true.
template <class F> bool anyOverlappingPair(const std::vector<ElementSet> &sets, F f) {
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (std::size_t j = i + 1; j < sets.size() && sets[j].var() == sets[i].var() &&
                                sets[j].first() <= sets[i].last();
         ++j)
      if (f(i, j))
        return true;
  return false;
}

std::string regionString(const TensorImpl &impl, const VarRegion &r) {
  const auto size = static_cast<std::int64_t>(impl.type.size());
  const std::int64_t start = r.byteOffset / size, step = r.byteStride / size;
  const std::string name = variableName(impl, r.var);
  if (r.count == 1)
    return name + "[" + std::to_string(start) + "]";
  if (step == 0)
    return name + "[" + std::to_string(start) + "]*" + std::to_string(r.count);
  const std::string stop = std::to_string(start + step * static_cast<std::int64_t>(r.count));
  return name + "[" + std::to_string(start) + ":" + stop +
         (step == 1 ? "" : ":" + std::to_string(step)) + "]";
}

} // namespace

bool Tensor::isContiguous() const {
  const std::vector<VarRegion> regions = detail::flatRegions(*this);
  return regions.size() == 1 &&
         regions[0].byteStride == static_cast<std::int64_t>(elementType().size());
}

bool Tensor::containsAliases() const {
  // One piece (a view of one variable: most edges and operands) aliases only by repeating an
  // element itself: no list to sort or pairs to compare.
  if (impl().pieces.size() == 1)
    return ElementSet(impl().pieces.front(), 1).repeats();
  const std::vector<ElementSet> sets = elementSets(impl(), 1);
  const bool selfAlias = std::any_of(sets.begin(), sets.end(),
                                     [](const ElementSet &s) { return s.repeats(); });
  return selfAlias || anyOverlappingPair(sets, [&](std::size_t i, std::size_t j) {
           return sets[i].intersects(sets[j]);
         });
}

bool Tensor::containsConstant() const {
  const TensorImpl &t = impl();
  if (!t.graph)
    return false;
  // Piece by piece (a variable may stand in several), with no list of variables to build:
  // every written edge and operand asks.
  return std::any_of(t.pieces.begin(), t.pieces.end(),
                     [&](const Piece &p) { return t.graph->variables[p.var].isConstant; });
}

bool Tensor::hasMetadata() const { return valid() && elementType() == QUARTER; }

Tensor Tensor::getMetadata() const {
  const TensorImpl &t = impl();
  if (t.type != QUARTER)
    throw type_error(fmt::format("getMetadata of tensor {}: only QUARTER tensors have metadata; it "
                                 "is {}",
                                 getDebugStr(), t.type.toString()));
  if (!t.graph || t.pieces.empty())
    throw tensor_creation_error(
        fmt::format("getMetadata of tensor {}: it has no elements, so no metadata", getDebugStr()));
  const Tensor *found = nullptr;
  for (unsigned v : detail::variablesOf(*this)) {
    const Tensor &m = t.graph->variables[v].metadata;
    if (!m.valid())
      throw tensor_creation_error(fmt::format(
          "getMetadata of tensor {}: variable '{}' is not a QUARTER variable (a reinterpreted "
          "view has no metadata)",
          getDebugStr(), t.graph->variables[v].name));
    if (found && !(*found == m))
      throw tensor_creation_error(fmt::format(
          "getMetadata of tensor {}: it joins QUARTER variables with different metadata ({} and "
          "{}); cast or copy them into one variable first",
          getDebugStr(), found->getDebugStr(), m.getDebugStr()));
    found = &m;
  }
  return *found;
}

namespace detail {
Tensor uniqueMetadata(const Tensor &t) {
  if (!t.hasMetadata() || t.numElements() == 0)
    return {};
  try {
    return t.getMetadata();
  } catch (const error &) {
    return {};
  }
}
} // namespace detail

bool Tensor::isParallelWriteable() const { return !containsAliases() && !containsConstant(); }

bool Tensor::intersectsWith(const Tensor &other) const {
  const TensorImpl &a = impl(), &b = other.impl();
  if (a.graph != b.graph)
    return false;
  // Compare bytes when element sizes differ; elements (aligned to their size) otherwise.
  const bool sameSize = a.type.size() == b.type.size();
  std::vector<ElementSet> sets =
      elementSets(a, sameSize ? 1 : static_cast<std::int64_t>(a.type.size()));
  const std::size_t fromA = sets.size();
  for (const Piece &p : b.pieces)
    sets.emplace_back(p, sameSize ? 1 : static_cast<std::int64_t>(b.type.size()));
  std::vector<bool> isA(sets.size(), false);
  std::fill(isA.begin(), isA.begin() + fromA, true);
  std::vector<std::size_t> order(sets.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t x, std::size_t y) {
    return sets[x].var() != sets[y].var() ? sets[x].var() < sets[y].var()
                                          : sets[x].first() < sets[y].first();
  });
  std::vector<ElementSet> sorted;
  std::vector<bool> sortedIsA;
  for (std::size_t i : order) {
    sorted.push_back(std::move(sets[i]));
    sortedIsA.push_back(isA[i]);
  }
  return anyOverlappingPair(sorted, [&](std::size_t i, std::size_t j) {
    return sortedIsA[i] != sortedIsA[j] && sorted[i].intersects(sorted[j]);
  });
}

std::vector<VariableInterval> Tensor::getVarRegions() const {
  const TensorImpl &t = impl();
  const auto size = static_cast<std::int64_t>(t.type.size());
  std::vector<VariableInterval> intervals;
  auto add = [&](unsigned var, std::int64_t byteBegin, std::int64_t byteEnd) {
    const auto varSize =
        static_cast<std::int64_t>(t.graph ? t.graph->variables[var].type.size() : t.type.size());
    // A reinterpreted element may cover part of a variable element: round outwards.
    const auto begin = static_cast<std::size_t>(byteBegin / varSize);
    const auto end = static_cast<std::size_t>((byteEnd + varSize - 1) / varSize);
    if (!intervals.empty() && intervals.back().var.id == var &&
        intervals.back().interval.end() == begin)
      intervals.back().interval = Interval(intervals.back().interval.begin(), end);
    else
      intervals.push_back({VariableRef{var}, Interval(begin, end)});
  };
  for (const VarRegion &r : detail::flatRegions(*this)) {
    if (r.byteStride == size) {
      add(r.var, r.byteOffset, r.byteOffset + static_cast<std::int64_t>(r.count) * size);
      continue;
    }
    for (std::size_t i = 0; i < r.count; ++i) {
      const std::int64_t at = r.byteOffset + static_cast<std::int64_t>(i) * r.byteStride;
      add(r.var, at, at + size);
    }
  }
  return intervals;
}

std::vector<StridedVarRegion> Tensor::getStridedVarRegions() const {
  const std::vector<VarRegion> regions = detail::flatRegions(*this);
  std::vector<StridedVarRegion> result;
  result.reserve(regions.size());
  for (const VarRegion &r : regions)
    result.push_back({VariableRef{r.var}, r.byteOffset, r.byteStride, r.count});
  return result;
}

std::size_t Tensor::numRegions() const { return detail::flatRegions(*this).size(); }

std::string Tensor::getDebugStr() const {
  const TensorImpl &t = impl();
  const std::vector<unsigned> vars = detail::variablesOf(*this);
  constexpr std::size_t kNamesShown = 3;
  std::string names;
  for (std::size_t i = 0; i < vars.size() && i < kNamesShown; ++i)
    names += (i ? "+" : "") + variableName(t, vars[i]);
  if (vars.size() > kNamesShown)
    names += "+" + std::to_string(vars.size() - kNamesShown) + " more";
  if (vars.empty())
    names = "(no elements)";
  return names + " " + detail::shapeString(t.shape);
}

std::string Tensor::getVarStr() const {
  const std::vector<VarRegion> regions = detail::flatRegions(*this);
  constexpr std::size_t kRegionsShown = 8;
  std::string s;
  for (std::size_t i = 0; i < regions.size() && i < kRegionsShown; ++i)
    s += (i ? ", " : "") + regionString(impl(), regions[i]);
  if (regions.size() > kRegionsShown)
    s += ", ... (" + std::to_string(regions.size()) + " regions)";
  return s.empty() ? "(no elements)" : s;
}

bool operator==(const Tensor &a, const Tensor &b) {
  if (!a.valid() || !b.valid())
    return a.valid() == b.valid();
  const TensorImpl &x = a.impl(), &y = b.impl();
  return x.graph == y.graph && x.type == y.type && x.shape == y.shape &&
         detail::flatRegions(a) == detail::flatRegions(b);
}

namespace detail {

std::vector<VarRegion> flatRegions(const Tensor &t) {
  const TensorImpl &impl = t.impl();
  const std::vector<std::size_t> strides = flatStrides(impl.shape);
  const auto size = static_cast<std::int64_t>(impl.type.size());
  std::vector<VarRegion> regions;
  auto appendRun = [&](const FlatRun &r) {
    appendRegion(regions, r.var, r.offset * size, r.stride * size, r.count);
  };
  if (impl.pieces.size() == 1) {
    forEachBoxRun(impl.pieces[0], impl.shape, strides, appendRun); // already in flat order
  } else {
    std::vector<FlatRun> runs;
    for (const Piece &p : impl.pieces)
      forEachBoxRun(p, impl.shape, strides, [&](const FlatRun &r) { runs.push_back(r); });
    std::sort(runs.begin(), runs.end(),
              [](const FlatRun &a, const FlatRun &b) { return a.flatStart < b.flatStart; });
    std::for_each(runs.begin(), runs.end(), appendRun);
  }
  for (VarRegion &r : regions)
    if (r.count == 1)
      r.byteStride = size; // a single element has no stride; report it as contiguous
  return regions;
}

std::vector<unsigned> variablesOf(const Tensor &t) {
  std::vector<unsigned> vars;
  for (const Piece &p : t.impl().pieces)
    vars.push_back(p.var);
  std::sort(vars.begin(), vars.end());
  vars.erase(std::unique(vars.begin(), vars.end()), vars.end());
  return vars;
}

} // namespace detail

} // namespace aspen
