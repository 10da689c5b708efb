// Many vertices in one compute set: how long building, compiling, loading and running take
// with 100k small vertices (y = a * x + y over 8 elements each), against a plain C++ loop doing
// the same arithmetic.
//   bench_many_vertices [numVertices=100000] [runs=10]
#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace aspen;
using namespace aspen::program;

namespace {

const char *kCodelet = R"(
#include <aspen/Vertex.hpp>
using namespace aspen;
class Axpy : public Vertex {
public:
  Input<Vector<float>> x;
  InOut<Vector<float>> y;
  float a;
  bool compute() {
    for (unsigned i = 0; i < y.size(); ++i)
      y[i] = a * x[i] + y[i];
    return true;
  }
};
)";

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// This process's CPU seconds: building and compiling run on the calling thread alone, so their
// CPU time is what they cost even when other work shares the cores (their wall time is not).
double cpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

} // namespace

int main(int argc, char **argv) {
  const std::size_t numVertices = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 100000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 10;
  const std::size_t perVertex = 8, n = numVertices * perVertex;
  const Target target = Target::createModel("ipu2");
  const unsigned tiles = target.getNumTiles();

  auto start = Clock::now();
  Graph g(target);
  g.addCodeletsFromString(kCodelet, "many_vertices_axpy.cpp");
  const double codeletSeconds = since(start);

  start = Clock::now();
  double cpu = cpuSeconds();
  Tensor x = g.addVariable(FLOAT, {numVertices, perVertex}, "x");
  Tensor y = g.addVariable(FLOAT, {numVertices, perVertex}, "y");
  // Vertices in consecutive blocks per tile, their elements on the same tile.
  TileToTensorMapping mapping(tiles);
  auto tileOf = [&](std::size_t v) { return unsigned(v * tiles / numVertices); };
  for (std::size_t v = 0; v < numVertices;) {
    std::size_t end = v;
    while (end < numVertices && tileOf(end) == tileOf(v))
      ++end;
    mapping[tileOf(v)].emplace_back(v * perVertex, end * perVertex);
    v = end;
  }
  g.setTileMapping(x, mapping);
  g.setTileMapping(y, mapping);
  ComputeSet cs = g.addComputeSet("axpy");
  for (std::size_t v = 0; v < numVertices; ++v) {
    VertexRef vtx = g.addVertex(cs, "Axpy", {{"x", x[v]}, {"y", y[v]}});
    g.setInitialValue(vtx["a"], 0.5f);
    g.setTileMapping(vtx, tileOf(v));
  }
  g.createHostWrite("x", x);
  g.createHostWrite("y", y);
  g.createHostRead("y-read", y);
  const double buildSeconds = since(start), buildCpu = cpuSeconds() - cpu;

  start = Clock::now();
  cpu = cpuSeconds();
  Engine engine(g, Execute(cs));
  const double compileSeconds = since(start), compileCpu = cpuSeconds() - cpu;

  start = Clock::now();
  engine.load(Device::createModelDevice(target));
  const double loadSeconds = since(start);

  std::vector<float> hx(n), hy(n);
  for (std::size_t i = 0; i < n; ++i) {
    hx[i] = float(i % 101) * 0.01f;
    hy[i] = float(i % 7);
  }
  engine.writeTensor("x", hx.data(), hx.data() + n);
  engine.writeTensor("y", hy.data(), hy.data() + n);
  engine.run(); // warm-up
  start = Clock::now();
  for (int r = 0; r < runs; ++r)
    engine.run();
  const double runSeconds = since(start) / runs;

  // The peer: the same arithmetic as one plain loop (runs + 1 times, like the engine).
  std::vector<float> py = hy;
  for (std::size_t i = 0; i < n; ++i)
    py[i] = 0.5f * hx[i] + py[i];
  start = Clock::now();
  for (int r = 0; r < runs; ++r)
    for (std::size_t i = 0; i < n; ++i)
      py[i] = 0.5f * hx[i] + py[i];
  const double loopSeconds = since(start) / runs;

  std::vector<float> result(n);
  engine.readTensor("y-read", result.data(), result.data() + n);
  const bool same = result == py;

  std::printf("many_vertices: %zu vertices x %zu floats on %u tiles\n", numVertices, perVertex, tiles);
  std::printf("  codelet compile   %8.3f s\n", codeletSeconds);
  std::printf("  graph build       %8.3f s (CPU %.3f s)\n", buildSeconds, buildCpu);
  std::printf("  engine compile    %8.3f s (CPU %.3f s)\n", compileSeconds, compileCpu);
  std::printf("  engine load       %8.3f s\n", loadSeconds);
  std::printf("  run (mean of %d)  %8.6f s\n", runs, runSeconds);
  std::printf("  plain C++ loop    %8.6f s\n", loopSeconds);
  std::printf("  run / loop        %8.1fx\n", runSeconds / loopSeconds);
  std::printf("  results %s the plain loop's\n", same ? "match" : "DIFFER from");
  return same ? 0 : 1;
}
