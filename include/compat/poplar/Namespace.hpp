// Poplar's namespace is Aspen's: every aspen name is also poplar::name (and
// poplar::program::X is aspen::program::X), so a Poplar program ports by changing its include
// path. Poplar-only spellings are added by the headers that need them.
#pragma once

// Every compat header includes this one, so these come with each of them: the standard headers
// programs get through Poplar's own headers and use without including them.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace aspen {
namespace program {}
} // namespace aspen

namespace poplar {
using namespace aspen;
} // namespace poplar
