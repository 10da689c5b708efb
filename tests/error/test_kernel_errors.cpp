// Misuse of kernels (program::Gemm) and of the matmul method constraint: the user error
// naming the operands and the rule, at construction or at compilation, and a graph that stays
// usable afterwards.
#include "correctness/test_fill_harness.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Kernels.hpp>
#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using dmtest::requireError;

TEST_CASE("Gemm rejects bad ranks, shapes, types and scales", "[error][kernel]") {
  Graph g(Target::createGeneric(4));
  auto var = [&](Type t, std::vector<std::size_t> shape, const char *name) {
    Tensor x = g.addVariable(t, shape, name);
    g.setTileMapping(x, 0);
    return x;
  };
  Tensor A = var(FLOAT, {2, 3}, "A"), B = var(FLOAT, {3, 5}, "B"), C = var(FLOAT, {2, 5}, "C");
  Tensor B4 = var(FLOAT, {4, 5}, "B4"), C3 = var(FLOAT, {2, 4}, "C3"), V = var(FLOAT, {3}, "V");
  Tensor G = var(FLOAT, {2, 2, 3}, "G"), G3 = var(FLOAT, {3, 3, 5}, "G3");
  Tensor GC = var(FLOAT, {2, 2, 5}, "GC"), I = var(INT, {2, 3}, "I"), H = var(HALF, {3, 5}, "H");
  Tensor CI = var(INT, {2, 5}, "CI"), k2 = var(FLOAT, {2}, "k2"), kh = var(HALF, {}, "kh");
  requireError<shape_error>([&] { program::Gemm(A, B4, C); },
                            {"Gemm", "'A'", "'B4'", "inner dimensions"});
  requireError<shape_error>([&] { program::Gemm(A, B, C3); }, {"'C3'", "a's rows and b's columns"});
  requireError<shape_error>([&] { program::Gemm(V, B, C); }, {"'V'", "rank 2", "rank 3"});
  requireError<shape_error>([&] { program::Gemm(G, B, C); }, {"'G'", "rank"});
  requireError<shape_error>([&] { program::Gemm(G, G3, GC); }, {"'G'", "'G3'", "group"});
  requireError<type_error>([&] { program::Gemm(I, B, C); }, {"'I'", "int", "float", "half"});
  requireError<type_error>([&] { program::Gemm(A, H, C); }, {"'H'", "both be float"});
  requireError<type_error>([&] { program::Gemm(A, B, CI); }, {"'CI'", "c must be float or half"});
  program::GemmOptions scaled;
  scaled.scale = k2;
  requireError<type_error>([&] { program::Gemm(A, B, C, scaled); }, {"scale", "'k2'", "one float"});
  scaled.scale = kh;
  requireError<type_error>([&] { program::Gemm(A, B, C, scaled); }, {"scale", "'kh'", "half"});
  requireError<control_program_error>([&] { program::Gemm(Tensor(), B, C); }, {"Gemm", "invalid"});
}

TEST_CASE("Gemm with a constant, unmapped or foreign operand fails to compile, and the graph "
          "stays usable",
          "[error][kernel]") {
  Graph g(Target::createGeneric(4)), other(Target::createGeneric(4));
  auto var = [](Graph &graph, std::vector<std::size_t> shape, const char *name) {
    Tensor x = graph.addVariable(FLOAT, shape, name);
    graph.setTileMapping(x, 0);
    return x;
  };
  Tensor A = var(g, {2, 3}, "A"), B = var(g, {3, 5}, "B"), C = var(g, {2, 5}, "C");
  Tensor constant = g.addConstant(FLOAT, {2, 5}, 1.0f, "constant");
  g.setTileMapping(constant, 0);
  Tensor unmapped = g.addVariable(FLOAT, {3, 5}, "unmapped");
  Tensor foreign = var(other, {3, 5}, "foreign");
  requireError<control_program_error>([&] { Engine(g, program::Gemm(A, B, constant, {}, "w")); },
                                      {"Gemm 'w' c", "constant"});
  requireError<invalid_tile_mapping>([&] { Engine(g, program::Gemm(A, unmapped, C)); },
                                     {"Gemm", " b", "not mapped"});
  requireError<control_program_error>([&] { Engine(g, program::Gemm(A, foreign, C)); },
                                      {"Gemm", " b", "another graph"});
  Tensor row = var(g, {1, 5}, "row");
  requireError<control_program_error>([&] { Engine(g, program::Gemm(A, B, row.broadcast(2, 0))); },
                                      {"Gemm", " c", "aliased"});
  // Still usable: a good Gemm on the same graph compiles, loads and runs.
  g.createHostWrite("A", A);
  g.createHostWrite("B", B);
  g.createHostRead("C", C);
  Engine e(g, program::Gemm(A, B, C));
  e.load(Device::createModelDevice(g.getTarget()));
  const std::vector<float> a = {1, 2, 3, 4, 5, 6}, b(15, 1.0f);
  e.writeTensor("A", a.data(), a.data() + a.size());
  e.writeTensor("B", b.data(), b.data() + b.size());
  e.run();
  std::vector<float> c(10);
  e.readTensor("C", c.data(), c.data() + c.size());
  REQUIRE(c == std::vector<float>{6, 6, 6, 6, 6, 15, 15, 15, 15, 15});
}

TEST_CASE("matMul's method constraint rejects bad values and impossible pins",
          "[error][kernel][matmul]") {
  const Target ipu2 = Target::createModel("ipu2");
  const linalg::MatMulParams floats{FLOAT, FLOAT, {64, 64}, {64, 64}};
  auto plan = [&](const linalg::MatMulParams &p, const char *constraints) {
    linalg::planMatMul(ipu2, p, {{"planConstraints", constraints}});
  };
  requireError<invalid_option>([&] { plan(floats, R"({"method": "cublas"})"); },
                               {"planConstraints.method", "\"library\"", "\"vertices\""});
  requireError<invalid_option>(
      [&] { plan(floats, R"({"method": "library", "partition": {"m": 2}})"); },
      {"method \"library\"", "partition"});
  requireError<invalid_option>(
      [&] {
        plan({FLOAT, HALF, {64, 64}, {64, 64}}, R"({"method": "library"})");
      },
      {"library", "float inputs", "half output"});
  requireError<graph_memory_allocation_error>(
      [&] {
        linalg::planMatMul(Target::createGeneric(2, 6, 1024), floats,
                           {{"planConstraints", R"({"method": "library"})"}});
      },
      {"kernel", "bytes per tile", "1024"});
}
