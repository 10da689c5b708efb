// The tensor view algebra (lib/core/Tensor.cpp, TensorRegions.cpp) against a naive model: a
// tensor is its shape and the list, in row-major order, of the (variable, element) each of its
// elements is. The fuzzer's bytes pick a sequence of view operations; each is applied to both.
// Where the model says the operation is valid, the view must succeed and agree with the model in
// shape, elements (getVarRegions), aliasing and contiguity; where it is not, the view must
// refuse with an aspen::error.
#include "FuzzCommon.hpp"

#include <aspen/Graph.hpp>
#include <aspen/Target.hpp>
#include <aspen/Tensor.hpp>

#include <algorithm>
#include <numeric>
#include <set>

namespace {

using namespace aspen;
using Shape = std::vector<std::size_t>;
using Element = std::pair<unsigned, std::size_t>; // variable id, element of the variable

constexpr std::size_t kMaxElements = 2048;

std::size_t product(const Shape &s) {
  return std::accumulate(s.begin(), s.end(), std::size_t(1), std::multiplies<>());
}

struct Model {
  Shape shape;
  std::vector<Element> elements;

  std::vector<std::size_t> strides() const {
    std::vector<std::size_t> st(shape.size(), 1);
    for (std::size_t d = shape.size(); d-- > 1;)
      st[d - 1] = st[d] * shape[d];
    return st;
  }
  // The model of a tensor of shape `to` whose element at index i is element f(i) of this one
  // (i in row-major order of `to`, f giving a multi-index of this tensor).
  template <class F> Model gather(Shape to, F &&from) const {
    Model out{std::move(to), {}};
    const std::size_t n = product(out.shape);
    out.elements.reserve(n);
    const std::vector<std::size_t> st = strides();
    std::vector<std::size_t> idx(out.shape.size(), 0);
    for (std::size_t i = 0; i < n; ++i) {
      const std::vector<std::size_t> src = from(idx);
      std::size_t flat = 0;
      for (std::size_t d = 0; d < src.size(); ++d)
        flat += src[d] * st[d];
      out.elements.push_back(elements[flat]);
      for (std::size_t d = out.shape.size(); d-- > 0;) {
        if (++idx[d] < out.shape[d])
          break;
        idx[d] = 0;
      }
    }
    return out;
  }
};

std::vector<Element> elementsOf(const Tensor &t) {
  std::vector<Element> out;
  for (const VariableInterval &r : t.getVarRegions())
    for (std::size_t e = r.interval.begin(); e < r.interval.end(); ++e)
      out.emplace_back(r.var.id, e);
  return out;
}

void compare(const Tensor &t, const Model &m, const std::string &history) {
  fuzz::check(t.shape() == m.shape,
              "shape " + t.shapeToString() + " differs from the model's after " + history);
  fuzz::check(t.numElements() == m.elements.size(), "numElements differs after " + history);
  fuzz::check(elementsOf(t) == m.elements, "elements differ from the model's after " + history);
  const std::set<Element> distinct(m.elements.begin(), m.elements.end());
  fuzz::check(t.containsAliases() == (distinct.size() != m.elements.size()),
              "containsAliases disagrees with the model after " + history);
  bool contiguous = !m.elements.empty();
  for (std::size_t i = 1; contiguous && i < m.elements.size(); ++i)
    contiguous = m.elements[i].first == m.elements[0].first &&
                 m.elements[i].second == m.elements[i - 1].second + 1;
  fuzz::check(t.isContiguous() == contiguous,
              "isContiguous disagrees with the model after " + history);
}

// Applies `view` when `valid`, else requires a refusal. Returns whether the tensor changed.
template <class V>
bool apply(Tensor &t, Model &m, bool valid, Model next, V &&view, std::string &history,
           const std::string &what) {
  history += " " + what;
  Tensor result;
  const bool done = fuzz::refusedOrDone([&] { result = view(t); });
  if (!valid) {
    fuzz::check(!done, "the invalid view was accepted: " + history);
    history.resize(history.size() - what.size() - 1);
    return false;
  }
  fuzz::check(done, "a valid view was refused: " + history);
  t = result;
  m = std::move(next);
  compare(t, m, history);
  return true;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  fuzz::Bytes in(data, size);
  static const Target target = Target::createGeneric(4);
  Graph graph(target);
  Shape shapeA;
  for (unsigned r = 0, rank = 1 + in.below(3); r < rank; ++r)
    shapeA.push_back(1 + in.below(4));
  const Tensor a = graph.addVariable(FLOAT, shapeA, "a");
  const Tensor b = graph.addVariable(FLOAT, {256}, "b");
  Tensor t = a;
  Model m{shapeA, {}};
  for (std::size_t i = 0; i < product(shapeA); ++i)
    m.elements.emplace_back(a.getVarRegions()[0].var.id, i);
  const unsigned bId = b.getVarRegions()[0].var.id;
  std::string history = "a" + t.shapeToString();
  compare(t, m, history);

  for (unsigned step = 0; step < 24 && !in.empty(); ++step) {
    const unsigned rank = unsigned(m.shape.size());
    const unsigned op = in.below(14);
    const unsigned dim = in.below(rank + 2); // sometimes out of range
    const bool dimOk = dim < rank;
    const std::size_t dimSize = dimOk ? m.shape[dim] : 0;
    const std::string d = std::to_string(dim);
    switch (op) {
    case 0: { // slice
      const std::size_t begin = in.below(unsigned(dimSize) + 2),
                        end = in.below(unsigned(dimSize) + 2);
      const bool ok = dimOk && begin <= end && end <= dimSize;
      Shape s = m.shape;
      if (ok)
        s[dim] = end - begin;
      const Model next = ok ? m.gather(s,
                                       [&](std::vector<std::size_t> i) {
                                         i[dim] += begin;
                                         return i;
                                       })
                            : m;
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.slice(begin, end, dim); }, history,
          "slice(" + std::to_string(begin) + "," + std::to_string(end) + "," + d + ")");
      break;
    }
    case 1: { // reshape, to a divisor split or to an arbitrary shape
      const std::size_t n = m.elements.size();
      Shape s;
      if (in.flag() && n > 0) {
        std::size_t first = 1 + in.below(unsigned(std::min<std::size_t>(n, 64)));
        while (n % first)
          --first;
        s = {first, n / first};
      } else {
        for (unsigned r = 0, rr = in.below(4); r < rr; ++r)
          s.push_back(in.below(6));
      }
      const bool ok = product(s) == n;
      std::string what = "reshape({";
      for (std::size_t x : s)
        what += std::to_string(x) + ",";
      what += "})";
      Model next = m;
      next.shape = s;
      apply(
          t, m, ok, ok ? next : m, [&](const Tensor &x) { return x.reshape(s); }, history, what);
      break;
    }
    case 2: { // dimShuffle by a permutation, or by a list that is not one
      std::vector<unsigned> perm(rank);
      std::iota(perm.begin(), perm.end(), 0u);
      for (unsigned i = rank; i > 1; --i)
        std::swap(perm[i - 1], perm[in.below(i)]);
      if (rank > 0 && in.below(8) == 0)
        perm[in.below(rank)] = in.below(rank + 1); // perhaps a repeat or out of range
      std::vector<unsigned> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      bool ok = true;
      for (unsigned i = 0; i < rank; ++i)
        ok &= sorted[i] == i;
      Shape s(rank);
      for (unsigned i = 0; ok && i < rank; ++i)
        s[i] = m.shape[perm[i]];
      const Model next = ok ? m.gather(s,
                                       [&](const std::vector<std::size_t> &i) {
                                         std::vector<std::size_t> src(rank);
                                         for (unsigned k = 0; k < rank; ++k)
                                           src[perm[k]] = i[k];
                                         return src;
                                       })
                            : m;
      std::string what = "dimShuffle({";
      for (unsigned x : perm)
        what += std::to_string(x) + ",";
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.dimShuffle(perm); }, history,
          what + "})");
      break;
    }
    case 3: { // reverse
      const Model next = dimOk ? m.gather(m.shape,
                                          [&](std::vector<std::size_t> i) {
                                            i[dim] = dimSize - 1 - i[dim];
                                            return i;
                                          })
                               : m;
      apply(
          t, m, dimOk, next, [&](const Tensor &x) { return x.reverse(dim); }, history,
          "reverse(" + d + ")");
      break;
    }
    case 4: { // subSample
      const unsigned stride = in.below(4);
      const bool ok = dimOk && stride > 0;
      Shape s = m.shape;
      if (ok)
        s[dim] = (dimSize + stride - 1) / stride;
      const Model next = ok ? m.gather(s,
                                       [&](std::vector<std::size_t> i) {
                                         i[dim] *= stride;
                                         return i;
                                       })
                            : m;
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.subSample(stride, dim); }, history,
          "subSample(" + std::to_string(stride) + "," + d + ")");
      break;
    }
    case 5:   // broadcast
    case 6: { // upsample (REPEAT)
      const unsigned factor = in.below(4);
      if (m.elements.size() * factor > kMaxElements)
        break;
      Shape s = m.shape;
      if (dimOk)
        s[dim] *= factor;
      const bool up = op == 6;
      const Model next = dimOk ? m.gather(s,
                                          [&](std::vector<std::size_t> i) {
                                            i[dim] = up ? i[dim] / factor : i[dim] % dimSize;
                                            return i;
                                          })
                               : m;
      apply(
          t, m, dimOk, next,
          [&](const Tensor &x) { return up ? x.upsample(factor, dim) : x.broadcast(factor, dim); },
          history,
          std::string(up ? "upsample(" : "broadcast(") + std::to_string(factor) + "," + d + ")");
      break;
    }
    case 7: { // expand
      const std::size_t pos = in.below(rank + 2);
      const bool ok = pos <= rank && rank < 6;
      if (!ok && pos <= rank)
        break;
      Model next = m;
      next.shape.insert(next.shape.begin() + std::ptrdiff_t(std::min<std::size_t>(pos, rank)), 1);
      apply(
          t, m, ok, ok ? next : m, [&](const Tensor &x) { return x.expand({pos}); }, history,
          "expand({" + std::to_string(pos) + "})");
      break;
    }
    case 8: { // squeeze
      const bool ok = dimOk && dimSize == 1;
      Model next = m;
      if (ok)
        next.shape.erase(next.shape.begin() + dim);
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.squeeze({dim}); }, history,
          "squeeze({" + d + "})");
      break;
    }
    case 9: { // concat with itself, reversed, or with part of b of the same shape
      const unsigned kind = in.below(3);
      Tensor other;
      Model otherModel = m;
      if (kind == 1 && dimOk) {
        other = t.reverse(dim);
        otherModel = m.gather(m.shape, [&](std::vector<std::size_t> i) {
          i[dim] = dimSize - 1 - i[dim];
          return i;
        });
      } else if (kind == 2 && m.elements.size() <= 256) {
        other = b.slice(0, m.elements.size()).reshape(m.shape);
        for (std::size_t i = 0; i < m.elements.size(); ++i)
          otherModel.elements[i] = {bId, i};
      } else {
        other = t;
      }
      if (m.elements.size() * 2 > kMaxElements)
        break;
      Shape s = m.shape;
      if (dimOk)
        s[dim] *= 2;
      Model next = m;
      if (dimOk && dimSize == 0) {
        next = Model{s, {}};
      } else if (dimOk) {
        // Concatenation along dim: row-major interleave of the two at that dimension.
        Model both{m.shape, m.elements};
        both.shape.insert(both.shape.begin(), 2);
        both.elements.insert(both.elements.end(), otherModel.elements.begin(),
                             otherModel.elements.end());
        next = both.gather(s, [&](const std::vector<std::size_t> &i) {
          std::vector<std::size_t> src(i);
          const std::size_t which = i[dim] / dimSize;
          src[dim] = i[dim] % dimSize;
          src.insert(src.begin(), which);
          return src;
        });
      }
      apply(
          t, m, dimOk, next, [&](const Tensor &x) { return concat(x, other, dim); }, history,
          "concat(" + std::to_string(kind) + "," + d + ")");
      break;
    }
    case 10: { // operator[]
      const std::size_t i = in.below(rank ? unsigned(m.shape[0]) + 1 : 2);
      const bool ok = rank > 0 && i < m.shape[0];
      Shape s = ok ? Shape(m.shape.begin() + 1, m.shape.end()) : m.shape;
      const Model next = ok ? m.gather(s,
                                       [&](std::vector<std::size_t> idx) {
                                         idx.insert(idx.begin(), i);
                                         return idx;
                                       })
                            : m;
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x[i]; }, history,
          "[" + std::to_string(i) + "]");
      break;
    }
    case 11: { // flatten(start, end)
      const unsigned start = in.below(rank + 1), end = in.below(rank + 2);
      const bool ok = start < end && end <= rank;
      Model next = m;
      if (ok) {
        Shape s(m.shape.begin(), m.shape.begin() + start);
        s.push_back(product(Shape(m.shape.begin() + start, m.shape.begin() + end)));
        s.insert(s.end(), m.shape.begin() + end, m.shape.end());
        next.shape = s;
      }
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.flatten(start, end); }, history,
          "flatten(" + std::to_string(start) + "," + std::to_string(end) + ")");
      break;
    }
    case 12: { // dimRoll
      const unsigned to = in.below(rank + 1);
      const bool ok = dimOk && to < rank;
      std::vector<unsigned> order(rank);
      std::iota(order.begin(), order.end(), 0u);
      if (ok) {
        order.erase(order.begin() + dim);
        order.insert(order.begin() + to, dim);
      }
      Shape s(rank);
      for (unsigned k = 0; k < rank; ++k)
        s[k] = m.shape[order[k]];
      const Model next = ok ? m.gather(s,
                                       [&](const std::vector<std::size_t> &i) {
                                         std::vector<std::size_t> src(rank);
                                         for (unsigned k = 0; k < rank; ++k)
                                           src[order[k]] = i[k];
                                         return src;
                                       })
                            : m;
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.dimRoll(dim, to); }, history,
          "dimRoll(" + d + "," + std::to_string(to) + ")");
      break;
    }
    default: { // transpose
      const bool ok = rank == 2;
      const Model next = ok ? m.gather({m.shape.size() == 2 ? m.shape[1] : 0, ok ? m.shape[0] : 0},
                                       [](const std::vector<std::size_t> &i) {
                                         return std::vector<std::size_t>{i[1], i[0]};
                                       })
                            : m;
      apply(
          t, m, ok, next, [&](const Tensor &x) { return x.transpose(); }, history, "transpose()");
      break;
    }
    }
  }
  return 0;
}
