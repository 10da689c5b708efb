// poplin/MatMul.hpp: matMul, matMulAcc, grouped forms, input creation, PlanningCache and the
// plan queries of aspen::linalg (include/aspen/linalg/MatMul.hpp) under poplin's names.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplin/Namespace.hpp>
#include <aspen/linalg/MatMul.hpp>

// PopLibs spells the planning cache poplin::matmul::PlanningCache (popnn's headers use it).
namespace poplin::matmul {
using aspen::linalg::PlanningCache;
} // namespace poplin::matmul
