#include "EngineOptions.hpp"

#include "support/OptionParsing.hpp"
#include "executors/ExecutorRegistry.hpp"

#include <aspen/Error.hpp>
#include <aspen/OptionFlags.hpp>

#include <algorithm>
#include <iterator>
#include <optional>

namespace aspen::detail {

namespace {

// Poplar's engine options (creation and runtime) that Aspen accepts and does not use: the IPU's
// reports, instrumentation, exchange, code layout and host-sync settings have no counterpart in
// Aspen's executors (profiling is always on; see docs/porting.md). Any other key is an error,
// as in Poplar. Older SDKs' keys are included so that old programs still run.
const char *const kPoplarOnlyKeys[] = {
    // Report generation (autoReport.all, .directory, .outputGraphProfile,
    // .outputExecutionProfile and .executionProfileProgramRunCount are read)
    "autoReport.outputDebugInfo", "autoReport.outputSerializedGraph", "autoReport.outputArchive",
    "autoReport.outputLoweredVars", "autoReport.streamAtEachRun",
    // Debug (debug.allowOutOfMemory, debug.instrument and debug.retainDebugInformation are read)
    "debug.instrumentCompute", "debug.instrumentControlFlow", "debug.instrumentExternalExchange",
    "debug.computeInstrumentationLevel", "debug.outputAllSymbols", "debug.branchRecordTile",
    "debug.verify", "debug.runtimeVerify", "debug.trace", "debug.traceFile",
    "debug.floatPointOpException", "debug.nanOverflowMode", "debug.executionProfile",
    "debug.loweredVarDumpFile", "debug.graphReportDestination",
    // Profiler
    "profiler.format", "profiler.replicaToProfile", "profiler.perExecutionStreamCopyCycles",
    "profiler.includeFlopEstimates", "profiler.includeCycleEstimates", "profiler.programs.filter",
    "profiler.blocks.filter", "profiler.blocks.tile", "profiler.blocks.implicitFlush",
    "profiler.blocks.bufferSize",
    // Optimisations
    "opt.maxCompilationThreads", "opt.internalExchangeOptimisationTarget", "opt.useAutoloader",
    "opt.enableMultiAccessCopies", "opt.limitVertexStateToLower256K",
    // Target (engine creation and runtime)
    "target.deterministicWorkers", "target.saveArchive", "target.syncReplicasIndependently",
    "target.useBufferedCompletions", "target.extendedMemory", "target.hostSyncTimeout",
    "target.maxStreamCallbackThreadsPerNumaNode", "target.gatewayMode",
    "target.workerStackSizeInBytes", "target.supervisorStackSizeInBytes",
    "target.textSectionSizeInBytes", "target.syncMethod", "target.syncPollPeriodUs",
    "target.exceptionPollPeriodUs",
    // Exchange (exchange.streamBufferOverlap is checked for its values)
    "exchange.enablePrefetch", "exchange.multicastPolicy",
    // Stream callbacks (runtime)
    "streamCallbacks.multiThreadMode", "streamCallbacks.numaAware",
    "streamCallbacks.numWorkerThreads", "streamCallbacks.maxLookahead",
    // Random numbers (older SDKs)
    "prng.enable", "prng.seed"};

} // namespace

EngineOptions parseEngineOptions(const OptionFlags &options) {
  OptionFlags merged;
  readJSONFromEnv("POPLAR_ENGINE_OPTIONS", merged);
  readJSONFromEnv("ASPEN_ENGINE_OPTIONS", merged);
  for (const auto &[key, value] : options)
    merged.set(key, value);

  EngineOptions result;
  bool instrument = false, retainDebugInformation = false;
  bool all = false;
  std::optional<bool> graphProfile, executionProfile;
  const auto optionalBool = [](std::optional<bool> &target) {
    return [&target](const std::string &v) {
      if (v != "true" && v != "false")
        return false;
      target = v == "true";
      return true;
    };
  };
  OptionSpec spec("Engine");
  for (const RegisteredExecutor &entry : registeredExecutors())
    result.executorOptions[entry.name] = entry.declareOptions(spec);
  spec.boolean("debug.allowOutOfMemory", result.allowOutOfMemory)
      .number("aspen.timeLimit", result.timeLimit, 0, 1e9)
      .boolean("aspen.cachedSteps", result.cachedSteps)
      // Execution is always measured and debug names are always kept.
      .boolean("debug.instrument", instrument)
      .boolean("debug.retainDebugInformation", retainDebugInformation)
      // Reports (docs/profiling.md): all turns every report on unless its own key says false.
      .boolean("autoReport.all", all)
      .add("autoReport.outputGraphProfile", "true or false", optionalBool(graphProfile))
      .add("autoReport.outputExecutionProfile", "true or false", optionalBool(executionProfile))
      .add("autoReport.directory", "a folder path (created when needed)",
           [&result](const std::string &v) {
             result.reportDirectory = v;
             return !v.empty();
           })
      .unsignedInteger("autoReport.executionProfileProgramRunCount", result.timelineRuns)
      .add("target.firstRuntimeReplica", "a whole number", 
           [&result](const std::string &v) {
             if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != v.npos)
               return false;
             result.firstRuntimeReplica = unsigned(std::stoul(v));
             return true;
           })
      .enumeration("aspen.collectives.onDevice", result.collectivesOnDevice,
                   {{"auto", EngineOptions::OnDevice::Auto},
                    {"true", EngineOptions::OnDevice::True},
                    {"false", EngineOptions::OnDevice::False}})
      .enumeration("aspen.collectives.transport", result.transport,
                   {{"auto", EngineOptions::Transport::Auto},
                    {"threads", EngineOptions::Transport::Threads},
                    {"mpi", EngineOptions::Transport::Mpi}})
      .number("aspen.collectives.timeout", result.collectivesTimeout, 1e-3, 1e7)
      .add("target.numberRuntimeReplica", "a whole number of replicas, 1 or more",
           [&result](const std::string &v) {
             if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != v.npos ||
                 std::stoul(v) == 0)
               return false;
             result.numberRuntimeReplica = unsigned(std::stoul(v));
             return true;
           })
      // Streams are copied synchronously, so no overlap setting changes anything.
      .add("exchange.streamBufferOverlap", "one of none, hostRearrangeOnly, any",
           [](const std::string &v) { return v == "none" || v == "hostRearrangeOnly" || v == "any"; });
  for (const char *key : kPoplarOnlyKeys)
    spec.ignored(key);
  for (const auto &[key, value] : merged) {
    if (spec.knows(key))
      continue;
    std::string used;
    for (const std::string &k : spec.keysWithPrefix(""))
      if (std::find(std::begin(kPoplarOnlyKeys), std::end(kPoplarOnlyKeys), k) ==
          std::end(kPoplarOnlyKeys))
        used += (used.empty() ? "" : ", ") + k;
    if (key.rfind("aspen.", 0) == 0)
      throw invalid_option("Engine option '" + key + "' is not known; Aspen's own options "
                           "(aspen.*) are " + used);
    throw invalid_option("Engine option '" + key + "' = '" + value +
                         "' is not known: neither an option Aspen uses (" + used +
                         ") nor one of Poplar's engine options, which Aspen accepts without "
                         "effect (docs/porting.md lists them)");
  }
  spec.parse(merged);
  result.outputGraphProfile = graphProfile.value_or(all);
  result.outputExecutionProfile = executionProfile.value_or(all);
  return result;
}

ProfileOptions parseProfileOptions(const OptionFlags &options) {
  ProfileOptions result;
  OptionSpec spec("printProfileSummary");
  spec.boolean("showExecutionSteps", result.showExecutionSteps)
      .enumeration("aspen.format", result.format,
                   {{"text", ProfileOptions::Format::Text},
                    {"json", ProfileOptions::Format::Json},
                    {"trace", ProfileOptions::Format::Trace},
                    {"html", ProfileOptions::Format::Html}})
      .add("aspen.reportContext", "a JSON object", [&result](const std::string &v) {
        result.context = v;
        return true; // checked as JSON where the report is made, with a precise message
      });
  // Poplar's other printProfileSummary options (showVarStorage, ...) are warned about and
  // ignored; a key of Aspen's own must be known.
  for (const auto &[key, value] : options)
    if (key.rfind("aspen.", 0) == 0 && !spec.knows(key))
      throw invalid_option("printProfileSummary option '" + key +
                           "' is not known; Aspen's own are aspen.format and "
                           "aspen.reportContext");
  spec.parse(options, /*unknownIsError=*/false);
  return result;
}

} // namespace aspen::detail
