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

#include <map>
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
      X(ncclCommAbort) X(ncclCommSplit) X(ncclGetErrorString) X(ncclAllReduce)                    \
          X(ncclReduceScatter) X(ncclAllGather) X(ncclBroadcast) X(ncclSend) X(ncclRecv)          \
              X(ncclGroupStart) X(ncclGroupEnd)
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
#define ASPEN_NCCL_RESOLVE(fn) resolveSymbol(handle, api.fn, #fn, name, failure);
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
  else if (t == LONGLONG)
    out = ncclInt64;
  else if (t == UNSIGNED_LONGLONG)
    out = ncclUint64;
  else if (t == CHAR || t == SIGNED_CHAR)
    out = ncclInt8;
  else if (t == UNSIGNED_CHAR || t == BOOL)
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

// Waits for communicator `comm` (just made, non-blocking) to be ready, until `deadline`; false
// when it was not.
bool settleNew(ncclComm_t comm, const char *call, std::chrono::steady_clock::time_point deadline) {
  for (;;) {
    ncclResult_t state = ncclInProgress;
    check(nccl().ncclCommGetAsyncError(comm, &state), "ncclCommGetAsyncError");
    if (state == ncclSuccess)
      return true;
    check(state, call);
    if (std::chrono::steady_clock::now() >= deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

// The communicators' key: a collective's groups (CommGroup type and size).
std::uint64_t groupKey(const CollectiveShape &s) {
  return (std::uint64_t(s.groupType) << 32) | s.groupSize;
}

} // namespace

struct CudaCollectives::State {
  State(const CompiledGraph &g, std::uint8_t *a, unsigned r, unsigned n)
      : graph(g), arena(a), replica(r), replicas(n) {}
  const CompiledGraph &graph;
  std::uint8_t *arena;
  unsigned replica, replicas;
  ncclComm_t comm = nullptr; // every replica's
  // Each group's of this replica (ncclCommSplit of comm), by groupKey; ALL is comm.
  std::map<std::uint64_t, ncclComm_t> groupComms;
  std::vector<void *> scratch; // by kernel: a reduce-scatter's padded data, an exchange's copy
  std::string aborted;         // why the communicators were aborted; empty while they work

  ncclComm_t commOf(const CollectiveShape &s) const {
    const auto found = groupComms.find(groupKey(s));
    return found == groupComms.end() ? comm : found->second;
  }
  void abortAll() {
    for (auto &[key, c] : groupComms)
      if (c)
        nccl().ncclCommAbort(c);
    groupComms.clear();
    if (comm)
      nccl().ncclCommAbort(comm);
    comm = nullptr;
  }
};

std::string CudaCollectives::unsupported(const CompiledGraph &graph) {
  for (const CompiledKernel &k : graph.kernels) {
    if (!runsOnHost(k.kind))
      continue;
    ncclDataType_t type;
    ncclRedOp_t op;
    const auto given = CollectiveOperator(k.collective.op);
    if (!ncclType(k.collective.type, type))
      return "collective '" + k.name + "' is of type " + k.collective.type.toString() +
             ", which NCCL has no type for";
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

CudaCollectives::CudaCollectives(const CompiledGraph &graph, std::uint8_t *arena,
                                 unsigned replica, unsigned replicas,
                                 const std::vector<std::uint8_t> &id,
                                 std::chrono::steady_clock::time_point deadline)
    : state_(std::make_unique<State>(graph, arena, replica, replicas)) {
  const Nccl &api = nccl();
  ncclUniqueId unique;
  if (id.size() != sizeof unique)
    throw internal_error("an NCCL id of " + std::to_string(id.size()) + " bytes");
  std::memcpy(&unique, id.data(), sizeof unique);
  const auto notReady = [&](const std::string &what) {
    state_->abortAll();
    return error("Engine::load: " + what + " was not ready by the deadline "
                 "(aspen.collectives.timeout): a rank did not join");
  };
  // Non-blocking, so that a rank that never comes is a deadline, not a hang. The rank in NCCL
  // is the replica: an engine on a GPU runs one, and the launch's engines tile [0, r).
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  check(api.ncclCommInitRankConfig(&state_->comm, int(replicas), unique, int(replica), &config),
        "ncclCommInitRankConfig");
  if (!settleNew(state_->comm, "ncclCommInitRankConfig", deadline))
    throw notReady("the NCCL communicator of " + std::to_string(replicas) +
                   " replicas (this one replica " + std::to_string(replica) + ")");
  // One communicator a kind of group, split in kernel order (the same on every rank: the ranks'
  // executables are the same): this replica's group, ranked by its position in it.
  for (const CompiledKernel &k : graph.kernels) {
    if (!runsOnHost(k.kind) || k.collective.groupSize >= replicas ||
        state_->groupComms.count(groupKey(k.collective)))
      continue;
    const ReplicaGroups groups = k.collective.groups();
    ncclComm_t &split = state_->groupComms[groupKey(k.collective)];
    settle(state_->comm,
           api.ncclCommSplit(state_->comm, int(groups.groupOf(replica, replicas)),
                             int(groups.positionOf(replica, replicas)), &split, &config),
           "ncclCommSplit");
    if (!settleNew(split, "ncclCommSplit", deadline))
      throw notReady("the NCCL communicator of the groups of " +
                     std::to_string(groups.size) + " of collective '" + k.name + "'");
  }
  state_->scratch.assign(graph.kernels.size(), nullptr);
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    const std::uint64_t piece = k.collective.resultElements(k.kind),
                        size = k.collective.type.size();
    if (k.kind == KernelKind::ReduceScatter && piece * k.collective.groupSize != k.collective.elements)
      ASPEN_CUDA_CHECK(cudaMalloc(&state_->scratch[i], piece * k.collective.groupSize * size));
    else if (k.kind == KernelKind::AllToAll || k.kind == KernelKind::CrossReplicaCopy)
      ASPEN_CUDA_CHECK(cudaMalloc(&state_->scratch[i], k.collective.elements * size));
  }
  logger().debug("CUDA executor: NCCL communicator of {} replicas, this one {}, {} of groups",
                 replicas, replica, state_->groupComms.size());
}

CudaCollectives::~CudaCollectives() {
  for (void *p : state_->scratch)
    if (p)
      cudaFree(p);
  if (!state_->aborted.empty())
    return; // abortAll freed them
  for (auto &[key, c] : state_->groupComms)
    if (c)
      nccl().ncclCommDestroy(c);
  if (state_->comm)
    nccl().ncclCommDestroy(state_->comm);
}

void CudaCollectives::abort(const std::string &why) {
  if (!state_->aborted.empty())
    return;
  state_->aborted = why;
  state_->abortAll();
}

const std::string &CudaCollectives::aborted() const { return state_->aborted; }

void CudaCollectives::enqueue(cudaStream_t stream, std::uint32_t index) {
  const Nccl &api = nccl();
  const CompiledKernel &k = state_->graph.kernels[index];
  if (!state_->aborted.empty())
    throw runtime_error("collective '" + k.name + "': the engine's NCCL communicators were "
                        "aborted when " + state_->aborted + "; this engine refuses further "
                        "runs (make a new engine on every rank)");
  const CollectiveShape &s = k.collective;
  const auto address = [&](const DescTemplate &d) {
    return state_->arena + state_->graph.buffers[d.buffer].offset + d.offset;
  };
  std::uint8_t *data = address(k.operands[AllReduceOperand::data]);
  std::uint8_t *result = address(k.operands[AllReduceOperand::result]);
  const std::size_t elementBytes = s.type.size(), bytes = s.elements * elementBytes;
  const std::uint32_t members = s.groupSize;
  ncclComm_t comm = state_->commOf(s);
  ncclDataType_t type = ncclUint8;
  ncclType(s.type, type);
  ncclRedOp_t op = ncclSum;
  const auto given = CollectiveOperator(s.op);
  // The data apart from the result: an exchange of pieces must not overwrite what it still
  // sends (a copy in the kernel's scratch when they overlap).
  const auto apart = [&]() -> const std::uint8_t * {
    const std::size_t resultBytes = s.resultElements(k.kind) * elementBytes;
    if (data + bytes <= result || result + resultBytes <= data)
      return data;
    auto *copy = static_cast<std::uint8_t *>(state_->scratch[index]);
    ASPEN_CUDA_CHECK(cudaMemcpyAsync(copy, data, bytes, cudaMemcpyDeviceToDevice, stream));
    return copy;
  };
  switch (k.kind) {
  case KernelKind::AllReduce:
    if (given == CollectiveOperator::LOCAL) {
      if (data != result)
        ASPEN_CUDA_CHECK(cudaMemcpyAsync(result, data, bytes, cudaMemcpyDeviceToDevice, stream));
      return;
    }
    ncclOp(given, op);
    settle(comm, api.ncclAllReduce(data, result, s.elements, type, op, comm, stream),
           "ncclAllReduce");
    return;
  case KernelKind::ReduceScatter: {
    ncclOp(given, op);
    const std::uint64_t piece = s.resultElements(k.kind);
    const void *from = data;
    if (void *padded = state_->scratch[index]) { // the data, then zeros to a piece a member
      ASPEN_CUDA_CHECK(cudaMemsetAsync(padded, 0, piece * members * elementBytes, stream));
      ASPEN_CUDA_CHECK(cudaMemcpyAsync(padded, data, bytes, cudaMemcpyDeviceToDevice, stream));
      from = padded;
    }
    settle(comm, api.ncclReduceScatter(from, result, piece, type, op, comm, stream),
           "ncclReduceScatter");
    return;
  }
  case KernelKind::AllGather:
    settle(comm, api.ncclAllGather(data, result, s.elements, type, comm, stream),
           "ncclAllGather");
    return;
  case KernelKind::Broadcast: // the root is a position in the group: its rank in comm
    settle(comm, api.ncclBroadcast(data, result, s.elements, type, int(s.root), comm, stream),
           "ncclBroadcast");
    return;
  case KernelKind::AllToAll: { // slice j of the data to member j; member j's into block j
    const std::uint8_t *from = apart();
    const std::size_t slice = s.elements / members;
    check(api.ncclGroupStart(), "ncclGroupStart");
    for (std::uint32_t j = 0; j < members; ++j) {
      check(api.ncclSend(from + j * slice * elementBytes, slice, type, int(j), comm, stream),
            "ncclSend");
      check(api.ncclRecv(result + j * slice * elementBytes, slice, type, int(j), comm, stream),
            "ncclRecv");
    }
    settle(comm, api.ncclGroupEnd(), "ncclGroupEnd");
    return;
  }
  case KernelKind::CrossReplicaCopy: { // from sources[me]; to the replica whose source is me
    const std::uint8_t *from = apart();
    check(api.ncclGroupStart(), "ncclGroupStart");
    for (std::uint32_t to = 0; to < s.sources.size(); ++to)
      if (s.sources[to] == state_->replica)
        check(api.ncclSend(from, s.elements, type, int(to), comm, stream), "ncclSend");
    check(api.ncclRecv(result, s.elements, type, int(s.sources.at(state_->replica)), comm,
                       stream),
          "ncclRecv");
    settle(comm, api.ncclGroupEnd(), "ncclGroupEnd");
    return;
  }
  default:
    throw internal_error("NCCL: kernel '" + k.name + "' is not a collective");
  }
}

#else // no NCCL in this build

struct CudaCollectives::State {
  std::string aborted;
};

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

void CudaCollectives::abort(const std::string &) {}

const std::string &CudaCollectives::aborted() const { return state_->aborted; }

void CudaCollectives::enqueue(cudaStream_t, std::uint32_t) {}

#endif

} // namespace aspen::detail
