// popops/Reduce.hpp: popops::reduce, reduceWithOutput, reduceMany, ReduceParams, SingleReduceOp.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <popops/Operation.hpp>
#include <aspen/ops/Reduce.hpp>
