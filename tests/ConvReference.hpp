// An independent double-precision model of a convolution (aspen::linalg::ConvParams), for the
// tests. It reads only the plain fields of the parameters (shapes, channels, groups and the
// three transforms), never their size getters or ConvUtil's index maths: it builds the
// transformed input and kernel as explicit arrays, one step at a time (truncate, dilate, pad,
// flip), convolves them directly, and then applies the output transform (truncate, stride, pad)
// the same way. The arrays hold, for each element, the flat index of the element of the original
// field it came from (or -1 for a zero), so that the one enumeration of multiply-accumulates
// (forEachMac) serves the forward pass and both adjoints exactly.
//
// Layouts (flat row-major std::vector<double>; B batch, G groups, Ci / Co channels per group):
//   activations  [B, G*Ci, inputFieldShape...]
//   weights      [G, Co, Ci, kernelShape...]
//   output       [B, G*Co, outputField(p)...]
//   biases       [G*Co]
// forward(p, in, w)              -> out:     out[o] += in[i] * w[k] for every MAC (i, k, o)
// backwardData(p, outGrad, w)    -> inGrad:  inGrad[i] += outGrad[o] * w[k]   (the adjoint in in)
// weightDeltas(p, outGrad, in)   -> dW:      dW[k] += outGrad[o] * in[i]      (the adjoint in w)
// biasDeltas(p, outGrad)         -> db:      db[c] = sum of outGrad over batch and field
// The rearrangements ConvUtil.hpp documents for getGradientParams / getWeightUpdateParams
// (transposeAndFlipWeights, weightUpdateInput, weightUpdateWeights, weightDeltasFromUpdate) are
// plain index shuffles written from that contract. Parameters must be valid.
#pragma once

#include <aspen/linalg/ConvParams.hpp>

#include <cstddef>
#include <functional>
#include <vector>

namespace convref {

using Shape = std::vector<std::size_t>;
using Params = aspen::linalg::ConvParams;

inline std::size_t product(const Shape &shape) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    n *= d;
  return n;
}

// A field of element sources: source[j] is the flat index of the original element that element
// j holds, or -1 where it holds a zero.
struct IndexField {
  Shape shape;
  std::vector<long long> source;
};

inline IndexField identityField(const Shape &shape) {
  IndexField f{shape, std::vector<long long>(product(shape))};
  for (std::size_t j = 0; j != f.source.size(); ++j)
    f.source[j] = static_cast<long long>(j);
  return f;
}

// Rebuilds dimension `dim` with `size` elements: element j takes old element from(j), or is a
// zero when from(j) is negative.
inline IndexField remapDim(const IndexField &f, std::size_t dim, std::size_t size,
                           const std::function<long long(std::size_t)> &from) {
  Shape outer(f.shape.begin(), f.shape.begin() + dim);
  Shape inner(f.shape.begin() + dim + 1, f.shape.end());
  const std::size_t numOuter = product(outer), numInner = product(inner), old = f.shape[dim];
  IndexField r{f.shape, {}};
  r.shape[dim] = size;
  r.source.assign(numOuter * size * numInner, -1);
  for (std::size_t o = 0; o != numOuter; ++o)
    for (std::size_t j = 0; j != size; ++j) {
      const long long src = from(j);
      if (src < 0)
        continue;
      for (std::size_t i = 0; i != numInner; ++i)
        r.source[(o * size + j) * numInner + i] =
            f.source[(o * old + static_cast<std::size_t>(src)) * numInner + i];
    }
  return r;
}

// Each step over every dimension of the field.
inline IndexField truncate(IndexField f, const std::vector<unsigned> &lower,
                           const std::vector<unsigned> &upper) {
  for (std::size_t d = 0; d != f.shape.size(); ++d)
    f = remapDim(f, d, f.shape[d] - lower[d] - upper[d],
                 [&](std::size_t j) { return static_cast<long long>(j + lower[d]); });
  return f;
}

inline IndexField dilate(IndexField f, const std::vector<unsigned> &dilation) {
  for (std::size_t d = 0; d != f.shape.size(); ++d) {
    const std::size_t n = f.shape[d], k = dilation[d];
    f = remapDim(f, d, n == 0 ? 0 : (n - 1) * k + 1,
                 [&](std::size_t j) { return j % k == 0 ? static_cast<long long>(j / k) : -1; });
  }
  return f;
}

inline IndexField pad(IndexField f, const std::vector<unsigned> &lower,
                      const std::vector<unsigned> &upper) {
  for (std::size_t d = 0; d != f.shape.size(); ++d) {
    const std::size_t n = f.shape[d];
    f = remapDim(f, d, lower[d] + n + upper[d], [&](std::size_t j) {
      return j >= lower[d] && j < lower[d] + n ? static_cast<long long>(j - lower[d]) : -1;
    });
  }
  return f;
}

inline IndexField flip(IndexField f, const std::vector<bool> &flags) {
  for (std::size_t d = 0; d != f.shape.size(); ++d) {
    const std::size_t n = f.shape[d];
    if (flags[d])
      f = remapDim(f, d, n, [&](std::size_t j) { return static_cast<long long>(n - 1 - j); });
  }
  return f;
}

inline IndexField stride(IndexField f, const std::vector<unsigned> &strides) {
  for (std::size_t d = 0; d != f.shape.size(); ++d) {
    const std::size_t n = f.shape[d], s = strides[d];
    f = remapDim(f, d, n == 0 ? 0 : (n - 1) / s + 1,
                 [&](std::size_t j) { return static_cast<long long>(j * s); });
  }
  return f;
}

inline IndexField transformField(const Shape &shape, const Params::InputTransform &t) {
  IndexField f = truncate(identityField(shape), t.truncationLower, t.truncationUpper);
  f = dilate(f, t.dilation);
  f = pad(f, t.paddingLower, t.paddingUpper);
  return flip(f, t.flip);
}

// The shape of the convolution of a transformed input and kernel: in - kernel + 1 per dim.
inline Shape untransformedOutputShape(const IndexField &in, const IndexField &kernel) {
  Shape shape(in.shape.size());
  for (std::size_t d = 0; d != shape.size(); ++d)
    shape[d] = in.shape[d] + 1 - kernel.shape[d];
  return shape;
}

// For each final output element, the element of the untransformed output it holds (or -1).
inline IndexField transformOutput(const Shape &untransformed, const Params::OutputTransform &t) {
  IndexField f = truncate(identityField(untransformed), t.truncationLower, t.truncationUpper);
  f = stride(f, t.stride);
  return pad(f, t.paddingLower, t.paddingUpper);
}

inline Shape outputField(const Params &p) {
  const Shape untransformed =
      untransformedOutputShape(transformField(p.inputFieldShape, p.inputTransform),
                               transformField(p.kernelShape, p.kernelTransform));
  return transformOutput(untransformed, p.outputTransform).shape;
}

inline Shape unflatten(std::size_t flat, const Shape &shape) {
  Shape coords(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    coords[d] = flat % shape[d];
    flat /= shape[d];
  }
  return coords;
}

// Calls mac(o, i, k) for every multiply-accumulate out[o] += in[i] * w[k], with o, i and k flat
// indices in the layouts above: the seven loops of a direct convolution (batch, group, output
// channel, input channel, output field, kernel field), the field loops run once up front.
template <class Mac> void forEachMac(const Params &p, Mac &&mac) {
  const IndexField in = transformField(p.inputFieldShape, p.inputTransform);
  const IndexField kernel = transformField(p.kernelShape, p.kernelTransform);
  const Shape untransformed = untransformedOutputShape(in, kernel);
  const IndexField out = transformOutput(untransformed, p.outputTransform);
  struct FieldMac {
    std::size_t out, in, kernel; // flat field indices into the original fields
  };
  std::vector<FieldMac> fieldMacs;
  for (std::size_t o = 0; o != out.source.size(); ++o) {
    if (out.source[o] < 0)
      continue;
    const Shape u = unflatten(static_cast<std::size_t>(out.source[o]), untransformed);
    for (std::size_t kp = 0; kp != kernel.source.size(); ++kp) {
      if (kernel.source[kp] < 0)
        continue;
      const Shape k = unflatten(kp, kernel.shape);
      std::size_t position = 0;
      for (std::size_t d = 0; d != k.size(); ++d)
        position = position * in.shape[d] + u[d] + k[d];
      if (in.source[position] >= 0)
        fieldMacs.push_back({o, static_cast<std::size_t>(in.source[position]),
                             static_cast<std::size_t>(kernel.source[kp])});
    }
  }
  const std::size_t G = p.numConvGroups, Ci = p.inputChannelsPerConvGroup,
                    Co = p.outputChannelsPerConvGroup;
  const std::size_t inField = product(p.inputFieldShape), kField = product(p.kernelShape),
                    outField = out.source.size();
  for (std::size_t b = 0; b != p.batchSize; ++b)
    for (std::size_t g = 0; g != G; ++g)
      for (std::size_t co = 0; co != Co; ++co)
        for (std::size_t ci = 0; ci != Ci; ++ci)
          for (const FieldMac &m : fieldMacs)
            mac(((b * G + g) * Co + co) * outField + m.out,
                ((b * G + g) * Ci + ci) * inField + m.in,
                ((g * Co + co) * Ci + ci) * kField + m.kernel);
}

inline std::size_t inputElements(const Params &p) {
  return p.batchSize * p.numConvGroups * p.inputChannelsPerConvGroup * product(p.inputFieldShape);
}
inline std::size_t weightElements(const Params &p) {
  return p.numConvGroups * p.outputChannelsPerConvGroup * p.inputChannelsPerConvGroup *
         product(p.kernelShape);
}
inline std::size_t outputElements(const Params &p) {
  return p.batchSize * p.numConvGroups * p.outputChannelsPerConvGroup * product(outputField(p));
}

inline std::vector<double> forward(const Params &p, const std::vector<double> &in,
                                   const std::vector<double> &weights) {
  std::vector<double> out(outputElements(p), 0.0);
  forEachMac(p, [&](std::size_t o, std::size_t i, std::size_t k) { out[o] += in[i] * weights[k]; });
  return out;
}

inline std::vector<double> backwardData(const Params &p, const std::vector<double> &outGrad,
                                        const std::vector<double> &weights) {
  std::vector<double> inGrad(inputElements(p), 0.0);
  forEachMac(p, [&](std::size_t o, std::size_t i, std::size_t k) {
    inGrad[i] += outGrad[o] * weights[k];
  });
  return inGrad;
}

inline std::vector<double> weightDeltas(const Params &p, const std::vector<double> &outGrad,
                                        const std::vector<double> &in) {
  std::vector<double> dW(weightElements(p), 0.0);
  forEachMac(p, [&](std::size_t o, std::size_t i, std::size_t k) { dW[k] += outGrad[o] * in[i]; });
  return dW;
}

inline std::vector<double> biasDeltas(const Params &p, const std::vector<double> &outGrad) {
  const std::size_t channels = p.numConvGroups * p.outputChannelsPerConvGroup;
  const std::size_t field = product(outputField(p));
  std::vector<double> db(channels, 0.0);
  for (std::size_t b = 0; b != p.batchSize; ++b)
    for (std::size_t c = 0; c != channels; ++c)
      for (std::size_t x = 0; x != field; ++x)
        db[c] += outGrad[(b * channels + c) * field + x];
  return db;
}

// fwd's weights [G, Co, Ci, K...] -> [G, Ci, Co, K...] with every field dimension reversed: the
// weights of getGradientParams(fwd).
inline std::vector<double> transposeAndFlipWeights(const Params &fwd,
                                                   const std::vector<double> &weights) {
  const std::size_t G = fwd.numConvGroups, Co = fwd.outputChannelsPerConvGroup,
                    Ci = fwd.inputChannelsPerConvGroup, field = product(fwd.kernelShape);
  std::vector<double> r(weights.size());
  for (std::size_t g = 0; g != G; ++g)
    for (std::size_t co = 0; co != Co; ++co)
      for (std::size_t ci = 0; ci != Ci; ++ci)
        for (std::size_t k = 0; k != field; ++k) {
          const Shape c = unflatten(k, fwd.kernelShape);
          std::size_t reversed = 0;
          for (std::size_t d = 0; d != c.size(); ++d)
            reversed = reversed * fwd.kernelShape[d] + (fwd.kernelShape[d] - 1 - c[d]);
          r[((g * Ci + ci) * Co + co) * field + reversed] =
              weights[((g * Co + co) * Ci + ci) * field + k];
        }
  return r;
}

// fwd's activations [B, G*Ci, X...] -> [Ci, G*B, X...]: the input of getWeightUpdateParams(fwd).
inline std::vector<double> weightUpdateInput(const Params &fwd, const std::vector<double> &acts) {
  const std::size_t B = fwd.batchSize, G = fwd.numConvGroups, Ci = fwd.inputChannelsPerConvGroup,
                    field = product(fwd.inputFieldShape);
  std::vector<double> r(acts.size());
  for (std::size_t b = 0; b != B; ++b)
    for (std::size_t g = 0; g != G; ++g)
      for (std::size_t ci = 0; ci != Ci; ++ci)
        for (std::size_t x = 0; x != field; ++x)
          r[((ci * G + g) * B + b) * field + x] = acts[((b * G + g) * Ci + ci) * field + x];
  return r;
}

// The gradient of fwd's output [B, G*Co, Y...] -> [G, Co, B, Y...]: the weights of
// getWeightUpdateParams(fwd).
inline std::vector<double> weightUpdateWeights(const Params &fwd,
                                               const std::vector<double> &zDeltas) {
  const std::size_t B = fwd.batchSize, G = fwd.numConvGroups, Co = fwd.outputChannelsPerConvGroup,
                    field = product(outputField(fwd));
  std::vector<double> r(zDeltas.size());
  for (std::size_t b = 0; b != B; ++b)
    for (std::size_t g = 0; g != G; ++g)
      for (std::size_t co = 0; co != Co; ++co)
        for (std::size_t y = 0; y != field; ++y)
          r[((g * Co + co) * B + b) * field + y] = zDeltas[((b * G + g) * Co + co) * field + y];
  return r;
}

// The output of getWeightUpdateParams(fwd) [Ci, G*Co, K...] -> fwd's weight deltas
// [G, Co, Ci, K...].
inline std::vector<double> weightDeltasFromUpdate(const Params &fwd,
                                                  const std::vector<double> &out) {
  const std::size_t G = fwd.numConvGroups, Co = fwd.outputChannelsPerConvGroup,
                    Ci = fwd.inputChannelsPerConvGroup, field = product(fwd.kernelShape);
  std::vector<double> dW(out.size());
  for (std::size_t ci = 0; ci != Ci; ++ci)
    for (std::size_t g = 0; g != G; ++g)
      for (std::size_t co = 0; co != Co; ++co)
        for (std::size_t k = 0; k != field; ++k)
          dW[((g * Co + co) * Ci + ci) * field + k] = out[((ci * G + g) * Co + co) * field + k];
  return dW;
}

} // namespace convref
