// aspen::nn::lstm's forward (inference, float) on the GPU against cuDNN through PyTorch's CUDA
// nn.LSTM, measured in the same run: T = 50, I = H, H in {256, 512, 1024}, B in {1, 4, 16, 64}.
// The target is to be faster than cuDNN at batch <= 16. Reports ms per forward and cuDNN / Aspen
// (above 1: Aspen faster), with "RESULT bench_gpu_lstm" lines; a forward output that differs from
// cuDNN's exits with status 1. How it measures (repeats, TF32 off, the peer's Python) is at the
// top of GpuRnnBench.hpp, shared with bench_gpu_gru; the layer is lstmLayer() in
// RnnBenchLayers.hpp, as in bench_lstm. Without a GPU it prints "no GPU: skipped" and exits 0.
//
// Usage: bench_gpu_lstm [--max-h N]    (scripts/gpu-check.sh passes --max-h 512)
#include "GpuRnnBench.hpp"
#include "RnnBenchLayers.hpp"

int main(int argc, char **argv) {
  return aspen::bench::rnn::runGpuBenchmark(argc, argv, aspen::bench::rnn::lstmLayer());
}
