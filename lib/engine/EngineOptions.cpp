#include "EngineOptions.hpp"

#include "core/OptionParsing.hpp"
#include "executors/ExecutorRegistry.hpp"

#include <aspen/Error.hpp>

#include <cctype>
#include <cstdlib>
#include <thread>

namespace aspen::detail {

namespace {

// A JSON object whose values are strings (numbers and booleans are taken as their text), as
// Poplar reads POPLAR_ENGINE_OPTIONS.
class JsonOptionsReader {
public:
  JsonOptionsReader(std::string text, std::string source)
      : text_(std::move(text)), source_(std::move(source)) {}

  void readInto(OptionFlags &flags) {
    expect('{');
    if (peek() == '}') {
      ++pos_;
      return;
    }
    for (;;) {
      std::string key = readString();
      expect(':');
      std::string value = peek() == '"' ? readString() : readBareWord();
      flags.set(key, value);
      const char c = next();
      if (c == '}')
        return;
      if (c != ',')
        fail("',' or '}'");
    }
  }

private:
  char peek() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
    return pos_ < text_.size() ? text_[pos_] : '\0';
  }
  char next() {
    const char c = peek();
    if (pos_ < text_.size())
      ++pos_;
    return c;
  }
  void expect(char c) {
    if (next() != c)
      fail(std::string("'") + c + "'");
  }
  std::string readString() {
    expect('"');
    std::string s;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      if (text_[pos_] == '\\' && pos_ + 1 < text_.size())
        ++pos_;
      s += text_[pos_++];
    }
    if (pos_ >= text_.size())
      fail("a closing '\"'");
    ++pos_;
    return s;
  }
  std::string readBareWord() {
    peek();
    std::string s;
    while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                   text_[pos_] == '.' || text_[pos_] == '-' || text_[pos_] == '+'))
      s += text_[pos_++];
    if (s.empty())
      fail("a value");
    return s;
  }
  [[noreturn]] void fail(const std::string &expected) {
    throw invalid_option(source_ + " is not a JSON object of options: expected " + expected +
                         " at character " + std::to_string(pos_) + " of '" + text_ + "'");
  }

  std::string text_, source_;
  std::size_t pos_ = 0;
};

void readEnvironment(const char *variable, OptionFlags &flags) {
  if (const char *text = std::getenv(variable); text && *text)
    JsonOptionsReader(text, std::string("environment variable ") + variable).readInto(flags);
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
