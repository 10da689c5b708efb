// CompiledGraph: a graph and its programs after compilation, as plain data.
//
// Nothing here points into the Graph it came from: memory is a set of buffers placed in one
// arena, every tensor has become a list of strided byte runs in those buffers, compute sets are
// tables of field descriptors, and programs are a tree of steps. Executors load it; Serialize.cpp
// writes and reads it. The only shared objects are the codelet libraries, which travel as bytes.
#pragma once

#include "codelets/CodeletLibrary.hpp"
#include "core/KernelKinds.hpp"
#include "core/ReplicaGroups.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/Type.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace aspen::detail {

// What a buffer holds; every buffer gets an arena offset from the memory layout pass.
// X(kind, name in the dump and the profile).
#define ASPEN_BUFFER_KINDS(X)                                                                     \
  X(Variable, "variable") X(VertexState, "vertexState") X(Scratch, "scratch")
#define ASPEN_BUFFER_ENUM(kind, name) kind,
enum class BufferKind : std::uint8_t { ASPEN_BUFFER_KINDS(ASPEN_BUFFER_ENUM) };
#undef ASPEN_BUFFER_ENUM
inline const char *bufferKindName(BufferKind kind) {
#define ASPEN_BUFFER_NAME(kind, name) name,
  static constexpr const char *names[] = {ASPEN_BUFFER_KINDS(ASPEN_BUFFER_NAME)};
#undef ASPEN_BUFFER_NAME
  return names[static_cast<std::size_t>(kind)];
}

// From liveness (Liveness.hpp): an always-live buffer has bytes of its own for the engine's
// lifetime. Any other holds a value only during steps [liveBegin, liveEnd] of program
// `liveProgram`, numbered in the order they run with calls inlined (liveBegin > liveEnd: never),
// and shares bytes with buffers whose values are never held at the same time.
struct Buffer {
  BufferKind kind = BufferKind::Variable;
  std::string name;
  std::uint64_t bytes = 0;
  std::uint64_t offset = 0; // in the arena, 64-byte aligned
  bool alwaysLive = true;
  std::uint32_t liveProgram = 0;
  std::uint64_t liveBegin = 0, liveEnd = 0;
  // A step of some program writes it (a compute set, kernel, copy or stream; Caches.hpp): an
  // engine binds it to memory the caller only lets it read only when not.
  bool written = false;
  bool isReusable() const { return kind == BufferKind::Variable && !alwaysLive; }
};

// `count` elements, the first at `offset` bytes into `buffer`, then every `stride` bytes.
struct ByteRun {
  std::uint32_t buffer = 0;
  std::int64_t offset = 0;
  std::int64_t stride = 0;
  std::uint64_t count = 0;
};

// The elements of a tensor in flattened order.
struct RegionList {
  std::vector<ByteRun> runs;
  std::uint32_t elementBytes = 0;
  std::uint64_t numElements = 0;
  std::uint64_t bytes() const { return numElements * elementBytes; }
};

// Copies src element i to dst element i; through a temporary when the two may overlap.
// `rearranges`: a compute set's or kernel's gather into its scratch or scatter out of it (made
// a Copy step by copy lowering); the profile counts its bytes as rearranged, not copied.
struct CopyPlan {
  RegionList src, dst;
  bool throughTemporary = false;
  bool rearranges = false;
};

// One element read by control flow (predicates, Switch controls).
struct ScalarRef {
  std::uint32_t buffer = 0;
  std::uint64_t offset = 0;
  Type type;
};

// A field descriptor before load: the executor turns it into a FieldDesc by adding the base
// address of the arena (or of the compute set's nested descriptor table).
struct DescTemplate {
  enum Base : std::uint8_t { Null, Arena, Nested };
  Base base = Null;
  std::uint32_t buffer = 0; // Arena only
  std::uint64_t offset = 0; // bytes into the buffer, or index into `nested`
  std::uint64_t size = 0;
};

struct CompiledVertexType {
  std::string name;
  std::uint32_t library = 0; // index into CompiledGraph::libraries
  bool isMultiVertex = false;
  bool isBlockVertex = false;
};

struct CompiledVertex {
  std::uint32_t type = 0;       // index into CompiledGraph::vertexTypes
  std::uint32_t firstField = 0; // index into CompiledComputeSet::fields
  std::uint32_t tile = 0;
  std::uint32_t id = 0;         // the graph's vertex id, for messages
};

// Vertices [begin, end) of a compute set all run on `tile`.
struct TileGroup {
  std::uint32_t tile = 0;
  std::uint32_t begin = 0, end = 0;
};

struct CompiledComputeSet {
  std::string name;
  std::vector<CompiledVertex> vertices; // grouped by tile, in order of addition within a tile
  std::vector<TileGroup> tiles;
  std::vector<DescTemplate> fields;     // each vertex's fields, consecutive
  std::vector<DescTemplate> nested;     // the edges of 2-D fields
  // Bytes its gathers (into contiguous temporaries in its scratch buffer, before the vertices
  // run) and scatters (out of them, after) move per execution; those are Copy steps around
  // each step that runs it (LowerCopies.hpp).
  std::uint64_t rearrangedBytes = 0;
  // From Graph::setPerfEstimate or a registered estimator: tiles run in parallel, so the
  // slowest tile's sum.
  std::uint64_t estimatedCycles = 0;
  std::uint64_t estimatedFlops = 0; // all vertices
  std::uint32_t verticesWithoutEstimate = 0;
};

// A kernel step after lowering (KernelKinds.hpp lists the kinds and their operands). Gemm, a
// kernel (Kernels.hpp): every operand is one contiguous row-major run
// (DescTemplate::Arena, size in elements), gathered into this kernel's scratch buffer first
// where the tensor was not one (and scattered back after, for written operands); the gathers
// and scatters are Copy steps around the kernel step. Block, a block codelet
// (BlockCodelets.hpp): the one vertex of compute set `launch.computeSet`, whose fields are the
// compute set's.
// c[g] = alpha * a[g] . b[g] + beta * c[g] over g < G; row-major [M,K], [K,N], [M,N] blocks
// one after another.
struct GemmShape {
  std::uint64_t G = 1, M = 1, K = 1, N = 1;
  Type inputType = FLOAT, outputType = FLOAT;
  bool accumulate = false; // beta = 1, else 0
  bool allowTF32 = false;
  std::uint64_t flops() const { return 2 * G * M * K * N; }
};

// A convolution call (the Conv* kernel kinds, Kernels.hpp): its index tables and types.
struct ConvShape {
  program::ConvGeometry geometry;
  Type inputType = FLOAT, outputType = FLOAT;
  bool accumulate = false; // ConvBackwardFilter: weights += scale * deltas
  // Kernel taps (all dimensions), output elements an image and multiply-adds that meet input.
  std::uint64_t taps() const {
    std::uint64_t n = 1;
    for (std::uint64_t t : geometry.taps)
      n *= t;
    return n;
  }
  std::uint64_t outputElements() const {
    std::uint64_t n = 1;
    for (std::uint64_t o : geometry.outputField)
      n *= o;
    return n;
  }
  std::uint64_t flops() const {
    std::uint64_t pairs = 1;
    for (const std::vector<std::int64_t> &index : geometry.inputIndex) {
      std::uint64_t real = 0;
      for (std::int64_t i : index)
        real += i >= 0;
      pairs *= real;
    }
    return 2 * geometry.batch * geometry.groups * geometry.inChans * geometry.outChans * pairs;
  }
};

// A collective (the kinds runsOnHost names): its operator (collectives::CollectiveOperator;
// ADD for those that do not reduce), element type, data's element count, replica groups
// (ReplicaGroups.hpp), the broadcast's root (a position in each group) and CrossReplicaCopy's
// map.
struct CollectiveShape {
  std::uint32_t op = 0;
  Type type = FLOAT;
  std::uint64_t elements = 0;
  std::uint32_t root = 0;
  std::uint32_t groupType = 0; // collectives::CommGroupType
  std::uint32_t groupSize = 1; // replicas a group (ALL: r)
  std::vector<std::uint32_t> sources; // CrossReplicaCopy: replica d receives sources[d]'s data
  ReplicaGroups groups() const {
    return {groupSize, groupType == std::uint32_t(collectives::CommGroupType::ORTHOGONAL)};
  }
  std::uint64_t resultElements(KernelKind kind) const {
    return collectiveResultElements(kind, elements, groupSize);
  }
};

// Bounds of any launch (verification applies each target's own, which are within these; a
// deserialised executable is checked against them before an executor allocates fibers or
// shared memory): the largest block of any GPU, and more shared memory than any GPU offers.
inline constexpr std::uint32_t kMaxBlockThreads = 1024;
inline constexpr std::uint64_t kMaxBlockSharedBytes = std::uint64_t(1) << 20;

struct BlockLaunch {
  std::uint32_t computeSet = 0;
  std::uint32_t blocks = 1, threadsPerBlock = 1;
  std::uint64_t sharedBytes = 0;
  bool coResident = false; // every block resident at once (LaunchShape::coResident)
};

struct CompiledKernel {
  KernelKind kind = KernelKind::Gemm;
  std::string name;
  GemmShape gemm;     // Gemm
  BlockLaunch launch; // Block
  ConvShape conv;     // ConvForward, ConvBackwardData, ConvBackwardFilter
  CollectiveShape collective; // the collectives (runsOnHost)
  bool isConv() const {
    return kind == KernelKind::ConvForward || kind == KernelKind::ConvBackwardData ||
           kind == KernelKind::ConvBackwardFilter;
  }
  // The multiply-adds of a library call, times 2 (0 for a block codelet).
  std::uint64_t flops() const {
    return kind == KernelKind::Gemm ? gemm.flops() : isConv() ? conv.flops() : 0;
  }
  // kernelOperands(kind) in order (GemmOperand::a, ...); Null for an absent optional one.
  std::vector<DescTemplate> operands;
  std::uint64_t rearrangedBytes = 0; // moved by its gathers and scatters per execution
};

struct StreamInfo {
  std::string handle;
  Type type;
  std::uint64_t numElements = 0;
  bool hostToDevice = true;
  // ReplicatedStreamMode::BROADCAST: one host source every replica of an engine reads (the
  // engine's Streams.hpp); else each replica has its own.
  bool broadcast = false;
  std::uint64_t bytes() const { return numElements * type.size(); }
};

struct StreamCopy {
  std::uint32_t stream = 0;
  RegionList tensor;
};

struct HostHandle {
  Type type;
  RegionList regions;
  // QUARTER tensors: their metadata element, written and read with a QuarterMetadata.
  RegionList metadata;
  bool metadataIsConstant = false;
  // Cached steps (CompiledGraph::caches) a write through this handle makes stale.
  std::vector<std::uint32_t> invalidates;
};

struct PrintInfo {
  std::string title;
  Type type;
  std::vector<std::uint64_t> shape;
  RegionList regions;
};

// Every kind of step, described once: X(kind, name, payload, children, scalar, on device).
//  payload   what Step::index refers to: None, ComputeSet (CompiledGraph::computeSets), Copy
//            (copies), StreamCopy (streamCopies), Print (prints), Kernel (kernels), Cache
//            (caches)
//  children  None, Any (in order), One ([body]), Two (see below), CasesPlusOne ([default,
//            case...], Step::cases)
//  scalar    Step::scalar is read (a predicate or a Switch control)
//  on device an executor may run it inside a device subtree (DeviceSubtrees.hpp); the others
//            need the host (streams, printing, aborting)
// Repeat: Step::count times its body. RepeatWhileTrue/False: [cond, body]. If: [then, else].
// Cached: its body, unless the cache is fresh (CachedStep below); the host decides, so it is
// not device work, though its body may be.
// Everything that handles each kind follows from this table or is a switch the build checks
// complete (-Werror=switch): the engine's interpreter (Run.cpp), the profile, the executors'
// device subtrees.
#define ASPEN_STEP_KINDS(X)                                                                       \
  X(Sequence, "Sequence", None, Any, false, true)                                                 \
  X(Execute, "Execute", ComputeSet, None, false, true)                                            \
  X(Copy, "Copy", Copy, None, false, true)                                                        \
  X(StreamToTensor, "StreamToTensor", StreamCopy, None, false, false)                             \
  X(TensorToStream, "TensorToStream", StreamCopy, None, false, false)                             \
  X(Repeat, "Repeat", None, One, false, true)                                                     \
  X(RepeatWhileTrue, "RepeatWhileTrue", None, Two, true, true)                                    \
  X(RepeatWhileFalse, "RepeatWhileFalse", None, Two, true, true)                                  \
  X(If, "If", None, Two, true, true)                                                              \
  X(Switch, "Switch", None, CasesPlusOne, true, true)                                             \
  X(PrintTensor, "PrintTensor", Print, None, false, false)                                        \
  X(Abort, "AbortOnCondition", None, None, true, false)                                           \
  X(Kernel, "Kernel", Kernel, None, false, true)                                                  \
  X(Cached, "Cached", Cache, One, false, false)                                                   \
  X(Nop, "Nop", None, None, false, true) /* Sync, WriteUndef, empty programs */

#define ASPEN_STEP_ENUM(kind, name, payload, children, scalar, onDevice) kind,
enum class StepKind : std::uint8_t { ASPEN_STEP_KINDS(ASPEN_STEP_ENUM) };
#undef ASPEN_STEP_ENUM

enum class StepPayload : std::uint8_t { None, ComputeSet, Copy, StreamCopy, Print, Kernel, Cache };
enum class StepChildren : std::uint8_t { None, Any, One, Two, CasesPlusOne };

struct StepKindInfo {
  const char *name;
  StepPayload payload;
  StepChildren children;
  bool readsScalar;
  bool onDevice;
};

inline const StepKindInfo &stepKindInfo(StepKind kind) {
#define ASPEN_STEP_INFO(kind, name, payload, children, scalar, onDevice)                          \
  StepKindInfo{name, StepPayload::payload, StepChildren::children, scalar, onDevice},
  static constexpr StepKindInfo table[] = {ASPEN_STEP_KINDS(ASPEN_STEP_INFO)};
#undef ASPEN_STEP_INFO
  return table[static_cast<std::size_t>(kind)];
}
inline const char *stepKindName(StepKind kind) { return stepKindInfo(kind).name; }
#define ASPEN_STEP_COUNT(kind, name, payload, children, scalar, onDevice) +1
inline constexpr std::size_t kNumStepKinds = 0 ASPEN_STEP_KINDS(ASPEN_STEP_COUNT);
#undef ASPEN_STEP_COUNT

struct Step {
  StepKind kind = StepKind::Nop;
  std::string name;
  std::uint32_t index = 0;
  std::uint32_t count = 0;
  ScalarRef scalar;
  std::vector<std::uint32_t> children;
  std::vector<std::int32_t> cases;
  // Cached steps (CompiledGraph::caches) that running this step makes stale, for steps that
  // write variables and for device-only subtrees (the union of their steps'); Caches.hpp.
  std::vector<std::uint32_t> invalidates;
};

// A program::Cached: the variables its body reads and writes (buffer indices, ascending). The
// body runs again only after one of them was written by something other than the body itself
// (a step, a host write): Caches.hpp. Those variables are always live.
struct CachedStep {
  std::string name;
  std::vector<std::uint32_t> reads, writes;
};

// The facts about the target that execution and the profile need.
struct TargetSummary {
  std::string name;
  std::uint32_t numTiles = 1;
  std::uint32_t numWorkerContexts = 1;
  std::uint64_t bytesPerTile = 0;
  double clockHz = 1.0e9;
};

struct InitialValue {
  std::uint32_t buffer = 0;
  std::uint64_t offset = 0;
  std::vector<std::uint8_t> bytes;
};

struct CompiledGraph {
  TargetSummary target;
  // Graph(target, replication_factor(r)): r, and the buffers of addReplicationIndexConstant
  // (one UNSIGNED_INT each), which each replica's engine sets to the replica's index at load.
  std::uint32_t replicationFactor = 1;
  std::vector<std::uint32_t> replicationIndexBuffers;
  std::vector<Buffer> buffers;
  std::uint64_t arenaBytes = 0;      // the peak: always-live bytes, scratch, the largest program's
                                     // reusable bytes at once
  std::uint64_t alwaysLiveBytes = 0; // always-live variables and vertex state, aligned
  std::uint64_t bufferBytes = 0;     // all buffers, each on its own: the arena without reuse
  std::vector<InitialValue> initialValues; // constants and vertex state, written at load
  std::vector<std::uint64_t> tileBytes;    // variable bytes mapped to each tile
  std::vector<std::uint64_t> tilePeakBytes; // of those, the most that hold values at once
  std::uint64_t variableBytes = 0;

  std::vector<std::shared_ptr<const CodeletLibrary>> libraries;
  std::vector<CompiledVertexType> vertexTypes;
  std::vector<CompiledComputeSet> computeSets;
  std::vector<CompiledKernel> kernels;
  std::vector<CopyPlan> copies;
  std::vector<StreamCopy> streamCopies;
  std::vector<PrintInfo> prints;
  std::vector<CachedStep> caches;
  std::vector<Step> steps;
  std::vector<std::uint32_t> programs; // root step of each program, by index

  std::map<std::string, HostHandle, std::less<>> hostWrites, hostReads;
  std::vector<StreamInfo> streams;
};


// Every structure above, described once: Members<T>::apply(self, f) calls f(name, member) for
// each data member in order (self may be const). Serialize.cpp writes and reads a CompiledGraph
// from it, and Dump.cpp prints one, so a member added to a structure and to its line here is
// serialised, validated by the checksum and dumped with nothing else to change.
template <class T> struct Members {
  static constexpr bool described = false;
};
#define ASPEN_MEMBER(name) f(#name, self.name)

template <> struct Members<Buffer> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(kind); ASPEN_MEMBER(name); ASPEN_MEMBER(bytes); ASPEN_MEMBER(offset);
    ASPEN_MEMBER(alwaysLive); ASPEN_MEMBER(liveProgram); ASPEN_MEMBER(liveBegin);
    ASPEN_MEMBER(liveEnd); ASPEN_MEMBER(written);
  }
};
template <> struct Members<ByteRun> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(buffer); ASPEN_MEMBER(offset); ASPEN_MEMBER(stride); ASPEN_MEMBER(count);
  }
};
template <> struct Members<RegionList> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(runs); ASPEN_MEMBER(elementBytes); ASPEN_MEMBER(numElements);
  }
};
template <> struct Members<CopyPlan> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(src); ASPEN_MEMBER(dst); ASPEN_MEMBER(throughTemporary);
    ASPEN_MEMBER(rearranges);
  }
};
template <> struct Members<ScalarRef> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(buffer); ASPEN_MEMBER(offset); ASPEN_MEMBER(type);
  }
};
template <> struct Members<DescTemplate> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(base); ASPEN_MEMBER(buffer); ASPEN_MEMBER(offset); ASPEN_MEMBER(size);
  }
};
template <> struct Members<CompiledVertexType> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(name); ASPEN_MEMBER(library); ASPEN_MEMBER(isMultiVertex);
    ASPEN_MEMBER(isBlockVertex);
  }
};
template <> struct Members<CompiledVertex> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(type); ASPEN_MEMBER(firstField); ASPEN_MEMBER(tile); ASPEN_MEMBER(id);
  }
};
template <> struct Members<TileGroup> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(tile); ASPEN_MEMBER(begin); ASPEN_MEMBER(end);
  }
};
template <> struct Members<CompiledComputeSet> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(name); ASPEN_MEMBER(vertices); ASPEN_MEMBER(tiles); ASPEN_MEMBER(fields);
    ASPEN_MEMBER(nested); ASPEN_MEMBER(rearrangedBytes); ASPEN_MEMBER(estimatedCycles); ASPEN_MEMBER(estimatedFlops);
    ASPEN_MEMBER(verticesWithoutEstimate);
  }
};
template <> struct Members<GemmShape> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(G); ASPEN_MEMBER(M); ASPEN_MEMBER(K); ASPEN_MEMBER(N); ASPEN_MEMBER(inputType);
    ASPEN_MEMBER(outputType); ASPEN_MEMBER(accumulate); ASPEN_MEMBER(allowTF32);
  }
};
template <> struct Members<BlockLaunch> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(computeSet); ASPEN_MEMBER(blocks); ASPEN_MEMBER(threadsPerBlock);
    ASPEN_MEMBER(sharedBytes); ASPEN_MEMBER(coResident);
  }
};
template <> struct Members<program::ConvGeometry> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(batch); ASPEN_MEMBER(groups); ASPEN_MEMBER(inChans); ASPEN_MEMBER(outChans);
    ASPEN_MEMBER(inputField); ASPEN_MEMBER(outputField); ASPEN_MEMBER(taps);
    ASPEN_MEMBER(inputIndex); ASPEN_MEMBER(workspaceBytes); ASPEN_MEMBER(allowTF32);
  }
};
template <> struct Members<ConvShape> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(geometry); ASPEN_MEMBER(inputType); ASPEN_MEMBER(outputType);
    ASPEN_MEMBER(accumulate);
  }
};
template <> struct Members<CollectiveShape> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(op); ASPEN_MEMBER(type); ASPEN_MEMBER(elements); ASPEN_MEMBER(root);
    ASPEN_MEMBER(groupType); ASPEN_MEMBER(groupSize); ASPEN_MEMBER(sources);
  }
};
template <> struct Members<CompiledKernel> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(kind); ASPEN_MEMBER(name); ASPEN_MEMBER(gemm); ASPEN_MEMBER(launch);
    ASPEN_MEMBER(conv); ASPEN_MEMBER(collective);
    ASPEN_MEMBER(operands); ASPEN_MEMBER(rearrangedBytes);
  }
};
template <> struct Members<StreamInfo> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(handle); ASPEN_MEMBER(type); ASPEN_MEMBER(numElements);
    ASPEN_MEMBER(hostToDevice); ASPEN_MEMBER(broadcast);
  }
};
template <> struct Members<StreamCopy> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(stream); ASPEN_MEMBER(tensor);
  }
};
template <> struct Members<HostHandle> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(type); ASPEN_MEMBER(regions); ASPEN_MEMBER(metadata);
    ASPEN_MEMBER(metadataIsConstant); ASPEN_MEMBER(invalidates);
  }
};
template <> struct Members<PrintInfo> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(title); ASPEN_MEMBER(type); ASPEN_MEMBER(shape); ASPEN_MEMBER(regions);
  }
};
template <> struct Members<Step> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(kind); ASPEN_MEMBER(name); ASPEN_MEMBER(index); ASPEN_MEMBER(count);
    ASPEN_MEMBER(scalar); ASPEN_MEMBER(children); ASPEN_MEMBER(cases);
    ASPEN_MEMBER(invalidates);
  }
};
template <> struct Members<CachedStep> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(name); ASPEN_MEMBER(reads); ASPEN_MEMBER(writes);
  }
};
template <> struct Members<TargetSummary> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(name); ASPEN_MEMBER(numTiles); ASPEN_MEMBER(numWorkerContexts);
    ASPEN_MEMBER(bytesPerTile); ASPEN_MEMBER(clockHz);
  }
};
template <> struct Members<InitialValue> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(buffer); ASPEN_MEMBER(offset); ASPEN_MEMBER(bytes);
  }
};
template <> struct Members<CompiledGraph> {
  static constexpr bool described = true;
  template <class Self, class F> static void apply(Self &self, F &&f) {
    ASPEN_MEMBER(target); ASPEN_MEMBER(replicationFactor); ASPEN_MEMBER(replicationIndexBuffers);
    ASPEN_MEMBER(buffers); ASPEN_MEMBER(arenaBytes);
    ASPEN_MEMBER(alwaysLiveBytes); ASPEN_MEMBER(bufferBytes); ASPEN_MEMBER(initialValues);
    ASPEN_MEMBER(tileBytes); ASPEN_MEMBER(tilePeakBytes); ASPEN_MEMBER(variableBytes);
    ASPEN_MEMBER(libraries); ASPEN_MEMBER(vertexTypes); ASPEN_MEMBER(computeSets);
    ASPEN_MEMBER(kernels); ASPEN_MEMBER(copies); ASPEN_MEMBER(streamCopies); ASPEN_MEMBER(prints);
    ASPEN_MEMBER(caches); ASPEN_MEMBER(steps); ASPEN_MEMBER(programs); ASPEN_MEMBER(hostWrites);
    ASPEN_MEMBER(hostReads); ASPEN_MEMBER(streams);
  }
};
#undef ASPEN_MEMBER

// A hash of everything an executable holds (its serialised bytes, Serialize.cpp): equal for the
// same graph compiled by the same build, whichever process compiled it.
std::uint64_t fingerprint(const CompiledGraph &graph);

// The version of the serialised executable's format (Serialize.cpp's history of it): a stream
// of another version is refused. The deserialize fuzzer frames its inputs with it, and its seed
// corpus (fuzz/make_deserialize_seeds.cpp) is made again whenever it changes (a unit test
// checks the seeds' version).
inline constexpr std::uint32_t kExecutableFormatVersion = 19;

} // namespace aspen::detail
