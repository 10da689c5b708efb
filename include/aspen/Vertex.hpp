// Authoring header for codelets: vertex base classes and field types.
//
// A codelet is a class deriving from Vertex (`bool compute()` or `void compute()`),
// MultiVertex (`compute(unsigned workerId)` on numWorkers() workers) or BlockVertex
// (`compute(aspen::Block &block)` on every thread of a thread block at once: see below). Its data members are its
// fields, discovered from the source by name (no registration macro):
//   Input<T> / Output<T> / InOut<T>                 scalar edge: *in, *out = v, *out += v
//   Input<Vector<T>> / Output<...> / InOut<...>      vector edge: size(), [i], range-for, ->size()
//   Vector<Input<Vector<T>>> (and Output, InOut)     2-D edge: size(), [i] is a vector edge
//   Input<VectorList<T, L>> / InOut<VectorList<...>> 2-D edge, the same as above
//   T, Vector<T>                                     plain vertex state set by the host
// Every field holds only pointers and sizes, so it is bound from an aspen::detail::FieldDesc
// (VertexAbi.hpp) without running any constructor of the vertex class. Memory layouts and
// alignments of Poplar's Vector/VectorList are accepted and ignored.
//
// This header is compiled by NVRTC as well: no standard library, and every function is ASPEN_HD.
#pragma once

#include <aspen/Export.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/detail/VertexAbi.hpp>
#include <aspen/detail/VertexTypeCodes.hpp>
#include <aspen/detail/WorkerShare.hpp>

// Poplar's markers for assembly implementations and stack sizes mean nothing here.
#ifndef IS_EXTERNAL_CODELET
#define IS_EXTERNAL_CODELET(...)
#endif
#ifndef DEF_STACK_USAGE
#define DEF_STACK_USAGE(...)
#endif

namespace aspen {

enum class VectorLayout {
  ONE_PTR,
  SPAN,
  SHORT_SPAN,
  COMPACT_PTR,
  SCALED_PTR32,
  SCALED_PTR64,
  SCALED_PTR128
};
enum class VectorListLayout { DELTAN, DELTANELEMENTS, COMPACT_DELTAN, ONE_PTR };

namespace detail {

typedef decltype(sizeof(0)) SizeType;

#if !defined(__CUDACC_RTC__)
// The worker count of the MultiVertex running on this thread, set by the host entry point.
inline thread_local unsigned currentNumWorkers = 1;
#endif

// A contiguous run of elements; the storage behind vector edges, VectorList rows and plain
// Vector members.
template <class T> class Span {
public:
  Span() = default;
  ASPEN_HD explicit Span(const FieldDesc &f)
      : data_(static_cast<T *>(f.data)), size_(static_cast<SizeType>(f.size)) {}
  ASPEN_HD SizeType size() const { return size_; }
  ASPEN_HD bool empty() const { return size_ == 0; }
  ASPEN_HD T *data() const { return data_; }
  ASPEN_HD T &operator[](SizeType i) const { return data_[i]; }
  ASPEN_HD T *begin() const { return data_; }
  ASPEN_HD T *end() const { return data_ + size_; }
  ASPEN_HD const Span *operator->() const { return this; }

private:
  T *data_;
  SizeType size_;
};

// A list of edges (FieldDescs); element i is an Edge bound to the i-th descriptor.
template <class Edge> class EdgeList {
public:
  class Iterator {
  public:
    ASPEN_HD explicit Iterator(const FieldDesc *p) : p_(p) {}
    ASPEN_HD Edge operator*() const { return Edge(*p_); }
    ASPEN_HD Iterator &operator++() {
      ++p_;
      return *this;
    }
    ASPEN_HD bool operator!=(const Iterator &o) const { return p_ != o.p_; }
    ASPEN_HD bool operator==(const Iterator &o) const { return p_ == o.p_; }

  private:
    const FieldDesc *p_;
  };

  EdgeList() = default;
  ASPEN_HD explicit EdgeList(const FieldDesc &f)
      : edges_(static_cast<const FieldDesc *>(f.data)), size_(static_cast<SizeType>(f.size)) {}
  ASPEN_HD SizeType size() const { return size_; }
  ASPEN_HD bool empty() const { return size_ == 0; }
  ASPEN_HD Edge operator[](SizeType i) const { return Edge(edges_[i]); }
  ASPEN_HD Iterator begin() const { return Iterator(edges_); }
  ASPEN_HD Iterator end() const { return Iterator(edges_ + size_); }
  ASPEN_HD const EdgeList *operator->() const { return this; }

private:
  const FieldDesc *edges_;
  SizeType size_;
};

// A single element edge.
template <class T> class ScalarEdge {
public:
  ScalarEdge() = default;
  ASPEN_HD explicit ScalarEdge(const FieldDesc &f) : ptr_(static_cast<T *>(f.data)) {}
  ASPEN_HD T &operator*() const { return *ptr_; }
  ASPEN_HD T *operator->() const { return ptr_; }
  ASPEN_HD T *data() const { return ptr_; }

private:
  T *ptr_;
};

} // namespace detail

class Vertex {};

class MultiVertex {
public:
  ASPEN_HD static unsigned numWorkers() {
#if defined(__CUDA_ARCH__)
    return blockDim.x;
#else
    return detail::currentNumWorkers;
#endif
  }
};

// Device-scope memory operations, for blocks that hand each other data inside one launch (a
// co-resident launch, BlockCodelets.hpp). storeRelease(p, v) writes v so that whatever this
// thread wrote before it is visible to a thread that reads v with loadAcquire(p). On a GPU they
// are ld.acquire.gpu / st.release.gpu (and atom.acq_rel.gpu); on the host, GCC's __atomic
// builtins, so blocks on different host threads do not race in C++'s sense. Types of 2, 4 and
// 8 bytes (half, float, int, unsigned, ...). Plain or volatile loads in a spin loop are not
// enough: on the CPU executor a waiting block must yield (Block::waitUntil), and only these
// operations order memory between host threads.
namespace detail {

#if defined(__CUDA_ARCH__)
template <class T, class U> __device__ T gpuBitCast(U u) {
  static_assert(sizeof(T) == sizeof(U), "gpuBitCast: sizes differ");
  T t;
  *reinterpret_cast<U *>(&t) = u;
  return t;
}
template <class U, class T> __device__ U gpuBits(const T &t) {
  static_assert(sizeof(T) == sizeof(U), "gpuBits: sizes differ");
  return *reinterpret_cast<const U *>(&t);
}
__device__ inline unsigned long long gpuGlobalTimer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

// Adds v to *p and returns the old value, ordered both ways (acquire and release).
ASPEN_HD inline unsigned fetchAddAcqRel(unsigned *p, unsigned v) {
#if defined(__CUDA_ARCH__)
  unsigned old;
  asm volatile("atom.acq_rel.gpu.add.u32 %0, [%1], %2;" : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
#else
  return __atomic_fetch_add(p, v, __ATOMIC_ACQ_REL);
#endif
}

} // namespace detail

template <class T> ASPEN_HD T loadAcquire(const T *p) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "aspen::loadAcquire takes a type of 2, 4 or 8 bytes");
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 2) {
    unsigned short u;
    asm volatile("ld.acquire.gpu.b16 %0, [%1];" : "=h"(u) : "l"(p) : "memory");
    return detail::gpuBitCast<T>(u);
  } else if constexpr (sizeof(T) == 4) {
    unsigned u;
    asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(u) : "l"(p) : "memory");
    return detail::gpuBitCast<T>(u);
  } else {
    unsigned long long u;
    asm volatile("ld.acquire.gpu.b64 %0, [%1];" : "=l"(u) : "l"(p) : "memory");
    return detail::gpuBitCast<T>(u);
  }
#else
  T value;
  __atomic_load(const_cast<T *>(p), &value, __ATOMIC_ACQUIRE);
  return value;
#endif
}

template <class T> ASPEN_HD void storeRelease(T *p, T v) {
  static_assert(sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8,
                "aspen::storeRelease takes a type of 2, 4 or 8 bytes");
#if defined(__CUDA_ARCH__)
  if constexpr (sizeof(T) == 2)
    asm volatile("st.release.gpu.b16 [%0], %1;" ::"l"(p), "h"(detail::gpuBits<unsigned short>(v))
                 : "memory");
  else if constexpr (sizeof(T) == 4)
    asm volatile("st.release.gpu.b32 [%0], %1;" ::"l"(p), "r"(detail::gpuBits<unsigned>(v))
                 : "memory");
  else
    asm volatile("st.release.gpu.b64 [%0], %1;" ::"l"(p),
                 "l"(detail::gpuBits<unsigned long long>(v))
                 : "memory");
#else
  __atomic_store(p, &v, __ATOMIC_RELEASE);
#endif
}

// The write-once sentinel protocol (docs/architecture.md "Co-resident launches"): a buffer
// that blocks exchange through is filled with -0.0 (unpublished<T>()) before the launch; a
// producer writes each element once with publish(), which stores -0.0 as +0.0 after rounding
// to T (a tiny negative float becomes -0.0 in half), so a published value never looks
// unpublished; a consumer waits until !isUnpublished(loadAcquire(p)). The value is its own
// flag: no flag words, no reset, nothing between data and flag. float and half.
template <class T> ASPEN_HD T unpublished() { return T(-0.0f); }
ASPEN_HD inline bool isUnpublished(float v) { return detail::floatBits(v) == 0x80000000u; }
ASPEN_HD inline bool isUnpublished(half v) { return v.bits() == 0x8000u; }
template <class T> ASPEN_HD void publish(T *p, float v) {
  T stored = T(v);
  if (isUnpublished(stored))
    stored = T(0.0f);
  storeRelease(p, stored);
}

// A block codelet: the home for hand-written kernels. compute(aspen::Block &block) runs on every
// thread of every block of a launch (program::Launch, BlockCodelets.hpp) at once; the threads
// of a block share block.shared<T>() (block.sharedBytes() bytes, uninitialised) and wait for
// each other at block.sync(), which every thread of the block must reach (CUDA's
// __syncthreads rules). On a GPU it is one kernel (blockDim = threads, gridDim = blocks, dynamic
// shared memory); on the CPU executor the threads of a block run as fibers, one after another
// between barriers, so results agree wherever the codelet has no data race.
//
// Blocks that wait for each other (a co-resident launch, LaunchShape::coResident):
//   block.waitUntil(pred)  this thread waits until pred() is true; pred reads what other blocks
//                          publish, through loadAcquire. On a GPU it polls with a growing
//                          __nanosleep back-off; on the CPU executor the fiber yields to the
//                          others each time pred() is false. Returns true once pred() held, or
//                          false when the wait gave up (on a GPU, after the launch's wait
//                          timeout, or because another wait of the launch gave up): the launch
//                          then fails with an error naming the block and where it waited, so
//                          the codelet should return at once.
//   block.gridSync()       a barrier over every thread of every block (all of them must call it,
//                          the same number of times); memory written before it is visible to
//                          every thread after it. Same return value as waitUntil.
// A codelet whose blocks wait for each other declares `static constexpr bool coResident = true;`
// and then may only run in co-resident launches. It may declare
// `static constexpr unsigned maxThreadsPerBlock = N;`: its GPU kernel is then built for blocks
// of at most N threads (__launch_bounds__(N, 1), so up to 255 registers a thread when N <= 256),
// and larger launches are refused.
class BlockVertex {};

class Block {
public:
#if defined(__CUDA_ARCH__)
  __device__ Block(void *shared, unsigned long long sharedBytes, detail::GridState *grid)
      : shared_(shared), sharedBytes_(sharedBytes), grid_(grid) {}
  __device__ unsigned threadId() const { return threadIdx.x; }
  __device__ unsigned numThreads() const { return blockDim.x; }
  __device__ unsigned blockId() const { return blockIdx.x; }
  __device__ unsigned numBlocks() const { return gridDim.x; }
  __device__ void sync() const { __syncthreads(); }
  template <class T> __device__ T *shared() const { return static_cast<T *>(shared_); }
  __device__ unsigned long long sharedBytes() const { return sharedBytes_; }
#else
  explicit Block(const detail::BlockState *state) : s_(state) {}
  unsigned threadId() const { return s_->threadId; }
  unsigned numThreads() const { return s_->numThreads; }
  unsigned blockId() const { return s_->blockId; }
  unsigned numBlocks() const { return s_->numBlocks; }
  void sync() const { s_->barrier(s_->runner); }
  template <class T> T *shared() const { return static_cast<T *>(s_->shared); }
  unsigned long long sharedBytes() const { return s_->sharedBytes; }
#endif

  template <class Predicate> ASPEN_HD bool waitUntil(Predicate predicate) const {
    return wait(predicate, detail::kWaitAtWaitUntil);
  }

  // A sense-counting barrier over the blocks' first threads, between two block barriers.
  ASPEN_HD bool gridSync() const {
    sync();
    detail::GridState *g = grid();
    if (threadId() == 0) {
      const unsigned generation = loadAcquire(&g->generation);
      if (detail::fetchAddAcqRel(&g->arrived, 1u) == numBlocks() - 1) {
        storeRelease(&g->arrived, 0u); // every other block waits for the generation below
        storeRelease(&g->generation, generation + 1);
      } else {
        auto released = [&] { return loadAcquire(&g->generation) != generation; };
        wait(released, detail::kWaitAtGridSync);
      }
    }
    sync();
    return loadAcquire(&g->gaveUp) == 0;
  }

  // A warp's tensor-core product D = A B + D of one 16x16 (row-major) half tile A and one 16x8
  // (column-major) half tile B into a 16x8 float tile D, in mma.sync m16n8k16's fragment layout
  // (PTX ISA, "Matrix fragments for mma.m16n8k16"): lane l = 4 g + q holds a[0] = A(g, 2q..2q+1),
  // a[1] = A(g + 8, 2q..), a[2] = A(g, 2q + 8..), a[3] = A(g + 8, 2q + 8..), b[0] = B(2q..2q+1, g),
  // b[1] = B(2q + 8..2q + 9, g), two halves a register, the lower column or row in the low 16
  // bits; and d[0..1] = D(g, 2q..2q+1), d[2..3] = D(g + 8, 2q..). Every thread of the block's
  // full warps calls it together (threadsPerBlock a multiple of 32); `active` false (the same
  // for a whole warp) makes the call do nothing. On a GPU it is mma.sync (sm_80 and later); on
  // the host the warp's lanes hand each other their registers through the runner's scratch, so
  // it is a block barrier there: every thread of the block calls it the same number of times.
  // The host sums the 16 products (exact in float) in k order, then adds them to d; the GPU's
  // order inside the instruction is the hardware's, so results agree within float rounding.
  ASPEN_HD void mmaF16(bool active, const unsigned a[4], const unsigned b[2], float d[4]) const {
#if defined(__CUDA_ARCH__)
#if __CUDA_ARCH__ >= 800
    if (active)
      asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                   "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                   : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                   : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
    __trap(); // the builders take the tensor variant on sm_80 and later only
#endif
#else
    unsigned *mine = static_cast<unsigned *>(s_->warpScratch) + 8ull * threadId();
    for (unsigned i = 0; i < 4; ++i)
      mine[i] = a[i];
    mine[4] = b[0];
    mine[5] = b[1];
    sync();
    if (active) {
      const unsigned first = threadId() - threadId() % 32;
      const unsigned *warp = static_cast<const unsigned *>(s_->warpScratch) + 8ull * first;
      // Word `index` of lane `lane`'s registers; a lane past the block's last thread (a warp
      // the block does not fill, which a GPU does not allow) holds zeros here.
      auto word = [&](unsigned lane, unsigned index) {
        return first + lane < numThreads() ? warp[8 * lane + index] : 0u;
      };
      // Element (row, k) of A and (k, col) of B, from the lane holding it.
      auto elementA = [&](unsigned row, unsigned k) {
        const unsigned w = word((row % 8) * 4 + (k % 8) / 2, (row / 8) + 2 * (k / 8));
        return detail::halfBitsToFloat((unsigned short)(k % 2 ? w >> 16 : w & 0xffffu));
      };
      auto elementB = [&](unsigned k, unsigned col) {
        const unsigned w = word(col * 4 + (k % 8) / 2, 4 + k / 8);
        return detail::halfBitsToFloat((unsigned short)(k % 2 ? w >> 16 : w & 0xffffu));
      };
      const unsigned lane = threadId() % 32, g = lane / 4, q = lane % 4;
      for (unsigned i = 0; i < 4; ++i) {
        const unsigned row = g + 8 * (i / 2), col = 2 * q + i % 2;
        float sum = 0.0f;
        for (unsigned k = 0; k < 16; ++k)
          sum += elementA(row, k) * elementB(k, col);
        d[i] += sum;
      }
    }
    sync(); // every lane has read the scratch before the next call overwrites it
#endif
  }

private:
#if defined(__CUDA_ARCH__)
  __device__ detail::GridState *grid() const { return grid_; }

  // Polls with a back-off of 32 ns doubling to 1 us; gives up after the launch's timeout, or at
  // once when another wait of the launch gave up, recording the first to give up.
  template <class Predicate> __device__ bool wait(Predicate &predicate, unsigned where) const {
    if (predicate())
      return true;
    const unsigned long long start = detail::gpuGlobalTimer();
    unsigned sleep = 32;
    while (!predicate()) {
      if (loadAcquire(&grid_->gaveUp) != 0)
        return false;
      if (detail::gpuGlobalTimer() - start > grid_->timeoutNs) {
        atomicCAS(&grid_->gaveUp, 0u, (where << 28) | (blockIdx.x + 1));
        return false;
      }
      __nanosleep(sleep);
      if (sleep < 1024)
        sleep *= 2;
    }
    return true;
  }

  void *shared_;
  unsigned long long sharedBytes_;
  detail::GridState *grid_;
#else
  detail::GridState *grid() const { return s_->grid; }

  // Yields to the launch's other threads until predicate() holds; the runner reports a launch
  // where every thread waits and nothing can change any more (BlockRunner.cpp).
  template <class Predicate> bool wait(Predicate &predicate, unsigned where) const {
    for (int fresh = 1; !predicate(); fresh = 0)
      s_->poll(s_->runner, fresh, where);
    return true;
  }

  const detail::BlockState *s_;
#endif
};

// Poplar's older supervisor vertices run compute() once, like a Vertex.
using SupervisorVertex = Vertex;

// Plain (non-edge) vector member: vertex state written by the host, read by the codelet.
template <class T, VectorLayout L = VectorLayout::SPAN, unsigned Align = alignof(T),
          bool Interleaved = false>
class Vector : public detail::Span<const T> {
public:
  using detail::Span<const T>::Span;
  Vector() = default;
};

// Ragged 2-D data: the type argument of Input/InOut, never a field by itself.
template <class T, VectorListLayout L = VectorListLayout::DELTANELEMENTS,
          unsigned Align = alignof(T)>
class VectorList {};

// Scalar edges.
template <class T> class Input : public detail::ScalarEdge<const T> {
public:
  using detail::ScalarEdge<const T>::ScalarEdge;
  Input() = default;
};
template <class T> class Output : public detail::ScalarEdge<T> {
public:
  using detail::ScalarEdge<T>::ScalarEdge;
  Output() = default;
};
template <class T> class InOut : public detail::ScalarEdge<T> {
public:
  using detail::ScalarEdge<T>::ScalarEdge;
  InOut() = default;
};

// Vector edges.
template <class T, VectorLayout L, unsigned A, bool I>
class Input<Vector<T, L, A, I>> : public detail::Span<const T> {
public:
  using detail::Span<const T>::Span;
  Input() = default;
};
template <class T, VectorLayout L, unsigned A, bool I>
class Output<Vector<T, L, A, I>> : public detail::Span<T> {
public:
  using detail::Span<T>::Span;
  Output() = default;
};
template <class T, VectorLayout L, unsigned A, bool I>
class InOut<Vector<T, L, A, I>> : public detail::Span<T> {
public:
  using detail::Span<T>::Span;
  InOut() = default;
};

// VectorList edges: element i is a row (a view with size(), [j] and range-for).
template <class T, VectorListLayout L, unsigned A>
class Input<VectorList<T, L, A>> : public detail::EdgeList<detail::Span<const T>> {
public:
  using detail::EdgeList<detail::Span<const T>>::EdgeList;
  Input() = default;
};
template <class T, VectorListLayout L, unsigned A>
class InOut<VectorList<T, L, A>> : public detail::EdgeList<detail::Span<T>> {
public:
  using detail::EdgeList<detail::Span<T>>::EdgeList;
  InOut() = default;
};
template <class T, VectorListLayout L, unsigned A>
class Output<VectorList<T, L, A>> : public detail::EdgeList<detail::Span<T>> {
public:
  using detail::EdgeList<detail::Span<T>>::EdgeList;
  Output() = default;
};

// Vectors of edges: Vector<Input<Vector<T>>> and friends; element i is the i-th edge.
template <class E, VectorLayout L, unsigned A, bool I>
class Vector<Input<E>, L, A, I> : public detail::EdgeList<Input<E>> {
public:
  using detail::EdgeList<Input<E>>::EdgeList;
  Vector() = default;
};
template <class E, VectorLayout L, unsigned A, bool I>
class Vector<Output<E>, L, A, I> : public detail::EdgeList<Output<E>> {
public:
  using detail::EdgeList<Output<E>>::EdgeList;
  Vector() = default;
};
template <class E, VectorLayout L, unsigned A, bool I>
class Vector<InOut<E>, L, A, I> : public detail::EdgeList<InOut<E>> {
public:
  using detail::EdgeList<InOut<E>>::EdgeList;
  Vector() = default;
};

} // namespace aspen
