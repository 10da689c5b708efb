// EngineImpl::run: interprets the compiled program steps on the executor.
#include "DeviceSubtrees.hpp"
#include "EngineImpl.hpp"
#include "PrintTensor.hpp"
#include "executors/ControlRules.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <chrono>
#include <atomic>
#include <exception>
#include <thread>

namespace aspen::detail {

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
// A failure's message, for the other ranks.
const std::string &failureText(const std::exception_ptr &failure) {
  static thread_local std::string text;
  try {
    std::rethrow_exception(failure);
  } catch (const std::exception &e) {
    text = e.what();
  } catch (...) {
    text = "an exception that is not a std::exception";
  }
  return text;
}

} // namespace

void EngineImpl::run(unsigned programIndex, const std::string &debugName) {
  if (programIndex >= compiled_->programs.size())
    throw control_program_error("Engine::run(" + std::to_string(programIndex) +
                                (debugName.empty() ? "" : ", '" + debugName + "'") +
                                "): the engine has " +
                                std::to_string(compiled_->programs.size()) + " programs");
  requireLoaded("run");
  const auto start = Clock::now();
  recording_ = profile_.recordedRuns < options_.timelineRuns;
  profile_.recordedRuns += recording_ ? 1 : 0;
  if (options_.timeLimit > 0)
    deadline_ = start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(options_.timeLimit));
  struct EndRun {
    EngineImpl &self;
    ~EndRun() { self.deadline_.reset(); }
  } end{*this};
  // The replicas run at once: the first on this thread, each other on a thread of its own.
  // A replica that fails first raises its error; the others' (a collective it left them
  // waiting at) follow from it.
  std::vector<std::exception_ptr> failures(replicas_.size());
  std::atomic<int> firstFailure{-1};
  const std::uint32_t root = compiled_->programs[programIndex];
  if (meeting_)
    meeting_->reset();
  if (transport_) {
    try {
      transport_->runStarting(programIndex);
    } catch (const runtime_error &e) {
      throw runtime_error("Engine::run(" + std::to_string(programIndex) +
                          (debugName.empty() ? "" : ", '" + debugName + "'") + "): " + e.what());
    }
  }
  const auto runOne = [this, root, &failures, &firstFailure](std::size_t i) {
    try {
      runReplica(replicas_[i], root);
      if (meeting_)
        meeting_->leave(unsigned(i), "finished its run");
    } catch (const std::exception &e) {
      failures[i] = std::current_exception();
      int none = -1;
      firstFailure.compare_exchange_strong(none, int(i));
      if (meeting_)
        meeting_->leave(unsigned(i), std::string("failed (") + e.what() + ")");
    } catch (...) {
      failures[i] = std::current_exception();
      int none = -1;
      firstFailure.compare_exchange_strong(none, int(i));
      if (meeting_)
        meeting_->leave(unsigned(i), "failed");
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < replicas_.size(); ++i)
    threads.emplace_back(runOne, i);
  runOne(0);
  for (std::thread &t : threads)
    t.join();
  if (transport_)
    transport_->runEnded(firstFailure >= 0 ? &failureText(failures[std::size_t(firstFailure)])
                                           : nullptr);
  if (firstFailure >= 0) {
    const std::size_t i = std::size_t(firstFailure.load());
    const std::string who =
        "Engine::run(" + std::to_string(programIndex) +
        (debugName.empty() ? "" : ", '" + debugName + "'") + ")" +
        (replicas_.size() > 1 ? " in replica " + std::to_string(replicas_[i].index) : "");
    try {
      std::rethrow_exception(failures[i]);
    } catch (const runtime_error &e) {
      if (deadline_ && Clock::now() >= *deadline_)
        throw runtime_error(who + ": " + timeLimitMessage(options_.timeLimit) + ": " + e.what());
      if (replicas_.size() > 1 || overMpi_)
        throw runtime_error(who + ": " + e.what());
      throw;
    } catch (const stream_connection_error &e) {
      if (replicas_.size() > 1)
        throw stream_connection_error(who + ": " + e.what());
      throw;
    }
  }
  profile_.programs[programIndex].add(secondsSince(start));
  recordEvent(replicas_.front(), ExecutionProfile::Event::Kind::Program, programIndex, start);
}

void EngineImpl::runReplica(Replica &r, std::uint32_t programStep) {
  if (deadline_)
    r.executor->setDeadline(deadline_);
  r.executor->runStarting();
  struct EndRun {
    Replica &r;
    bool deadline;
    ~EndRun() {
      r.executor->runEnded();
      if (deadline)
        r.executor->setDeadline(std::nullopt);
    }
  } end{r, deadline_.has_value()};
  runStep(r, programStep);
}

void EngineImpl::recordEvent(const Replica &r, ExecutionProfile::Event::Kind kind,
                             std::uint32_t index, Clock::time_point start) {
  if (!recording_ || r.ownProfile)
    return;
  const auto now = Clock::now();
  profile_.record({kind, index, std::chrono::duration<double>(start - epoch_).count(),
                   std::chrono::duration<double>(now - start).count()});
}

// The scalar's bytes as ControlRules.hpp takes them (little-endian, in the low bytes).
unsigned long long EngineImpl::scalarBits(Replica &r, const ScalarRef &scalar) {
  std::uint8_t bytes[8] = {};
  r.executor->readScalar(scalar, bytes);
  unsigned long long bits = 0;
  for (std::size_t b = 0; b < scalar.type.size() && b < 8; ++b)
    bits |= static_cast<unsigned long long>(bytes[b]) << (8 * b);
  return bits;
}

bool EngineImpl::isTrue(Replica &r, const ScalarRef &scalar) {
  return predicateIsTrue(scalarBits(r, scalar), unsigned(scalar.type.size()),
                         scalar.type.isFloatingPoint());
}

std::int64_t EngineImpl::integerValue(Replica &r, const ScalarRef &scalar) {
  return controlValue(scalarBits(r, scalar), unsigned(scalar.type.size()), scalar.type.isSigned());
}

void EngineImpl::transfer(Replica &r, const StreamCopy &copy, bool toDevice) {
  const auto start = Clock::now();
  r.staging.resize(copy.tensor.bytes());
  StreamConnection &connection = r.streams[copy.stream];
  if (toDevice) {
    connection.hostToDevice(r.staging.data());
    r.executor->write(copy.tensor, r.staging.data());
  } else {
    r.executor->read(copy.tensor, r.staging.data());
    connection.deviceToHost(r.staging.data());
  }
  ExecutionProfile &profile = profileOf(r);
  profile.streamedBytes += r.staging.size();
  profile.streamTransfers.add(secondsSince(start));
  recordEvent(r, ExecutionProfile::Event::Kind::Stream, copy.stream, start);
}

void EngineImpl::runStep(Replica &r, std::uint32_t index) {
  const Step &step = compiled_->steps[index];
  const auto start = Clock::now();
  ExecutionProfile &profile = profileOf(r);
  if (deadline_ && start >= *deadline_)
    throw runtime_error("it was stopped between steps of the program");
  invalidate(r, step.invalidates);
  // Only an executor that runs device subtrees is offered them (loadReplicas), and it runs
  // every one: the ranks arrive at a subtree's collectives before it runs.
  if (offeredAsDeviceSubtree(*compiled_, deviceOnly_, index)) {
    arriveAtSubtree(index);
    if (r.executor->runDeviceSubtree(index)) {
      const double seconds = secondsSince(start);
      profile.steps[index].add(seconds);
      profile.deviceSubtrees.add(seconds);
      recordEvent(r, ExecutionProfile::Event::Kind::DeviceGraph, index, start);
      return;
    }
  }
  switch (step.kind) {
  case StepKind::Sequence:
    for (std::uint32_t child : step.children)
      runStep(r, child);
    break;
  case StepKind::Execute:
    profile.computeSets[step.index].add(r.executor->execute(step.index));
    recordEvent(r, ExecutionProfile::Event::Kind::ComputeSet, step.index, start);
    break;
  case StepKind::Kernel:
    profile.kernels[step.index].add(runsOnHost(compiled_->kernels[step.index].kind)
                                        ? runCollective(r, step.index)
                                        : r.executor->runKernel(step.index));
    recordEvent(r, ExecutionProfile::Event::Kind::Kernel, step.index, start);
    break;
  case StepKind::Copy: {
    const CopyPlan &plan = compiled_->copies[step.index];
    r.executor->copy(step.index);
    // A compute set's or kernel's gather or scatter is rearrangement; the rest are copies.
    (plan.rearranges ? profile.rearrangedBytes : profile.copiedBytes) += plan.src.bytes();
    if (!plan.rearranges)
      profile.copies.add(secondsSince(start));
    recordEvent(r, ExecutionProfile::Event::Kind::Copy, step.index, start);
    break;
  }
  case StepKind::StreamToTensor:
  case StepKind::TensorToStream:
    transfer(r, compiled_->streamCopies[step.index], step.kind == StepKind::StreamToTensor);
    break;
  case StepKind::Repeat:
    for (std::uint32_t i = 0; i < step.count; ++i)
      runStep(r, step.children[0]);
    break;
  case StepKind::RepeatWhileTrue:
  case StepKind::RepeatWhileFalse: {
    const bool continueWhen = step.kind == StepKind::RepeatWhileTrue;
    for (;;) {
      runStep(r, step.children[0]);
      if (isTrue(r, step.scalar) != continueWhen)
        break;
      runStep(r, step.children[1]);
    }
    break;
  }
  case StepKind::If:
    runStep(r, step.children[isTrue(r, step.scalar) ? 0 : 1]);
    break;
  case StepKind::Switch: {
    const std::int64_t value = integerValue(r, step.scalar);
    const auto match = std::find(step.cases.begin(), step.cases.end(), value);
    runStep(r, step.children[match == step.cases.end() ? 0 : 1 + (match - step.cases.begin())]);
    break;
  }
  case StepKind::PrintTensor: {
    const PrintInfo &print = compiled_->prints[step.index];
    r.staging.resize(print.regions.bytes());
    r.executor->read(print.regions, r.staging.data());
    const std::lock_guard<std::mutex> lock(printMutex_);
    *printStream_ << formatTensor(print, r.staging.data()) << std::flush;
    break;
  }
  case StepKind::Abort:
    if (isTrue(r, step.scalar))
      throw runtime_error("AbortOnCondition '" + step.name +
                          "': the predicate is true (non-zero), so the program was aborted");
    break;
  case StepKind::Cached:
    if (!r.cacheFresh[step.index]) {
      runStep(r, step.children[0]);
      r.cacheFresh[step.index] = options_.cachedSteps;
    }
    break;
  case StepKind::Nop:
    break;
  }
  profile.steps[index].add(secondsSince(start));
}

} // namespace aspen::detail
