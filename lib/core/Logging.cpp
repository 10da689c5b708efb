#include "Logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace aspen::detail {

spdlog::logger &logger() {
  static const std::shared_ptr<spdlog::logger> instance = [] {
    auto log = spdlog::stderr_color_mt("aspen");
    log->set_pattern("[aspen %l] %v");
    const char *level = std::getenv("ASPEN_LOG_LEVEL");
    log->set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
    return log;
  }();
  return *instance;
}

} // namespace aspen::detail
