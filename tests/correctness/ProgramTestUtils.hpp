// Small helpers shared by the program, stream and engine tests.
#pragma once

#include "TestDevice.hpp"
#include "TestPaths.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <string>
#include <vector>

namespace progtest {

inline const std::string kCodelets = aspen::test::codelet("prog_basic.cpp");

// A graph on a small generic target (6 workers a tile) with the test codelets.
inline aspen::Graph makeGraph(unsigned tiles = 4) {
  aspen::Graph g(aspen::Target::createGeneric(tiles));
  g.addCodelets(kCodelets);
  return g;
}

inline aspen::Device deviceFor(const aspen::Graph &g) {
  return aspen::test::deviceFor(g.getTarget());
}

// Host handles for t: a write handle `name` and a read handle `name`-read (a graph's handles
// are unique across writes and reads).
inline void hostAccess(aspen::Graph &g, const std::string &name, const aspen::Tensor &t) {
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
}

// Reads through the read handle that hostAccess made for `name`.
template <class T>
std::vector<T> readBack(aspen::Engine &e, const std::string &name, std::size_t n) {
  std::vector<T> v(n);
  e.readTensor(name + "-read", v.data(), v.data() + n);
  return v;
}

template <class T> void writeIn(aspen::Engine &e, const std::string &handle, const std::vector<T> &v) {
  e.writeTensor(handle, v.data(), v.data() + v.size());
}

// A scalar variable on tile 0 with a host write and read handle of its own name.
inline aspen::Tensor scalar(aspen::Graph &g, aspen::Type type, const std::string &name) {
  aspen::Tensor t = g.addVariable(type, {}, name);
  g.setTileMapping(t, 0);
  hostAccess(g, name, t);
  return t;
}

template <class T>
aspen::Tensor constant(aspen::Graph &g, aspen::Type type, T value, unsigned tile = 0) {
  aspen::Tensor c = g.addConstant(type, {}, value);
  g.setTileMapping(c, tile);
  return c;
}

} // namespace progtest
