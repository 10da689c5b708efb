// How Engine construction grows with the number of gathered edges in one compute set: one vertex
// on one tile whose 2-D input field has `edges` edges, each a 64-element HALF tensor made of 16
// 4-element chunks of one variable in a shuffled order, so that every edge is non-contiguous
// and needs a gather, as the segments of PopLibs' reduce_op tests do. Compiling such a compute
// set must be linear in the edges: the table gives, per size, the time ratio to the previous
// size next to the size ratio and the exponent they imply (1 linear, 2 quadratic), and the same
// from the first size to the last. Each time is of one construction. The engine
// then runs once on the CPU and its sums are checked against the host's.
//   bench_compile_many_edges [edges ... (default 1000 2000 4000 8000)]
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <random>
#include <vector>

using namespace aspen;

namespace {

constexpr std::size_t kChunk = 4, kChunksPerEdge = 16, kEdgeElements = kChunk * kChunksPerEdge;

const char *kCodelet = R"(
#include <aspen/Vertex.hpp>
using namespace aspen;
class SumEdges : public Vertex {
public:
  Vector<Input<Vector<half>>> in;
  Output<Vector<float>> sums;
  bool compute() {
    for (unsigned e = 0; e < in.size(); ++e) {
      float total = 0;
      for (unsigned i = 0; i < in[e].size(); ++i)
        total += float(in[e][i]);
      sums[e] = total;
    }
    return true;
  }
};
)";

struct Result {
  double compileSeconds = 0;
  std::size_t regions = 0;
  bool correct = false;
};

Result measure(std::size_t edges) {
  // One tile with room for the largest size (2 bytes an element, plus a temporary each).
  const Target target = Target::createGeneric(1, 6, std::size_t(1) << 30);
  Graph g(target);
  g.addCodeletsFromString(kCodelet, "compile_many_edges.cpp");
  const std::size_t n = edges * kEdgeElements;
  Tensor in = g.addVariable(HALF, {n}, "in");
  Tensor sums = g.addVariable(FLOAT, {edges}, "sums");
  g.setTileMapping(in, 0);
  g.setTileMapping(sums, 0);
  std::mt19937 rng(1);
  std::vector<std::size_t> order(n / kChunk);
  for (std::size_t c = 0; c < order.size(); ++c)
    order[c] = c;
  std::shuffle(order.begin(), order.end(), rng);
  std::vector<Tensor> chunks;
  chunks.reserve(order.size());
  for (std::size_t c : order)
    chunks.push_back(in.slice(kChunk * c, kChunk * c + kChunk));
  const Tensor shuffled = concat(chunks);
  std::vector<Tensor> edgeTensors;
  Result result;
  for (std::size_t e = 0; e < edges; ++e) {
    edgeTensors.push_back(shuffled.slice(e * kEdgeElements, (e + 1) * kEdgeElements));
    result.regions += edgeTensors.back().numRegions();
  }
  ComputeSet cs = g.addComputeSet("sum edges");
  VertexRef v = g.addVertex(cs, "SumEdges");
  g.connect(v["in"], edgeTensors);
  g.connect(v["sums"], sums);
  g.setTileMapping(v, 0);
  g.createHostWrite("in", in);
  g.createHostRead("sums", sums);

  const auto start = std::chrono::steady_clock::now();
  Engine engine(g, program::Execute(cs));
  result.compileSeconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  std::vector<half> values(n);
  for (std::size_t i = 0; i < n; ++i)
    values[i] = half(int(i % 17) - 8);
  std::vector<float> want(edges, 0.0f), got(edges, -1.0f);
  for (std::size_t e = 0; e < edges; ++e)
    for (std::size_t k = 0; k < kChunksPerEdge; ++k)
      for (std::size_t i = 0; i < kChunk; ++i)
        want[e] += float(values[kChunk * order[e * kChunksPerEdge + k] + i]);
  engine.load(Device::createModelDevice(target));
  engine.writeTensor("in", values.data(), values.data() + n);
  engine.run();
  engine.readTensor("sums", got.data(), got.data() + edges);
  result.correct = got == want;
  return result;
}

} // namespace

int main(int argc, char **argv) {
  std::vector<std::size_t> sizes;
  for (int i = 1; i < argc; ++i)
    sizes.push_back(std::strtoul(argv[i], nullptr, 10));
  if (sizes.empty())
    sizes = {1000, 2000, 4000, 8000};
  measure(std::min<std::size_t>(sizes.front(), 100)); // warm-up: codelet cache, allocator
  fmt::print("compile_many_edges: one vertex, one tile, {}-element HALF edges of {} chunks each\n",
             kEdgeElements, kChunksPerEdge);
  fmt::print("{:>8} {:>9} {:>12} {:>11} {:>11} {:>9} {:>8}\n", "edges", "regions", "compile (s)",
             "size ratio", "time ratio", "exponent", "result");
  bool allCorrect = true;
  double previousSeconds = 0, firstSeconds = 0;
  std::size_t previousEdges = 0, firstEdges = 0;
  for (std::size_t edges : sizes) {
    const Result r = measure(edges);
    allCorrect = allCorrect && r.correct;
    const char *verdict = r.correct ? "ok" : "WRONG";
    if (previousEdges == 0) {
      fmt::print("{:>8} {:>9} {:>12.3f} {:>11} {:>11} {:>9} {:>8}\n", edges, r.regions,
                 r.compileSeconds, "-", "-", "-", verdict);
    } else {
      const double sizeRatio = double(edges) / double(previousEdges);
      const double timeRatio = r.compileSeconds / previousSeconds;
      fmt::print("{:>8} {:>9} {:>12.3f} {:>11.2f} {:>11.2f} {:>9.2f} {:>8}\n", edges, r.regions,
                 r.compileSeconds, sizeRatio, timeRatio,
                 std::log(timeRatio) / std::log(sizeRatio), verdict);
    }
    previousSeconds = r.compileSeconds;
    previousEdges = edges;
    firstSeconds = firstEdges ? firstSeconds : r.compileSeconds;
    firstEdges = firstEdges ? firstEdges : edges;
  }
  if (sizes.size() > 1) // less noisy than the steps between neighbours
    fmt::print("first to last: size ratio {:.2f}, time ratio {:.2f}, exponent {:.2f}\n",
               double(previousEdges) / double(firstEdges), previousSeconds / firstSeconds,
               std::log(previousSeconds / firstSeconds) /
                   std::log(double(previousEdges) / double(firstEdges)));
  return allCorrect ? 0 : 1;
}
