// When a control-flow scalar is true, and what integer a Switch control holds: one rule for
// every place that decides, the engine's interpreter (engine/Run.cpp) and the CUDA executor's
// control kernels (executors/cuda/CudaExecutorKernels.cpp, whose NVRTC source embeds this file,
// so it includes nothing and uses only what host C++ and device code share).
//
// `bits` holds the scalar's `bytes` bytes (1, 2, 4 or 8), little-endian, in its low bytes.
#ifndef ASPEN_EXECUTORS_CONTROL_RULES_HPP
#define ASPEN_EXECUTORS_CONTROL_RULES_HPP

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define ASPEN_CONTROL_RULE __host__ __device__ inline
#else
#define ASPEN_CONTROL_RULE inline
#endif

namespace aspen::detail {

// A predicate is true when non-zero; for floating-point types any value but +0 and -0 (the sign
// bit is ignored; NaN is true).
ASPEN_CONTROL_RULE bool predicateIsTrue(unsigned long long bits, unsigned bytes, bool isFloat) {
  if (isFloat)
    bits &= ~(1ull << (8 * bytes - 1));
  return bits != 0;
}

// A Switch control's value: its bits, sign-extended for signed types.
ASPEN_CONTROL_RULE long long controlValue(unsigned long long bits, unsigned bytes, bool isSigned) {
  if (isSigned && bytes < 8 && ((bits >> (8 * bytes - 1)) & 1))
    bits |= ~0ull << (8 * bytes);
  return static_cast<long long>(bits);
}

} // namespace aspen::detail

#undef ASPEN_CONTROL_RULE

#endif // ASPEN_EXECUTORS_CONTROL_RULES_HPP
