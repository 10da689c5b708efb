// Shared by the data-movement tests (fill, scaledAdd, dynamic slices, pad, loops): the target
// and thread-count configurations every result must be identical on, and host access helpers.
#pragma once

#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/ops/Codelets.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace dmtest {

struct Config {
  std::string name;
  aspen::Target target;
  unsigned threads;
  bool reverseWorkers = false; // MultiVertex workers run last to first
};

// One tile, seven tiles on 1 and 4 threads (workers in reverse order), and the 1472 tiles of
// "ipu2".
inline std::vector<Config> configs() {
  return {{"1 tile, 1 thread", aspen::Target::createGeneric(1), 1},
          {"7 tiles, 1 thread", aspen::Target::createGeneric(7), 1},
          {"7 tiles, 4 threads, workers reversed", aspen::Target::createGeneric(7), 4, true},
          {"ipu2, 4 threads", aspen::Target::createModel("ipu2"), 4}};
}

inline aspen::Graph makeGraph(const Config &c) {
  aspen::Graph g(c.target);
  aspen::ops::addCodelets(g);
  return g;
}

inline aspen::Engine load(aspen::Graph &g, const aspen::program::Program &p, const Config &c) {
  aspen::Engine e(g, p,
                  {{"aspen.cpu.threads", std::to_string(c.threads)},
                   {"aspen.cpu.workerOrder", c.reverseWorkers ? "reverse" : "forward"},
                   {"aspen.cpu.inlineElements", "0"}});
  e.load(aspen::test::deviceFor(g.getTarget()));
  return e;
}

// A variable spread over as many tiles as it has elements (one element per tile at least), with
// host handles `name` (write) and `name-read`.
inline aspen::Tensor variable(aspen::Graph &g, aspen::Type type, std::vector<std::size_t> shape,
                              const std::string &name) {
  aspen::Tensor t = g.addVariable(type, shape, name);
  aspen::util::mapTensorLinearly(g, t, 1, 1);
  g.createHostWrite(name, t);
  g.createHostRead(name + "-read", t);
  return t;
}

template <class T> void write(aspen::Engine &e, const std::string &name, const std::vector<T> &v) {
  e.writeTensor(name, v.data(), v.data() + v.size());
}

template <class T> std::vector<T> read(aspen::Engine &e, const std::string &name, std::size_t n) {
  std::vector<T> v(n);
  e.readTensor(name + "-read", v.data(), v.data() + n);
  return v;
}

template <class T> std::vector<T> randomValues(std::size_t n, unsigned seed, double lo, double hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(n);
  for (auto &x : v)
    x = static_cast<T>(dist(rng));
  return v;
}

// Values as `type` (float, half, int or unsigned int), from and to doubles.
inline void writeAs(aspen::Engine &e, const std::string &name, aspen::Type type,
                    const std::vector<double> &v) {
  if (type == aspen::FLOAT)
    write(e, name, std::vector<float>(v.begin(), v.end()));
  else if (type == aspen::HALF) {
    std::vector<aspen::half> h;
    for (double x : v)
      h.push_back(aspen::half(static_cast<float>(x)));
    write(e, name, h);
  } else if (type == aspen::INT)
    write(e, name, std::vector<int>(v.begin(), v.end()));
  else
    write(e, name, std::vector<unsigned>(v.begin(), v.end()));
}

inline std::vector<double> readAs(aspen::Engine &e, const std::string &name, aspen::Type type,
                                  std::size_t n) {
  std::vector<double> out;
  if (type == aspen::FLOAT)
    for (float x : read<float>(e, name, n))
      out.push_back(x);
  else if (type == aspen::HALF)
    for (aspen::half x : read<aspen::half>(e, name, n))
      out.push_back(static_cast<float>(x));
  else if (type == aspen::INT)
    for (int x : read<int>(e, name, n))
      out.push_back(x);
  else
    for (unsigned x : read<unsigned>(e, name, n))
      out.push_back(x);
  return out;
}

// x as the nearest value of `type` (what the device holds after writeAs).
inline double quantize(double x, aspen::Type type) {
  if (type == aspen::HALF)
    return static_cast<float>(aspen::half(static_cast<float>(x)));
  if (type == aspen::FLOAT)
    return static_cast<float>(x);
  return x;
}

// Equal as numbers, NaN equal to NaN, +0 and -0 distinguished.
inline bool sameValue(double a, double b) {
  if (std::isnan(a) || std::isnan(b))
    return std::isnan(a) && std::isnan(b);
  return a == b && std::signbit(a) == std::signbit(b);
}

// Runs f, which must raise an E whose message contains every one of `parts`.
template <class E, class F> void requireError(F &&f, const std::vector<std::string> &parts) {
  try {
    f();
  } catch (const E &e) {
    const std::string message = e.what();
    INFO("message: " << message);
    for (const auto &p : parts)
      REQUIRE(message.find(p) != std::string::npos);
    return;
  }
  FAIL("no error was raised");
}

} // namespace dmtest
