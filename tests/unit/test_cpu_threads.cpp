// Device::cpuThreadCount: ASPEN_CPU_THREADS when set (and checked), else the CPUs this thread may
// run on, which is fewer than the machine's under taskset or a container's CPU set.
#include <aspen/Device.hpp>
#include <aspen/Error.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#ifdef __linux__
#include <sched.h>
#endif

namespace {

// Sets ASPEN_CPU_THREADS (or unsets it) for a scope, then puts back what was there.
class ThreadsVariable {
public:
  explicit ThreadsVariable(const char *value) {
    if (const char *old = std::getenv("ASPEN_CPU_THREADS"))
      old_ = old;
    if (value)
      setenv("ASPEN_CPU_THREADS", value, 1);
    else
      unsetenv("ASPEN_CPU_THREADS");
  }
  ~ThreadsVariable() {
    if (old_)
      setenv("ASPEN_CPU_THREADS", old_->c_str(), 1);
    else
      unsetenv("ASPEN_CPU_THREADS");
  }

private:
  std::optional<std::string> old_;
};

} // namespace

TEST_CASE("cpuThreadCount reads ASPEN_CPU_THREADS and refuses a bad value", "[unit][device]") {
  {
    ThreadsVariable set("3");
    CHECK(aspen::Device::cpuThreadCount() == 3u);
  }
  {
    ThreadsVariable set("1024");
    CHECK(aspen::Device::cpuThreadCount() == 1024u);
  }
  for (const char *bad : {"0", "1025", "-2", "two", "4x", " 4", "+4"}) {
    CAPTURE(bad);
    ThreadsVariable set(bad);
    CHECK_THROWS_AS(aspen::Device::cpuThreadCount(), aspen::invalid_option);
    CHECK_THROWS_WITH(aspen::Device::cpuThreadCount(),
                      Catch::Matchers::Contains("ASPEN_CPU_THREADS='" + std::string(bad) + "'") &&
                          Catch::Matchers::Contains("[1, 1024]"));
  }
}

#ifdef __linux__
TEST_CASE("cpuThreadCount is the CPUs the thread may run on", "[unit][device]") {
  ThreadsVariable unset(nullptr);
  cpu_set_t allowed;
  REQUIRE(sched_getaffinity(0, sizeof allowed, &allowed) == 0);
  CHECK(aspen::Device::cpuThreadCount() == unsigned(CPU_COUNT(&allowed)));
  // Narrowed to one CPU, as `taskset -c N` would: one thread, whatever the machine has.
  int first = 0;
  while (!CPU_ISSET(first, &allowed))
    ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const unsigned narrowed = aspen::Device::cpuThreadCount();
  REQUIRE(sched_setaffinity(0, sizeof allowed, &allowed) == 0);
  CHECK(narrowed == 1u);
}
#endif
