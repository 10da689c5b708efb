// poplin/ConvPreplan.hpp: preplan(convs, matmuls, cache) plans convolutions and matmuls into a
// PlanningCache before the graph is built (include/aspen/linalg/Convolution.hpp).
#pragma once

#include <poplin/Convolution.hpp>
