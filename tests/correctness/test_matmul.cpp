// matMul and friends through the public API on the CPU executor, against a double-precision host
// model (test_matmul_harness.hpp): shapes from 1x1x1 to 1025, transposed and strided operands,
// grouped, half and float, every form, every fullyConnectedPass, constrained plans, thread count
// and worker order, empty dimensions, and the rearranged bytes of a transposed operand.
#include "TestPaths.hpp"
#include "correctness/test_matmul_harness.hpp"

#include <cstring>
#include <random>
#include <regex>

using namespace matmultest;

namespace {

void check(const Case &c, unsigned seed = 1, bool halfPartials = false) {
  const Values v = makeValues(c, seed);
  const Result r = run(c, v);
  CHECK(r.sentinelsIntact);
  CHECK(mismatches(c, v, r.out, halfPartials) == 0);
}

std::string describe(const Case &c) {
  return "G" + std::to_string(c.G) + " M" + std::to_string(c.M) + " K" + std::to_string(c.K) +
         " N" + std::to_string(c.N) + " " + c.inType.toString() + "->" + c.outType.toString() +
         (c.transposeA ? " A^T" : "") + (c.strideB ? " B strided" : "");
}

} // namespace

TEST_CASE("matMul of float matrices of many shapes matches the host model",
          "[correctness][matmul]") {
  const std::vector<std::array<std::size_t, 3>> shapes = {
      {1, 1, 1},   {1, 37, 1},   {1, 5, 64},   {64, 5, 1},   {9, 1, 11},
      {7, 13, 11}, {31, 29, 37}, {3, 1025, 5}, {5, 7, 1023}, {64, 96, 80}};
  for (const auto &[M, K, N] : shapes) {
    Case c;
    c.M = M, c.K = K, c.N = N;
    INFO(describe(c));
    check(c, unsigned(M * 31 + K * 7 + N));
  }
}

TEST_CASE("matMul of seeded random shapes and types matches the host model",
          "[correctness][matmul]") {
  std::mt19937 rng(2026);
  for (unsigned i = 0; i < 8; ++i) {
    Case c;
    c.grouped = i % 3 == 2;
    c.G = c.grouped ? 1 + rng() % 4 : 1;
    c.M = 1 + rng() % 40, c.K = 1 + rng() % 90, c.N = 1 + rng() % 40;
    c.inType = i % 2 ? HALF : FLOAT;
    c.outType = i % 4 == 1 ? FLOAT : c.inType;
    c.transposeA = i % 4 == 3, c.strideB = i % 5 == 1;
    c.form = Form(i % 4);
    c.k = -1.25f;
    c.tiles = 1 + rng() % 12;
    INFO(describe(c) << " tiles " << c.tiles << " form " << i % 4);
    check(c, i);
  }
}

TEST_CASE("matMul reads transposed and strided operands", "[correctness][matmul]") {
  for (bool transposeA : {false, true})
    for (bool strideB : {false, true}) {
      Case c;
      c.M = 23, c.K = 41, c.N = 19, c.transposeA = transposeA, c.strideB = strideB;
      INFO(describe(c));
      check(c);
    }
}

TEST_CASE("half matMul with float and half partials and outputs", "[correctness][matmul]") {
  for (Type out : {HALF, FLOAT})
    for (const char *partials : {"float", "half"}) {
      Case c;
      c.inType = HALF, c.outType = out, c.M = 17, c.K = 67, c.N = 24;
      c.options = {{"partialsType", partials}};
      INFO(describe(c) << " partials " << partials);
      check(c, 3, std::string(partials) == "half");
    }
}

TEST_CASE("grouped matMul in every form", "[correctness][matmul]") {
  for (Form form : {Form::Plain, Form::WithOutput, Form::AccFloat, Form::AccTensor}) {
    Case c;
    c.grouped = true, c.G = 3, c.M = 9, c.K = 14, c.N = 6, c.form = form, c.k = -0.75f;
    c.transposeA = form == Form::AccTensor;
    INFO(describe(c) << " form " << int(form));
    check(c, 5);
  }
}

TEST_CASE("matMulWithOutput and matMulAcc write only their output", "[correctness][matmul]") {
  for (Form form : {Form::WithOutput, Form::AccFloat, Form::AccTensor})
    for (Type out : {FLOAT, HALF}) {
      Case c;
      c.M = 12, c.K = 33, c.N = 10, c.form = form, c.k = 2.5f, c.outType = out;
      c.inType = out;
      INFO(describe(c) << " form " << int(form));
      check(c, 9);
    }
}

TEST_CASE("every fullyConnectedPass gives the product", "[correctness][matmul]") {
  for (const char *pass :
       {"NONE", "INFERENCE_FWD", "TRAINING_FWD", "TRAINING_BWD", "TRAINING_WU"}) {
    Case c;
    c.M = 16, c.K = 24, c.N = 20, c.options = {{"fullyConnectedPass", pass}};
    INFO(pass);
    check(c, 11);
  }
}

TEST_CASE("constrained plans (k partitions, serial splits) agree within rounding",
          "[correctness][matmul]") {
  const std::vector<std::string> constraints = {
      R"({"partition": {"m": 1, "n": 1, "k": 4}})",
      R"({"partition": {"m": 2, "n": 1, "k": 3}, "serial": {"k": 2}})",
      R"({"partition": {"m": 1, "n": 2, "k": 1}, "serial": {"m": 2, "n": 2, "k": 3}})",
      R"({"partition": {"m": 2, "n": 2, "k": 2}, "serial": {"m": 2, "k": 2}})"};
  // A transposed output view is gathered and scattered around every step that writes it.
  for (Form form : {Form::Plain, Form::WithOutput, Form::AccFloat})
    for (const std::string &json : constraints) {
      Case c;
      c.M = 21, c.K = 50, c.N = 13, c.form = form, c.k = 0.5f;
      c.transposeOut = form == Form::WithOutput;
      c.options = {{"planConstraints", json}};
      INFO(json << " form " << int(form));
      check(c, 13);
      Case h = c;
      h.inType = HALF, h.outType = HALF;
      h.options.set("partialsType", "half");
      check(h, 13, true);
    }
}

// On a GPU, half products on tiles with full warps run on the tensor cores (mma.sync m16n8k16,
// float accumulators) and everything outside whole 16x8x16 blocks in scalar code; on the CPU,
// the portable loop. One tile of 64 workers (two full warps) takes the whole 37x45 . 45x27
// product: 2 full tile rows and 5 edge rows, 3 full tile columns and 3 edge columns, 2 full k
// slices and a remainder of 13. Small integers make every product and sum exact in float, so
// the result must equal the double model exactly, element for element, on every path.
TEST_CASE("half matMul on 64 workers a tile: tensor-core blocks, edges and k remainder exact",
          "[correctness][matmul]") {
  for (const Form form : {Form::Plain, Form::AccFloat}) {
    Case c;
    c.inType = HALF, c.outType = FLOAT, c.form = form, c.k = 2.0f;
    c.M = 37, c.K = 45, c.N = 27, c.tiles = 1, c.workers = 64;
    c.options = {{"partialsType", "float"},
                 {"planConstraints",
                  R"({"partition": {"m": 1, "n": 1, "k": 1}, "serial": {"m": 1, "n": 1, "k": 1}})"}};
    std::mt19937 rng(29);
    std::uniform_int_distribution<int> small(-3, 3);
    Values v;
    for (std::size_t i = 0; i < c.M * c.K; ++i)
      v.a.push_back(small(rng));
    for (std::size_t i = 0; i < c.K * c.N; ++i)
      v.b.push_back(small(rng));
    for (std::size_t i = 0; i < c.M * c.N; ++i)
      v.c0.push_back(small(rng));
    const Result r = run(c, v);
    CHECK(r.sentinelsIntact);
    REQUIRE(r.out.size() == c.M * c.N);
    std::size_t exact = 0;
    for (std::size_t i = 0; i < c.M; ++i)
      for (std::size_t j = 0; j < c.N; ++j) {
        double sum = 0;
        for (std::size_t kk = 0; kk < c.K; ++kk)
          sum += v.a[i * c.K + kk] * v.b[kk * c.N + j];
        const double expected = form == Form::AccFloat ? v.c0[i * c.N + j] + 2.0 * sum : sum;
        exact += r.out[i * c.N + j] == expected;
        if (r.out[i * c.N + j] != expected)
          UNSCOPED_INFO("[" << i << "," << j << "] = " << r.out[i * c.N + j] << ", expected "
                            << expected);
      }
    INFO("form " << int(form));
    CHECK(exact == c.M * c.N);
  }
}

TEST_CASE("matMul with one-row blocks over serial k steps matches the host model",
          "[correctness][matmul]") {
  // Blocks of one row of A (M = 1, or M split into one-row parts) whose later k steps add to
  // the partials: on the host the one-row product is a BLAS sgemv, whose accumulation (beta)
  // this checks, with B's rows read in place and through a stride.
  for (const std::size_t M : {std::size_t(1), std::size_t(3)})
    for (const bool strideB : {false, true}) {
      Case c;
      c.M = M, c.K = 48, c.N = 20, c.strideB = strideB;
      c.options = {{"planConstraints",
                    M == 1 ? R"({"serial": {"k": 3}})"
                           : R"({"partition": {"m": 3}, "serial": {"k": 4}})"}};
      INFO(describe(c) << " " << c.options.at("planConstraints"));
      check(c, unsigned(40 + M + strideB));
    }
}

TEST_CASE("matMul results do not depend on threads or worker order", "[correctness][matmul]") {
  Case c;
  c.M = 40, c.K = 70, c.N = 30, c.form = Form::AccFloat, c.k = 1.5f;
  c.options = {{"planConstraints", R"({"partition": {"k": 2}, "serial": {"k": 2}})"}};
  for (Type t : {FLOAT, HALF}) {
    c.inType = c.outType = t;
    const Values v = makeValues(c, 17);
    const Result one = run(c, v, {{"aspen.cpu.threads", "1"}});
    const Result four =
        run(c, v, {{"aspen.cpu.threads", "4"},
                 {"aspen.cpu.workerOrder", "reverse"},
                 {"aspen.cpu.inlineElements", "0"}});
    REQUIRE(one.raw.size() == four.raw.size());
    CHECK(std::memcmp(one.raw.data(), four.raw.data(), one.raw.size()) == 0);
  }
}

TEST_CASE("empty dimensions: K = 0 gives zeros, M or N = 0 does nothing", "[correctness][matmul]") {
  Case c;
  c.M = 3, c.K = 0, c.N = 4;
  const Values v = makeValues(c, 1);
  const Result zero = run(c, v);
  CHECK(zero.out == std::vector<double>(12, 0.0));
  c.form = Form::AccFloat; // C += k * (empty sum) leaves C
  const Result acc = run(c, v);
  CHECK(acc.out == v.c0);
  CHECK(acc.sentinelsIntact);
  for (auto [M, N] : {std::pair<std::size_t, std::size_t>{0, 4}, {3, 0}}) {
    Case e;
    e.M = M, e.K = 5, e.N = N, e.form = Form::WithOutput;
    const Result r = run(e, makeValues(e, 1));
    CHECK(r.out.empty());
    CHECK(r.sentinelsIntact);
  }
}

TEST_CASE("a transposed operand's gather shows as rearranged bytes", "[correctness][matmul]") {
  auto rearranged = [](const Result &r) {
    std::smatch m;
    REQUIRE(std::regex_search(r.profile, m, std::regex("Rearrangement bytes moved: (\\d+)")));
    return std::stoull(m[1]);
  };
  Case c;
  c.M = 8, c.K = 16, c.N = 8;
  c.options = {{"planConstraints", R"({"partition": {"m": 1, "n": 1, "k": 1}})"}};
  CHECK(rearranged(run(c, makeValues(c, 1))) == 0);
  c.transposeA = true;
  // A's rows are columns of its storage: every element of A is gathered once.
  CHECK(rearranged(run(c, makeValues(c, 1))) == 8 * 16 * 4);
}

TEST_CASE("tensors from createMatMulInput*/Output feed matMul without rearrangement",
          "[correctness][matmul]") {
  const Target target = Target::createGeneric(8);
  Graph g(target);
  linalg::addCodelets(g);
  const Shape aShape{30, 40}, bShape{40, 20};
  linalg::PlanningCache cache;
  Tensor A = linalg::createMatMulInputLHS(g, FLOAT, aShape, bShape, "A", {}, &cache);
  Tensor B = linalg::createMatMulInputRHS(g, FLOAT, aShape, bShape, "B", {}, &cache);
  program::Sequence prog;
  Tensor Bpre = linalg::preArrangeMatMulInputRHS(g, aShape, B, prog, FLOAT, "pre", {}, &cache);
  Tensor C = linalg::matMul(g, A, Bpre, prog, "C", {{"inputRHSIsPreArranged", "true"}}, &cache);
  REQUIRE(C.shape() == Shape{30, 20});
  CHECK(g.getTileMapping(C).size() == target.getNumTiles());
  g.createHostWrite("A", A);
  g.createHostWrite("B", B);
  g.createHostRead("C", C);
  Engine e(g, prog);
  e.load(aspen::test::deviceFor(target));
  std::vector<float> a(30 * 40), b(40 * 20), c(30 * 20);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = float(int(i % 7) - 3);
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i % 5) - 2) * 0.5f;
  e.writeTensor("A", a.data(), a.data() + a.size());
  e.writeTensor("B", b.data(), b.data() + b.size());
  e.run(0);
  e.readTensor("C", c.data(), c.data() + c.size());
  for (std::size_t i = 0; i < 30; ++i)
    for (std::size_t j = 0; j < 20; ++j) {
      double ref = 0;
      for (std::size_t k = 0; k < 40; ++k)
        ref += double(a[i * 40 + k]) * b[k * 20 + j];
      REQUIRE(c[i * 20 + j] == float(ref)); // small integers and halves: exact
    }
  std::ostringstream profile;
  e.printProfileSummary(profile);
  CHECK_THAT(profile.str(), Catch::Contains("Rearrangement bytes moved: 0"));
}

TEST_CASE("the portable codelet loop and the host BLAS path agree", "[correctness][matmul]") {
  // Compiling the codelet source here (without the build's ASPEN_LINALG_HOST_BLAS flag) gives
  // the portable loop; the precompiled family has the BLAS path when the build found OpenBLAS.
  static const std::string source = aspen::test::codelet("../../codelets/linalg/matmul.cpp");
  auto portable = [](Graph &g) { g.addCodelets(source, CodeletFileType::Auto, "-O2"); };
  for (const char *constraints : {R"({"partition": {"m": 2, "n": 2, "k": 1}})",
                                  R"({"partition": {"k": 3}, "serial": {"m": 2}})"}) {
    Case c;
    c.M = 37, c.K = 129, c.N = 45, c.strideB = true, c.splitA = true; // packed and strided rows
    c.options = {{"planConstraints", constraints}};
    const Values v = makeValues(c, 21);
    const Result blas = run(c, v);
    const Result loop = run(c, v, {}, +portable);
    REQUIRE(blas.out.size() == loop.out.size());
    for (std::size_t i = 0; i < c.M; ++i)
      for (std::size_t j = 0; j < c.N; ++j) {
        double magnitude = 0;
        for (std::size_t k = 0; k < c.K; ++k)
          magnitude += std::fabs(v.a[i * c.K + k] * v.b[k * c.N + j]);
        REQUIRE(std::fabs(blas.out[i * c.N + j] - loop.out[i * c.N + j]) <= 1e-5 * magnitude);
      }
    CHECK(mismatches(c, v, loop.out) == 0);
  }
}

TEST_CASE("linalg::addCodelets alone is enough for every matMul form", "[correctness][matmul]") {
  // K = 0 zeroes the output with ops' fill vertex, and a cast to another output type uses ops'
  // cast: both must work after linalg::addCodelets only (it adds the ops codelets it uses).
  Graph g(Target::createGeneric(2));
  linalg::addCodelets(g);
  program::Sequence prog;
  Tensor a = g.addVariable(FLOAT, {3, 0}, "a");
  Tensor b = g.addVariable(FLOAT, {0, 4}, "b");
  g.setTileMapping(a, 0);
  g.setTileMapping(b, 0);
  Tensor c = linalg::matMul(g, a, b, prog, "emptyK");
  Tensor x = g.addVariable(HALF, {2, 3}, "x");
  Tensor y = g.addVariable(HALF, {3, 2}, "y");
  util::mapTensorLinearly(g, x);
  util::mapTensorLinearly(g, y);
  Tensor z = linalg::matMul(g, x, y, prog, FLOAT, "halfInFloatOut");
  g.createHostRead("c", c);
  g.createHostWrite("x", x);
  g.createHostWrite("y", y);
  g.createHostRead("z", z);
  Engine e(g, prog);
  e.load(aspen::test::deviceFor(g.getTarget()));
  std::vector<float> sentinel(12, 7.0f);
  const std::vector<half> xs{half(1.0f), half(2.0f), half(3.0f), half(4.0f), half(5.0f), half(6.0f)};
  const std::vector<half> ys{half(1.0f), half(0.0f), half(0.0f), half(1.0f), half(1.0f), half(1.0f)};
  e.writeTensor("x", xs.data(), xs.data() + xs.size());
  e.writeTensor("y", ys.data(), ys.data() + ys.size());
  e.run();
  std::vector<float> out(12, 7.0f), zs(4);
  e.readTensor("c", out.data(), out.data() + out.size());
  e.readTensor("z", zs.data(), zs.data() + zs.size());
  CHECK(out == std::vector<float>(12, 0.0f));
  // [[1,2,3],[4,5,6]] . [[1,0],[0,1],[1,1]] = [[4,5],[10,11]], worked out by hand.
  CHECK(zs == std::vector<float>{4, 5, 10, 11});
}
