// popops::addCodelets(graph): aspen::ops::addCodelets.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Codelets.hpp>
