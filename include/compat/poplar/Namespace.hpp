// Poplar's namespace is Aspen's: every aspen name is also poplar::name (and
// poplar::program::X is aspen::program::X), so a Poplar program ports by changing its include
// path. Poplar-only spellings are added by the headers that need them.
#pragma once

namespace aspen {
namespace program {}
} // namespace aspen

namespace poplar {
using namespace aspen;
} // namespace poplar
