// Tensor views checked against a naive model: an explicit (variable, byte offset) per element,
// with every view implemented by index arithmetic on that list. Random chains of views compare
// every element after every step; hand-computed cases pin down regions and queries.
#include <catch2/catch.hpp>

#include "core/TensorRegions.hpp"

#include <aspen/Graph.hpp>

#include <algorithm>
#include <functional>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>

using namespace aspen;
using detail::VarRegion;

namespace {

using Shape = std::vector<std::size_t>;
using Index = std::vector<std::size_t>;

struct Elem {
  unsigned var;
  std::int64_t byte;
  friend bool operator==(const Elem &, const Elem &) = default;
  friend auto operator<=>(const Elem &, const Elem &) = default;
};

std::string shapeText(const Shape &s) {
  std::string text;
  for (std::size_t n : s)
    text += (text.empty() ? "" : ",") + std::to_string(n);
  return "{" + text + "}";
}

std::size_t count(const Shape &s) {
  return std::accumulate(s.begin(), s.end(), std::size_t{1}, std::multiplies<>());
}

Index unravel(std::size_t flat, const Shape &shape) {
  Index idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    idx[d] = flat % shape[d];
    flat /= shape[d];
  }
  return idx;
}

std::size_t ravel(const Index &idx, const Shape &shape) {
  std::size_t flat = 0;
  for (std::size_t d = 0; d < shape.size(); ++d)
    flat = flat * shape[d] + idx[d];
  return flat;
}

// The naive model of a tensor: its shape, element size and each element in row-major order.
struct Model {
  Shape shape;
  std::size_t elemSize = 4;
  std::vector<Elem> elems;

  // A view whose element at index i is this model's element at source(i).
  Model view(Shape newShape, const std::function<Index(const Index &)> &source) const {
    Model m{newShape, elemSize, {}};
    for (std::size_t f = 0; f < count(newShape); ++f)
      m.elems.push_back(elems[ravel(source(unravel(f, newShape)), shape)]);
    return m;
  }

  Model slice(std::size_t b, std::size_t e, unsigned dim) const {
    Shape s = shape;
    s[dim] = e - b;
    return view(s, [&](Index i) { i[dim] += b; return i; });
  }
  Model index0(std::size_t i) const {
    return view(Shape(shape.begin() + 1, shape.end()), [&](Index idx) {
      idx.insert(idx.begin(), i);
      return idx;
    });
  }
  Model reshape(const Shape &s) const { return {s, elemSize, elems}; }
  Model permute(const std::vector<unsigned> &perm) const {
    Shape s(perm.size());
    for (unsigned i = 0; i < perm.size(); ++i)
      s[i] = shape[perm[i]];
    return view(s, [&](const Index &idx) {
      Index src(perm.size());
      for (unsigned i = 0; i < perm.size(); ++i)
        src[perm[i]] = idx[i];
      return src;
    });
  }
  Model broadcast(unsigned n, unsigned dim) const {
    Shape s = shape;
    s[dim] *= n;
    return view(s, [&](Index i) { i[dim] %= shape[dim]; return i; });
  }
  Model reverse(unsigned dim) const {
    return view(shape, [&](Index i) { i[dim] = shape[dim] - 1 - i[dim]; return i; });
  }
  Model subSample(unsigned stride, unsigned dim) const {
    Shape s = shape;
    s[dim] = (s[dim] + stride - 1) / stride;
    return view(s, [&](Index i) { i[dim] *= stride; return i; });
  }
  Model upsample(unsigned scale, unsigned dim) const {
    Shape s = shape;
    s[dim] *= scale;
    return view(s, [&](Index i) { i[dim] /= scale; return i; });
  }
  // Each element splits into elemSize/newSize elements, or groups of newSize/elemSize
  // consecutive bytes merge into one (nothing when they are not consecutive and aligned).
  std::optional<Model> reinterpret(std::size_t newSize) const {
    Model m{shape, newSize, {}};
    if (newSize <= elemSize) {
      const std::size_t k = elemSize / newSize;
      m.shape.back() *= k;
      for (const Elem &e : elems)
        for (std::size_t j = 0; j < k; ++j)
          m.elems.push_back({e.var, e.byte + static_cast<std::int64_t>(j * newSize)});
      return m;
    }
    const std::size_t k = newSize / elemSize;
    if (shape.back() % k != 0)
      return std::nullopt;
    m.shape.back() /= k;
    for (std::size_t g = 0; g < elems.size(); g += k) {
      if (elems[g].byte % static_cast<std::int64_t>(newSize) != 0)
        return std::nullopt;
      for (std::size_t j = 1; j < k; ++j)
        if (elems[g + j] != Elem{elems[g].var, elems[g].byte + static_cast<std::int64_t>(j * elemSize)})
          return std::nullopt;
      m.elems.push_back(elems[g]);
    }
    return m;
  }

  bool isContiguous() const {
    for (std::size_t i = 0; i < elems.size(); ++i)
      if (elems[i] != Elem{elems[0].var, elems[0].byte + static_cast<std::int64_t>(i * elemSize)})
        return false;
    return !elems.empty();
  }
  bool containsAliases() const {
    std::set<Elem> seen(elems.begin(), elems.end());
    return seen.size() != elems.size();
  }
  bool uses(unsigned var) const {
    return std::any_of(elems.begin(), elems.end(), [var](const Elem &e) { return e.var == var; });
  }
};

Model concatModels(const std::vector<Model> &parts, unsigned dim) {
  Shape s = parts[0].shape;
  s[dim] = 0;
  for (const Model &p : parts)
    s[dim] += p.shape[dim];
  Model m{s, parts[0].elemSize, {}};
  for (std::size_t f = 0; f < count(s); ++f) {
    Index idx = unravel(f, s);
    std::size_t part = 0;
    while (idx[dim] >= parts[part].shape[dim])
      idx[dim] -= parts[part++].shape[dim];
    m.elems.push_back(parts[part].elems[ravel(idx, parts[part].shape)]);
  }
  return m;
}

// Where dimShufflePartial sends dimensions, computed by inserting the moved dimensions, in
// increasing destination order, into the list of the others.
std::vector<unsigned> partialPerm(unsigned rank, const std::vector<unsigned> &src,
                                  const std::vector<unsigned> &dst) {
  std::vector<unsigned> others;
  for (unsigned d = 0; d < rank; ++d)
    if (std::find(src.begin(), src.end(), d) == src.end())
      others.push_back(d);
  std::vector<std::pair<unsigned, unsigned>> moves;
  for (std::size_t i = 0; i < src.size(); ++i)
    moves.push_back({dst[i], src[i]});
  std::sort(moves.begin(), moves.end());
  for (auto [to, from] : moves)
    others.insert(others.begin() + to, from);
  return others;
}

Model variableModel(unsigned var, const Shape &shape, std::size_t elemSize = 4) {
  Model m{shape, elemSize, {}};
  for (std::size_t i = 0; i < count(shape); ++i)
    m.elems.push_back({var, static_cast<std::int64_t>(i * elemSize)});
  return m;
}

unsigned varOf(const Tensor &t) { return detail::flatRegions(t)[0].var; }

std::vector<Elem> elementsOf(const Tensor &t) {
  std::vector<Elem> elems;
  for (const VarRegion &r : detail::flatRegions(t)) {
    REQUIRE(r.count > 0);
    for (std::size_t k = 0; k < r.count; ++k)
      elems.push_back({r.var, r.byteOffset + static_cast<std::int64_t>(k) * r.byteStride});
  }
  return elems;
}

void checkAgainstModel(const Tensor &t, const Model &m, const std::vector<Tensor> &variables) {
  REQUIRE(t.shape() == m.shape);
  REQUIRE(t.rank() == m.shape.size());
  REQUIRE(t.numElements() == m.elems.size());
  REQUIRE(t.elementType().size() == m.elemSize);
  REQUIRE(elementsOf(t) == m.elems);
  REQUIRE(t.isContiguous() == m.isContiguous());
  REQUIRE(t.containsAliases() == m.containsAliases());
  REQUIRE(t.numRegions() <= std::max<std::size_t>(m.elems.size(), 1));
  for (const Tensor &v : variables)
    REQUIRE(t.intersectsWith(v) == m.uses(varOf(v)));
}

Type typeOfSize(std::size_t size) {
  switch (size) {
  case 1: return CHAR;
  case 2: return HALF;
  case 8: return LONGLONG;
  default: return FLOAT;
  }
}

// One random chain of views, applied to a Tensor and to its model side by side.
class RandomChain {
public:
  explicit RandomChain(unsigned seed) : rng_(seed), graph_(Target::createGeneric(4)) {}

  void run() {
    start();
    const int steps = pick(1, 8);
    for (int step = 0; step < steps; ++step) {
      applyRandomView();
      INFO("step " << step << ": " << log_);
      checkAgainstModel(tensor_, model_, variables_);
    }
  }

private:
  static constexpr std::size_t kMaxElements = 3000;

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  unsigned pickDim() { return static_cast<unsigned>(pick(0, static_cast<int>(model_.shape.size()) - 1)); }
  unsigned rank() const { return static_cast<unsigned>(model_.shape.size()); }

  Shape randomShape(unsigned r) {
    Shape s(r);
    for (auto &n : s)
      n = static_cast<std::size_t>(pick(1, 6));
    return s;
  }

  std::pair<Tensor, Model> newVariable(const Shape &shape) {
    Tensor v = graph_.addVariable(FLOAT, shape, "v" + std::to_string(variables_.size()));
    if (count(shape) == 0) // no elements: no variable element to compare
      return {v, variableModel(0, shape)};
    variables_.push_back(v);
    return {v, variableModel(varOf(v), shape)};
  }

  // A variable, or a concatenation of 2-3 variables along a random dimension.
  void start() {
    const auto r = static_cast<unsigned>(pick(0, 4));
    Shape shape = randomShape(r);
    std::tie(tensor_, model_) = newVariable(shape);
    log_ = "variable " + shapeText(shape);
    if (r > 0 && pick(0, 2) == 0) {
      const unsigned dim = pickDim();
      std::vector<Tensor> tensors{tensor_};
      std::vector<Model> models{model_};
      for (int extra = pick(1, 2); extra > 0; --extra) {
        shape[dim] = static_cast<std::size_t>(pick(1, 4));
        auto [t, m] = newVariable(shape);
        tensors.push_back(t);
        models.push_back(m);
      }
      tensor_ = concat(tensors, dim);
      model_ = concatModels(models, dim);
      log_ += " concat along " + std::to_string(dim);
    }
  }

  void note(const std::string &what) { log_ += " | " + what; }

  void applyRandomView() {
    for (int attempt = 0; attempt < 20; ++attempt)
      if (tryView(pick(0, 18)))
        return;
  }

  // Applies view number `which` if it suits the current shape.
  bool tryView(int which) {
    const Shape &s = model_.shape;
    const std::size_t n = model_.elems.size();
    switch (which) {
    case 0: { // slice along a dimension
      if (rank() == 0) return false;
      const unsigned d = pickDim();
      const auto b = static_cast<std::size_t>(pick(0, static_cast<int>(s[d])));
      const auto e = static_cast<std::size_t>(pick(static_cast<int>(b), static_cast<int>(s[d])));
      note("slice " + std::to_string(b) + "," + std::to_string(e) + " dim " + std::to_string(d));
      set(tensor_.slice(b, e, d), model_.slice(b, e, d));
      return true;
    }
    case 1: { // operator[]
      if (rank() == 0 || s[0] == 0) return false;
      const auto i = static_cast<std::size_t>(pick(0, static_cast<int>(s[0]) - 1));
      note("[" + std::to_string(i) + "]");
      set(tensor_[i], model_.index0(i));
      return true;
    }
    case 2: { // multi-dimensional slice
      Index b(rank()), e(rank());
      Model m = model_;
      for (unsigned d = 0; d < rank(); ++d) {
        b[d] = static_cast<std::size_t>(pick(0, static_cast<int>(s[d])));
        e[d] = static_cast<std::size_t>(pick(static_cast<int>(b[d]), static_cast<int>(s[d])));
        m = m.slice(b[d], e[d], d);
      }
      note("multi-slice");
      set(tensor_.slice(b, e), m);
      return true;
    }
    case 3: { // reshape into a random factorisation
      Shape target;
      std::size_t left = n;
      for (int d = pick(0, 4); d > 0 && left > 1; --d) {
        std::vector<std::size_t> divisors;
        for (std::size_t f = 1; f <= left; ++f)
          if (left % f == 0) divisors.push_back(f);
        const std::size_t f = divisors[static_cast<std::size_t>(pick(0, static_cast<int>(divisors.size()) - 1))];
        target.push_back(f);
        left /= f;
      }
      if (left != 1 || target.empty() || n == 0) target.push_back(left);
      if (n == 0) target = {0};
      std::shuffle(target.begin(), target.end(), rng_);
      note("reshape " + shapeText(target));
      set(tensor_.reshape(target), model_.reshape(target));
      return true;
    }
    case 4: // flatten
      note("flatten");
      set(tensor_.flatten(), model_.reshape({n}));
      return true;
    case 5: { // flatten a range of dimensions
      if (rank() < 2) return false;
      const auto a = static_cast<unsigned>(pick(0, static_cast<int>(rank()) - 2));
      const auto b = static_cast<unsigned>(pick(static_cast<int>(a) + 1, static_cast<int>(rank())));
      Shape target(s.begin(), s.begin() + a);
      target.push_back(count(Shape(s.begin() + a, s.begin() + b)));
      target.insert(target.end(), s.begin() + b, s.end());
      note("flatten " + std::to_string(a) + "," + std::to_string(b));
      set(tensor_.flatten(a, b), model_.reshape(target));
      return true;
    }
    case 6: { // dimShuffle
      std::vector<unsigned> perm(rank());
      std::iota(perm.begin(), perm.end(), 0u);
      std::shuffle(perm.begin(), perm.end(), rng_);
      note("dimShuffle");
      set(tensor_.dimShuffle(perm), model_.permute(perm));
      return true;
    }
    case 7: { // dimShufflePartial
      if (rank() == 0) return false;
      std::vector<unsigned> dims(rank()), dests(rank());
      std::iota(dims.begin(), dims.end(), 0u);
      std::iota(dests.begin(), dests.end(), 0u);
      std::shuffle(dims.begin(), dims.end(), rng_);
      std::shuffle(dests.begin(), dests.end(), rng_);
      const auto k = static_cast<std::size_t>(pick(1, static_cast<int>(rank())));
      dims.resize(k);
      dests.resize(k);
      note("dimShufflePartial");
      set(tensor_.dimShufflePartial(dims, dests), model_.permute(partialPerm(rank(), dims, dests)));
      return true;
    }
    case 8: { // dimRoll
      if (rank() == 0) return false;
      const unsigned from = pickDim(), to = pickDim();
      std::vector<unsigned> perm(rank());
      std::iota(perm.begin(), perm.end(), 0u);
      perm.erase(perm.begin() + from);
      perm.insert(perm.begin() + to, from);
      note("dimRoll " + std::to_string(from) + "," + std::to_string(to));
      set(tensor_.dimRoll(from, to), model_.permute(perm));
      return true;
    }
    case 9: // transpose
      if (rank() != 2) return false;
      note("transpose");
      set(tensor_.transpose(), model_.permute({1, 0}));
      return true;
    case 10: { // expand
      if (rank() >= 5) return false;
      const auto pos = static_cast<std::size_t>(pick(0, static_cast<int>(rank())));
      Shape target = s;
      target.insert(target.begin() + pos, 1);
      note("expand " + std::to_string(pos));
      set(tensor_.expand({pos}), model_.reshape(target));
      return true;
    }
    case 11: { // squeeze every dimension of size 1
      std::vector<std::size_t> ones;
      Shape target;
      for (std::size_t d = 0; d < rank(); ++d) {
        if (s[d] == 1)
          ones.push_back(d);
        else
          target.push_back(s[d]);
      }
      if (ones.empty()) return false;
      note("squeeze");
      set(tensor_.squeeze(ones), model_.reshape(target));
      return true;
    }
    case 12: { // broadcast
      if (rank() == 0) return false;
      const unsigned d = pickDim();
      const auto times = static_cast<unsigned>(pick(1, 3));
      if (n * times > kMaxElements) return false;
      note("broadcast " + std::to_string(times) + " dim " + std::to_string(d));
      set(tensor_.broadcast(times, d), model_.broadcast(times, d));
      return true;
    }
    case 13: { // reverse
      if (rank() == 0) return false;
      const unsigned d = pickDim();
      note("reverse " + std::to_string(d));
      set(tensor_.reverse(d), model_.reverse(d));
      return true;
    }
    case 14: { // subSample
      if (rank() == 0) return false;
      const unsigned d = pickDim();
      const auto stride = static_cast<unsigned>(pick(1, 4));
      note("subSample " + std::to_string(stride) + " dim " + std::to_string(d));
      set(tensor_.subSample(stride, d), model_.subSample(stride, d));
      return true;
    }
    case 15: { // upsample
      if (rank() == 0) return false;
      const unsigned d = pickDim();
      const auto scale = static_cast<unsigned>(pick(1, 3));
      if (n * scale > kMaxElements) return false;
      note("upsample " + std::to_string(scale) + " dim " + std::to_string(d));
      set(tensor_.upsample(scale, d), model_.upsample(scale, d));
      return true;
    }
    case 16: { // reinterpret
      if (rank() == 0) return false;
      const std::size_t size = std::size_t{1} << pick(0, 3);
      if (n * model_.elemSize / size > kMaxElements) return false;
      note("reinterpret to " + std::to_string(size) + " bytes");
      const std::optional<Model> m = model_.reinterpret(size);
      if (!m) {
        REQUIRE_THROWS_AS(tensor_.reinterpret(typeOfSize(size)), type_error);
        return true;
      }
      set(tensor_.reinterpret(typeOfSize(size)), *m);
      return true;
    }
    case 17: { // concat with a view of itself (aliases) or a new variable
      if (rank() == 0 || 2 * n > kMaxElements) return false;
      const unsigned d = pickDim();
      if (pick(0, 1) == 0) {
        note("concat with itself reversed along " + std::to_string(d));
        set(concat(tensor_, tensor_.reverse(d), d), concatModels({model_, model_.reverse(d)}, d));
      } else if (model_.elemSize == 4) {
        Shape shape = s;
        shape[d] = static_cast<std::size_t>(pick(1, 3));
        auto [v, m] = newVariable(shape);
        note("concat with new variable along " + std::to_string(d));
        set(concat(v, tensor_, d), concatModels({m, model_}, d));
      }
      return true;
    }
    case 18: { // slices of a sequence of intervals, concatenated
      if (rank() == 0 || s[0] == 0) return false;
      const std::size_t half = s[0] / 2;
      const std::vector<std::vector<Interval>> seqs{{Interval(half, s[0]), Interval(0, half)}};
      note("slices rotate");
      set(tensor_.slices(seqs, 0)[0],
          concatModels({model_.slice(half, s[0], 0), model_.slice(0, half, 0)}, 0));
      return true;
    }
    }
    return false;
  }

  void set(const Tensor &t, const Model &m) {
    tensor_ = t;
    model_ = m;
  }

  std::mt19937 rng_;
  Graph graph_;
  std::vector<Tensor> variables_;
  Tensor tensor_;
  Model model_;
  std::string log_;
};

std::vector<VarRegion> regions(const Tensor &t) { return detail::flatRegions(t); }

} // namespace

TEST_CASE("random chains of views match the naive model", "[tensor][views]") {
  for (unsigned seed = 1; seed <= 1000; ++seed) {
    INFO("seed " << seed);
    RandomChain(seed).run();
  }
}

TEST_CASE("transpose of a 2x3 matrix visits columns", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {2, 3}, "m");
  const unsigned var = varOf(v);
  Tensor t = v.transpose();
  REQUIRE(t.shape() == Shape{3, 2});
  REQUIRE(elementsOf(t) == std::vector<Elem>{{var, 0}, {var, 12}, {var, 4},
                                             {var, 16}, {var, 8}, {var, 20}});
  REQUIRE(regions(t) == std::vector<VarRegion>{{var, 0, 12, 2}, {var, 4, 12, 2}, {var, 8, 12, 2}});
  REQUIRE_FALSE(t.isContiguous());
  REQUIRE(t.transpose() == v);
}

TEST_CASE("a contiguous variable is one region", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {3, 4, 5}, "v");
  REQUIRE(regions(v) == std::vector<VarRegion>{{varOf(v), 0, 4, 60}});
  REQUIRE(v.isContiguous());
  REQUIRE(v.numRegions() == 1);
  REQUIRE(v[1].isContiguous());
  REQUIRE(regions(v[1]) == std::vector<VarRegion>{{varOf(v), 80, 4, 20}});
}

TEST_CASE("a column of a row-major matrix is one strided region", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor m = g.addVariable(FLOAT, {4, 5}, "m");
  const unsigned var = varOf(m);
  const std::vector<VarRegion> column{{var, 8, 20, 4}};
  REQUIRE(regions(m.slice(2, 3, 1)) == column);
  REQUIRE(regions(m.transpose()[2]) == column);
  REQUIRE(m.slice(2, 3, 1).getVarRegions().size() == 4);
  REQUIRE(m.slice(2, 3, 1).getVarRegions()[1].interval == Interval(7, 8));
  REQUIRE(m.slice(1, 3).getVarRegions().size() == 1);
  REQUIRE(m.slice(1, 3).getVarRegions()[0].interval == Interval(5, 15));
}

TEST_CASE("broadcasting a scalar gives stride 0 and aliases", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor s = g.addVariable(FLOAT, {}, "s");
  Tensor b = s.expand({0}).broadcast(7, 0);
  REQUIRE(b.shape() == Shape{7});
  REQUIRE(regions(b) == std::vector<VarRegion>{{varOf(s), 0, 0, 7}});
  REQUIRE(b.containsAliases());
  REQUIRE_FALSE(b.isParallelWriteable());
  REQUIRE_FALSE(s.containsAliases());
  REQUIRE(s.isParallelWriteable());
}

TEST_CASE("broadcast of a longer dimension repeats the tensor", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {2}, "v");
  const unsigned var = varOf(v);
  REQUIRE(elementsOf(v.broadcast(3, 0)) ==
          std::vector<Elem>{{var, 0}, {var, 4}, {var, 0}, {var, 4}, {var, 0}, {var, 4}});
  REQUIRE(v.broadcast(3, 0) == concat({v, v, v}));
  REQUIRE(v.broadcast(3, 0).containsAliases());
}

TEST_CASE("reverse, subSample and upsample", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {10}, "v");
  const unsigned var = varOf(v);
  REQUIRE(regions(v.reverse(0)) == std::vector<VarRegion>{{var, 36, -4, 10}});
  REQUIRE(regions(v.subSample(3, 0)) == std::vector<VarRegion>{{var, 0, 12, 4}});
  REQUIRE(regions(v.slice(0, 3).upsample(2, 0)) ==
          std::vector<VarRegion>{{var, 0, 0, 2}, {var, 4, 0, 2}, {var, 8, 0, 2}});
  REQUIRE(v.reverse(0).reverse(0) == v);
}

TEST_CASE("reshape of a sub-block gives one region per row", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor m = g.addVariable(FLOAT, {4, 6}, "m");
  const unsigned var = varOf(m);
  Tensor block = m.slice({1, 1}, {3, 5});
  REQUIRE(block.shape() == Shape{2, 4});
  REQUIRE(regions(block.flatten()) == std::vector<VarRegion>{{var, 28, 4, 4}, {var, 52, 4, 4}});
  REQUIRE(block.flatten().reshape({2, 4}) == block);
  REQUIRE(m.reshape({2, 3, 4}).reshapePartial(1, 3, {12}) == m.reshape({2, 12}));
  REQUIRE(m.flatten(0, 2) == m.flatten());
}

TEST_CASE("concat of neighbouring slices is the original view", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {5, 3}, "v");
  Tensor joined = concat(v.slice(0, 2), v.slice(2, 5));
  REQUIRE(joined == v);
  REQUIRE(joined.isContiguous());
  Tensor columns = concat({v.slice(0, 1, 1), v.slice(1, 3, 1)}, 1);
  REQUIRE(columns == v);
  REQUIRE(columns.numRegions() == 1);
  REQUIRE(append(v.slice(0, 4), v[4], 0) == v);
}

TEST_CASE("dimension shuffles", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {2, 3, 4}, "v");
  REQUIRE(v.dimRoll(2, 0).shape() == Shape{4, 2, 3});
  REQUIRE(v.dimRoll(2, 0) == v.dimShuffle({2, 0, 1}));
  REQUIRE(v.dimRoll(0, 2).shape() == Shape{3, 4, 2});
  REQUIRE(v.dimShufflePartial({0}, {2}) == v.dimShuffle({1, 2, 0}));
  // Poplar's rule: positions in the original tensor, a repeated index adds several dimensions.
  REQUIRE(v.expand({0, 2}).shape() == Shape{1, 2, 3, 1, 4});
  REQUIRE(v.expand({0, 2}).squeeze({0, 3}) == v);
  REQUIRE(v.expand({3, 1, 1}).shape() == Shape{2, 1, 1, 3, 4, 1});
  REQUIRE(v.expand({3, 1, 1}).squeeze({1, 2, 5}) == v);
  REQUIRE(v.index({1, 2}) == v[1][2]);
  REQUIRE(v.index({1, 2}).shape() == Shape{4});
  REQUIRE(v[1][2][3].rank() == 0);
  REQUIRE(regions(v[1][2][3]) == std::vector<VarRegion>{{varOf(v), (12 + 8 + 3) * 4, 4, 1}});
}

TEST_CASE("reinterpret scales the innermost dimension", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {2, 4}, "v");
  const unsigned var = varOf(v);
  REQUIRE(v.reinterpret(INT).elementType() == INT);
  REQUIRE(v.reinterpret(INT).shape() == Shape{2, 4});
  Tensor halves = v.reinterpret(HALF);
  REQUIRE(halves.shape() == Shape{2, 8});
  REQUIRE(regions(halves) == std::vector<VarRegion>{{var, 0, 2, 16}});
  Tensor wide = v.reinterpret(LONGLONG);
  REQUIRE(wide.shape() == Shape{2, 2});
  REQUIRE(regions(wide) == std::vector<VarRegion>{{var, 0, 8, 4}});
  REQUIRE(halves.reinterpret(FLOAT) == v);
  // A column: every float becomes two consecutive halves.
  REQUIRE(elementsOf(v.slice(0, 1, 1).reinterpret(HALF)) ==
          std::vector<Elem>{{var, 0}, {var, 2}, {var, 16}, {var, 18}});
}

TEST_CASE("aliasing, intersection and constants", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor m = g.addVariable(FLOAT, {4, 6}, "m");
  Tensor other = g.addVariable(FLOAT, {4, 6}, "other");
  REQUIRE_FALSE(m.slice(0, 1, 1).intersectsWith(m.slice(1, 2, 1)));
  REQUIRE(m.slice(0, 1, 1).intersectsWith(m[0]));
  REQUIRE_FALSE(m.flatten().subSample(2, 0).intersectsWith(m.flatten().slice(1, 24).subSample(2, 0)));
  REQUIRE_FALSE(m.intersectsWith(other));
  REQUIRE(m.reinterpret(HALF).slice(1, 2, 1).intersectsWith(m.slice(0, 1, 1)));
  REQUIRE_FALSE(concat(m.slice(0, 1, 1), m.slice(1, 2, 1)).containsAliases());
  REQUIRE(concat(m.slice(0, 2), m.slice(1, 3)).containsAliases());
  Tensor c = g.addConstant(FLOAT, {3}, 1.0f, "ones");
  REQUIRE(c.containsConstant());
  REQUIRE_FALSE(c.isParallelWriteable());
  REQUIRE(concat(m[0].slice(0, 3), c).containsConstant());
  REQUIRE_FALSE(m.containsConstant());
}

TEST_CASE("descriptions name the variables and the shape", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor w = g.addVariable(FLOAT, {4, 8}, "weights");
  Tensor b = g.addVariable(FLOAT, {4, 2}, "bias");
  REQUIRE_THAT(w.getDebugStr(), Catch::Contains("weights") && Catch::Contains("{4,8}"));
  const std::string both = concat(w, b, 1).getDebugStr();
  REQUIRE_THAT(both, Catch::Contains("weights") && Catch::Contains("bias") &&
                         Catch::Contains("{4,10}"));
  REQUIRE_THAT(w.slice(1, 2, 1).getVarStr(), Catch::Contains("weights") && Catch::Contains("[1:33:8]"));
  std::ostringstream os;
  os << w.transpose() << ' ' << Tensor();
  REQUIRE_THAT(os.str(), Catch::Contains("{8,4}") && Catch::Contains("invalid"));
  REQUIRE(w.shapeToString() == "{4,8}");
  REQUIRE(detail::variablesOf(concat(b, w, 1)) == std::vector<unsigned>{varOf(w), varOf(b)});
  REQUIRE(detail::graphOf(w) != nullptr);
  REQUIRE(detail::graphOf(Tensor()) == nullptr);
}

TEST_CASE("operator== compares the element mapping", "[tensor][views]") {
  Graph g(Target::createGeneric(4));
  Tensor v = g.addVariable(FLOAT, {4, 4}, "v");
  REQUIRE(v == v.transpose().transpose());
  REQUIRE_FALSE(v == v.transpose());
  REQUIRE_FALSE(v == v.reinterpret(INT));
  REQUIRE_FALSE(v.flatten() == v);
  REQUIRE(Tensor() == Tensor());
  REQUIRE_FALSE(Tensor() == v);
}

TEST_CASE("views of a 10M-element variable stay a few regions", "[tensor][views][large]") {
  Graph g(Target::createGeneric(4));
  const std::size_t n = 10'000'000;
  Tensor v = g.addVariable(FLOAT, {n}, "big");
  Tensor m = v.reshape({1000, 10000});
  REQUIRE(m.transpose().transpose().numRegions() == 1);
  REQUIRE(m.transpose().transpose() == m);
  REQUIRE(m.slice(10, 990).numRegions() == 1);
  REQUIRE(m.slice(10, 990).isContiguous());
  REQUIRE(m.reshape({100, 10, 10000}).dimShuffle({2, 0, 1}).dimShuffle({1, 2, 0}).flatten().numRegions() == 1);
  REQUIRE(v.reverse(0).reverse(0).numRegions() == 1);
  REQUIRE(v.subSample(2, 0).numRegions() == 1);
  REQUIRE(concat(v.slice(0, n / 2), v.slice(n / 2, n)).numRegions() == 1);
  REQUIRE(m.slice(0, 1, 1).numRegions() == 1); // a column
  REQUIRE(m.slice(0, 100, 1).numRegions() == 1000); // one run per row
  REQUIRE(m.transpose().numRegions() == 10000);     // one run per column
  REQUIRE_FALSE(m.transpose().containsAliases());
  REQUIRE(m.reinterpret(HALF).reinterpret(FLOAT) == m);
}
