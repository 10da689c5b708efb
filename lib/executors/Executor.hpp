// Executor: what the engine needs from a machine that runs a CompiledGraph. The engine
// interprets control flow and host streams itself; an executor provides memory, copies and
// compute-set launches. The CPU executor is the reference; a CUDA one implements the same.
#pragma once

#include "compiler/CompiledGraph.hpp"

namespace aspen::detail {

class Executor {
public:
  virtual ~Executor() = default;

  // Allocates zeroed memory for `graph` (which must outlive the executor), writes constants and
  // vertex state, and resolves vertex entry points.
  virtual void load(const CompiledGraph &graph) = 0;

  // Host <-> device memory: `host` holds regions.bytes() bytes in element order.
  virtual void write(const RegionList &regions, const void *host) = 0;
  virtual void read(const RegionList &regions, void *host) = 0;
  // The element type's bytes of one scalar, for control flow.
  virtual void readScalar(const ScalarRef &scalar, void *host) = 0;

  virtual void copy(const CopyPlan &plan) = 0;

  // Runs compute set `index` (gathers, vertices, scatters) and returns the seconds it took.
  // Raises aspen::runtime_error naming the vertex when one fails.
  virtual double execute(std::uint32_t index) = 0;
};

} // namespace aspen::detail
