// Poplar's <poplar/Graph.hpp>, mapped onto <aspen/Graph.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Graph.hpp>
#include <poplar/exceptions.hpp> // poplar_error comes with Graph.hpp in Poplar
