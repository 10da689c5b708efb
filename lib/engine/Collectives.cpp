// The engine's side of the cross-replica collectives (aspen/Collectives.hpp): each replica
// reads its operand through its executor, the engine's replicas meet (ReplicaMeeting), the
// transport makes the whole from their contributions (and the other ranks', over MPI), and
// each replica writes its result out of it (CollectiveMath.hpp).
#include "DeviceSubtrees.hpp"
#include "EngineImpl.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>

#include <algorithm>
#include <cstring>

namespace aspen::detail {

namespace {

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
                  "the others' engines meet this one over MPI only (launch every engine with "
                  "mpiexec, aspen.collectives.transport auto or mpi), and this one is not "
                  "using it: run every replica in one engine, or launch with mpiexec");
}

namespace {

// Replica `r`'s operands of collective k in its executor's host memory, and whether a direct
// run can use them: both in host memory, and apart, or the same bytes for an all-reduce.
struct HostOperands {
  const std::uint8_t *data = nullptr;
  std::uint8_t *result = nullptr;
  bool usable = false;
};
HostOperands hostOperands(Executor &executor, const CompiledKernel &k) {
  const DescTemplate &d = k.operands[AllReduceOperand::data];
  const DescTemplate &o = k.operands[AllReduceOperand::result];
  HostOperands h{executor.hostAddress(d.buffer, d.offset), executor.hostAddress(o.buffer, o.offset)};
  const std::size_t bytes = std::size_t(d.size) * k.collective.type.size(),
                    resultBytes = std::size_t(o.size) * k.collective.type.size();
  h.usable = h.data && h.result &&
             !(h.data != h.result && h.data < h.result + resultBytes &&
               h.result < h.data + bytes) &&
             !(h.data == h.result && k.kind != KernelKind::AllReduce);
  return h;
}

// Chunk c of n elements cut in `parts` for parts replicas, its bounds on multiples of 64
// elements (whole cache lines for every type).
std::size_t chunkStart(std::size_t n, std::size_t c, std::size_t parts) {
  return c >= parts ? n : (n * c / parts) / 64 * 64;
}

} // namespace

bool EngineImpl::runDirectly(Replica &r, const CompiledKernel &k, std::uint32_t index,
                             RunClock::time_point deadline) {
  if (replicas_.size() != 1 || !collective::direct(k) || !transport_->runsDirectly())
    return false;
  const HostOperands h = hostOperands(*r.executor, k);
  if (!h.usable)
    return false; // not in host memory, or overlapping where the result cannot
  transport_->runDirect(k, index, h.data, h.result, deadline);
  return true;
}

bool EngineImpl::runTogether(Replica &r, const CompiledKernel &k, std::uint32_t index,
                             RunClock::time_point deadline) {
  // Below 64 KB the meeting's one round beats this path's three (bench_collectives: 4 KB 0.28
  // against 0.15 GB/s, 64 KB 1.8 against 2.2).
  constexpr std::size_t kMinBytes = std::size_t(64) << 10;
  const bool reduceScatter = k.kind == KernelKind::ReduceScatter && collective::elementwise(k),
             broadcast = k.kind == KernelKind::Broadcast && collective::ungrouped(k);
  if (replicas_.size() < 2 || transport_->ranks() != 1 ||
      !(collective::direct(k) || reduceScatter || broadcast) ||
      k.collective.elements * k.collective.type.size() < kMinBytes)
    return false;
  const auto local = unsigned(&r - replicas_.data());
  const std::size_t parts = replicas_.size();
  if (together_.size() != parts)
    throw internal_error("runTogether: slots for " + std::to_string(together_.size()) +
                         " replicas, the engine runs " + std::to_string(parts));
  const HostOperands h = hostOperands(*r.executor, k);
  together_[local] = {h.data, h.result, h.usable};
  // Every replica's slot is written before it meets, and read after: the meeting's lock orders
  // them. The meeting also gives the collective's checks (the same collective, nobody left, the
  // deadline) and is the barrier between the phases.
  const auto barrier = [&](RunClock::time_point until) {
    meeting_->meet(local, index, k.name, {},
                   [](const std::vector<collective::Bytes> &) { return collective::Bytes{}; },
                   until, options_.collectivesTimeout);
  };
  // Between phases the others are working, not missing: a fresh deadline for each barrier.
  const auto soon = [&] { return collectiveDeadline(RunClock::now()); };
  barrier(deadline);
  for (const TogetherSlot &slot : together_)
    if (!slot.usable)
      return false; // every replica sees the same slots: all take the meeting's path
  const CollectiveShape &shape = k.collective;
  const std::size_t n = shape.elements, size = shape.type.size();
  if (k.kind == KernelKind::AllGather) { // every replica's data, in replica order
    for (std::size_t j = 0; j < parts; ++j)
      std::memcpy(together_[local].result + j * n * size, together_[j].data, n * size);
    barrier(soon()); // nobody changes its data while another still reads it
    return true;
  }
  if (broadcast) { // the root's data
    if (local != shape.root)
      std::memcpy(together_[local].result, together_[shape.root].data, n * size);
    else if (together_[local].result != together_[local].data)
      std::memcpy(together_[local].result, together_[local].data, n * size);
    barrier(soon());
    return true;
  }
  if (reduceScatter) { // this replica's piece of the reduction, zero past the data's end
    const std::size_t piece = shape.resultElements(k.kind), from = local * piece,
                      count = from < n ? std::min(piece, n - from) : 0;
    std::vector<const std::uint8_t *> in(parts);
    for (std::size_t j = 0; j < parts; ++j)
      in[j] = together_[j].data + from * size;
    if (count > 0)
      collective::reduceInto(shape, in, count, together_[local].result);
    std::memset(together_[local].result + count * size, 0, (piece - count) * size);
    barrier(soon());
    return true;
  }
  // All-reduce: this replica's chunk of every replica's data, reduced in replica order into its
  // result; then, once every chunk is, the others' chunks from their results.
  const std::size_t first = chunkStart(n, local, parts), last = chunkStart(n, local + 1, parts);
  std::vector<const std::uint8_t *> in(parts);
  for (std::size_t j = 0; j < parts; ++j)
    in[j] = together_[j].data + first * size;
  if (last > first)
    collective::reduceInto(shape, in, last - first, together_[local].result + first * size);
  barrier(soon());
  for (std::size_t j = 0; j < parts; ++j) {
    const std::size_t from = chunkStart(n, j, parts), to = chunkStart(n, j + 1, parts);
    if (j != local && to > from)
      std::memcpy(together_[local].result + from * size, together_[j].result + from * size,
                  (to - from) * size);
  }
  barrier(soon()); // nobody changes its result while another still copies from it
  return true;
}

RunClock::time_point EngineImpl::collectiveDeadline(RunClock::time_point start) const {
  const auto deadline = start + std::chrono::duration_cast<RunClock::duration>(
                                    std::chrono::duration<double>(options_.collectivesTimeout));
  return deadline_ ? std::min(deadline, *deadline_) : deadline;
}

void EngineImpl::arriveAtSubtree(std::uint32_t step) {
  if (firstCollective_.empty() || firstCollective_[step] == kNoCollective)
    return;
  const std::uint32_t index = firstCollective_[step];
  transport_->arrive(compiled_->kernels[index], index, collectiveDeadline(RunClock::now()));
}

double EngineImpl::runCollective(Replica &r, std::uint32_t index) {
  const auto start = RunClock::now();
  const CompiledKernel &k = compiled_->kernels[index];
  const RegionList data = regionOf(k.operands[AllReduceOperand::data], k.collective.type);
  const RegionList result = regionOf(k.operands[AllReduceOperand::result], k.collective.type);
  const unsigned local = unsigned(&r - replicas_.data());
  const RunClock::time_point deadline = collectiveDeadline(start);
  if (collectivesOnDevice_) { // the executor's own (NCCL), once every rank is there
    transport_->arrive(k, index, deadline);
    return r.executor->runKernel(index);
  }
  if (runDirectly(r, k, index, deadline) || runTogether(r, k, index, deadline))
    return std::chrono::duration<double>(RunClock::now() - start).count();
  collective::Bytes mine(data.bytes());
  r.executor->read(data, mine.data());
  if (collective::exchanges(k)) {
    const ReplicaMeeting::Combine meet = [&](const std::vector<collective::Bytes> &in) {
      return transport_->exchange(k, index, in, deadline);
    };
    mine = collective::resultOf(k, r.index, compiled_->replicationFactor,
                                meeting_->meet(local, index, k.name, std::move(mine), meet,
                                               deadline, options_.collectivesTimeout));
  }
  r.executor->write(result, mine.data());
  return std::chrono::duration<double>(RunClock::now() - start).count();
}

} // namespace aspen::detail
