#include "CudaGemm.hpp"

#include "CudaCheck.hpp"
#include "CudaLibraries.hpp"
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
    void *handle = openFirstLibrary(cudaLibraryCandidates(name, {"CUDA_HOME"}), "cuBLASLt", tried);
    if (!handle) {
      failure = "cannot open " + name + " (" + tried + ")";
      return;
    }
#define ASPEN_CUBLASLT_RESOLVE(fn) resolveSymbol(handle, api.fn, #fn, name, failure);
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

} // namespace

std::uint32_t gemmAlignmentOf(std::uint64_t address) {
  std::uint32_t a = 256;
  while (a > 1 && address % a != 0)
    a /= 2;
  return a;
}

struct CudaBlasLt::Impl {
  const CublasLt *lt = nullptr;
  cublasLtHandle_t handle = nullptr;
  DeviceBuffer workspace;
  DeviceBuffer constants; // float 0, float 1
  ~Impl() {
    if (handle)
      lt->cublasLtDestroy(handle);
  }
};

CudaBlasLt::CudaBlasLt() : impl_(std::make_unique<Impl>()) {
  impl_->lt = &cublasLt();
  ASPEN_CUBLAS_CHECK(impl_->lt->cublasLtCreate(&impl_->handle));
  impl_->workspace = DeviceBuffer(kWorkspaceBytes);
  const float constants[2] = {0.0f, 1.0f};
  impl_->constants = DeviceBuffer(sizeof constants);
  ASPEN_CUDA_CHECK(
      cudaMemcpy(impl_->constants.get(), constants, sizeof constants, cudaMemcpyHostToDevice));
}
CudaBlasLt::~CudaBlasLt() = default;
const void *CudaBlasLt::zero() const { return impl_->constants.get(); }
const void *CudaBlasLt::one() const { return impl_->constants.get() + sizeof(float); }

struct CudaGemmPlan::Impl {
  const CudaBlasLt::Impl *blas = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  // cuBLASLt's A is our b, its B our a (C^T = op(b)^T . op(a)^T, column-major).
  cublasLtMatrixLayout_t xLayout = nullptr, yLayout = nullptr, cLayout = nullptr;
  cublasLtMatmulAlgo_t algo{};
  ~Impl() {
    const CublasLt &lt = *blas->lt;
    for (cublasLtMatrixLayout_t l : {xLayout, yLayout, cLayout})
      if (l)
        lt.cublasLtMatrixLayoutDestroy(l);
    if (desc)
      lt.cublasLtMatmulDescDestroy(desc);
  }
};

CudaGemmPlan::CudaGemmPlan(const CudaBlasLt &blas, const GemmLayout &s, const std::string &what)
    : impl_(std::make_unique<Impl>()) {
  Impl &impl = *impl_;
  impl.blas = blas.impl_.get();
  const CublasLt &lt = *impl.blas->lt;
  const cublasComputeType_t compute =
      s.inputType == FLOAT && s.allowTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulDescCreate(&impl.desc, compute, CUDA_R_32F));
  const cublasLtPointerMode_t mode = CUBLASLT_POINTER_MODE_DEVICE;
  ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(impl.desc, CUBLASLT_MATMUL_DESC_POINTER_MODE,
                                                       &mode, sizeof mode));
  // Row-major b [K,N] is column-major [N,K]: op(b)^T as it lies; b stored [N,K] (transB) is
  // column-major [K,N], transposed by cuBLASLt. Likewise a.
  const cublasOperation_t opX = s.transB ? CUBLAS_OP_T : CUBLAS_OP_N,
                          opY = s.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(impl.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                                       &opX, sizeof opX));
  ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulDescSetAttribute(impl.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                                       &opY, sizeof opY));
  impl.xLayout = s.transB ? layout(lt, s.inputType, s.K, s.N, s.G, s.strideB)
                          : layout(lt, s.inputType, s.N, s.K, s.G, s.strideB);
  impl.yLayout = s.transA ? layout(lt, s.inputType, s.M, s.K, s.G, s.strideA)
                          : layout(lt, s.inputType, s.K, s.M, s.G, s.strideA);
  impl.cLayout = layout(lt, s.outputType, s.N, s.M, s.G, s.strideC);

  cublasLtMatmulPreference_t preference = nullptr;
  ASPEN_CUBLAS_CHECK(lt.cublasLtMatmulPreferenceCreate(&preference));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  const std::uint64_t workspaceBytes = impl.blas->workspace.bytes();
  const std::uint32_t align = s.alignment;
  struct Attribute {
    cublasLtMatmulPreferenceAttributes_t which;
    const void *value;
    std::size_t size;
  };
  const Attribute attributes[] = {
      {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspaceBytes, sizeof workspaceBytes},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, sizeof align},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align, sizeof align},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align, sizeof align},
      {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align, sizeof align}};
  for (const Attribute &attr : attributes)
    if (status == CUBLAS_STATUS_SUCCESS)
      status =
          lt.cublasLtMatmulPreferenceSetAttribute(preference, attr.which, attr.value, attr.size);
  if (status == CUBLAS_STATUS_SUCCESS)
    status = lt.cublasLtMatmulAlgoGetHeuristic(impl.blas->handle, impl.desc, impl.xLayout,
                                               impl.yLayout, impl.cLayout, impl.cLayout,
                                               preference, 1, &result, &found);
  lt.cublasLtMatmulPreferenceDestroy(preference);
  if (status != CUBLAS_STATUS_SUCCESS || found == 0)
    throw error("Engine::load: " + what + " (G=" + std::to_string(s.G) +
                " M=" + std::to_string(s.M) + " K=" + std::to_string(s.K) +
                " N=" + std::to_string(s.N) + ", " + s.inputType.toString() + " inputs, " +
                s.outputType.toString() + " output): cuBLASLt has no algorithm for it (" +
                lt.cublasLtGetStatusString(status) +
                "); cuBLASLt takes float -> float, half -> half and half -> float");
  impl.algo = result.algo;
}

CudaGemmPlan::~CudaGemmPlan() = default;

void CudaGemmPlan::enqueue(cudaStream_t stream, const void *a, const void *b, void *c,
                           const void *alpha, const void *beta) const {
  const Impl &impl = *impl_;
  const CudaBlasLt::Impl &blas = *impl.blas;
  ASPEN_CUBLAS_CHECK(blas.lt->cublasLtMatmul(blas.handle, impl.desc, alpha, b, impl.xLayout, a,
                                             impl.yLayout, beta, c, impl.cLayout, c, impl.cLayout,
                                             &impl.algo, blas.workspace.get(),
                                             blas.workspace.bytes(), stream));
}

struct CudaGemmKernels::Impl {
  std::unique_ptr<CudaBlasLt> blas; // opened at the first graph with Gemm kernels
  struct Call {
    std::unique_ptr<CudaGemmPlan> plan;
    const void *a = nullptr, *b = nullptr, *alpha = nullptr, *beta = nullptr;
    void *c = nullptr;
  };
  std::vector<Call> calls; // by kernel index
};

CudaGemmKernels::CudaGemmKernels(const CompiledGraph &graph, std::uint64_t arenaBase)
    : impl_(std::make_unique<Impl>()) {
  Impl &impl = *impl_;
  impl.calls.resize(graph.kernels.size());
  if (std::none_of(graph.kernels.begin(), graph.kernels.end(),
                   [](const CompiledKernel &k) { return k.kind == KernelKind::Gemm; }))
    return;
  impl.blas = std::make_unique<CudaBlasLt>();
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    if (k.kind != KernelKind::Gemm)
      continue;
    const GemmShape &s = k.gemm;
    Impl::Call &call = impl.calls[i];
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
    call.alpha = scale ? reinterpret_cast<const void *>(scale) : impl.blas->one();
    call.beta = s.accumulate ? impl.blas->one() : impl.blas->zero();
    GemmLayout l;
    l.G = s.G, l.M = s.M, l.K = s.K, l.N = s.N;
    l.strideA = s.M * s.K, l.strideB = s.K * s.N, l.strideC = s.M * s.N;
    l.inputType = s.inputType, l.outputType = s.outputType, l.allowTF32 = s.allowTF32;
    l.alignment = std::min({gemmAlignmentOf(a), gemmAlignmentOf(b), gemmAlignmentOf(c)});
    call.plan = std::make_unique<CudaGemmPlan>(*impl.blas, l, "Gemm '" + k.name + "'");
  }
}

CudaGemmKernels::~CudaGemmKernels() = default;

void CudaGemmKernels::enqueue(cudaStream_t stream, std::uint32_t index) const {
  const Impl::Call &c = impl_->calls.at(index);
  c.plan->enqueue(stream, c.a, c.b, c.c, c.alpha, c.beta);
}

} // namespace aspen::detail
