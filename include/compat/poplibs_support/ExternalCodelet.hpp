// PopLibs' <poplibs_support/ExternalCodelet.hpp>: IS_EXTERNAL_CODELET(bool) marks a vertex with
// an assembly implementation. Aspen always runs the C++ compute(), so the marker is a no-op
// (defined by <aspen/Vertex.hpp>).
#pragma once

#include <poplar/Vertex.hpp>
