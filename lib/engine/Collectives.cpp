// The engine's side of the cross-replica collectives (aspen/Collectives.hpp): each replica
// reads its operand through its executor, the replicas meet (ReplicaMeeting, in process), the
// contributions are combined in replica order on the host, and each replica writes the result.
#include "EngineImpl.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>
#include <aspen/HalfFloat.hpp>

#include <algorithm>
#include <cstring>

namespace aspen::detail {

namespace {

using collectives::CollectiveOperator;
using Bytes = ReplicaMeeting::Bytes;

template <class T> T load(const Bytes &b, std::size_t i) {
  T v;
  std::memcpy(&v, b.data() + i * sizeof(T), sizeof(T));
  return v;
}

template <class T> void store(Bytes &b, std::size_t i, T v) {
  std::memcpy(b.data() + i * sizeof(T), &v, sizeof(T));
}

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
// HALF), element by element.
template <class Stored, class Acc>
Bytes combineAll(const CollectiveShape &shape, const std::vector<Bytes> &in) {
  const auto op = CollectiveOperator(shape.op);
  Bytes out(in.front().size());
  for (std::size_t i = 0; i < shape.elements; ++i) {
    Acc acc = Acc(load<Stored>(in[0], i));
    if (op == CollectiveOperator::SQUARE_ADD)
      acc = squared(acc);
    for (std::size_t r = 1; r < in.size(); ++r) {
      const Acc v = Acc(load<Stored>(in[r], i));
      acc = combineTwo(op, acc, op == CollectiveOperator::SQUARE_ADD ? squared(v) : v);
    }
    if constexpr (!std::is_integral_v<Acc>)
      if (op == CollectiveOperator::MEAN)
        acc = acc / Acc(in.size());
    store<Stored>(out, i, Stored(acc));
  }
  return out;
}

Bytes combine(const CollectiveShape &shape, const std::vector<Bytes> &in) {
  if (shape.type == FLOAT)
    return combineAll<float, float>(shape, in);
  if (shape.type == HALF)
    return combineAll<half, float>(shape, in);
  if (shape.type == INT)
    return combineAll<std::int32_t, std::int32_t>(shape, in);
  if (shape.type == UNSIGNED_INT)
    return combineAll<std::uint32_t, std::uint32_t>(shape, in);
  if (shape.type == BOOL)
    return combineAll<std::uint8_t, std::uint8_t>(shape, in);
  throw internal_error("a collective of type " + shape.type.toString());
}

RegionList regionOf(const DescTemplate &d, Type type) {
  RegionList r;
  r.elementBytes = std::uint32_t(type.size());
  r.numElements = d.size;
  r.runs.push_back({d.buffer, std::int64_t(d.offset), std::int64_t(type.size()), d.size});
  return r;
}

} // namespace

void EngineImpl::requireAllReplicasForCollectives() const {
  if (replicas_.size() == compiled_->replicationFactor)
    return;
  for (const CompiledKernel &k : compiled_->kernels)
    if (runsOnHost(k.kind))
      throw error("Engine::load: the graph's collectives (the first: '" + k.name +
                  "') join all " + std::to_string(compiled_->replicationFactor) +
                  " replicas, and this engine runs " + std::to_string(replicas_.size()) +
                  " of them (target.firstRuntimeReplica, target.numberRuntimeReplica); "
                  "replicas in other processes need the MPI transport, which Aspen does not "
                  "have yet: run every replica in one engine");
}

double EngineImpl::runCollective(Replica &r, std::uint32_t index) {
  const auto start = RunClock::now();
  const CompiledKernel &k = compiled_->kernels[index];
  const CollectiveShape &shape = k.collective;
  const RegionList data = regionOf(k.operands[AllReduceOperand::data], shape.type);
  const RegionList result = regionOf(k.operands[AllReduceOperand::result], shape.type);
  const std::size_t bytes = shape.type.size();
  const unsigned local = unsigned(&r - replicas_.data());
  Bytes mine(data.bytes());
  r.executor->read(data, mine.data());
  // LOCAL moves nothing: each replica's result is its own data.
  if (k.kind != KernelKind::AllReduce || CollectiveOperator(shape.op) != CollectiveOperator::LOCAL) {
    auto deadline = start + std::chrono::duration_cast<RunClock::duration>(
                                std::chrono::duration<double>(options_.collectivesTimeout));
    if (deadline_)
      deadline = std::min(deadline, *deadline_);
    const KernelKind kind = k.kind;
    const ReplicaMeeting::Combine meet = [&shape, kind](const std::vector<Bytes> &in) -> Bytes {
      if (kind == KernelKind::AllGather) { // replica order, one after the other
        Bytes all;
        for (const Bytes &b : in)
          all.insert(all.end(), b.begin(), b.end());
        return all;
      }
      if (kind == KernelKind::Broadcast)
        return in[shape.root];
      return combine(shape, in);
    };
    mine = meeting_->meet(local, index, k.name, std::move(mine), meet, deadline,
                          options_.collectivesTimeout);
  }
  if (k.kind == KernelKind::ReduceScatter) { // this replica's piece, zero past the data's end
    const std::size_t piece = result.numElements, first = std::size_t(r.index) * piece;
    Bytes own(piece * bytes, 0);
    if (first < shape.elements)
      std::memcpy(own.data(), mine.data() + first * bytes,
                  std::min(piece, std::size_t(shape.elements) - first) * bytes);
    mine = std::move(own);
  }
  r.executor->write(result, mine.data());
  return std::chrono::duration<double>(RunClock::now() - start).count();
}

} // namespace aspen::detail
