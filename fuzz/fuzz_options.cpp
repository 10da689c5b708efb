// Option parsing: the engine's options (with the POPLAR_ENGINE_OPTIONS JSON object from the
// environment), the LSTM and GRU layers' options and the matmul options, on arbitrary keys and
// values. Every set is read by an OptionSpec: a known key with a good value is taken, anything
// else is an invalid_option. Checked: nothing but an aspen::error escapes, and reading one set
// twice gives the same outcome (no state kept between reads).
//
// Input: lines "key=value"; a line starting with '{' is the environment's JSON object instead.
#include "FuzzCommon.hpp"

#include "engine/EngineOptions.hpp"
#include "linalg/MatMulOptions.hpp"
#include "nn/GruInternal.hpp"
#include "nn/LstmInternal.hpp"

#include <aspen/Graph.hpp>
#include <aspen/Target.hpp>

#include <cstdlib>

namespace {

template <class F> void readTwice(F &&read) {
  const bool first = aspen::fuzz::refusedOrDone(read);
  const bool second = aspen::fuzz::refusedOrDone(read);
  aspen::fuzz::check(first == second, "one option set read twice: accepted once, refused once");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size) {
  using namespace aspen;
  fuzz::Bytes in(data, size);
  const unsigned which = in.below(4);
  const std::string_view text = in.rest();

  OptionFlags flags;
  std::string environment;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    const std::string_view line = text.substr(start, end - start);
    start = end + 1;
    if (!line.empty() && line.front() == '{') {
      environment = std::string(line);
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq != std::string_view::npos)
      flags.set(std::string(line.substr(0, eq)), std::string(line.substr(eq + 1)));
  }

  static const Target target = Target::createGeneric(16);
  static const Graph graph(target);
  switch (which) {
  case 0:
    if (environment.empty())
      unsetenv("POPLAR_ENGINE_OPTIONS");
    else
      setenv("POPLAR_ENGINE_OPTIONS", environment.c_str(), 1);
    readTwice([&] { detail::parseEngineOptions(flags); });
    unsetenv("POPLAR_ENGINE_OPTIONS");
    break;
  case 1: {
    const nn::lstm::LstmParams params(FLOAT, 2, 3, {4, 5});
    readTwice([&] { nn::lstm::detail::parseOptions(graph, params, flags, "fuzz lstm"); });
    break;
  }
  case 2: {
    const nn::gru::GruParams params(FLOAT, 2, 3, {4, 5});
    readTwice([&] { nn::gru::detail::parseOptions(graph, params, flags, "fuzz gru"); });
    break;
  }
  default: {
    linalg::MatMulParams params;
    params.aShape = {8, 8};
    params.bShape = {8, 8};
    readTwice([&] { linalg::detail::parseMatMulOptions(flags, params); });
    break;
  }
  }
  return 0;
}
