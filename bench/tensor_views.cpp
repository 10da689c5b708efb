// Times Tensor views over a 10M-element variable, and flatRegions of each, against one memcpy
// of the variable's 40 MB: views describe elements, so their cost must not grow with them.
#include "core/TensorRegions.hpp"

#include <aspen/Graph.hpp>

#include <fmt/core.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <vector>

using namespace aspen;

namespace {

using Clock = std::chrono::steady_clock;

// Mean microseconds per call of f, repeated until at least 20 ms have passed.
double microsecondsPerCall(const std::function<void()> &f) {
  const auto start = Clock::now();
  std::size_t calls = 0;
  do {
    f();
    ++calls;
  } while (Clock::now() - start < std::chrono::milliseconds(20));
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
         static_cast<double>(calls);
}

double memcpyMicroseconds(std::size_t bytes) {
  std::vector<char> from(bytes, 1), to(bytes, 0);
  std::memcpy(to.data(), from.data(), bytes); // touch the pages before timing
  return microsecondsPerCall([&] {
    std::memcpy(to.data(), from.data(), bytes);
    from[0] = to[bytes - 1]; // keep the copy observable
  });
}

struct Case {
  const char *name;
  std::function<Tensor()> view;
};

} // namespace

int main() {
  constexpr std::size_t kElements = 10'000'000;
  Graph graph(Target::createGeneric(4));
  const Tensor v = graph.addVariable(FLOAT, {kElements}, "big");
  const Tensor m = v.reshape({1000, 10000});

  const std::vector<Case> cases{
      {"slice", [&] { return v.slice(1000, kElements - 1000); }},
      {"reshape 1000x10000", [&] { return v.reshape({1000, 10000}); }},
      {"transpose twice", [&] { return m.transpose().transpose(); }},
      {"transpose", [&] { return m.transpose(); }},
      {"dimShuffle 3-D and back",
       [&] { return m.reshape({100, 10, 10000}).dimShuffle({2, 0, 1}).dimShuffle({1, 2, 0}); }},
      {"reverse", [&] { return v.reverse(0); }},
      {"flatten of 2-D", [&] { return m.flatten(); }},
      {"subSample by 2", [&] { return v.subSample(2, 0); }},
      {"concat of two slices", [&] { return concat(v.slice(0, kElements / 2), v.slice(kElements / 2, kElements)); }},
      {"column", [&] { return m.slice(5, 6, 1); }},
      {"row block 100 columns", [&] { return m.slice(0, 100, 1); }},
      {"reinterpret half", [&] { return m.reinterpret(HALF); }},
  };

  const double copyUs = memcpyMicroseconds(kElements * sizeof(float));
  fmt::print("memcpy of {} MB: {:.0f} us\n\n", kElements * sizeof(float) / 1'000'000, copyUs);
  fmt::print("{:<26} {:>10} {:>16} {:>10} {:>12}\n", "view", "view us", "flatRegions us",
             "regions", "view/copy");
  for (const Case &c : cases) {
    const double viewUs = microsecondsPerCall([&] { (void)c.view(); });
    const Tensor t = c.view();
    const double regionsUs = microsecondsPerCall([&] { (void)detail::flatRegions(t); });
    fmt::print("{:<26} {:>10.2f} {:>16.2f} {:>10} {:>12.2e}\n", c.name, viewUs, regionsUs,
               t.numRegions(), viewUs / copyUs);
  }
  return 0;
}
