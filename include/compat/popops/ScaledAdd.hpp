// PopLibs' <popops/ScaledAdd.hpp>, mapped onto <aspen/ops/ScaledAdd.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/ScaledAdd.hpp>
