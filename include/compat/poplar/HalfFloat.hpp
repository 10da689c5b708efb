// Poplar's <poplar/HalfFloat.hpp>, mapped onto <aspen/HalfFloat.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/HalfFloat.hpp>
