#include "Compiler.hpp"

#include "LowerComputeSets.hpp"
#include "LowerCopies.hpp"
#include "LowerPrograms.hpp"
#include "MemoryLayout.hpp"
#include "Verify.hpp"
#include "core/Logging.hpp"

#include <chrono>
#include <exception>

namespace aspen::detail {

namespace {
// Runs the passes in order, timing each one and reporting progress.
class PassRunner {
public:
  PassRunner(int numPasses, const ProgressFunc &progress)
      : numPasses_(numPasses), progress_(progress) {}

  template <class F> auto operator()(const char *name, F &&pass) {
    const auto start = std::chrono::steady_clock::now();
    struct Report {
      PassRunner &runner;
      const char *name;
      std::chrono::steady_clock::time_point start;
      ~Report() {
        if (std::uncaught_exceptions() > 0)
          return;
        const std::chrono::duration<double, std::milli> ms =
            std::chrono::steady_clock::now() - start;
        logger().debug("compiler pass {}: {:.3f} ms", name, ms.count());
        if (runner.progress_)
          runner.progress_(++runner.done_, runner.numPasses_);
      }
    } report{*this, name, start};
    return pass();
  }

private:
  int numPasses_;
  int done_ = 0;
  const ProgressFunc &progress_;
};
} // namespace

std::unique_ptr<CompiledGraph> compile(const GraphState &graph,
                                       ArrayRef<program::Program> programs,
                                       const CompileOptions &options,
                                       const ProgressFunc &progress) {
  auto out = std::make_unique<CompiledGraph>();
  const Target &t = graph.target;
  out->target = {t.getName(), t.getNumTiles(), t.getNumWorkerContexts(), t.getBytesPerTile(),
                 t.getTileClockFrequency()};
  addVariableBuffers(graph, *out);

  PassRunner pass(5, progress);
  const auto computeSets = pass("verify", [&] { return verifyGraph(graph, programs); });
  const auto copies = pass("lower copies", [&] { return lowerCopies(graph, programs, *out); });
  const auto csIndex =
      pass("lower compute sets", [&] { return lowerComputeSets(graph, computeSets, *out); });
  pass("memory layout", [&] { planMemory(graph, options.allowOutOfMemory, *out); });
  pass("lower programs", [&] { lowerPrograms(graph, programs, copies, csIndex, *out); });
  return out;
}

} // namespace aspen::detail
