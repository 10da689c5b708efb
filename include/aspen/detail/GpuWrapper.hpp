// What the generated GPU translation unit of a codelet library uses (device code only): binding a
// vertex member from a FieldDesc holding device addresses, and calling compute(). The device
// counterpart of VertexWrapper.hpp, with the same rules: the vertex lives in zeroed raw storage
// and every member (const ones too) is initialised through its address, so vertex classes need
// not be default-constructible. Plain members are copied from the descriptor's data, as on the
// host. No standard library here: this header is compiled by NVRTC.
#pragma once

#include <aspen/Vertex.hpp>
#include <aspen/detail/GpuAbi.hpp>

namespace aspen {
namespace detail {

template <class T> struct GpuRemoveCv { typedef T type; };
template <class T> struct GpuRemoveCv<const T> { typedef T type; };
template <class T> struct GpuRemoveCv<volatile T> { typedef T type; };
template <class T> struct GpuRemoveCv<const volatile T> { typedef T type; };

template <class T> struct GpuIsVoid { static constexpr bool value = false; };
template <> struct GpuIsVoid<void> { static constexpr bool value = true; };

// NVRTC has no memcpy builtin; members are small, so a byte loop is what it would do anyway.
__device__ inline void gpuCopyBytes(void *to, const void *from, unsigned long long n) {
  unsigned char *d = static_cast<unsigned char *>(to);
  const unsigned char *s = static_cast<const unsigned char *>(from);
  for (unsigned long long i = 0; i < n; ++i)
    d[i] = s[i];
}

// A plain scalar member: the value at data, when one was set.
template <class M> struct GpuFieldBinder {
  __device__ static void bind(void *member, const FieldDesc &f) {
    if (f.data != nullptr && f.size != 0)
      gpuCopyBytes(member, f.data, sizeof(M));
  }
};

// A plain array member: up to N values.
template <class T, SizeType N> struct GpuFieldBinder<T[N]> {
  __device__ static void bind(void *member, const FieldDesc &f) {
    const unsigned long long n = f.size < N ? f.size : N;
    if (f.data != nullptr)
      gpuCopyBytes(member, f.data, n * sizeof(T));
  }
};

// Edges and plain Vector members hold a pointer and a size made from the descriptor.
template <class Field> struct GpuConstructedField {
  __device__ static void bind(void *member, const FieldDesc &f) {
    const Field field(f);
    gpuCopyBytes(member, &field, sizeof(Field));
  }
};
template <class T> struct GpuFieldBinder<Input<T>> : GpuConstructedField<Input<T>> {};
template <class T> struct GpuFieldBinder<Output<T>> : GpuConstructedField<Output<T>> {};
template <class T> struct GpuFieldBinder<InOut<T>> : GpuConstructedField<InOut<T>> {};
template <class T, VectorLayout L, unsigned A, bool I>
struct GpuFieldBinder<Vector<T, L, A, I>> : GpuConstructedField<Vector<T, L, A, I>> {};

// Initialises `member` (possibly const, inside raw storage) from its descriptor.
template <class Member> __device__ void gpuBindField(Member &member, const FieldDesc &f) {
  typedef typename GpuRemoveCv<Member>::type M;
  GpuFieldBinder<M>::bind(const_cast<M *>(&member), f);
}

// Runs compute() in whichever form the vertex declares it; 1 = success, 0 = returned false.
template <class V> __device__ int gpuRunCompute(V &v, unsigned workerId) {
  if constexpr (requires { v.compute(workerId); }) {
    if constexpr (GpuIsVoid<decltype(v.compute(workerId))>::value) {
      v.compute(workerId);
      return 1;
    } else {
      return v.compute(workerId) ? 1 : 0;
    }
  } else if constexpr (GpuIsVoid<decltype(v.compute())>::value) {
    v.compute();
    return 1;
  } else {
    return v.compute() ? 1 : 0;
  }
}

// Runs a block codelet's compute(block) on this thread; 1 = success, 0 = returned false.
template <class V> __device__ int gpuRunBlockCompute(V &v, const Block &block) {
  Block b = block;
  if constexpr (GpuIsVoid<decltype(v.compute(b))>::value) {
    v.compute(b);
    return 1;
  } else {
    return v.compute(b) ? 1 : 0;
  }
}

// Zeroed storage with the size and alignment of V, viewed as a V whose members are then bound.
template <class V> struct GpuVertexStorage {
  alignas(V) unsigned char bytes[sizeof(V)] = {};
  __device__ V &vertex() { return *reinterpret_cast<V *>(bytes); }
};

// Records a failing vertex of a launch so that the lowest one is reported, as on the CPU, in
// whatever order blocks and threads run: the word holds ~vertex (0 = none), so the highest word
// is the lowest vertex.
__device__ inline void gpuReportFailure(unsigned *failedVertex, unsigned vertex) {
  atomicMax(failedVertex, ~vertex);
}

// The lanes of this thread's warp that exist: all 32, except in a block's last, partial warp.
__device__ inline unsigned gpuWarpLanes() {
  const unsigned inWarp = blockDim.x - (threadIdx.x & ~31u);
  return inWarp >= 32 ? 0xffffffffu : (1u << inWarp) - 1u;
}

} // namespace detail
} // namespace aspen
