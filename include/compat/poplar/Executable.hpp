// Poplar's <poplar/Executable.hpp>, mapped onto <aspen/Engine.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Engine.hpp>
