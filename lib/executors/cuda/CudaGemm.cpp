#include "CudaGemm.hpp"

#include "CudaCheck.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace aspen::detail {

namespace {

// cuBLASLt is opened at the first load of a graph with kernels on a GPU, not linked:
// mapping the 540 MB library costs every process that links libaspen about 150 MB of resident
// memory at start-up, most of which never runs a matmul on a GPU.
struct CublasLt {
#define ASPEN_CUBLASLT_FUNCTIONS(X)                                                                \
  X(cublasLtCreate)                                                                                \
  X(cublasLtDestroy) X(cublasLtGetStatusString) X(cublasLtGetStatusName)                           \
      X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutSetAttribute)                            \
          X(cublasLtMatrixLayoutDestroy) X(cublasLtMatmulDescCreate)                               \
              X(cublasLtMatmulDescSetAttribute) X(cublasLtMatmulDescDestroy)                       \
                  X(cublasLtMatmulPreferenceCreate) X(cublasLtMatmulPreferenceSetAttribute)        \
                      X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulAlgoGetHeuristic)         \
                          X(cublasLtMatmul)
#define ASPEN_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  ASPEN_CUBLASLT_FUNCTIONS(ASPEN_CUBLASLT_POINTER)
#undef ASPEN_CUBLASLT_POINTER
};

// The library of the toolkit Aspen was built with (its major version): from the loader's path
// (LD_LIBRARY_PATH, the cache), else $CUDA_HOME/lib64, else the build's toolkit.
const CublasLt &cublasLt() {
  static std::once_flag once;
  static CublasLt api;
  static std::string failure;
  std::call_once(once, [] {
    const std::string name = "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR);
    std::string tried;
    void *handle = nullptr;
    std::vector<std::string> candidates = {name};
    if (const char *home = std::getenv("CUDA_HOME"); home && *home)
      candidates.push_back(std::string(home) + "/lib64/" + name);
    candidates.push_back(std::string(ASPEN_CUDA_LIBRARY_DIR) + "/" + name);
    for (const std::string &candidate : candidates) {
      handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        logger().debug("CUDA executor: cuBLASLt from {}", candidate);
        break;
      }
      tried += (tried.empty() ? "" : "; ") + std::string(dlerror());
    }
    if (!handle) {
      failure = "cannot open " + name + " (" + tried + ")";
      return;
    }
#define ASPEN_CUBLASLT_RESOLVE(fn)                                                                 \
  api.fn = reinterpret_cast<decltype(api.fn)>(dlsym(handle, #fn));                                 \
  if (!api.fn && failure.empty())                                                                  \
    failure = name + " has no " #fn;
    ASPEN_CUBLASLT_FUNCTIONS(ASPEN_CUBLASLT_RESOLVE)
#undef ASPEN_CUBLASLT_RESOLVE
  });
  if (!failure.empty())
    throw error("Engine::load: the graph's kernels need cuBLASLt on the GPU: " + failure +
                "; put the CUDA toolkit's lib64 on LD_LIBRARY_PATH or set CUDA_HOME");
  return api;
}

[[noreturn]] void throwCublasError(cublasStatus_t status, const char *call, const char *file,
                                   int line) {
  const CublasLt &lt = cublasLt();
  throw runtime_error(std::string(call) + " failed at " + file + ":" + std::to_string(line) + ": " +
                      lt.cublasLtGetStatusString(status) + " (" + lt.cublasLtGetStatusName(status) +
                      ")");
}

#define ASPEN_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                             \
    if (const cublasStatus_t aspenCublasStatus = (call);                                           \
        aspenCublasStatus != CUBLAS_STATUS_SUCCESS)                                                \
      throwCublasError(aspenCublasStatus, #call, __FILE__, __LINE__);                              \
  } while (0)

// Workspace shared by every call: what cuBLAS suggests for Hopper.
constexpr std::size_t kWorkspaceBytes = std::size_t(32) << 20;

cudaDataType_t dataType(Type t) { return t == HALF ? CUDA_R_16F : CUDA_R_32F; }

// The largest power of two up to 256 that divides `address`: the alignment cuBLASLt may assume.
std::uint32_t alignmentOf(std::uint64_t address) {
  std::uint32_t a = 256;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

// A column-major rows x cols matrix, ld = rows, `batch` of them `stride` elements apart.
cublasLtMatrixLayout_t layout(const CublasLt &lt, Type type, std::uint64_t rows, std::uint64_t cols,
                              std::uint64_t batch, std::uint64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  ASPEN_CUBLAS_CHECK(
      lt.cublasLtMatrixLayoutCreate(&l, dataType(type), rows, cols, std::int64_t(rows)));
  if (batch > 1) {
    const std::int32_t count = std::int32_t(batch);
    const std::int64_t offset = std::int64_t(stride);
    ASPEN_CUBLAS_CHECK(lt.cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                           &count, sizeof count));
    ASPEN_CUBLAS_CHECK(lt.cublasLtMatrixLayoutSetAttribute(
        l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof offset));
  }
  return l;
}

struct Call {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t aLayout = nullptr, bLayout = nullptr, cLayout = nullptr;
  cublasLtMatmulAlgo_t algo{};
  const void *a = nullptr, *b = nullptr, *alpha = nullptr, *beta = nullptr;
  void *c = nullptr;
};

} // namespace

struct CudaGemmKernels::Impl {
  const CublasLt *lt = nullptr; // opened at the first graph with kernels
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  DeviceBuffer constants;  // float 0, float 1: beta and the default alpha
  std::vector<Call> calls; // by kernel index

  ~Impl() {
    if (!handle)
      return;
    for (Call &c : calls) {
      if (c.aLayout)
        lt->cublasLtMatrixLayoutDestroy(c.aLayout);
      if (c.bLayout)
        lt->cublasLtMatrixLayoutDestroy(c.bLayout);
      if (c.cLayout)
        lt->cublasLtMatrixLayoutDestroy(c.cLayout);
      if (c.desc)
        lt->cublasLtMatmulDescDestroy(c.desc);
    }
    if (handle)
      lt->cublasLtDestroy(handle);
  }
};

CudaGemmKernels::CudaGemmKernels(const CompiledGraph &graph, std::uint64_t arenaBase)
    : impl_(std::make_unique<Impl>()) {
  Impl &impl = *impl_;
  impl.calls.resize(graph.kernels.size());
  if (std::none_of(graph.kernels.begin(), graph.kernels.end(),
                   [](const CompiledKernel &k) { return k.kind == KernelKind::Gemm; }))
    return;
  impl.lt = &cublasLt();
  const CublasLt &lt = *impl.lt;
  ASPEN_CUBLAS_CHECK(lt.cublasLtCreate(&impl.handle));
  impl.workspace = DeviceBuffer(kWorkspaceBytes);
  const float constants[2] = {0.0f, 1.0f};
  impl.constants = DeviceBuffer(sizeof constants);
  ASPEN_CUDA_CHECK(
      cudaMemcpy(impl.constants.get(), constants, sizeof constants, cudaMemcpyHostToDevice));
  const std::uint64_t zero = impl.constants.address(), one = zero + sizeof(float);

  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    if (k.kind != KernelKind::Gemm)
      continue;
    const GemmShape &s = k.gemm;
    Call &call = impl.calls[i];
    auto address = [&](const DescTemplate &d) -> std::uint64_t {
      return d.base == DescTemplate::Arena
                 ? arenaBase + graph.buffers.at(d.buffer).offset + d.offset
                 : 0;
    };
    const std::uint64_t a = address(k.operands.at(GemmOperand::a)),
                        b = address(k.operands.at(GemmOperand::b)),
                        c = address(k.operands.at(GemmOperand::c)),
                        scale = address(k.operands.at(GemmOperand::scale));
    call.a = reinterpret_cast<const void *>(a);
    call.b = reinterpret_cast<const void *>(b);
    call.c = reinterpret_cast<void *>(c);
    call.alpha = reinterpret_cast<const void *>(scale ? scale : one);
    call.beta = reinterpret_cast<const void *>(s.accumulate ? one : zero);

    const cublasComputeType_t compute =
        s.inputType == FLOAT && s.allowTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulDescCreate(&call.desc, compute, CUDA_R_32F));
    const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_DEVICE;
    ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(
        call.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE, &mode, sizeof mode));
    // Column-major view: C^T [N,M] = B^T [N,K] . A^T [K,M].
    call.bLayout = layout(lt, s.inputType, s.N, s.K, s.G, s.K * s.N);
    call.aLayout = layout(lt, s.inputType, s.K, s.M, s.G, s.M * s.K);
    call.cLayout = layout(lt, s.outputType, s.N, s.M, s.G, s.M * s.N);

    cublasLtMatmulPreference_t preference = nullptr;
    ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceCreate(&preference));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const std::uint64_t workspaceBytes = kWorkspaceBytes;
    const std::uint32_t alignB = alignmentOf(b), alignA = alignmentOf(a), alignC = alignmentOf(c);
    struct Attribute {
      cublasLtMatmulPreferenceAttributes_t which;
      const void *value;
      std::size_t size;
    };
    // cuBLASLt's A is our B, its B our A.
    const Attribute attributes[] = {
        {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes, sizeof workspaceBytes},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignB, sizeof alignB},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignA, sizeof alignA},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC, sizeof alignC},
        {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC, sizeof alignC}};
    for (const Attribute &attr : attributes)
      if (status == CUBLAS_STATUS_SUCCESS)
        status =
            lt.cublasLtMatmulPreferenceSetAttribute(preference, attr.which, attr.value, attr.size);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = lt.cublasLtMatmulAlgoGetHeuristic(impl.handle, call.desc, call.bLayout, call.aLayout,
                                                 call.cLayout, call.cLayout, preference, 1, &result,
                                                 &found);
    lt.cublasLtMatmulPreferenceDestroy(preference);
    if (status != CUBLAS_STATUS_SUCCESS || found == 0)
      throw error("Engine::load: Gemm '" + k.name + "' (G=" + std::to_string(s.G) +
                  " M=" + std::to_string(s.M) + " K=" + std::to_string(s.K) +
                  " N=" + std::to_string(s.N) + ", " + s.inputType.toString() + " inputs, " +
                  s.outputType.toString() + " output): cuBLASLt has no algorithm for it (" +
                  lt.cublasLtGetStatusString(status) +
                  "); cuBLASLt takes float -> float, half -> half and half -> float");
    call.algo = result.algo;
  }
}

CudaGemmKernels::~CudaGemmKernels() = default;

void CudaGemmKernels::enqueue(cudaStream_t stream, std::uint32_t index) const {
  const Impl &impl = *impl_;
  const Call &c = impl.calls.at(index);
  ASPEN_CUBLAS_CHECK(impl.lt->cublasLtMatmul(
      impl.handle, c.desc, c.alpha, c.b, c.bLayout, c.a, c.aLayout, c.beta, c.c, c.cLayout, c.c,
      c.cLayout, &c.algo, impl.workspace.get(), impl.workspace.bytes(), stream));
}

} // namespace aspen::detail
