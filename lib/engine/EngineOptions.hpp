// Engine options: Aspen's own ("aspen.*", which must be known), the Poplar keys Aspen reads or
// accepts, and defaults from the environment (POPLAR_ENGINE_OPTIONS, then ASPEN_ENGINE_OPTIONS,
// each a JSON object of string values; explicit options win). Other keys are logged and ignored.
#pragma once

#include <aspen/OptionFlags.hpp>

#include <cstdint>

namespace aspen::detail {

// How the CUDA executor runs control flow: as CUDA graphs with conditional nodes (falling back
// to host when the driver lacks them), or driven from the host step by step.
enum class CudaControlFlow : std::uint8_t { Graph, Host };

struct EngineOptions {
  unsigned cpuThreads = 1;       // aspen.cpu.threads, else env ASPEN_CPU_THREADS, else all cores
  bool reverseWorkers = false;   // aspen.cpu.workerOrder = forward | reverse
  bool allowOutOfMemory = false; // debug.allowOutOfMemory
  CudaControlFlow cudaControlFlow = CudaControlFlow::Graph; // aspen.cuda.controlFlow = graph | host
};

EngineOptions parseEngineOptions(const OptionFlags &options);

// Options of printProfileSummary.
struct ProfileOptions {
  bool showExecutionSteps = false;
};
ProfileOptions parseProfileOptions(const OptionFlags &options);

} // namespace aspen::detail
