// Poplar's <poplar/Engine.hpp>, mapped onto <aspen/Engine.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Engine.hpp>
#include <poplar/exceptions.hpp> // poplar_error comes with Engine.hpp in Poplar
