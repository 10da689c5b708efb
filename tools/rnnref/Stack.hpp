// Stacks of recurrent layers for the double-precision models (docs/recurrent.md, "Stacks in one
// call"): L layers in D directions composed from one-layer models, with the counter-based
// dropout between layers written out again here. The drivers check lstm::lstmStackFwd and
// gru::gruStackFwd (and their backward) against it. Plain C++17, no Aspen dependency.
#pragma once

#include "Common.hpp"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rnnref {

// SplitMix64's step.
inline std::uint64_t splitMix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// v (layer `layer`'s output [T, B, D*W], row-major) with element i kept, times 1 / (1 - rate),
// when (mix(mix(seed ^ (layer + 1) * 0xD1B54A32D192ED03) + i) >> 11) * 2^-53 >= rate, and 0
// otherwise; the gradient of the dropped sequence is dropped the same way.
inline std::vector<double> dropout(const std::vector<double> &v, std::uint64_t seed,
                                   unsigned layer, double rate) {
  const std::uint64_t key = splitMix(seed ^ ((layer + 1ull) * 0xD1B54A32D192ED03ull));
  std::vector<double> out(v.size());
  for (std::size_t i = 0; i < v.size(); ++i)
    out[i] = double(splitMix(key + i) >> 11) * 0x1.0p-53 >= rate ? v[i] / (1.0 - rate) : 0.0;
  return out;
}

// The stack's shape: T steps, B rows, L layers, D directions (2: bidirectional; a reverse-only
// stack has D = 1 and reverseOnly), W the width of each direction's output; the lengths, and the
// dropout between layers (applied when training).
struct StackShape {
  std::size_t T = 1, B = 1, L = 1, D = 1, W = 1;
  bool reverseOnly = false;
  std::vector<unsigned> timeSteps;
  double dropout = 0.0;
  std::uint64_t seed = 0;
  bool training = false;

  bool reverse(std::size_t d) const { return d == 1 || reverseOnly; }
  bool drops(std::size_t l) const { return training && dropout > 0 && l + 1 < L; }
  // A direction's sequence in the order its steps run, and back.
  std::vector<double> runOrder(std::size_t d, const std::vector<double> &v) const {
    return reverse(d) ? reverseRowSteps(v, timeSteps, T, B) : v;
  }
};

// [T*B rows, D*W] from the directions' [rows, W], and direction d back.
inline std::vector<double> interleave(const std::vector<std::vector<double>> &dirs,
                                      std::size_t W) {
  const std::size_t D = dirs.size(), rows = dirs[0].size() / W;
  std::vector<double> out(rows * D * W);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t d = 0; d < D; ++d)
      for (std::size_t k = 0; k < W; ++k)
        out[(r * D + d) * W + k] = dirs[d][r * W + k];
  return out;
}
inline std::vector<double> directionOf(const std::vector<double> &v, std::size_t d,
                                       std::size_t D, std::size_t W) {
  const std::size_t rows = v.size() / (D * W);
  std::vector<double> out(rows * W);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t k = 0; k < W; ++k)
      out[r * W + k] = v[(r * D + d) * W + k];
  return out;
}

// The stack's forward from input x [T, B, I]: forward(i, l, xRun) runs layer l's direction
// i % D (entry i = l * D + d) on its input in run order and returns its output in run order
// [T, B, W]. Returns each layer's output [T, B, D*W] in the caller's order (before dropout);
// the stack's output is the last.
template <class Forward>
std::vector<std::vector<double>> stackForward(const StackShape &s, const std::vector<double> &x,
                                              Forward forward) {
  std::vector<std::vector<double>> outputs;
  std::vector<double> in = x;
  for (std::size_t l = 0; l < s.L; ++l) {
    std::vector<std::vector<double>> own;
    for (std::size_t d = 0; d < s.D; ++d)
      own.push_back(s.runOrder(d, forward(l * s.D + d, l, s.runOrder(d, in))));
    outputs.push_back(interleave(own, s.W));
    in = s.drops(l) ? dropout(outputs.back(), s.seed, unsigned(l), s.dropout) : outputs.back();
  }
  return outputs;
}

// The stack's backward from dy [T, B, D*W]: backward(i, l, dyRun) runs entry i's backward on
// the gradient of its output in run order and returns its input gradient in run order.
// Returns the stack's input gradient [T, B, I].
template <class Backward>
std::vector<double> stackBackward(const StackShape &s, const std::vector<double> &dy,
                                  Backward backward) {
  std::vector<double> grad = dy;
  for (std::size_t l = s.L; l-- > 0;) {
    if (s.drops(l))
      grad = dropout(grad, s.seed, unsigned(l), s.dropout);
    std::vector<double> dx;
    for (std::size_t d = 0; d < s.D; ++d) {
      const std::vector<double> part =
          s.runOrder(d, backward(l * s.D + d, l, s.runOrder(d, directionOf(grad, d, s.D, s.W))));
      if (dx.empty())
        dx.assign(part.size(), 0.0);
      for (std::size_t k = 0; k < part.size(); ++k)
        dx[k] += part[k];
    }
    grad = dx;
  }
  return grad;
}

} // namespace rnnref
