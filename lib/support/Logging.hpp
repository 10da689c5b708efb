// The library's logger ("aspen"), with its level from ASPEN_LOG_LEVEL
// (trace, debug, info, warn, error, critical, off; default warn).
//
// The support layer is linked into each Aspen library (hidden), so each library has its own
// logger object; they are not registered with spdlog (so they cannot collide, or clash with a
// program's own "aspen" logger) and all print the same way to stderr.
#pragma once

#include <spdlog/spdlog.h>

namespace aspen::detail {
spdlog::logger &logger();
}
