#include "EngineOptions.hpp"

#include "support/OptionParsing.hpp"
#include "executors/ExecutorRegistry.hpp"
#include "support/Json.hpp"

#include <aspen/Error.hpp>

#include <cstdlib>

namespace aspen::detail {

namespace {

namespace json = aspen::support::json;

// A JSON object of options, as Poplar reads POPLAR_ENGINE_OPTIONS: string values, or numbers
// and booleans taken as their text.
void readEnvironment(const char *variable, OptionFlags &flags) {
  const char *text = std::getenv(variable);
  if (!text || !*text)
    return;
  const std::string source = std::string("environment variable ") + variable;
  const json::Value root = json::parse(text, source);
  if (!root.isObject())
    throw invalid_option(source + " = " + text + ": must be a JSON object of options");
  for (const auto &[key, value] : root.asObject()) {
    if (value.isString())
      flags.set(key, value.asString());
    else if (value.isNumber())
      flags.set(key, value.numberText());
    else if (value.isBool())
      flags.set(key, value.asBool() ? "true" : "false");
    else
      throw invalid_option(source + ": option '" + key + "' = " + value.write() +
                           " must be a string, a number or a boolean");
  }
}

} // namespace

EngineOptions parseEngineOptions(const OptionFlags &options) {
  OptionFlags merged;
  readEnvironment("POPLAR_ENGINE_OPTIONS", merged);
  readEnvironment("ASPEN_ENGINE_OPTIONS", merged);
  for (const auto &[key, value] : options)
    merged.set(key, value);

  EngineOptions result;
  bool instrument = false, retainDebugInformation = false;
  OptionSpec spec("Engine");
  for (const ExecutorBackend &backend : executorBackends())
    result.backendOptions[backend.name] = backend.declareOptions(spec);
  spec.boolean("debug.allowOutOfMemory", result.allowOutOfMemory)
      // Execution is always measured and debug names are always kept.
      .boolean("debug.instrument", instrument)
      .boolean("debug.retainDebugInformation", retainDebugInformation)
      // Streams are copied synchronously, so no overlap setting changes anything.
      .add("exchange.streamBufferOverlap", "one of none, hostRearrangeOnly, any",
           [](const std::string &v) { return v == "none" || v == "hostRearrangeOnly" || v == "any"; });
  for (const char *key : {"autoReport.all", "autoReport.directory", "autoReport.outputGraphProfile",
                          "autoReport.outputExecutionProfile", "autoReport.outputDebugInfo",
                          "autoReport.outputLoweredVars", "autoReport.outputArchive",
                          "autoReport.executionProfileProgramRunCount", "debug.trace",
                          "debug.instrumentCompute", "debug.floatPointOpException",
                          "debug.nanOverflowMode", "debug.executionProfile",
                          "debug.outputAllSymbols"})
    spec.ignored(key);
  for (const auto &[key, value] : merged)
    if (key.rfind("aspen.", 0) == 0 && !spec.knows(key)) {
      std::string known;
      for (const std::string &k : spec.keysWithPrefix("aspen."))
        known += (known.empty() ? "" : ", ") + k;
      throw invalid_option("Engine option '" + key +
                           "' is not known; Aspen's own options (aspen.*) are " + known);
    }
  spec.parse(merged, /*unknownIsError=*/false);
  return result;
}

ProfileOptions parseProfileOptions(const OptionFlags &options) {
  ProfileOptions result;
  OptionSpec spec("printProfileSummary");
  spec.boolean("showExecutionSteps", result.showExecutionSteps);
  spec.parse(options, /*unknownIsError=*/false);
  return result;
}

} // namespace aspen::detail
