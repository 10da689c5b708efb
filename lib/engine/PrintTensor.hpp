// PrintTensor's text, as Poplar prints it: "title: [1.0000000 1.5000000]" — floating-point
// values with 7 decimals, integers plain, bools as 0/1; rank >= 2 as nested rows, one row a line:
//   title: [
//    [1.0000000 2.0000000]
//    [3.0000000 4.0000000]
//   ]
// A scalar prints as "title: 5".
#pragma once

#include "compiler/CompiledGraph.hpp"

#include <string>

namespace aspen::detail {

// `data` holds the tensor's elements in flattened order.
std::string formatTensor(const PrintInfo &print, const void *data);

} // namespace aspen::detail
