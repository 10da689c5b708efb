#include "Compiler.hpp"

#include "Caches.hpp"
#include "CompileReport.hpp"

#include "Dump.hpp"
#include "Liveness.hpp"
#include "LowerComputeSets.hpp"
#include "LowerCopies.hpp"
#include "LowerKernels.hpp"
#include "LowerPrograms.hpp"
#include "MemoryLayout.hpp"
#include "SimplifySteps.hpp"
#include "Verify.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <type_traits>

namespace aspen::detail {

namespace {

// Where ASPEN_COMPILER_DUMP sends each pass's result: "" for nowhere, "-" for stderr, or a folder.
std::string dumpDestination() {
  const char *env = std::getenv("ASPEN_COMPILER_DUMP");
  return env ? env : "";
}

// Runs the passes in order, timing each one, reporting progress and dumping its result.
class PassRunner {
public:
  PassRunner(int numPasses, const ProgressFunc &progress, const CompiledGraph &result,
             CompileReport &report)
      : numPasses_(numPasses), progress_(progress), result_(result), report_(report),
        dumpTo_(dumpDestination()) {}

  template <class F> auto operator()(const char *name, F &&pass) {
    const auto start = std::chrono::steady_clock::now();
    struct Report {
      PassRunner &runner;
      const char *name;
      std::chrono::steady_clock::time_point start;
      ~Report() {
        if (std::uncaught_exceptions() > 0)
          return;
        const auto now = std::chrono::steady_clock::now();
        const std::chrono::duration<double, std::milli> ms = now - start;
        logger().debug("compiler pass {}: {:.3f} ms", name, ms.count());
        runner.report_.passes.push_back(
            {name, std::chrono::duration<double>(start - runner.began_).count(),
             ms.count() / 1e3});
        ++runner.done_;
        if (runner.progress_)
          runner.progress_(runner.done_, runner.numPasses_);
      }
    } report{*this, name, start};
    if constexpr (std::is_void_v<decltype(pass())>) {
      pass();
      dump(name, start);
    } else {
      auto result = pass();
      dump(name, start);
      return result;
    }
  }

private:
  void dump(const char *name, std::chrono::steady_clock::time_point start) const {
    if (dumpTo_.empty())
      return;
    const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - start;
    const std::string header =
        fmt::format("== compiler pass {} '{}': {:.3f} ms, program tree walks so far: {} ==\n",
                    done_ + 1, name, ms.count(), report_.programTreeWalks);
    if (dumpTo_ == "-") {
      std::cerr << header;
      dumpCompiledGraph(result_, std::cerr);
      return;
    }
    std::string file = fmt::format("{:02}-{}.txt", done_ + 1, name);
    std::replace(file.begin(), file.end(), ' ', '-');
    const std::filesystem::path path = std::filesystem::path(dumpTo_) / file;
    std::error_code ec;
    std::filesystem::create_directories(dumpTo_, ec);
    std::ofstream out(path);
    if (!out)
      throw invalid_option("ASPEN_COMPILER_DUMP: cannot write '" + path.string() +
                           "' (set it to a writable folder, or to - for stderr)");
    out << header;
    dumpCompiledGraph(result_, out);
  }

  int numPasses_;
  int done_ = 0;
  const ProgressFunc &progress_;
  const CompiledGraph &result_;
  CompileReport &report_;
  std::string dumpTo_;
  const std::chrono::steady_clock::time_point began_ = std::chrono::steady_clock::now();
};

} // namespace

std::unique_ptr<CompiledGraph> compileGraphState(const GraphState &graph,
                                                 ArrayRef<program::Program> programs,
                                                 const CompileOptions &options,
                                                 const ProgressFunc &progress,
                                                 CompileReport &report);

// The compiler's own memory is host memory: running out of it is an aspen error that says what
// was being compiled, and leaves the graph as it was (compiling reads it, never changes it).
std::unique_ptr<CompiledGraph> compile(const GraphState &graph,
                                       ArrayRef<program::Program> programs,
                                       const CompileOptions &options,
                                       const ProgressFunc &progress, CompileReport *report) {
  const auto start = std::chrono::steady_clock::now();
  CompileReport local;
  try {
    auto compiled = compileGraphState(graph, programs, options, progress, report ? *report : local);
    if (report)
      report->seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return compiled;
  } catch (const std::bad_alloc &) {
    throw graph_memory_allocation_error(
        "compiling the graph: out of host memory (the graph has " +
        std::to_string(graph.variables.size()) + " variables, " +
        std::to_string(graph.vertices.size()) + " vertices and " +
        std::to_string(graph.computeSets.size()) + " compute sets)");
  }
}

std::unique_ptr<CompiledGraph> compileGraphState(const GraphState &graph,
                                                 ArrayRef<program::Program> programs,
                                                 const CompileOptions &options,
                                                 const ProgressFunc &progress,
                                                 CompileReport &report) {
  auto out = std::make_unique<CompiledGraph>();
  const Target &t = graph.target;
  out->target = {t.getName(), t.getNumTiles(), t.getNumWorkerContexts(), t.getBytesPerTile(),
                 t.getTileClockFrequency()};
  out->replicationFactor = graph.replicationFactor;
  out->replicationIndexBuffers.assign(graph.replicationIndexVariables.begin(),
                                      graph.replicationIndexVariables.end());
  addVariableBuffers(graph, *out);

  report = {};
  PassRunner pass(10, progress, *out, report);
  LoweringState state;
  // The program tree is walked twice: verified, then lowered to steps. Every later pass works
  // on the steps and `state`.
  pass("verify", [&] { verifyGraph(graph, programs, report.programTreeWalks); });
  pass("lower programs",
       [&] { lowerPrograms(graph, programs, *out, state, report.programTreeWalks); });
  pass("lower compute sets", [&] { lowerComputeSets(graph, *out, state); });
  pass("lower kernels", [&] { lowerKernels(*out, state); });
  pass("lower copies", [&] { lowerCopies(*out, state); });
  pass("caches", [&] { analyseCaches(state, *out); });
  pass("liveness", [&] {
    analyseLiveness(graph, state, *out);
    report.runOrder = describeRunOrder(*out);
  });
  pass("memory layout", [&] { planMemory(graph, options.allowOutOfMemory, report, *out); });
  pass("simplify steps", [&] { simplifySteps(*out); });
  pass("cache invalidations", [&] { markCacheInvalidations(state, *out); });
  estimateSteps(graph, *out, report);
  return out;
}

} // namespace aspen::detail
