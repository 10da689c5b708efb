// A small harness for the aspen::nn basics tests: a graph on a chosen target with the nn
// codelets, host tensors kept as doubles and converted to and from the device type, and runs
// with a chosen CPU thread count. Also the targets every operation is checked on.
#pragma once

#include "TestDevice.hpp"

#include <aspen/Engine.hpp>
#include <aspen/Graph.hpp>
#include <aspen/HalfFloat.hpp>
#include <aspen/nn/Codelets.hpp>
#include <aspen/util/TileMapping.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace nntest {

using namespace aspen;
using Shape = std::vector<std::size_t>;
using Values = std::vector<double>;

// 1 tile, 7 tiles and the 1472 tiles of an IPU-like model.
inline std::vector<std::pair<std::string, Target>> targets() {
  return {{"1 tile", Target::createGeneric(1)},
          {"7 tiles", Target::createGeneric(7)},
          {"ipu2", Target::createModel("ipu2")}};
}

// v as stored in `type` (half rounds, integers truncate), back as a double.
inline double roundTo(Type type, double v) {
  if (type == HALF)
    return double(float(half(float(v))));
  if (type == FLOAT)
    return double(float(v));
  if (type == INT)
    return double(static_cast<std::int32_t>(v));
  return double(static_cast<std::uint32_t>(static_cast<std::int64_t>(v)));
}

inline Values roundAll(Type type, Values v) {
  for (double &x : v)
    x = roundTo(type, x);
  return v;
}

template <class T> std::vector<T> convert(const Values &v) {
  std::vector<T> out;
  for (double x : v) {
    if constexpr (std::is_same_v<T, half>)
      out.push_back(half(float(x)));
    else if constexpr (std::is_same_v<T, std::uint32_t>)
      out.push_back(static_cast<std::uint32_t>(static_cast<std::int64_t>(x)));
    else
      out.push_back(static_cast<T>(x));
  }
  return out;
}

template <class T> Values widen(const std::vector<T> &v) {
  Values out;
  for (const T &x : v)
    out.push_back(double(x));
  return out;
}

class Harness {
public:
  explicit Harness(const Target &target) : graph(target) { nn::addCodelets(graph); }

  // A variable written from the host before each run. spread: one element per tile where there
  // are enough tiles (rows then straddle tiles); otherwise the default linear mapping.
  Tensor input(Type type, const Shape &shape, const std::string &name, const Values &data,
               bool spread = true) {
    Tensor t = graph.addVariable(type, shape, name);
    if (spread)
      util::mapTensorLinearly(graph, t, 1, 1);
    else
      util::mapTensorLinearly(graph, t);
    graph.createHostWrite(name, t);
    inputs_[name] = {type, data};
    return t;
  }
  void output(const std::string &name, const Tensor &t) {
    graph.createHostRead(name, t);
    outputs_[name] = t;
  }

  // Builds an engine with `threads` CPU threads, writes the inputs, runs `runs` times and
  // returns every output read back as doubles.
  std::map<std::string, Values> run(unsigned threads, unsigned runs = 1) {
    Engine e(graph, prog, {{"aspen.cpu.threads", std::to_string(threads)},
                           {"aspen.cpu.inlineElements", "0"}});
    e.load(aspen::test::deviceFor(graph.getTarget()));
    for (const auto &[name, in] : inputs_)
      write(e, name, in.first, in.second);
    for (unsigned i = 0; i < runs; ++i)
      e.run();
    std::map<std::string, Values> results;
    for (const auto &[name, t] : outputs_)
      results[name] = read(e, name, t.elementType(), t.numElements());
    return results;
  }

  Graph graph;
  program::Sequence prog;

  // v written to the host stream `name` as `type` (converted), and n values read back widened.
  static void write(Engine &e, const std::string &name, Type type, const Values &v) {
    if (type == HALF)
      writeAs<half>(e, name, v);
    else if (type == FLOAT)
      writeAs<float>(e, name, v);
    else if (type == INT)
      writeAs<std::int32_t>(e, name, v);
    else
      writeAs<std::uint32_t>(e, name, v);
  }
  template <class T> static void writeAs(Engine &e, const std::string &name, const Values &v) {
    const std::vector<T> data = convert<T>(v);
    e.writeTensor(name, data.data(), data.data() + data.size());
  }
  static Values read(Engine &e, const std::string &name, Type type, std::size_t n) {
    if (type == HALF)
      return readAs<half>(e, name, n);
    if (type == FLOAT)
      return readAs<float>(e, name, n);
    if (type == INT)
      return readAs<std::int32_t>(e, name, n);
    return readAs<std::uint32_t>(e, name, n);
  }
  template <class T> static Values readAs(Engine &e, const std::string &name, std::size_t n) {
    std::vector<T> data(n);
    e.readTensor(name, data.data(), data.data() + n);
    return widen(data);
  }

private:
  std::map<std::string, std::pair<Type, Values>> inputs_;
  std::map<std::string, Tensor> outputs_;
};

// Identical bit for bit (NaN equal to NaN).
inline bool sameValues(const Values &a, const Values &b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(a[i] == b[i] || (std::isnan(a[i]) && std::isnan(b[i]))))
      return false;
  return true;
}

// |got - want| <= atol + rtol |want|, NaN only where NaN is expected, infinities exactly.
inline bool close(double got, double want, double atol, double rtol) {
  if (std::isnan(want))
    return std::isnan(got);
  if (std::isinf(want))
    return got == want;
  return std::fabs(got - want) <= atol + rtol * std::fabs(want);
}

inline void requireClose(const Values &got, const Values &want, double atol, double rtol,
                         const std::string &what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i << ": got " << got[i] << ", want " << want[i]);
    REQUIRE(close(got[i], want[i], atol, rtol));
  }
}

inline Values randomValues(std::size_t n, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Values v(n);
  for (double &x : v)
    x = dist(rng);
  return v;
}

} // namespace nntest
