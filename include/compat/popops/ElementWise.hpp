// popops/ElementWise.hpp: aspen::ops (ElementWise.hpp) under PopLibs' header name; popops:: resolves to aspen::ops.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/ElementWise.hpp>
