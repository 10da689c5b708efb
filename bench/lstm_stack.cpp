// Times a stack of layers in one call (aspen::nn::lstm::lstmStackFwd and lstmStackBwdWithWU, or
// with --cell gru gru::gruStackFwd and gruStackBwdWithWU (resetAfter), float, on the CPU
// executor) against PyTorch's nn.LSTM / nn.GRU(num_layers = L) and oneDNN's lstm / lbr_gru
// primitive with L layers, on bench_lstm's shapes in the same run: every layer has the same
// weights (I = H), the peers too, and the last layer's output is checked against each peer's
// through bench_lstm's checksum. How it measures is at the top of RnnBench.hpp; the layer is
// stackLayer() in RnnBenchLayers.hpp.
//
// Usage: bench_lstm_stack [--layers L (default 2)] [--cell lstm|gru] and bench_lstm's
// arguments. The schedule is
// the stack's option: --option stackSchedule=layerByLayer times the layers one after another,
// the default (auto) the wavefront where every layer fuses its steps (docs/recurrent.md).
#include "RnnBench.hpp"
#include "RnnBenchLayers.hpp"

#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  std::size_t layers = 2;
  std::string cell = "lstm";
  std::vector<char *> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--layers") == 0 && i + 1 < argc) {
      layers = std::stoul(argv[++i]);
      continue;
    }
    if (std::strcmp(argv[i], "--cell") == 0 && i + 1 < argc) {
      cell = argv[++i];
      continue;
    }
    rest.push_back(argv[i]);
  }
  if (layers < 1 || (cell != "lstm" && cell != "gru")) {
    std::fprintf(stderr, "bench_lstm_stack: --layers must be at least 1 and --cell lstm or gru\n");
    return 2;
  }
  return aspen::bench::rnn::runCpuBenchmark(static_cast<int>(rest.size()), rest.data(),
                                            aspen::bench::rnn::stackLayer(cell, layers));
}
