// PopLibs' <popops/OperationDef.hpp>: the popops::Operation enum (<aspen/ops/Operation.hpp>).
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Operation.hpp>
