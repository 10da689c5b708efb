// Codelets of cycleStamp and cycleCount (aspen/ops/CycleCount.hpp): the device's clock in cycles
// of the target's tile clock, as two 32-bit halves (low first), and the difference of two.
#include <aspen/Vertex.hpp>

#if !defined(__CUDACC_RTC__) && !defined(__CUDA_ARCH__)
#include <chrono>
#endif

namespace aspen::ops {

// out = {low, high} of now * cyclesPerNanosecond. The GPU reads its global timer (nanoseconds,
// the same on every SM); the CPU executor the host's steady clock.
class CycleStamp : public Vertex {
public:
  Output<Vector<unsigned>> out;
  float cyclesPerNanosecond; // the target's tile clock in GHz

  bool compute() {
    unsigned long long ns;
#if defined(__CUDACC_RTC__) || defined(__CUDA_ARCH__)
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
#else
    ns = static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now().time_since_epoch())
                                             .count());
#endif
    const unsigned long long cycles = static_cast<unsigned long long>(
        static_cast<double>(ns) * static_cast<double>(cyclesPerNanosecond));
    out[0] = static_cast<unsigned>(cycles);
    out[1] = static_cast<unsigned>(cycles >> 32);
    return true;
  }
};

// out = end - start, each a 64-bit count as {low, high}.
class CycleDifference : public Vertex {
public:
  Input<Vector<unsigned>> start;
  Input<Vector<unsigned>> end;
  Output<Vector<unsigned>> out;

  bool compute() {
    const unsigned long long s = (static_cast<unsigned long long>(start[1]) << 32) | start[0];
    const unsigned long long e = (static_cast<unsigned long long>(end[1]) << 32) | end[0];
    const unsigned long long d = e - s;
    out[0] = static_cast<unsigned>(d);
    out[1] = static_cast<unsigned>(d >> 32);
    return true;
  }
};

} // namespace aspen::ops
