// Misuse of aspen::linalg's matmul builders: the user error naming both operands, their shapes
// and the rule, for ranks, inner dimensions, groups, types, outputs, scales, mapping and options.
#include "correctness/test_fill_harness.hpp"

#include <aspen/linalg/Codelets.hpp>
#include <aspen/linalg/MatMul.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using dmtest::requireError;

TEST_CASE("matMul rejects bad ranks, shapes, types and outputs", "[error][matmul]") {
  Graph g(Target::createGeneric(4));
  linalg::addCodelets(g);
  auto var = [&](Type t, std::vector<std::size_t> shape, const char *name) {
    Tensor x = g.addVariable(t, shape, name);
    g.setTileMapping(x, 0);
    return x;
  };
  Tensor A = var(FLOAT, {2, 3}, "A"), B = var(FLOAT, {4, 5}, "B"), B2 = var(FLOAT, {3, 5}, "B2");
  Tensor V = var(FLOAT, {3}, "V"), H = var(HALF, {3, 5}, "H"), I = var(INT, {2, 3}, "I");
  Tensor G = var(FLOAT, {2, 2, 3}, "G"), G3 = var(FLOAT, {3, 3, 5}, "G3");
  Tensor out = var(FLOAT, {2, 4}, "out"), outI = var(INT, {2, 5}, "outI");
  Tensor unmapped = g.addVariable(FLOAT, {3, 5}, "unmapped");
  Tensor k2 = var(FLOAT, {2}, "k2"), kh = var(HALF, {}, "kh");
  program::Sequence prog;
  requireError<shape_error>([&] { linalg::matMul(g, A, B, prog); },
                            {"'A'", "'B'", "{2,3}", "{4,5}", "inner dimensions", "3", "4"});
  requireError<shape_error>([&] { linalg::matMul(g, V, B2, prog); }, {"'V'", "'B2'", "rank 2"});
  requireError<shape_error>([&] { linalg::matMulGrouped(g, A, B2, prog, FLOAT); },
                            {"'A'", "rank 3"});
  requireError<shape_error>([&] { linalg::matMulGrouped(g, G, G3, prog, FLOAT); },
                            {"'G'", "'G3'", "groups", "2", "3"});
  requireError<type_error>([&] { linalg::matMul(g, A, H, prog); }, {"'A'", "'H'", "half"});
  requireError<type_error>([&] { linalg::matMul(g, I, B2, prog); }, {"'I'", "int"});
  requireError<type_error>([&] { linalg::matMul(g, A, B2, prog, INT); },
                           {"output type", "int", "'A'", "'B2'"});
  requireError<shape_error>([&] { linalg::matMulWithOutput(g, A, B2, out, prog); },
                            {"'out'", "{2,4}", "2x5", "'A'", "'B2'"});
  requireError<type_error>([&] { linalg::matMulWithOutput(g, A, B2, outI, prog); },
                           {"'outI'", "float or half"});
  requireError<type_error>([&] { linalg::matMulAcc(g, out, k2, A, B2, prog); },
                           {"'k2'", "one-element float"});
  requireError<type_error>([&] { linalg::matMulAcc(g, out, kh, A, B2, prog); },
                           {"'kh'", "one-element float"});
  requireError<invalid_tile_mapping>([&] { linalg::matMul(g, A, unmapped, prog); },
                                     {"'unmapped'", "not completely mapped", "0 of 15"});
  requireError<invalid_option>(
      [&] {
        linalg::matMul(g, A, B2, prog, "mm", {{"speed", "1"}});
      },
      {"speed"});
  requireError<invalid_option>(
      [&] {
        linalg::matMul(g, A, B2, prog, "mm", {{"partialsType", "double"}});
      },
      {"partialsType", "double"});
  requireError<invalid_option>(
      [&] {
        linalg::matMul(g, A, B2, prog, "mm", {{"planConstraints", R"({"partition": {"m": 9}})"}});
      },
      {"m"});
  Tensor row = var(FLOAT, {1, 5}, "row");
  requireError<graph_connection_error>(
      [&] { linalg::matMulWithOutput(g, A, B2, row.broadcast(2, 0), prog); },
      {"matMulWithOutput", "'row'", "aliased"});
  // The graph still builds a correct matmul afterwards.
  REQUIRE(linalg::matMul(g, A, B2, prog).shape() == std::vector<std::size_t>{2, 5});
}
