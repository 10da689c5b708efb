#include "CudaConv.hpp"

#include "CudaCheck.hpp"
#include "CudaDevice.hpp"
#include "CudaGemm.hpp"
#include "CudaLibraries.hpp"
#include "support/ConvTables.hpp"
#include "support/Logging.hpp"

#include <aspen/Error.hpp>

#include <cudnn.h>
#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace aspen::detail {

namespace {

// The cuDNN functions Aspen calls (their types from the toolkit's header).
#define ASPEN_CUDNN_FUNCTIONS(X)                                                                  \
  X(cudnnGetVersion)                                                                              \
  X(cudnnGetErrorString)                                                                          \
  X(cudnnCreate)                                                                                  \
  X(cudnnDestroy)                                                                                 \
  X(cudnnSetStream)                                                                               \
  X(cudnnCreateTensorDescriptor)                                                                  \
  X(cudnnSetTensorNdDescriptor)                                                                   \
  X(cudnnDestroyTensorDescriptor)                                                                 \
  X(cudnnCreateFilterDescriptor)                                                                  \
  X(cudnnSetFilterNdDescriptor)                                                                   \
  X(cudnnDestroyFilterDescriptor)                                                                 \
  X(cudnnCreateConvolutionDescriptor)                                                             \
  X(cudnnSetConvolutionNdDescriptor)                                                              \
  X(cudnnSetConvolutionGroupCount)                                                                \
  X(cudnnSetConvolutionMathType)                                                                  \
  X(cudnnDestroyConvolutionDescriptor)                                                            \
  X(cudnnGetConvolutionNdForwardOutputDim)                                                        \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                                       \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                                                  \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                                                \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                                      \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                                                 \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                                               \
  X(cudnnConvolutionForward)                                                                      \
  X(cudnnConvolutionBackwardData)                                                                 \
  X(cudnnConvolutionBackwardFilter)

struct Cudnn {
#define ASPEN_CUDNN_MEMBER(name) decltype(&::name) name = nullptr;
  ASPEN_CUDNN_FUNCTIONS(ASPEN_CUDNN_MEMBER)
#undef ASPEN_CUDNN_MEMBER
};

// cuDNN opened once; null, with the reason in `why`, when it cannot be.
const Cudnn *cudnn(std::string &why) {
  static std::once_flag once;
  static Cudnn api;
  static std::string failure;
  std::call_once(once, [] {
    const std::string name = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
    std::vector<std::string> candidates;
    if (const char *given = std::getenv("ASPEN_CUDNN_LIBRARY"); given && *given) {
      const std::string path = given;
      candidates.push_back(path);
      candidates.push_back(path + "/" + name);
    }
    for (const std::string &candidate : cudaLibraryCandidates(name, {"CUDNN_HOME", "CUDA_HOME"}))
      candidates.push_back(candidate);
    std::string tried;
    void *handle = openFirstLibrary(candidates, "cuDNN", tried);
    if (!handle) {
      failure = "cannot open " + name + " (" + tried + "); set ASPEN_CUDNN_LIBRARY to it";
      return;
    }
#define ASPEN_CUDNN_RESOLVE(fn) resolveSymbol(handle, api.fn, #fn, name, failure);
    ASPEN_CUDNN_FUNCTIONS(ASPEN_CUDNN_RESOLVE)
#undef ASPEN_CUDNN_RESOLVE
    if (failure.empty() && api.cudnnGetVersion() / 10000 != CUDNN_MAJOR)
      failure = name + " reports version " + std::to_string(api.cudnnGetVersion()) +
                "; Aspen was built against cuDNN " + std::to_string(CUDNN_MAJOR);
  });
  why = failure;
  return failure.empty() ? &api : nullptr;
}

// A cuDNN failure during planning: the reason the call cannot take cuDNN.
struct CudnnRefusal {
  std::string why;
};

void cudnnCheck(const Cudnn &api, cudnnStatus_t status, const char *call) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw CudnnRefusal{std::string(call) + ": " + api.cudnnGetErrorString(status)};
}

void cudnnRun(const Cudnn &api, cudnnStatus_t status, const char *call, const std::string &what) {
  if (status != CUDNN_STATUS_SUCCESS)
    throw runtime_error(what + ": " + call + " failed: " + api.cudnnGetErrorString(status));
}

constexpr unsigned kThreads = 256;
constexpr std::uint64_t kMaxBlocks = 65536;
constexpr std::uint64_t kAlign = 256;

std::uint64_t alignUp(std::uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

unsigned blocksFor(std::uint64_t n) {
  return unsigned(std::clamp<std::uint64_t>((n + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

void *pointer(std::uint64_t address) { return reinterpret_cast<void *>(std::uintptr_t(address)); }

const float kZero = 0.0f, kOne = 1.0f;

// One call's sizes: B images, G groups, Ci and Co channels a group, F input and P output
// elements a channel, T taps, K = Ci * T rows of an image's columns a group.
struct Sizes {
  std::uint64_t B = 0, G = 0, Ci = 0, Co = 0, F = 1, P = 1, T = 1, K = 0;
  Sizes() = default;
  explicit Sizes(const program::ConvGeometry &g)
      : B(g.batch), G(g.groups), Ci(g.inChans), Co(g.outChans) {
    for (std::size_t d = 0; d < g.inputField.size(); ++d)
      F *= g.inputField[d], P *= g.outputField[d], T *= g.taps[d];
    K = Ci * T;
  }
  bool empty() const { return B * G * Co * P * K == 0; }
};

} // namespace

struct CudaConvKernels::Impl {
  struct Call {
    KernelKind kind = KernelKind::ConvForward;
    std::string what, how;
    Sizes sizes;
    bool noop = false; // accumulating nothing
    Type dataType = FLOAT, outType = FLOAT; // in / weights; out (ConvForward) or the rest
    bool accumulate = false;
    std::uint64_t ops[4] = {}; // operand addresses in table order (0: absent)
    std::uint64_t zeroBytes = 0; // > 0: nothing to multiply; the written operand gets zeros
    // cuDNN
    bool useCudnn = false;
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    int algo = 0;
    std::uint64_t cudnnWorkspace = 0;
    // im2col + cuBLASLt
    std::unique_ptr<CudaGemmPlan> gemm;
    DeviceBuffer table; // offsets (forward, filter) or readers (backward data)
    std::uint64_t imagesAPass = 1, columnBytes = 0; // one image's columns
    // scratch: deltas before they are applied (ConvBackwardFilter), at this workspace offset
    std::uint64_t deltasOffset = 0;
    bool deltasInScratch = false;
  };
  const Cudnn *dnn = nullptr;
  cudnnHandle_t handle = nullptr;
  std::unique_ptr<CudaBlasLt> blas;
  cudaKernel_t im2col = nullptr, col2im = nullptr, update = nullptr;
  DeviceBuffer workspace;
  std::vector<Call> calls; // by kernel index

  ~Impl() {
    for (Call &c : calls) {
      if (c.x)
        dnn->cudnnDestroyTensorDescriptor(c.x);
      if (c.y)
        dnn->cudnnDestroyTensorDescriptor(c.y);
      if (c.w)
        dnn->cudnnDestroyFilterDescriptor(c.w);
      if (c.conv)
        dnn->cudnnDestroyConvolutionDescriptor(c.conv);
    }
    if (handle)
      dnn->cudnnDestroy(handle);
  }

  void planCudnn(const CompiledKernel &k, Call &call, std::uint64_t bound);
  void planGemm(const CompiledKernel &k, Call &call, std::uint64_t bound,
                const std::function<cudaKernel_t(const char *)> &convKernel);
  void enqueueCudnn(cudaStream_t stream, const Call &c) const;
  void enqueueGemm(cudaStream_t stream, const Call &c, const Sizes &s) const;
  void applyDeltas(cudaStream_t stream, const Call &c, const void *deltas, bool deltasHalf,
                   std::uint64_t n) const;
  void launch(cudaKernel_t kernel, std::uint64_t n, void **args, cudaStream_t stream) const {
    ASPEN_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void *>(kernel), dim3(blocksFor(n)),
                                      dim3(kThreads), args, 0, stream));
  }
};

namespace {

// Why the call's tables cannot go to cuDNN, or nothing when they can.
std::optional<std::string> cudnnShapeRefusal(const ConvShape &shape) {
  const program::ConvGeometry &g = shape.geometry;
  if (shape.inputType != shape.outputType)
    return "cuDNN takes one element type, and the call has " + shape.inputType.toString() +
           " and " + shape.outputType.toString();
  if (g.inputField.size() > 3)
    return "cuDNN convolves 1 to 3 field dimensions, not " + std::to_string(g.inputField.size());
  const std::optional<ConvStandardForm> form = convStandardForm(g);
  if (!form)
    return std::string("the tables are not an ordinary convolution (input dilation, truncation "
                       "or flips)");
  if (!convSymmetricPaddingFits(*form, g))
    return std::string("its padding differs at the two ends of a dimension by more than cuDNN's "
                       "one padding a dimension allows");
  const Sizes s(g);
  const std::uint64_t elements[] = {s.B * s.G * s.Ci * s.F, s.B * s.G * s.Co * s.P,
                                    s.G * s.Co * s.K};
  for (std::uint64_t n : elements)
    if (n > std::uint64_t(INT_MAX))
      return "an operand of " + std::to_string(n) + " elements is more than cuDNN's int sizes";
  return std::nullopt;
}

} // namespace

void CudaConvKernels::Impl::planCudnn(const CompiledKernel &k, Call &call, std::uint64_t bound) {
  const ConvShape &shape = k.conv;
  const program::ConvGeometry &g = shape.geometry;
  const ConvStandardForm form = *convStandardForm(g);
  const Sizes s(g);
  const Cudnn &api = *dnn;
  // Field dimensions, at least two (a 1-D or 0-D field gets leading ones).
  const std::size_t dims = g.inputField.size(), nd = std::max<std::size_t>(dims, 2),
                    lead = nd - dims;
  std::vector<int> xDims = {int(s.B), int(s.G * s.Ci)}, yDims = {int(s.B), int(s.G * s.Co)},
                   wDims = {int(s.G * s.Co), int(s.Ci)}, pad(nd, 0), stride(nd, 1),
                   dilation(nd, 1);
  for (std::size_t i = 0; i < nd; ++i) {
    const bool real = i >= lead;
    const std::size_t d = i - lead;
    xDims.push_back(real ? int(g.inputField[d]) : 1);
    yDims.push_back(real ? int(g.outputField[d]) : 1);
    wDims.push_back(real ? int(g.taps[d]) : 1);
    if (real)
      pad[i] = int(form.padLower[d]), stride[i] = int(form.stride[d]),
      dilation[i] = int(form.dilation[d]);
  }
  const auto packed = [](const std::vector<int> &dimsOf) {
    std::vector<int> strides(dimsOf.size(), 1);
    for (std::size_t i = dimsOf.size() - 1; i-- > 0;)
      strides[i] = strides[i + 1] * dimsOf[i + 1];
    return strides;
  };
  const cudnnDataType_t type = shape.inputType == HALF ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  cudnnCheck(api, api.cudnnCreateTensorDescriptor(&call.x), "cudnnCreateTensorDescriptor");
  cudnnCheck(api, api.cudnnCreateTensorDescriptor(&call.y), "cudnnCreateTensorDescriptor");
  cudnnCheck(api, api.cudnnCreateFilterDescriptor(&call.w), "cudnnCreateFilterDescriptor");
  cudnnCheck(api, api.cudnnCreateConvolutionDescriptor(&call.conv),
             "cudnnCreateConvolutionDescriptor");
  cudnnCheck(api,
             api.cudnnSetTensorNdDescriptor(call.x, type, int(xDims.size()), xDims.data(),
                                            packed(xDims).data()),
             "cudnnSetTensorNdDescriptor(x)");
  cudnnCheck(api,
             api.cudnnSetTensorNdDescriptor(call.y, type, int(yDims.size()), yDims.data(),
                                            packed(yDims).data()),
             "cudnnSetTensorNdDescriptor(y)");
  cudnnCheck(api,
             api.cudnnSetFilterNdDescriptor(call.w, type, CUDNN_TENSOR_NCHW, int(wDims.size()),
                                            wDims.data()),
             "cudnnSetFilterNdDescriptor");
  cudnnCheck(api,
             api.cudnnSetConvolutionNdDescriptor(call.conv, int(nd), pad.data(), stride.data(),
                                                 dilation.data(), CUDNN_CROSS_CORRELATION,
                                                 CUDNN_DATA_FLOAT),
             "cudnnSetConvolutionNdDescriptor");
  cudnnCheck(api, api.cudnnSetConvolutionGroupCount(call.conv, int(s.G)),
             "cudnnSetConvolutionGroupCount");
  const bool fmaOnly = shape.inputType == FLOAT && !g.allowTF32;
  const cudnnMathType_t math = shape.inputType == HALF ? CUDNN_TENSOR_OP_MATH
                               : fmaOnly               ? CUDNN_FMA_MATH
                                                       : CUDNN_DEFAULT_MATH;
  cudnnCheck(api, api.cudnnSetConvolutionMathType(call.conv, math), "cudnnSetConvolutionMathType");
  std::vector<int> outDims(yDims.size());
  cudnnCheck(api,
             api.cudnnGetConvolutionNdForwardOutputDim(call.conv, call.x, call.w,
                                                       int(outDims.size()), outDims.data()),
             "cudnnGetConvolutionNdForwardOutputDim");
  if (outDims != yDims)
    throw CudnnRefusal{"cuDNN computes another output shape for these parameters"};

  // The ranking, then the first deterministic algorithm that fits (else the first that fits).
  struct Choice {
    int algo;
    cudnnStatus_t status;
    cudnnDeterminism_t determinism;
    cudnnMathType_t math;
  };
  std::vector<Choice> ranked;
  int returned = 0;
  if (k.kind == KernelKind::ConvForward) {
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    cudnnCheck(api,
               api.cudnnGetConvolutionForwardAlgorithm_v7(handle, call.x, call.w, call.conv,
                                                          call.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                                                          &returned, perf),
               "cudnnGetConvolutionForwardAlgorithm_v7");
    for (int i = 0; i < returned; ++i)
      ranked.push_back({int(perf[i].algo), perf[i].status, perf[i].determinism, perf[i].mathType});
  } else if (k.kind == KernelKind::ConvBackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnCheck(api,
               api.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                   handle, call.w, call.y, call.conv, call.x,
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &returned, perf),
               "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    for (int i = 0; i < returned; ++i)
      ranked.push_back({int(perf[i].algo), perf[i].status, perf[i].determinism, perf[i].mathType});
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    cudnnCheck(api,
               api.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                   handle, call.x, call.y, call.conv, call.w,
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &returned, perf),
               "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    for (int i = 0; i < returned; ++i)
      ranked.push_back({int(perf[i].algo), perf[i].status, perf[i].determinism, perf[i].mathType});
  }
  const auto workspaceOf = [&](int algo) -> std::optional<std::uint64_t> {
    std::size_t bytes = 0;
    cudnnStatus_t status;
    if (k.kind == KernelKind::ConvForward)
      status = api.cudnnGetConvolutionForwardWorkspaceSize(
          handle, call.x, call.w, call.conv, call.y, cudnnConvolutionFwdAlgo_t(algo), &bytes);
    else if (k.kind == KernelKind::ConvBackwardData)
      status = api.cudnnGetConvolutionBackwardDataWorkspaceSize(
          handle, call.w, call.y, call.conv, call.x, cudnnConvolutionBwdDataAlgo_t(algo), &bytes);
    else
      status = api.cudnnGetConvolutionBackwardFilterWorkspaceSize(
          handle, call.x, call.y, call.conv, call.w, cudnnConvolutionBwdFilterAlgo_t(algo),
          &bytes);
    if (status != CUDNN_STATUS_SUCCESS)
      return std::nullopt;
    return std::uint64_t(bytes);
  };
  // With a scale, the deltas go to scratch in the weights' type first.
  const bool scaled = k.kind == KernelKind::ConvBackwardFilter && call.ops[3] != 0;
  const std::uint64_t deltasBytes = scaled ? alignUp(s.G * s.Co * s.K * shape.inputType.size()) : 0;
  std::optional<Choice> chosen, fallback;
  std::uint64_t chosenBytes = 0, fallbackBytes = 0;
  for (const Choice &c : ranked) {
    if (c.status != CUDNN_STATUS_SUCCESS)
      continue;
    if (fmaOnly && c.math != CUDNN_FMA_MATH && c.math != CUDNN_DEFAULT_MATH)
      continue;
    const std::optional<std::uint64_t> bytes = workspaceOf(c.algo);
    if (!bytes || alignUp(*bytes) + deltasBytes > bound)
      continue;
    if (!fallback)
      fallback = c, fallbackBytes = *bytes;
    if (c.determinism == CUDNN_DETERMINISTIC) {
      chosen = c, chosenBytes = *bytes;
      break;
    }
  }
  if (!chosen)
    chosen = fallback, chosenBytes = fallbackBytes;
  if (!chosen)
    throw CudnnRefusal{"cuDNN has no algorithm whose workspace fits the call's " +
                       std::to_string(bound) + " bytes"};
  // The ranking's math type, except that FMA-only float stays FMA (cuDNN's default math lets
  // float use TF32 on tensor-core GPUs).
  cudnnCheck(api,
             api.cudnnSetConvolutionMathType(call.conv, fmaOnly ? CUDNN_FMA_MATH : chosen->math),
             "cudnnSetConvolutionMathType");
  call.algo = chosen->algo;
  call.cudnnWorkspace = alignUp(chosenBytes);
  call.deltasInScratch = scaled;
  call.deltasOffset = call.cudnnWorkspace;
  call.useCudnn = true;
  call.how = "cuDNN algorithm " + std::to_string(call.algo) +
             (chosen->determinism == CUDNN_DETERMINISTIC ? " (deterministic)"
                                                          : " (not deterministic)") +
             ", " + std::to_string(chosenBytes) + " bytes of workspace";
}

void CudaConvKernels::Impl::planGemm(const CompiledKernel &k, Call &call, std::uint64_t bound,
                                     const std::function<cudaKernel_t(const char *)> &convKernel) {
  const ConvShape &shape = k.conv;
  const program::ConvGeometry &g = shape.geometry;
  const Sizes s(g);
  if (!blas)
    blas = std::make_unique<CudaBlasLt>();
  if (!im2col) {
    im2col = convKernel("aspen_conv_im2col");
    col2im = convKernel("aspen_conv_col2im");
    update = convKernel("aspen_conv_update");
  }
  const bool backwardData = k.kind == KernelKind::ConvBackwardData;
  std::vector<std::int64_t> table;
  if (backwardData) {
    std::optional<std::vector<std::int64_t>> readers = convInputReaders(g);
    if (!readers)
      throw error(call.what + ": its tables read an input element twice through one tap; the "
                              "CUDA executor's im2col path gathers each element's taps and "
                              "needs one reader a tap (tables made from ConvParams have one)");
    table = std::move(*readers);
  } else {
    table = flatInputOffsets(g);
  }
  call.table = DeviceBuffer(std::max<std::size_t>(table.size(), 1) * sizeof(std::int64_t));
  if (!table.empty())
    ASPEN_CUDA_CHECK(cudaMemcpy(call.table.get(), table.data(),
                                table.size() * sizeof(std::int64_t), cudaMemcpyHostToDevice));

  // Columns are in the data's type, except backward data's, which are float sums.
  const std::uint64_t columnElement = backwardData ? 4 : shape.inputType.size();
  call.columnBytes = s.G * s.K * s.P * columnElement;
  const bool halfWeights = k.kind == KernelKind::ConvBackwardFilter && shape.inputType == HALF;
  call.deltasInScratch = halfWeights;
  const std::uint64_t deltasBytes = halfWeights ? alignUp(s.G * s.Co * s.K * 4) : 0;
  const std::uint64_t perImage = std::max<std::uint64_t>(alignUp(call.columnBytes), 1);
  const std::uint64_t fit = bound > deltasBytes ? (bound - deltasBytes) / perImage : 0;
  call.imagesAPass = std::clamp<std::uint64_t>(fit, 1, std::max<std::uint64_t>(s.B, 1));
  if (fit == 0)
    logger().warn("{}: one image's columns ({} bytes) exceed the call's scratch bound of {} "
                  "bytes; it uses them anyway",
                  call.what, call.columnBytes + deltasBytes, bound);
  call.deltasOffset = alignUp(call.imagesAPass * call.columnBytes);

  // One product an image, batched over the groups.
  const std::uint64_t inBytes = shape.inputType.size(), outBytes = shape.outputType.size();
  GemmLayout l;
  l.G = s.G;
  l.inputType = shape.inputType;
  l.allowTF32 = g.allowTF32;
  std::vector<std::uint64_t> addresses = {call.ops[0], call.ops[1], call.ops[2]};
  std::vector<std::uint64_t> strides = {call.columnBytes};
  switch (k.kind) {
  case KernelKind::ConvForward: // out_i [Co,P] = W [Co,K] . col_i [K,P]
    l.M = s.Co, l.K = s.K, l.N = s.P;
    l.strideA = s.Co * s.K, l.strideB = s.K * s.P, l.strideC = s.Co * s.P;
    l.outputType = shape.outputType;
    strides.push_back(s.G * s.Ci * s.F * inBytes);
    strides.push_back(s.G * s.Co * s.P * outBytes);
    break;
  case KernelKind::ConvBackwardData: // dcol_i [K,P] = W^T . dy_i [Co,P]
    l.M = s.K, l.K = s.Co, l.N = s.P, l.transA = true;
    l.strideA = s.Co * s.K, l.strideB = s.Co * s.P, l.strideC = s.K * s.P;
    l.outputType = FLOAT;
    strides.push_back(s.G * s.Co * s.P * inBytes);
    break;
  default: // ConvBackwardFilter: dW [Co,K] += dy_i [Co,P] . col_i^T
    l.M = s.Co, l.K = s.P, l.N = s.K, l.transB = true;
    l.strideA = s.Co * s.P, l.strideB = s.K * s.P, l.strideC = s.Co * s.K;
    l.outputType = halfWeights ? FLOAT : shape.inputType;
    strides.push_back(s.G * s.Co * s.P * inBytes);
    strides.push_back(s.G * s.Ci * s.F * inBytes);
    break;
  }
  l.alignment = 256;
  for (std::uint64_t a : addresses)
    l.alignment = std::min(l.alignment, gemmAlignmentOf(a));
  for (std::uint64_t stride : strides)
    l.alignment = std::min(l.alignment, gemmAlignmentOf(stride));
  call.gemm = std::make_unique<CudaGemmPlan>(*blas, l, call.what + "'s product");
  call.how = "im2col + cuBLASLt, " + std::to_string(call.imagesAPass) + " image" +
             (call.imagesAPass == 1 ? "" : "s") + " a pass";
}

CudaConvKernels::CudaConvKernels(const CompiledGraph &graph, std::uint64_t arenaBase,
                                 CudaConvPath path,
                                 const std::function<cudaKernel_t(const char *)> &convKernel)
    : impl_(std::make_unique<Impl>()) {
  Impl &impl = *impl_;
  impl.calls.resize(graph.kernels.size());
  if (std::none_of(graph.kernels.begin(), graph.kernels.end(),
                   [](const CompiledKernel &k) { return k.isConv(); }))
    return;
  std::string whyNoCudnn = "aspen.cuda.convolutions = gemm";
  if (path != CudaConvPath::Gemm) {
    impl.dnn = cudnn(whyNoCudnn);
    if (impl.dnn) {
      const cudnnStatus_t status = impl.dnn->cudnnCreate(&impl.handle);
      if (status != CUDNN_STATUS_SUCCESS) {
        whyNoCudnn = std::string("cudnnCreate failed: ") + impl.dnn->cudnnGetErrorString(status);
        impl.handle = nullptr;
      }
    }
  }
  std::size_t freeBytes = 0, totalBytes = 0;
  ASPEN_CUDA_CHECK(cudaMemGetInfo(&freeBytes, &totalBytes));
  std::uint64_t workspaceBytes = 0;
  for (std::size_t i = 0; i < graph.kernels.size(); ++i) {
    const CompiledKernel &k = graph.kernels[i];
    if (!k.isConv())
      continue;
    Impl::Call &call = impl.calls[i];
    call.kind = k.kind;
    call.what = std::string("Engine::load: ") + kernelKindName(k.kind) + " '" + k.name + "'";
    call.dataType = k.conv.inputType;
    call.outType = k.conv.outputType;
    call.accumulate = k.conv.accumulate;
    for (std::size_t o = 0; o < k.operands.size() && o < 4; ++o) {
      const DescTemplate &d = k.operands[o];
      call.ops[o] = d.base == DescTemplate::Arena
                        ? arenaBase + graph.buffers.at(d.buffer).offset + d.offset
                        : 0;
    }
    const Sizes s(k.conv.geometry);
    call.sizes = s;
    if (s.empty()) { // nothing to multiply: out, inGrad or (not accumulating) the weights = 0
      const std::uint64_t written =
          k.kind == KernelKind::ConvForward        ? s.B * s.G * s.Co * s.P * call.outType.size()
          : k.kind == KernelKind::ConvBackwardData ? s.B * s.G * s.Ci * s.F * call.dataType.size()
          : call.accumulate                        ? 0
                                                   : s.G * s.Co * s.K * call.dataType.size();
      call.zeroBytes = written;
      call.noop = written == 0;
      call.how = "zeros (nothing to multiply)";
      continue;
    }
    // The call's bound, at most half the memory free now (the calls share one workspace).
    const std::uint64_t bound =
        std::min<std::uint64_t>(k.conv.geometry.workspaceBytes ? k.conv.geometry.workspaceBytes
                                                               : freeBytes / 2,
                                freeBytes / 2);
    std::string why = whyNoCudnn;
    if (impl.handle) {
      if (const std::optional<std::string> refusal = cudnnShapeRefusal(k.conv)) {
        why = *refusal;
      } else {
        try {
          impl.planCudnn(k, call, bound);
        } catch (const CudnnRefusal &r) {
          why = r.why;
        }
      }
    }
    if (!call.useCudnn) {
      if (path == CudaConvPath::Cudnn)
        throw error(call.what + ": aspen.cuda.convolutions = cudnn, and cuDNN cannot run it: " +
                    why);
      impl.planGemm(k, call, bound, convKernel);
      call.how += " (not cuDNN: " + why + ")";
    }
    logger().debug("{}: {}", call.what, call.how);
    const std::uint64_t deltas =
        call.deltasInScratch
            ? alignUp(s.G * s.Co * s.K * (call.useCudnn ? call.dataType.size() : 4))
            : 0;
    workspaceBytes = std::max(workspaceBytes, call.deltasOffset + deltas);
  }
  impl.workspace = DeviceBuffer(std::max<std::uint64_t>(workspaceBytes, 1));
}

CudaConvKernels::~CudaConvKernels() = default;

std::string CudaConvKernels::describe(std::uint32_t index) const {
  return impl_->calls.at(index).how;
}

void CudaConvKernels::Impl::applyDeltas(cudaStream_t stream, const Call &c, const void *deltas,
                                        bool deltasHalf, std::uint64_t n) const {
  unsigned dh = deltasHalf, wh = c.dataType == HALF, acc = c.accumulate;
  const void *d = deltas;
  void *w = pointer(c.ops[2]);
  const float *scale = static_cast<const float *>(pointer(c.ops[3]));
  unsigned long long count = n;
  void *args[] = {&d, &dh, &w, &wh, &scale, &acc, &count};
  launch(update, n, args, stream);
}

void CudaConvKernels::Impl::enqueueCudnn(cudaStream_t stream, const Call &c) const {
  const Cudnn &api = *dnn;
  cudnnRun(api, api.cudnnSetStream(handle, stream), "cudnnSetStream", c.what);
  void *ws = workspace.get();
  const std::size_t wsBytes = c.cudnnWorkspace;
  switch (c.kind) {
  case KernelKind::ConvForward:
    cudnnRun(api,
             api.cudnnConvolutionForward(handle, &kOne, c.x, pointer(c.ops[0]), c.w,
                                         pointer(c.ops[1]), c.conv,
                                         cudnnConvolutionFwdAlgo_t(c.algo), ws, wsBytes, &kZero,
                                         c.y, pointer(c.ops[2])),
             "cudnnConvolutionForward", c.what);
    return;
  case KernelKind::ConvBackwardData:
    cudnnRun(api,
             api.cudnnConvolutionBackwardData(handle, &kOne, c.w, pointer(c.ops[1]), c.y,
                                              pointer(c.ops[0]), c.conv,
                                              cudnnConvolutionBwdDataAlgo_t(c.algo), ws, wsBytes,
                                              &kZero, c.x, pointer(c.ops[2])),
             "cudnnConvolutionBackwardData", c.what);
    return;
  default: {
    // Without a scale straight into the weights (beta 1 accumulates); with one into scratch.
    void *target = c.deltasInScratch ? workspace.get() + c.deltasOffset : pointer(c.ops[2]);
    const float *beta = !c.deltasInScratch && c.accumulate ? &kOne : &kZero;
    cudnnRun(api,
             api.cudnnConvolutionBackwardFilter(handle, &kOne, c.x, pointer(c.ops[1]), c.y,
                                                pointer(c.ops[0]), c.conv,
                                                cudnnConvolutionBwdFilterAlgo_t(c.algo), ws,
                                                wsBytes, beta, c.w, target),
             "cudnnConvolutionBackwardFilter", c.what);
    if (c.deltasInScratch)
      applyDeltas(stream, c, target, c.dataType == HALF, c.sizes.G * c.sizes.Co * c.sizes.K);
    return;
  }
  }
}

void CudaConvKernels::Impl::enqueueGemm(cudaStream_t stream, const Call &c, const Sizes &s) const {
  const std::uint64_t inBytes = c.dataType.size();
  std::uint8_t *columns = workspace.get();
  unsigned long long F = s.F, T = s.T, P = s.P;
  const long long *table = reinterpret_cast<const long long *>(c.table.get());
  // Lowers images [b, b + n) of `images` into the columns.
  const auto lower = [&](std::uint64_t images, std::uint64_t b, std::uint64_t n) {
    const void *source = pointer(images + b * s.G * s.Ci * s.F * inBytes);
    void *col = columns;
    unsigned elementBytes = unsigned(inBytes);
    unsigned long long channels = n * s.G * s.Ci;
    void *args[] = {&source, &col, &table, &elementBytes, &channels, &F, &T, &P};
    launch(im2col, channels * s.T * s.P, args, stream);
  };
  const std::uint64_t dyBytes = s.G * s.Co * s.P * inBytes;
  bool first = true;
  for (std::uint64_t b = 0; b < s.B; b += c.imagesAPass) {
    const std::uint64_t n = std::min(c.imagesAPass, s.B - b);
    switch (c.kind) {
    case KernelKind::ConvForward: {
      lower(c.ops[0], b, n);
      const std::uint64_t outImage = s.G * s.Co * s.P * c.outType.size();
      for (std::uint64_t i = 0; i < n; ++i)
        c.gemm->enqueue(stream, pointer(c.ops[1]), columns + i * c.columnBytes,
                        pointer(c.ops[2] + (b + i) * outImage), blas->one(), blas->zero());
      break;
    }
    case KernelKind::ConvBackwardData: {
      for (std::uint64_t i = 0; i < n; ++i)
        c.gemm->enqueue(stream, pointer(c.ops[1]), pointer(c.ops[0] + (b + i) * dyBytes),
                        columns + i * c.columnBytes, blas->one(), blas->zero());
      const void *col = columns;
      void *dx = pointer(c.ops[2] + b * s.G * s.Ci * s.F * inBytes);
      unsigned isHalf = c.dataType == HALF;
      unsigned long long channels = n * s.G * s.Ci;
      void *args[] = {&col, &dx, &table, &isHalf, &channels, &F, &T, &P};
      launch(col2im, channels * s.F, args, stream);
      break;
    }
    default: {
      lower(c.ops[1], b, n);
      void *target = c.deltasInScratch ? workspace.get() + c.deltasOffset : pointer(c.ops[2]);
      const void *alpha = c.deltasInScratch || !c.ops[3] ? blas->one() : pointer(c.ops[3]);
      for (std::uint64_t i = 0; i < n; ++i) {
        const bool overwrite = first && (c.deltasInScratch || !c.accumulate);
        c.gemm->enqueue(stream, pointer(c.ops[0] + (b + i) * dyBytes),
                        columns + i * c.columnBytes, target, alpha,
                        overwrite ? blas->zero() : blas->one());
        first = false;
      }
      break;
    }
    }
  }
  if (c.kind == KernelKind::ConvBackwardFilter && c.deltasInScratch)
    applyDeltas(stream, c, workspace.get() + c.deltasOffset, false, s.G * s.Co * s.K);
}

void CudaConvKernels::enqueue(cudaStream_t stream, std::uint32_t index) const {
  const Impl &impl = *impl_;
  const Impl::Call &c = impl.calls.at(index);
  if (c.zeroBytes) {
    ASPEN_CUDA_CHECK(cudaMemsetAsync(pointer(c.ops[2]), 0, c.zeroBytes, stream));
    return;
  }
  if (c.noop)
    return;
  if (c.useCudnn) {
    impl.enqueueCudnn(stream, c);
    return;
  }
  impl.enqueueGemm(stream, c, c.sizes);
}

} // namespace aspen::detail
