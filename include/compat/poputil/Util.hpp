// PopLibs' <poputil/Util.hpp>, mapped onto <aspen/util/Broadcast.hpp>.
#pragma once

#include <poplar/Implicit.hpp>
#include <poputil/Namespace.hpp>
#include <aspen/util/Broadcast.hpp>
