// ProgressFunc: how compileGraph and the Engine constructors report compilation progress (Poplar
// declares it in poplar/Engine.hpp; here on its own, so that the compiler names no engine).
#pragma once

#include <functional>

namespace aspen {

// Called with the number of compilation steps done and their total.
using ProgressFunc = std::function<void(int step, int total)>;

} // namespace aspen
