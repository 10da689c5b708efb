// PopLibs' <popops/Iota.hpp>, mapped onto <aspen/ops/Iota.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Iota.hpp>
