// Poplar's <poplar/Vertex.hpp> for codelet files: Vertex, MultiVertex, Input/Output/InOut,
// Vector, VectorList and half, from Aspen's authoring header.
#pragma once

#include <poplar/Namespace.hpp>
#include <aspen/Vertex.hpp>
