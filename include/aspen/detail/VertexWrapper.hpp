// What the generated host wrapper of a codelet file uses (host only, never NVRTC): the metadata
// records a compiled codelet library exports, the field traits that fill them from the declared
// type of each member, binding a member from a FieldDesc, and calling compute().
//
// The vertex object lives in raw, zeroed storage and each member is initialised in place through
// its address, so vertex classes need not be default-constructible (Poplar classes declare `V();`
// without defining it) and const members are set like any other.
#pragma once

#include <aspen/Vertex.hpp>

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>

namespace aspen::detail {

inline constexpr unsigned kCodeletFormatVersion = 4; // 3: block codelets; 4: co-residency

struct CodeletFieldRecord {
  const char *name;
  unsigned char direction; // FieldDirectionCode
  unsigned char shape;     // FieldShapeCode
  unsigned char typeCode;  // TypeId value or kOtherTypeCode
  unsigned elementBytes;
};

struct CodeletVertexRecord {
  const char *name;        // normalised vertex name, e.g. "ns::V<float,true>"
  const char *entrySymbol; // the extern "C" VertexEntry
  const char *scope;       // the namespace where the generated code names the class (the GPU
                           // wrapper's entries live there too), e.g. "ns" or ""
  unsigned char isMultiVertex;
  unsigned char isBlockVertex; // then blockEntrySymbol is its entry, a BlockEntry
  const char *blockEntrySymbol;
  unsigned numFields;
  const CodeletFieldRecord *fields;
  unsigned char coResident;    // a block codelet declaring `static constexpr bool coResident`
  unsigned maxThreadsPerBlock; // its `static constexpr unsigned maxThreadsPerBlock`, or 0
};

struct CodeletLibraryRecord {
  unsigned formatVersion;
  const char *sourceName;
  const char *source;
  const char *contentHash;
  const char *compileFlags; // the user's extra flags (the GPU compile takes its -I/-D/-U)
  unsigned numVertices;
  const CodeletVertexRecord *vertices;
};

// The one symbol a compiled codelet library exports besides its entry points.
inline constexpr const char *kCodeletLibrarySymbol = "aspen_codelet_library";
typedef const CodeletLibraryRecord *(*CodeletLibraryFunction)();

// Direction, shape and element type of a member, from its declared type.
template <class M> struct FieldTraits { // plain scalar member
  static constexpr unsigned char direction = kFieldPlain, shape = kFieldScalar;
  using Element = M;
  static void bind(void *member, const FieldDesc &f) {
    if (f.data != nullptr && f.size != 0)
      std::memcpy(member, f.data, sizeof(M));
  }
};
template <class T, std::size_t N> struct FieldTraits<T[N]> { // plain array member
  static constexpr unsigned char direction = kFieldPlain, shape = kFieldVector;
  using Element = std::remove_cv_t<T>;
  static void bind(void *member, const FieldDesc &f) {
    const unsigned long long n = f.size < N ? f.size : N;
    if (f.data != nullptr)
      std::memcpy(member, f.data, n * sizeof(T));
  }
};

template <class Field, unsigned char Direction, unsigned char Shape, class T>
struct BoundFieldTraits {
  static constexpr unsigned char direction = Direction, shape = Shape;
  using Element = std::remove_cv_t<T>;
  static void bind(void *member, const FieldDesc &f) { ::new (member) Field(f); }
};

template <class T>
struct FieldTraits<Input<T>> : BoundFieldTraits<Input<T>, kFieldInput, kFieldScalar, T> {};
template <class T>
struct FieldTraits<Output<T>> : BoundFieldTraits<Output<T>, kFieldOutput, kFieldScalar, T> {};
template <class T>
struct FieldTraits<InOut<T>> : BoundFieldTraits<InOut<T>, kFieldInOut, kFieldScalar, T> {};

template <class T, VectorLayout L, unsigned A, bool I>
struct FieldTraits<Vector<T, L, A, I>>
    : BoundFieldTraits<Vector<T, L, A, I>, kFieldPlain, kFieldVector, T> {};

#define ASPEN_EDGE_FIELD_TRAITS(Edge, direction)                                                   \
  template <class T, VectorLayout L, unsigned A, bool I>                                           \
  struct FieldTraits<Edge<Vector<T, L, A, I>>>                                                     \
      : BoundFieldTraits<Edge<Vector<T, L, A, I>>, direction, kFieldVector, T> {};                 \
  template <class T, VectorListLayout L, unsigned A>                                               \
  struct FieldTraits<Edge<VectorList<T, L, A>>>                                                    \
      : BoundFieldTraits<Edge<VectorList<T, L, A>>, direction, kFieldVectorOfVectors, T> {};       \
  template <class E, VectorLayout L, unsigned A, bool I>                                           \
  struct FieldTraits<Vector<Edge<E>, L, A, I>>                                                     \
      : BoundFieldTraits<Vector<Edge<E>, L, A, I>, direction, kFieldVectorOfVectors,               \
                         typename FieldTraits<Edge<E>>::Element> {};
ASPEN_EDGE_FIELD_TRAITS(Input, kFieldInput)
ASPEN_EDGE_FIELD_TRAITS(Output, kFieldOutput)
ASPEN_EDGE_FIELD_TRAITS(InOut, kFieldInOut)
#undef ASPEN_EDGE_FIELD_TRAITS

template <class Member> constexpr CodeletFieldRecord fieldRecord(const char *name) {
  using Traits = FieldTraits<std::remove_cv_t<Member>>;
  using Element = typename Traits::Element;
  return {name, Traits::direction, Traits::shape, ElementTypeCode<Element>::value,
          static_cast<unsigned>(sizeof(Element))};
}

// Initialises `member` (possibly const, inside raw storage) from its descriptor.
template <class Member> void bindField(Member &member, const FieldDesc &f) {
  using M = std::remove_cv_t<Member>;
  FieldTraits<M>::bind(const_cast<M *>(&member), f);
}

template <class V> constexpr unsigned char isBlockVertex() {
  return std::is_base_of_v<BlockVertex, V> ? 1 : 0;
}

// A block codelet's declarations (Vertex.hpp): `static constexpr bool coResident` and
// `static constexpr unsigned maxThreadsPerBlock`.
template <class V> constexpr unsigned char declaresCoResident() {
  if constexpr (requires { V::coResident; })
    return V::coResident ? 1 : 0;
  else
    return 0;
}
template <class V> constexpr unsigned declaredMaxThreadsPerBlock() {
  if constexpr (requires { V::maxThreadsPerBlock; }) {
    static_assert(V::maxThreadsPerBlock >= 1 && V::maxThreadsPerBlock <= 1024,
                  "maxThreadsPerBlock must be between 1 and 1024");
    return V::maxThreadsPerBlock;
  } else {
    return 0;
  }
}

// Runs compute() in whichever form the vertex declares it; 1 = success, 0 = returned false.
// A block codelet has no vertex entry (0: the executors never call it).
template <class V> int runCompute(V &v, unsigned workerId, unsigned numWorkers) {
  currentNumWorkers = numWorkers;
  if constexpr (isBlockVertex<V>()) {
    return 0;
  } else if constexpr (requires { v.compute(workerId); }) {
    if constexpr (std::is_void_v<decltype(v.compute(workerId))>) {
      v.compute(workerId);
      return 1;
    } else {
      return v.compute(workerId) ? 1 : 0;
    }
  } else if constexpr (std::is_void_v<decltype(v.compute())>) {
    v.compute();
    return 1;
  } else {
    return v.compute() ? 1 : 0;
  }
}

// Runs a block codelet's compute(block) for one thread; other vertex classes have no block
// entry (0).
template <class V> int runBlockCompute(V &v, const BlockState *thread) {
  if constexpr (isBlockVertex<V>()) {
    Block block(thread);
    if constexpr (std::is_void_v<decltype(v.compute(block))>) {
      v.compute(block);
      return 1;
    } else {
      return v.compute(block) ? 1 : 0;
    }
  } else {
    return 0;
  }
}

// Zeroed storage with the size and alignment of V, viewed as a V whose members are then bound.
template <class V> struct VertexStorage {
  alignas(V) unsigned char bytes[sizeof(V)] = {};
  V &vertex() { return *std::launder(reinterpret_cast<V *>(bytes)); }
};

template <class V> constexpr unsigned char isMultiVertex() {
  return std::is_base_of_v<MultiVertex, V> ? 1 : 0;
}

} // namespace aspen::detail
