// PopLibs' <popops/Fill.hpp>, mapped onto <aspen/ops/Fill.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Fill.hpp>
