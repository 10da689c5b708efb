// Times aspen::nn::gru (float) on the CPU executor against PyTorch's nn.GRU and oneDNN's LBR GRU
// primitives on the same shapes in the same run: DeepBench-style H in {256, 512, 1024}, B in
// {1, 4, 16, 64}, T in {25, 50, 100}, I = H. Aspen's layer has resetAfter (and the default
// cellOrder: reset, update, candidate), which is the GRU PyTorch computes and oneDNN's lbr_gru
// (linear-before-reset). Two programs a shape:
//   inference: gruFwd (option inferenceOnly) vs the forward under torch.no_grad() and
//              lbr_gru_forward (forward_inference);
//   training:  gruFwd + gruBwdWithWU (input and weight gradients, gradient of the full output
//              sequence given) vs forward + backward(dy) with x.requires_grad (input and weight
//              gradients) and lbr_gru_forward (forward_training) + lbr_gru_backward (the same).
// The table gives compile seconds, Aspen ms, PyTorch ms and PyTorch / Aspen, oneDNN ms and
// oneDNN / Aspen (above 1: Aspen faster), and "RESULT bench_gru key=value..." lines repeat it for
// scripts; the forward output is checked against each peer's through a checksum (a wrong one: exit
// status 1). oneDNN is linked when libdnnl-dev is found at configure time (its columns say n/a
// otherwise). How it measures (the target, threads, the peers) is at the top of RnnBench.hpp,
// shared with bench_lstm; the layer and its nn.GRU twin are gruLayer() in RnnBenchLayers.hpp, the
// oneDNN side is OneDnnRnnPeer.hpp.
//
// Usage: bench_gru [--quick] [--max-h N] [--shapes LIST] [--mode inference|training|both]
//                  [--reps N] [--option key=value]... [--profile]   (ASPEN_BENCH_QUICK=1 is
//                  --quick)
// The full set takes long on a small machine: scripts/bench.sh passes --max-h 512 by default.
#include "RnnBench.hpp"
#include "RnnBenchLayers.hpp"

int main(int argc, char **argv) {
  return aspen::bench::rnn::runCpuBenchmark(argc, argv, aspen::bench::rnn::gruLayer());
}
