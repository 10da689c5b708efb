// PopLibs' <popops/Pad.hpp>, mapped onto <aspen/ops/Pad.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Pad.hpp>
