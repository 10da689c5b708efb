// Poplar's <poplar/SyncType.hpp>: poplar::SyncType is aspen::program::SyncType (program::Sync's).
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Program.hpp>

namespace poplar {
using aspen::program::SyncType;
} // namespace poplar
