// Kernels (Kernels.hpp): program::Gemm run by the executor's native library, checked
// against a double-precision host product and against the same product planned as vertices
// (linalg::matMul with method "vertices"), with every operand form the compiler must handle:
// whole variables (used in place), transposed and sliced views (gathered and scattered),
// operands sharing bytes with the output, accumulation with a scale tensor, half inputs and
// outputs, groups, a Gemm inside a loop, and an Executable round trip. Sentinel elements around
// a sliced output catch stray writes. On ASPEN_TEST_DEVICE=gpu the same checks run on cuBLASLt.
#include "TestDevice.hpp"
#include "TestRandom.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <sstream>
#include <vector>

using namespace aspen;

namespace {

// Values exactly representable in half, so that half and float runs see the same inputs.
std::vector<float> halfValues(std::size_t n, unsigned seed) {
  std::vector<float> v = test::randomFloats(n, seed);
  for (float &x : v)
    x = float(half(x));
  return v;
}

// c[g] = alpha * a[g] . b[g] + beta * c0[g] in double, row-major blocks.
std::vector<double> reference(std::size_t G, std::size_t M, std::size_t K, std::size_t N,
                              const std::vector<float> &a, const std::vector<float> &b,
                              double alpha = 1, double beta = 0,
                              const std::vector<float> &c0 = {}) {
  std::vector<double> c(G * M * N);
  for (std::size_t g = 0; g < G; ++g)
    for (std::size_t i = 0; i < M; ++i)
      for (std::size_t j = 0; j < N; ++j) {
        double sum = 0;
        for (std::size_t k = 0; k < K; ++k)
          sum += double(a[(g * M + i) * K + k]) * double(b[(g * K + k) * N + j]);
        const std::size_t o = (g * M + i) * N + j;
        c[o] = alpha * sum + (beta != 0 ? beta * double(c0[o]) : 0.0);
      }
  return c;
}

// |x - ref| <= tolerance * (1 + |ref|) everywhere.
void checkClose(const std::vector<float> &x, const std::vector<double> &ref, double tolerance) {
  REQUIRE(x.size() == ref.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i << ": " << x[i] << " against " << ref[i]);
    REQUIRE(std::fabs(double(x[i]) - ref[i]) <= tolerance * (1 + std::fabs(ref[i])));
  }
}

Graph makeGraph(unsigned tiles = 4) {
  Graph g(Target::createGeneric(tiles));
  ops::addCodelets(g);
  linalg::addCodelets(g);
  return g;
}

Tensor variable(Graph &g, Type type, std::vector<std::size_t> shape, const std::string &name) {
  Tensor t = g.addVariable(type, shape, name);
  util::mapTensorLinearly(g, t);
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
  return t;
}

template <class T> void write(Engine &e, const std::string &name, const std::vector<T> &v) {
  e.writeTensor(name, v.data(), v.data() + v.size());
}
template <class T = float> std::vector<T> read(Engine &e, const std::string &name, std::size_t n) {
  std::vector<T> v(n);
  e.readTensor(name + "-read", v.data(), v.data() + n);
  return v;
}

std::vector<float> widen(const std::vector<half> &h) {
  return std::vector<float>(h.begin(), h.end());
}
std::vector<half> narrow(const std::vector<float> &f) {
  return std::vector<half>(f.begin(), f.end());
}

} // namespace

TEST_CASE("Gemm of whole float variables equals the double product and the vertex plan",
          "[correctness][kernel]") {
  const std::size_t M = 37, K = 53, N = 29;
  Graph g = makeGraph();
  Tensor a = variable(g, FLOAT, {M, K}, "a"), b = variable(g, FLOAT, {K, N}, "b");
  Tensor c = variable(g, FLOAT, {M, N}, "c");
  program::Sequence byVertices;
  Tensor v =
      linalg::matMul(g, a, b, byVertices, "v", {{"planConstraints", R"({"method": "vertices"})"}});
  g.createHostRead("v-read", v);
  Engine e(g, {program::Gemm(a, b, c, {}, "gemm"), byVertices});
  e.load(test::deviceFor(g.getTarget()));
  const auto av = test::randomFloats(M * K, 1), bv = test::randomFloats(K * N, 2);
  write(e, "a", av);
  write(e, "b", bv);
  e.run(0);
  e.run(1);
  const auto ref = reference(1, M, K, N, av, bv);
  checkClose(read(e, "c", M * N), ref, 1e-5);
  checkClose(read(e, "v", M * N), ref, 1e-5);
}

TEST_CASE("Gemm gathers transposed and sliced operands and scatters a sliced output",
          "[correctness][kernel]") {
  const std::size_t M = 12, K = 20, N = 9;
  Graph g = makeGraph();
  Tensor at = variable(g, FLOAT, {K, M}, "at");           // a = at^T: not row-major
  Tensor wide = variable(g, FLOAT, {K, 2 * N}, "wide");   // b = every other column
  Tensor big = variable(g, FLOAT, {M + 2, N + 3}, "big"); // c = an inner window
  Tensor a = at.transpose(), b = wide.subSample(2, 1);
  Tensor c = big.slice({1, 2}, {M + 1, N + 2});
  Engine e(g, program::Gemm(a, b, c));
  e.load(test::deviceFor(g.getTarget()));
  const auto atv = test::randomFloats(K * M, 3), widev = test::randomFloats(K * 2 * N, 4);
  const float sentinel = 12345.0f;
  write(e, "at", atv);
  write(e, "wide", widev);
  write(e, "big", std::vector<float>((M + 2) * (N + 3), sentinel));
  e.run();
  std::vector<float> av(M * K), bv(K * N);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t k = 0; k < K; ++k)
      av[i * K + k] = atv[k * M + i];
  for (std::size_t k = 0; k < K; ++k)
    for (std::size_t j = 0; j < N; ++j)
      bv[k * N + j] = widev[k * 2 * N + 2 * j];
  const auto ref = reference(1, M, K, N, av, bv);
  const auto out = read(e, "big", (M + 2) * (N + 3));
  std::vector<float> inside;
  for (std::size_t i = 0; i < M + 2; ++i)
    for (std::size_t j = 0; j < N + 3; ++j) {
      const bool in = i >= 1 && i < M + 1 && j >= 2 && j < N + 2;
      if (in)
        inside.push_back(out[i * (N + 3) + j]);
      else
        REQUIRE(out[i * (N + 3) + j] == sentinel);
    }
  checkClose(inside, ref, 1e-5);
}

TEST_CASE("Gemm accumulates with a scale tensor, also in a loop", "[correctness][kernel]") {
  const std::size_t M = 16, K = 24, N = 8;
  Graph g = makeGraph();
  Tensor a = variable(g, FLOAT, {M, K}, "a"), b = variable(g, FLOAT, {K, N}, "b");
  Tensor c = variable(g, FLOAT, {M, N}, "c"), k = variable(g, FLOAT, {}, "k");
  program::GemmOptions options;
  options.scale = k;
  options.accumulate = true;
  const program::Program gemm = program::Gemm(a, b, c, options);
  Engine e(g, {gemm, program::Repeat(3, gemm)});
  e.load(test::deviceFor(g.getTarget()));
  const auto av = test::randomFloats(M * K, 5), bv = test::randomFloats(K * N, 6),
             cv = test::randomFloats(M * N, 7);
  write(e, "a", av);
  write(e, "b", bv);
  write(e, "c", cv);
  write(e, "k", std::vector<float>{-0.75f});
  e.run(0);
  checkClose(read(e, "c", M * N), reference(1, M, K, N, av, bv, -0.75, 1, cv), 1e-5);
  write(e, "c", cv);
  e.run(1);
  checkClose(read(e, "c", M * N), reference(1, M, K, N, av, bv, 3 * -0.75, 1, cv), 1e-5);
}

TEST_CASE("Gemm whose output is also its input reads the input's old values",
          "[correctness][kernel]") {
  const std::size_t M = 10, K = 10, N = 10;
  Graph g = makeGraph();
  Tensor a = variable(g, FLOAT, {M, K}, "a"), b = variable(g, FLOAT, {K, N}, "b");
  Engine e(g, program::Gemm(a, b, a)); // a = a . b
  e.load(test::deviceFor(g.getTarget()));
  const auto av = test::randomFloats(M * K, 8), bv = test::randomFloats(K * N, 9);
  write(e, "a", av);
  write(e, "b", bv);
  e.run();
  checkClose(read(e, "a", M * N), reference(1, M, K, N, av, bv), 1e-5);
}

TEST_CASE("Gemm of grouped half inputs to float and half outputs", "[correctness][kernel]") {
  const std::size_t G = 3, M = 8, K = 40, N = 16;
  Graph g = makeGraph();
  Tensor a = variable(g, HALF, {G, M, K}, "a"), b = variable(g, HALF, {G, K, N}, "b");
  Tensor cf = variable(g, FLOAT, {G, M, N}, "cf"), ch = variable(g, HALF, {G, M, N}, "ch");
  Engine e(g, program::Sequence{program::Gemm(a, b, cf), program::Gemm(a, b, ch)});
  e.load(test::deviceFor(g.getTarget()));
  const auto av = halfValues(G * M * K, 10), bv = halfValues(G * K * N, 11);
  write(e, "a", narrow(av));
  write(e, "b", narrow(bv));
  e.run();
  const auto ref = reference(G, M, K, N, av, bv);
  // Float accumulation of exact half products: float rounding only.
  checkClose(read(e, "cf", G * M * N), ref, 1e-5);
  // One rounding to half at the end: half an ulp of half (2^-11 relative).
  checkClose(widen(read<half>(e, "ch", G * M * N)), ref, 1.0 / 1024);
}

TEST_CASE("a Gemm survives Executable serialisation", "[correctness][kernel][executable]") {
  const std::size_t M = 5, K = 7, N = 3;
  std::stringstream bytes;
  {
    Graph g = makeGraph();
    Tensor at = variable(g, FLOAT, {K, M}, "at"), b = variable(g, FLOAT, {K, N}, "b");
    Tensor c = variable(g, FLOAT, {M, N}, "c");
    compileGraph(g, {program::Gemm(at.transpose(), b, c)}).serialize(bytes);
  }
  Engine e(Executable::deserialize(bytes));
  e.load(test::deviceFor(Target::createGeneric(4)));
  const auto atv = test::randomFloats(K * M, 12), bv = test::randomFloats(K * N, 13);
  write(e, "at", atv);
  write(e, "b", bv);
  e.run();
  std::vector<float> av(M * K);
  for (std::size_t i = 0; i < M; ++i)
    for (std::size_t k = 0; k < K; ++k)
      av[i * K + k] = atv[k * M + i];
  checkClose(read(e, "c", M * N), reference(1, M, K, N, av, bv), 1e-5);
}

TEST_CASE("matMul with a library plan equals matMul with a vertex plan",
          "[correctness][kernel][matmul]") {
  // matMul, matMulAcc and grouped products on the ipu2 model, where a large product plans as a
  // kernel and a small one as vertices; both pinned both ways and compared with the
  // double product.
  const std::size_t M = 64, K = 96, N = 48;
  for (const char *method : {"library", "vertices"}) {
    INFO("method " << method);
    Graph g(Target::createModel("ipu2", 16));
    ops::addCodelets(g);
    linalg::addCodelets(g);
    const OptionFlags options{{"planConstraints", std::string(R"({"method": ")") + method + "\"}"}};
    const linalg::MatMulPlan plan =
        linalg::planMatMul(g.getTarget(), {FLOAT, FLOAT, {M, K}, {K, N}}, options);
    REQUIRE(linalg::toString(plan.method) == std::string(method));
    Tensor a = linalg::createMatMulInputLHS(g, FLOAT, {M, K}, {K, N}, "a", options);
    Tensor b = linalg::createMatMulInputRHS(g, FLOAT, {M, K}, {K, N}, "b", options);
    program::Sequence prog;
    Tensor c = linalg::matMul(g, a, b, prog, "c", options);
    linalg::matMulAcc(g, c, 0.5f, a, b, prog, "acc", options);
    for (auto [name, t] : {std::pair{"a", a}, std::pair{"b", b}})
      g.createHostWrite(name, t);
    g.createHostRead("c-read", c);
    Engine e(g, prog);
    e.load(test::deviceFor(g.getTarget()));
    const auto av = test::randomFloats(M * K, 14), bv = test::randomFloats(K * N, 15);
    write(e, "a", av);
    write(e, "b", bv);
    e.run();
    checkClose(read(e, "c", M * N), reference(1, M, K, N, av, bv, 1.5), 1e-5);
  }
}

TEST_CASE("a Gemm split over more executor threads than OpenBLAS runs equals the double product",
          "[correctness][kernel]") {
  // With more executor threads than OpenBLAS's own, the CPU executor calls OpenBLAS once per
  // thread on a slice of c: by rows when M >= N, by columns otherwise (uneven slices included).
  struct Case {
    std::size_t M, K, N;
    const char *threads;
  };
  for (const Case &c : {Case{301, 64, 20, "3"}, Case{3, 512, 701, "5"}, Case{64, 256, 64, "8"}}) {
    INFO(c.M << "x" << c.K << "x" << c.N << " on " << c.threads << " threads");
    Graph g = makeGraph();
    Tensor a = variable(g, FLOAT, {c.M, c.K}, "a"), b = variable(g, FLOAT, {c.K, c.N}, "b");
    Tensor out = variable(g, FLOAT, {c.M, c.N}, "c");
    Engine e(g, program::Gemm(a, b, out), {{"aspen.cpu.threads", c.threads}});
    e.load(test::deviceFor(g.getTarget()));
    const auto av = test::randomFloats(c.M * c.K, 16), bv = test::randomFloats(c.K * c.N, 17);
    write(e, "a", av);
    write(e, "b", bv);
    e.run();
    checkClose(read(e, "c", c.M * c.N), reference(1, c.M, c.K, c.N, av, bv), 1e-5);
  }
}

TEST_CASE("a one-row Gemm (a vector times a matrix) equals the double product",
          "[correctness][kernel]") {
  // One row of a is an sgemv on the CPU executor: whole, split over columns when the executor
  // has more threads than OpenBLAS, and accumulating with a scale. c starts as NaN where the
  // product overwrites it, so a result that read the old c would show.
  const std::size_t K = 400, N = 701; // 280,400 MACs: enough to split over threads
  for (const char *threads : {"1", "3"}) {
    for (bool accumulate : {false, true}) {
      INFO(threads << " threads, accumulate " << accumulate);
      Graph g = makeGraph();
      Tensor a = variable(g, FLOAT, {1, K}, "a"), b = variable(g, FLOAT, {K, N}, "b");
      Tensor out = variable(g, FLOAT, {1, N}, "c"), k = variable(g, FLOAT, {}, "k");
      program::GemmOptions options;
      if (accumulate) {
        options.scale = k;
        options.accumulate = true;
      }
      Engine e(g, program::Gemm(a, b, out, options), {{"aspen.cpu.threads", threads}});
      e.load(test::deviceFor(g.getTarget()));
      const auto av = test::randomFloats(K, 21), bv = test::randomFloats(K * N, 22);
      const auto cv = accumulate ? test::randomFloats(N, 23)
                                 : std::vector<float>(N, std::numeric_limits<float>::quiet_NaN());
      write(e, "a", av);
      write(e, "b", bv);
      write(e, "c", cv);
      write(e, "k", std::vector<float>{0.5f});
      e.run();
      const auto ref = accumulate ? reference(1, 1, K, N, av, bv, 0.5, 1, cv)
                                  : reference(1, 1, K, N, av, bv);
      checkClose(read(e, "c", N), ref, 1e-5);
    }
  }
}
