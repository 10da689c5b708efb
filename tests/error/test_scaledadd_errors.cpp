// Misuse of scaledAddTo / scaledSubtractFrom and of the dynamic slices: the user error, with
// names and values, and a graph that still works afterwards.
#include "correctness/test_fill_harness.hpp"

#include <aspen/ops/DynamicSlice.hpp>
#include <aspen/ops/ScaledAdd.hpp>

#include <catch2/catch.hpp>

using namespace aspen;
using dmtest::requireError;

TEST_CASE("scaledAddTo rejects mismatched shapes, types, scales and options",
          "[error][scaledadd]") {
  const auto c = dmtest::configs()[1];
  Graph g = dmtest::makeGraph(c);
  Tensor A = dmtest::variable(g, FLOAT, {2, 3}, "A");
  Tensor B = dmtest::variable(g, FLOAT, {3, 2}, "B");
  Tensor I = dmtest::variable(g, INT, {2, 3}, "I");
  Tensor U = dmtest::variable(g, UNSIGNED_INT, {2, 3}, "U");
  Tensor v = dmtest::variable(g, FLOAT, {2}, "v");
  Tensor si = dmtest::variable(g, INT, {}, "si");
  Tensor sh = dmtest::variable(g, HALF, {}, "sh");
  Tensor sf = dmtest::variable(g, FLOAT, {1}, "sf");
  program::Sequence prog;
  requireError<shape_error>([&] { ops::scaledAddTo(g, A, B, 1.0f, prog); },
                            {"'A'", "'B'", "{2,3}", "{3,2}"});
  requireError<shape_error>([&] { ops::scaledAddTo(g, A, A, v, prog); },
                            {"'v'", "one element", "{2}"});
  requireError<type_error>([&] { ops::scaledAddTo(g, A, A, si, prog); },
                           {"'si'", "int", "float or half"});
  requireError<type_error>([&] { ops::scaledSubtractFrom(g, A, sf, A, sh, prog); },
                           {"'sf'", "'sh'", "same type"});
  requireError<type_error>([&] { ops::scaledAddTo(g, I, U, 1.0f, prog); }, {"'I'", "'U'", "int"});
  requireError<type_error>([&] { ops::scaledAddTo(g, I, I, 0.5f, prog); }, {"0.5"});
  requireError<invalid_option>(
      [&] {
        ops::scaledAddTo(g, A, A, 1.0f, prog, {}, {{"speed", "1"}});
      },
      {"speed", "optimizeForSpeed"});
  requireError<invalid_option>(
      [&] {
        ops::scaledAddTo(g, A, A, 1.0f, prog, {}, {{"optimizeForSpeed", "maybe"}});
      },
      {"optimizeForSpeed", "maybe"});
  requireError<graph_connection_error>(
      [&] { ops::scaledAddTo(g, v.broadcast(3, 0), v.broadcast(3, 0), 1.0f, prog); },
      {"'v'", "more than once"});
  // The graph is still usable.
  ops::scaledAddTo(g, A, A, 2.0f, prog, "ok", {{"optimizeForSpeed", "false"}});
  Engine e = dmtest::load(g, prog, c);
  dmtest::write(e, "A", std::vector<float>{1, 2, 3, 4, 5, 6});
  e.run();
  REQUIRE(dmtest::read<float>(e, "A", 6) == std::vector<float>{3, 6, 9, 12, 15, 18});
}

TEST_CASE("dynamic slices reject bad dims, sizes, offsets, updates and options",
          "[error][dynslice]") {
  const auto c = dmtest::configs()[1];
  Graph g = dmtest::makeGraph(c);
  Tensor t = dmtest::variable(g, FLOAT, {4, 5}, "t");
  Tensor off = dmtest::variable(g, UNSIGNED_INT, {1}, "off");
  Tensor off2 = dmtest::variable(g, UNSIGNED_INT, {2}, "off2");
  Tensor ioff = dmtest::variable(g, INT, {1}, "ioff");
  Tensor moff = dmtest::variable(g, UNSIGNED_INT, {3, 1}, "moff");
  Tensor s = dmtest::variable(g, FLOAT, {2, 5}, "s");
  Tensor si = dmtest::variable(g, INT, {1, 5}, "si");
  Tensor scale = dmtest::variable(g, FLOAT, {2}, "scale");
  Tensor hscale = dmtest::variable(g, HALF, {}, "hscale");
  program::Sequence prog;
  requireError<index_error>([&] { ops::dynamicSlice(g, t, off, {2}, {1}, prog); },
                            {"dimension 2", "'t'", "{4,5}"});
  requireError<index_error>(
      [&] {
        ops::dynamicSlice(g, t, off2, {0, 0}, {1, 1}, prog);
      },
      {"appears twice"});
  requireError<index_error>([&] { ops::dynamicSlice(g, t, off, {1}, {6}, prog); },
                            {"size 6", "dimension 1", "5"});
  requireError<shape_error>(
      [&] {
        ops::dynamicSlice(g, t, off, {0}, {1, 1}, prog);
      },
      {"same length"});
  requireError<shape_error>([&] { ops::dynamicSlice(g, t, off, {}, {}, prog); }, {"dims is empty"});
  requireError<type_error>([&] { ops::dynamicSlice(g, t, ioff, {0}, {1}, prog); },
                           {"'ioff'", "unsigned int", "int"});
  requireError<shape_error>([&] { ops::dynamicSlice(g, t, off2, {0}, {1}, prog); },
                            {"'off2'", "{1}", "{2}"});
  requireError<shape_error>([&] { ops::dynamicUpdate(g, t, s, off, {0}, {1}, prog); },
                            {"'s'", "{1,5}", "{2,5}"});
  requireError<type_error>([&] { ops::dynamicUpdate(g, t, si, off, {0}, {1}, prog); },
                           {"'si'", "int", "float"});
  requireError<shape_error>([&] { ops::multiSlice(g, t, off, {0}, {1}, prog); },
                            {"'off'", "{1,1}"});
  requireError<invalid_option>(
      [&] {
        ops::multiSlice(g, t, moff, {0}, {1}, prog, {}, {{"usedForUpdate", "true"}});
      },
      {"usedForUpdate"});
  Tensor sm = dmtest::variable(g, FLOAT, {3, 1, 5}, "sm");
  requireError<shape_error>([&] { ops::multiUpdateAdd(g, t, sm, moff, scale, {0}, {1}, prog); },
                            {"'scale'", "one element"});
  requireError<type_error>([&] { ops::multiUpdateAdd(g, t, sm, moff, hscale, {0}, {1}, prog); },
                           {"'hscale'", "half", "float"});
  requireError<shape_error>([&] { ops::multiUpdate(g, t, s, moff, {0}, {1}, prog); },
                            {"'s'", "{3,1,5}"});
  Tensor k = g.addConstant(FLOAT, {4, 5}, 1.0f, "k");
  g.setTileMapping(k, 0);
  requireError<graph_connection_error>([&] { ops::multiUpdate(g, k, sm, moff, {0}, {1}, prog); },
                                       {"'k'", "constant"});
  // The graph is still usable.
  Tensor r = ops::dynamicSlice(g, t, off, {0}, {1}, prog);
  g.createHostRead("r-read", r);
  Engine e = dmtest::load(g, prog, c);
  std::vector<float> tv(20);
  for (int i = 0; i < 20; ++i)
    tv[i] = float(i);
  dmtest::write(e, "t", tv);
  dmtest::write(e, "off", std::vector<unsigned>{3});
  e.run();
  REQUIRE(dmtest::read<float>(e, "r", 5) == std::vector<float>{15, 16, 17, 18, 19});
}
