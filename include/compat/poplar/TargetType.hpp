// Poplar's <poplar/TargetType.hpp>, mapped onto <aspen/Target.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Target.hpp>
