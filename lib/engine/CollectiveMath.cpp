// The collectives' arithmetic (CollectiveMath.hpp).
#include "CollectiveMath.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace aspen::detail::collective {

namespace {

using collectives::CollectiveOperator;

// a op b, for the operators that combine two values (ADD, MUL, MIN, MAX, the logical ones;
// SQUARE_ADD and MEAN add). Integers wrap (unsigned arithmetic).
template <class T> T combineTwo(CollectiveOperator op, T a, T b) {
  switch (op) {
  case CollectiveOperator::MUL:
    if constexpr (std::is_integral_v<T>)
      return T(std::make_unsigned_t<T>(a) * std::make_unsigned_t<T>(b));
    else
      return a * b;
  case CollectiveOperator::MIN:
    return std::min(a, b);
  case CollectiveOperator::MAX:
    return std::max(a, b);
  case CollectiveOperator::LOGICAL_AND:
    return T(a && b);
  case CollectiveOperator::LOGICAL_OR:
    return T(a || b);
  default:
    if constexpr (std::is_integral_v<T>)
      return T(std::make_unsigned_t<T>(a) + std::make_unsigned_t<T>(b));
    else
      return a + b;
  }
}

template <class T> T squared(T v) {
  if constexpr (std::is_integral_v<T>)
    return T(std::make_unsigned_t<T>(v) * std::make_unsigned_t<T>(v));
  else
    return v * v;
}

// Every replica's values of type Stored, combined in replica order in type Acc (float for
// HALF), element by element: out[i] = in[0][i] op in[1][i] op ...
template <class Stored, class Acc>
void combineAll(CollectiveOperator op, const std::vector<const std::uint8_t *> &in,
                std::size_t elements, std::uint8_t *out) {
  const auto at = [](const std::uint8_t *p, std::size_t i) {
    Stored v;
    std::memcpy(&v, p + i * sizeof(Stored), sizeof(Stored));
    return Acc(v);
  };
  for (std::size_t i = 0; i < elements; ++i) {
    Acc acc = at(in[0], i);
    if (op == CollectiveOperator::SQUARE_ADD)
      acc = squared(acc);
    for (std::size_t r = 1; r < in.size(); ++r) {
      const Acc v = at(in[r], i);
      acc = combineTwo(op, acc, op == CollectiveOperator::SQUARE_ADD ? squared(v) : v);
    }
    if constexpr (!std::is_integral_v<Acc>)
      if (op == CollectiveOperator::MEAN)
        acc = acc / Acc(in.size());
    const Stored result = Stored(acc);
    std::memcpy(out + i * sizeof(Stored), &result, sizeof(Stored));
  }
}

Bytes reduce(const CollectiveShape &shape, const std::vector<Bytes> &in) {
  std::vector<const std::uint8_t *> pointers;
  for (const Bytes &b : in)
    pointers.push_back(b.data());
  Bytes out(in.front().size());
  reduceInto(shape, pointers, out.size() / shape.type.size(), out.data());
  return out;
}

} // namespace

bool direct(const CompiledKernel &k) {
  return (k.kind == KernelKind::AllReduce && elementwise(k)) || k.kind == KernelKind::AllGather;
}

void reduceInto(const CollectiveShape &shape, const std::vector<const std::uint8_t *> &in,
                std::size_t elements, std::uint8_t *out) {
  const auto op = CollectiveOperator(shape.op);
  if (shape.type == FLOAT)
    return combineAll<float, float>(op, in, elements, out);
  if (shape.type == HALF)
    return combineAll<half, float>(op, in, elements, out);
  if (shape.type == INT)
    return combineAll<std::int32_t, std::int32_t>(op, in, elements, out);
  if (shape.type == UNSIGNED_INT)
    return combineAll<std::uint32_t, std::uint32_t>(op, in, elements, out);
  if (shape.type == BOOL)
    return combineAll<std::uint8_t, std::uint8_t>(op, in, elements, out);
  throw internal_error("a collective of type " + shape.type.toString());
}

bool exchanges(const CompiledKernel &k) {
  return k.kind != KernelKind::AllReduce ||
         CollectiveOperator(k.collective.op) != CollectiveOperator::LOCAL;
}

bool elementwise(const CompiledKernel &k) {
  return exchanges(k) &&
         (k.kind == KernelKind::AllReduce || k.kind == KernelKind::ReduceScatter);
}


Bytes whole(const CompiledKernel &k, const std::vector<Bytes> &contributions) {
  if (k.kind == KernelKind::AllGather) { // replica order, one after the other
    Bytes all;
    for (const Bytes &b : contributions)
      all.insert(all.end(), b.begin(), b.end());
    return all;
  }
  if (k.kind == KernelKind::Broadcast)
    return contributions.at(k.collective.root);
  return reduce(k.collective, contributions);
}

Bytes resultOf(const CompiledKernel &k, unsigned replica, unsigned replicas, Bytes whole) {
  if (k.kind != KernelKind::ReduceScatter)
    return whole;
  // This replica's piece, zero past the data's end.
  const CollectiveShape &shape = k.collective;
  const std::size_t bytes = shape.type.size();
  const std::size_t piece = shape.resultElements(k.kind, replicas),
                    first = std::size_t(replica) * piece;
  Bytes own(piece * bytes, 0);
  if (first < shape.elements)
    std::memcpy(own.data(), whole.data() + first * bytes,
                std::min(piece, std::size_t(shape.elements) - first) * bytes);
  return own;
}

std::string describe(const CompiledKernel &k) {
  std::string line = "'" + k.name + "' " + kernelKindName(k.kind);
  if (k.kind == KernelKind::AllReduce || k.kind == KernelKind::ReduceScatter)
    line += std::string(" ") + collectives::toString(CollectiveOperator(k.collective.op));
  line += " " + std::to_string(k.collective.elements) + " " + k.collective.type.toString();
  if (k.kind == KernelKind::Broadcast)
    line += " from replica " + std::to_string(k.collective.root);
  return line;
}

} // namespace aspen::detail::collective
