#include "Logging.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <memory>

namespace aspen::detail {

spdlog::logger &logger() {
  static spdlog::logger instance = [] {
    spdlog::logger log("aspen", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    log.set_pattern("[aspen %l] %v");
    const char *level = std::getenv("ASPEN_LOG_LEVEL");
    log.set_level(level ? spdlog::level::from_str(level) : spdlog::level::warn);
    return log;
  }();
  return instance;
}

} // namespace aspen::detail
