// The kinds of pooling (popnn's PoolingDef.hpp).
#pragma once

#include <aspen/Export.hpp>

#include <iosfwd>

namespace aspen::nn {

enum class PoolingType { MAX, AVG, SUM };

namespace pooling {
// "MAX", "AVG" or "SUM"; invalid_option for a value outside the three.
ASPEN_API const char *asString(const PoolingType &method);
} // namespace pooling

ASPEN_API std::ostream &operator<<(std::ostream &os, const PoolingType &method);

} // namespace aspen::nn
