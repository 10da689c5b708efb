// lstm_layer: builds one LSTM layer with aspen::nn::lstm (popnn's lstm_layer tool and flags),
// runs it on a device with seeded random data, and checks every result against the
// double-precision host model of LstmReference.hpp.
//
// Phases: fwd (lstmFwd with inferenceOnly), bwd (+ lstmBwd), wu (+ lstmBwd keeping the backward
// intermediates, then the separate lstmWU pass), all (+ lstmBwdWithWU: weight update interleaved
// with the backward loop). Inputs are uniform in [-1, 1] (weights scaled by 1/sqrt(H)) from
// std::mt19937(--seed) and rounded to the data type before both Aspen and the model see them.
// A result element passes when |aspen - reference| <= abs + rel * |reference|; default
// tolerances: float rel 2e-4 / abs 1e-5, half rel 2e-2 / abs 2e-3 (half rounds every stored
// value to 11 significant bits, and the errors of T steps compound).
//
// Exit status: 0 all results agree (or --compile-only compiled); 1 a result disagrees or the
// build or run failed; 2 bad usage, including options Aspen rejects (aspen::invalid_option).
#include "lstm_layer/LstmReference.hpp"
#include "lstm_layer/NpyWriter.hpp"

#include <aspen/Device.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/Target.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMulPlan.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/Lstm.hpp>
#include <aspen/ops/Codelets.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

using namespace aspen;
namespace lstm = aspen::nn::lstm;
using Shape = std::vector<std::size_t>;

namespace {

// --- Flags -----------------------------------------------------------------------------------

// A bad command line: reported with exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The activation names of the flags, the reference's kinds and Aspen's.
struct ActivationName {
  const char *name;
  lstmref::Activation reference;
  nn::NonLinearityType aspen;
};
constexpr ActivationName kActivations[] = {
    {"sigmoid", lstmref::Activation::sigmoid, nn::NonLinearityType::SIGMOID},
    {"hard_sigmoid", lstmref::Activation::hard_sigmoid, nn::NonLinearityType::HARD_SIGMOID},
    {"relu", lstmref::Activation::relu, nn::NonLinearityType::RELU},
    {"tanh", lstmref::Activation::tanh, nn::NonLinearityType::TANH},
    {"gelu", lstmref::Activation::gelu, nn::NonLinearityType::GELU},
    {"gelu_erf", lstmref::Activation::gelu_erf, nn::NonLinearityType::GELU_ERF},
    {"swish", lstmref::Activation::swish, nn::NonLinearityType::SWISH},
    {"softmax", lstmref::Activation::softmax, nn::NonLinearityType::SOFTMAX}};
static_assert(std::size(kActivations) == lstmref::kNumActivations,
              "every activation of the reference needs a flag name");

struct Config {
  std::size_t inputSize = 0, outputSize = 0, batchSize = 0, sequenceSize = 0;
  std::string phase;
  Type dataType = FLOAT;
  std::string dataTypeName;
  std::vector<lstm::BasicLstmCellUnit> cellOrder;
  const ActivationName *activation = nullptr;
  const ActivationName *recurrentActivation = nullptr;
  bool ignoreInputGradient = false, outputAllSequence = true, lastStepStateGrad = false;
  bool preWeightInput = false, compileOnly = false, profile = false;
  std::vector<unsigned> variableTimeSteps;
  unsigned runs = 1, seed = 1;
  std::optional<unsigned> tilesPerIpu;
  std::optional<double> relTolerance, absTolerance;
  std::string device, saveTensors;
  // Layer options given on the command line (the others keep the library's defaults).
  OptionFlags layerOptions;
  bool help = false;
};

std::string trim(const std::string &s) {
  const auto begin = s.find_first_not_of(" \t");
  return begin == std::string::npos ? "" : s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// "{a, b,c}", "a,b,c" or joined lists "{a},{b,c}" -> {"a", "b", "c"}
std::vector<std::string> parseList(const std::string &flag, const std::string &value) {
  std::vector<std::string> items;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = value.find(',', at);
    std::string item = trim(value.substr(at, comma == std::string::npos ? comma : comma - at));
    if (!item.empty() && item.front() == '{')
      item = trim(item.substr(1));
    if (!item.empty() && item.back() == '}')
      item = trim(item.substr(0, item.size() - 1));
    if (item.empty() || item.find_first_of("{}") != std::string::npos)
      throw UsageError(fmt::format("--{}: '{}' is not a list like {{a,b,c}}", flag, value));
    items.push_back(item);
    if (comma == std::string::npos)
      return items;
    at = comma + 1;
  }
}

template <typename T> T parseNumber(const std::string &flag, const std::string &value) {
  T result{};
  const char *end = value.data() + value.size();
  const auto [ptr, ec] = std::from_chars(value.data(), end, result);
  if (ec != std::errc() || ptr != end || value.empty())
    throw UsageError(fmt::format("--{}: '{}' is not a{} number", flag, value,
                                 std::is_integral_v<T> ? " non-negative whole" : ""));
  return result;
}

unsigned parsePositive(const std::string &flag, const std::string &value) {
  const auto n = parseNumber<unsigned>(flag, value);
  if (n == 0)
    throw UsageError(fmt::format("--{}: must be at least 1, not 0", flag));
  return n;
}

bool parseBool(const std::string &flag, const std::string &value) {
  if (value == "1" || value == "true")
    return true;
  if (value == "0" || value == "false")
    return false;
  throw UsageError(fmt::format("--{}: '{}' is not 0 or 1", flag, value));
}

std::string parseChoice(const std::string &flag, const std::string &value,
                        const std::vector<std::string> &allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end())
    return value;
  std::string names;
  for (const std::string &a : allowed)
    names += (names.empty() ? "" : ", ") + a;
  throw UsageError(fmt::format("--{}: '{}' is not one of {}", flag, value, names));
}

const ActivationName *parseActivationFlag(const std::string &flag, const std::string &value) {
  for (const ActivationName &a : kActivations)
    if (value == a.name)
      return &a;
  std::string names;
  for (const ActivationName &a : kActivations)
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  throw UsageError(fmt::format("--{}: '{}' is not one of {}", flag, value, names));
}

enum class FlagKind {
  Value,  // --flag value or --flag=value
  Switch, // as Value, and given alone means "1"
  List    // as Value; given more than once, the lists join (so a shell's brace expansion
          // of an unquoted --flag={a,b} still means {a,b})
};

struct Flag {
  const char *name;
  // Applied before the command line; nullptr: the flag is unset unless given, and
  // unsetMeaning says what that means.
  const char *defaultValue;
  const char *help;
  std::function<void(Config &, const std::string &flag, const std::string &value)> set;
  FlagKind kind = FlagKind::Value;
  const char *unsetMeaning = "the layer's";
};

// Sets a layer option from a flag, its value first checked by `check`.
auto layerOption(const char *key,
                 std::function<std::string(const std::string &, const std::string &)> check) {
  return [key, check](Config &c, const std::string &flag, const std::string &value) {
    c.layerOptions.set(key, check(flag, value));
  };
}

std::string checkPrecision(const std::string &flag, const std::string &value) {
  return parseChoice(flag, value, {"float", "half"});
}
std::string checkBool(const std::string &flag, const std::string &value) {
  return parseBool(flag, value) ? "true" : "false";
}

const std::vector<Flag> &flags() {
  static const std::vector<Flag> table = {
      {"help", nullptr, "print the flags and exit",
       [](Config &c, auto &f, auto &v) { c.help = parseBool(f, v); }, FlagKind::Switch, "0"},
      {"input-size", "4", "I, the size of each input vector",
       [](Config &c, auto &f, auto &v) { c.inputSize = parsePositive(f, v); }},
      {"output-size", "4", "H, the hidden (output) size",
       [](Config &c, auto &f, auto &v) { c.outputSize = parsePositive(f, v); }},
      {"batch-size", "1", "B",
       [](Config &c, auto &f, auto &v) { c.batchSize = parsePositive(f, v); }},
      {"sequence-size", "3", "T, the number of time steps",
       [](Config &c, auto &f, auto &v) { c.sequenceSize = parsePositive(f, v); }},
      {"phase", "fwd", "fwd | bwd | wu (bwd, then lstmWU) | all (lstmBwdWithWU)",
       [](Config &c, auto &f, auto &v) {
         c.phase = parseChoice(f, v, {"fwd", "bwd", "wu", "all"});
       }},
      {"data-type", "float", "float | half",
       [](Config &c, auto &f, auto &v) {
         c.dataTypeName = checkPrecision(f, v);
         c.dataType = c.dataTypeName == "half" ? HALF : FLOAT;
       }},
      {"partials-type", nullptr, "float | half (option partialsType)",
       layerOption("partialsType", checkPrecision)},
      {"accumulators-type", nullptr, "float | half (option weightAccumulatorsType)",
       layerOption("weightAccumulatorsType", checkPrecision)},
      {"cell-order", "{forget,input,cell,output}", "the gate of each weight slot, all four once",
       [](Config &c, auto &f, auto &v) {
         c.cellOrder.clear();
         for (const std::string &name : parseList(f, v)) {
           try {
             c.cellOrder.push_back(lstm::parseBasicLstmCellUnit(name));
           } catch (const aspen::error &e) {
             throw UsageError(fmt::format("--{}: '{}': {}", f, name, e.what()));
           }
         }
         std::vector<lstm::BasicLstmCellUnit> sorted = c.cellOrder;
         std::sort(sorted.begin(), sorted.end());
         if (sorted != lstm::getDefaultBasicLstmCellOrder())
           throw UsageError(fmt::format(
               "--{}: '{}' must name each of forget, input, cell, output exactly once", f, v));
       },
       FlagKind::List},
      {"recomputation-mode", nullptr, "none | cellAndTanh | full (option recomputationMode)",
       layerOption("recomputationMode",
                   [](auto &f, auto &v) {
                     return parseChoice(f, v, {"none", "cellAndTanh", "full"});
                   })},
      {"shards", nullptr, "time-axis shards, 1..min(T, tiles) (option numShards)",
       layerOption("numShards",
                   [](auto &f, auto &v) { return std::to_string(parsePositive(f, v)); })},
      {"code-reuse", nullptr, "0 | 1: one step body for every shard (option rnnCodeReuse)",
       layerOption("rnnCodeReuse", checkBool)},
      {"steps-per-wu", nullptr, "0..T, 0 = a WU pass after the loop (option rnnStepsPerWU)",
       layerOption("rnnStepsPerWU",
                   [](auto &f, auto &v) { return std::to_string(parseNumber<unsigned>(f, v)); })},
      {"disable-wu-partial-interleaving", nullptr, "0 | 1 (option disableWUPartialInterleaving)",
       layerOption("disableWUPartialInterleaving", checkBool)},
      {"pre-weight-input", "0", "0 | 1: x.Wi for all steps before the loop (option preCalcWeights)",
       [](Config &c, auto &f, auto &v) {
         c.preWeightInput = parseBool(f, v);
         c.layerOptions.set("preCalcWeights", c.preWeightInput ? "true" : "false");
       }},
      {"available-memory-proportion", nullptr, "(0, 1] (option availableMemoryProportion)",
       layerOption("availableMemoryProportion",
                   [](auto &f, auto &v) {
                     const double p = parseNumber<double>(f, v);
                     if (!(p > 0 && p <= 1))
                       throw UsageError(fmt::format("--{}: {} is not in (0, 1]", f, v));
                     return v;
                   })},
      {"activation", "tanh",
       "tanh | sigmoid | hard_sigmoid | relu | gelu | gelu_erf | swish | softmax",
       [](Config &c, auto &f, auto &v) { c.activation = parseActivationFlag(f, v); }},
      {"recurrent-activation", "sigmoid", "as --activation (relu is refused by the layer)",
       [](Config &c, auto &f, auto &v) { c.recurrentActivation = parseActivationFlag(f, v); }},
      {"ignore-input-gradient", "0", "do not compute the input gradient (calcInputGradients)",
       [](Config &c, auto &f, auto &v) { c.ignoreInputGradient = parseBool(f, v); },
       FlagKind::Switch},
      {"output-all-sequence", "1", "0 | 1: output [T,B,H], or only the last step's [B,H]",
       [](Config &c, auto &f, auto &v) { c.outputAllSequence = parseBool(f, v); }},
      {"variable-time-steps", nullptr, "{L} or {L_0,...,L_B-1}: sequence lengths (0..T; >T is T)",
       [](Config &c, auto &f, auto &v) {
         c.variableTimeSteps.clear();
         for (const std::string &item : parseList(f, v))
           c.variableTimeSteps.push_back(parseNumber<unsigned>(f, item));
       },
       FlagKind::List, "every row runs T steps"},
      {"last-step-state-grad", "0", "0 | 1: also feed gradients of the final h and c",
       [](Config &c, auto &f, auto &v) { c.lastStepStateGrad = parseBool(f, v); }},
      {"runs", "1", "run the program this many times (reports the mean time)",
       [](Config &c, auto &f, auto &v) { c.runs = parsePositive(f, v); }},
      {"device", "cpu", "cpu | gpu | a model target: h200, h100, ipu2, ipu21, ipu1",
       [](Config &c, auto &, auto &v) { c.device = v; }},
      {"tiles-per-ipu", nullptr, "tiles of a model device",
       [](Config &c, auto &f, auto &v) { c.tilesPerIpu = parsePositive(f, v); }, FlagKind::Value,
       "the model's"},
      {"rel-tolerance", nullptr, "relative tolerance",
       [](Config &c, auto &f, auto &v) { c.relTolerance = parseNumber<double>(f, v); },
       FlagKind::Value, "float 2e-4, half 2e-2"},
      {"abs-tolerance", nullptr, "absolute tolerance",
       [](Config &c, auto &f, auto &v) { c.absTolerance = parseNumber<double>(f, v); },
       FlagKind::Value, "float 1e-5, half 2e-3"},
      {"compile-only", "0", "build and compile the graph, do not run it",
       [](Config &c, auto &f, auto &v) { c.compileOnly = parseBool(f, v); }, FlagKind::Switch},
      {"profile", "0", "print the engine's profile summary after the runs",
       [](Config &c, auto &f, auto &v) { c.profile = parseBool(f, v); }, FlagKind::Switch},
      {"seed", "1", "seed of the random inputs",
       [](Config &c, auto &f, auto &v) { c.seed = parseNumber<unsigned>(f, v); }},
      {"save-tensors", nullptr, "DIR: write every tensor as .npy and DIR/manifest.json",
       [](Config &c, auto &, auto &v) { c.saveTensors = v; }, FlagKind::Value, "none"},
  };
  return table;
}

void printHelp() {
  fmt::print("Usage: lstm_layer [--flag value | --flag=value]...\n"
             "Builds an LSTM layer with aspen::nn::lstm, runs it and checks it against a\n"
             "double-precision host model. Exit status: 0 pass, 1 mismatch or failure, 2 bad "
             "usage.\n\n");
  for (const Flag &f : flags()) {
    const std::string name = f.kind == FlagKind::Switch ? fmt::format("--{}", f.name)
                                                        : fmt::format("--{} <value>", f.name);
    fmt::print("  {:<42} {} [default: {}]\n", name, f.help,
               f.defaultValue ? f.defaultValue : f.unsetMeaning);
  }
}

Config parseCommandLine(int argc, char **argv) {
  Config c;
  for (const Flag &f : flags())
    if (f.defaultValue)
      f.set(c, f.name, f.defaultValue);
  std::map<std::string, std::string> lists; // the List flags given so far, joined
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw UsageError(fmt::format("unexpected argument '{}' (flags start with --)", arg));
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const auto flag =
        std::find_if(flags().begin(), flags().end(), [&](const Flag &f) { return name == f.name; });
    if (flag == flags().end())
      throw UsageError(fmt::format("unknown flag '--{}'", name));
    std::string value;
    if (eq != std::string::npos)
      value = arg.substr(eq + 1);
    else if (flag->kind == FlagKind::Switch)
      value = "1";
    else if (k + 1 < argc)
      value = argv[++k];
    else
      throw UsageError(fmt::format("--{} needs a value", name));
    if (flag->kind == FlagKind::List) {
      std::string &joined = lists[name];
      joined = joined.empty() ? value : joined + "," + value;
    } else {
      flag->set(c, name, value);
    }
  }
  for (const auto &[name, joined] : lists)
    std::find_if(flags().begin(), flags().end(), [&](const Flag &f) {
      return name == f.name;
    })->set(c, name, joined);
  if (c.help)
    return c;
  if (!c.variableTimeSteps.empty() && c.variableTimeSteps.size() != 1 &&
      c.variableTimeSteps.size() != c.batchSize)
    throw UsageError(fmt::format("--variable-time-steps: {} lengths given; give 1 or "
                                 "--batch-size = {}",
                                 c.variableTimeSteps.size(), c.batchSize));
  if (c.lastStepStateGrad && !c.variableTimeSteps.empty())
    throw UsageError("--last-step-state-grad cannot be combined with --variable-time-steps "
                     "(the layer takes no final-state gradients with variable lengths)");
  if (c.lastStepStateGrad && c.phase == "fwd")
    throw UsageError("--last-step-state-grad needs a backward phase (bwd, wu or all)");
  if (c.tilesPerIpu && (c.device == "cpu" || c.device == "gpu"))
    throw UsageError(fmt::format("--tiles-per-ipu applies to model devices, not '{}'", c.device));
  if (c.phase == "fwd")
    c.layerOptions.set("inferenceOnly", "true");
  return c;
}

// --- Host data -------------------------------------------------------------------------------

std::size_t elements(const Shape &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s;
  for (std::size_t d : shape)
    s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

double roundTo(Type type, double x) {
  return type == HALF ? double(float(aspen::half(float(x)))) : double(float(x));
}

std::vector<double> randomValues(std::mt19937 &rng, const Shape &shape, double scale, Type type) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> v(elements(shape));
  for (double &x : v)
    x = roundTo(type, scale * uniform(rng));
  return v;
}

void writeValues(Engine &engine, const std::string &handle, Type type,
                 const std::vector<double> &v) {
  if (type == HALF) {
    std::vector<aspen::half> h(v.begin(), v.end());
    engine.writeTensor(handle, h.data(), h.data() + h.size());
  } else {
    std::vector<float> f(v.begin(), v.end());
    engine.writeTensor(handle, f.data(), f.data() + f.size());
  }
}

std::vector<double> readValues(Engine &engine, const std::string &handle, Type type,
                               std::size_t n) {
  if (type == HALF) {
    std::vector<aspen::half> h(n);
    engine.readTensor(handle, h.data(), h.data() + h.size());
    return {h.begin(), h.end()};
  }
  std::vector<float> f(n);
  engine.readTensor(handle, f.data(), f.data() + f.size());
  return {f.begin(), f.end()};
}

// One tensor that the run reads or writes: its shape, meaning, values and the reference's.
struct NamedTensor {
  std::string name;
  Shape shape;
  std::string meaning;
  std::vector<double> values;
  std::vector<double> reference; // empty for inputs
};

// --- Checking and saving ---------------------------------------------------------------------

bool compare(const NamedTensor &t, double rel, double abs) {
  double maxAbs = 0, maxRel = 0;
  std::size_t bad = 0, firstBad = 0;
  for (std::size_t k = 0; k < t.values.size(); ++k) {
    const double a = t.values[k], r = t.reference[k], err = std::abs(a - r);
    if (!(err <= abs + rel * std::abs(r))) { // NaN fails too
      if (bad++ == 0)
        firstBad = k;
    }
    maxAbs = std::max(maxAbs, std::isnan(err) ? INFINITY : err);
    if (r != 0)
      maxRel = std::max(maxRel, std::isnan(err) ? INFINITY : err / std::abs(r));
  }
  fmt::print("  {:<22} {:<12} max abs err {:.3e}  max rel err {:.3e}  ", t.name,
             shapeString(t.shape), maxAbs, maxRel);
  if (bad == 0)
    fmt::print("ok\n");
  else
    fmt::print("MISMATCH in {} of {} (first at {}: aspen {:.7g} reference {:.7g})\n", bad,
               t.values.size(), firstBad, t.values[firstBad], t.reference[firstBad]);
  return bad == 0;
}

void saveTensors(const Config &c, const std::vector<NamedTensor> &tensors) {
  namespace fs = std::filesystem;
  const fs::path dir(c.saveTensors);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
  std::string order;
  for (lstm::BasicLstmCellUnit u : c.cellOrder)
    order += fmt::format("{}\"{}\"", order.empty() ? "" : ", ", lstm::asString(u));
  std::string json = "{\n  \"params\": {\n";
  json += fmt::format("    \"layer\": \"lstm\",\n    \"sequenceSize\": {},\n    \"batchSize\": "
                      "{},\n    \"inputSize\": {},\n    \"outputSize\": {},\n",
                      c.sequenceSize, c.batchSize, c.inputSize, c.outputSize);
  json += fmt::format("    \"cellOrder\": [{}],\n    \"activation\": \"{}\",\n"
                      "    \"recurrentActivation\": \"{}\",\n",
                      order, c.activation->name, c.recurrentActivation->name);
  json += fmt::format("    \"outputFullSequence\": {},\n    \"phase\": \"{}\",\n"
                      "    \"dataType\": \"{}\"\n  }},\n  \"tensors\": {{",
                      c.outputAllSequence ? "true" : "false", c.phase, c.dataTypeName);
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const NamedTensor &t = tensors[k];
    const std::string file = t.name + ".npy";
    npy::write((dir / file).string(), t.values, t.shape);
    std::string shape;
    for (std::size_t d : t.shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(d);
    json += fmt::format(
        "{}\n    \"{}\": {{\"file\": \"{}\", \"shape\": [{}], \"meaning\": \"{}\"}}", k ? "," : "",
        npy::jsonEscape(t.name), npy::jsonEscape(file), shape, npy::jsonEscape(t.meaning));
  }
  json += "\n  }\n}\n";
  const std::string manifest = (dir / "manifest.json").string();
  std::ofstream out(manifest);
  out << json;
  out.close();
  if (!out)
    throw std::runtime_error(fmt::format("cannot write '{}'", manifest));
  fmt::print("lstm_layer: saved {} tensors and manifest.json in {}\n", tensors.size(),
             dir.string());
}

// --- The layer -------------------------------------------------------------------------------

Device makeDevice(const Config &c) {
  if (c.device == "cpu")
    return Device::createCPUDevice();
  if (c.device == "gpu")
    return Device::createGpuDevice(0);
  try {
    return Device::createModelDevice(c.tilesPerIpu ? Target::createModel(c.device, *c.tilesPerIpu)
                                                   : Target::createModel(c.device));
  } catch (const aspen::error &e) {
    throw UsageError(fmt::format("--device '{}': {}", c.device, e.what()));
  }
}

int run(const Config &c) {
  const std::size_t T = c.sequenceSize, B = c.batchSize, I = c.inputSize, H = c.outputSize;
  const bool backward = c.phase != "fwd", weightUpdate = c.phase == "wu" || c.phase == "all";
  const Type type = c.dataType;
  const bool variable = !c.variableTimeSteps.empty();
  std::string order;
  for (lstm::BasicLstmCellUnit u : c.cellOrder)
    order += (order.empty() ? "" : ",") + lstm::asString(u);

  Device device = makeDevice(c);
  fmt::print("lstm_layer: T={} B={} I={} H={} {} phase={} cellOrder={{{}}} activation={} "
             "recurrentActivation={} on {}\n",
             T, B, I, H, c.dataTypeName, c.phase, order, c.activation->name,
             c.recurrentActivation->name, device.describe());

  Graph graph(device.getTarget());
  ops::addCodelets(graph);
  linalg::addCodelets(graph);
  nn::addCodelets(graph);
  linalg::PlanningCache cache;
  const OptionFlags &options = c.layerOptions;

  Tensor timeSteps;
  if (variable) {
    timeSteps = graph.addVariable(UNSIGNED_INT, {c.variableTimeSteps.size()}, "timeSteps");
    graph.setTileMapping(timeSteps, 0);
    graph.createHostWrite("timeSteps", timeSteps);
  }
  lstm::LstmParams params =
      variable
          ? lstm::LstmParams(type, B, T, timeSteps, {I, H}, c.activation->aspen,
                             c.recurrentActivation->aspen)
          : lstm::LstmParams(type, B, T, {I, H}, c.activation->aspen, c.recurrentActivation->aspen);
  params.cellOrder = c.cellOrder;
  params.outputFullSequence = c.outputAllSequence;
  params.calcInputGradients = !c.ignoreInputGradient;

  program::Sequence prog;
  const Tensor input = lstm::createInput(graph, params, "input", options, &cache);
  const lstm::LstmState init = lstm::createInitialState(graph, params, "init", options, &cache);
  const lstm::LstmWeights weights = lstm::createWeights(graph, params, "weights", options, &cache);
  Tensor fwdIntermediates;
  const auto [output, finalCellState] =
      lstm::lstmFwd(graph, params, init, input, weights, backward ? &fwdIntermediates : nullptr,
                    prog, "fwd", options, &cache);

  // Results, in the order they are reported and saved.
  std::vector<std::pair<std::string, Tensor>> results = {{"output", output},
                                                         {"finalCellState", finalCellState}};
  Tensor outputGrad, inputGrad;
  lstm::LstmState lastGrad;
  if (backward) {
    outputGrad = graph.clone(output, "outputGrad");
    graph.createHostWrite("outputGrad", outputGrad);
    if (c.lastStepStateGrad) {
      lastGrad = lstm::createInitialState(graph, params, "lastStepStateGrad", options, &cache);
      graph.createHostWrite("lastStepStateGrad.output", lastGrad.output);
      graph.createHostWrite("lastStepStateGrad.cellState", lastGrad.cellState);
    }
    const lstm::LstmState *lastGradPtr = c.lastStepStateGrad ? &lastGrad : nullptr;
    Tensor *inputGradPtr = c.ignoreInputGradient ? nullptr : &inputGrad;
    lstm::LstmState initGrad;
    lstm::LstmWeights weightsGrad;
    if (c.phase == "all") {
      initGrad = lstm::lstmBwdWithWU(graph, params, prog, init, fwdIntermediates, weights, input,
                                     output, outputGrad, lastGradPtr, inputGradPtr, weightsGrad,
                                     "bwd", options, &cache);
    } else {
      Tensor bwdIntermediates;
      initGrad = lstm::lstmBwd(graph, params, prog, init, fwdIntermediates, weights, input, output,
                               outputGrad, lastGradPtr, inputGradPtr,
                               weightUpdate ? &bwdIntermediates : nullptr, "bwd", options, &cache);
      if (weightUpdate)
        weightsGrad = lstm::lstmWU(graph, params, prog, init, fwdIntermediates, bwdIntermediates,
                                   weights, input, output, "wu", options, &cache);
    }
    if (!c.ignoreInputGradient)
      results.push_back({"inputGrad", inputGrad});
    results.push_back({"initialOutputGrad", initGrad.output});
    results.push_back({"initialCellStateGrad", initGrad.cellState});
    if (weightUpdate) {
      results.push_back({"inputWeightsGrad", weightsGrad.inputWeights});
      results.push_back({"outputWeightsGrad", weightsGrad.outputWeights});
      results.push_back({"biasesGrad", weightsGrad.biases});
    }
  }
  const std::pair<const char *, Tensor> inputs[] = {{"input", input},
                                                    {"initialOutput", init.output},
                                                    {"initialCellState", init.cellState},
                                                    {"inputWeights", weights.inputWeights},
                                                    {"outputWeights", weights.outputWeights},
                                                    {"biases", weights.biases}};
  for (const auto &[name, t] : inputs)
    graph.createHostWrite(name, t);
  for (const auto &[name, t] : results)
    graph.createHostRead(name + "-read", t);

  const auto compileStart = std::chrono::steady_clock::now();
  Engine engine(graph, prog);
  const double compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count();
  if (c.compileOnly) {
    fmt::print("lstm_layer: COMPILED in {:.1f} ms (not run: --compile-only)\n",
               1e3 * compileSeconds);
    return 0;
  }
  engine.load(device);

  // Inputs, drawn in a fixed order and rounded to the data type.
  std::mt19937 rng(c.seed);
  const double weightScale = 1.0 / std::sqrt(double(H));
  const Shape seq = {T, B, H}, state = {B, H};
  const Shape outputShape = c.outputAllSequence ? seq : state;
  std::vector<NamedTensor> saved = {
      {"input", {T, B, I}, "input x_t [T,B,I]", randomValues(rng, {T, B, I}, 1.0, type), {}},
      {"initialOutput",
       state,
       "initial output h_{-1} [B,H]",
       randomValues(rng, state, 1.0, type),
       {}},
      {"initialCellState",
       state,
       "initial cell state c_{-1} [B,H]",
       randomValues(rng, state, 1.0, type),
       {}},
      {"inputWeights",
       {4, I, H},
       "input weights Wi [4,I,H], dim 0 in cellOrder",
       randomValues(rng, {4, I, H}, weightScale, type),
       {}},
      {"outputWeights",
       {4, H, H},
       "recurrent weights Wo [4,H,H], dim 0 in cellOrder",
       randomValues(rng, {4, H, H}, weightScale, type),
       {}},
      {"biases",
       {4, H},
       "biases [4,H], dim 0 in cellOrder",
       randomValues(rng, {4, H}, 1.0, type),
       {}}};
  for (const NamedTensor &t : saved)
    writeValues(engine, t.name, type, t.values);
  lstmref::LstmModel model;
  model.T = T, model.B = B, model.I = I, model.H = H;
  for (std::size_t s = 0; s < 4; ++s)
    model.cellOrder[s] = int(c.cellOrder[s]);
  model.act = c.activation->reference;
  model.recAct = c.recurrentActivation->reference;
  model.outputFullSequence = c.outputAllSequence;
  model.timeSteps = c.variableTimeSteps;
  if (variable) {
    engine.writeTensor("timeSteps", c.variableTimeSteps.data(),
                       c.variableTimeSteps.data() + c.variableTimeSteps.size());
    saved.push_back({"timeSteps",
                     {c.variableTimeSteps.size()},
                     "sequence lengths (of all rows, or of each row)",
                     {c.variableTimeSteps.begin(), c.variableTimeSteps.end()},
                     {}});
  }
  const lstmref::LstmData data{saved[0].values, saved[1].values, saved[2].values,
                               saved[3].values, saved[4].values, saved[5].values};
  const lstmref::LstmForward fwd = lstmref::forward(model, data);
  lstmref::LstmGrads grads;
  if (backward) {
    NamedTensor dy{"outputGrad",
                   outputShape,
                   "gradient of the output (output's shape)",
                   randomValues(rng, outputShape, 1.0, type),
                   {}};
    writeValues(engine, dy.name, type, dy.values);
    lstmref::LstmStateGrad lastRef;
    if (c.lastStepStateGrad) {
      lastRef = {randomValues(rng, state, 1.0, type), randomValues(rng, state, 1.0, type)};
      writeValues(engine, "lastStepStateGrad.output", type, lastRef.output);
      writeValues(engine, "lastStepStateGrad.cellState", type, lastRef.cellState);
    }
    grads = lstmref::backward(model, data, fwd, dy.values, lastRef);
    saved.push_back(std::move(dy));
    if (c.lastStepStateGrad) {
      saved.push_back({"lastStepStateGrad.output",
                       state,
                       "gradient of the final output [B,H]",
                       lastRef.output,
                       {}});
      saved.push_back({"lastStepStateGrad.cellState",
                       state,
                       "gradient of the final cell state [B,H]",
                       lastRef.cellState,
                       {}});
    }
  }

  const auto runStart = std::chrono::steady_clock::now();
  for (unsigned r = 0; r < c.runs; ++r)
    engine.run(0);
  const double runSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
  fmt::print("lstm_layer: compiled in {:.1f} ms; {} run(s), {:.3f} ms per run\n",
             1e3 * compileSeconds, c.runs, 1e3 * runSeconds / c.runs);
  if (c.profile)
    engine.printProfileSummary(std::cout);

  struct Expected {
    Shape shape;
    std::string meaning;
    const std::vector<double> *reference;
  };
  const auto expected = [&](const std::string &name) -> Expected {
    if (name == "output")
      return {outputShape,
              c.outputAllSequence ? "output h_t [T,B,H], zero past a row's length"
                                  : "each row's final output [B,H]",
              &fwd.output};
    if (name == "finalCellState")
      return {state, "each row's final cell state [B,H]", &fwd.finalCellState};
    if (name == "inputGrad")
      return {{T, B, I}, "gradient of the input [T,B,I]", &grads.inputGrad};
    if (name == "initialOutputGrad")
      return {state, "gradient of the initial output [B,H]", &grads.initialOutputGrad};
    if (name == "initialCellStateGrad")
      return {state, "gradient of the initial cell state [B,H]", &grads.initialCellStateGrad};
    if (name == "inputWeightsGrad")
      return {{4, I, H}, "gradient of inputWeights [4,I,H]", &grads.inputWeightsGrad};
    if (name == "outputWeightsGrad")
      return {{4, H, H}, "gradient of outputWeights [4,H,H]", &grads.outputWeightsGrad};
    return {{4, H}, "gradient of biases [4,H]", &grads.biasesGrad};
  };
  const double rel = c.relTolerance.value_or(type == HALF ? 2e-2 : 2e-4);
  const double abs = c.absTolerance.value_or(type == HALF ? 2e-3 : 1e-5);
  fmt::print("lstm_layer: |aspen - reference| <= {} + {} * |reference|\n", abs, rel);
  bool pass = true;
  std::size_t checked = 0;
  for (const auto &[name, tensor] : results) {
    const Expected e = expected(name);
    if (tensor.numElements() != elements(e.shape))
      throw std::runtime_error(fmt::format("{} has {} elements, expected {} ({})", name,
                                           tensor.numElements(), elements(e.shape),
                                           shapeString(e.shape)));
    NamedTensor t{name, e.shape, e.meaning,
                  readValues(engine, name + "-read", type, elements(e.shape)), *e.reference};
    pass &= compare(t, rel, abs);
    ++checked;
    saved.push_back(std::move(t));
  }
  if (!c.saveTensors.empty())
    saveTensors(c, saved);
  fmt::print("lstm_layer: {} ({} tensors checked; phase {}, {}, T={} B={} I={} H={})\n",
             pass ? "PASS" : "FAIL", checked, c.phase, c.dataTypeName, T, B, I, H);
  return pass ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  Config config;
  try {
    config = parseCommandLine(argc, argv);
  } catch (const UsageError &e) {
    fmt::print(stderr, "lstm_layer: {}\nRun 'lstm_layer --help' for the flags.\n", e.what());
    return 2;
  }
  if (config.help) {
    printHelp();
    return 0;
  }
  try {
    return run(config);
  } catch (const UsageError &e) {
    std::fflush(stdout);
    fmt::print(stderr, "lstm_layer: {}\n", e.what());
    return 2;
  } catch (const aspen::invalid_option &e) {
    std::fflush(stdout);
    fmt::print(stderr, "lstm_layer: the layer refused the options: {}\n", e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    fmt::print(stderr, "lstm_layer: FAIL ({})\n", e.what());
    return 1;
  }
}
