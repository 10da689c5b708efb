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

// Integers wrap: they are combined as unsigned values at least as wide as unsigned int, so
// that no promotion to int can overflow (unsigned short * unsigned short would).
template <class T>
using Wrapping =
    std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// a op b, for the operators that combine two values (ADD, MUL, MIN, MAX, the logical ones;
// SQUARE_ADD and MEAN add).
template <class T> T combineTwo(CollectiveOperator op, T a, T b) {
  switch (op) {
  case CollectiveOperator::MUL:
    if constexpr (std::is_integral_v<T>)
      return T(Wrapping<T>(a) * Wrapping<T>(b));
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
      return T(Wrapping<T>(a) + Wrapping<T>(b));
    else
      return a + b;
  }
}

template <class T> T squared(T v) { return combineTwo(CollectiveOperator::MUL, v, v); }

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

// The reduction of the members' contributions (in member order).
Bytes reduce(const CollectiveShape &shape, const std::vector<const Bytes *> &in) {
  std::vector<const std::uint8_t *> pointers;
  for (const Bytes *b : in)
    pointers.push_back(b->data());
  Bytes out(in.front()->size());
  reduceInto(shape, pointers, out.size() / shape.type.size(), out.data());
  return out;
}

Bytes concatenated(const std::vector<const Bytes *> &in) {
  Bytes all;
  for (const Bytes *b : in)
    all.insert(all.end(), b->begin(), b->end());
  return all;
}

// The whole of one group, from its members' contributions in position order.
Bytes groupWhole(const CompiledKernel &k, const std::vector<const Bytes *> &members) {
  switch (k.kind) {
  case KernelKind::AllReduce:
  case KernelKind::ReduceScatter:
    return reduce(k.collective, members);
  case KernelKind::Broadcast:
    return *members.at(k.collective.root);
  default: // AllGather, AllToAll, CrossReplicaCopy (one group of all replicas)
    return concatenated(members);
  }
}

Bytes slice(const Bytes &b, std::size_t offset, std::size_t bytes) {
  return Bytes(b.begin() + std::ptrdiff_t(offset), b.begin() + std::ptrdiff_t(offset + bytes));
}

} // namespace

bool ungrouped(const CompiledKernel &k) {
  return collectives::CommGroupType(k.collective.groupType) == collectives::CommGroupType::ALL;
}

bool direct(const CompiledKernel &k) {
  return (k.kind == KernelKind::AllReduce && elementwise(k)) ||
         (k.kind == KernelKind::AllGather && ungrouped(k));
}

void reduceInto(const CollectiveShape &shape, const std::vector<const std::uint8_t *> &in,
                std::size_t elements, std::uint8_t *out) {
  const auto op = CollectiveOperator(shape.op);
  switch (shape.type.id()) { // the values' host type and the type they combine in
  case TypeId::Float:
    return combineAll<float, float>(op, in, elements, out);
  case TypeId::Half:
    return combineAll<half, float>(op, in, elements, out);
  case TypeId::Int:
    return combineAll<std::int32_t, std::int32_t>(op, in, elements, out);
  case TypeId::UnsignedInt:
    return combineAll<std::uint32_t, std::uint32_t>(op, in, elements, out);
  case TypeId::Short:
    return combineAll<std::int16_t, std::int16_t>(op, in, elements, out);
  case TypeId::UnsignedShort:
    return combineAll<std::uint16_t, std::uint16_t>(op, in, elements, out);
  case TypeId::Char:
    return combineAll<char, char>(op, in, elements, out);
  case TypeId::SignedChar:
    return combineAll<signed char, signed char>(op, in, elements, out);
  case TypeId::UnsignedChar:
  case TypeId::Bool:
    return combineAll<std::uint8_t, std::uint8_t>(op, in, elements, out);
  case TypeId::LongLong:
    return combineAll<std::int64_t, std::int64_t>(op, in, elements, out);
  case TypeId::UnsignedLongLong:
    return combineAll<std::uint64_t, std::uint64_t>(op, in, elements, out);
  default:
    throw internal_error("a collective reduction of type " + shape.type.toString());
  }
}

bool exchanges(const CompiledKernel &k) {
  return k.kind != KernelKind::AllReduce ||
         CollectiveOperator(k.collective.op) != CollectiveOperator::LOCAL;
}

bool elementwise(const CompiledKernel &k) {
  return exchanges(k) &&
         (k.kind == KernelKind::AllReduce || k.kind == KernelKind::ReduceScatter) && ungrouped(k);
}


Bytes whole(const CompiledKernel &k, const std::vector<Bytes> &contributions) {
  const auto r = std::uint32_t(contributions.size());
  const ReplicaGroups groups = k.collective.groups();
  Bytes all;
  for (std::uint32_t g = 0; g < groups.count(r); ++g) {
    std::vector<const Bytes *> members;
    for (std::uint32_t p = 0; p < groups.size; ++p)
      members.push_back(&contributions.at(groups.member(g, p, r)));
    const Bytes part = groupWhole(k, members);
    all.insert(all.end(), part.begin(), part.end());
  }
  return all;
}

Bytes resultOf(const CompiledKernel &k, unsigned replica, unsigned replicas, Bytes whole) {
  const CollectiveShape &shape = k.collective;
  const ReplicaGroups groups = shape.groups();
  const std::size_t elementBytes = shape.type.size(), dataBytes = shape.elements * elementBytes;
  const std::size_t groupBytes = whole.size() / groups.count(replicas),
                    groupStart = groups.groupOf(replica, replicas) * groupBytes;
  const std::uint32_t position = groups.positionOf(replica, replicas);
  switch (k.kind) {
  case KernelKind::ReduceScatter: { // this member's piece, zero past the data's end
    const std::size_t piece = shape.resultElements(k.kind), first = position * piece;
    Bytes own(piece * elementBytes, 0);
    if (first < shape.elements)
      std::memcpy(own.data(), whole.data() + groupStart + first * elementBytes,
                  std::min(piece, std::size_t(shape.elements) - first) * elementBytes);
    return own;
  }
  case KernelKind::AllToAll: { // slice [position] of every member's data, in member order
    const std::size_t sliceBytes = dataBytes / groups.size;
    Bytes own;
    for (std::uint32_t j = 0; j < groups.size; ++j) {
      const auto from = whole.begin() + std::ptrdiff_t(groupStart + j * dataBytes +
                                                        position * sliceBytes);
      own.insert(own.end(), from, from + std::ptrdiff_t(sliceBytes));
    }
    return own;
  }
  case KernelKind::CrossReplicaCopy:
    return slice(whole, shape.sources.at(replica) * dataBytes, dataBytes);
  default: // the group's whole
    return groups.count(replicas) == 1 ? whole : slice(whole, groupStart, groupBytes);
  }
}

std::string describe(const CompiledKernel &k) {
  const CollectiveShape &c = k.collective;
  std::string line = "'" + k.name + "' " + kernelKindName(k.kind);
  if (k.kind == KernelKind::AllReduce || k.kind == KernelKind::ReduceScatter)
    line += std::string(" ") + collectives::toString(CollectiveOperator(c.op));
  line += " " + std::to_string(c.elements) + " " + c.type.toString();
  if (!ungrouped(k))
    line += std::string(" in ") +
            (collectives::CommGroupType(c.groupType) == collectives::CommGroupType::ORTHOGONAL
                 ? "ORTHOGONAL"
                 : "CONSECUTIVE") +
            " groups of " + std::to_string(c.groupSize);
  if (k.kind == KernelKind::Broadcast)
    line += " from member " + std::to_string(c.root);
  if (k.kind == KernelKind::CrossReplicaCopy) {
    line += " from";
    for (std::uint32_t source : c.sources)
      line += " " + std::to_string(source);
  }
  return line;
}

} // namespace aspen::detail::collective
