// popops/ExprOp.hpp: aspen::ops (ExprOp.hpp) under PopLibs' header name; popops:: resolves to aspen::ops.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/ExprOp.hpp>
