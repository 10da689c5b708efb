// The CNN layers of the C backend (aspen/backend.h): convolution, pooling, batch normalisation
// and the non-linearities' gradients, each an engine for one configuration and a slice of the
// batch (the call runs the slices one after another), with named host handles.
#pragma once

#include "Layers.hpp"

#include <aspen/OptionFlags.hpp>
#include <aspen/Type.hpp>
#include <aspen/nn/NonLinearityDef.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace aspen::backend {

struct ConvConfig {
  Type type = FLOAT;
  std::size_t N = 0, C = 0, H = 0, W = 0, K = 0, R = 1, S = 1;
  std::size_t padH = 0, padW = 0, strideH = 1, strideW = 1, dilationH = 1, dilationW = 1;
  std::size_t groups = 1;
  OptionFlags options;     // aspen::linalg's convolution options
  std::string optionsText; // part of the key
  std::size_t memoryLimit = 0;
  std::size_t P() const;
  std::size_t Q() const;
  std::size_t xElements() const { return C * H * W; } // an image's
  std::size_t yElements() const { return K * P() * Q(); }
  std::size_t wElements() const { return K * (C / groups) * R * S; }
  // Images a slice: the whole batch, or as many as memoryLimit allows (at least one).
  std::size_t imagesPerSlice() const;
  std::string key(const char *pass, std::size_t images) const;
};

// Handles: "x", "w", "b" (bias), "y"; "dy", "dx"; "dw", "db".
std::shared_ptr<SimpleLayer> buildConvForward(const Device &device, const ConvConfig &c,
                                              std::size_t images, bool bias);
std::shared_ptr<SimpleLayer> buildConvBackwardData(const Device &device, const ConvConfig &c,
                                                   std::size_t images);
std::shared_ptr<SimpleLayer> buildConvBackwardFilter(const Device &device, const ConvConfig &c,
                                                     std::size_t images, bool bias);

struct PoolConfig {
  Type type = FLOAT;
  bool max = true;
  std::size_t N = 0, C = 0, H = 0, W = 0, kH = 1, kW = 1, padH = 0, padW = 0, strideH = 1,
              strideW = 1;
  bool ceilMode = false, includePadding = false, gradAll = false;
  std::size_t memoryLimit = 0;
  std::size_t P() const;
  std::size_t Q() const;
  std::size_t imagesPerSlice() const;
  std::string key(const char *pass, std::size_t images) const;
};

// Handles: "x", "y" (forward); backward: "x", "y-in" (MAX, unless recompute), "dy", "dx".
std::shared_ptr<SimpleLayer> buildPoolForward(const Device &device, const PoolConfig &c,
                                              std::size_t images);
std::shared_ptr<SimpleLayer> buildPoolBackward(const Device &device, const PoolConfig &c,
                                               std::size_t images, bool recompute);

struct BatchNormConfig {
  Type type = FLOAT;
  std::size_t N = 0, C = 0, HW = 1;
  float eps = 1e-5f, momentum = 0.1f;
  std::string key(const char *pass) const;
};

// Training handles: "x", "gamma", "beta", "running-in" ([2, C]: mean, var), "y", "running",
// "saved" ([2, C]: mean, invStdDev). Inference: "x", "scale-shift" ([2, C]: gamma / sqrt(var +
// eps) and beta - that * mean, which the call computes on the host), "y".
// Backward: "x", "dy", "gamma", "saved-in", "dx", "dparams" ([2, C]: dgamma, dbeta).
std::shared_ptr<SimpleLayer> buildBatchNormTraining(const Device &device,
                                                    const BatchNormConfig &c);
std::shared_ptr<SimpleLayer> buildBatchNormInference(const Device &device,
                                                     const BatchNormConfig &c);
std::shared_ptr<SimpleLayer> buildBatchNormBackward(const Device &device,
                                                    const BatchNormConfig &c);

// dx [rows, cols] from act (the forward's output, or relu's input) and dy: "act", "dy", "dx".
std::shared_ptr<SimpleLayer> buildNonLinearityBackward(const Device &device,
                                                       nn::NonLinearityType kind, Type type,
                                                       std::size_t rows, std::size_t cols);

} // namespace aspen::backend
