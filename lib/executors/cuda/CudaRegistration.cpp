// The CUDA executor's entry in the executor registry: it runs GPU devices. Compiled in every
// build, so that its options (aspen.cuda.controlFlow = graph | host, aspen.cuda.waitTimeout =
// seconds a block codelet's wait may poll, default 10) are checked everywhere; the
// executor and the device queries exist only with the CUDA toolkit (ASPEN_HAVE_CUDA).
#include "CudaExecutorOptions.hpp"
#include "support/OptionParsing.hpp"
#include "executors/ExecutorRegistry.hpp"

#if ASPEN_HAVE_CUDA
#include "CudaDevice.hpp"
#include "CudaExecutor.hpp"
#endif

namespace aspen::detail {

RegisteredExecutor cudaRegisteredExecutor() {
  RegisteredExecutor b;
  b.name = "cuda";
  b.optionPrefix = "aspen.cuda.";
  b.devices = {DeviceKind::Gpu};
  b.declareOptions = [](OptionSpec &spec) {
    auto options = std::make_shared<CudaExecutorOptions>();
    spec.enumeration("aspen.cuda.controlFlow", options->graphControlFlow,
                     {{"graph", true}, {"host", false}});
    spec.number("aspen.cuda.waitTimeout", options->waitTimeoutSeconds, 1e-3, 86400);
    spec.enumeration("aspen.cuda.convolutions", options->convolutions,
                     {{"auto", CudaConvPath::Auto},
                      {"cudnn", CudaConvPath::Cudnn},
                      {"gemm", CudaConvPath::Gemm}});
    return std::shared_ptr<void>(options);
  };
#if ASPEN_HAVE_CUDA
  b.built = true;
  b.make = [](const Device &device, const void *options) {
    CudaExecutorOptions o = *static_cast<const CudaExecutorOptions *>(options);
    o.ordinal = device.getGpuOrdinal();
    return makeCudaExecutor(o);
  };
  b.deviceCount = [] { return cudaGpuCount(); };
  b.openDevice = [](unsigned ordinal, const OptionFlags &options) {
    GpuCard card = readGpuCard(ordinal, options);
    return HardwareDevice{std::move(card.name), std::move(card.target)};
  };
#else
  b.built = false;
  b.missing = "this build of Aspen has no CUDA executor; rebuild with the CUDA toolkit "
              "(-DASPEN_CUDA=ON)";
#endif
  return b;
}

} // namespace aspen::detail
