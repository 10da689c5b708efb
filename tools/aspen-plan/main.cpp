// aspen-plan: the planner CLI. It builds one layer (a matrix product, or an LSTM, GRU or vanilla
// RNN layer with popnn's options) for a target, compiles it, and prints how it was planned and
// tiled, the memory each tile needs, the flops and the target model's time estimate; with --run
// it also runs the layer on random data and prints the measured times beside the estimates.
// --json, --trace and --html write the engine's profile report (docs/profiling.md), with the
// layer and its plan in the report's "context".
//
// Usage: aspen-plan {matmul|conv|lstm|gru|rnn} [layer flags] [--target T] [--dry-run | --run] ...
// The layer flags are those of the layer drivers (lstm_layer, gru_layer, rnn_layer); any
// option of the layer can also be given as --option key=value.
// Exit status: 0 done; 1 the layer did not compile or run (including a plan that does not fit
// the target's memory); 2 bad usage or options the layer refuses.
#include "aspen-plan/ConvLayer.hpp"
#include "aspen-plan/MatMulLayer.hpp"
#include "gru_layer/GruLayer.hpp"
#include "lstm_layer/LstmLayer.hpp"
#include "rnn_layer/RnnLayer.hpp"
#include "support/Json.hpp" // compiled into this program (lib/support/Json.cpp)

#include <aspen/linalg/Codelets.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace rnnlayer;
namespace json = aspen::support::json;

namespace {

const char *const kTool = "aspen-plan";

// The flags aspen-plan adds to every layer's.
struct PlanSettings {
  std::string target = "h200";
  std::optional<unsigned> tiles;
  bool dryRun = false, run = false, quiet = false;
  unsigned runs = 3, seed = 1;
  std::string jsonFile, traceFile, htmlFile;
  aspen::OptionFlags engineOptions;
};

template <class Base> struct PlanConfig : Base {
  PlanSettings plan;
};

std::pair<std::string, std::string> keyValue(const std::string &flag, const std::string &text) {
  const std::size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(fmt::format("--{}: '{}' is not key=value", flag, text));
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// The layer's flags, then aspen-plan's.
template <class Base>
std::vector<Flag<PlanConfig<Base>>> planFlags(const std::vector<Flag<Base>> &layer) {
  using C = PlanConfig<Base>;
  using F = Flag<C>;
  std::vector<F> t;
  for (const Flag<Base> &f : layer)
    t.push_back(F{f.name, f.defaultValue, f.help,
                  [set = f.set](C &c, const std::string &flag, const std::string &value) {
                    set(c, flag, value);
                  },
                  f.kind, f.unsetMeaning});
  const std::vector<F> own = {
      F{"option", nullptr, "key=value: any option of the layer (repeatable)",
        [](C &c, auto &f, auto &v) {
          const auto [key, value] = keyValue(f, v);
          c.layerOptions.set(key, value);
        },
        FlagKind::Value, "none"},
      F{"engine-option", nullptr, "key=value: an engine option, e.g. aspen.cpu.threads=4",
        [](C &c, auto &f, auto &v) {
          const auto [key, value] = keyValue(f, v);
          c.plan.engineOptions.set(key, value);
        },
        FlagKind::Value, "none"},
      F{"target", "h200", "h200 | h100 | ipu2 | ipu21 | ipu1 (models) | cpu | gpu (this machine's)",
        [](C &c, auto &, auto &v) { c.plan.target = v; }},
      F{"tiles", nullptr, "tiles of a model target",
        [](C &c, auto &f, auto &v) { c.plan.tiles = parsePositive(f, v); }, FlagKind::Value,
        "the model's"},
      F{"dry-run", "0", "plan, compile and estimate; run nothing (the default)",
        [](C &c, auto &f, auto &v) { c.plan.dryRun = parseBool(f, v); }, FlagKind::Switch},
      F{"run", "0", "also run the layer on random data: measured times beside the estimates",
        [](C &c, auto &f, auto &v) { c.plan.run = parseBool(f, v); }, FlagKind::Switch},
      F{"runs", "3", "runs with --run (each one is recorded in the timeline)",
        [](C &c, auto &f, auto &v) { c.plan.runs = parsePositive(f, v); }},
      F{"seed", "1", "seed of the random data",
        [](C &c, auto &f, auto &v) { c.plan.seed = parseNumber<unsigned>(f, v); }},
      F{"json", nullptr, "FILE: the profile report (JSON, docs/profiling.md)",
        [](C &c, auto &, auto &v) { c.plan.jsonFile = v; }, FlagKind::Value, "none"},
      F{"trace", nullptr, "FILE: a Chrome trace (Perfetto, chrome://tracing)",
        [](C &c, auto &, auto &v) { c.plan.traceFile = v; }, FlagKind::Value, "none"},
      F{"html", nullptr, "FILE: a self-contained HTML report",
        [](C &c, auto &, auto &v) { c.plan.htmlFile = v; }, FlagKind::Value, "none"},
      F{"quiet", "0", "print nothing but errors (no tables, no progress line)",
        [](C &c, auto &f, auto &v) { c.plan.quiet = parseBool(f, v); }, FlagKind::Switch},
  };
  t.insert(t.end(), own.begin(), own.end());
  return t;
}

// --- Targets and devices ---------------------------------------------------------------------

const std::vector<std::string> kModels = {"h200", "h100", "ipu2", "ipu21", "ipu1"};

aspen::Target makeTarget(const PlanSettings &s) {
  using aspen::Target;
  const bool model = std::find(kModels.begin(), kModels.end(), s.target) != kModels.end();
  if (s.tiles && !model)
    throw UsageError(fmt::format("--tiles applies to model targets, not '{}'", s.target));
  if (s.target == "cpu")
    return aspen::Device::createCPUDevice().getTarget();
  if (s.target == "gpu")
    return aspen::Device::createGpuDevice(0).getTarget();
  if (!model)
    throw UsageError(fmt::format("--target '{}' is not one of h200, h100, ipu2, ipu21, ipu1, "
                                 "cpu, gpu",
                                 s.target));
  return s.tiles ? Target::createModel(s.target, *s.tiles) : Target::createModel(s.target);
}

aspen::Device makeDevice(const PlanSettings &s, const aspen::Target &target) {
  if (s.target == "cpu")
    return aspen::Device::createCPUDevice();
  if (s.target == "gpu")
    return aspen::Device::createGpuDevice(0);
  return aspen::Device::createModelDevice(target); // the CPU executor, modelling the target
}

// --- The progress line -----------------------------------------------------------------------

// One line on stderr, rewritten in place, when stderr is a terminal and --quiet is not given.
class Progress {
public:
  explicit Progress(bool quiet) : enabled_(!quiet && isatty(STDERR_FILENO)) {}
  ~Progress() { clear(); }
  void show(const std::string &text) {
    if (!enabled_)
      return;
    fmt::print(stderr, "\r\033[K{}: {}", kTool, text);
    std::fflush(stderr);
    shown_ = true;
  }
  void clear() {
    if (enabled_ && shown_)
      fmt::print(stderr, "\r\033[K");
    shown_ = false;
  }

private:
  bool enabled_;
  bool shown_ = false;
};

// --- Numbers as text -------------------------------------------------------------------------

std::string bytesText(double bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.1f} {}", bytes, units[u]);
}

std::string secondsText(const json::Value *seconds) {
  if (!seconds || !seconds->isNumber())
    return "n/a";
  const double s = seconds->asDouble();
  if (s >= 1)
    return fmt::format("{:.3f} s", s);
  if (s >= 1e-3)
    return fmt::format("{:.3f} ms", s * 1e3);
  return fmt::format("{:.3f} us", s * 1e6);
}

std::string flopsText(double flops) {
  const char *units[] = {"", "K", "M", "G", "T", "P"};
  int u = 0;
  while (flops >= 1000 && u < 5) {
    flops /= 1000;
    ++u;
  }
  return fmt::format("{:.{}f} {}FLOP", flops, u == 0 ? 0 : 2, units[u]);
}

const json::Value &member(const json::Value &v, const char *key) {
  static const json::Value null;
  const json::Value *m = v.find(key);
  return m ? *m : null;
}
double number(const json::Value &v, const char *key) {
  const json::Value &m = member(v, key);
  return m.isNumber() ? m.asDouble() : 0.0;
}

void row(const std::string &name, const std::string &value) {
  fmt::print("  {:<24}{}\n", name, value);
}

// --- What one layer kind contributes ---------------------------------------------------------

struct LayerSetup {
  std::string summary;   // sizes and types, one line
  json::Value layer;     // the context's "layer"
  json::Value plan;      // the context's "plan"
  std::vector<std::pair<std::string, std::string>> planRows;
  BuiltLayer built;
  std::vector<unsigned> timeSteps; // written to the "timeSteps" handle with --run
};

json::Value layerJson(const std::string &kind, const CommonConfig &c) {
  json::Value layer = json::Value::object();
  layer.set("kind", json::Value::string(kind));
  json::Value options = json::Value::object();
  for (const auto &[key, value] : c.layerOptions)
    options.set(key, json::Value::string(value));
  layer.set("options", std::move(options));
  return layer;
}

// A plan's text ("name: value" lines) as rows of the Plan table.
void addPlanRows(LayerSetup &setup, const std::string &text) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);)
    if (const std::size_t colon = line.find(':'); colon != std::string::npos)
      setup.planRows.push_back({trim(line.substr(0, colon)), trim(line.substr(colon + 1))});
}

json::Value recurrentPlanJson(const aspen::nn::RecurrentPlan &plan) {
  return json::parse(plan.toJson(), "RecurrentPlan::toJson");
}

void recurrentRows(LayerSetup &setup, const CommonConfig &c, bool hasRecomputation) {
  setup.summary = fmt::format("T={} B={} I={} H={} {} phase={}", c.sequenceSize, c.batchSize,
                              c.inputSize, c.outputSize, c.dataTypeName, c.phase);
  json::Value &layer = setup.layer;
  for (const auto &[key, value] :
       {std::pair<const char *, std::size_t>{"T", c.sequenceSize}, {"B", c.batchSize},
        {"I", c.inputSize}, {"H", c.outputSize}})
    layer.set(key, json::Value::number(std::uint64_t(value)));
  layer.set("phase", json::Value::string(c.phase));
  layer.set("dataType", json::Value::string(c.dataTypeName));
  layer.set("flops", json::Value::number(setup.built.flops));
  setup.timeSteps = c.variableTimeSteps;
  if (!setup.built.plan) {
    setup.plan = json::Value::object();
    setup.planRows = {{"shards", "1 (this layer is not sharded)"},
                      {"WU cadence", c.weightUpdate() ? "in the backward pass (rnnBwdSequence)"
                                                      : "no weight update (phase " + c.phase + ")"},
                      {"recomputation", "none"}};
    return;
  }
  const aspen::nn::RecurrentPlan &p = *setup.built.plan;
  setup.plan = recurrentPlanJson(p);
  std::string cadence;
  if (c.phase == "all")
    cadence = p.stepsPerWU == 0 ? "one pass after the backward loop (rnnStepsPerWU 0)"
                                : fmt::format("every {} backward steps (rnnStepsPerWU)",
                                              p.stepsPerWU);
  else if (c.phase == "wu")
    cadence = "a separate pass after the backward pass (phase wu)";
  else
    cadence = "no weight update (phase " + c.phase + ")";
  setup.planRows = {{"shards", fmt::format("{} (code reuse: {})", p.numShards,
                                           p.codeReuse ? "yes" : "no")},
                    {"WU cadence", cadence},
                    {"recomputation", hasRecomputation ? p.recomputation : "none (GRU)"},
                    {"partials", p.partialsType}};
  if (hasRecomputation)
    setup.planRows.push_back({"input weighed ahead", p.preCalcWeights ? "yes (preCalcWeights)"
                                                                      : "no (preCalcWeights)"});
  const std::string launch =
      p.persistentBlocks == 0 || p.persistentThreadsPerBlock == 0 // no launch was planned
          ? std::string()
          : fmt::format("{} blocks of {} threads, {} bytes of shared memory a block{}, {} "
                        "arithmetic",
                        p.persistentBlocks, p.persistentThreadsPerBlock, p.persistentSharedBytes,
                        p.persistentWeightsInRegisters ? ", weights in registers"
                        : p.persistentWeightsInSharedMemory
                            ? (p.persistentArithmetic == "tensor"
                                   ? ", weights on chip (registers and shared memory)"
                                   : ", weights on chip (shared memory)")
                            : ", weights read from memory",
                        p.persistentArithmetic);
  setup.planRows.push_back(
      {"forward loop",
       p.persistent ? "one persistent launch (rnnPersistentKernel): " + launch
                    : "per step: " + p.persistentRefusal +
                          (launch.empty() ? "" : " (persistent would be " + launch + ")")});
  if (!launch.empty())
    setup.planRows.push_back(
        {"time a step", fmt::format("{:.3g} us per step, {:.3g} us persistent (the cost "
                                    "model's estimates)",
                                    1e6 * p.perStepSecondsEstimate,
                                    1e6 * p.persistentSecondsEstimate)});
}

// --- Running the plan ------------------------------------------------------------------------

std::vector<double> randomData(std::mt19937 &rng, std::size_t n) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> values(n);
  for (double &v : values)
    v = uniform(rng);
  return values;
}

std::string commandLine(int argc, char **argv) {
  std::string text = kTool;
  for (int i = 1; i < argc; ++i)
    text += std::string(" ") + argv[i];
  return text;
}

void writeFile(const std::string &path, const std::string &text, const char *what) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out)
    throw UsageError(fmt::format("--{} {}: cannot write the file", what, path));
}

// The report's memory rows.
void printMemory(const json::Value &report, const json::Value &target) {
  const json::Value &memory = member(report, "memory");
  const json::Value &perTile = member(memory, "perTile");
  const json::Value &peak = member(memory, "peakPerTile");
  fmt::print("Memory\n");
  row("tiles used", fmt::format("{} of {}", number(memory, "tilesUsed"), number(target, "tiles")));
  row("per tile", fmt::format("min {}, mean {}, max {} (tile {})", bytesText(number(perTile, "min")),
                              bytesText(number(perTile, "mean")),
                              bytesText(number(perTile, "max")), number(perTile, "maxTile")));
  row("per tile at once", fmt::format("max {} (tile {}), {:.1f}% of the tile's {}",
                                      bytesText(number(peak, "max")), number(peak, "maxTile"),
                                      100.0 * number(peak, "max") /
                                          std::max(1.0, number(target, "bytesPerTile")),
                                      bytesText(number(target, "bytesPerTile"))));
  row("total", fmt::format("{} of variables; arena {} ({} always live)",
                           bytesText(number(memory, "variableBytes")),
                           bytesText(number(memory, "arenaBytes")),
                           bytesText(number(memory, "alwaysLiveBytes"))));

}

// The measured compute sets, kernels, copies and program steps, costliest first.
void printMeasured(const json::Value &report) {
  const json::Value &copies = member(report, "copies");
  struct Line {
    std::string name;
    double calls, seconds;
    const json::Value *estimate;
  };
  const auto table = [](const char *title, std::vector<Line> lines) {
    std::sort(lines.begin(), lines.end(),
              [](const Line &a, const Line &b) { return a.seconds > b.seconds; });
    fmt::print("{} (by measured total; time a call: measured, estimated)\n", title);
    const std::size_t shown = std::min<std::size_t>(lines.size(), 12);
    for (std::size_t i = 0; i < shown; ++i) {
      const Line &l = lines[i];
      const json::Value mean = json::Value::number(l.calls > 0 ? l.seconds / l.calls : 0.0);
      fmt::print("  {:<48} {:>8} calls  {:>12}  {:>12}\n",
                 l.name.size() > 48 ? l.name.substr(0, 45) + "..." : l.name, l.calls,
                 secondsText(&mean), secondsText(l.estimate));
    }
    if (lines.size() > shown)
      fmt::print("  ... {} more in the JSON report\n", lines.size() - shown);
  };
  std::vector<Line> lines;
  for (const json::Value &cs : member(report, "computeSets").asArray())
    if (number(cs, "calls") > 0)
      lines.push_back({member(cs, "name").asString(), number(cs, "calls"), number(cs, "seconds"),
                       cs.find("estimatedSeconds")});
  for (const json::Value &k : member(report, "kernels").asArray())
    if (number(k, "calls") > 0)
      lines.push_back({"kernel " + member(k, "name").asString(), number(k, "calls"),
                       number(k, "seconds"), k.find("estimatedSeconds")});
  table("Compute sets and kernels", std::move(lines));
  lines.clear();
  for (const json::Value &c : member(copies, "plans").asArray())
    if (number(c, "timelineCalls") > 0)
      lines.push_back({fmt::format("copy {} ({})", number(c, "id"), bytesText(number(c, "bytes"))),
                       number(c, "timelineCalls"), number(c, "timelineSeconds"),
                       c.find("estimatedSeconds")});
  table("Copies", std::move(lines));
  lines.clear();
  for (const json::Value &step : member(report, "steps").asArray())
    lines.push_back({member(step, "kind").asString() +
                         (member(step, "name").asString().empty()
                              ? fmt::format(" #{}", number(step, "id"))
                              : " '" + member(step, "name").asString() + "'"),
                     number(step, "calls"), number(step, "seconds"),
                     step.find("estimatedSeconds")});
  table("Program steps", std::move(lines));
}

void printTables(const std::string &kind, const LayerSetup &setup, const json::Value &report,
                 const PlanSettings &s, const std::string &deviceText) {
  const json::Value &target = member(report, "target");
  fmt::print("{} {}: {}\n", kTool, kind, setup.summary);
  fmt::print("target {}: {} tiles, {} workers a tile, {} a tile; {}\n",
             member(target, "name").asString(), number(target, "tiles"),
             number(target, "workersPerTile"), bytesText(number(target, "bytesPerTile")),
             s.run ? "run on " + deviceText : std::string("dry run: planned and estimated, "
                                                          "nothing run"));
  fmt::print("Plan\n");
  for (const auto &[name, value] : setup.planRows)
    row(name, value);
  row("FLOPs (layer)", flopsText(double(setup.built.flops)) + " a run");

  fmt::print("Graph\n");
  row("compute sets", fmt::format("{}", member(report, "computeSets").asArray().size()));
  row("vertices", fmt::format("{}", number(member(report, "vertices"), "total")));
  const json::Value &copies = member(report, "copies");
  row("copies", fmt::format("{} ({} a run)", number(copies, "count"),
                            bytesText(number(copies, "bytes"))));
  row("kernels", fmt::format("{}", member(report, "kernels").asArray().size()));

  printMemory(report, target);

  fmt::print("Time\n");
  for (const json::Value &p : member(report, "programs").asArray()) {
    std::string text = secondsText(p.find("estimatedSeconds")) + " a run estimated";
    if (!member(p, "exactEstimate").asBool())
      text += " (inexact)";
    if (number(p, "runs") > 0) {
      const json::Value mean = json::Value::number(number(p, "seconds") / number(p, "runs"));
      text += fmt::format(", {} measured (mean of {})", secondsText(&mean), number(p, "runs"));
    }
    row(fmt::format("program {}", number(p, "index")), text);
  }
  if (!s.run)
    return;

  printMeasured(report);
}

// Loads the engine on the device, writes random inputs (and the lengths) and runs it; the
// device's description.
std::string runLayer(aspen::Engine &engine, const PlanSettings &s, const aspen::Target &target,
                     const LayerSetup &setup, Progress &progress) {
  progress.show("loading");
  const aspen::Device device = makeDevice(s, target);
  engine.load(device);
  std::mt19937 rng(s.seed);
  for (const auto &[name, tensor] : setup.built.inputs)
    writeValues(engine, name, tensor.elementType(), randomData(rng, tensor.numElements()));
  if (!setup.timeSteps.empty())
    engine.writeTensor("timeSteps", setup.timeSteps.data(),
                       setup.timeSteps.data() + setup.timeSteps.size());
  for (unsigned r = 0; r < s.runs; ++r) {
    progress.show(fmt::format("running: {} of {}", r + 1, s.runs));
    engine.run(0);
  }
  return device.describe();
}

// The engine's profile report with the plan's context, written to the files asked for.
json::Value profileReport(aspen::Engine &engine, const PlanSettings &s, const LayerSetup &setup,
                          const std::string &deviceText, int argc, char **argv) {
  json::Value context = json::Value::object();
  context.set("tool", json::Value::string(kTool));
  context.set("command", json::Value::string(commandLine(argc, argv)));
  context.set("mode", json::Value::string(s.run ? "run" : "dry-run"));
  context.set("device", s.run ? json::Value::string(deviceText) : json::Value());
  context.set("runs", json::Value::number(std::uint64_t(s.run ? s.runs : 0)));
  context.set("layer", setup.layer);
  context.set("plan", setup.plan);
  const std::string contextText = context.write();
  const auto profile = [&](const char *format) {
    std::ostringstream out;
    engine.printProfileSummary(out, {{"aspen.format", format},
                                     {"aspen.reportContext", contextText}});
    return out.str();
  };
  const std::string reportText = profile("json");
  const json::Value report = json::parse(reportText, "the engine's profile report");
  if (!s.jsonFile.empty())
    writeFile(s.jsonFile, reportText, "json");
  if (!s.traceFile.empty())
    writeFile(s.traceFile, profile("trace"), "trace");
  if (!s.htmlFile.empty())
    writeFile(s.htmlFile, profile("html"), "html");
  return report;
}

template <class Base, class Setup>
int planLayer(const std::string &kind, int argc, char **argv,
              const std::vector<Flag<Base>> &layerFlags, const Setup &setupLayer) {
  using C = PlanConfig<Base>;
  const std::vector<Flag<C>> flags = planFlags(layerFlags);
  C c;
  try {
    c = parseCommandLine(argc - 1, argv + 1, flags);
  } catch (const UsageError &e) {
    fmt::print(stderr, "{0} {1}: {2}\nRun '{0} {1} --help' for the flags.\n", kTool, kind,
               e.what());
    return 2;
  }
  if (c.help) {
    printHelp(fmt::format("Usage: {} {} [--flag value | --flag=value]...\n"
                          "Plans, compiles and estimates the layer for a target; --run also "
                          "runs it.\nExit status: 0 done, 1 the layer did not compile or run, "
                          "2 bad usage.\n",
                          kTool, kind),
              flags);
    return 0;
  }
  PlanSettings &s = c.plan;
  try {
    if (s.run && s.dryRun)
      throw UsageError("--run and --dry-run exclude each other");
    Progress progress(s.quiet);
    const aspen::Target target = makeTarget(s);
    progress.show("building the graph");
    aspen::Graph graph(target);
    aspen::ops::addCodelets(graph);
    aspen::linalg::addCodelets(graph);
    aspen::nn::addCodelets(graph);
    aspen::linalg::PlanningCache cache;
    LayerSetup setup = setupLayer(graph, static_cast<const Base &>(c), cache);

    aspen::OptionFlags engineOptions = s.engineOptions;
    engineOptions.set("autoReport.executionProfileProgramRunCount", std::to_string(s.runs));
    aspen::Engine engine(graph, setup.built.program, engineOptions, [&](int pass, int passes) {
      progress.show(fmt::format("compiling: pass {} of {}", pass, passes));
    });
    const std::string deviceText = s.run ? runLayer(engine, s, target, setup, progress) : "";
    progress.clear();

    const json::Value report = profileReport(engine, s, setup, deviceText, argc, argv);
    if (!s.quiet)
      printTables(kind, setup, report, s, deviceText);
    return 0;
  } catch (const UsageError &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{} {}: {}\n", kTool, kind, e.what());
    return 2;
  } catch (const aspen::invalid_option &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{} {}: the layer refused the options: {}\n", kTool, kind, e.what());
    return 2;
  } catch (const aspen::graph_memory_allocation_error &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{} {}: the plan does not fit the target: {}\n", kTool, kind, e.what());
    return 1;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{} {}: FAIL ({})\n", kTool, kind, e.what());
    return 1;
  }
}

void printUsage() {
  fmt::print("Usage: {} {{matmul|conv|lstm|gru|rnn}} [flags]   ({} LAYER --help lists the flags)\n"
             "Plans a layer for a target (--target h200 by default), compiles it and prints its "
             "tiling,\nmemory, flops and estimated time; --run also runs it and measures. "
             "Reports: --json,\n--trace (Chrome trace) and --html (a self-contained page); "
             "docs/profiling.md.\n",
             kTool, kTool);
}

} // namespace

// A stack's summary and JSON: its layers, directions and dropout (the plan rows are its first
// layer's; the rest is the stack's).
template <typename Config>
void stackRows(LayerSetup &setup, const Config &c, const std::string &schedule) {
  if (c.numLayers > 1) {
    setup.summary += fmt::format(" layers={}", c.numLayers);
    setup.layer.set("numLayers", json::Value::number(std::uint64_t(c.numLayers)));
  }
  if (c.bidirectional) {
    setup.summary += " bidirectional";
    setup.layer.set("direction", json::Value::string("bidirectional"));
  }
  if (c.dropout > 0) {
    setup.summary += fmt::format(" dropout={}", c.dropout);
    setup.layer.set("dropout", json::Value::number(c.dropout));
  }
  if (!schedule.empty()) { // a stack in one call: the schedule it runs, auto resolved
    setup.summary += " schedule=" + schedule;
    setup.layer.set("stackSchedule", json::Value::string(schedule));
  }
}

namespace {

// Each layer's setup for planLayer: its build, summary, JSON and table rows.
LayerSetup setUpLstm(aspen::Graph &graph, const lstmlayer::Config &c,
                     aspen::linalg::PlanningCache &cache) {
  lstmlayer::checkConfig(c);
  LayerSetup setup{"", layerJson("lstm", c), {}, {}, lstmlayer::build(graph, c, cache), {}};
  recurrentRows(setup, c, true);
  std::string schedule;
  if (lstmlayer::usesStackCall(c)) {
    auto params = lstmlayer::layerParams(c, aspen::Tensor(), 0);
    params.outputFullSequence = true;
    schedule = aspen::nn::lstm::getStackSchedule(graph, params, lstmlayer::stackCallOptions(c));
  }
  stackRows(setup, c, schedule);
  if (c.projSize) {
    setup.summary += fmt::format(" P={}", c.projSize);
    setup.layer.set("projSize", json::Value::number(std::uint64_t(c.projSize)));
  }
  return setup;
}

LayerSetup setUpGru(aspen::Graph &graph, const grulayer::Config &c,
                    aspen::linalg::PlanningCache &cache) {
  grulayer::checkConfig(c);
  LayerSetup setup{"", layerJson(c.withAttention ? "augru" : "gru", c), {}, {},
                   grulayer::build(graph, c, cache), {}};
  recurrentRows(setup, c, false);
  std::string schedule;
  if (grulayer::usesStackCall(c)) {
    auto params = grulayer::layerParams(c, aspen::Tensor(), 0);
    params.outputFullSequence = true;
    schedule = aspen::nn::gru::getStackSchedule(graph, params, grulayer::stackCallOptions(c));
  }
  stackRows(setup, c, schedule);
  return setup;
}

LayerSetup setUpRnn(aspen::Graph &graph, const vanilla::Config &c,
                    aspen::linalg::PlanningCache &cache) {
  LayerSetup setup{"", layerJson("rnn", c), {}, {}, vanilla::build(graph, c, cache), {}};
  recurrentRows(setup, c, false);
  std::string schedule;
  if (vanilla::usesStackCall(c)) {
    const aspen::nn::rnn::RecurrentParams params(
        aspen::nn::rnn::RnnParams(c.dataType, c.batchSize, c.sequenceSize,
                                  {c.inputSize, c.outputSize}),
        c.activation->aspen);
    schedule = aspen::nn::rnn::getStackSchedule(graph, params, stackCallOptions(c));
  }
  stackRows(setup, c, schedule);
  return setup;
}

LayerSetup setUpMatMul(aspen::Graph &graph, const matmullayer::Config &c,
                       aspen::linalg::PlanningCache &cache) {
  aspen::linalg::MatMulPlan plan;
  LayerSetup setup{"", layerJson("matmul", c), {}, {}, matmullayer::build(graph, c, cache, plan),
                   {}};
  setup.summary =
      fmt::format("G={} M={} K={} N={} {}", c.groups, c.m(), c.k(), c.n(), c.dataTypeName);
  for (const auto &[key, value] : {std::pair<const char *, std::size_t>{"G", c.groups},
                                   {"M", c.m()}, {"K", c.k()}, {"N", c.n()}})
    setup.layer.set(key, json::Value::number(std::uint64_t(value)));
  setup.layer.set("dataType", json::Value::string(c.dataTypeName));
  setup.layer.set("flops", json::Value::number(setup.built.flops));
  setup.plan = json::parse(plan.toJson(), "MatMulPlan::toJson");
  addPlanRows(setup, plan.toString());
  return setup;
}

LayerSetup setUpConv(aspen::Graph &graph, const convlayer::Config &c,
                     aspen::linalg::PlanningCache &cache) {
  std::string planText;
  std::vector<std::pair<std::string, std::string>> planJson;
  LayerSetup setup{"", layerJson("conv", c), {}, {},
                   convlayer::build(graph, c, cache, planText, planJson), {}};
  std::ostringstream params;
  params << convlayer::params(c);
  setup.summary = fmt::format("B={} G={} Ci={} Co={} field {{{}}} kernel {{{}}} {} pass {}",
                              c.batchSize, c.convGroups, c.inputChannels, c.outputChannels,
                              fmt::join(c.field, ","), fmt::join(c.kernel, ","),
                              c.dataTypeName, c.pass);
  setup.layer.set("params", json::Value::string(params.str()));
  setup.layer.set("dataType", json::Value::string(c.dataTypeName));
  setup.layer.set("flops", json::Value::number(setup.built.flops));
  setup.plan = json::Value::object();
  for (const auto &[pass, text] : planJson)
    setup.plan.set(pass, json::parse(text, "ConvPlan::toJson"));
  addPlanRows(setup, planText);
  return setup;
}

} // namespace

int main(int argc, char **argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  if (kind == "--help" || kind == "-h" || kind == "help") {
    printUsage();
    return 0;
  }
  if (kind == "lstm")
    return planLayer(kind, argc, argv, lstmlayer::layerFlagTable(), setUpLstm);
  if (kind == "gru")
    return planLayer(kind, argc, argv, grulayer::layerFlagTable(), setUpGru);
  if (kind == "rnn")
    return planLayer(kind, argc, argv, vanilla::layerFlagTable(), setUpRnn);
  if (kind == "matmul")
    return planLayer(kind, argc, argv, matmullayer::layerFlagTable(), setUpMatMul);
  if (kind == "conv")
    return planLayer(kind, argc, argv, convlayer::layerFlagTable(), setUpConv);
  fmt::print(stderr, "{}: {} is not a layer: give matmul, conv, lstm, gru or rnn first\n", kTool,
             kind.empty() ? std::string("nothing") : "'" + kind + "'");
  printUsage();
  return 2;
}
