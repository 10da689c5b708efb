// Poplar's <poplar/ReplicatedStreamMode.hpp>, mapped onto <aspen/ReplicatedStreamMode.hpp>:
// poplar::ReplicatedStreamMode::REPLICATE and BROADCAST, the mode of
// Graph::addHostToDeviceFIFO(handle, type, numElements, mode, options).
#pragma once

#include <poplar/Namespace.hpp>
#include <aspen/ReplicatedStreamMode.hpp>
