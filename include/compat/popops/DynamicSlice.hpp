// PopLibs' <popops/DynamicSlice.hpp>, mapped onto <aspen/ops/DynamicSlice.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/DynamicSlice.hpp>
