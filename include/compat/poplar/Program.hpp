// Poplar's <poplar/Program.hpp>, mapped onto <aspen/Program.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Program.hpp>
