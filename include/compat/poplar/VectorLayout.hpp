// Poplar's <poplar/VectorLayout.hpp>: VectorLayout and VectorListLayout, from Aspen's
// authoring header.
#pragma once

#include <poplar/Vertex.hpp>
