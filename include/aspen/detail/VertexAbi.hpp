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

// The words a launch's blocks share for Block::gridSync() and for reporting a wait that gave up
// (Vertex.hpp). The executor zeroes them before every launch, except timeoutNs, which it sets.
struct GridState {
  unsigned arrived;    // blocks arrived at the gridSync in progress
  unsigned generation; // gridSyncs completed
  unsigned gaveUp;     // GPU: the first wait that ran out of time: (where << 28) | (block + 1);
                       // 0 when none did. where: kWaitAtWaitUntil or kWaitAtGridSync
  unsigned reserved;
  unsigned long long timeoutNs; // GPU: how long one wait may poll before it gives up
};

enum : unsigned { kWaitAtWaitUntil = 1, kWaitAtGridSync = 2 };

// What the host gives one thread of a block codelet (BlockVertex, Vertex.hpp): its place in the
// launch, the block's shared memory, the barrier, which the runner implements by switching
// to the block's other threads until all of them have reached it (or finished), the grid's
// shared words, and the poll of a wait: the runner switches to other threads and comes back to
// test the predicate again. `fresh` is 1 on a wait's first poll (the thread ran code since it
// last yielded) and 0 on later ones (it only found the predicate still false); `where` is
// kWaitAtWaitUntil or kWaitAtGridSync, for the runner's messages.
struct BlockState {
  unsigned threadId, numThreads, blockId, numBlocks;
  void *shared;
  unsigned long long sharedBytes;
  void (*barrier)(void *runner);
  void *runner;
  GridState *grid;
  void (*poll)(void *runner, int fresh, unsigned where);
  // 32 bytes a thread of the block, where Block::mmaF16 hands a warp's registers around.
  void *warpScratch;
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
