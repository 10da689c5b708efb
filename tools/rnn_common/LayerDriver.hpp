// What the recurrent-layer drivers (lstm_layer, gru_layer, rnn_layer) share: the flag parser and
// the flags every layer has, seeded random inputs, the device, compiling and timing the program,
// the comparison with the host model, --save-tensors and the run itself (runLayerDriver) and
// main (layerMain). Each driver adds its layer's flags, builds its layer and runs its reference
// (tools/rnnref/Lstm.hpp, tools/rnnref/Gru.hpp, tools/rnnref/Vanilla.hpp).
//
// Inputs are uniform in [-1, 1] (weights scaled by 1/sqrt(H)) from std::mt19937(--seed) and
// rounded to the data type before both Aspen and the model see them. A result element passes
// when |aspen - reference| <= abs + rel * |reference|; default tolerances: float rel 2e-4 /
// abs 1e-5, half rel 2e-2 / abs 2e-3 (half rounds every stored value to 11 significant bits,
// and the errors of T steps compound).
//
// The flags are PopLibs' (lstm_layer, gru_layer, rnn_layer), with their value syntax (--flag v,
// --flag=v, booleans 1/0/true/false/yes/no/on/off, lists {a,b}), plus Aspen's own; the IPU's
// device flags map onto Aspen's devices (makeDevice; docs/drivers.md has the table).
//
// Exit status: 0 all results agree (or --compile-only compiled, or --ignore-data ran); 1 a
// result disagrees or the build or run failed; 2 bad usage, including options Aspen rejects
// (aspen::invalid_option).
#pragma once

#include "NpyWriter.hpp"
#include "rnnref/Common.hpp"
#include "rnnref/Stack.hpp"

#include <aspen/Device.hpp>
#include <aspen/Engine.hpp>
#include <aspen/Error.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/OptionFlags.hpp>
#include <aspen/Program.hpp>
#include <aspen/Target.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/nn/NonLinearityDef.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/nn/RecurrentPlan.hpp>

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
#include <type_traits>
#include <utility>
#include <vector>

namespace rnnlayer {

using Shape = std::vector<std::size_t>;

// A bad command line: reported with exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// The activation names of the flags, the reference's kinds and Aspen's.
struct ActivationName {
  const char *name;
  rnnref::Activation reference;
  aspen::nn::NonLinearityType aspen;
};
inline constexpr ActivationName kActivations[] = {
    {"sigmoid", rnnref::Activation::sigmoid, aspen::nn::NonLinearityType::SIGMOID},
    {"hard_sigmoid", rnnref::Activation::hard_sigmoid, aspen::nn::NonLinearityType::HARD_SIGMOID},
    {"relu", rnnref::Activation::relu, aspen::nn::NonLinearityType::RELU},
    {"tanh", rnnref::Activation::tanh, aspen::nn::NonLinearityType::TANH},
    {"gelu", rnnref::Activation::gelu, aspen::nn::NonLinearityType::GELU},
    {"gelu_erf", rnnref::Activation::gelu_erf, aspen::nn::NonLinearityType::GELU_ERF},
    {"swish", rnnref::Activation::swish, aspen::nn::NonLinearityType::SWISH},
    {"softmax", rnnref::Activation::softmax, aspen::nn::NonLinearityType::SOFTMAX}};
static_assert(std::size(kActivations) == rnnref::kNumActivations,
              "every activation of the reference needs a flag name");

// The settings every layer driver has; a driver's Config derives from it.
struct CommonConfig {
  std::size_t inputSize = 0, outputSize = 0, batchSize = 0, sequenceSize = 0;
  std::string phase;
  aspen::Type dataType = aspen::FLOAT;
  std::string dataTypeName;
  const ActivationName *activation = nullptr;
  const ActivationName *recurrentActivation = nullptr;
  bool ignoreInputGradient = false, outputAllSequence = true, compileOnly = false, profile = false;
  std::vector<unsigned> variableTimeSteps;
  bool reverse = false;       // --direction reverse
  bool bidirectional = false; // --direction bidirectional (a stack in one call)
  // A stack in one call (--num-layers, --direction bidirectional): the dropout between layers
  // in training (--dropout, --dropout-seed) and the schedule (--stack-schedule; empty: auto).
  double dropout = 0.0;
  std::uint64_t dropoutSeed = 0;
  std::string stackSchedule;
  unsigned runs = 1, seed = 1;
  std::optional<unsigned> tilesPerIpu, ipus;
  std::optional<double> relTolerance, absTolerance;
  // --device (Aspen's names) or --device-type (PopLibs'); device is resolved by the parser.
  std::string device, deviceType, saveTensors, profileDir;
  bool ignoreData = false;
  // Inputs and initial state uniform in [-inputRange, inputRange].
  double inputRange = 1.0;
  // hard_sigmoid's derivative, the layer's and so its reference's.
  rnnref::HardSigmoidGradient hardSigmoidGradient = rnnref::HardSigmoidGradient::popnn;
  // Layer options given on the command line (the others keep the library's defaults).
  aspen::OptionFlags layerOptions;
  // What the command line asked for that has no effect in Aspen, said before the run.
  std::vector<std::string> notes;
  bool help = false;

  bool backward() const { return phase != "fwd"; }
  bool weightUpdate() const { return phase == "wu" || phase == "all"; }
};

// --- Flags -----------------------------------------------------------------------------------

inline std::string trim(const std::string &s) {
  const auto begin = s.find_first_not_of(" \t");
  return begin == std::string::npos ? "" : s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// "{a, b,c}", "a,b,c" or joined lists "{a},{b,c}" -> {"a", "b", "c"}
inline std::vector<std::string> parseList(const std::string &flag, const std::string &value) {
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

inline unsigned parsePositive(const std::string &flag, const std::string &value) {
  const auto n = parseNumber<unsigned>(flag, value);
  if (n == 0)
    throw UsageError(fmt::format("--{}: must be at least 1, not 0", flag));
  return n;
}

// PopLibs' booleans (boost::program_options): 1/0, true/false, yes/no, on/off.
inline bool parseBool(const std::string &flag, const std::string &value) {
  if (value == "1" || value == "true" || value == "yes" || value == "on")
    return true;
  if (value == "0" || value == "false" || value == "no" || value == "off")
    return false;
  throw UsageError(fmt::format("--{}: '{}' is not 0 or 1", flag, value));
}

inline std::string parseChoice(const std::string &flag, const std::string &value,
                               const std::vector<std::string> &allowed) {
  if (std::find(allowed.begin(), allowed.end(), value) != allowed.end())
    return value;
  std::string names;
  for (const std::string &a : allowed)
    names += (names.empty() ? "" : ", ") + a;
  throw UsageError(fmt::format("--{}: '{}' is not one of {}", flag, value, names));
}

inline const ActivationName *parseActivationFlag(const std::string &flag,
                                                 const std::string &value) {
  for (const ActivationName &a : kActivations)
    if (value == a.name)
      return &a;
  std::string names;
  for (const ActivationName &a : kActivations)
    names += (names.empty() ? "" : ", ") + std::string(a.name);
  throw UsageError(fmt::format("--{}: '{}' is not one of {}", flag, value, names));
}

// A cell order flag: each name read by `parseUnit` (which raises aspen::error for an unknown
// one), and all of `allUnits` named exactly once (`names` lists them for the message).
template <typename Unit, typename ParseUnit>
std::vector<Unit> parseCellOrder(const std::string &flag, const std::string &value,
                                 ParseUnit parseUnit, std::vector<Unit> allUnits,
                                 const char *names) {
  std::vector<Unit> order;
  for (const std::string &name : parseList(flag, value)) {
    try {
      order.push_back(parseUnit(name));
    } catch (const aspen::error &e) {
      throw UsageError(fmt::format("--{}: '{}': {}", flag, name, e.what()));
    }
  }
  std::vector<Unit> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  std::sort(allUnits.begin(), allUnits.end());
  if (sorted != allUnits)
    throw UsageError(
        fmt::format("--{}: '{}' must name each of {} exactly once", flag, value, names));
  return order;
}

enum class FlagKind {
  Value,  // --flag value or --flag=value
  Switch, // as Value, and given alone means "1"
  List    // as Value; given more than once, the lists join (so a shell's brace expansion
          // of an unquoted --flag={a,b} still means {a,b})
};

template <typename Config> struct Flag {
  std::string name;
  // Applied before the command line; nullptr: the flag is unset unless given, and
  // unsetMeaning says what that means.
  const char *defaultValue;
  std::string help;
  std::function<void(Config &, const std::string &flag, const std::string &value)> set;
  FlagKind kind = FlagKind::Value;
  const char *unsetMeaning = "the layer's";
};

// The flags of the LSTM's and the GRU's own that mean the same (Config has activationClip and
// numLayers): --activation-clip t (ONNX's clip, the layer's params `params` say which) and
// --num-layers L (a stack, each layer on the one below).
template <typename Config> Flag<Config> activationClipFlag(const std::string &params) {
  return {"activation-clip", nullptr,
          "t > 0: the activations' inputs clipped to [-t, t] (ONNX's clip; " + params +
              "::activationClip, Aspen's)",
          [](Config &c, const std::string &f, const std::string &v) {
            c.activationClip = parseNumber<double>(f, v);
            if (!(c.activationClip > 0))
              throw UsageError(fmt::format("--{}: {} is not above 0", f, v));
          },
          FlagKind::Value, "no clip"};
}
template <typename Config> Flag<Config> numLayersFlag(const std::string &limits) {
  return {"num-layers", "1",
          "L >= 1: a stack of L layers, layer l > 0 taking layer l - 1's output sequence (in "
          "the direction given" + limits + "; Aspen's)",
          [](Config &c, const std::string &f, const std::string &v) {
            c.numLayers = parsePositive(f, v);
          }};
}

// Whether the run builds its stack in one call (lstm::lstmStackFwd, gru::gruStackFwd): more
// than one layer, or both directions, or a stack option, in a phase the stack calls have (fwd,
// or all: the backward with the weight update) with the whole output sequence. Raises
// UsageError where a stack option cannot be honoured.
inline bool stackOptionsAsked(const CommonConfig &c) {
  return c.bidirectional || c.dropout > 0 || !c.stackSchedule.empty();
}
template <typename Config> bool stackInOneCall(const Config &c) {
  const bool asked = stackOptionsAsked(c);
  const bool possible = (c.phase == "fwd" || c.phase == "all") && c.outputAllSequence;
  if (asked && !possible)
    throw UsageError("--direction bidirectional, --dropout and --stack-schedule build a stack "
                     "in one call, which has --phase fwd or all and keeps the whole output "
                     "sequence (--output-all-sequence 1)");
  return asked || (c.numLayers > 1 && possible);
}

// The double model's shape of the stack c asks for, W the width of each direction's output.
inline rnnref::StackShape stackShapeOf(const CommonConfig &c, std::size_t numLayers,
                                       std::size_t W) {
  rnnref::StackShape shape;
  shape.T = c.sequenceSize, shape.B = c.batchSize, shape.L = numLayers;
  shape.D = c.bidirectional ? 2 : 1, shape.W = W;
  shape.reverseOnly = c.reverse;
  shape.timeSteps = c.variableTimeSteps;
  shape.dropout = c.dropout, shape.seed = c.dropoutSeed, shape.training = c.backward();
  return shape;
}

// v [T, B, ...] in the order a layer of the run takes its steps: each row's steps reversed for
// --direction reverse (rnnref::reverseRowSteps, its own inverse), else v.
inline std::vector<double> runOrderOf(const CommonConfig &c, const std::vector<double> &v) {
  return c.reverse ? rnnref::reverseRowSteps(v, c.variableTimeSteps, c.sequenceSize, c.batchSize)
                   : v;
}

// The options of a stack in one call: the layer options, numLayers, direction and the rest.
template <typename Config> aspen::OptionFlags stackCallOptions(const Config &c) {
  aspen::OptionFlags o = c.layerOptions;
  o.set("numLayers", std::to_string(c.numLayers));
  o.set("direction", c.bidirectional ? "bidirectional" : c.reverse ? "reverse" : "forward");
  o.set("dropout", fmt::format("{}", c.dropout));
  o.set("dropoutSeed", std::to_string(c.dropoutSeed));
  if (!c.stackSchedule.empty())
    o.set("stackSchedule", c.stackSchedule);
  return o;
}

// The name of a stack's layer l's tensors: the base name for layer 0, NAME.l<l> above it; and
// back, {NAME, l}. With both directions the reverse one's are NAME.rev and NAME.l<l>.rev
// (stackName; splitStackName gives {NAME, l, d}).
inline std::string layerName(const std::string &name, std::size_t l) {
  return l == 0 ? name : name + ".l" + std::to_string(l);
}
inline std::pair<std::string, std::size_t> splitLayerName(const std::string &name) {
  const std::size_t at = name.rfind(".l");
  if (at == std::string::npos || at + 2 == name.size() ||
      name.find_first_not_of("0123456789", at + 2) != std::string::npos)
    return {name, 0};
  return {name.substr(0, at), std::stoul(name.substr(at + 2))};
}

inline std::string stackName(const std::string &name, std::size_t l, std::size_t d) {
  return layerName(name, l) + (d == 1 ? ".rev" : "");
}
struct StackNameParts {
  std::string name;
  std::size_t l = 0, d = 0;
};
inline StackNameParts splitStackName(const std::string &name) {
  const bool reverse = name.size() > 4 && name.compare(name.size() - 4, 4, ".rev") == 0;
  const auto [base, l] = splitLayerName(reverse ? name.substr(0, name.size() - 4) : name);
  return {base, l, reverse ? 1u : 0u};
}

// Sets a layer option from a flag, its value first checked by `check`.
template <typename Config>
auto layerOption(const char *key,
                 std::function<std::string(const std::string &, const std::string &)> check) {
  return [key, check](Config &c, const std::string &flag, const std::string &value) {
    c.layerOptions.set(key, check(flag, value));
  };
}

inline std::string checkPrecision(const std::string &flag, const std::string &value) {
  return parseChoice(flag, value, {"float", "half"});
}
inline std::string checkBool(const std::string &flag, const std::string &value) {
  return parseBool(flag, value) ? "true" : "false";
}

// The LSTM's and GRU's layer option choosing hard_sigmoid's derivative (poplibs, the default, or
// exact); --hard-sigmoid-gradient sets it and the reference's rule together.
inline constexpr const char *kHardSigmoidGradientOption = "hardSigmoidGradient";

// The flags of a direction and a stack in one call (Aspen's): --direction, --dropout,
// --dropout-seed, --stack-schedule.
template <typename Config> std::vector<Flag<Config>> stackFlags() {
  using F = Flag<Config>;
  return {
      F{"direction", nullptr,
        "forward | reverse | bidirectional: reverse runs each row from its own last step back "
        "to step 0 (option direction; Aspen's); bidirectional both, outputs [T,B,2H] (a stack "
        "in one call)",
        [](Config &c, auto &f, auto &v) {
          const std::string d = parseChoice(f, v, {"forward", "reverse", "bidirectional"});
          c.reverse = d == "reverse";
          c.bidirectional = d == "bidirectional";
          if (!c.bidirectional)
            c.layerOptions.set("direction", v);
        },
        FlagKind::Value, "forward"},
      F{"dropout", "0",
        "[0, 1): a stack's dropout between layers in training, the counter-based mask of "
        "docs/recurrent.md (option dropout; Aspen's)",
        [](Config &c, auto &f, auto &v) {
          c.dropout = parseNumber<double>(f, v);
          if (!(c.dropout >= 0 && c.dropout < 1))
            throw UsageError(fmt::format("--{}: {} is not in [0, 1)", f, v));
        }},
      F{"dropout-seed", "0", "the dropout mask's seed, an unsigned 64-bit integer",
        [](Config &c, auto &f, auto &v) { c.dropoutSeed = parseNumber<std::uint64_t>(f, v); }},
      F{"stack-schedule", nullptr,
        "auto | wavefront | layerByLayer: how a stack in one call runs its layers (option "
        "stackSchedule; Aspen's)",
        [](Config &c, auto &f, auto &v) {
          c.stackSchedule = parseChoice(f, v, {"auto", "wavefront", "layerByLayer"});
        },
        FlagKind::Value, "auto"},
  };
}

// The flags that describe the layer, common to every recurrent layer; `layer` ("lstm", "gru")
// names its functions in the help.
template <typename Config> std::vector<Flag<Config>> layerFlags(const std::string &layer) {
  using F = Flag<Config>;
  std::vector<F> flags = {
      F{"help", nullptr, "print the flags and exit",
        [](Config &c, auto &f, auto &v) { c.help = parseBool(f, v); }, FlagKind::Switch, "0"},
      F{"input-size", "4", "I, the size of each input vector",
        [](Config &c, auto &f, auto &v) { c.inputSize = parsePositive(f, v); }},
      F{"output-size", "4", "H, the hidden (output) size",
        [](Config &c, auto &f, auto &v) { c.outputSize = parsePositive(f, v); }},
      F{"batch-size", "1", "B",
        [](Config &c, auto &f, auto &v) { c.batchSize = parsePositive(f, v); }},
      F{"sequence-size", "3", "T, the number of time steps",
        [](Config &c, auto &f, auto &v) { c.sequenceSize = parsePositive(f, v); }},
      F{"phase", "fwd", fmt::format("fwd | bwd | wu (bwd, then {0}WU) | all ({0}BwdWithWU)", layer),
        [](Config &c, auto &f, auto &v) {
          c.phase = parseChoice(f, v, {"fwd", "bwd", "wu", "all"});
        }},
      F{"data-type", "float", "float | half",
        [](Config &c, auto &f, auto &v) {
          c.dataTypeName = checkPrecision(f, v);
          c.dataType = c.dataTypeName == "half" ? aspen::HALF : aspen::FLOAT;
        }},
      F{"partials-type", nullptr, "float | half (option partialsType)",
        layerOption<Config>("partialsType", checkPrecision)},
      F{"shards", nullptr, "time-axis shards, 1..min(T, tiles) (option numShards)",
        layerOption<Config>("numShards",
                            [](auto &f, auto &v) { return std::to_string(parsePositive(f, v)); })},
      F{"code-reuse", nullptr, "0 | 1: one step body for every shard (option rnnCodeReuse)",
        layerOption<Config>("rnnCodeReuse", checkBool)},
      F{"step-method", nullptr,
        "auto | fused | productThenCell: how a step computes (option stepMethod; Aspen's)",
        layerOption<Config>("stepMethod",
                            [](auto &f, auto &v) {
                              return parseChoice(f, v, {"auto", "fused", "productThenCell"});
                            })},
      F{"persistent-kernel", nullptr,
        "auto | true | false: the loops as one persistent launch that keeps the weights on "
        "chip (option rnnPersistentKernel; Aspen's)",
        layerOption<Config>("rnnPersistentKernel",
                            [](auto &f, auto &v) {
                              return parseChoice(f, v, {"auto", "true", "false"});
                            })},
      F{"persistent-arithmetic", nullptr,
        "auto | exact | tensor: the persistent kernels' recurrent product, by ordered fma or "
        "on tensor cores (option rnnPersistentArithmetic; Aspen's)",
        layerOption<Config>("rnnPersistentArithmetic",
                            [](auto &f, auto &v) {
                              return parseChoice(f, v, {"auto", "exact", "tensor"});
                            })},
  };
  const std::vector<F> stack = stackFlags<Config>();
  flags.insert(flags.end(), stack.begin(), stack.end());
  const std::vector<F> rest = {
      F{"available-memory-proportion", nullptr, "(0, 1] (option availableMemoryProportion)",
        layerOption<Config>("availableMemoryProportion",
                            [](auto &f, auto &v) {
                              const double p = parseNumber<double>(f, v);
                              if (!(p > 0 && p <= 1))
                                throw UsageError(fmt::format("--{}: {} is not in (0, 1]", f, v));
                              return v;
                            })},
      F{"activation", "tanh",
        "tanh | sigmoid | hard_sigmoid | relu | gelu | gelu_erf | swish | softmax",
        [](Config &c, auto &f, auto &v) { c.activation = parseActivationFlag(f, v); }},
      F{"recurrent-activation", "sigmoid", "as --activation (relu is refused by the layer)",
        [](Config &c, auto &f, auto &v) { c.recurrentActivation = parseActivationFlag(f, v); }},
      F{"hard-sigmoid-gradient", nullptr,
        fmt::format("poplibs | exact: hard_sigmoid's derivative, 0.2 everywhere or 0 outside "
                    "(-2.5, 2.5) (option {}; Aspen's)",
                    kHardSigmoidGradientOption),
        [](Config &c, auto &f, auto &v) {
          const std::string rule = parseChoice(f, v, {"poplibs", "exact"});
          c.hardSigmoidGradient = rule == "poplibs" ? rnnref::HardSigmoidGradient::popnn
                                                    : rnnref::HardSigmoidGradient::exact;
          c.layerOptions.set(kHardSigmoidGradientOption, rule);
        },
        FlagKind::Value, "poplibs, the layer's"},
      F{"ignore-input-gradient", "0", "do not compute the input gradient (calcInputGradients)",
        [](Config &c, auto &f, auto &v) { c.ignoreInputGradient = parseBool(f, v); },
        FlagKind::Switch},
      F{"output-all-sequence", "1", "0 | 1: output [T,B,H], or only the last step's [B,H]",
        [](Config &c, auto &f, auto &v) { c.outputAllSequence = parseBool(f, v); }},
      F{"variable-time-steps", nullptr, "{L} or {L_0,...,L_B-1}: sequence lengths (0..T; >T is T)",
        [](Config &c, auto &f, auto &v) {
          c.variableTimeSteps.clear();
          for (const std::string &item : parseList(f, v))
            c.variableTimeSteps.push_back(parseNumber<unsigned>(f, item));
        },
        FlagKind::List, "every row runs T steps"},
  };
  flags.insert(flags.end(), rest.begin(), rest.end());
  return flags;
}

// PopLibs' --device-type names and the Aspen target each runs on ("" for Hw: none).
struct DeviceTypeName {
  const char *name;
  const char *target;
};
inline constexpr DeviceTypeName kDeviceTypes[] = {
    {"Cpu", "cpu"},       {"IpuModel", "ipu1"}, {"IpuModel2", "ipu2"}, {"IpuModel21", "ipu21"},
    {"Sim", "ipu1"},      {"Sim2", "ipu2"},     {"Sim21", "ipu21"},    {"Hw", ""}};

inline bool isIpuModel(const std::string &device) {
  return device == "ipu1" || device == "ipu2" || device == "ipu21";
}

// The flags of the run and its check, common to every driver.
template <typename Config> std::vector<Flag<Config>> runFlags() {
  using F = Flag<Config>;
  return {
      F{"runs", "1", "run the program this many times (reports the mean time)",
        [](Config &c, auto &f, auto &v) { c.runs = parsePositive(f, v); }},
      F{"device", nullptr, "cpu | gpu | a model target: h200, h100, ipu2, ipu21, ipu1",
        [](Config &c, auto &, auto &v) { c.device = v; }, FlagKind::Value,
        "cpu; ipu2 with --tiles-per-ipu or --ipus"},
      F{"device-type", nullptr,
        "PopLibs' name: Cpu (cpu) | IpuModel, IpuModel2, IpuModel21 (ipu1, ipu2, ipu21 models) "
        "| Sim, Sim2, Sim21 (the same models: no simulator) | Hw (refused: no IPU)",
        [](Config &c, auto &f, auto &v) {
          std::vector<std::string> names;
          for (const DeviceTypeName &d : kDeviceTypes)
            names.push_back(d.name);
          c.deviceType = parseChoice(f, v, names);
        },
        FlagKind::Value, "as --device"},
      F{"tiles-per-ipu", nullptr, "tiles of a model device (of each IPU of an IPU model)",
        [](Config &c, auto &f, auto &v) { c.tilesPerIpu = parsePositive(f, v); }, FlagKind::Value,
        "the model's"},
      F{"ipus", nullptr, "IPUs of an IPU model: its tiles are ipus x tiles-per-ipu",
        [](Config &c, auto &f, auto &v) { c.ipus = parsePositive(f, v); }, FlagKind::Value,
        "1"},
      F{"rel-tolerance", nullptr, "relative tolerance",
        [](Config &c, auto &f, auto &v) { c.relTolerance = parseNumber<double>(f, v); },
        FlagKind::Value, "float 2e-4, half 2e-2"},
      F{"abs-tolerance", nullptr, "absolute tolerance",
        [](Config &c, auto &f, auto &v) { c.absTolerance = parseNumber<double>(f, v); },
        FlagKind::Value, "float 1e-5, half 2e-3"},
      F{"compile-only", "0", "build and compile the graph, do not run it",
        [](Config &c, auto &f, auto &v) { c.compileOnly = parseBool(f, v); }, FlagKind::Switch},
      F{"profile", "0", "print the engine's profile summary after the runs",
        [](Config &c, auto &f, auto &v) { c.profile = parseBool(f, v); }, FlagKind::Switch},
      F{"profile-dir", nullptr,
        "DIR: write the engine's reports there (autoReport.all, autoReport.directory)",
        [](Config &c, auto &, auto &v) { c.profileDir = v; }, FlagKind::Value, "none"},
      F{"profile-format", nullptr, "v1 | experimental | unstable: Poplar's; no effect",
        [](Config &c, auto &f, auto &v) {
          parseChoice(f, v, {"v1", "experimental", "unstable"});
          c.notes.push_back(fmt::format(
              "--profile-format {} has no effect: Aspen's profile report has one format", v));
        },
        FlagKind::Value, "none"},
      F{"ignore-data", "0", "write and read no tensors and check nothing (timing runs)",
        [](Config &c, auto &f, auto &v) { c.ignoreData = parseBool(f, v); }, FlagKind::Switch},
      F{"input-range", "1", "R: inputs and initial state uniform in [-R, R] (Aspen's)",
        [](Config &c, auto &f, auto &v) {
          c.inputRange = parseNumber<double>(f, v);
          if (!(c.inputRange > 0))
            throw UsageError(fmt::format("--{}: {} is not above 0", f, v));
        }},
      F{"seed", "1", "seed of the random inputs",
        [](Config &c, auto &f, auto &v) { c.seed = parseNumber<unsigned>(f, v); }},
      F{"save-tensors", nullptr, "DIR: write every tensor as .npy and DIR/manifest.json",
        [](Config &c, auto &, auto &v) { c.saveTensors = v; }, FlagKind::Value, "none"},
  };
}

// `usage` is the text above the list of flags.
template <typename Config>
void printHelp(const std::string &usage, const std::vector<Flag<Config>> &flags) {
  fmt::print("{}\n", usage);
  for (const Flag<Config> &f : flags) {
    const std::string name = f.kind == FlagKind::Switch ? fmt::format("--{}", f.name)
                                                        : fmt::format("--{} <value>", f.name);
    fmt::print("  {:<42} {} [default: {}]\n", name, f.help,
               f.defaultValue ? f.defaultValue : f.unsetMeaning);
  }
}

// Sets c.device from --device or --device-type (PopLibs' names, kDeviceTypes): unset, it is cpu,
// or PopLibs' default IpuModel2 (the ipu2 model) when --tiles-per-ipu or --ipus is given.
inline void resolveDevice(CommonConfig &c) {
  const bool ipuGeometry = c.tilesPerIpu || c.ipus;
  if (!c.deviceType.empty()) {
    if (!c.device.empty())
      throw UsageError(fmt::format("--device {} and --device-type {}: give one of them", c.device,
                                   c.deviceType));
    const auto d = std::find_if(std::begin(kDeviceTypes), std::end(kDeviceTypes),
                                [&](const DeviceTypeName &t) { return c.deviceType == t.name; });
    if (std::string(d->target).empty())
      throw UsageError("--device-type Hw: Aspen has no IPU hardware to run on (IpuModel2 models "
                       "an IPU on the CPU executor; --device=gpu runs on a CUDA GPU)");
    c.device = d->target;
    if (c.device == "cpu" && ipuGeometry) {
      // PopLibs' Cpu device has one tile whatever the geometry flags say; so has Aspen's.
      c.notes.push_back("--device-type Cpu has one tile: --tiles-per-ipu and --ipus have no "
                        "effect");
      c.tilesPerIpu.reset();
      c.ipus.reset();
    }
  } else if (c.device.empty()) {
    c.device = ipuGeometry ? "ipu2" : "cpu";
  }
  if (c.tilesPerIpu && (c.device == "cpu" || c.device == "gpu"))
    throw UsageError(fmt::format("--tiles-per-ipu applies to model devices, not '{}'", c.device));
  if (c.ipus && !isIpuModel(c.device))
    throw UsageError(fmt::format("--ipus applies to the IPU models (ipu1, ipu2, ipu21), not '{}'",
                                 c.device));
}

// Applies the defaults, then the command line, then checks what every layer needs; the
// driver checks its own flags afterwards (unless help is set).
template <typename Config>
Config parseCommandLine(int argc, char **argv, const std::vector<Flag<Config>> &flags) {
  Config c;
  for (const Flag<Config> &f : flags)
    if (f.defaultValue)
      f.set(c, f.name, f.defaultValue);
  const auto find = [&](const std::string &name) {
    return std::find_if(flags.begin(), flags.end(),
                        [&](const Flag<Config> &f) { return name == f.name; });
  };
  std::map<std::string, std::string> lists; // the List flags given so far, joined
  for (int k = 1; k < argc; ++k) {
    const std::string arg = argv[k];
    if (arg.rfind("--", 0) != 0 || arg.size() == 2)
      throw UsageError(fmt::format("unexpected argument '{}' (flags start with --)", arg));
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    const auto flag = find(name);
    if (flag == flags.end())
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
    find(name)->set(c, name, joined);
  if (c.help)
    return c;
  if (!c.variableTimeSteps.empty() && c.variableTimeSteps.size() != 1 &&
      c.variableTimeSteps.size() != c.batchSize)
    throw UsageError(fmt::format("--variable-time-steps: {} lengths given; give 1 or "
                                 "--batch-size = {}",
                                 c.variableTimeSteps.size(), c.batchSize));
  resolveDevice(c);
  if (c.ignoreData && !c.saveTensors.empty())
    throw UsageError("--save-tensors has nothing to save with --ignore-data");
  if (c.phase == "fwd")
    c.layerOptions.set("inferenceOnly", "true");
  return c;
}

// --- Host data -------------------------------------------------------------------------------

inline std::size_t elements(const Shape &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

inline std::string shapeString(const Shape &shape) {
  std::string s;
  for (std::size_t d : shape)
    s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}

inline double roundTo(aspen::Type type, double x) {
  return type == aspen::HALF ? double(float(aspen::half(float(x)))) : double(float(x));
}

// offset + scale * uniform(-1, 1), rounded to `type`.
inline std::vector<double> randomValues(std::mt19937 &rng, const Shape &shape, double scale,
                                        aspen::Type type, double offset = 0.0) {
  std::uniform_real_distribution<double> uniform(-1.0, 1.0);
  std::vector<double> v(elements(shape));
  for (double &x : v)
    x = roundTo(type, offset + scale * uniform(rng));
  return v;
}

inline void writeValues(aspen::Engine &engine, const std::string &handle, aspen::Type type,
                        const std::vector<double> &v) {
  if (type == aspen::HALF) {
    std::vector<aspen::half> h(v.begin(), v.end());
    engine.writeTensor(handle, h.data(), h.data() + h.size());
  } else {
    std::vector<float> f(v.begin(), v.end());
    engine.writeTensor(handle, f.data(), f.data() + f.size());
  }
}

inline std::vector<double> readValues(aspen::Engine &engine, const std::string &handle,
                                      aspen::Type type, std::size_t n) {
  if (type == aspen::HALF) {
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

// Draws a model's inputs in order from one generator (seed), each rounded to the type, saved
// (appended to `saved`) and written to the engine at once; returns the values.
class InputDrawer {
public:
  InputDrawer(aspen::Engine &engine, std::vector<NamedTensor> &saved, unsigned seed,
              aspen::Type type)
      : engine_(engine), saved_(saved), rng_(seed), type_(type) {}
  // Uniform in [offset - scale, offset + scale].
  std::vector<double> operator()(const std::string &name, const Shape &shape,
                                 const std::string &meaning, double scale, double offset = 0.0) {
    saved_.push_back({name, shape, meaning, randomValues(rng_, shape, scale, type_, offset), {}});
    writeValues(engine_, name, type_, saved_.back().values);
    return saved_.back().values;
  }

private:
  aspen::Engine &engine_;
  std::vector<NamedTensor> &saved_;
  std::mt19937 rng_;
  aspen::Type type_;
};

// The values of the tensor named `name` in `tensors` (a driver's inputs).
inline const std::vector<double> &valuesOf(const std::vector<NamedTensor> &tensors,
                                           const std::string &name) {
  for (const NamedTensor &t : tensors)
    if (t.name == name)
      return t.values;
  throw std::logic_error("no input " + name);
}

// The timeSteps tensor of --variable-time-steps (an invalid tensor without it), written by
// writeTimeSteps.
inline aspen::Tensor addTimeSteps(aspen::Graph &graph, const CommonConfig &c) {
  if (c.variableTimeSteps.empty())
    return {};
  aspen::Tensor timeSteps =
      graph.addVariable(aspen::UNSIGNED_INT, {c.variableTimeSteps.size()}, "timeSteps");
  graph.setTileMapping(timeSteps, 0);
  graph.createHostWrite("timeSteps", timeSteps);
  return timeSteps;
}

inline void writeTimeSteps(aspen::Engine &engine, const CommonConfig &c,
                           std::vector<NamedTensor> &saved) {
  if (c.variableTimeSteps.empty())
    return;
  engine.writeTensor("timeSteps", c.variableTimeSteps.data(),
                     c.variableTimeSteps.data() + c.variableTimeSteps.size());
  saved.push_back({"timeSteps",
                   {c.variableTimeSteps.size()},
                   "sequence lengths (of all rows, or of each row)",
                   {c.variableTimeSteps.begin(), c.variableTimeSteps.end()},
                   {}});
}

// The names of a layer's cell order (lstm::asString, gru::asString).
template <typename Unit, typename ToString>
std::vector<std::string> unitNames(const std::vector<Unit> &units, ToString toString) {
  std::vector<std::string> names;
  for (Unit u : units)
    names.push_back(toString(u));
  return names;
}

// --- A built layer ---------------------------------------------------------------------------

// A layer's graph as a driver (lstm_layer, gru_layer, rnn_layer) or aspen-plan builds it: the
// program, the tensors written from the host (by handle name, every one already a host write)
// and the results (read through the handles "<name>-read"), the layer's plan where it has one,
// and the flops of one run of its phases.
struct BuiltLayer {
  aspen::program::Sequence program;
  std::vector<std::pair<std::string, aspen::Tensor>> inputs;
  std::vector<std::pair<std::string, aspen::Tensor>> results;
  std::optional<aspen::nn::RecurrentPlan> plan;
  std::uint64_t flops = 0;
};

// The host writes and reads of a built layer's tensors.
inline void addHostHandles(aspen::Graph &graph, BuiltLayer &layer) {
  for (const auto &[name, t] : layer.inputs)
    graph.createHostWrite(name, t);
  for (const auto &[name, t] : layer.results)
    graph.createHostRead(name + "-read", t);
}

// --- Device, compiling and running -----------------------------------------------------------

inline aspen::Device makeDevice(const CommonConfig &c) {
  using aspen::Device;
  if (c.device == "cpu")
    return Device::createCPUDevice();
  if (c.device == "gpu")
    return Device::createGpuDevice(0);
  try {
    // An IPU model of several IPUs (--ipus) or named by --device-type, as PopLibs' IPUModel.
    if (isIpuModel(c.device) && (c.ipus || !c.deviceType.empty()))
      return Device::createModelDevice(aspen::Target::createIPUModelTarget(
          c.ipus.value_or(1),
          c.tilesPerIpu.value_or(aspen::Target::createModel(c.device).getTilesPerIPU()),
          c.device));
    return Device::createModelDevice(c.tilesPerIpu
                                         ? aspen::Target::createModel(c.device, *c.tilesPerIpu)
                                         : aspen::Target::createModel(c.device));
  } catch (const aspen::error &e) {
    throw UsageError(fmt::format("--device '{}': {}", c.device, e.what()));
  }
}

// The engine of `prog`, loaded on `device`; none with --compile-only (after saying so).
inline std::optional<aspen::Engine> compileAndLoad(const std::string &tool, const CommonConfig &c,
                                                   const aspen::Graph &graph,
                                                   const aspen::program::Sequence &prog,
                                                   const aspen::Device &device,
                                                   double &compileSeconds) {
  const auto compileStart = std::chrono::steady_clock::now();
  aspen::OptionFlags engineOptions;
  if (!c.profileDir.empty()) {
    engineOptions.set("autoReport.all", "true");
    engineOptions.set("autoReport.directory", c.profileDir);
  }
  aspen::Engine engine(graph, prog, engineOptions);
  compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - compileStart).count();
  if (c.compileOnly) {
    fmt::print("{}: COMPILED in {:.1f} ms (not run: --compile-only)\n", tool, 1e3 * compileSeconds);
    return std::nullopt;
  }
  engine.load(device);
  return engine;
}

// Runs the program --runs times, prints the times and, with --profile, the profile.
inline void runTimed(const std::string &tool, aspen::Engine &engine, const CommonConfig &c,
                     double compileSeconds) {
  const auto runStart = std::chrono::steady_clock::now();
  for (unsigned r = 0; r < c.runs; ++r)
    engine.run(0);
  const double runSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - runStart).count();
  fmt::print("{}: compiled in {:.1f} ms; {} run(s), {:.3f} ms per run\n", tool,
             1e3 * compileSeconds, c.runs, 1e3 * runSeconds / c.runs);
  if (c.profile)
    engine.printProfileSummary(std::cout);
}

// --ignore-data: the runs with no tensor written (but the sequence lengths) or read, nothing
// checked, as PopLibs' --ignore-data.
inline int runUnchecked(const std::string &tool, aspen::Engine &engine, const CommonConfig &c,
                        double compileSeconds) {
  std::vector<NamedTensor> lengths;
  writeTimeSteps(engine, c, lengths);
  runTimed(tool, engine, c, compileSeconds);
  fmt::print("{}: RAN, not checked (--ignore-data: no data written or read)\n", tool);
  return 0;
}

// --- Checking and saving ---------------------------------------------------------------------

inline bool compare(const NamedTensor &t, double rel, double abs) {
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

// What a result should be: its shape, meaning and the reference's values.
struct Expected {
  Shape shape;
  std::string meaning;
  const std::vector<double> *reference;
};

// Reads every result (registered with createHostRead as NAME-read), compares it with
// expected(NAME) under the tolerances and appends it to `saved`; prints a line per result and
// the verdict line, and returns the exit status (0 all agree, 1 otherwise).
inline int checkResults(const std::string &tool, aspen::Engine &engine, const CommonConfig &c,
                        const std::vector<std::pair<std::string, aspen::Tensor>> &results,
                        const std::function<Expected(const std::string &)> &expected,
                        std::vector<NamedTensor> &saved) {
  const bool half = c.dataType == aspen::HALF;
  const double rel = c.relTolerance.value_or(half ? 2e-2 : 2e-4);
  const double abs = c.absTolerance.value_or(half ? 2e-3 : 1e-5);
  fmt::print("{}: |aspen - reference| <= {} + {} * |reference|\n", tool, abs, rel);
  bool pass = true;
  for (const auto &[name, tensor] : results) {
    const Expected e = expected(name);
    if (tensor.numElements() != elements(e.shape))
      throw std::runtime_error(fmt::format("{} has {} elements, expected {} ({})", name,
                                           tensor.numElements(), elements(e.shape),
                                           shapeString(e.shape)));
    NamedTensor t{name, e.shape, e.meaning,
                  readValues(engine, name + "-read", c.dataType, elements(e.shape)), *e.reference};
    pass &= compare(t, rel, abs);
    saved.push_back(std::move(t));
  }
  return pass ? 0 : 1;
}

inline int printVerdict(const std::string &tool, const CommonConfig &c, int status,
                        std::size_t checked) {
  fmt::print("{}: {} ({} tensors checked; phase {}, {}, T={} B={} I={} H={})\n", tool,
             status == 0 ? "PASS" : "FAIL", checked, c.phase, c.dataTypeName, c.sequenceSize,
             c.batchSize, c.inputSize, c.outputSize);
  return status;
}

// A JSON value of the manifest's params.
inline std::string jsonString(const std::string &s) { return "\"" + npy::jsonEscape(s) + "\""; }
inline std::string jsonBool(bool b) { return b ? "true" : "false"; }

// Writes every tensor as DIR/NAME.npy and DIR/manifest.json: {"params": {params in order},
// "tensors": {NAME: {"file", "shape", "meaning"}}}. params' values are JSON already.
inline void saveTensors(const std::string &tool, const std::string &dirName,
                        const std::vector<std::pair<std::string, std::string>> &params,
                        const std::vector<NamedTensor> &tensors) {
  namespace fs = std::filesystem;
  const fs::path dir(dirName);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cannot create '{}': {}", dir.string(), ec.message()));
  std::string json = "{\n  \"params\": {";
  for (std::size_t k = 0; k < params.size(); ++k)
    json += fmt::format("{}\n    \"{}\": {}", k ? "," : "", npy::jsonEscape(params[k].first),
                        params[k].second);
  json += "\n  },\n  \"tensors\": {";
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
  fmt::print("{}: saved {} tensors and manifest.json in {}\n", tool, tensors.size(), dir.string());
}

// The params every layer's manifest starts with.
inline std::vector<std::pair<std::string, std::string>>
commonManifestParams(const std::string &layer, const CommonConfig &c,
                     const std::vector<std::string> &cellOrder) {
  std::string order;
  for (const std::string &name : cellOrder)
    order += (order.empty() ? "" : ", ") + jsonString(name);
  return {{"layer", jsonString(layer)},
          {"sequenceSize", std::to_string(c.sequenceSize)},
          {"batchSize", std::to_string(c.batchSize)},
          {"inputSize", std::to_string(c.inputSize)},
          {"outputSize", std::to_string(c.outputSize)},
          {"cellOrder", "[" + order + "]"},
          {"activation", jsonString(c.activation->name)},
          {"recurrentActivation", jsonString(c.recurrentActivation->name)},
          {"outputFullSequence", jsonBool(c.outputAllSequence)}};
}

// --- The run --------------------------------------------------------------------------------

// What a driver's model gives the run: the expected value of each result, by name.
using ExpectedOf = std::function<Expected(const std::string &)>;
using ManifestParams = std::vector<std::pair<std::string, std::string>>;

// The run every layer driver makes. The device (header(device) prints what runs, on what); the
// layer's graph (build, the ops, linalg and nn codelets added); compiling and loading it; then,
// unless --ignore-data, the inputs and the host model: model(engine, saved) draws the inputs,
// writes them, appends them to `saved` and returns the expected results; the timed runs; the
// comparison; with --save-tensors every tensor and the manifest (manifest() gives its params);
// and the verdict, whose exit status it returns.
template <typename Config>
int runLayerDriver(
    const std::string &tool, const Config &c,
    const std::function<void(const aspen::Device &)> &header,
    const std::function<BuiltLayer(aspen::Graph &, aspen::linalg::PlanningCache &)> &build,
    const std::function<ExpectedOf(aspen::Engine &, std::vector<NamedTensor> &)> &model,
    const std::function<ManifestParams()> &manifest) {
  aspen::Device device = makeDevice(c);
  header(device);
  aspen::Graph graph(device.getTarget());
  aspen::ops::addCodelets(graph);
  aspen::linalg::addCodelets(graph);
  aspen::nn::addCodelets(graph);
  aspen::linalg::PlanningCache cache;
  const BuiltLayer layer = build(graph, cache);
  double compileSeconds = 0;
  std::optional<aspen::Engine> engine =
      compileAndLoad(tool, c, graph, layer.program, device, compileSeconds);
  if (!engine)
    return 0;
  if (c.ignoreData)
    return runUnchecked(tool, *engine, c, compileSeconds);
  std::vector<NamedTensor> saved;
  const ExpectedOf expected = model(*engine, saved);
  runTimed(tool, *engine, c, compileSeconds);
  const int status = checkResults(tool, *engine, c, layer.results, expected, saved);
  if (!c.saveTensors.empty())
    saveTensors(tool, c.saveTensors, manifest(), saved);
  return printVerdict(tool, c, status, layer.results.size());
}

// --- main ------------------------------------------------------------------------------------

// The one main of every layer driver (lstm_layer, gru_layer, rnn_layer: `return
// layerMain<Driver>(argc, argv);`): parse (UsageError -> 2), help, run; errors of the run map to
// exit statuses as the header says. Driver is a struct of statics:
//   Config                       its settings (a CommonConfig)
//   kTool, kUsage                its name, and the help's first lines
//   flags()                      the layer's flags (the run flags, runFlags, are added here)
//   check(Config &)              after parsing, unless --help: UsageError for what cannot run
//   header(c, device)            the run's first lines
//   build(graph, c, cache)       the layer's graph (BuiltLayer)
//   model(c, engine, saved)      the inputs drawn and written, and the model's results
//   manifest(c)                  the layer's entries of --save-tensors' manifest
template <class Driver> int layerMain(int argc, char **argv) {
  using Config = typename Driver::Config;
  const std::string tool = Driver::kTool;
  std::vector<Flag<Config>> flags = Driver::flags();
  const std::vector<Flag<Config>> run = runFlags<Config>();
  flags.insert(flags.end(), run.begin(), run.end());
  Config config;
  try {
    config = parseCommandLine(argc, argv, flags);
    if (!config.help)
      Driver::check(config);
  } catch (const UsageError &e) {
    fmt::print(stderr, "{0}: {1}\nRun '{0} --help' for the flags.\n", tool, e.what());
    return 2;
  }
  if (config.help) {
    printHelp(Driver::kUsage, flags);
    return 0;
  }
  for (const std::string &note : config.notes)
    fmt::print("{}: note: {}\n", tool, note);
  const Config &c = config;
  try {
    return runLayerDriver<Config>(
        tool, c, [&](const aspen::Device &device) { Driver::header(c, device); },
        [&](aspen::Graph &graph, aspen::linalg::PlanningCache &cache) {
          return Driver::build(graph, c, cache);
        },
        [&](aspen::Engine &engine, std::vector<NamedTensor> &saved) {
          return Driver::model(c, engine, saved);
        },
        [&] { return Driver::manifest(c); });
  } catch (const UsageError &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: {}\n", tool, e.what());
    return 2;
  } catch (const aspen::invalid_option &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: the layer refused the options: {}\n", tool, e.what());
    return 2;
  } catch (const std::exception &e) {
    std::fflush(stdout);
    fmt::print(stderr, "{}: FAIL ({})\n", tool, e.what());
    return 1;
  }
}

} // namespace rnnlayer
