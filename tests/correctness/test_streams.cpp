// Host streams: single buffers, circular buffers across runs, callbacks with prefetch, and
// device-to-host streams.
#include "correctness/ProgramTestUtils.hpp"

#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <numeric>

using namespace aspen;
using namespace aspen::program;
using namespace progtest;

namespace {
// in (host->device, 4 floats) -> x; out = x * 2 + 1 (Scale vertex); out -> "out" (device->host).
struct StreamGraph {
  Graph g = makeGraph();
  Tensor x = g.addVariable(FLOAT, {4}, "x");
  Tensor y = g.addVariable(FLOAT, {4}, "y");
  DataStream in = g.addHostToDeviceFIFO("in", FLOAT, 4);
  DataStream out = g.addDeviceToHostFIFO("out", FLOAT, 4);
  ComputeSet cs = g.addComputeSet("scale");
  Sequence prog;
  // `transfers` round trips per run.
  explicit StreamGraph(unsigned transfers) {
    g.setTileMapping(x, 0);
    g.setTileMapping(y, 1);
    VertexRef v = g.addVertex(cs, "Scale", {{"in", x}, {"out", y}});
    g.setInitialValue(v["factor"], 2.0f);
    g.setInitialValue(v["offset"], 1.0f);
    g.setTileMapping(v, 1);
    prog = Sequence({Repeat(transfers, Sequence({Copy(in, x), Execute(cs), Copy(y, out)}))});
  }
};
} // namespace

TEST_CASE("a single-buffer stream reuses the buffer for every transfer", "[correctness][streams]") {
  StreamGraph sg(2);
  Engine e(sg.g, sg.prog);
  e.load(deviceFor(sg.g));
  std::vector<float> in = {1, 2, 3, 4}, out(4, -1);
  e.connectStream("in", in.data());
  e.connectStream("out", out.data());
  e.run();
  REQUIRE(out == std::vector<float>{3, 5, 7, 9});
  in = {0, -1, 0.5f, 10};
  e.run();
  REQUIRE(out == std::vector<float>{1, -1, 2, 21});
}

TEST_CASE("a circular stream buffer wraps around and carries its position between runs",
          "[correctness][streams]") {
  // Input: 3 chunks of 4 floats. Program 0 makes 3 transfers, program 1 makes 2: five
  // transfers over two runs read chunks 0 1 2 | 0 1. Output: a ring of 4 chunks, so the fifth
  // result wraps onto chunk 0.
  StreamGraph sg(3);
  Program twoTransfers = Repeat(2, Sequence({Copy(sg.in, sg.x), Execute(sg.cs), Copy(sg.y, sg.out)}));
  Engine e(sg.g, {sg.prog, twoTransfers});
  e.load(deviceFor(sg.g));
  std::vector<float> in(12), out(16, 0);
  std::iota(in.begin(), in.end(), 1.0f);
  const std::vector<float> original = in;
  e.connectStream("in", in.data(), in.data() + in.size());
  e.connectStream("out", out.data(), out.data() + out.size());
  e.run(0);
  // Chunk 0 changes between runs: the fourth transfer must see the new values.
  for (int i = 0; i < 4; ++i)
    in[i] = 100.0f + float(i);
  e.run(1);

  std::vector<float> expected(16, 0);
  const int inputChunk[5] = {0, 1, 2, 0, 1};
  for (int k = 0; k < 5; ++k)
    for (int i = 0; i < 4; ++i) {
      const float value = k >= 3 ? in[inputChunk[k] * 4 + i] : original[inputChunk[k] * 4 + i];
      expected[(k % 4) * 4 + i] = value * 2 + 1;
    }
  REQUIRE(out == expected);
  REQUIRE(out[0] == 2 * (in[4] + 0) + 1); // transfer 5 (chunk 1) overwrote output chunk 0
}

TEST_CASE("a circular buffer must hold whole transfers", "[correctness][streams]") {
  StreamGraph sg(1);
  Engine e(sg.g, sg.prog);
  std::vector<float> in(6);
  REQUIRE_THROWS_AS(e.connectStream("in", in.data(), in.data() + 6), stream_connection_error);
  REQUIRE_THROWS_WITH(e.connectStream("in", in.data(), in.data() + 6),
                      Catch::Contains("24 bytes") && Catch::Contains("16"));
}

namespace {
// Fills transfer k with k*10 + i; prefetches when allowed; records the call order.
class CountingCallback : public StreamCallback {
public:
  explicit CountingCallback(bool allowPrefetch) : allowPrefetch_(allowPrefetch) {}
  Result prefetch(void *p) noexcept override {
    ++prefetches;
    log += 'p';
    if (!allowPrefetch_)
      return Result::NotAvailable;
    fill(p);
    return Result::Success;
  }
  void fetch(void *p) noexcept override {
    ++fetches;
    log += 'f';
    fill(p);
  }
  void complete() noexcept override {
    ++completes;
    log += 'c';
  }
  int prefetches = 0, fetches = 0, completes = 0;
  std::string log;

private:
  void fill(void *p) {
    auto *f = static_cast<float *>(p);
    for (int i = 0; i < 4; ++i)
      f[i] = float(next_ * 10 + i);
    ++next_;
  }
  bool allowPrefetch_;
  int next_ = 0;
};

class RecordingCallback : public StreamCallback {
public:
  Result prefetch(void *) noexcept override { return Result::NotAvailable; }
  void fetch(void *p) noexcept override {
    const auto *f = static_cast<const float *>(p);
    received.insert(received.end(), f, f + 4);
  }
  void complete() noexcept override { ++completes; }
  std::vector<float> received;
  int completes = 0;
};
} // namespace

TEST_CASE("stream callbacks: prefetch replaces fetch, data stays in order",
          "[correctness][streams]") {
  for (bool allowPrefetch : {true, false}) {
    StreamGraph sg(3);
    Engine e(sg.g, sg.prog);
    e.load(deviceFor(sg.g));
    auto in = std::make_unique<CountingCallback>(allowPrefetch);
    auto out = std::make_unique<RecordingCallback>();
    CountingCallback &inRef = *in;
    RecordingCallback &outRef = *out;
    e.connectStreamToCallback("in", std::move(in));
    e.connectStreamToCallback("out", std::move(out));
    e.run();
    e.run();
    // 6 transfers. With prefetch: the first is fetched, each later one was prefetched after the
    // previous transfer completed (and one more prefetch waits for a seventh).
    REQUIRE(inRef.completes == 6);
    REQUIRE(inRef.prefetches == 6);
    REQUIRE(inRef.fetches == (allowPrefetch ? 1 : 6));
    REQUIRE(inRef.log == (allowPrefetch ? "fcpcpcpcpcpcp" : "fcpfcpfcpfcpfcpfcp"));
    std::vector<float> expected;
    for (int k = 0; k < 6; ++k)
      for (int i = 0; i < 4; ++i)
        expected.push_back(float(k * 10 + i) * 2 + 1);
    REQUIRE(outRef.received == expected);
    REQUIRE(outRef.completes == 6);
  }
}

TEST_CASE("a plain function can feed a stream", "[correctness][streams]") {
  StreamGraph sg(1);
  Engine e(sg.g, sg.prog);
  e.load(deviceFor(sg.g));
  int calls = 0;
  e.connectStreamToCallback("in", [&](void *p) {
    auto *f = static_cast<float *>(p);
    for (int i = 0; i < 4; ++i)
      f[i] = float(calls + i);
    ++calls;
  });
  std::vector<float> out(4);
  e.connectStream("out", out.data());
  e.run();
  e.run();
  REQUIRE(calls == 2);
  REQUIRE(out == std::vector<float>{3, 5, 7, 9});
}
