// The "gemm" lowering's views (ConvLowering.hpp). The transforms follow ConvParams.hpp step by
// step: the input's (truncate, dilate, pad, flip) become slices, zero interleaving, zero
// concatenation and reverse; the kernel's only move where each kept tap reads (its padding and
// dilation holes multiply nothing); the output's (truncate, stride, pad) pick which outputs a
// tap's view holds and add zero rows.
#include "linalg/ConvLowering.hpp"

#include <aspen/Tensor.hpp>
#include <aspen/linalg/ConvUtil.hpp>

#include <numeric>
#include <vector>

namespace aspen::linalg::detail {

namespace {
constexpr unsigned kFieldAxis = 2; // [B, C, field...]
} // namespace

ConvLowering::ConvLowering(Graph &graph, const ConvParams &params, const DebugContext &debug)
    : graph_(graph), params_(params), debug_(debug) {
  for (unsigned d = 0; d < params.getNumFieldDims(); ++d) {
    outputElements_ *= params.getOutputSize(d);
    keptTaps_ *= params.getTruncatedKernelSize(d);
  }
}

Tensor ConvLowering::zeros(std::vector<std::size_t> shape) const {
  if (!zero_.valid()) {
    zero_ = graph_.addConstant(params_.inputType, {1}, 0.0f, {debug_, "zero"});
    graph_.setTileMapping(zero_, 0);
  }
  Tensor z = zero_.reshape(std::vector<std::size_t>(shape.size(), 1));
  for (unsigned i = 0; i < shape.size(); ++i)
    if (shape[i] != 1)
      z = z.broadcast(unsigned(shape[i]), i);
  return z;
}

Tensor ConvLowering::padded(const Tensor &t, unsigned axis, std::size_t lower,
                            std::size_t upper) const {
  if (lower == 0 && upper == 0)
    return t;
  std::vector<std::size_t> shape = t.shape();
  if (t.dim(axis) == 0) {
    shape[axis] = lower + upper;
    return zeros(shape);
  }
  std::vector<Tensor> parts;
  if (lower) {
    shape[axis] = lower;
    parts.push_back(zeros(shape));
  }
  parts.push_back(t);
  if (upper) {
    shape[axis] = upper;
    parts.push_back(zeros(shape));
  }
  return concat(parts, axis);
}

Tensor ConvLowering::transformedInput(const Tensor &in) const {
  const ConvParams::InputTransform &x = params_.inputTransform;
  Tensor t = in;
  for (unsigned d = 0; d < params_.getNumFieldDims(); ++d) {
    const unsigned axis = kFieldAxis + d;
    t = t.slice(x.truncationLower[d], t.dim(axis) - x.truncationUpper[d], axis);
    const std::size_t m = t.dim(axis), k = x.dilation[d];
    if (m > 1 && k > 1) {
      // [.., m, ..] -> [.., m, 1, ..] beside k - 1 zeros -> [.., m * k, ..], less the last k - 1.
      Tensor one = t.expand({axis + 1});
      std::vector<std::size_t> holes = one.shape();
      holes[axis + 1] = k - 1;
      t = concat({one, zeros(holes)}, axis + 1)
              .reshapePartial(axis, axis + 2, {m * k})
              .slice(0, (m - 1) * k + 1, axis);
    }
    t = padded(t, axis, x.paddingLower[d], x.paddingUpper[d]);
    if (x.flip[d])
      t = t.reverse(axis);
  }
  return t;
}

Tensor ConvLowering::tapView(const Tensor &transformed, const std::vector<std::size_t> &tap) const {
  const ConvParams::InputTransform &k = params_.kernelTransform;
  const ConvParams::OutputTransform &o = params_.outputTransform;
  Tensor t = transformed;
  for (unsigned d = 0; d < params_.getNumFieldDims(); ++d) {
    const unsigned axis = kFieldAxis + d;
    // Where the tap sits in the transformed kernel.
    std::size_t at = k.paddingLower[d] + tap[d] * k.dilation[d];
    if (k.flip[d])
      at = params_.getTransformedKernelSize(d) - 1 - at;
    // The outputs kept by the output truncation and stride read input first + stride * i.
    const std::size_t all = params_.getUntransformedOutputSize(d);
    const std::size_t kept = all - o.truncationLower[d] - o.truncationUpper[d];
    const std::size_t stride = o.stride[d];
    const std::size_t count = kept == 0 ? 0 : (kept - 1) / stride + 1;
    const std::size_t first = o.truncationLower[d] + at;
    if (count == 0) {
      t = t.slice(0, 0, axis);
    } else {
      t = t.slice(first, first + (count - 1) * stride + 1, axis);
      if (stride > 1)
        t = t.subSample(unsigned(stride), axis);
    }
    t = padded(t, axis, o.paddingLower[d], o.paddingUpper[d]);
  }
  return t;
}

Tensor ConvLowering::loweredInput(const Tensor &in) const {
  const std::size_t dims = params_.getNumFieldDims();
  const Tensor transformed = transformedInput(in);
  // Every kept tap tuple in row-major order.
  std::vector<std::size_t> tap(dims, 0);
  std::vector<Tensor> taps;
  taps.reserve(keptTaps_);
  for (std::size_t n = 0; n < keptTaps_; ++n) {
    taps.push_back(tapView(transformed, tap).expand({0}));
    for (std::size_t d = dims; d-- > 0;) {
      if (++tap[d] < params_.getTruncatedKernelSize(unsigned(d)))
        break;
      tap[d] = 0;
    }
  }
  const std::size_t B = params_.batchSize, G = params_.numConvGroups,
                    Ci = params_.inputChannelsPerConvGroup, T = keptTaps_, P = outputElements_;
  // [T, B, G*Ci, O...] -> [T, B, G, Ci, P] -> [G, B, P, Ci, T] -> [G, B*P, Ci*T]
  return concat(taps, 0)
      .reshape({T, B, G, Ci, P})
      .dimShuffle({2, 1, 4, 3, 0})
      .reshape({G, B * P, Ci * T});
}

Tensor ConvLowering::keptKernel(const Tensor &weights) const {
  const ConvParams::InputTransform &k = params_.kernelTransform;
  Tensor w = weights;
  for (unsigned d = 0; d < params_.getNumFieldDims(); ++d)
    w = w.slice(k.truncationLower[d], w.dim(3 + d) - k.truncationUpper[d], 3 + d);
  return w.reshape({params_.numConvGroups, params_.outputChannelsPerConvGroup,
                    params_.inputChannelsPerConvGroup * keptTaps_});
}

Tensor ConvLowering::kernelMatrix(const Tensor &weights, bool transposeAndFlip) const {
  Tensor w = weights;
  if (transposeAndFlip) {
    std::vector<unsigned> order(w.rank());
    std::iota(order.begin(), order.end(), 0u);
    std::swap(order[1], order[2]);
    w = w.dimShuffle(order);
    for (unsigned d = 0; d < params_.getNumFieldDims(); ++d)
      w = w.reverse(3 + d);
  }
  return keptKernel(w);
}

Tensor ConvLowering::weightMatrix(const Tensor &weights, bool transposeAndFlip) const {
  return kernelMatrix(weights, transposeAndFlip).dimShuffle({0, 2, 1});
}

program::ConvGeometry ConvLowering::geometry() const {
  program::ConvGeometry g;
  g.batch = params_.batchSize;
  g.groups = params_.numConvGroups;
  g.inChans = params_.inputChannelsPerConvGroup;
  g.outChans = params_.outputChannelsPerConvGroup;
  for (unsigned d = 0; d < params_.getNumFieldDims(); ++d) {
    const std::size_t outputs = params_.getOutputSize(d), taps = params_.getTruncatedKernelSize(d);
    g.inputField.push_back(params_.inputFieldShape[d]);
    g.outputField.push_back(outputs);
    g.taps.push_back(taps);
    std::vector<std::int64_t> index(outputs * taps);
    for (std::size_t o = 0; o < outputs; ++o)
      for (std::size_t t = 0; t < taps; ++t) {
        const std::optional<std::size_t> i =
            getInputIndex(d, o, params_.kernelTransform.truncationLower[d] + t, params_);
        index[o * taps + t] = i ? std::int64_t(*i) : -1;
      }
    g.inputIndex.push_back(std::move(index));
  }
  return g;
}

Tensor ConvLowering::outputMatrix(const Tensor &out) const {
  const std::size_t B = params_.batchSize, G = params_.numConvGroups,
                    Co = params_.outputChannelsPerConvGroup, P = outputElements_;
  return out.reshape({B, G, Co, P}).dimShuffle({1, 0, 3, 2}).reshape({G, B * P, Co});
}

Tensor ConvLowering::gradientMatrix(const Tensor &zDeltas) const {
  const std::size_t B = params_.batchSize, G = params_.numConvGroups,
                    Co = params_.outputChannelsPerConvGroup, P = outputElements_;
  return zDeltas.reshape({B, G, Co, P}).dimShuffle({1, 2, 0, 3}).reshape({G, Co, B * P});
}

} // namespace aspen::linalg::detail
