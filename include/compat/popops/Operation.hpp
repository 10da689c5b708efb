// popops/Operation.hpp: popops::Operation (ADD, MUL, MIN, MAX, LOGICAL_AND, LOGICAL_OR,
// SQUARE_ADD, LOG_ADD).
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Operation.hpp>
