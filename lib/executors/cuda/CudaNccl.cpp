// The NCCL transport on the CUDA executor (CudaNccl.hpp).
#include "CudaNccl.hpp"

#include "CudaCheck.hpp"
#include "support/Logging.hpp"

#include <aspen/Collectives.hpp>
#include <aspen/Error.hpp>

#include <cstring>
#include <thread>

#if ASPEN_HAVE_NCCL
#include "CudaLibraries.hpp"

#include <mutex>
#include <nccl.h>
#endif

namespace aspen::detail {

using collectives::CollectiveOperator;

#if ASPEN_HAVE_NCCL

namespace {

struct Nccl {
#define ASPEN_NCCL_FUNCTIONS(X)                                                                   \
  X(ncclGetVersion)                                                                               \
  X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommGetAsyncError) X(ncclCommDestroy)        \
      X(ncclCommAbort) X(ncclGetErrorString) X(ncclAllReduce) X(ncclReduceScatter)                \
          X(ncclAllGather) X(ncclBroadcast)
#define ASPEN_NCCL_POINTER(name) decltype(&::name) name = nullptr;
  ASPEN_NCCL_FUNCTIONS(ASPEN_NCCL_POINTER)
#undef ASPEN_NCCL_POINTER
};

// libnccl.so.2 from the loader's path, else $NCCL_HOME, $CUDA_HOME, the build's toolkit.
const Nccl &nccl() {
  static std::once_flag once;
  static Nccl api;
  static std::string failure;
  std::call_once(once, [] {
    const std::string name = "libnccl.so." + std::to_string(NCCL_MAJOR);
    std::string tried;
    void *handle =
        openFirstLibrary(cudaLibraryCandidates(name, {"NCCL_HOME", "CUDA_HOME"}), "NCCL", tried);
    if (!handle) {
      failure = "cannot open " + name + " (" + tried + ")";
      return;
    }
#define ASPEN_NCCL_RESOLVE(fn)                                                                    \
  api.fn = reinterpret_cast<decltype(api.fn)>(dlsym(handle, #fn));                                \
  if (!api.fn && failure.empty())                                                                 \
    failure = name + " has no " #fn;
    ASPEN_NCCL_FUNCTIONS(ASPEN_NCCL_RESOLVE)
#undef ASPEN_NCCL_RESOLVE
  });
  if (!failure.empty())
    throw error("Engine::load: the graph's collectives on the GPU need NCCL: " + failure +
                "; set NCCL_HOME or put its lib on LD_LIBRARY_PATH");
  return api;
}

void check(ncclResult_t result, const char *call) {
  if (result != ncclSuccess && result != ncclInProgress)
    throw runtime_error(std::string("NCCL ") + call + ": " + nccl().ncclGetErrorString(result));
}

// A call on a non-blocking communicator may return ncclInProgress: it is enqueued once the
// communicator's state leaves it (a minute at most: only a rank that stopped in the middle of a
// launch takes that long).
void settle(ncclComm_t comm, ncclResult_t result, const char *call) {
  check(result, call);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (result == ncclInProgress) {
    check(nccl().ncclCommGetAsyncError(comm, &result), "ncclCommGetAsyncError");
    check(result, call);
    if (result == ncclInProgress && std::chrono::steady_clock::now() >= deadline)
      throw runtime_error(std::string("NCCL ") + call + " was still being enqueued after a "
                          "minute (a rank stopped?)");
    std::this_thread::yield();
  }
}

bool ncclType(Type t, ncclDataType_t &out) {
  if (t == FLOAT)
    out = ncclFloat32;
  else if (t == HALF)
    out = ncclFloat16;
  else if (t == INT)
    out = ncclInt32;
  else if (t == UNSIGNED_INT)
    out = ncclUint32;
  else if (t == BOOL)
    out = ncclUint8;
  else
    return false;
  return true;
}

// NCCL's operator for op (LOGICAL_* on bytes: min and max); false for SQUARE_ADD.
bool ncclOp(CollectiveOperator op, ncclRedOp_t &out) {
  switch (op) {
  case CollectiveOperator::ADD:
    out = ncclSum;
    return true;
  case CollectiveOperator::MEAN:
    out = ncclAvg;
    return true;
  case CollectiveOperator::MUL:
    out = ncclProd;
    return true;
  case CollectiveOperator::MIN:
  case CollectiveOperator::LOGICAL_AND:
    out = ncclMin;
    return true;
  case CollectiveOperator::MAX:
  case CollectiveOperator::LOGICAL_OR:
    out = ncclMax;
    return true;
  case CollectiveOperator::SQUARE_ADD:
  case CollectiveOperator::LOCAL:
    return false;
  }
  return false;
}

} // namespace

struct CudaCollectives::State {
  const CompiledGraph &graph;
  std::uint8_t *arena;
  unsigned ranks;
  ncclComm_t comm = nullptr;
  std::vector<void *> scratch; // by kernel: a reduce-scatter's padded copy of its data
  bool broken = false;
};

std::string CudaCollectives::unsupported(const CompiledGraph &graph) {
  for (const CompiledKernel &k : graph.kernels) {
    if (!runsOnHost(k.kind))
      continue;
    ncclDataType_t type;
    ncclRedOp_t op;
    const auto given = CollectiveOperator(k.collective.op);
    if (k.kind == KernelKind::AllToAll || k.kind == KernelKind::CrossReplicaCopy)
      return "collective '" + k.name + "' is a" +
             (k.kind == KernelKind::AllToAll ? "n all-to-all" : " cross-replica copy") +
             ", which the NCCL transport does not run yet";
    if (collectives::CommGroupType(k.collective.groupType) != collectives::CommGroupType::ALL)
      return "collective '" + k.name + "' is over groups of replicas, which the NCCL "
             "transport does not run yet (one communicator of all ranks)";
    if (!ncclType(k.collective.type, type))
      return "collective '" + k.name + "' is of type " + k.collective.type.toString();
    if ((k.kind == KernelKind::AllReduce || k.kind == KernelKind::ReduceScatter) &&
        given != CollectiveOperator::LOCAL && !ncclOp(given, op))
      return "collective '" + k.name + "' uses " + collectives::toString(given) +
             ", which NCCL has no operator for";
  }
  return {};
}

std::vector<std::uint8_t> CudaCollectives::newId() {
  ncclUniqueId id;
  check(nccl().ncclGetUniqueId(&id), "ncclGetUniqueId");
  std::vector<std::uint8_t> bytes(sizeof id);
  std::memcpy(bytes.data(), &id, sizeof id);
  return bytes;
}

CudaCollectives::CudaCollectives(const CompiledGraph &graph, std::uint8_t *arena, unsigned rank,
                                 unsigned ranks, const std::vector<std::uint8_t> &id,
                                 std::chrono::steady_clock::time_point deadline)
    : state_(std::make_unique<State>(State{graph, arena, ranks})) {
  const Nccl &api = nccl();
  ncclUniqueId unique;
  if (id.size() != sizeof unique)
    throw internal_error("an NCCL id of " + std::to_string(id.size()) + " bytes");
  std::memcpy(&unique, id.data(), sizeof unique);
  // Non-blocking, so that a rank that never comes is a deadline, not a hang.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  check(api.ncclCommInitRankConfig(&state_->comm, int(ranks), unique, int(rank), &config),
        "ncclCommInitRankConfig");
  for (;;) {
    ncclResult_t state = ncclInProgress;
    check(api.ncclCommGetAsyncError(state_->comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess)
      break;
    check(state, "ncclCommInitRankConfig");
    if (std::chrono::steady_clock::now() >= deadline) {
      api.ncclCommAbort(state_->comm);
      state_->comm = nullptr;
      throw error("Engine::load: the NCCL communicator of " + std::to_string(ranks) +
                  " ranks (this one rank " + std::to_string(rank) +
                  ") was not ready by the deadline (aspen.collectives.timeout): a rank did not "
                  "join");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  state_->scratch.assign(graph.kernels.size(), nullptr);
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    const std::uint64_t piece = k.collective.resultElements(k.kind);
    if (k.kind == KernelKind::ReduceScatter && piece * ranks != k.collective.elements)
      ASPEN_CUDA_CHECK(cudaMalloc(&state_->scratch[i], piece * ranks * k.collective.type.size()));
  }
  logger().debug("CUDA executor: NCCL communicator of {} ranks, this one {}", ranks, rank);
}

CudaCollectives::~CudaCollectives() {
  for (void *p : state_->scratch)
    if (p)
      cudaFree(p);
  if (state_->comm)
    (state_->broken ? nccl().ncclCommAbort : nccl().ncclCommDestroy)(state_->comm);
}

void CudaCollectives::enqueue(cudaStream_t stream, std::uint32_t index) {
  const Nccl &api = nccl();
  const CompiledKernel &k = state_->graph.kernels[index];
  const CollectiveShape &s = k.collective;
  const auto address = [&](const DescTemplate &d) {
    return state_->arena + state_->graph.buffers[d.buffer].offset + d.offset;
  };
  std::uint8_t *data = address(k.operands[AllReduceOperand::data]);
  std::uint8_t *result = address(k.operands[AllReduceOperand::result]);
  const std::size_t bytes = s.elements * s.type.size();
  ncclDataType_t type;
  ncclType(s.type, type);
  ncclRedOp_t op = ncclSum;
  const auto given = CollectiveOperator(s.op);
  switch (k.kind) {
  case KernelKind::AllReduce:
    if (given == CollectiveOperator::LOCAL) {
      if (data != result)
        ASPEN_CUDA_CHECK(cudaMemcpyAsync(result, data, bytes, cudaMemcpyDeviceToDevice, stream));
      return;
    }
    ncclOp(given, op);
    settle(state_->comm,
           api.ncclAllReduce(data, result, s.elements, type, op, state_->comm, stream),
           "ncclAllReduce");
    return;
  case KernelKind::ReduceScatter: {
    ncclOp(given, op);
    const std::uint64_t piece = s.resultElements(k.kind);
    const void *from = data;
    if (void *padded = state_->scratch[index]) { // the data, then zeros to r pieces
      ASPEN_CUDA_CHECK(cudaMemsetAsync(padded, 0, piece * state_->ranks * s.type.size(), stream));
      ASPEN_CUDA_CHECK(cudaMemcpyAsync(padded, data, bytes, cudaMemcpyDeviceToDevice, stream));
      from = padded;
    }
    settle(state_->comm,
           api.ncclReduceScatter(from, result, piece, type, op, state_->comm, stream),
           "ncclReduceScatter");
    return;
  }
  case KernelKind::AllGather:
    settle(state_->comm, api.ncclAllGather(data, result, s.elements, type, state_->comm, stream),
           "ncclAllGather");
    return;
  case KernelKind::Broadcast:
    settle(state_->comm,
           api.ncclBroadcast(data, result, s.elements, type, int(s.root), state_->comm, stream),
           "ncclBroadcast");
    return;
  default:
    throw internal_error("NCCL: kernel '" + k.name + "' is not a collective");
  }
}

#else // no NCCL in this build

struct CudaCollectives::State {};

std::string CudaCollectives::unsupported(const CompiledGraph &) {
  return "this Aspen was built without NCCL (ASPEN_NCCL=OFF, or no nccl.h when it was "
         "configured)";
}

std::vector<std::uint8_t> CudaCollectives::newId() {
  throw error("Engine::load: " + unsupported(CompiledGraph{}));
}

CudaCollectives::CudaCollectives(const CompiledGraph &graph, std::uint8_t *, unsigned, unsigned,
                                 const std::vector<std::uint8_t> &,
                                 std::chrono::steady_clock::time_point) {
  throw error("Engine::load: " + unsupported(graph));
}

CudaCollectives::~CudaCollectives() = default;

void CudaCollectives::enqueue(cudaStream_t, std::uint32_t) {}

#endif

} // namespace aspen::detail
