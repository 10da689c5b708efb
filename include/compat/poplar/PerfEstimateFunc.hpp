// Poplar's <poplar/PerfEstimateFunc.hpp>, mapped onto <aspen/PerfEstimate.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/PerfEstimate.hpp>
