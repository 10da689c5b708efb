// PopLibs' <popops/Zero.hpp>, mapped onto <aspen/ops/Zero.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <popops/Namespace.hpp>
#include <aspen/ops/Zero.hpp>
