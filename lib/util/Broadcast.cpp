#include <aspen/Error.hpp>
#include <aspen/util/Broadcast.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace aspen::util {

namespace {
std::string shapeText(const std::vector<std::size_t> &s) { return fmt::format("{{{}}}", fmt::join(s, ",")); }
} // namespace

std::vector<std::size_t> broadcastShape(const std::vector<std::vector<std::size_t>> &shapes) {
  std::size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  std::vector<std::size_t> result(rank, 1);
  for (const auto &s : shapes)
    for (std::size_t i = 0; i < s.size(); ++i) {
      std::size_t &r = result[rank - s.size() + i];
      const std::size_t d = s[i];
      if (d != r && d != 1 && r != 1) {
        std::vector<std::string> all;
        for (const auto &x : shapes)
          all.push_back(shapeText(x));
        throw shape_error(fmt::format("shapes {} do not broadcast: dimension {} from the end is "
                                      "{} in one and {} in another",
                                      fmt::join(all, " and "), s.size() - i, r, d));
      }
      if (r == 1)
        r = d;
    }
  return result;
}

void broadcastToMatch(Tensor &t, ArrayRef<std::size_t> shape) {
  const std::vector<std::size_t> target = shape.vec();
  const std::vector<std::size_t> own = t.shape();
  if (broadcastShape({own, target}) != target)
    throw shape_error(fmt::format("tensor {} of shape {} does not broadcast to shape {}",
                                  t.getDebugStr(), shapeText(own), shapeText(target)));
  Tensor result = t;
  if (own.size() < target.size())
    result = result.expand(std::vector<std::size_t>(target.size() - own.size(), 0));
  for (unsigned d = 0; d < target.size(); ++d)
    if (result.dim(d) != target[d])
      result = result.broadcast(static_cast<unsigned>(target[d]), d); // size 1 -> target[d]
  t = result;
}

void broadcastToMatch(Tensor &a, Tensor &b) {
  const auto shape = broadcastShape({a.shape(), b.shape()});
  broadcastToMatch(a, shape);
  broadcastToMatch(b, shape);
}

void broadcastToMatch(Tensor &a, Tensor &b, Tensor &c) {
  const auto shape = broadcastShape({a.shape(), b.shape(), c.shape()});
  broadcastToMatch(a, shape);
  broadcastToMatch(b, shape);
  broadcastToMatch(c, shape);
}

Tensor duplicate(Graph &graph, const Tensor &t, program::Sequence &prog, const DebugContext &debug,
                 TensorCloneMethod method) {
  Tensor copy = graph.clone(t, debug, method);
  prog.add(program::Copy(t, copy, false, debug));
  return copy;
}

Tensor cloneN(Graph &graph, const Tensor &t, unsigned N, const DebugContext &debug,
              TensorCloneMethod method) {
  if (N == 0)
    throw shape_error(fmt::format("cloneN of {}: N must be at least 1", t.getDebugStr()));
  std::vector<Tensor> clones;
  for (unsigned i = 0; i < N; ++i)
    clones.push_back(graph.clone(t, {debug, std::to_string(i)}, method).expand({0}));
  return concat(clones, 0);
}

} // namespace aspen::util
