// popops/Cast.hpp: aspen::ops (Cast.hpp) under PopLibs' header name; popops:: resolves to aspen::ops.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Cast.hpp>
#include <aspen/ops/Quarter.hpp>
