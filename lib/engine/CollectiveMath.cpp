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
// HALF), element by element: out[i] = in[0][i] op in[1][i] op ... Blocks of elements at a time,
// one replica after another across the block, with the operator fixed for the inner loops (so
// they vectorise); each element still sees the replicas in order, so the bytes are the same.
template <class Stored, class Acc, class Op>
void combineBlocks(const std::vector<const std::uint8_t *> &in, std::size_t elements,
                   std::uint8_t *out, bool square, bool mean, Op op) {
  constexpr std::size_t kBlock = 1024;
  Acc acc[kBlock];
  Stored values[kBlock];
  for (std::size_t start = 0; start < elements; start += kBlock) {
    const std::size_t n = std::min(kBlock, elements - start);
    std::memcpy(values, in[0] + start * sizeof(Stored), n * sizeof(Stored));
    for (std::size_t j = 0; j < n; ++j)
      acc[j] = square ? squared(Acc(values[j])) : Acc(values[j]);
    for (std::size_t r = 1; r < in.size(); ++r) {
      std::memcpy(values, in[r] + start * sizeof(Stored), n * sizeof(Stored));
      if (square)
        for (std::size_t j = 0; j < n; ++j)
          acc[j] = op(acc[j], squared(Acc(values[j])));
      else
        for (std::size_t j = 0; j < n; ++j)
          acc[j] = op(acc[j], Acc(values[j]));
    }
    if constexpr (!std::is_integral_v<Acc>)
      if (mean)
        for (std::size_t j = 0; j < n; ++j)
          acc[j] = acc[j] / Acc(in.size());
    for (std::size_t j = 0; j < n; ++j)
      values[j] = Stored(acc[j]);
    std::memcpy(out + start * sizeof(Stored), values, n * sizeof(Stored));
  }
}

template <class Stored, class Acc>
void combineAll(CollectiveOperator op, const std::vector<const std::uint8_t *> &in,
                std::size_t elements, std::uint8_t *out) {
  const bool square = op == CollectiveOperator::SQUARE_ADD, mean = op == CollectiveOperator::MEAN;
  const auto with = [&](CollectiveOperator fixed) {
    combineBlocks<Stored, Acc>(in, elements, out, square, mean,
                               [fixed](Acc a, Acc b) { return combineTwo(fixed, a, b); });
  };
  switch (op) { // one instantiation an operator, so that the inner loops know it
  case CollectiveOperator::MUL:
    return combineBlocks<Stored, Acc>(in, elements, out, square, mean, [](Acc a, Acc b) {
      return combineTwo(CollectiveOperator::MUL, a, b);
    });
  case CollectiveOperator::MIN:
    return combineBlocks<Stored, Acc>(in, elements, out, square, mean, [](Acc a, Acc b) {
      return combineTwo(CollectiveOperator::MIN, a, b);
    });
  case CollectiveOperator::MAX:
    return combineBlocks<Stored, Acc>(in, elements, out, square, mean, [](Acc a, Acc b) {
      return combineTwo(CollectiveOperator::MAX, a, b);
    });
  case CollectiveOperator::LOGICAL_AND:
  case CollectiveOperator::LOGICAL_OR:
    return with(op);
  default: // ADD, MEAN, SQUARE_ADD, LOCAL: sums
    return combineBlocks<Stored, Acc>(in, elements, out, square, mean, [](Acc a, Acc b) {
      return combineTwo(CollectiveOperator::ADD, a, b);
    });
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
