// The matmul options (see include/aspen/linalg/MatMul.hpp) read once into a struct, so the
// planner and the builders agree on their values. Unknown keys and bad values raise
// aspen::invalid_option naming the key and the allowed values.
#pragma once

#include <aspen/OptionFlags.hpp>
#include <aspen/Type.hpp>
#include <aspen/linalg/MatMulPlan.hpp>

#include "support/Json.hpp"

#include <cstddef>
#include <optional>
#include <string>

namespace aspen::linalg::detail {

enum class FullyConnectedPass { NONE, INFERENCE_FWD, TRAINING_FWD, TRAINING_BWD, TRAINING_WU };
const char *toString(FullyConnectedPass pass);

// The parts of a plan pinned by the "planConstraints" option; unset parts are searched.
struct MatMulConstraints {
  std::optional<std::size_t> partitionGroups, partitionM, partitionK, partitionN;
  std::optional<std::size_t> serialM, serialK, serialN;
  std::optional<Type> partialsType;
  std::optional<MatMulMethod> method;
  bool empty() const;
  // Whether a partition or serial count is pinned (which pins method "vertices").
  bool pinsSplits() const;
  // The constraints written back as the "planConstraints" JSON schema (keys in a fixed order).
  std::string toJson() const;
  friend bool operator==(const MatMulConstraints &, const MatMulConstraints &) = default;
};

struct MatMulOptions {
  Type partialsType = FLOAT;
  double availableMemoryProportion = 0.6;
  // Validated and kept; it does not change the plan (see MatMulPlanner.hpp).
  FullyConnectedPass fullyConnectedPass = FullyConnectedPass::NONE;
  // Read by the builders (B's layout); it does not change the plan either.
  bool inputRHSIsPreArranged = false;
  // poplin's, accepted without effect: the planner lays the output out itself (no remapping
  // pass to turn off), and partial sums have one reduction.
  bool remapOutputTensor = true;
  bool enableFastReduce = false;
  MatMulConstraints constraints;
};

// Reads `options` for a matmul of `params` (whose shapes must already be valid: see
// checkMatMulParams). Checks what needs only the parameters: partialsType "half" with FLOAT
// inputs, constraint keys, values and pins larger than their dimension. Pins that need the
// target (tile count, memory) are checked by planMatMul.
MatMulOptions parseMatMulOptions(const OptionFlags &options, const MatMulParams &params);

// PopLibs' planConstraints keys that describe the IPU (shared by the matmul and convolution
// options): whether `method` is one of its on-tile methods (AMP, HMAC, MAC, OUTER_PRODUCT, SLIC,
// VMAC); and, for a channel-grouping key or a plan level ("0", "1", ...), checks `value`'s form
// (invalid_option naming `path`) and returns true; false for any other key.
bool isPopLibsMethod(const std::string &method);
bool checkPopLibsPlanKey(const std::string &key, const support::json::Value &value,
                         const std::string &path);

} // namespace aspen::linalg::detail
