// The CUDA executor's options: plain data, compiled in every build (the registry checks the
// option without the toolkit).
#pragma once

namespace aspen::detail {

// How convolution calls run (aspen.cuda.convolutions, CudaConv.hpp).
enum class CudaConvPath { Auto, Cudnn, Gemm };

struct CudaExecutorOptions {
  unsigned ordinal = 0;
  // Run device-only control-flow subtrees as CUDA graphs (aspen.cuda.controlFlow = graph).
  // Ignored (host-driven, with a warning) when the driver is older than
  // kCudaGraphControlFlowDriverVersion, or when the control kernels (a module of their own) do
  // not compile or load.
  bool graphControlFlow = true;
  // How long one wait of a block codelet (Block::waitUntil, Block::gridSync) polls before it
  // gives up and the launch fails (aspen.cuda.waitTimeout, seconds).
  double waitTimeoutSeconds = 10;
  // aspen.cuda.convolutions = auto | cudnn | gemm.
  CudaConvPath convolutions = CudaConvPath::Auto;
};

} // namespace aspen::detail
