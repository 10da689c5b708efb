// PopLibs' <popops/Loop.hpp>, mapped onto <aspen/ops/Loop.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Loop.hpp>
