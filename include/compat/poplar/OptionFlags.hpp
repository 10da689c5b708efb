// Poplar's <poplar/OptionFlags.hpp>, mapped onto <aspen/OptionFlags.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/OptionFlags.hpp>
