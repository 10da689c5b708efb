// What the worker processes (cache_worker.cpp, memory_worker.cpp) run to show the process works:
// one vertex of `vertexType` from `codeletFile`, whose InOut field `field` starts at `input`, on
// the CPU executor; returns the field's value after one run.
#pragma once

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>

#include <aspen/Error.hpp>

#include <cstdio>
#include <exception>
#include <string>

namespace aspen::test {

// A worker's main body: its exit code, or 3 after printing "aspen error: <message>" for an
// aspen::error and 4 after "other exception: <message>" for anything else (what the tests read).
template <class Body> int exitCodeOf(Body &&body) {
  try {
    return body();
  } catch (const aspen::error &e) {
    std::printf("aspen error: %s\n", e.what());
    return 3;
  } catch (const std::exception &e) {
    std::printf("other exception: %s\n", e.what());
    return 4;
  }
}

template <class T>
T runOneVertex(const std::string &codeletFile, const std::string &vertexType,
               const std::string &field, Type type, T input) {
  Graph g(Target::createGeneric(2));
  g.addCodelets(codeletFile);
  Tensor x = g.addVariable(type, {}, "x");
  g.setTileMapping(x, 1);
  ComputeSet cs = g.addComputeSet("one");
  VertexRef v = g.addVertex(cs, vertexType, {{field, x}});
  g.setTileMapping(v, 1);
  g.createHostWrite("x", x);
  g.createHostRead("x", x);
  Engine e(g, program::Execute(cs));
  e.load(Device::createModelDevice(g.getTarget()));
  T value = input;
  e.writeTensor("x", &value, &value + 1);
  e.run(0);
  e.readTensor("x", &value, &value + 1);
  return value;
}

} // namespace aspen::test
