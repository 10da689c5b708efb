// The convolution options (include/aspen/linalg/Convolution.hpp) read once into a struct, so the
// planner and the builders agree on their values. Unknown keys and bad values raise
// aspen::invalid_option naming the key and the allowed values.
#pragma once

#include <aspen/OptionFlags.hpp>
#include <aspen/Type.hpp>

#include <cstddef>
#include <optional>
#include <string>

namespace aspen::linalg::detail {

struct ConvOptions {
  std::string pass = "NONE"; // validated; each pass is planned on its own shapes
  double availableMemoryProportion = 0.6;
  Type partialsType = FLOAT;
  bool allowTF32 = false; // GPU library calls: float products on TF32 tensor cores
  std::optional<std::string> method;      // planConstraints.method: library, gemm or direct
  std::optional<std::size_t> batchSerial; // planConstraints.serial.batch
  std::string matMulConstraints;          // planConstraints.matMul, as JSON text
  // The options of the convolution's products (partialsType, availableMemoryProportion and
  // planConstraints.matMul as their planConstraints).
  OptionFlags matMulOptions() const;
};

// Reads `options`; partialsType "half" needs HALF inputs (inputType). A pinned serial batch
// count larger than the batch is checked by the planner, which knows the batch.
ConvOptions parseConvOptions(const OptionFlags &options, Type inputType);

} // namespace aspen::linalg::detail
