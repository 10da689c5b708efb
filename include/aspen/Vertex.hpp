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

// A block codelet: the home for hand-written kernels. compute(aspen::Block &block) runs on every
// thread of every block of a launch (program::Launch, BlockCodelets.hpp) at once; the threads
// of a block share block.shared<T>() (block.sharedBytes() bytes, uninitialised) and wait for
// each other at block.sync(), which every thread of the block must reach (CUDA's
// __syncthreads rules). On a GPU it is one kernel (blockDim = threads, gridDim = blocks, dynamic
// shared memory); on the CPU executor the threads of a block run as fibers, one after another
// between barriers, so results agree wherever the codelet has no data race.
class BlockVertex {};

class Block {
public:
#if defined(__CUDA_ARCH__)
  __device__ Block(void *shared, unsigned long long sharedBytes)
      : shared_(shared), sharedBytes_(sharedBytes) {}
  __device__ unsigned threadId() const { return threadIdx.x; }
  __device__ unsigned numThreads() const { return blockDim.x; }
  __device__ unsigned blockId() const { return blockIdx.x; }
  __device__ unsigned numBlocks() const { return gridDim.x; }
  __device__ void sync() const { __syncthreads(); }
  template <class T> __device__ T *shared() const { return static_cast<T *>(shared_); }
  __device__ unsigned long long sharedBytes() const { return sharedBytes_; }

private:
  void *shared_;
  unsigned long long sharedBytes_;
#else
  explicit Block(const detail::BlockState *state) : s_(state) {}
  unsigned threadId() const { return s_->threadId; }
  unsigned numThreads() const { return s_->numThreads; }
  unsigned blockId() const { return s_->blockId; }
  unsigned numBlocks() const { return s_->numBlocks; }
  void sync() const { s_->barrier(s_->runner); }
  template <class T> T *shared() const { return static_cast<T *>(s_->shared); }
  unsigned long long sharedBytes() const { return s_->sharedBytes; }

private:
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
