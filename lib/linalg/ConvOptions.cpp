// Reads the convolution options (ConvOptions.hpp): the flat keys through OptionSpec, then the
// "planConstraints" JSON.
#include "linalg/ConvOptions.hpp"
#include "linalg/MatMulOptions.hpp"

#include "support/Json.hpp"
#include "support/OptionParsing.hpp"

#include <aspen/Error.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>

namespace aspen::linalg::detail {

namespace json = aspen::support::json;

namespace {

constexpr const char *kPasses[] = {"NONE",           "INFERENCE_FWD",   "TRAINING_FWD",
                                   "TRAINING_BWD",   "TRAINING_WU",     "FC_INFERENCE_FWD",
                                   "FC_TRAINING_FWD", "FC_TRAINING_BWD", "FC_TRAINING_WU"};

void readConstraints(const std::string &text, ConvOptions &parsed) {
  const json::Value root = json::parse(text, "option planConstraints");
  if (!root.isObject())
    throw invalid_option(
        fmt::format("planConstraints = {}: must be a JSON object", root.write()));
  for (const auto &[key, value] : root.asObject()) {
    const std::string path = "planConstraints." + key;
    if (key == "method") {
      const std::string method = value.isString() ? value.asString() : "";
      if (method == "library" || method == "gemm" || method == "direct")
        parsed.method = method;
      else if (isPopLibsMethod(method))
        parsed.method = "gemm"; // the IPU's on-tile methods: the tiled product
      else
        throw invalid_option(fmt::format(
            "{} = {}: must be \"library\", \"gemm\" or \"direct\" (PopLibs' AMP, HMAC, MAC, "
            "OUTER_PRODUCT, SLIC and VMAC are accepted and mean \"gemm\")",
            path, value.write()));
    } else if (key == "serial") {
      if (!value.isObject())
        throw invalid_option(fmt::format("{} = {}: must be a JSON object", path, value.write()));
      for (const auto &[serialKey, count] : value.asObject()) {
        if (serialKey != "batch")
          throw invalid_option(
              fmt::format("{}.{}: unknown key; the key is batch", path, serialKey));
        const auto n = count.isNumber() ? count.asUnsigned() : std::nullopt;
        if (!n || *n == 0)
          throw invalid_option(fmt::format("{}.batch = {}: must be a positive integer", path,
                                           count.write()));
        parsed.batchSerial = static_cast<std::size_t>(*n);
      }
    } else if (key == "matMul") {
      if (!value.isObject())
        throw invalid_option(fmt::format("{} = {}: must be a JSON object (the matmul's "
                                         "planConstraints, MatMulPlan.hpp)",
                                         path, value.write()));
      parsed.matMulConstraints = value.write();
    } else if (!checkPopLibsPlanKey(key, value, path)) {
      throw invalid_option(fmt::format(
          "{}: unknown key; the keys are method, serial and matMul (and PopLibs' convGroupsPerGroup, "
          "inChansPerGroup, partialChansPerGroup, numAmpConvUnits, slicWindowWidth and plan "
          "levels \"0\", \"1\", ...)",
          path));
    }
  }
}

} // namespace

OptionFlags ConvOptions::matMulOptions() const {
  OptionFlags options = {
      {"partialsType", partialsType == HALF ? "half" : "float"},
      {"availableMemoryProportion", fmt::format("{}", availableMemoryProportion)}};
  if (!matMulConstraints.empty())
    options.set("planConstraints", matMulConstraints);
  return options;
}

ConvOptions parseConvOptions(const OptionFlags &options, Type inputType) {
  ConvOptions parsed;
  std::string constraintsText;
  bool ignoredFlag = false;
  aspen::detail::OptionSpec spec("convolution");
  spec.add("pass", "one of NONE, INFERENCE_FWD, TRAINING_FWD, TRAINING_BWD, TRAINING_WU, "
                   "FC_INFERENCE_FWD, FC_TRAINING_FWD, FC_TRAINING_BWD, FC_TRAINING_WU",
           [&parsed](const std::string &v) {
             for (const char *pass : kPasses)
               if (v == pass) {
                 parsed.pass = v;
                 return true;
               }
             return false;
           })
      .number("availableMemoryProportion", parsed.availableMemoryProportion, 0, 1)
      .enumeration("partialsType", parsed.partialsType, {{"float", FLOAT}, {"half", HALF}})
      .boolean("allowTF32", parsed.allowTF32)
      .add("planConstraints", "a JSON object (see Convolution.hpp)",
           [&constraintsText](const std::string &v) {
             constraintsText = v;
             return true;
           });
  // PopLibs' IPU-only keys: their values are checked, and they change nothing here.
  for (const char *key : {"use128BitConvUnitLoad", "enableMultiStageReduce", "enableFastReduce",
                          "enableConvDithering", "remapOutputTensor"})
    spec.boolean(key, ignoredFlag);
  spec.parse(options);
  if (!(parsed.availableMemoryProportion > 0))
    throw invalid_option(fmt::format(
        "option convolution.availableMemoryProportion = {}: must be a number in (0, 1]",
        parsed.availableMemoryProportion));
  if (!constraintsText.empty())
    readConstraints(constraintsText, parsed);
  if (parsed.partialsType == HALF && inputType == FLOAT)
    throw invalid_option("option convolution.partialsType = \"half\": FLOAT inputs need "
                         "\"float\" partials (half partials are only allowed with HALF inputs)");
  return parsed;
}

} // namespace aspen::linalg::detail
