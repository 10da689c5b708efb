// Poplar's <poplar/DebugContext.hpp>, mapped onto <aspen/DebugContext.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/DebugContext.hpp>
