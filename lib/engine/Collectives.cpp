// The engine's side of the cross-replica collectives (aspen/Collectives.hpp): each replica
// reads its operand through its executor, the engine's replicas meet (ReplicaMeeting), the
// transport makes the whole from their contributions (and the other ranks', over MPI), and
// each replica writes its result out of it (CollectiveMath.hpp).
#include "DeviceSubtrees.hpp"
#include "EngineImpl.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>

#include <algorithm>

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

bool EngineImpl::runDirectly(Replica &r, const CompiledKernel &k, std::uint32_t index,
                             RunClock::time_point deadline) {
  if (replicas_.size() != 1 || !collective::direct(k) || !transport_->runsDirectly())
    return false;
  const DescTemplate &d = k.operands[AllReduceOperand::data];
  const DescTemplate &o = k.operands[AllReduceOperand::result];
  const std::uint8_t *data = r.executor->hostAddress(d.buffer, d.offset);
  std::uint8_t *result = r.executor->hostAddress(o.buffer, o.offset);
  const std::size_t bytes = std::size_t(d.size) * k.collective.type.size(),
                    resultBytes = std::size_t(o.size) * k.collective.type.size();
  if (!data || !result ||
      (data != result && data < result + resultBytes && result < data + bytes) ||
      (data == result && k.kind != KernelKind::AllReduce))
    return false; // not in host memory, or overlapping where the result cannot
  transport_->runDirect(k, index, data, result, deadline);
  return true;
}

RunClock::time_point EngineImpl::collectiveDeadline(RunClock::time_point start) const {
  const auto deadline = start + std::chrono::duration_cast<RunClock::duration>(
                                    std::chrono::duration<double>(options_.collectivesTimeout));
  return deadline_ ? std::min(deadline, *deadline_) : deadline;
}

bool EngineImpl::arriveAtSubtree(std::uint32_t step) {
  if (firstCollective_.empty() || firstCollective_[step] == kNoCollective)
    return true;
  const std::uint32_t index = firstCollective_[step];
  transport_->arrive(compiled_->kernels[index], index, collectiveDeadline(RunClock::now()));
  return true;
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
  if (runDirectly(r, k, index, deadline))
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
