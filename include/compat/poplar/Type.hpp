// Poplar's <poplar/Type.hpp>, mapped onto <aspen/Type.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Type.hpp>
