// EngineImpl::run: interprets the compiled program steps on the executor.
#include "DeviceSubtrees.hpp"
#include "EngineImpl.hpp"
#include "PrintTensor.hpp"
#include "executors/ControlRules.hpp"

#include <aspen/Error.hpp>

#include <algorithm>
#include <chrono>

namespace aspen::detail {

namespace {
using Clock = std::chrono::steady_clock;
double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
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
  if (options_.timeLimit > 0) {
    deadline_ = start + std::chrono::duration_cast<Clock::duration>(
                            std::chrono::duration<double>(options_.timeLimit));
    executor_->setDeadline(deadline_);
  }
  executor_->runStarting();
  struct EndRun {
    EngineImpl &self;
    ~EndRun() {
      self.executor_->runEnded();
      if (self.deadline_) {
        self.deadline_.reset();
        self.executor_->setDeadline(std::nullopt);
      }
    }
  } end{*this};
  try {
    runStep(compiled_->programs[programIndex]);
  } catch (const runtime_error &e) {
    if (!deadline_ || Clock::now() < *deadline_)
      throw;
    throw runtime_error("Engine::run(" + std::to_string(programIndex) +
                        (debugName.empty() ? "" : ", '" + debugName + "'") +
                        "): " + timeLimitMessage(options_.timeLimit) + ": " + e.what());
  }
  profile_.programs[programIndex].add(secondsSince(start));
  recordEvent(ExecutionProfile::Event::Kind::Program, programIndex, start);
}

void EngineImpl::recordEvent(ExecutionProfile::Event::Kind kind, std::uint32_t index,
                             Clock::time_point start) {
  if (!recording_)
    return;
  const auto now = Clock::now();
  profile_.record({kind, index, std::chrono::duration<double>(start - epoch_).count(),
                   std::chrono::duration<double>(now - start).count()});
}

// The scalar's bytes as ControlRules.hpp takes them (little-endian, in the low bytes).
unsigned long long EngineImpl::scalarBits(const ScalarRef &scalar) {
  std::uint8_t bytes[8] = {};
  executor_->readScalar(scalar, bytes);
  unsigned long long bits = 0;
  for (std::size_t b = 0; b < scalar.type.size() && b < 8; ++b)
    bits |= static_cast<unsigned long long>(bytes[b]) << (8 * b);
  return bits;
}

bool EngineImpl::isTrue(const ScalarRef &scalar) {
  return predicateIsTrue(scalarBits(scalar), unsigned(scalar.type.size()),
                         scalar.type.isFloatingPoint());
}

std::int64_t EngineImpl::integerValue(const ScalarRef &scalar) {
  return controlValue(scalarBits(scalar), unsigned(scalar.type.size()), scalar.type.isSigned());
}

void EngineImpl::transfer(const StreamCopy &copy, bool toDevice) {
  const auto start = Clock::now();
  staging_.resize(copy.tensor.bytes());
  StreamConnection &connection = streams_[copy.stream];
  if (toDevice) {
    connection.hostToDevice(staging_.data());
    executor_->write(copy.tensor, staging_.data());
  } else {
    executor_->read(copy.tensor, staging_.data());
    connection.deviceToHost(staging_.data());
  }
  profile_.streamedBytes += staging_.size();
  profile_.streamTransfers.add(secondsSince(start));
  recordEvent(ExecutionProfile::Event::Kind::Stream, copy.stream, start);
}

void EngineImpl::runStep(std::uint32_t index) {
  const Step &step = compiled_->steps[index];
  const auto start = Clock::now();
  if (deadline_ && start >= *deadline_)
    throw runtime_error("it was stopped between steps of the program");
  invalidate(step.invalidates);
  if (offeredAsDeviceSubtree(*compiled_, deviceOnly_, index) &&
      executor_->runDeviceSubtree(index)) {
    const double seconds = secondsSince(start);
    profile_.steps[index].add(seconds);
    profile_.deviceSubtrees.add(seconds);
    recordEvent(ExecutionProfile::Event::Kind::DeviceGraph, index, start);
    return;
  }
  switch (step.kind) {
  case StepKind::Sequence:
    for (std::uint32_t child : step.children)
      runStep(child);
    break;
  case StepKind::Execute:
    profile_.computeSets[step.index].add(executor_->execute(step.index));
    recordEvent(ExecutionProfile::Event::Kind::ComputeSet, step.index, start);
    break;
  case StepKind::Kernel:
    profile_.kernels[step.index].add(executor_->runKernel(step.index));
    recordEvent(ExecutionProfile::Event::Kind::Kernel, step.index, start);
    break;
  case StepKind::Copy: {
    const CopyPlan &plan = compiled_->copies[step.index];
    executor_->copy(step.index);
    // A compute set's or kernel's gather or scatter is rearrangement; the rest are copies.
    (plan.rearranges ? profile_.rearrangedBytes : profile_.copiedBytes) += plan.src.bytes();
    if (!plan.rearranges)
      profile_.copies.add(secondsSince(start));
    recordEvent(ExecutionProfile::Event::Kind::Copy, step.index, start);
    break;
  }
  case StepKind::StreamToTensor:
  case StepKind::TensorToStream:
    transfer(compiled_->streamCopies[step.index], step.kind == StepKind::StreamToTensor);
    break;
  case StepKind::Repeat:
    for (std::uint32_t i = 0; i < step.count; ++i)
      runStep(step.children[0]);
    break;
  case StepKind::RepeatWhileTrue:
  case StepKind::RepeatWhileFalse: {
    const bool continueWhen = step.kind == StepKind::RepeatWhileTrue;
    for (;;) {
      runStep(step.children[0]);
      if (isTrue(step.scalar) != continueWhen)
        break;
      runStep(step.children[1]);
    }
    break;
  }
  case StepKind::If:
    runStep(step.children[isTrue(step.scalar) ? 0 : 1]);
    break;
  case StepKind::Switch: {
    const std::int64_t value = integerValue(step.scalar);
    const auto match = std::find(step.cases.begin(), step.cases.end(), value);
    runStep(step.children[match == step.cases.end() ? 0 : 1 + (match - step.cases.begin())]);
    break;
  }
  case StepKind::PrintTensor: {
    const PrintInfo &print = compiled_->prints[step.index];
    staging_.resize(print.regions.bytes());
    executor_->read(print.regions, staging_.data());
    *printStream_ << formatTensor(print, staging_.data()) << std::flush;
    break;
  }
  case StepKind::Abort:
    if (isTrue(step.scalar))
      throw runtime_error("AbortOnCondition '" + step.name +
                          "': the predicate is true (non-zero), so the program was aborted");
    break;
  case StepKind::Cached:
    if (!cacheFresh_[step.index]) {
      runStep(step.children[0]);
      cacheFresh_[step.index] = options_.cachedSteps;
    }
    break;
  case StepKind::Nop:
    break;
  }
  profile_.steps[index].add(secondsSince(start));
}

} // namespace aspen::detail
