// Poplar's <poplar/SerializationFormat.hpp>: SerializationFormat::Binary and ::JSON, which
// Graph::serializeTensors and Graph::deserializeTensors take (<aspen/Graph.hpp>: Aspen writes
// and reads its own JSON document for both, and cannot read Poplar's tensor files).
#pragma once

#include <poplar/Implicit.hpp>
#include <poplar/Namespace.hpp>
#include <aspen/Graph.hpp>
