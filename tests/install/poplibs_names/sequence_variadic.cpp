// Poplar's Sequence(p1, p2, ...): programs given without braces run in the order written, as
// PopLibs' tools build them (Sequence(Copy(in, t)), Sequence(Copy(a, b), pool, Copy(...))).
// The constructor is explicit, takes only programs, and leaves copying a Sequence a copy.
#include "ModelGraph.hpp"

#include <poplar/Engine.hpp>
#include <poplar/Graph.hpp>
#include <poplar/Program.hpp>

#include <cstdlib>
#include <iostream>
#include <type_traits>
#include <vector>

using poplar::program::Copy;
using poplar::program::Execute;
using poplar::program::Program;
using poplar::program::Sequence;

static_assert(std::is_constructible_v<Sequence, Copy>);
static_assert(std::is_constructible_v<Sequence, Copy, Sequence, Program, Execute>);
static_assert(!std::is_convertible_v<Copy, Sequence>, "explicit, as one program is not a list");
static_assert(!std::is_constructible_v<Sequence, Copy, int>);
static_assert(std::is_constructible_v<Sequence, const char *>, "still a debug name");

int main() {
  ModelGraph model(2);
  poplar::Graph &graph = model.graph;
  const std::vector<float> one{1, 2, 3, 4}, two{5, 6, 7, 8};
  poplar::Tensor k1 = graph.addConstant(poplar::FLOAT, {4}, one.data(), "k1");
  poplar::Tensor k2 = graph.addConstant(poplar::FLOAT, {4}, two.data(), "k2");
  poplar::Tensor x = graph.addVariable(poplar::FLOAT, {4}, "x");
  poplar::Tensor y = graph.addVariable(poplar::FLOAT, {4}, "y");
  for (const poplar::Tensor &t : {k1, k2, x, y})
    graph.setTileMapping(t, 1);
  graph.createHostRead("x", x);
  graph.createHostRead("y", y);

  // x = k1; y = x; x = k2: in this order only, y ends as k1 and x as k2.
  Sequence first(Copy(k1, x));
  Sequence rest(Copy(x, y), Copy(k2, x));
  Sequence copied(rest); // a copy of the list: adding to it leaves `rest` as it is
  copied.add(Copy(k2, y)); // were `rest` changed too, program 0 would end with y = k2
  poplar::Engine engine(graph, {Sequence(first, rest), copied});
  engine.load(model.device);
  std::vector<float> xs(4), ys(4);
  engine.run(0);
  engine.readTensor("x", xs.data(), xs.data() + 4);
  engine.readTensor("y", ys.data(), ys.data() + 4);
  bool ok = xs == two && ys == one;
  engine.run(1); // y = x, x = k2, then y = k2
  engine.readTensor("y", ys.data(), ys.data() + 4);
  ok = ok && ys == two;
  std::cout << (ok ? "sequence_variadic ok" : "sequence_variadic FAILED") << "\n";
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
