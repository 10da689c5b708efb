// What every benchmark needs: median timing, and running a peer written in Python (NumPy) with
// Debian's /usr/bin/python3.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace aspen::bench {

// The median of `repetitions` timed calls of f, after one untimed call that warms caches.
inline double medianSeconds(unsigned repetitions, const std::function<void()> &f) {
  f();
  std::vector<double> times;
  for (unsigned r = 0; r < std::max(1u, repetitions); ++r) {
    const auto start = std::chrono::steady_clock::now();
    f();
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

// Runs a Python script that prints one number (a time) and returns it; a negative number when
// Python or NumPy is missing (scripts/bench.sh installs them). The script must not contain '.
inline double pythonResult(const std::string &script) {
  const std::string command = "/usr/bin/python3 -c '" + script + "' 2>/dev/null";
  FILE *pipe = popen(command.c_str(), "r");
  if (!pipe)
    return -1;
  double seconds = -1;
  if (std::fscanf(pipe, "%lf", &seconds) != 1)
    seconds = -1;
  pclose(pipe);
  return seconds;
}

} // namespace aspen::bench
