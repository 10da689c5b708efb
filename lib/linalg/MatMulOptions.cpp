// Reads the matmul options (MatMulOptions.hpp): the flat keys through OptionSpec, then the
// "planConstraints" JSON, whose pins are checked against the parameters' dimensions here and
// against the target by the planner.
#include "linalg/MatMulOptions.hpp"
#include "linalg/MatMulPlanner.hpp"

#include "support/OptionParsing.hpp"
#include "support/Json.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <string>

namespace aspen::linalg::detail {

namespace json = aspen::support::json;

const char *toString(FullyConnectedPass pass) {
  switch (pass) {
  case FullyConnectedPass::NONE: return "NONE";
  case FullyConnectedPass::INFERENCE_FWD: return "INFERENCE_FWD";
  case FullyConnectedPass::TRAINING_FWD: return "TRAINING_FWD";
  case FullyConnectedPass::TRAINING_BWD: return "TRAINING_BWD";
  case FullyConnectedPass::TRAINING_WU: return "TRAINING_WU";
  }
  return "?";
}

bool MatMulConstraints::empty() const { return *this == MatMulConstraints{}; }

bool MatMulConstraints::pinsSplits() const {
  return partitionGroups || partitionM || partitionK || partitionN || serialM || serialK ||
         serialN;
}

std::string MatMulConstraints::toJson() const {
  json::Value root = json::Value::object();
  if (method)
    root.set("method", json::Value::string(aspen::linalg::toString(*method)));
  auto pins = [](std::initializer_list<std::pair<const char *, std::optional<std::size_t>>> keys) {
    json::Value part = json::Value::object();
    for (const auto &[key, value] : keys)
      if (value)
        part.set(key, json::Value::number(std::uint64_t(*value)));
    return part;
  };
  json::Value partition = pins({{"groups", partitionGroups},
                                {"m", partitionM},
                                {"k", partitionK},
                                {"n", partitionN}});
  json::Value serial = pins({{"m", serialM}, {"k", serialK}, {"n", serialN}});
  if (!partition.asObject().empty())
    root.set("partition", std::move(partition));
  if (!serial.asObject().empty())
    root.set("serial", std::move(serial));
  if (partialsType)
    root.set("partialsType", json::Value::string(partialsType->toString()));
  return root.write();
}

namespace {

constexpr const char *derivedKeys[] = {"tilesUsed",     "maxTileBytes",    "meanTileBytes",
                                       "exchangeBytes", "estimatedCycles", "params"};

const json::Value::Object &objectAt(const json::Value &v, const std::string &path) {
  if (!v.isObject())
    throw invalid_option(fmt::format("{} = {}: must be a JSON object", path, v.write()));
  return v.asObject();
}

// A pinned split count: a positive integer no larger than the dimension it splits.
std::size_t readCount(const json::Value &v, const std::string &path, char dimName,
                      std::size_t dim) {
  const auto n = v.isNumber() ? v.asUnsigned() : std::nullopt;
  if (!n)
    throw invalid_option(fmt::format("{} = {}: must be a positive integer", path, v.write()));
  if (*n == 0)
    throw invalid_option(fmt::format("{} = 0: must be a positive integer", path));
  if (*n > dim)
    throw invalid_option(fmt::format("{} = {}: {} is {}, and no part may be empty", path, *n,
                                     dimName, dim));
  return static_cast<std::size_t>(*n);
}

// The split counts of one JSON object ("partition" or "serial"), each pinned into its field.
struct PinnedDim {
  const char *key;
  char dimName;
  std::size_t dim;
  std::optional<std::size_t> *pin;
};
void readPins(const json::Value &value, const std::string &path,
              std::initializer_list<PinnedDim> dims, const char *keys) {
  for (const auto &[key, count] : objectAt(value, path)) {
    const std::string p = path + "." + key;
    const PinnedDim *match = nullptr;
    for (const PinnedDim &d : dims)
      if (key == d.key)
        match = &d;
    if (!match)
      throw invalid_option(fmt::format("{}: unknown key; the keys are {}", p, keys));
    *match->pin = readCount(count, p, match->dimName, match->dim);
  }
}

Type readPartialsType(const json::Value &v, const std::string &path) {
  if (v.isString() && v.asString() == "float")
    return FLOAT;
  if (v.isString() && v.asString() == "half")
    return HALF;
  throw invalid_option(fmt::format("{} = {}: must be \"float\" or \"half\"", path, v.write()));
}

// PopLibs' planConstraints (its convolution planner's schema, which poplin's matmuls share):
// the IPU's on-tile methods, the channel groupings of its AMP and SLIC units, and per-level
// "transform" and "partition" objects keyed "0", "1", ... Each is checked for its form and
// accepted: a method pins Aspen's tiled vertex plan (the on-tile kind); the rest describe IPU
// hardware and conv-planner levels Aspen's planner does not have, so they do not change the plan.
constexpr const char *popLibsMethods[] = {"AMP", "HMAC", "MAC", "OUTER_PRODUCT", "SLIC", "VMAC"};
constexpr const char *popLibsGroupingKeys[] = {"convGroupsPerGroup", "inChansPerGroup",
                                               "partialChansPerGroup", "numAmpConvUnits",
                                               "slicWindowWidth"};

bool isLevelKey(const std::string &key) {
  return !key.empty() && key.size() <= 3 &&
         std::all_of(key.begin(), key.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
}

void checkPopLibsLevel(const json::Value &level, const std::string &path) {
  for (const auto &[key, value] : objectAt(level, path)) {
    if (key != "transform" && key != "partition")
      throw invalid_option(fmt::format(
          "{}.{}: unknown key; a PopLibs plan level has \"transform\" and \"partition\"", path,
          key));
    objectAt(value, path + "." + key);
  }
}

} // namespace

bool isPopLibsMethod(const std::string &method) {
  return std::find_if(std::begin(popLibsMethods), std::end(popLibsMethods),
                      [&](const char *name) { return method == name; }) !=
         std::end(popLibsMethods);
}

bool checkPopLibsPlanKey(const std::string &key, const json::Value &value,
                         const std::string &path) {
  if (std::find(std::begin(popLibsGroupingKeys), std::end(popLibsGroupingKeys), key) !=
      std::end(popLibsGroupingKeys)) {
    if (!value.isNumber() || !value.asUnsigned())
      throw invalid_option(
          fmt::format("{} = {}: must be a non-negative integer", path, value.write()));
    return true;
  }
  if (isLevelKey(key)) {
    checkPopLibsLevel(value, path);
    return true;
  }
  return false;
}

namespace {

MatMulConstraints readConstraints(const std::string &text, const MatMulShape &shape) {
  const json::Value root = json::parse(text, "option planConstraints");
  MatMulConstraints c;
  for (const auto &[key, value] : objectAt(root, "planConstraints")) {
    const std::string path = "planConstraints." + key;
    if (key == "partition") {
      readPins(value, path,
               {{"groups", 'G', shape.G, &c.partitionGroups},
                {"m", 'M', shape.M, &c.partitionM},
                {"k", 'K', shape.K, &c.partitionK},
                {"n", 'N', shape.N, &c.partitionN}},
               "groups, m, k, n");
    } else if (key == "serial") {
      readPins(value, path,
               {{"m", 'M', shape.M, &c.serialM},
                {"k", 'K', shape.K, &c.serialK},
                {"n", 'N', shape.N, &c.serialN}},
               "m, k, n (groups are never split serially)");
    } else if (key == "partialsType") {
      c.partialsType = readPartialsType(value, path);
    } else if (key == "method") {
      if (value.isString() && value.asString() == "library")
        c.method = MatMulMethod::Library;
      else if (value.isString() &&
               (value.asString() == "vertices" || isPopLibsMethod(value.asString())))
        c.method = MatMulMethod::Vertices;
      else
        throw invalid_option(fmt::format(
            "{} = {}: must be \"library\" or \"vertices\" (or one of PopLibs' AMP, HMAC, MAC, "
            "OUTER_PRODUCT, SLIC, VMAC, which mean \"vertices\")",
            path, value.write()));
    } else if (checkPopLibsPlanKey(key, value, path)) {
    } else if (std::find(std::begin(derivedKeys), std::end(derivedKeys), key) !=
               std::end(derivedKeys)) {
      throw invalid_option(fmt::format(
          "{}: derived by the planner, not a constraint; pin only method, partition, serial "
          "and partialsType (MatMulPlan::constraintsJson writes those)",
          path));
    } else {
      throw invalid_option(fmt::format(
          "{}: unknown key; the keys are method, partition, serial and partialsType (and "
          "PopLibs' convGroupsPerGroup, inChansPerGroup, partialChansPerGroup, numAmpConvUnits, "
          "slicWindowWidth and plan levels \"0\", \"1\", ...)",
          path));
    }
  }
  return c;
}

// The pins of one dimension must leave a split into parts * serial chunks of
// ceil(D / (parts * serial)) rows with none empty (for an unpinned count, some value of it).
void checkChunks(std::optional<std::size_t> parts, std::optional<std::size_t> serial, char name,
                 char dimName, std::size_t dim) {
  if (parts && serial) {
    const std::size_t chunks = *parts * *serial;
    if (!isValidChunkCount(dim, chunks))
      throw invalid_option(fmt::format(
          "planConstraints.partition.{0} = {1} and planConstraints.serial.{0} = {2} contradict: "
          "{3} is {4}, and {5} chunks of ceil({4} / {5}) rows would leave one empty",
          name, *parts, *serial, dimName, dim, chunks));
    return;
  }
  if (!parts && !serial)
    return;
  const std::size_t fixed = parts ? *parts : *serial;
  for (std::size_t other = 1; other <= dim / fixed; ++other)
    if (isValidChunkCount(dim, fixed * other))
      return;
  throw invalid_option(fmt::format(
      "planConstraints.{0}.{1} = {2}: {3} is {4}, and {2} chunks of ceil({4} / {2}) rows (or any "
      "multiple of {2}) would leave one empty",
      parts ? "partition" : "serial", name, fixed, dimName, dim));
}

} // namespace

MatMulOptions parseMatMulOptions(const OptionFlags &options, const MatMulParams &params) {
  const MatMulShape shape = checkMatMulParams(params);
  MatMulOptions parsed;
  std::string constraintsText;
  aspen::detail::OptionSpec("matMul")
      .enumeration("partialsType", parsed.partialsType, {{"float", FLOAT}, {"half", HALF}})
      .add("availableMemoryProportion", "a number in (0, 1]",
           [&parsed](const std::string &v) {
             try {
               std::size_t used = 0;
               const double x = std::stod(v, &used);
               if (used != v.size() || !std::isfinite(x) || x <= 0 || x > 1)
                 return false;
               parsed.availableMemoryProportion = x;
               return true;
             } catch (const std::exception &) {
               return false;
             }
           })
      .enumeration("fullyConnectedPass", parsed.fullyConnectedPass,
                   {{"NONE", FullyConnectedPass::NONE},
                    {"INFERENCE_FWD", FullyConnectedPass::INFERENCE_FWD},
                    {"TRAINING_FWD", FullyConnectedPass::TRAINING_FWD},
                    {"TRAINING_BWD", FullyConnectedPass::TRAINING_BWD},
                    {"TRAINING_WU", FullyConnectedPass::TRAINING_WU}})
      .boolean("inputRHSIsPreArranged", parsed.inputRHSIsPreArranged)
      .boolean("remapOutputTensor", parsed.remapOutputTensor)
      .boolean("enableFastReduce", parsed.enableFastReduce)
      .add("planConstraints", "a JSON object (see MatMulPlan.hpp)",
           [&constraintsText](const std::string &v) {
             constraintsText = v;
             return true;
           })
      .parse(options);

  if (!constraintsText.empty()) {
    MatMulConstraints &c = parsed.constraints = readConstraints(constraintsText, shape);
    if (c.partialsType) {
      if (options.contains("partialsType") && *c.partialsType != parsed.partialsType)
        throw invalid_option(fmt::format(
            "planConstraints.partialsType = \"{}\" contradicts option partialsType = \"{}\"",
            c.partialsType->toString(), parsed.partialsType.toString()));
      parsed.partialsType = *c.partialsType;
    }
    if (c.partitionGroups && !isValidChunkCount(shape.G, *c.partitionGroups))
      throw invalid_option(fmt::format(
          "planConstraints.partition.groups = {0}: G is {1}, and {0} chunks of ceil({1} / {0}) "
          "groups would leave one empty",
          *c.partitionGroups, shape.G));
    checkChunks(c.partitionM, c.serialM, 'm', 'M', shape.M);
    checkChunks(c.partitionK, c.serialK, 'k', 'K', shape.K);
    checkChunks(c.partitionN, c.serialN, 'n', 'N', shape.N);
    if (c.method == MatMulMethod::Library && c.pinsSplits())
      throw invalid_option(fmt::format(
          "planConstraints {}: method \"library\" runs the product as one call, so partition "
          "and serial counts cannot be pinned with it",
          c.toJson()));
  }
  if (parsed.partialsType == HALF && params.inputType == FLOAT)
    throw invalid_option(fmt::format(
        "option matMul.partialsType = \"half\": FLOAT inputs need \"float\" partials (half "
        "partials are only allowed with HALF inputs)"));
  return parsed;
}

} // namespace aspen::linalg::detail
