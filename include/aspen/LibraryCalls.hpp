// The former name of <aspen/Kernels.hpp> (library calls are kernels: program::Gemm). Kept so
// that code written against it still compiles; include <aspen/Kernels.hpp> instead.
#pragma once

#include <aspen/Kernels.hpp>
