// The binary contract between the code that runs a compute set and a compiled codelet.
//
// A vertex entry point receives one FieldDesc per field of the vertex class, in the order of
// the class's field list (VertexTypeInfo::fields):
//   - scalar edge (Input<T>, Output<T>, InOut<T>):   data -> the element, size = 1
//   - vector edge (Input<Vector<T>> ...):             data -> first element, size = element count
//   - 2-D edge (Vector<Input<Vector<T>>>, VectorList): data -> FieldDesc[size], one per edge
//   - plain member (T or Vector<T>):                  data -> value(s) in the member's type,
//                                                      size = element count
// The entry returns 1 when compute() succeeded (or returns void) and 0 when it returned false.
// No standard library here: this header is also compiled by NVRTC.
#pragma once

namespace aspen {
namespace detail {

struct FieldDesc {
  void *data;
  unsigned long long size;
};

typedef int (*VertexEntry)(const FieldDesc *fields, unsigned workerId, unsigned numWorkers);

// What the host gives one thread of a block codelet (BlockVertex, Vertex.hpp): its place in the
// launch, the block's shared memory, and the barrier, which the runner implements by switching
// to the block's other threads until all of them have reached it (or finished).
struct BlockState {
  unsigned threadId, numThreads, blockId, numBlocks;
  void *shared;
  unsigned long long sharedBytes;
  void (*barrier)(void *runner);
  void *runner;
};

// A block codelet's host entry: one call per thread of a block, all of one block's calls
// interleaved at barriers. Returns 1, or 0 when compute() returned false.
typedef int (*BlockEntry)(const FieldDesc *fields, const BlockState *thread);

// Element type codes in compiled metadata; the values follow aspen::TypeId (Type.hpp), with
// kOtherTypeCode for anything else (a user struct, a pointer ...).
enum : unsigned char { kOtherTypeCode = 0xff };

// Field kinds in compiled metadata.
enum FieldDirectionCode : unsigned char { kFieldPlain = 0, kFieldInput = 1, kFieldOutput = 2, kFieldInOut = 3 };
enum FieldShapeCode : unsigned char { kFieldScalar = 0, kFieldVector = 1, kFieldVectorOfVectors = 2 };

} // namespace detail
} // namespace aspen
