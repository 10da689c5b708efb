// The library's logger ("aspen"), with its level from ASPEN_LOG_LEVEL
// (trace, debug, info, warn, error, critical, off; default warn).
#pragma once

#include <spdlog/spdlog.h>

namespace aspen::detail {
spdlog::logger &logger();
}
