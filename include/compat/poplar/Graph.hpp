// Poplar's <poplar/Graph.hpp>, mapped onto <aspen/Graph.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Graph.hpp>
