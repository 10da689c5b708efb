// PopLibs' <poputil/TileMapping.hpp>, mapped onto <aspen/util/TileMapping.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poputil/Namespace.hpp>
#include <aspen/util/TileMapping.hpp>
