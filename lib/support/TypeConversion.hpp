// Conversion of host values into device element types, for constants and vertex state.
#pragma once

#include <aspen/Type.hpp>

#include <cstddef>
#include <string>

namespace aspen::detail {

// Converts `count` values of hostType at src into dstType at dst. A value that the destination
// type cannot represent (out of range, a fraction into an integer type, NaN into an integer)
// raises aspen::type_error naming `what`, the value and both types. Floating-point values
// into half or float round to nearest even; out-of-range magnitudes become infinity as IEEE
// conversion does.
void convertValues(HostType hostType, const void *src, Type dstType, void *dst, std::size_t count,
                   const std::string &what);

// The value at p (of type t) as a double, for printing and checks.
double loadAsDouble(Type t, const void *p);

} // namespace aspen::detail
