// Misuse of fill, zero, iota, pad and the counted loops: the user error, with names and values,
// and a graph that still works afterwards.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/Fill.hpp>
#include <aspen/ops/Iota.hpp>
#include <aspen/ops/Loop.hpp>
#include <aspen/ops/Pad.hpp>
#include <aspen/ops/Zero.hpp>

#include <catch2/catch.hpp>

#include <limits>

using namespace aspen;
using dmtest::requireError;

TEST_CASE("fill rejects values the type cannot hold and unwritable tensors", "[error][fill]") {
  const auto c = dmtest::configs()[1];
  Graph g = dmtest::makeGraph(c);
  Tensor u = dmtest::variable(g, UNSIGNED_INT, {4}, "u");
  Tensor h = dmtest::variable(g, HALF, {4}, "h");
  Tensor i = dmtest::variable(g, INT, {4}, "i");
  program::Sequence prog;
  requireError<type_error>([&] { ops::fill(g, u, prog, -1); }, {"'u'", "-1"});
  requireError<type_error>([&] { ops::fill(g, h, prog, 1e6); }, {"'h'", "half", "infinity"});
  requireError<type_error>([&] { ops::fill(g, i, prog, 0.5f); }, {"'i'", "0.5"});
  requireError<type_error>([&] { ops::fill(g, i, prog, std::numeric_limits<float>::quiet_NaN()); },
                           {"'i'"});
  Tensor k = g.addConstant(INT, {4}, 1, "k");
  g.setTileMapping(k, 0);
  requireError<graph_connection_error>([&] { ops::zero(g, k, prog); }, {"fill", "'k'", "constant"});
  requireError<graph_connection_error>([&] { ops::fill(g, i.broadcast(2, 0), prog, 1); },
                                       {"'i'", "more than once"});
  Tensor unmapped = g.addVariable(FLOAT, {3}, "unmapped");
  requireError<invalid_tile_mapping>([&] { ops::zero(g, unmapped, prog); }, {"unmapped"});
  requireError<shape_error>(
      [&] {
        ops::iota(g, i.reshape({2, 2}), 0, prog);
      },
      {"'i'", "1-D", "{2,2}"});
  requireError<type_error>([&] { ops::iota(g, h, 0, prog); }, {"'h'", "half"});
  requireError<type_error>([&] { ops::iota(g, u, -1, prog); }, {"'u'", "-1"});
  // The graph is still usable.
  ops::fill(g, u, prog, 9u);
  Engine e = dmtest::load(g, prog, c);
  e.run();
  REQUIRE(dmtest::read<unsigned>(e, "u", 4) == std::vector<unsigned>(4, 9u));
}

TEST_CASE("pad rejects bad amounts, values and mappings", "[error][pad]") {
  Graph g(Target::createGeneric(2));
  Tensor t = g.addVariable(FLOAT, {3, 4}, "t");
  g.setTileMapping(t, 1);
  using ops::padding::Type;
  requireError<shape_error>([&] { ops::pad(g, t, {1}, {1, 1}); }, {"'t'", "{3,4}", "1 lower"});
  requireError<index_error>([&] { ops::pad(g, t, {-2, 0}, {-2, 0}); }, {"'t'", "-2", "3 elements"});
  requireError<index_error>([&] { ops::pad(t, 0, 0, 2, Type::EDGE); }, {"dimension 2", "'t'"});
  requireError<index_error>([&] { ops::pad(t, {3, 0}, {0, 0}, Type::REFLECT); }, {"reflect", "3"});
  requireError<index_error>(
      [&] {
        ops::pad(t.slice(0, 0, 1), {0, 1}, {0, 0}, Type::EDGE);
      },
      {"edge", "empty"});
  Tensor v2 = g.addVariable(FLOAT, {2}, "v2"), vi = g.addVariable(INT, {}, "vi");
  requireError<shape_error>([&] { ops::pad(g, t, {1, 0}, {0, 0}, v2); }, {"'v2'", "one element"});
  requireError<type_error>([&] { ops::pad(g, t, {1, 0}, {0, 0}, vi); }, {"'vi'", "int", "float"});
  Tensor i = g.addVariable(UNSIGNED_INT, {2}, "i");
  g.setTileMapping(i, 0);
  requireError<type_error>(
      [&] { ops::pad(g, i, std::vector<std::ptrdiff_t>{1}, std::vector<std::ptrdiff_t>{0}, -5); },
      {"-5"});
  Tensor unmapped = g.addVariable(FLOAT, {2}, "unmapped");
  requireError<invalid_tile_mapping>(
      [&] { ops::pad(g, unmapped, {1}, {0}, 0.0f, ops::padding::MappingMethod::EDGE); },
      {"unmapped"});
  REQUIRE(ops::pad(g, t, {1, 0}, {0, 0}).shape() == std::vector<std::size_t>{4, 4});
}

TEST_CASE("counted loops reject empty ranges, zero steps and bad count tensors", "[error][loop]") {
  Graph g = dmtest::makeGraph(dmtest::configs()[0]);
  const auto body = [](const Tensor &) { return program::Sequence(); };
  requireError<control_program_error>([&] { ops::countedLoop(g, 0, 4, 0, body); }, {"step"});
  requireError<control_program_error>([&] { ops::countedLoop(g, 5, 5, 1, body); },
                                      {"begin (5)", "end (5)"});
  requireError<control_program_error>([&] { ops::countedLoop(g, 0, body); }, {"begin (0)"});
  Tensor fl = g.addVariable(FLOAT, {}, "fl"), in = g.addVariable(INT, {}, "in"),
         un = g.addVariable(UNSIGNED_INT, {}, "un"), in2 = g.addVariable(INT, {2}, "in2");
  for (Tensor t : {fl, in, un, in2})
    g.setTileMapping(t, 0);
  requireError<type_error>([&] { ops::countedForLoop(g, fl, 0, fl, 1, program::Sequence()); },
                           {"'fl'", "float"});
  requireError<type_error>([&] { ops::countedForLoop(g, in, 0, un, 1, program::Sequence()); },
                           {"'in'", "'un'", "same type"});
  requireError<shape_error>([&] { ops::countedForLoop(g, in2, 0, in, 1, program::Sequence()); },
                            {"'in2'", "{2}"});
}
