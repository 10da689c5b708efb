// popops/Expr.hpp: aspen::ops (Expr.hpp) under PopLibs' header name; popops:: resolves to aspen::ops.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Expr.hpp>
